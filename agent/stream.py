"""A reply as the API sent it: its server-sent events put together, and the `Message` built from it.

The SDK's own stream accumulator (`anthropic.lib.streaming`) keeps only what the stable types
model, so `AnthropicLLM` reads the stream's bytes itself. Where it falls short, in live
recordings:

* it tracks `input_json_delta` only for `tool_use` and `server_tool_use`: an `mcp_tool_use`
  starts with `input: {}` and keeps it, its real input lost;
* it ignores `compaction_delta`, so a streamed `compaction` block keeps `content: null`;
* from `message_delta` it copies stop fields, `container` and five usage counts: the event's
  `context_management` (and `input_transformations`, any new field) and `usage.iterations`
  (the bill of compaction and advisor turns) are dropped.

`ReplyStream` applies every event generically instead: text, thinking, signatures, citations and
JSON inputs as the API defines them, any other delta's fields appended to (strings) or set on
its block, every field of `message_delta` set on the message. A null in a delta never erases a
value the stream gave before (the SDK keeps `message_start`'s `container` so too). `message`
builds the `Message` both paths return: the SDK's own types for the blocks its stable
`ContentBlock` models, the API's dict (`agent.server_blocks.RawBlock`, in that module's `Reply`)
for any other block (a type the SDK does not know, or a value its type cannot hold): that
module loads only for a reply holding such a block.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from anthropic.types import ContentBlock, Message

__all__ = ["MODELED_BLOCKS", "ReplyStream", "message"]


def _checks(model: Any) -> list[tuple[str, Callable[[Any], bool]]]:
    """(field, test) for the fields of `model` whose type is a literal or an object: what a
    value must pass for the SDK's type to hold it as sent (a `server_tool_use` named `advisor`
    does not: its `name` is a literal of the server tools the SDK knew)."""
    checks: list[tuple[str, Callable[[Any], bool]]] = []
    for name, field in model.model_fields.items():
        union = get_origin(field.annotation) in (Union, UnionType)
        kinds = (
            [k for k in get_args(field.annotation) if k is not type(None)] if union else [field.annotation]
        )
        if name == "type" or len(kinds) != 1:
            continue
        if get_origin(kinds[0]) is Literal:
            checks.append((name, functools.partial(_one_of, get_args(kinds[0]))))
        elif get_origin(kinds[0]) is dict or kinds[0] is dict:
            checks.append((name, _is_object))
    return checks


def _one_of(allowed: tuple[Any, ...], value: Any) -> bool:
    return any(value == a for a in allowed)


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


_MODELED = {
    get_args(member.model_fields["type"].annotation)[0]: _checks(member)
    for member in get_args(get_args(ContentBlock)[0])
}
"""Block type the stable SDK's `ContentBlock` union models (text, thinking, tool_use, ...) ->
the tests its literal and object fields put a block's values to."""
MODELED_BLOCKS = frozenset(_MODELED)

_LINE_END = re.compile(rb"\r\n|\r|\n")
_DELTA_TEXT = {"text_delta": "text", "thinking_delta": "thinking"}


def message(raw: dict[str, Any]) -> Message:
    """The `Message` of a reply body: built as the SDK builds a JSON reply (unvalidated, so
    every field the API sent is kept and `model_fields_set` says which it sent); a `Reply`, each
    block of a type the SDK does not model a `RawBlock` of the API's dict, when it has any."""
    content = raw.get("content")
    if not (isinstance(content, list) and any(_unmodeled(b) for b in content)):
        return Message.model_construct(**raw)
    from agent.server_blocks import RawBlock, Reply  # loaded by the replies that hold such a block

    modeled = Message.model_construct(content=[b for b in content if not _unmodeled(b)]).content
    built = Reply.model_construct(**{**raw, "content": []})
    rest = iter(modeled)
    built.content = [RawBlock.of(b) if _unmodeled(b) else next(rest) for b in content]
    return built


def _unmodeled(block: Any) -> bool:
    """A block the SDK's types cannot hold as the API sent it: its type unknown to the stable
    union, or a value its type's literals or object fields do not take (a streamed `input` whose
    JSON did not parse, kept as its text)."""
    if not (isinstance(block, dict) and isinstance(block.get("type"), str)):
        return False
    checks = _MODELED.get(block["type"])
    return checks is None or not all(name not in block or test(block[name]) for name, test in checks)


