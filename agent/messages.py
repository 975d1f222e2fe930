"""Small pure helpers over wire-shaped messages (plain dicts, as the API takes them).

History is kept exactly as it goes on the wire: no private keys to strip before
sending, nothing to leak. Bookkeeping (which tool produced a result) is derived from
the history itself: a `tool_result` answers the `tool_use` with the same id.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import anthropic.types
from anthropic.types import Message
from pydantic import BaseModel, ConfigDict, PrivateAttr

from agent.tools import ToolCall

__all__ = [
    "SERVER_CALLS",
    "RawBlock",
    "answered_ids",
    "as_object",
    "assistant_message",
    "blocks",
    "closing_results",
    "content_text",
    "cut_off_early",
    "deep_copy",
    "final_text",
    "is_server_call",
    "is_server_result",
    "opening_messages",
    "reply_turn",
    "result_type_for",
    "shared_length",
    "stop_detail",
    "text_of",
    "tool_calls",
    "tool_names_by_id",
    "tool_result_block",
    "unanswered_calls",
    "user_message",
    "visible_text",
]

Msg = dict[str, Any]

SERVER_CALLS = frozenset({"server_tool_use", "mcp_tool_use"})
"""Blocks that call a tool the server runs (the API's own, or a remote MCP server's)."""

_RESULT_TYPES = {
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
}
_ERROR_CONTENT = {"mcp_tool_result"}  # results whose error is `is_error` + text, not an error object


class RawBlock(BaseModel):
    """A reply block of a type the stable SDK does not model (`mcp_tool_use`, `mcp_tool_result`,
    `compaction`, `advisor_tool_result`, `fallback`, any type to come), as the API sent it.

    The SDK would build it as a `TextBlock` with its type overridden (`text` and `citations`
    null, the real fields extra, a serializer warning on each dump); this one reads like any
    block (`block.type`, `block.input`) and goes back to the API as the dict it came as (`wire`)."""

    model_config = ConfigDict(extra="allow")
    type: str
    _wire: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def of(cls, block: Mapping[str, Any]) -> RawBlock:
        wire = copy.deepcopy(dict(block))
        made = cls.model_validate(wire)
        made._wire = wire
        return made

    def wire(self) -> dict[str, Any]:
        """The block as the API sent it (a copy), keys in its order."""
        return copy.deepcopy(self._wire)


def is_server_call(block: Mapping[str, Any]) -> bool:
    return block.get("type") in SERVER_CALLS


def is_server_result(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"


def result_type_for(call: Mapping[str, Any]) -> str:
    """The result block type that answers `call` (`web_search` -> `web_search_tool_result`)."""
    if call.get("type") == "mcp_tool_use":
        return "mcp_tool_result"
    name = str(call.get("name", ""))
    return _RESULT_TYPES.get(name, f"{name}_tool_result")


def _content(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def unanswered_calls(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Server calls in `messages` with no result anywhere in them, in order (left open by a
    paused or cut-off turn, or a call in flight while the client's tools ran)."""
    found = [b for m in messages if m.get("role") == "assistant" for b in _content(m)]
    answered = {b.get("tool_use_id") for b in found if is_server_result(b)}
    return [dict(b) for b in found if is_server_call(b) and b.get("id") not in answered]


