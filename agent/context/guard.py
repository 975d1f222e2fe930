"""Prefix-stability guard: say *why* the cache missed, the way the API never does.

Caching fails silently: a timestamp in the system prompt, tools in another order,
a history rewritten every step, and cache reads just stay at 0. After every call
the guard compares the request with the previous one, level by level in render
order (tools → system → effort and tool settings → history), logs what changed,
and warns when reads are still 0 after step 2 although the cached prefix is long
enough for the model to cache it. A history rewritten by one pruning batch or one
compaction explains a miss and is only logged; rewritten at two steps in a row, it
is the classic bug (a history rebuilt every step) and gets the warning.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.context.cache import count_breakpoints, min_cacheable_tokens, strip_cache_control
from agent.messages import shared_length
from agent.usage import Usage

__all__ = ["PrefixGuard", "prefix_changes", "same_ignoring_cache_control"]

log = logging.getLogger("agent.cache")

_MESSAGE_LEVEL = ("output_config", "tool_choice", "thinking")


def prefix_changes(previous: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Why `current` cannot read everything `previous` cached; empty when it can.

    Compares as `strip_cache_control(a) == strip_cache_control(b)` would, without copying:
    parts equal as they are (the tools, every message the history did not rewrite) are
    equal at once, so a step compares only the few messages that are new or marked."""
    reasons = []
    for key in ("tools", "system"):  # equal as they are (in C: the same dicts) is equal unmarked
        was, now = previous.get(key), current.get(key)
        if not (was == now or same_ignoring_cache_control(was, now)):
            reasons.append(f"{key} changed")
    for key in _MESSAGE_LEVEL:
        if previous.get(key) != current.get(key):
            reasons.append(f"{'effort' if key == 'output_config' else key} changed")
    before, after = previous.get("messages", []), current.get("messages", [])
    if isinstance(before, list) and isinstance(after, list):
        rewritten = _first_difference(before, after)
    else:  # not as the loop sends them: compare as they are
        before, after = strip_cache_control(before), strip_cache_control(after)
        rewritten = next(
            (i for i, message in enumerate(before) if i >= len(after) or after[i] != message), None
        )
    if rewritten is not None:
        reasons.append(f"history rewritten from message {rewritten}")
    return reasons


def _first_difference(before: list[Any], after: list[Any]) -> int | None:
    """Index of the first message of `before` that `after` does not have in the same place
    (cache markers aside), or None. The equal prefix is skipped by list comparisons in C
    (`shared_length`); after it, only messages that are not the very same dict (the marked
    copies, a rewrite) are compared, markers aside."""
    skipped = shared_length(before, after)
    shared = list(map(operator.is_, before[skipped:], after[skipped:]))
    start = 0
    while True:
        try:
            index = shared.index(False, start)
        except ValueError:
            break
        if not same_ignoring_cache_control(before[skipped + index], after[skipped + index]):
            return skipped + index
        start = index + 1
    return len(after) if len(after) < len(before) else None


def same_ignoring_cache_control(a: Any, b: Any) -> bool:
    """`strip_cache_control(a) == strip_cache_control(b)`, without the copies."""
    if a is b:
        return True
    if type(a) is dict and type(b) is dict:
        keys = [k for k in a if k != "cache_control"]
        if len(keys) != len(b) - ("cache_control" in b) or any(k not in b for k in keys):
            return False
        return all(same_ignoring_cache_control(a[k], b[k]) for k in keys)
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(map(same_ignoring_cache_control, a, b))
    if isinstance(a, (list, Mapping)) or isinstance(b, (list, Mapping)):
        return bool(strip_cache_control(a) == strip_cache_control(b))
    return bool(a == b)


@dataclass
class PrefixGuard:
    """Remembers the previous request and reports prefix changes and silent cache misses."""

    previous: dict[str, Any] | None = None
    previous_prompt: int = 0
    """The previous call's billed prompt: what could have been cached (an estimate of the
    request's text would count a thinking block's signature, not the reasoning behind it)."""
    changes: list[tuple[int, list[str]]] = field(default_factory=list)
    """(step, reasons) for every step whose prefix differed from the step before."""
    warnings: list[str] = field(default_factory=list)

    def observe(self, request: Mapping[str, Any], usage: Usage) -> None:
        reasons = prefix_changes(self.previous, request) if self.previous is not None else []
        rewrites_in_a_row = (
            self._history_only(reasons) and bool(self.changes) and (self.changes[-1][0] == usage.step - 1)
        )
        if reasons:
            self.changes.append((usage.step, reasons))
            log.info("[step %d] cache prefix changed: %s", usage.step, ", ".join(reasons))
        cacheable = self.previous_prompt
        minimum = min_cacheable_tokens(usage.model)
        if usage.step >= 2 and usage.cache_read == 0 and cacheable >= minimum and count_breakpoints(request):
            why = (
                ", ".join(reasons) or "no change in the prefix: is the server caching, or did the TTL expire?"
            )
            message = (
                f"[step {usage.step}] cache read 0 although ~{cacheable:,} tokens were sent before "
                f"(minimum {minimum:,} for {usage.model}): {why}"
            )
            if self._history_only(reasons) and not rewrites_in_a_row:
                log.info(message)  # a pruning batch or a compaction: expected, and rare
            else:
                self.warnings.append(message)
                log.warning(message)
        self.previous = dict(request)
        self.previous_prompt = usage.prompt

    @staticmethod
    def _history_only(reasons: list[str]) -> bool:
        return bool(reasons) and all(r.startswith("history rewritten") for r in reasons)