class ReplyStream:
    """A `/v1/messages` event stream fed as it arrives (`feed` its bytes, then `finish`).

    `complete` once `message_stop` came; `error` holds an `error` event's payload; `message()`
    is the reply put together so far (a dict, as a non-streamed reply's body)."""

    def __init__(self) -> None:
        self.complete = False
        self.error: Any = None
        self.last = ""
        self._raw: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, str] = {}
        self._pending = bytearray()
        self._event: str | None = None
        self._data: list[str] = []

    # -- the wire: bytes to lines to events (the SSE format) --------------------------------

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The events `chunk` completes, each applied to the reply (pings and unnamed ones skipped).
        Lines end at CR, LF or CRLF only (as the SDK splits them; never at a Unicode separator
        inside the JSON)."""
        scan = max(0, len(self._pending) - 1)  # what came before holds no line end, bar a last \r
        self._pending += chunk
        start, done = 0, []
        for end in _LINE_END.finditer(self._pending, scan):
            if end.group() == b"\r" and end.end() == len(self._pending):
                break  # perhaps the first half of a \r\n
            done += self._line(self._pending[start : end.start()].decode("utf-8"))
            start = end.end()
        del self._pending[:start]
        return done

    def finish(self) -> list[dict[str, Any]]:
        """The end of the body: a last line without its newline is read; an event the body
        ends inside (no blank line after it) is not dispatched, as the SSE format says."""
        done = self._line(self._pending.decode("utf-8")) if self._pending else []
        self._pending.clear()
        return done

    def _line(self, line: str) -> list[dict[str, Any]]:
        if not line:
            event, data = self._event, self._data
            self._event, self._data = None, []
            return self._dispatch(event, "\n".join(data)) if data else []
        if line.startswith(":"):
            return []  # a comment
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return []

    def _dispatch(self, event: str | None, data: str) -> list[dict[str, Any]]:
        if event is None or event == "ping":
            return []
        if event == "error":
            try:
                self.error = json.loads(data)
            except ValueError:
                self.error = data
            return []
        parsed = json.loads(data)
        if not isinstance(parsed, dict):
            return []
        parsed.setdefault("type", event)
        self.apply(parsed)
        return [parsed]

    # -- the events: put the reply together ---------------------------------------------------

    def apply(self, event: dict[str, Any]) -> None:
        """One event (parsed) applied to the reply."""
        kind = event.get("type")
        self.last = str(kind)
        if kind == "message_start":  # a second one starts over: what came before was abandoned
            self._raw = copy.deepcopy(event.get("message") or {})
            content = self._raw.get("content")
            self._blocks = dict(enumerate(content)) if isinstance(content, list) else {}
            self._json = {}
        elif self._raw is None:
            return  # nothing to apply to before message_start (the SDK refuses such a stream)
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            index = event.get("index")
            self._blocks[index if isinstance(index, int) else len(self._blocks)] = copy.deepcopy(
                event["content_block"]
            )
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            self._delta(event.get("index"), event["delta"])
        elif kind == "content_block_stop":
            self._parse_input(event.get("index"))
        elif kind == "message_delta":
            _merge(self._raw, event.get("delta"))
            if isinstance(event.get("usage"), dict):
                self._raw["usage"] = _merge(dict(self._raw.get("usage") or {}), event["usage"])
            _merge(self._raw, {k: v for k, v in event.items() if k not in ("type", "delta", "usage")})
        elif kind == "message_stop":
            self.complete = True  # (a stream with no message_start never is)

    def _delta(self, index: Any, delta: dict[str, Any]) -> None:
        block = self._blocks.get(index) if isinstance(index, int) else None
        if block is None:
            return
        kind = delta.get("type")
        if kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + str(delta.get("partial_json") or "")
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind in _DELTA_TEXT:
            key = _DELTA_TEXT[str(kind)]
            block[key] = str(block.get(key) or "") + str(delta.get(key) or "")
        else:  # compaction_delta and any delta to come: its strings appended, other values set
            for key, value in delta.items():
                if key == "type" or value is None:
                    continue
                earlier = block.get(key)
                both_text = isinstance(value, str) and isinstance(earlier, str)
                block[key] = earlier + value if both_text else value

    def _parse_input(self, index: Any) -> None:
        """A block's `input` from its JSON deltas (none, or only empty ones: the start's stays).
        JSON that does not parse is kept as its text: not an object, so its call gets an error
        result and the history sends `{}` (`agent.messages.as_object`)."""
        text = self._json.pop(index, "") if isinstance(index, int) else ""
        if text.strip() and index in self._blocks:
            try:
                self._blocks[index]["input"] = json.loads(text)
            except ValueError:
                self._blocks[index]["input"] = text

    def message(self) -> dict[str, Any]:
        """The reply so far, as a non-streamed reply's body (blocks in index order)."""
        for index in list(self._json):
            self._parse_input(index)
        raw = dict(self._raw or {})
        raw["content"] = [self._blocks[i] for i in sorted(self._blocks)]
        return raw


def _merge(target: dict[str, Any], fields: Any) -> dict[str, Any]:
    """`target` with `fields` set on it; a null never replaces a value already there."""
    if isinstance(fields, dict):
        for key, value in fields.items():
            if value is not None or target.get(key) is None:
                target[key] = value
    return target
