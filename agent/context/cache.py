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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from agent.context.prune import newest_stubbed_turn
from agent.models import MODELS, ModelTable

__all__ = [
    "MIN_CACHEABLE_TOKENS",
    "count_breakpoints",
    "mark_breakpoints",
    "min_cacheable_tokens",
    "strip_cache_control",
]

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


def mark_breakpoints(request: Mapping[str, Any], ttl: str = "5m") -> dict[str, Any]:
    """A copy of `request` with breakpoints on system, pruning frontier, previous end, newest message."""
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
    targets = {len(messages) - 1} if messages and messages[-1].get("content") else set()
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
