"""Where an MCP server is: a command to start (stdio) or a URL to reach (streamable HTTP).

Plain data, no SDK import: `agent` stays importable without the optional `mcp` extra,
and a typo in a server's description fails here, at construction, with a clear error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["HttpServer", "McpServer", "StdioServer"]

_PREFIX = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _check_prefix(prefix: str | None) -> None:
    if prefix is not None and not (isinstance(prefix, str) and _PREFIX.fullmatch(prefix)):
        raise ValueError(f"prefix {prefix!r} must match {_PREFIX.pattern} (it starts every tool name)")


@dataclass(frozen=True)
class StdioServer:
    """An MCP server started as a child process, spoken to over its stdin/stdout.

    It is started when `mcp_tools(...)` is entered and stopped (terminated, then killed if it
    must be) when it is left. `prefix` is put before each tool name (`prefix_name`), for
    two servers whose tools share names."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    """Extra environment variables, on top of the SDK's safe default environment."""
    cwd: str | Path | None = None
    prefix: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command.strip():
            raise ValueError("StdioServer needs a command to run")
        if isinstance(self.args, str) or not all(isinstance(a, str) for a in self.args):
            raise TypeError(f"StdioServer args must be a list of strings, e.g. [{self.args!r}]")
        _check_prefix(self.prefix)

    @property
    def label(self) -> str:
        return " ".join([Path(self.command).name, *self.args])


@dataclass(frozen=True)
class HttpServer:
    """An MCP server reached over streamable HTTP at `url` (e.g. `http://127.0.0.1:8000/mcp`).

    `headers` go with every request (an `Authorization` header, say)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    prefix: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise ValueError(f"HttpServer url must start with http:// or https://, not {self.url!r}")
        _check_prefix(self.prefix)

    @property
    def label(self) -> str:
        return self.url.split("?", 1)[0]


McpServer = StdioServer | HttpServer
