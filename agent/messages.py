"""Pure helpers over wire-shaped messages (plain dicts, as the API takes them).

History is kept exactly as sent, so there is nothing private to strip or leak; which call a result
answers is its `tool_use_id`. Server tools' blocks are `agent.server_blocks`' to handle, loaded only
once a cheap test finds one."""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import anthropic.types
from anthropic.types import Message

from agent.tools import ToolCall

__all__ = [
    "CLIENT_BLOCKS",
    "as_object",
    "assistant_message",
    "blocks",
    "content_text",
    "cut_off_early",
    "deep_copy",
    "final_text",
    "opening_messages",
    "reply_turn",
    "shared_length",
    "stop_detail",
    "text_of",
    "tool_calls",
    "tool_names_by_id",
    "tool_result_block",
    "user_message",
    "visible_text",
]

Msg = dict[str, Any]

CLIENT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
"""The blocks of a turn whose tools all run here; any other, or a `tool_use` with a `caller` (made by
a server call's code), may be `agent.server_blocks`' to act on."""


def _server_side(messages: Iterable[Mapping[str, Any]]) -> bool:
    """Whether an assistant turn holds a block outside `CLIENT_BLOCKS`, or a `tool_use` with a `caller`:
    then `agent.server_blocks` may act on it (a loose test: it loads only for such turns)."""
    return any(
        isinstance(b, Mapping) and (b.get("type") not in CLIENT_BLOCKS or "caller" in b)
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
    )


def user_message(text: str) -> Msg:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def shared_length(seen: Sequence[Any], items: Sequence[Any]) -> int:
    """How many leading items of `seen` and `items` are equal: lists by halving slices (compared in C,
    far cheaper than a Python loop over a long history), others item by item (a list never equals a tuple)."""
    n = min(len(seen), len(items))
    low, high = 0, n  # seen[:low] == items[:low]; the first difference is in [low, high)
    if type(seen) is list and type(items) is list:
        if (seen if len(seen) == n else seen[:n]) == (items if len(items) == n else items[:n]):
            return n
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
    """The response as an assistant turn to send back (None if nothing is left): as it came (thinking is
    bound to it), minus what would invalidate the next request: empty text, a non-object input, a repeated
    or refused id. `drop_tool_uses` (a turn that ends the run or was cut off) drops its calls, which must
    not run; server calls, and what their code called, stay or go in whole pairs with `after`, the history
    this turn follows (`agent.server_blocks.whole_pairs`)."""
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
            if drop_tool_uses and not _made_by_code(dumped):
                continue  # a call made by code goes with its code's call (`whole_pairs`)
            dumped["id"] = ids[index]
            dumped["input"] = as_object(dumped.get("input"))
        content.append(dumped)
    if drop_tool_uses and _server_side([{"role": "assistant", "content": content}, *after]):
        from agent.server_blocks import whole_pairs  # loaded by the runs that use a server tool

        content = whole_pairs(content, after)
    return {"role": "assistant", "content": content} if content else None


def _made_by_code(call: Mapping[str, Any]) -> bool:
    """A `tool_use` made by a server call's code; without a `caller`, known without loading that module."""
    if "caller" not in call:
        return False
    from agent.server_blocks import code_caller  # loaded by the runs that use a server tool

    return code_caller(call) is not None


TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
"""The ids the API accepts on a `tool_use` it is sent back."""


def _dumped(block: Any) -> dict[str, Any]:
    """A reply block as the wire carries it back: the fields the API sent (no defaults), minus needless
    nulls (`_drop_nulls`). A `tool_use` input that is not an object (swapped first: pydantic would warn on
    dumping it) or nests too deep goes back as `{}`; its call gets an error result."""
    if not isinstance(block, anthropic.BaseModel):  # not the SDK's: a `RawBlock`, maybe
        from agent.server_blocks import RawBlock  # loaded by the replies that hold one

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
        dumped = block.model_copy(update={"input": {}}).model_dump(mode="json", exclude_unset=True)
    _drop_nulls(dumped)
    return dumped


