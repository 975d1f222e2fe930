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

__all__ = [
    "ERROR_TYPES",
    "Reply",
    "error_body",
    "iterations_of",
    "json_reply",
    "normalize",
    "with_own_iteration",
]

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
            content.append({"type": "text", "text": block["text"], **_citations(block)})
        elif block.get("type") == "tool_use" and isinstance(block.get("name"), str):
            use = {
                "type": "tool_use",
                "id": "",
                "name": block["name"],
                "input": dict(block.get("input") or {}),
            }
            content.append({**use, **_caller(block)})
        elif block.get("type") == "compaction" and isinstance(block.get("content"), str) and block["content"]:
            content.append({"type": "compaction", "content": block["content"]})
        elif block.get("type") in ("thinking", "redacted_thinking") and _scripted_thinking(block):
            content.append(block)
        elif block.get("type") in MCP_BLOCKS:
            content.append(mcp_block(block))
        elif _scripted_server_block(block):
            content.append(dict(block))
        else:
            raise ValueError(f"policy returned a block the API never sends: {block!r}; {HINT}")
    visible = [b for b in content if b["type"] not in ("thinking", "redacted_thinking")]
    if not visible and stop_reason not in ("max_tokens", "refusal", "pause_turn", "compaction"):
        raise ValueError(f"policy returned no content; {HINT}")
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return content, str(stop_reason)


CITATION_NULLS: Mapping[str, tuple[str, ...]] = {
    "char_location": ("document_title",),
    "page_location": ("document_title",),
    "content_block_location": ("document_title",),
    "search_result_location": ("title",),
    "web_search_result_location": ("title",),
}
"""Citation types and their nullable fields, which the API sends as null rather than leaving out."""


def _citations(block: Mapping[str, Any]) -> dict[str, Any]:
    """`{"citations": [...]}` for a cited text block (each citation's nulls filled in), else {}."""
    if "citations" not in block:
        return {}
    citations = block["citations"]
    if not isinstance(citations, list | tuple) or not citations:
        raise ValueError(f"a cited text block needs a non-empty list of citations: {block!r}; {HINT}")
    shaped = []
    for citation in citations:
        kind = citation.get("type") if isinstance(citation, Mapping) else None
        if (
            not isinstance(kind, str)
            or kind not in CITATION_NULLS
            or not isinstance(citation.get("cited_text"), str)
        ):
            raise ValueError(f"not a citation the API sends: {citation!r} (types: {sorted(CITATION_NULLS)})")
        shaped.append({**dict.fromkeys(CITATION_NULLS[kind]), **citation})
    return {"citations": shaped}


def _caller(block: Mapping[str, Any]) -> dict[str, Any]:
    """`{"caller": ...}` for a tool_use its policy says code made (`agent.testing.shapes.code_call`;
    the simulator links it to its code execution call), else {}."""
    caller = block.get("caller")
    if caller is None:
        return {}
    if not isinstance(caller, Mapping) or not isinstance(caller.get("type", ""), str):
        raise ValueError(f"a tool_use's caller must be an object with a type: {block!r}")
    return {"caller": dict(caller)}


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


_ITERATION_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
OWN_ITERATIONS = frozenset({"message", "fallback_message"})
"""The iterations the top-level usage counts (`agent.usage.billed_iterations`): the response's own."""


def iterations_of(answer: Any) -> list[dict[str, Any]] | None:
    """The `usage.iterations` a reply-shaped answer asks for (`agent.testing.shapes.with_iterations`),
    None when it asks for none. Entries other than the response's own sampling carry their counts
    (missing ones 0); the one `message` entry, if given, carries none: the simulator bills it."""
    if not (isinstance(answer, Mapping) and "type" not in answer and "iterations" in answer):
        return None
    listed = answer["iterations"]
    if not isinstance(listed, list | tuple):
        raise ValueError(f"iterations must be a list of entries: {listed!r}")
    entries, own = [], 0
    for entry in listed:
        kind = entry.get("type") if isinstance(entry, Mapping) else None
        if not isinstance(kind, str):
            raise ValueError(f"an iteration needs a type: {entry!r}")
        if kind in OWN_ITERATIONS:
            own += 1
            if set(entry) - {"type", "model"}:
                raise ValueError(
                    f"the simulator bills the {kind} iteration itself; give it no counts: {entry!r}"
                )
            entries.append(dict(entry))
            continue
        counts = {k: entry.get(k, 0) for k in _ITERATION_COUNTS}
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in counts.values()):
            raise ValueError(f"an iteration's counts must be whole numbers >= 0: {entry!r}")
        shaped = {"type": kind, **counts, "cache_creation": _cache_creation(entry)}
        entries.append({**shaped, **({"model": entry["model"]} if "model" in entry else {})})
    if own > 1:
        raise ValueError("iterations: at most one entry for the response's own sampling")
    return entries if own else [*entries, {"type": "message"}]


def with_own_iteration(entries: list[dict[str, Any]], usage: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`entries` with the response's own iteration filled in from its top-level `usage`, so the
    top level is exactly its own entries' sum (the rule `agent.usage.billed_iterations` states)."""
    own = {k: usage.get(k, 0) for k in _ITERATION_COUNTS}
    filled = []
    for entry in entries:
        if entry["type"] in OWN_ITERATIONS:
            entry = {**entry, **own, "cache_creation": _cache_creation(usage)}
        filled.append(entry)
    return filled


def _cache_creation(source: Mapping[str, Any]) -> dict[str, int]:
    given = source.get("cache_creation")
    if isinstance(given, Mapping):
        return {k: int(given.get(k) or 0) for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")}
    written = source.get("cache_creation_input_tokens", 0)
    return {
        "ephemeral_5m_input_tokens": written if isinstance(written, int) else 0,
        "ephemeral_1h_input_tokens": 0,
    }
