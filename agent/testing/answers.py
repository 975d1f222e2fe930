"""What the simulator sends back, in the API's shapes: messages, errors, and policy answers.

A policy may answer loosely (a string, a list of strings and blocks, a `reply()`
dict, thinking blocks to script the model's reasoning); the API never does.
`normalize` turns the loose answer into exactly what the API would send, and
refuses what it never sends (an empty text block, a tool call without a name), so
a careless policy cannot make the framework look better than a real model would
let it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.testing.mcp_blocks import MCP_BLOCKS, mcp_block
from agent.testing.policies import HINT

__all__ = ["ERROR_TYPES", "Reply", "error_body", "json_reply", "normalize"]

ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Reply:
    """What the simulator sends back: status, body bytes and extra headers."""

    status: int
    body: bytes
    headers: Mapping[str, str]


def error_body(status: int, message: str) -> dict[str, Any]:
    """The API's error shape."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def json_reply(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(body, ensure_ascii=False).encode(), dict(headers or {}))


def normalize(answer: Any) -> tuple[list[dict[str, Any]], str]:
    """A policy's answer as (content blocks, stop_reason); refuses shapes the API never sends."""
    stop_reason = None
    if isinstance(answer, Mapping) and "type" not in answer:  # a reply, not a single block
        stop_reason = answer.get("stop_reason")
        answer = answer.get("content")
    items: list[Any] = [answer] if isinstance(answer, str | Mapping) else list(answer or [])
    content: list[dict[str, Any]] = []
    for item in items:
        block: dict[str, Any] = {"type": "text", "text": item} if isinstance(item, str) else dict(item)
        if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"]:
            content.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "tool_use" and isinstance(block.get("name"), str):
            content.append(
                {"type": "tool_use", "id": "", "name": block["name"], "input": dict(block.get("input") or {})}
            )
        elif block.get("type") in ("thinking", "redacted_thinking") and _scripted_thinking(block):
            content.append(block)
        elif block.get("type") in MCP_BLOCKS:
            content.append(mcp_block(block))
        elif _scripted_server_block(block):
            content.append(dict(block))
        else:
            raise ValueError(f"policy returned a block the API never sends: {block!r}; {HINT}")
    visible = [b for b in content if b["type"] not in ("thinking", "redacted_thinking")]
    if not visible and stop_reason not in ("max_tokens", "refusal", "pause_turn"):
        raise ValueError(f"policy returned no content; {HINT}")
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return content, str(stop_reason)


def _scripted_server_block(block: Mapping[str, Any]) -> bool:
    """A server tool's call (`{"type": "server_tool_use", "name": ..., "input": {...}}`, id
    optional: the simulator names it) or its result (`{"type": "web_search_tool_result",
    "content": ...}`, `tool_use_id` optional: it answers the latest call still open)."""
    kind = block.get("type")
    if kind == "server_tool_use":
        return isinstance(block.get("name"), str) and isinstance(block.get("input", {}), Mapping)
    return (
        isinstance(kind, str)
        and kind.endswith("_tool_result")
        and kind != "tool_result"
        and "content" in block
    )


def _scripted_thinking(block: Mapping[str, Any]) -> bool:
    """A policy's thinking block: `{"type": "thinking", "thinking": text, "tokens": n}` (both
    optional) or `{"type": "redacted_thinking", "tokens": n}`; the simulator signs it."""
    text, tokens = block.get("thinking"), block.get("tokens")
    allowed = {"type", "thinking", "tokens"} if block.get("type") == "thinking" else {"type", "tokens"}
    return (
        set(block) <= allowed
        and (text is None or isinstance(text, str))
        and (tokens is None or (isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0))
    )