def _drop_nulls(value: Any) -> None:
    """Drop a dumped block's nulls (an optional key's null means its absence), bar keys its request type
    requires though nullable (`char_location.document_title`: a 400 if absent); a call's `input` is kept."""
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
        spelled = {key: str(getattr(kind, "__forward_arg__", kind)) for key, kind in annotations.items()}
        keys = {key for key, kind in spelled.items() if _REQUIRED_NULLABLE.match(kind)}
        for kind in re.findall(r"['\"]([^'\"]+)['\"]", literal.group(1)):
            found.setdefault(kind, set()).update(keys)
    return {kind: frozenset(keys) for kind, keys in found.items() if keys}


_LITERAL = re.compile(r"Literal\[([^\]]*)\]")
_REQUIRED_NULLABLE = re.compile(r"^Required\[(Optional\[|Union\[.*\bNone\b)")


def _unique_ids(response: Message, after: Sequence[Msg] = ()) -> dict[int, str]:
    """Block index -> its call's id: the model's, or a fresh `<id>_dupN` if the API would refuse it or an
    earlier call (even in `after`, where the API allows it) took it: calls are looked up by id everywhere."""
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
        chosen = block.id if isinstance(block.id, str) else ""
        if not TOOL_USE_ID.fullmatch(chosen) or chosen in taken:
            base = re.sub(r"[^a-zA-Z0-9_-]", "", chosen)[:60] or "toolu"
            number = 1
            while f"{base}_dup{number}" in taken:
                number += 1
            chosen = f"{base}_dup{number}"
        taken.add(chosen)
        ids[index] = chosen
    return ids


def as_object(value: Any) -> dict[str, Any]:
    """A call's input as the wire must carry it: the object, or `{}` (the call gets an error result)."""
    return dict(value) if isinstance(value, Mapping) else {}


def tool_calls(response: Message, after: Sequence[Msg] = ()) -> list[ToolCall]:
    """The turn's client calls, ids as `assistant_message` sends them, input as the model sent it."""
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
    return {
        b["id"]: (b["name"], b.get("input", {}))
        for m in messages
        if m.get("role") == "assistant"
        for b in blocks(m)
        if b.get("type") == "tool_use"
    }


UNANSWERED = "not run: the conversation was handed over before this call was answered"


def opening_messages(history: Sequence[Msg], prompt: str, *, tools_declared: bool) -> list[Msg]:
    """The first request's messages: a copy of `history` (block lists, no cache markers), then `prompt`.
    ValueError now for what the API would refuse later, less clearly; calls left unanswered get an error."""
    if not prompt.strip():
        raise ValueError("prompt must not be empty (the API rejects empty text blocks)")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"prompt is not valid Unicode text (a lone surrogate at position {error.start}): "
            "it cannot be sent as UTF-8"
        ) from None
    earlier = [{"role": m["role"], "content": [_unmarked(b) for b in blocks(m)]} for m in deep_copy(history)]
    kinds = {b.get("type") for m in earlier for b in m["content"]}
    if not tools_declared and kinds & {"tool_use", "tool_result"}:
        raise ValueError(
            "the history holds tool calls but the agent has no tools: the API refuses tool blocks "
            "in a request that declares none; give the agent the tools this conversation used"
        )
    opening = user_message(prompt)
    if earlier and earlier[-1]["role"] == "assistant":
        last = earlier[-1]
        if _server_side(earlier):  # a server tool's blocks: loaded by the runs that use one
            from agent.server_blocks import closing_results, unanswered_calls

            open_calls = unanswered_calls(earlier)
            if open_calls:  # a paused turn handed over: its server calls can no longer be continued
                last["content"] += closing_results(open_calls)
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
    """A reply cut by `max_tokens` with nothing usable: mid tool call, or no text (thinking used it all)."""
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
    return "\n".join(
        str(b.get("text", "")) if b.get("type") == "text" else json.dumps(b, ensure_ascii=False, default=str)
        for b in content
        if isinstance(b, Mapping)
    )


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
