"""Tools by name, declared in a stable order, and the one place a turn's calls are run from.

`ToolRegistry` holds an agent's tools: the functions run here (`agent.tool_def`) and the
tools the API runs (`agent.server_tools`). It declares them sorted by name (a stable
byte-for-byte prefix is what prompt caching needs), defers their declarations behind tool
search when there are many (`agent.tool_search`), and runs one turn's calls in parallel
(`agent.tool_runs`), every failure an `is_error` result the model can read.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agent import tool_runs
from agent.calls import bound_output, input_problem
from agent.render import safe_text
from agent.server_tools import ServerTool, server_tool
from agent.tool_def import MAX_OUTPUT_CHARS, Tool, ToolCall, ToolOutcome, tool
from agent.tool_search.deferral import (
    DEFAULT_THRESHOLD,
    SEARCH_TOOL_NAME,
    SearchMode,
    declare,
    deferral_active,
    search_function,
)
from agent.tool_search.index import ToolIndex

__all__ = ["MAX_OUTPUT_CHARS", "Tool", "ToolCall", "ToolOutcome", "ToolRegistry", "bound_output"]
__all__ += ["input_problem", "safe_text", "tool"]


class ToolRegistry:
    """The tools of one agent, by name, declared in a stable order."""

    def __init__(
        self,
        tools: Iterable[Tool | ServerTool | Mapping[str, Any] | Callable[..., Any]] = (),
        default_timeout: float | None = 60.0,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        defer_above: int | None = DEFAULT_THRESHOLD,
        tool_search: SearchMode = "client",
    ):
        self.default_timeout = default_timeout
        self.max_output_chars = max_output_chars
        self.defer_above = defer_above
        self.tool_search: SearchMode = tool_search
        self._tools: dict[str, Tool] = {}
        self._server: dict[str, ServerTool] = {}
        """Tools the API runs (`agent.server_tools`): declared, never run here."""
        for item in tools:
            if isinstance(item, (ServerTool, Mapping)):
                self.add_server(server_tool(item))
            else:
                self.add(item if isinstance(item, Tool) else tool(item))

    def add(self, tool_: Tool) -> None:
        if tool_.name in self._tools or tool_.name in self._server:
            raise ValueError(f"duplicate tool name: {tool_.name}")
        self._tools[tool_.name] = tool_
        if (
            self.tool_search == "client"
            and SEARCH_TOOL_NAME not in self._tools
            and deferral_active(list(self._tools.values()), self.defer_above)
        ):  # the tool that finds the deferred ones; never pruned, or found tools would vanish
            search = search_function(self._search_deferred)
            self._tools[SEARCH_TOOL_NAME] = tool(never_prune=True, defer=False)(search)

    def search(self, query: str, k: int = 5) -> list[str]:
        """The names of the `k` tools that best fit `query` (BM25 + graph expansion + weighted
        rank fusion, `agent.tool_search.index`), best first. Needs the `toolsearch` extra."""
        return [hit.name for hit in self._index(deferred_only=False).search(query, k)]

    def _search_deferred(self, query: str, k: int) -> list[str]:
        return [hit.name for hit in self._index(deferred_only=True).search(query, k)]

    def _index(self, deferred_only: bool) -> ToolIndex:
        """Built once per tool set (declarations are cached, so their identities say when the
        tools changed)."""
        declared = [d for d in self.declarations() if "input_schema" in d]
        if deferred_only:
            declared = [d for d in declared if d.get("defer_loading")]
        key = (deferred_only, tuple(map(id, declared)))
        indexes: dict[tuple[bool, tuple[int, ...]], ToolIndex] = getattr(self, "_indexes", {})
        if key not in indexes:
            indexes = {k: v for k, v in indexes.items() if k[0] != deferred_only} | {key: ToolIndex(declared)}
            self._indexes = indexes
        return indexes[key]

    def add_server(self, tool_: ServerTool) -> None:
        """Declare a tool the API runs (its definition is sent as given)."""
        if tool_.name in self._tools or tool_.name in self._server:
            raise ValueError(f"duplicate tool name: {tool_.name}")
        self._server[tool_.name] = tool_

    @property
    def server_tools(self) -> list[ServerTool]:
        return [self._server[name] for name in sorted(self._server)]

    def betas(self) -> list[str]:
        """The beta headers the declared server tools need, each once, in a stable order."""
        return sorted({beta for t in self._server.values() for beta in t.betas})

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        """Every declared tool: the functions run here and the tools the API runs."""
        return len(self._tools) + len(self._server)

    def declarations(self) -> list[dict[str, Any]]:
        """Tool declarations sorted by name (server tools among them): the cache-friendly,
        byte-stable order.

        Computed once, then again only when the tools change (one added, or replaced): a new
        list every call, holding the same declaration dicts, which callers must not edit in
        place (`mark_breakpoints` copies the one it marks)."""
        tools: tuple[Tool | ServerTool, ...] = (*self._tools.values(), *self._server.values())
        cached: tuple[tuple[Tool | ServerTool, ...], list[dict[str, Any]]] | None = getattr(
            self, "_declared", None
        )
        if cached is None or len(cached[0]) != len(tools) or any(map(operator.is_not, cached[0], tools)):
            functions = declare(list(self), self.defer_above, self.tool_search)
            server = [t.declaration() for t in self.server_tools]
            cached = (tools, sorted([*functions, *server], key=lambda d: str(d.get("name", ""))))
            self._declared = cached
        return list(cached[1])

    def run_all(
        self, calls: Sequence[ToolCall], on_done: Callable[[ToolOutcome], None] | None = None
    ) -> list[ToolOutcome]:
        """Run every call at once, each on a worker thread; outcomes in call order
        (`agent.tool_runs.run_all`)."""
        return tool_runs.run_all(self, calls, on_done)

    async def arun_all(
        self,
        calls: Sequence[ToolCall],
        on_done: Callable[[ToolOutcome], None] | None = None,
        *,
        block: bool = False,
    ) -> list[ToolOutcome]:
        """`run_all` for the event loop: async tools on it, sync ones on worker threads
        (`agent.tool_runs.arun_all`)."""
        return await tool_runs.arun_all(self, calls, on_done, block=block)

    def run_one(self, call: ToolCall) -> ToolOutcome:
        """Validate and run one call, every failure an error outcome (`agent.tool_runs.run_one`)."""
        return tool_runs.run_one(self, call)
