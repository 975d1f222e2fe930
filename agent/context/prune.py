"""Keep-recent pruning: old tool results shrink to one line, the conversation keeps its shape.

By the tenth step, the full output of the second step's search is rarely needed:
the model already read it and said what it concluded. So the contents of
`tool_result` blocks older than the newest `keep_recent` tool-result turns are
replaced by a stub such as

    [pruned: search_orders(customer_id="u_88213") returned 7,412 chars; full result: artifact ...]

What stays, and why:

* the blocks themselves: a `tool_use` whose `tool_result` vanished is a 400, so only
  the *content* is replaced and every pair stays valid;
* the tool name and its key arguments, so the model knows what it looked at, and the
  artifact pointer (when the diet stored the full result), so it can read it again;
* results of `never_prune` and `irreversible` tools, verbatim: forgetting that a
  refund was already made is how a refund gets made twice;
* the first message (the user's request, or a compaction summary);
* results already smaller than their stub.

Pruning rewrites history, which moves the cached prefix: everything after the first
changed block is read at full price again. So it runs in batches: nothing happens
until at least `batch` turns are prunable, then all of them are pruned at once
(the hysteresis of the server's `clear_at_least`). Between batches the prefix is
byte-stable and cache reads keep flowing.

`prune` is a pure function: a new list out, the input untouched, and pruning a
pruned history changes nothing (stubs are recognised and left alone).
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent.context.artifacts import ArtifactStore, find_pointer, marker
from agent.context.memo import IdentityCache, PrefixMemo, memoized
from agent.messages import Msg, blocks, content_text
from agent.registry import ToolRegistry

__all__ = [
    "STUB_PREFIX",
    "artifact_pointers",
    "is_stub",
    "policies",
    "prunable_turns",
    "prune",
    "stub_for",
    "tool_result_turns",
]

STUB_PREFIX = "[pruned: "
MAX_ARGS = 4
MAX_ARG_CHARS = 40
MAX_ERROR_CHARS = 80

Protected = Callable[[str], bool]
PointerFor = Callable[[str], "str | None"]


def _never(name: str) -> bool:
    return False


def _nothing(tool_use_id: str) -> str | None:
    return None


def policies(registry: ToolRegistry) -> tuple[Protected, Protected]:
    """(irreversible, protected) predicates over tool names, read from the agent's tools.

    Protected means never pruned: `never_prune` or `irreversible`. A name the registry
    does not know (a tool since removed, a hallucinated one) is neither.
    """

    def irreversible(name: str) -> bool:
        found = registry.get(name)
        return found is not None and found.irreversible

    def protected(name: str) -> bool:
        found = registry.get(name)
        return found is not None and (found.irreversible or found.never_prune)

    return irreversible, protected


def artifact_pointers(store: ArtifactStore | None) -> PointerFor:
    """tool_use_id -> `artifact:<name>` for results the run's artifact store holds."""

    def pointer(tool_use_id: str) -> str | None:
        name = store.name_for(tool_use_id) if store is not None else None
        return marker(name) if name else None

    return pointer


_RESULTS, _OPEN, _HOLDS_STUB = operator.itemgetter(0), operator.itemgetter(2), operator.itemgetter(3)
_TURNS = IdentityCache()
_HISTORIES = PrefixMemo(by_content=True)
"""message -> (carries a tool_result, every tool_result in it already a stub, the first but not
the second: a turn pruning may still have to read, a tool_result in it is a stub: the cache's
pruning frontier). The facts belong to the message alone,
which is never edited in place, so each message is read once however long the run:
histories by shared prefix, messages by identity."""


Facts = tuple[bool, bool, bool, bool]


def _turn_fact(message: Msg) -> Facts:
    known = _TURNS.get(message)
    if known is None:
        found = blocks(message)
        results = message.get("role") == "user" and any(b.get("type") == "tool_result" for b in found)
        settled = all(b.get("type") != "tool_result" or is_stub(b.get("content")) for b in found)
        stubbed = results and any(b.get("type") == "tool_result" and is_stub(b.get("content")) for b in found)
        known = (results, settled, results and not settled, stubbed)
        if type(message) is dict:
            _TURNS.put(message, known)
    return known  # type: ignore[no-any-return]


