"""Keep-recent pruning: old tool results shrink to one line, the conversation keeps its shape.

By the tenth step the model has long drawn its conclusion from the second step's search, so
results older than the newest `keep_recent` result turns become a stub such as

    [pruned: 7,412 chars; full: artifact:search_orders-1f0c8e2a9b3d.json]

Only the *content* is replaced (a `tool_use` without its `tool_result` is a 400). Kept whole:
the first message, results shorter than their stub, and `never_prune`/`irreversible` results
(forgetting that a refund was made is how it gets made twice). Pruning moves the cached
prefix, so it runs in batches: nothing until at least `batch` turns are prunable, then all at
once; between batches the prefix stays byte-stable. `prune` is pure and idempotent.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.messages import Msg, blocks, content_text, tool_names_by_id

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore

__all__ = [
    "STUB_PREFIX",
    "artifact_pointers",
    "is_stub",
    "newest_stubbed_turn",
    "prunable_turns",
    "prune",
    "pruned_next_step",
    "stub_for",
    "tool_result_turns",
]

STUB_PREFIX = "[pruned: "
MAX_ARGS = 4
MAX_ARG_CHARS = 40
MAX_ERROR_CHARS = 80
SHORTEST_STUB = len(f"{STUB_PREFIX}0 chars; full: x]")
"""No stub is shorter: a result this short is never pruned, without writing its stub to check."""

Protected = Callable[[str], bool]
PointerFor = Callable[[str], "str | None"]
Names = Mapping[str, tuple[str, dict[str, Any]]]


def _never(name: str) -> bool:
    return False


def _nothing(tool_use_id: str) -> str | None:
    return None


def artifact_pointers(store: ArtifactStore | None) -> PointerFor:
    """tool_use_id -> `artifact:<name>` for results the run's artifact store holds."""
    if store is None:
        return _nothing

    def pointer(tool_use_id: str) -> str | None:
        from agent.context.artifacts import marker

        name = store.name_for(tool_use_id)
        return marker(name) if name else None

    return pointer


def is_stub(content: Any) -> bool:
    return isinstance(content, str) and content.startswith(STUB_PREFIX)


def _result_blocks(message: Msg) -> list[dict[str, Any]]:
    if message.get("role") != "user":
        return []
    return [b for b in blocks(message) if b.get("type") == "tool_result"]


def _holds_stub(message: Msg) -> bool:
    return any(is_stub(b.get("content")) for b in _result_blocks(message))


def _holds_whole_result(message: Msg) -> bool:
    """Asked of every old message at every step, so its blocks are read in place, not copied."""
    content = message.get("content", [])
    if message.get("role") != "user" or isinstance(content, str):
        return False
    for b in content:
        if b.get("type") == "tool_result":
            inner = b.get("content")
            if not (isinstance(inner, str) and inner.startswith(STUB_PREFIX)):
                return True
    return False


def tool_result_turns(messages: Sequence[Msg]) -> list[int]:
    """Indices of user messages that carry at least one `tool_result` block."""
    return [i for i, message in enumerate(messages) if _result_blocks(message)]


def newest_stubbed_turn(messages: Sequence[Msg]) -> int | None:
    """Index of the newest turn holding a stub (the pruning frontier), or None."""
    return next((i for i in reversed(range(len(messages))) if _holds_stub(messages[i])), None)


def _names_by_id(messages: Sequence[Msg]) -> dict[str, tuple[str, dict[str, Any]]]:
    return tool_names_by_id(messages)


_SORTED_JSON = json.JSONEncoder(ensure_ascii=False, default=str, sort_keys=True)  # made once, not per call


def _short(value: Any) -> str:
    text = _SORTED_JSON.encode(value)
    return text if len(text) <= MAX_ARG_CHARS else text[: MAX_ARG_CHARS - 1] + "…"


def call_signature(name: str, arguments: Mapping[str, Any]) -> str:
    """`search_orders(customer_id="u_1", limit=5)`, long values and extra arguments cut."""
    shown = [f"{key}={_short(value)}" for key, value in list(arguments.items())[:MAX_ARGS]]
    if len(arguments) > MAX_ARGS:
        shown.append("…")
    return f"{name}({', '.join(shown)})"


def stub_for(block: Mapping[str, Any], pointer: str | None) -> str:
    """The line that replaces a result: how big it was and where it lives (not the call: its
    `tool_use` sits just before it, and every later step reads the stub again)."""
    text = content_text(block.get("content"))
    line = f"{STUB_PREFIX}{'failed, ' if block.get('is_error') else ''}{len(text):,} chars"
    if block.get("is_error"):
        first = text.strip().splitlines()[0] if text.strip() else ""
        line += f": {first[:MAX_ERROR_CHARS]}"
    line += f"; full: {pointer}" if pointer else "; call again if you need it"
    return line + "]"


