"""A finished Messages API response replayed as the API's server-sent event stream.

`AnthropicLLM` streams by default (long thinking under a non-streamed call risks an
HTTP timeout that is retried and billed again), so the simulator must speak the
stream, and the SDK's `messages.stream(...).get_final_message()` must rebuild exactly
the `Message` a non-streamed call returns. The simulator composes the message once
and `events` turns it into the API's sequence:

    message_start (the message with empty content, stop_reason null, the prompt's usage)
    per block: content_block_start, deltas, content_block_stop (a ping after the first start,
    as the API sends one; right after message_start when there is no block)
        thinking:          thinking_delta chunks (none when the text is omitted), one signature_delta
        redacted_thinking: the whole block in content_block_start, no deltas
        text:              text_delta chunks; a cited one starts with `citations: []` and gets
                           one citations_delta per citation before its text
        tool_use, server_tool_use, mcp_tool_use: `input: {}`, then input_json_delta chunks of the
                           input's JSON; a call made by code (`caller` other than direct) comes
                           whole in content_block_start, as recorded
        compaction:        `content: null`, then one compaction_delta with the summary
        a server tool's result: the whole block in content_block_start, no deltas
    message_delta (stop_reason, stop_sequence, the container code ran in, final cumulative usage
        with `iterations` when the reply lists them)
    message_stop

`input_transformations`, when present, is final in `message_start`, as the API sends it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["CONTENT_TYPE", "encode", "events", "stream_body"]

CONTENT_TYPE = "text/event-stream; charset=utf-8"
CHUNKS = 3
"""Deltas per text, thinking text or tool input (fewer when it is short)."""
_DELTA_USAGE = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
    "server_tool_use",
    "iterations",
)
_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")


def _chunks(text: str, parts: int = CHUNKS) -> Iterator[str]:
    """`text` in up to `parts` pieces (the SDK parses partial JSON, cut anywhere, as the API cuts it)."""
    size = max(1, -(-len(text) // parts))
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    kind = block["type"]
    if kind == "thinking":
        start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": c} for c in _chunks(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text" and block.get("citations"):
        start = {"citations": [], "type": "text", "text": ""}
        deltas = [{"type": "citations_delta", "citation": c} for c in block["citations"]]
        deltas += [{"type": "text_delta", "text": c} for c in _chunks(block["text"])]
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": c} for c in _chunks(block["text"])]
    elif kind == "compaction":
        start = {"type": "compaction", "content": None}
        deltas = [{"type": "compaction_delta", "content": block["content"]}]
    elif kind in _CALLS and _code_called(block):
        start, deltas = dict(block), []
    elif kind in _CALLS:
        start = {**block, "input": {}}
        raw = json.dumps(block["input"], ensure_ascii=False) if block["input"] else ""
        deltas = [{"type": "input_json_delta", "partial_json": c} for c in _chunks(raw)]
    else:
        start, deltas = dict(block), []
    yield {"type": "content_block_start", "index": index, "content_block": start}
    for delta in deltas:
        yield {"type": "content_block_delta", "index": index, "delta": delta}
    yield {"type": "content_block_stop", "index": index}


def _code_called(block: Mapping[str, Any]) -> bool:
    caller = block.get("caller")
    return isinstance(caller, Mapping) and caller.get("type") not in (None, "direct")


def events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The event sequence that rebuilds `message` (a complete response body)."""
    usage = dict(message["usage"])
    opening = {k: v for k, v in usage.items() if k not in ("output_tokens_details", "iterations")}
    opening["output_tokens"] = min(1, usage["output_tokens"])
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": opening}
    start.pop("stop_details", None)
    start.pop("container", None)
    final = {k: usage[k] for k in _DELTA_USAGE if k in usage}
    if "output_tokens_details" in usage:
        final["output_tokens_details"] = usage["output_tokens_details"]
    sequence: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        sequence.extend(_block_events(index, block))
    sequence.insert(2 if message["content"] else 1, {"type": "ping"})  # after the first block's start
    sequence.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": message["stop_reason"],
                "stop_sequence": message.get("stop_sequence"),
                "stop_details": message.get("stop_details"),
                **({"container": message["container"]} if message.get("container") else {}),
            },
            "usage": final,
        }
    )
    sequence.append({"type": "message_stop"})
    return sequence


def encode(sequence: list[dict[str, Any]]) -> bytes:
    """Events in the wire format: `event: <type>` and `data: <json>` lines, a blank line after each."""
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()
        for event in sequence
    )


def stream_body(message: Mapping[str, Any]) -> bytes:
    return encode(events(message))
