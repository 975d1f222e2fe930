"""Deferred declarations: above a threshold, tools are declared `defer_loading: true`.

With dozens of tools (an MCP server brings that many) every request would pay for every
schema. Past `DEFAULT_THRESHOLD` tools, only the core set is declared in full: tools made
with `@tool(defer=False)`, and the search tool. Every other tool is still declared, with
`defer_loading: true`, which the API keeps out of the prompt until a `tool_reference`
block names it. The tools list itself never changes as tools are discovered: the cached
prefix stays byte-for-byte the same, and a discovered tool's definition enters the
conversation where its reference is, like any other message content.

This module only decides: `defer` marks the tools (`Tool.defer = True`; the core's
registry then declares them with `defer_loading: true`), `search_tool` makes our own
search tool (`mode="client"`: a normal client tool ranking the deferred tools with
`agent.ext.tool_search.index`, whose result `reference_blocks` turns into
`tool_reference` blocks), `server_search_tool` declares the API's own (`"bm25"` or
`"regex"`: the API runs the search and sends back `server_tool_use` /
`tool_search_tool_result` blocks).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from agent.ext.tool_search.index import ToolIndex
from agent.ext.tool_search.semantic import Embed
from agent.tools import ServerTool, Tool, tool

__all__ = [
    "DEFAULT_THRESHOLD",
    "SEARCH_TOOL_NAME",
    "SERVER_SEARCH_TOOLS",
    "SearchMode",
    "defer",
    "deferral_active",
    "find_tools",
    "reference_blocks",
    "search_function",
    "search_tool",
    "server_search_tool",
]

DEFAULT_THRESHOLD = 30
"""More tools than this and the non-core ones are deferred (the docs see selection
accuracy fall past 30-50 tools)."""

SEARCH_TOOL_NAME = "search_tools"
SEARCH_RESULTS = 5

SearchMode = Literal["client", "bm25", "regex"]
SERVER_SEARCH_TOOLS: Mapping[str, Mapping[str, str]] = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}


def server_search_tool(mode: str) -> dict[str, str]:
    """The declaration of the API's server-side tool search tool (`"bm25"` or `"regex"`)."""
    if mode not in SERVER_SEARCH_TOOLS:
        raise ValueError(f"tool_search must be 'client', 'bm25' or 'regex', not {mode!r}")
    return dict(SERVER_SEARCH_TOOLS[mode])


def _over(tools: Sequence[Tool], threshold: int | None) -> bool:
    counted = sum(1 for t in tools if t.name != SEARCH_TOOL_NAME)
    return threshold is not None and counted > threshold


def deferral_active(tools: Sequence[Tool], threshold: int | None) -> bool:
    """Whether any tool will be declared deferred: one asked for it (`defer=True`), or there
    are more tools (the search tool aside) than `threshold`."""
    return any(t.defer and t.name != SEARCH_TOOL_NAME for t in tools) or _over(tools, threshold)


def defer(tools: Sequence[Tool | ServerTool], threshold: int | None) -> list[Tool | ServerTool]:
    """`tools` with `defer=True` on each one left to our choice (`defer=None`) when there are
    more function tools than `threshold`; those made with `defer=True` stay deferred, those
    with `defer=False`, the search tool and the tools the API runs are never deferred."""
    over = _over([t for t in tools if isinstance(t, Tool)], threshold)
    return [
        dataclasses.replace(t, defer=True)
        if over and isinstance(t, Tool) and t.defer is None and t.name != SEARCH_TOOL_NAME
        else t
        for t in tools
    ]


def find_tools(
    tools: Iterable[Tool | ServerTool | Mapping[str, Any]],
    query: str,
    k: int = SEARCH_RESULTS,
    embed: Embed | None = None,
) -> list[str]:
    """The names of the `k` tools (`Tool`s or declarations, e.g. `agent.registry`) that best
    fit `query` (fielded BM25 + weighted rank fusion, `agent.ext.tool_search.index`, with
    `embed`'s semantic ranking too), best first; never the framework's own `search_tools` and
    `read_artifact`. Builds the index on each call."""
    declared = [dict(t) if isinstance(t, Mapping) else t.declaration() for t in tools]
    index = ToolIndex([d for d in declared if "input_schema" in d], embed=embed)  # no schema: no words
    return [hit.name for hit in index.search(query, k)]


def search_function(search: Callable[[str, int], list[str]]) -> Callable[..., list[str]]:
    """The body of the client search tool (`search_tool` makes it a `Tool`)."""

    def search_tools(query: str, limit: int = SEARCH_RESULTS) -> list[str]:
        """Find tools you do not see yet. Search one capability at a time: the action and
        the thing it acts on, and the app when you know it (e.g. "refund a payment in
        Stripe", "restart a kubernetes deployment"); for a task of several steps, search
        once per step. The best matching tools become available to call.

        Args:
            query: one thing the tool should do, in plain words.
            limit: how many tools to load, 1 to 10.
        """
        found = search(query, max(1, min(int(limit), 10)))
        if not found:
            raise LookupError(f"no tool matches {query!r}: try other words for the action or the object")
        return found

    search_tools.finds_tools = True  # type: ignore[attr-defined]  # recognised by `reference_blocks`
    return search_tools


def search_tool(deferred: Sequence[Tool], embed: Embed | None = None) -> Tool:
    """Our `search_tools` tool, ranking the `deferred` tools (and only those: what is loaded
    needs no finding), by `embed` too when given (`agent.ext.tool_search.semantic`). Never
    pruned, or the tools a search found would vanish from the prompt with its result; never
    deferred itself. The index is built at the first search, so an agent with the tool can be
    made without the `toolsearch` extra installed, and the tools are embedded once."""
    declarations = [t.declaration() for t in deferred]

    @functools.cache
    def index() -> ToolIndex:
        return ToolIndex([d for d in declarations if "input_schema" in d], embed=embed)

    def search(query: str, k: int) -> list[str]:
        return [hit.name for hit in index().search(query, k)]

    return tool(never_prune=True, defer=False)(search_function(search))


def reference_blocks(outcome: Any) -> list[dict[str, str]] | None:
    """The `tool_reference` blocks a search tool's outcome stands for, or None for any
    other outcome (rendered as text as usual)."""
    tool_: Any = getattr(outcome, "tool", None)
    value = getattr(outcome, "value", None)
    if getattr(outcome, "is_error", True) or getattr(tool_, "name", None) != SEARCH_TOOL_NAME:
        return None
    if isinstance(value, str):  # a resumed run reads the search's outcome back as recorded text
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not getattr(tool_.fn, "finds_tools", False) or not isinstance(value, list) or not value:
        return None
    if not all(isinstance(name, str) for name in value):
        return None
    return [{"type": "tool_reference", "tool_name": name} for name in value]
