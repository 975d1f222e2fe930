"""Deferred declarations: above a threshold, tools are declared `defer_loading: true`.

With dozens of tools (an MCP server brings that many) every request would pay for every
schema. Past `DEFAULT_THRESHOLD` tools, only the core set is declared in full: tools made
with `@tool(defer=False)`, and the search tool. Every other tool is still declared, with
`defer_loading: true`, which the API keeps out of the prompt until a `tool_reference`
block names it. The tools list itself never changes as tools are discovered: the cached
prefix stays byte-for-byte the same, and a discovered tool's definition enters the
conversation where its reference is, like any other message content.

Discovery is either ours (`mode="client"`: the registry adds `search_tools`, a normal
client tool ranking the deferred tools with `agent.tool_search.index`, whose result is a
list of `tool_reference` blocks), or the API's own server-side search tool (`"bm25"` or
`"regex"`: its declaration is added; the API runs the search and sends back
`server_tool_use` / `tool_search_tool_result` blocks).

This module knows nothing of the registry (which imports it): it works on declarations
and on what a small `Protocol` says about a tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

__all__ = [
    "DEFAULT_THRESHOLD",
    "SEARCH_TOOL_NAME",
    "SERVER_SEARCH_TOOLS",
    "SearchMode",
    "declare",
    "deferral_active",
    "reference_blocks",
    "search_function",
    "server_search_tool",
    "unloaded_deferred",
]

DEFAULT_THRESHOLD = 30
"""More tools than this and the non-core ones are deferred (the docs see selection
accuracy fall past 30-50 tools)."""

SEARCH_TOOL_NAME = "search_tools"
LOADING_BLOCKS = ("tool_result", "tool_search_tool_result")
"""Blocks whose `tool_reference`s load deferred tools (a client search's, the server's)."""
SEARCH_RESULTS = 5

SearchMode = Literal["client", "bm25", "regex"]
SERVER_SEARCH_TOOLS: Mapping[str, Mapping[str, str]] = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}


class Declarable(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def defer(self) -> bool | None: ...

    def declaration(self) -> dict[str, Any]: ...


def server_search_tool(mode: str) -> dict[str, str]:
    """The declaration of the API's server-side tool search tool (`"bm25"` or `"regex"`)."""
    if mode not in SERVER_SEARCH_TOOLS:
        raise ValueError(f"tool_search must be 'client', 'bm25' or 'regex', not {mode!r}")
    return dict(SERVER_SEARCH_TOOLS[mode])


def _over(tools: Sequence[Declarable], threshold: int | None) -> bool:
    counted = sum(1 for t in tools if t.name != SEARCH_TOOL_NAME)
    return threshold is not None and counted > threshold


def deferral_active(tools: Sequence[Declarable], threshold: int | None) -> bool:
    """Whether any tool will be declared deferred: one asked for it (`defer=True`), or there
    are more tools (the search tool aside) than `threshold`."""
    return any(t.defer and t.name != SEARCH_TOOL_NAME for t in tools) or _over(tools, threshold)


def declare(tools: Sequence[Declarable], threshold: int | None, mode: SearchMode) -> list[dict[str, Any]]:
    """The tools list of every request, in the given (sorted) order: core tools in full,
    the rest with `defer_loading: true` (all those left to the registry's choice when over
    `threshold`; those made with `defer=True` always), then the server search tool when
    `mode` asks for it."""
    over = _over(tools, threshold)
    declared = []
    for t in tools:
        deferred = t.defer is True or (over and t.defer is None and t.name != SEARCH_TOOL_NAME)
        declared.append({**t.declaration(), "defer_loading": True} if deferred else t.declaration())
    if mode != "client" and deferral_active(tools, threshold):
        declared.append(server_search_tool(mode))
    return declared


def search_function(search: Callable[[str, int], list[str]]) -> Callable[..., list[str]]:
    """The body of the client search tool; the registry makes it a `Tool`."""

    def search_tools(query: str, limit: int = SEARCH_RESULTS) -> list[str]:
        """Find tools you do not see yet. Describe the action and the thing it acts on, in
        plain words (e.g. "cancel an order and refund it", "restart a kubernetes
        deployment"). The best matching tools become available to call.

        Args:
            query: what the tool should do, in plain words.
            limit: how many tools to load, 1 to 10.
        """
        found = search(query, max(1, min(int(limit), 10)))
        if not found:
            raise LookupError(f"no tool matches {query!r}: try other words for the action or the object")
        return found

    search_tools.finds_tools = True  # type: ignore[attr-defined]  # recognised by `reference_blocks`
    return search_tools


def reference_blocks(outcome: Any) -> list[dict[str, str]] | None:
    """The `tool_reference` blocks a search tool's outcome stands for, or None for any
    other outcome (rendered as text as usual)."""
    tool = getattr(outcome, "tool", None)
    value = getattr(outcome, "value", None)
    if tool is None or getattr(outcome, "is_error", True) or getattr(tool, "name", None) != SEARCH_TOOL_NAME:
        return None
    if isinstance(value, str):  # a resumed run reads the search's outcome back as recorded text
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not getattr(tool.fn, "finds_tools", False) or not isinstance(value, list) or not value:
        return None
    if not all(isinstance(name, str) for name in value):
        return None
    return [{"type": "tool_reference", "tool_name": name} for name in value]


def unloaded_deferred(
    request: Mapping[str, Any],
    loads: Callable[[Sequence[Any]], Iterable[tuple[Any, ...]]] | None = None,
) -> list[Mapping[str, Any]]:
    """The deferred tool declarations of `request` that no `tool_reference` in its messages
    loads: in the body, not in the prompt, so a size estimate must leave them out (a loaded
    one is billed once, where its reference is, about its declaration's size).

    `loads(messages)` gives `loaded_by` of each message; the token estimate passes one that
    remembers them between steps, so a long history is not read whole at every estimate."""
    tools = request.get("tools")
    if not isinstance(tools, list):
        return []
    deferred = [t for t in tools if isinstance(t, Mapping) and t.get("defer_loading") is True]
    if not deferred:
        return []
    messages = request.get("messages") or ()
    loaded: set[Any] = set().union(*(loads(messages) if loads is not None else map(loaded_by, messages)))
    return [t for t in deferred if t.get("name") not in loaded]


def loaded_by(message: Any) -> tuple[Any, ...]:
    """The tool names the `tool_reference` blocks of one message load (it is never edited in
    place, so this may be remembered by identity)."""
    content = message.get("content") if isinstance(message, Mapping) else None
    loaded: list[Any] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping) or block.get("type") not in LOADING_BLOCKS:
            continue
        inner = block.get("content")
        refs = inner.get("tool_references") if isinstance(inner, Mapping) else inner
        if isinstance(refs, list):
            loaded.extend(r.get("tool_name") for r in refs if isinstance(r, Mapping))
    return tuple(loaded)