def _turn_facts(messages: Sequence[Msg]) -> list[Facts]:
    return memoized(_HISTORIES, messages, _turn_fact)


def newest_stubbed_turn(messages: Sequence[Msg]) -> int | None:
    """Index of the newest user turn holding a pruned stub (read from the pruning facts, which
    the step's pruning has just brought up to date), or None."""
    flags = list(map(_HOLDS_STUB, _turn_facts(messages)))
    return len(flags) - 1 - flags[::-1].index(True) if True in flags else None


_CALLS = PrefixMemo()
"""message -> its (tool_use id, (name, input)) pairs, for `_names_by_id`."""


def _calls_in(message: Msg) -> tuple[tuple[str, tuple[str, Any]], ...]:
    if message.get("role") != "assistant":
        return ()
    return tuple(
        (block["id"], (block["name"], block.get("input", {})))
        for block in blocks(message)
        if block.get("type") == "tool_use"
    )


_NAMES: list[tuple[list[Msg], dict[str, tuple[str, dict[str, Any]]]]] = []
"""The last history `_names_by_id` read and its answer: a history that only grew since, or
whose other changes hold no calls on either side (pruning rewrites result turns, never the
calls), is answered by adding its new messages' calls (a later call with a reused id wins,
as in `tool_names_by_id`); any other history is read whole."""


def _names_by_id(messages: Sequence[Msg]) -> dict[str, tuple[str, dict[str, Any]]]:
    """What `tool_names_by_id(messages)` returns (not to be edited), each message read once
    however long the run."""
    if _NAMES:
        seen, names = _NAMES[0]
        if len(seen) <= len(messages) and not any(
            _calls_in(seen[i]) or _calls_in(messages[i])
            for i in itertools.compress(itertools.count(), map(operator.is_not, seen, messages))
        ):
            if len(seen) < len(messages):
                added = itertools.chain.from_iterable(map(_calls_in, messages[len(seen) :]))
                names = {**names, **dict(added)}
                _NAMES[0] = (list(messages), names)
            return names
    names = dict(itertools.chain.from_iterable(memoized(_CALLS, messages, _calls_in)))
    _NAMES[:] = [(list(messages), names)]
    return names


def tool_result_turns(messages: Sequence[Msg]) -> list[int]:
    """Indices of user messages that carry at least one `tool_result` block."""
    return list(itertools.compress(itertools.count(), map(_RESULTS, _turn_facts(messages))))


def is_stub(content: Any) -> bool:
    return isinstance(content, str) and content.startswith(STUB_PREFIX)


_SORTED_JSON = json.JSONEncoder(ensure_ascii=False, default=str, sort_keys=True)
"""One encoder for every argument shown (`json.dumps` with options makes a new one each call)."""


def _short(value: Any) -> str:
    text = _SORTED_JSON.encode(value)
    return text if len(text) <= MAX_ARG_CHARS else text[: MAX_ARG_CHARS - 1] + "…"


def call_signature(name: str, arguments: Mapping[str, Any]) -> str:
    """`search_orders(customer_id="u_1", limit=5)`, long values and extra arguments cut."""
    shown = [f"{key}={_short(value)}" for key, value in list(arguments.items())[:MAX_ARGS]]
    if len(arguments) > MAX_ARGS:
        shown.append("…")
    return f"{name}({', '.join(shown)})"