def answered_ids(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """Ids of the server calls in `messages` (what a later result may answer)."""
    found = [b for m in messages if m.get("role") == "assistant" for b in _content(m)]
    return {str(b.get("id")) for b in found if is_server_call(b)}


def closing_results(calls: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One "unavailable" error result per call, in the API's own shape: the honest answer for
    a server call that never got one, so the history stays valid to continue."""
    results = []
    for call in calls:
        kind = result_type_for(call)
        block: dict[str, Any] = {"type": kind, "tool_use_id": call.get("id")}
        if kind in _ERROR_CONTENT:
            block |= {"is_error": True, "content": "not run: the turn ended before this call finished"}
        else:
            block["content"] = {"type": f"{kind}_error", "error_code": "unavailable"}
        results.append(block)
    return results


def user_message(text: str) -> Msg:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def shared_length(seen: Sequence[Any], items: Sequence[Any]) -> int:
    """How many leading items of `seen` and `items` are equal.

    Lists are compared slice by slice (in C, identical objects equal at once), halving
    towards the first difference: far cheaper than a Python loop over a long history.
    Other sequences go item by item (a list never equals a tuple)."""
    n = min(len(seen), len(items))
    if type(seen) is not list or type(items) is not list:
        return next((i for i in range(n) if seen[i] is not items[i] and seen[i] != items[i]), n)
    if (seen if len(seen) == n else seen[:n]) == (items if len(items) == n else items[:n]):
        return n
    low, high = 0, n  # seen[:low] == items[:low]; the first difference is in [low, high)
    while high - low > 8:
        middle = (low + high) // 2
        if seen[low:middle] == items[low:middle]:
            low = middle
        else:
            high = middle
    return next((i for i in range(low, high) if seen[i] is not items[i] and seen[i] != items[i]), high)


def blocks(message: Msg) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a bare string becomes one text block)."""
    content = message.get("content", [])
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def assistant_message(
    response: Message, *, drop_tool_uses: bool = False, after: Sequence[Msg] = ()
) -> Msg | None:
    """The response as an assistant turn to send back; None when nothing is left.

    Kept as it came (thinking blocks are bound to it), minus what would invalidate the next
    request: empty text, a non-object `tool_use` input (sent as `{}`), a repeated or refused id.

    `drop_tool_uses` is for a turn that ends the run or was cut off: its calls must not run,
    and a `tool_use` without a result would invalidate any later request. A server call and
    its result stay or go as a pair; a `tool_use` made by a server call's code (its `caller`,
    programmatic tool calling) stays or goes with that call. `after` is the history this turn
    follows: a result here may answer a call made there; a call there still unanswered gets
    `closing_results`.
    """
    return _assistant(response, _unique_ids(response, after), drop_tool_uses, after)


def reply_turn(response: Message, after: Sequence[Msg] = ()) -> tuple[Msg | None, list[ToolCall]]:
    """`assistant_message` and `tool_calls` for one response, the ids worked out once."""
    ids = _unique_ids(response, after)
    return _assistant(response, ids, False, after), _calls(response, ids)


def _assistant(
    response: Message, ids: dict[int, str], drop_tool_uses: bool, after: Sequence[Msg]
) -> Msg | None:
    content = []
    for index, block in enumerate(response.content):
        if block.type == "text" and not block.text:
            continue  # the API rejects empty text blocks
        dumped = _dumped(block)
        if block.type == "tool_use":
            if drop_tool_uses and _code_caller(dumped) is None:
                continue  # a call made by code goes with its code's call (`_whole_server_pairs`)
            dumped["id"] = ids[index]
            dumped["input"] = as_object(dumped.get("input"))
        content.append(dumped)
    if drop_tool_uses:
        content = _whole_server_pairs(content, answered_ids(after))
        answered = {b.get("tool_use_id") for b in content if is_server_result(b)}
        content += closing_results(c for c in unanswered_calls(after) if c.get("id") not in answered)
    return {"role": "assistant", "content": content} if content else None


TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
"""The ids the API accepts on a `tool_use` it is sent back."""


def _dumped(block: Any) -> dict[str, Any]:
    """A reply block as the wire carries it back: the fields the API sent (`exclude_unset`: never
    a default it did not send), its nulls where the request type requires the key (`_drop_nulls`);
    a `RawBlock` as its dict. A `tool_use` whose input is not an object,
    or nests too deep to serialise, goes back with `{}` (its call gets an error result; the
    history stays valid). A non-object is swapped before dumping: the SDK builds replies
    unvalidated, and pydantic would warn on serialising an input its `dict` field does not expect."""
    if isinstance(block, RawBlock):
        wire = block.wire()
        if "input" in wire and not isinstance(wire["input"], Mapping):
            wire["input"] = {}  # a streamed input whose JSON did not parse
        return wire
    if block.type == "tool_use" and not isinstance(block.input, Mapping):
        block = block.model_copy(update={"input": {}})
    try:
        dumped: dict[str, Any] = block.model_dump(mode="json", exclude_unset=True)
    except (ValueError, RecursionError):
        if block.type != "tool_use":
            raise
        block = block.model_copy(update={"input": {}})
        dumped = block.model_dump(mode="json", exclude_unset=True)
    _drop_nulls(dumped)
    return dumped


def _drop_nulls(value: Any) -> None:
    """`value` (a dumped block) without its nulls, bar those of keys the request type for their
    `type` requires: nullable, but never to be left out (`char_location.document_title`; its
    absence is a 400). An optional key's null says what its absence says, and some are keys the
    request types have not at all (`code_execution_result.abort_reason`). A call's `input` is
    the model's own data, kept whole."""
    if isinstance(value, dict):
        kind = value.get("type")
        kept = _required_nullable().get(kind, frozenset()) if isinstance(kind, str) else frozenset()
        for key in list(value):
            if value[key] is None and key not in kept:
                del value[key]
            elif key != "input":
                _drop_nulls(value[key])
    elif isinstance(value, list):
        for item in value:
            _drop_nulls(item)


@functools.cache
def _required_nullable() -> dict[str, frozenset[str]]:
    """Block `type` -> the keys the stable SDK's request types (`*Param`) require but let be null."""
    found: dict[str, set[str]] = {}
    for name, param in vars(anthropic.types).items():
        annotations = getattr(param, "__annotations__", None) if name.endswith("Param") else None
        literal = _LITERAL.search(str(annotations.get("type", ""))) if isinstance(annotations, dict) else None
        if not (annotations and literal):
            continue
        keys = {key for key, kind in annotations.items() if _REQUIRED_NULLABLE.match(_spelled(kind))}
        for kind in re.findall(r"['\"]([^'\"]+)['\"]", literal.group(1)):
            found.setdefault(kind, set()).update(keys)
    return {kind: frozenset(keys) for kind, keys in found.items() if keys}


def _spelled(annotation: Any) -> str:
    """An annotation as its source spells it (the SDK's are forward references)."""
    return str(getattr(annotation, "__forward_arg__", annotation))


_LITERAL = re.compile(r"Literal\[([^\]]*)\]")
_REQUIRED_NULLABLE = re.compile(r"^Required\[(Optional\[|Union\[.*\bNone\b)")


def _unique_ids(response: Message, after: Sequence[Msg] = ()) -> dict[int, str]:
    """Block index -> its call's id: the model's, unless the API would refuse it or an earlier
    call (this turn or `after`) took it; then a fresh `<id>_dupN`. Calls are looked up by id
    everywhere (results, pruning stubs, the ledger), so a shared id would let one call stand
    in for another, even across turns, where the API would accept it."""
    if not any(block.type == "tool_use" for block in response.content):
        return {}
    taken = {
        b.get("id")
        for m in after
        if m.get("role") == "assistant" and isinstance(content := m.get("content"), list)
        for b in content
        if "id" in b
    }
    ids = {}
    for index, block in enumerate(response.content):
        if block.type != "tool_use":
            continue
        wanted = block.id if isinstance(block.id, str) else ""
        chosen = wanted
        if not TOOL_USE_ID.fullmatch(wanted) or wanted in taken:
            base = re.sub(r"[^a-zA-Z0-9_-]", "", wanted)[:60] or "toolu"
            number = 1
            while f"{base}_dup{number}" in taken:
                number += 1
            chosen = f"{base}_dup{number}"
        taken.add(chosen)
        ids[index] = chosen
    return ids


def _whole_server_pairs(content: list[dict[str, Any]], earlier: set[str]) -> list[dict[str, Any]]:
    """`content` without server calls lacking their result, nor results lacking their call, nor
    client calls made by the code of a call that went (programmatic tool calling)."""
    calls = {b.get("id") for b in content if b.get("type") in SERVER_CALLS} | earlier
    answered = {b.get("tool_use_id") for b in content if is_server_result(b)}
    kept = [
        b
        for b in content
        if not (b.get("type") in SERVER_CALLS and b.get("id") not in answered)
        and not (is_server_result(b) and b.get("tool_use_id") not in calls)
    ]
    running = {b.get("id") for b in kept if b.get("type") in SERVER_CALLS} | earlier | {None}
    return [b for b in kept if b.get("type") != "tool_use" or _code_caller(b) in running]


def _code_caller(block: Mapping[str, Any]) -> str | None:
    """The id of the server call whose code made this client call (`caller`, programmatic tool
    calling), or None for a call the model made itself. Such a call is part of its code's run,
    so it is sent back as it came, a final turn's included."""
    caller = block.get("caller")
    if isinstance(caller, Mapping) and caller.get("type") not in (None, "direct"):
        return str(caller.get("tool_id"))
    return None


def as_object(value: Any) -> dict[str, Any]:
    """A call's input as the wire must carry it: the object, or `{}` (the call gets an error result)."""
    return dict(value) if isinstance(value, Mapping) else {}


def tool_calls(response: Message, after: Sequence[Msg] = ()) -> list[ToolCall]:
    """The turn's client tool calls, ids as `assistant_message` sends them back after `after`,
    input exactly as the model sent it (the registry refuses a non-object)."""
    return _calls(response, _unique_ids(response, after))


def _calls(response: Message, ids: dict[int, str]) -> list[ToolCall]:
    return [ToolCall(ids[i], b.name, b.input) for i, b in enumerate(response.content) if b.type == "tool_use"]


def tool_result_block(
    tool_use_id: str, content: str | list[dict[str, Any]], is_error: bool = False
) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def tool_names_by_id(messages: Sequence[Msg]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every `tool_use` id in the history mapped to (tool name, input)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for block in blocks(message):
            if block.get("type") == "tool_use":
                found[block["id"]] = (block["name"], block.get("input", {}))
    return found


UNANSWERED = "not run: the conversation was handed over before this call was answered"


def opening_messages(history: Sequence[Msg], prompt: str, *, tools_declared: bool) -> list[Msg]:
    """The first request's messages for `prompt` after `history` (a copy: block lists, no cache
    markers). ValueError now for what the API would refuse later, less clearly: an empty or
    non-Unicode prompt, tool blocks with no tools declared. Calls left unanswered at the end of
    `history` get an error result each, so the model learns they never ran."""
    if not prompt.strip():
        raise ValueError("prompt must not be empty (the API rejects empty text blocks)")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"prompt is not valid Unicode text (a lone surrogate at position {error.start}): "
            "it cannot be sent as UTF-8"
        ) from None
    earlier = [{"role": m["role"], "content": blocks(m)} for m in deep_copy(history)]
    earlier = [{**m, "content": [_unmarked(b) for b in m["content"]]} for m in earlier]
    kinds = {b.get("type") for m in earlier for b in m["content"]}
    if not tools_declared and kinds & {"tool_use", "tool_result"}:
        raise ValueError(
            "the history holds tool calls but the agent has no tools: the API refuses tool blocks "
            "in a request that declares none; give the agent the tools this conversation used"
        )
    opening = user_message(prompt)
    if earlier and earlier[-1]["role"] == "assistant":
        last = earlier[-1]
        open_calls = unanswered_calls(earlier)
        if open_calls:  # a paused turn handed over: its server calls can no longer be continued
            last = {**last, "content": [*last["content"], *closing_results(open_calls)]}
            earlier[-1] = last
        pending = [b["id"] for b in last["content"] if b.get("type") == "tool_use"]
        answers = [tool_result_block(i, UNANSWERED, is_error=True) for i in pending]
        opening = {"role": "user", "content": [*answers, *opening["content"]]}
    return [*earlier, opening]


def _unmarked(block: Mapping[str, Any]) -> dict[str, Any]:
    """A block without `cache_control` (a caller's markers would crowd out the loop's own)."""
    clean = {k: v for k, v in block.items() if k != "cache_control"}
    if isinstance(clean.get("content"), list):
        clean["content"] = [_unmarked(b) if isinstance(b, Mapping) else b for b in clean["content"]]
    return clean


def deep_copy(messages: Sequence[Msg]) -> list[Msg]:
    """A copy the caller's lists and dicts cannot be reached through."""
    return copy.deepcopy(list(messages))


def text_of(response: Message) -> str:
    return "".join(b.text for b in response.content if b.type == "text")


def final_text(messages: Sequence[Msg]) -> str:
    """The newest assistant text in a history (what a run stopped early has to show)."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return "".join(b.get("text", "") for b in blocks(message) if b.get("type") == "text")
    return ""


def cut_off_early(response: Message) -> bool:
    """A reply stopped by `max_tokens` with nothing usable: no visible text and no complete
    tool call (thinking alone used the budget), or cut in the middle of a tool call."""
    if response.stop_reason != "max_tokens":
        return False
    said = any(b.type == "text" and b.text.strip() for b in response.content)
    called = any(b.type in ("tool_use", "server_tool_use") for b in response.content)
    return called or not said


def stop_detail(stop_reason: str | None) -> str | None:
    """Why a run ended, in words, when it was not a normal final answer."""
    return {
        "max_tokens": "output hit max_tokens; any tool call in that turn was cut off and not run",
        "refusal": "the model refused to continue",
        "model_context_window_exceeded": "the prompt filled the model's context window",
    }.get(stop_reason or "")


def content_text(content: Any) -> str:
    """The text of a tool_result's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, Mapping):
            parts.append(json.dumps(block, ensure_ascii=False, default=str))
    return "\n".join(parts)


def visible_text(messages: Sequence[Msg]) -> str:
    """Everything the model reads in a history: every text block and every result's text."""
    parts = []
    for message in messages:
        for block in blocks(message):
            if block.get("type") == "text":
                parts.append(block["text"])
            elif block.get("type") == "tool_result":
                parts.append(content_text(block.get("content")))
    return "\n".join(parts)
