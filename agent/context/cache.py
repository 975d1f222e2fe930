"""Prompt-cache breakpoints, placed so that what was sent last step is read back this step.

The API renders a request as tools → system → messages and caches a prefix at each
`cache_control` breakpoint; a later request reads an entry only if its prefix is
byte-identical and its position is at most 20 blocks before one of the new
request's breakpoints. So:

* a breakpoint at the end of the system prompt caches tools and system together
  (they never change within a run; keep timestamps out of the system prompt);
* a breakpoint on the last block of the newest message writes the whole history,
  and moves forward every step;
* a breakpoint at the end of the previous request's last message reads back what
  the previous step wrote even when one turn added more than 20 blocks (many
  parallel tool results), which the moving breakpoint alone could not reach;
* a breakpoint on the pruning frontier (the newest turn holding a pruned stub).
  A pruning batch rewrites the turns just after the frontier, so every entry
  written after it is lost; the frontier's own entry survives the batch, and the
  next request reads the history up to it instead of falling back to the system
  prompt (measured in `benchmarks/economics.py`: cache writes 100k → 39k tokens).

Four breakpoints at most, the API's limit. `mark_breakpoints` returns a new request and
copies only the blocks it marks, so the live history is never touched; it marks afresh at
every call (nothing is remembered between calls).

Prefix-stability guard: say *why* the cache missed, the way the API never does.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from agent.context.prune import newest_stubbed_turn
from agent.messages import shared_length
from agent.models import MODELS, ModelTable
from agent.usage import Usage

__all__ = [
    "MIN_CACHEABLE_TOKENS",
    "PrefixGuard",
    "count_breakpoints",
    "mark_breakpoints",
    "min_cacheable_tokens",
    "prefix_changes",
    "same_ignoring_cache_control",
    "strip_cache_control",
]

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

    def observe(
        self,
        request: Mapping[str, Any],
        usage: Usage,
        *,
        reported: bool = True,
        server_edits: Sequence[str] = (),
    ) -> None:
        """Log what changed since the previous request; warn on a miss nothing explains.
        `reported`: the server gave cache counts at all (a scripted model gives none, and a
        read of 0 from it says nothing about caching). `server_edits`: the context edits the
        server applied (it cleared old results before caching), which explain a miss."""
        reasons = prefix_changes(self.previous, request) if self.previous is not None else []
        reasons += [f"the server's context management applied {kind}" for kind in server_edits]
        rewrites_in_a_row = (
            self._history_only(reasons)
            and bool(self.changes)
            and self.changes[-1][0] == usage.step - 1
            and self._history_only(self.changes[-1][1])  # not the server's edit the step before
        )
        if reasons:
            self.changes.append((usage.step, reasons))
            log.info("[step %d] cache prefix changed: %s", usage.step, ", ".join(reasons))
        cacheable = self.previous_prompt
        minimum = min_cacheable_tokens(usage.model)
        missed = reported and usage.step >= 2 and usage.cache_read == 0
        if missed and cacheable >= minimum and count_breakpoints(request):
            why = (
                ", ".join(reasons) or "no change in the prefix: is the server caching, or did the TTL expire?"
            )
            message = (
                f"[step {usage.step}] cache read 0 although ~{cacheable:,} tokens were sent before "
                f"(minimum {minimum:,} for {usage.model}): {why}"
            )
            if (self._history_only(reasons) and not rewrites_in_a_row) or server_edits:
                log.info(message)  # a pruning batch or a compaction: expected, and rare
            else:
                self.warnings.append(message)
                log.warning(message)
        self.previous = dict(request)
        self.previous_prompt = usage.prompt

    @staticmethod
    def _history_only(reasons: list[str]) -> bool:
        return bool(reasons) and all(r.startswith("history rewritten") for r in reasons)


MIN_CACHEABLE_TOKENS: Mapping[str, int] = MappingProxyType({m.id: m.min_cacheable for m in MODELS.values()})
"""Read-only view of the model table's cache minimums (`agent.models.MODELS` is the source)."""


def min_cacheable_tokens(model: str, models: ModelTable = MODELS) -> int:
    """Shortest prefix the model caches; an unknown model gets the most cautious known value."""
    info = models.lookup(model)
    return info.min_cacheable if info else max(m.min_cacheable for m in models.values())


def _marker(ttl: str) -> dict[str, str]:
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def _marked_block(block: Mapping[str, Any], ttl: str) -> dict[str, Any]:
    """A copy of `block` with a marker (the block itself is not touched)."""
    return {**block, "cache_control": _marker(ttl)}


def _with_marker_on_last_block(message: Mapping[str, Any], ttl: str) -> dict[str, Any]:
    """A copy of `message` whose last block carries a marker (a string content becomes a block)."""
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    blocks[-1] = _marked_block(blocks[-1], ttl)
    return {**message, "content": blocks}


def _previous_request_end(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the last message the previous request ended with (a user turn before the
    newest assistant turn), or None on the first step."""
    for index in range(len(messages) - 2, -1, -1):
        if messages[index].get("role") == "user" and messages[index + 1].get("role") == "assistant":
            return index
    return None


def mark_breakpoints(
    request: Mapping[str, Any], ttl: str = "5m", newest_pruned: bool = False
) -> dict[str, Any]:
    """A copy of `request` with breakpoints on system, pruning frontier, previous end, newest message.

    When the next step's pruning stubs the newest turn (`newest_pruned`), the breakpoint goes on
    the turn before it instead: what the next request shares ends there, and the newest results,
    never read again, are sent at the input price rather than written at 1.25x."""
    marked = dict(request)
    system = request.get("system")
    if system:
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        blocks[-1] = _marked_block(blocks[-1], ttl)
        marked["system"] = blocks
    elif request.get("tools"):
        tools = list(request["tools"])
        tools[-1] = _marked_block(tools[-1], ttl)
        marked["tools"] = tools
    messages = list(request.get("messages", []))
    newest = len(messages) - 2 if newest_pruned and len(messages) > 1 else len(messages) - 1
    targets = {newest} if messages and messages[newest].get("content") else set()
    previous = _previous_request_end(messages)
    if previous is not None and messages[previous].get("content"):
        targets.add(previous)
    frontier = newest_stubbed_turn(messages[: previous or 0])  # the pruning frontier
    if frontier is not None:
        targets.add(frontier)
    for index in targets:
        messages[index] = _with_marker_on_last_block(messages[index], ttl)
    marked["messages"] = messages
    return marked


def strip_cache_control(value: Any) -> Any:
    """`value` without any cache_control markers (to compare prefixes by content)."""
    if isinstance(value, list):
        return [strip_cache_control(item) for item in value]
    if isinstance(value, Mapping):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    return value


def count_breakpoints(body: Mapping[str, Any]) -> int:
    """cache_control markers in tools, system and messages (top-level automatic one included)."""
    found = 1 if body.get("cache_control") else 0
    for item in body.get("tools") or []:
        found += isinstance(item, Mapping) and bool(item.get("cache_control"))
    system = body.get("system")
    if isinstance(system, list):
        found += sum(1 for b in system if isinstance(b, Mapping) and b.get("cache_control"))
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, Mapping):
                found += bool(block.get("cache_control"))
                inner = block.get("content")
                if block.get("type") == "tool_result" and isinstance(inner, list):
                    found += sum(1 for b in inner if isinstance(b, Mapping) and b.get("cache_control"))
    return found
