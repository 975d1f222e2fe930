"""Answer shapes real API traffic shows that the plain vocabulary (`agent.testing.policies`) does
not build: cited text, iterations, code-called tools, compaction blocks.

    cited("Quack.", char_location("Quack.", 0, 6))            # text with its citations
    cited("Found.", search_result_location("...", "https://x", 0))
    code_call("lookup", {"q": "a"})                            # a tool_use made by code execution
    compaction("Summary of the work so far: ...")              # a compaction block
    with_iterations(answer, iteration("compaction", input_tokens=900, output_tokens=80))

The simulator fills in what the API fills in: a citation's nullable fields (`document_title:
null`), the `caller.tool_id` of a code-called tool (the code execution call before it), and the
response's own `message` iteration (its top-level usage; see `agent.usage.billed_iterations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "char_location",
    "cited",
    "code_call",
    "compaction",
    "iteration",
    "search_result_location",
    "with_iterations",
]


def cited(text: str, *citations: Mapping[str, Any]) -> dict[str, Any]:
    """A text block with its citations (each a `*_location` object)."""
    return {"type": "text", "text": text, "citations": [dict(c) for c in citations]}


def char_location(
    cited_text: str, start: int, end: int, *, document_index: int = 0, document_title: str | None = None
) -> dict[str, Any]:
    """A citation of a plain-text document (`document_title` is null when the document has none)."""
    return {
        "type": "char_location",
        "cited_text": cited_text,
        "document_index": document_index,
        "document_title": document_title,
        "start_char_index": start,
        "end_char_index": end,
    }


def search_result_location(
    cited_text: str,
    source: str,
    search_result_index: int,
    *,
    title: str | None = None,
    start_block_index: int = 0,
    end_block_index: int = 1,
) -> dict[str, Any]:
    """A citation of a `search_result` block the request sent."""
    return {
        "type": "search_result_location",
        "cited_text": cited_text,
        "source": source,
        "title": title,
        "search_result_index": search_result_index,
        "start_block_index": start_block_index,
        "end_block_index": end_block_index,
    }


def code_call(
    name: str, input: Mapping[str, Any] | None = None, *, caller: str | None = None
) -> dict[str, Any]:
    """A client `tool_use` made by the code of a `code_execution` call (programmatic tool calling):
    it follows that `server_tool_use` in the reply. `caller` is the code execution tool's type
    (default: the one the request declares); the simulator sets `tool_id` to the call before."""
    return {"type": "tool_use", "name": name, "input": dict(input or {}), "caller": {"type": caller or ""}}


def compaction(content: str) -> dict[str, Any]:
    """A compaction block: the API's summary of the history before it."""
    return {"type": "compaction", "content": content}


def iteration(kind: str, *, model: str | None = None, **counts: int) -> dict[str, Any]:
    """One `usage.iterations` entry other than the response's own sampling (`compaction`,
    `advisor_message`): its counts (missing ones 0) and, for an advisor, its `model`."""
    entry: dict[str, Any] = {"type": kind, **counts}
    return {**entry, "model": model} if model is not None else entry


def with_iterations(answer: Any, *entries: Mapping[str, Any]) -> dict[str, Any]:
    """`answer` (any answer of the vocabulary) with `usage.iterations`: `entries` in order, a
    `{"type": "message"}` entry among them (without counts) standing where the response's own
    sampling goes (appended when none does)."""
    from agent.testing.policies import as_reply

    shaped = as_reply(answer)
    return {**shaped, "iterations": [dict(e) for e in entries]}
