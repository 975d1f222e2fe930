"""The blocks of tools the API runs: pairing a server call with its result, closing one left
open, the blocks the SDK does not model.

A server tool (the API's own, like web search, or a remote MCP server's) runs on the API's
side: its call and its result come back in the reply and go back in the history as a pair,
never one without the other. A run whose tools all run here never sees such a block, so this
module loads only when a reply or a history holds one (`agent.messages` tests for that first)
or a reply holds a block the SDK does not model (`agent.stream`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from anthropic.types import ContentBlock, Message
from pydantic import BaseModel, ConfigDict, PrivateAttr

__all__ = [
    "SERVER_CALLS",
    "RawBlock",
    "Reply",
    "answered_ids",
    "closing_results",
    "code_caller",
    "is_server_call",
    "is_server_result",
    "result_type_for",
    "unanswered_calls",
    "whole_pairs",
]

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


class Reply(Message):
    """A `Message` holding blocks the stable SDK does not model: its `content` declares
    `RawBlock` too, so the whole reply dumps as the API sent it, without serializer warnings."""

    content: list[ContentBlock | RawBlock]  # type: ignore[assignment]


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


def whole_pairs(content: list[dict[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The server part of `agent.messages.assistant_message(drop_tool_uses=True)`: `content` (a
    turn that ends the run or was cut off, after the history `after`) with its server calls and
    results in whole pairs, and a `closing_results` answer for each call `after` left open."""
    content = _whole_server_pairs(content, answered_ids(after))
    answered = {b.get("tool_use_id") for b in content if is_server_result(b)}
    content += closing_results(c for c in unanswered_calls(after) if c.get("id") not in answered)
    return content


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
    return [b for b in kept if b.get("type") != "tool_use" or code_caller(b) in running]


def code_caller(block: Mapping[str, Any]) -> str | None:
    """The id of the server call whose code made this client call (`caller`, programmatic tool
    calling), or None for a call the model made itself. Such a call is part of its code's run,
    so it is sent back as it came, a final turn's included."""
    caller = block.get("caller")
    if isinstance(caller, Mapping) and caller.get("type") not in (None, "direct"):
        return str(caller.get("tool_id"))
    return None