def _prunable(
    block: Mapping[str, Any], names: Names, protected: Protected, pointer_for: PointerFor
) -> str | None:
    """The stub for `block`, or None when it must stay as it is."""
    if block.get("type") != "tool_result" or is_stub(block.get("content")):
        return None
    name, _ = names.get(block.get("tool_use_id", ""), ("unknown_tool", {}))
    if protected(name):
        return None
    text = content_text(block.get("content"))
    if len(text) <= SHORTEST_STUB:
        return None
    from agent.context.artifacts import find_pointer, marker  # loaded once something is pruned

    inline = find_pointer(text)
    # a pointer the diet left in the text wins: it is what the model saw
    pointer = marker(inline) if inline else pointer_for(block.get("tool_use_id", ""))
    stub = stub_for(block, pointer)
    return stub if len(stub) < len(text) else None


def _old_open_turns(messages: Sequence[Msg], keep_recent: int) -> list[int]:
    """Turns older than the newest `keep_recent` result turns that still hold a non-stub result."""
    if keep_recent <= 0:
        return []
    newest = (i for i in reversed(range(len(messages))) if _result_blocks(messages[i]))
    kept = list(itertools.islice(newest, keep_recent))
    if len(kept) < keep_recent:
        return []
    whole = _holds_whole_result
    return [i for i in range(1, kept[-1]) if messages[i].get("role") == "user" and whole(messages[i])]


def _rewritten(message: Msg, names: Names, protected: Protected, pointer_for: PointerFor) -> Msg | None:
    """`message` with its prunable results as stubs, or None when none is prunable."""
    found = blocks(message)
    stubs = [_prunable(b, names, protected, pointer_for) for b in found]
    if all(stub is None for stub in stubs):
        return None
    new_blocks = [b if stub is None else {**b, "content": stub} for b, stub in zip(found, stubs, strict=True)]
    return {**message, "content": new_blocks}


def _rewrites(
    messages: Sequence[Msg], keep_recent: int, protected: Protected, pointer_for: PointerFor, batch: int
) -> dict[int, Msg]:
    """index -> pruned message; nothing is read when fewer than `batch` turns are candidates."""
    candidates = _old_open_turns(messages, keep_recent)
    if len(candidates) < max(1, batch):
        return {}
    names = _names_by_id([messages[i - 1] for i in candidates])  # a result's call is the turn before
    if not {b.get("tool_use_id") for i in candidates for b in _result_blocks(messages[i])} <= names.keys():
        names = _names_by_id(messages)  # a history that breaks the pairing rule: every turn is read
    found = {i: _rewritten(messages[i], names, protected, pointer_for) for i in candidates}
    return {i: message for i, message in found.items() if message is not None}


def prunable_turns(
    messages: Sequence[Msg],
    keep_recent: int,
    protected: Protected = _never,
    pointer_for: PointerFor = _nothing,
) -> list[int]:
    """Old tool-result turns (beyond the newest `keep_recent`) holding at least one prunable result."""
    return list(_rewrites(messages, keep_recent, protected, pointer_for, 1))


def pruned_next_step(messages: Sequence[Msg], keep_recent: int, batch: int, protected: Protected) -> bool:
    """Whether the next step's pruning stubs a result of the newest turn (then `agent.context.cache`
    leaves it out of the cache). Asked every step, so it reads only the newest two messages, unless a
    batch of several turns must be counted."""
    if keep_recent != 1 or len(messages) < 2 or not _result_blocks(messages[-1]):
        return False  # kept at least one more step, or never pruned
    names = _names_by_id(messages[-2:])
    if all(_prunable(b, names, protected, _nothing) is None for b in blocks(messages[-1])):
        return False
    return batch <= 1 or len(_old_open_turns([*messages, *_next_turn()], keep_recent)) >= batch


def _next_turn() -> list[Msg]:
    """A stand-in for the turn the next step adds, to count the batch it would prune."""
    use = {"type": "tool_use", "id": "next", "name": "next", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "next", "content": "next"}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


def prune(
    messages: Sequence[Msg],
    keep_recent: int,
    *,
    batch: int = 1,
    protected: Protected = _never,
    pointer_for: PointerFor = _nothing,
) -> list[Msg]:
    """A new history whose old tool results are stubs; `messages` is not touched.

    Args:
        messages: wire-shaped history.
        keep_recent: newest tool-result turns kept verbatim; 0 disables pruning.
        batch: prune only when at least this many turns are prunable (cache-friendly).
        protected: tool name -> True for results never to prune (never_prune, irreversible).
        pointer_for: tool_use_id -> where the full result can be read back, if stored.
    """
    pruned = list(messages)  # untouched messages stay the same dicts (`is` comparisons downstream)
    targets = _rewrites(messages, keep_recent, protected, pointer_for, batch)
    if len(targets) < max(1, batch):
        return pruned
    for index, message in targets.items():
        pruned[index] = message
    return pruned
