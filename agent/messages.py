"""Small pure helpers over wire-shaped messages (plain dicts, as the API takes them).

History is kept exactly as it goes on the wire: no private keys to strip before
sending, nothing to leak. What bookkeeping needs (which tool produced a result) is
derived from the history itself: a `tool_result` answers the `tool_use` with the
same id in the message right before it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from anthropic.types import Message

from agent.registry import ToolCall

__all__ = [
    "assistant_message",
    "blocks",
    "content_text",
    "cut_off_early",
    "deep_copy",
    "final_text",
    "stop_detail",
    "text_of",
    "tool_calls",
    "tool_names_by_id",
    "tool_result_block",
    "user_message",
    "visible_text",
]

Msg = dict[str, Any]


def user_message(text: str) -> Msg:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def blocks(message: Msg) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a bare string becomes one text block)."""
    content = message.get("content", [])
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def assistant_message(response: Message, *, drop_tool_uses: bool = False) -> Msg | None:
    """The response as an assistant turn to send back; None when nothing is left.

    `drop_tool_uses` is for a turn cut off by `max_tokens` or `refusal`: its tool
    calls must not run, and a `tool_use` left without a result would make the
    history invalid for any later request.
    """
    content = []
    for block in response.content:
        if drop_tool_uses and block.type in ("tool_use", "server_tool_use"):
            continue
        if block.type == "text" and not block.text:
            continue  # the API rejects empty text blocks
        content.append(block.model_dump(mode="json", exclude_none=True))
    return {"role": "assistant", "content": content} if content else None


def tool_calls(response: Message) -> list[ToolCall]:
    return [ToolCall(b.id, b.name, dict(b.input)) for b in response.content if b.type == "tool_use"]


def tool_result_block(tool_use_id: str, content: str, is_error: bool = False) -> dict[str, Any]:
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


def deep_copy(messages: Sequence[Msg]) -> list[Msg]:
    """A copy the caller's lists and dicts cannot be reached through."""
    return copy.deepcopy(list(messages))


def text_of(response: Message) -> str:
    """All the text of a response, joined."""
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
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
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
