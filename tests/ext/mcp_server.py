"""A real MCP server for the tests, on the official SDK: `python tests/mcp_server.py stdio`
or `python tests/mcp_server.py http PORT` (streamable HTTP on 127.0.0.1:PORT/mcp).

Its tools cover what the client must handle: plain results, structured results, a tool
error, a slow call (timeouts), a dotted name (not an API tool name), the server's own
pid (to prove the process is gone afterwards) and a call that kills the server.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("test-tools", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str, times: int = 1) -> str:
    """Upper-case a text, repeated `times` times."""
    return " ".join([text.upper()] * times)


@server.tool()
def forecast(city: str) -> dict[str, Any]:
    """A (made-up, fixed) weather forecast for a city, as structured data."""
    return {"city": city, "high_c": 21, "low_c": 12, "sky": "clear"}


@server.tool()
def refuse(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def nap(seconds: float) -> str:
    """Sleep for a while, then say so."""
    time.sleep(seconds)
    return f"slept {seconds}s"


@server.tool(name="notes.count")
def notes_count(folder: str) -> int:
    """Count the notes in a folder (a dotted MCP name)."""
    return len(folder)


@server.tool()
def server_pid() -> int:
    """The server process's id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Kill the server process mid-call."""
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
