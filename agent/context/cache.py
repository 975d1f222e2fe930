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
copies only the blocks it marks, so the live history is never touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from agent.context.memo import IdentityCache
from agent.context.prune import newest_stubbed_turn
from agent.context.tokens import key_chars, note_derived
from agent.models import MODELS, ModelTable

__all__ = [
    "MIN_CACHEABLE_TOKENS",
    "count_breakpoints",
    "is_marked_copy",
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


_MARKED = IdentityCache()
"""message -> (ttl, its marked copy). The same message marked again gives the very same copy,
so the token estimate, the prefix guard and the session see an object they already know
instead of a new dict to serialise or compare each time (nobody edits a history dict in
place, a marked copy included)."""
_MARKED_SYSTEM: dict[tuple[Any, str], dict[str, Any]] = {}  # bounded: cleared at 64
"""(the system prompt's last block's items, ttl) -> that block marked, for the same reason:
`build_request` makes the system block afresh every step."""


def _with_marker_on_last_block(message: Mapping[str, Any], ttl: str) -> dict[str, Any]:
    known = _MARKED.get(message) if type(message) is dict else None
    if known is not None and known[0] == ttl:
        return known[1]  # type: ignore[no-any-return]
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    last, marker = blocks[-1], _marker(ttl)
    blocks[-1] = {**last, "cache_control": marker}
    marked = {**message, "content": blocks}
    if type(message) is dict:
        _MARKED.put(message, (ttl, marked))
        if type(content) is list and type(last) is dict and last and "cache_control" not in last:
            note_derived(marked, message, key_chars("cache_control", marker))  # one key more, at the end
    return marked


def is_marked_copy(copy: Any, original: Any) -> bool:
    """Whether `copy` is the copy of `original` this module marked, its blocks as they were
    (so the two are the same message, markers aside: the prefix guard need not compare them
    field by field). A string content marked became a block list: not the same then."""
    known = _MARKED.get(original) if type(original) is dict else None
    return known is not None and known[1] is copy and type(original.get("content")) is list


def _marked_block(block: Mapping[str, Any], ttl: str) -> dict[str, Any]:
    """`block` with a marker; one copy per distinct block of plain values (a system prompt)."""
    try:
        key = (tuple((k, type(v), v) for k, v in block.items()), ttl)  # 1, 1.0 and True differ
        hash(key)
    except TypeError:  # values that are not plain (a list, a dict): nothing to key on
        return {**block, "cache_control": _marker(ttl)}
    marked = _MARKED_SYSTEM.get(key)
    if marked is None:
        if len(_MARKED_SYSTEM) >= 64:
            _MARKED_SYSTEM.clear()
        marked = _MARKED_SYSTEM[key] = {**block, "cache_control": _marker(ttl)}
    return marked


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
        tools[-1] = {**tools[-1], "cache_control": _marker(ttl)}
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