def stub_for(block: Mapping[str, Any], name: str, arguments: Mapping[str, Any], pointer: str | None) -> str:
    """The one line that replaces a result: what was called, how big it was, where it lives."""
    text = content_text(block.get("content"))
    outcome = "failed" if block.get("is_error") else "returned"
    line = f"{STUB_PREFIX}{call_signature(name, arguments)} {outcome} {len(text):,} chars"
    if block.get("is_error"):
        first = text.strip().splitlines()[0] if text.strip() else ""
        line += f": {first[:MAX_ERROR_CHARS]}"
    if pointer:
        line += f"; full result: {pointer}"
    else:
        line += "; call again if you need it"
    return line + "]"


_STUBBED = IdentityCache()
"""tool_result block -> (name, arguments, pointer, its stub or None). A turn waiting for its
pruning batch is asked about at every step until the batch comes; its blocks, their calls'
arguments and their pointers do not change meanwhile, so the stub is written once."""


def _prunable(
    block: Mapping[str, Any],
    names: Mapping[str, tuple[str, dict[str, Any]]],
    protected: Protected,
    pointer_for: PointerFor,
) -> str | None:
    """The stub for `block`, or None when it must stay as it is."""
    if block.get("type") != "tool_result" or is_stub(block.get("content")):
        return None
    name, arguments = names.get(block.get("tool_use_id", ""), ("unknown_tool", {}))
    if protected(name):
        return None
    known = _STUBBED.get(block) if type(block) is dict else None
    if known is not None and known[0] == name and known[1] is arguments:
        inline, text_chars = known[2], known[3]
    else:
        text = content_text(block.get("content"))
        inline, text_chars = find_pointer(text), len(text)
        known = (name, arguments, inline, text_chars, None, None)
    # a pointer the diet left in the text wins: it is what the model saw
    pointer = marker(inline) if inline else pointer_for(block.get("tool_use_id", ""))
    if known[5] is not None and known[4] == pointer:
        stub: str = known[5]
    else:
        stub = stub_for(block, name, arguments, pointer)
        if type(block) is dict:
            _STUBBED.put(block, (name, arguments, inline, text_chars, pointer, stub))
    return stub if len(stub) < text_chars else None


def prunable_turns(
    messages: Sequence[Msg],
    keep_recent: int,
    protected: Protected = _never,
    pointer_for: PointerFor = _nothing,
) -> list[int]:
    """Old tool-result turns (beyond the newest `keep_recent`) holding at least one prunable result."""
    return _prunable_among(messages, _old_open_turns(messages, keep_recent), protected, pointer_for)


def _old_open_turns(messages: Sequence[Msg], keep_recent: int) -> list[int]:
    """Turns beyond the newest `keep_recent` result turns that still hold a whole result: the
    only ones pruning may have to read (a turn whose results are all stubs is skipped unread)."""
    if keep_recent <= 0:
        return []
    facts = _turn_facts(messages)
    turns = list(itertools.compress(itertools.count(), map(_RESULTS, facts)))
    if len(turns) <= keep_recent:
        return []
    recent = turns[len(turns) - keep_recent]  # the oldest turn kept verbatim
    return [i for i in itertools.compress(itertools.count(), map(_OPEN, facts[:recent])) if i > 0]


def _prunable_among(
    messages: Sequence[Msg], turns: list[int], protected: Protected, pointer_for: PointerFor
) -> list[int]:
    if not turns:
        return []
    names = _names_by_id(messages)
    return [i for i in turns if any(_prunable(b, names, protected, pointer_for) for b in blocks(messages[i]))]


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
    candidates = _old_open_turns(messages, keep_recent)
    if len(candidates) < max(1, batch):  # too few to make a batch, whatever they hold: none read
        return list(messages)
    targets = set(_prunable_among(messages, candidates, protected, pointer_for))
    if len(targets) < max(1, batch):
        return list(messages)
    names = _names_by_id(messages)
    pruned = list(messages)  # untouched messages stay the very same dicts; only targets are rebuilt
    for index in targets:
        new_blocks = []
        for block in blocks(messages[index]):
            stub = _prunable(block, names, protected, pointer_for)
            new_blocks.append(block if stub is None else {**block, "content": stub})
        pruned[index] = {**messages[index], "content": new_blocks}
    return pruned
