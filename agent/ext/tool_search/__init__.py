"""Tool search for many tools: defer most declarations, let the model find the ones it needs.

    Agent(tools=[*mcp, *my_tools], extensions=[ToolSearch()])          # ours, past 30 tools
    Agent(tools=..., extensions=[ToolSearch(defer_above=10, mode="bm25")])  # the API's own

Why an extension: deferral changes what every request declares, and it pays only past a
few dozen tools, so an agent opts in. `ToolSearch.tools` marks the tools to defer (the
core's registry declares them `defer_loading: true`, in the same sorted, byte-stable
list) and adds the tool that finds them; its `render` hook turns a search's result into
`tool_reference` blocks, which load the tools found. `deferral` holds the rule and the
search tool; `index` ranks tools (fielded BM25, thesaurus, step-by-step ranking, weighted
reciprocal-rank fusion); `graph`, `text`, `thesaurus` and `semantic` (opt-in embeddings)
are its parts. `find_tools(tools, query, k)`
ranks any tools, outside a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent.ext.tool_search.deferral import (
    DEFAULT_THRESHOLD,
    SEARCH_TOOL_NAME,
    SearchMode,
    defer,
    deferral_active,
    find_tools,
    reference_blocks,
    search_tool,
    server_search_tool,
)
from agent.ext.tool_search.index import ToolIndex, Weights
from agent.ext.tool_search.semantic import Embed, sentence_transformer
from agent.extension import Extension
from agent.tools import ServerTool, Tool

if TYPE_CHECKING:
    from agent.state import RunState
    from agent.tools import ToolOutcome

__all__ = [
    "DEFAULT_THRESHOLD",
    "SEARCH_TOOL_NAME",
    "Embed",
    "SearchMode",
    "ToolIndex",
    "ToolSearch",
    "Weights",
    "find_tools",
    "reference_blocks",
    "sentence_transformer",
    "server_search_tool",
]

MODES = ("client", "bm25", "regex")


class ToolSearch(Extension):
    """Defer the tools past `defer_above` (None: only those made with `@tool(defer=True)`),
    found by our `search_tools` tool (`mode="client"`) or the API's own search tool
    (`"bm25"`, `"regex"`). `embed` (ours only) adds a semantic ranking: a need said in
    other words than the tool's (`semantic.sentence_transformer()`, the `semantic` extra).
    With nothing to defer, the tools are declared as they are. An agent's extension, not a
    run's: the tools are declared once, at construction."""

    def __init__(
        self,
        defer_above: int | None = DEFAULT_THRESHOLD,
        mode: SearchMode = "client",
        embed: Embed | None = None,
    ) -> None:
        if embed is not None and mode != "client":
            raise ValueError(
                "ToolSearch: embed ranks our own search; the API's search (bm25, regex) is its own"
            )
        if defer_above is not None and (isinstance(defer_above, bool) or not isinstance(defer_above, int)):
            raise TypeError(f"ToolSearch: defer_above must be an int or None, not {defer_above!r}")
        if mode not in MODES:
            raise ValueError(f"ToolSearch: mode must be 'client', 'bm25' or 'regex', not {mode!r}")
        self.defer_above = defer_above
        self.mode: SearchMode = mode
        self.embed = embed

    def tools(self, declared: Sequence[Tool | ServerTool]) -> Sequence[Tool | ServerTool]:
        functions = [t for t in declared if isinstance(t, Tool)]
        if not deferral_active(functions, self.defer_above):
            return declared
        marked = defer(declared, self.defer_above)
        if self.mode != "client":
            return [*marked, ServerTool(server_search_tool(self.mode))]
        taken = next((t for t in marked if t.name == SEARCH_TOOL_NAME), None)
        if taken is not None:
            if isinstance(taken, Tool) and getattr(taken.fn, "finds_tools", False):
                return marked  # a search tool of the caller's own, made with `search_tool`
            raise ValueError(
                f"a declared tool is named {SEARCH_TOOL_NAME}, ToolSearch's own tool: rename it (an MCP "
                "server's tools take a prefix), or bring your own search made with search_tool(...)"
            )
        deferred = [t for t in marked if isinstance(t, Tool) and t.defer is True]
        return [*marked, search_tool(deferred, self.embed)]

    def render(self, outcome: ToolOutcome, run: RunState) -> list[dict[str, Any]] | None:
        """A search's result is `tool_reference` blocks: they load the tools it found."""
        return reference_blocks(outcome)
