"""Prompt-cache breakpoints, placed so that what was sent last step is read back this step.

A request reads a cached prefix (tools → system → messages) only if it is byte-identical and at most
20 blocks before one of the request's breakpoints. Hence four (the API's limit): the end of the system
prompt (tools and system never change in a run: keep timestamps out), the newest message, the previous
request's last message (read back even after a turn of over 20 blocks), and the pruning frontier, the
newest turn holding a stub, whose entry survives the batch that rewrites the turns after it
(`benchmarks/economics.py`: cache writes 100k → 39k tokens).

`PrefixGuard` says *why* the cache missed, as the API never does: it compares each request with the
previous in render order, logs what changed, and warns when reads stay 0 after step 2 on a prefix long
enough to cache, unless one history rewrite (a pruning batch, a compaction) explains it; rewrites two
steps in a row are the classic bug, a history rebuilt every step.
"""

from __future__ import annotations

import itertools
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

    Ignores markers without copying: parts that are the same objects are equal at once, so a step
    compares only the few messages that are new or marked."""
    reasons = []
    for key in ("tools", "system"):
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
    """Index of the first message of `before` that `after` lacks in the same place (markers
    aside), or None. The equal prefix and the very same dicts after it are skipped in C."""
    skipped = shared_length(before, after)
    moved = map(operator.is_not, before[skipped:], after[skipped:])
    for index in itertools.compress(itertools.count(skipped), moved):
        if not same_ignoring_cache_control(before[index], after[index]):
            return index
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
    """The previous call's billed prompt, what could have been cached (not an estimate: that counts
    a thinking block's signature, not its reasoning)."""
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
        `reported`: the server gave cache counts at all (a scripted model's read of 0 says
        nothing). `server_edits`: context edits the server applied, which explain a miss."""
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
        cacheable, minimum = self.previous_prompt, min_cacheable_tokens(usage.model)
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


def _mark_last(blocks: Any, ttl: str) -> list[Any]:
    """A copy of `blocks` (a string becomes a text block) whose last block, copied, has a marker."""
    marked = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else list(blocks)
    marker = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}
    marked[-1] = {**marked[-1], "cache_control": marker}
    return marked


def _previous_request_end(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the user turn the previous request ended with (before the newest assistant turn)."""
    for index in range(len(messages) - 2, -1, -1):
        if messages[index].get("role") == "user" and messages[index + 1].get("role") == "assistant":
            return index
    return None


def mark_breakpoints(
    request: Mapping[str, Any], ttl: str = "5m", newest_pruned: bool = False
) -> dict[str, Any]:
    """A copy of `request` with breakpoints on system, pruning frontier, previous end, newest message.

    When the next step's pruning stubs the newest turn (`newest_pruned`), the breakpoint goes on
    the turn before it: what the next request shares ends there, and the newest results, never
    read again, are sent at the input price rather than written at 1.25x."""
    marked = dict(request)
    if request.get("system"):
        marked["system"] = _mark_last(request["system"], ttl)
    elif request.get("tools"):
        marked["tools"] = _mark_last(request["tools"], ttl)
    messages = list(request.get("messages", []))
    newest = len(messages) - 2 if newest_pruned and len(messages) > 1 else len(messages) - 1
    targets = {newest} if messages and messages[newest].get("content") else set()
    previous = _previous_request_end(messages)
    if previous is not None and messages[previous].get("content"):
        targets.add(previous)
    frontier = newest_stubbed_turn(messages[: previous or 0])
    if frontier is not None:
        targets.add(frontier)
    for index in targets:
        messages[index] = {**messages[index], "content": _mark_last(messages[index]["content"], ttl)}
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
