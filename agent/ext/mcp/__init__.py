"""Tools from MCP servers, and the API's own MCP connector for remote servers.

    with mcp_tools(StdioServer("python", ["server.py"])) as tools:
        Agent(tools=[*tools, my_tool]).run("...")

    async with mcp_tools(HttpServer("http://127.0.0.1:8000/mcp")) as tools:
        await Agent(tools=tools).arun("...")

`mcp_tools` starts each server (or connects to it) on entry, turns its tools into registry
tools (`agent.ext.mcp.tools`), and stops every server on exit, also after an exception, so no
child process outlives the block. Needs the optional `mcp` extra (`pip install -e
".[mcp]"` from the checkout); importing this package does not, only entering a toolset does.

The connector (`agent.ext.mcp.connector`) is the other way: the API itself calls a remote
server's tools, nothing runs here:

    Agent(extensions=[McpConnector(RemoteMcp(name="docs", url="https://..."))])

Local tools are plain tools, so they need no hook; the connector is an `Extension`
because it changes each request (servers, toolsets, a beta header), which is a feature
beyond the core's mission.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agent.ext.mcp.connection import Connection, McpUnavailable
from agent.ext.mcp.connector import MCP_CONNECTOR_BETA, RemoteMcp, add_connector, check_servers
from agent.ext.mcp.servers import HttpServer, McpServer, StdioServer
from agent.ext.mcp.tools import POLICIES, McpTool, McpToolError, make_tools
from agent.extension import Extension

if TYPE_CHECKING:
    from agent.state import RunState

__all__ = [
    "MCP_CONNECTOR_BETA",
    "HttpServer",
    "McpConnector",
    "McpServer",
    "McpTool",
    "McpToolError",
    "McpTools",
    "McpUnavailable",
    "RemoteMcp",
    "StdioServer",
    "mcp_tools",
]


class McpConnector(Extension):
    """Remote MCP servers the API connects to and calls (the MCP connector beta): each
    request names them, with a toolset each after the other tools."""

    def __init__(self, *servers: RemoteMcp) -> None:
        self.servers = check_servers(servers)

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        return add_connector(request, self.servers)


class McpTools(Sequence[McpTool]):
    """The tools of some MCP servers, live between entering and leaving (sync or async `with`)."""

    def __init__(
        self,
        servers: Sequence[McpServer],
        timeout: float | None,
        startup_timeout: float,
        options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if not servers:
            raise ValueError("mcp_tools needs at least one server")
        for name, policies in (options or {}).items():
            odd = sorted(set(policies) - POLICIES) if isinstance(policies, Mapping) else ["(not a mapping)"]
            if odd:
                known = ", ".join(sorted(POLICIES))
                raise TypeError(f"mcp_tools options for {name}: unknown {', '.join(odd)} (known: {known})")
        self.options = dict(options or {})
        for server in servers:
            if not isinstance(server, (StdioServer, HttpServer)):
                raise TypeError(f"mcp_tools takes StdioServer or HttpServer, not {type(server).__name__}")
        self.servers = tuple(servers)
        self.timeout, self.startup_timeout = timeout, startup_timeout
        self.connections: list[Connection] = []
        self._tools: list[McpTool] = []

    def open(self) -> McpTools:
        """Start every server and list its tools; if one fails, those started are stopped again."""
        if self.connections:
            raise RuntimeError("this MCP toolset is already open")
        try:
            import mcp  # noqa: F401
        except ImportError as error:
            raise ImportError(
                "MCP tools need the official `mcp` SDK: pip install -e '.[mcp]' from the checkout "
                "(or pip install mcp)"
            ) from error
        try:
            for server in self.servers:
                connection = Connection(server, self.startup_timeout)
                self.connections.append(connection)
                connection.open()
            taken: set[str] = set()
            made = [t for c in self.connections for t in make_tools(c, self.timeout, taken, self.options)]
            unknown = set(self.options) - {t.name for t in made} - {t.remote_name for t in made}
            if unknown:
                listed = ", ".join(t.name for t in made)
                missing = ", ".join(sorted(unknown))
                raise ValueError(
                    f"mcp_tools options name no tool of the servers: {missing} (tools: {listed})"
                )
            self._tools = made
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop every server (bounded waits); the tools answer with an error result afterwards."""
        for connection in reversed(self.connections):
            connection.close()

    def __enter__(self) -> McpTools:
        return self.open()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> McpTools:
        return await asyncio.to_thread(self.open)

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)

    def __getitem__(self, index: int) -> McpTool:  # type: ignore[override]
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[McpTool]:
        return iter(self._tools)


def mcp_tools(
    *servers: McpServer,
    timeout: float | None = None,
    startup_timeout: float = 30.0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> McpTools:
    """The tools of these MCP servers, for `with` / `async with`.

    `timeout` bounds each call in seconds (None: the agent's `tool_timeout`); `startup_timeout`
    bounds starting a server and listing its tools (`McpUnavailable` past it). `options` sets a
    tool's policies, as `@tool(...)` would: `{"delete_note": {"irreversible": True}}` gates it
    (a gate extension such as `agent.ext.approval` decides; without one it is denied); `keep`,
    `never_prune`, `requires_approval`, `compress`, `timeout` and `defer` too. A server's own
    hints (`destructiveHint`) are not trusted for this."""
    return McpTools(servers, timeout, startup_timeout, options)
