"""The API's MCP connector: remote MCP servers whose tools the API itself calls.

Nothing runs here: the request names each server (`mcp_servers`) and a toolset for it in
`tools` (`{"type": "mcp_toolset", "mcp_server_name": ...}`), under the beta header; the
model's calls come back as `mcp_tool_use` / `mcp_tool_result` blocks in the assistant
turn, which the loop keeps as they are (`agent.server_blocks`). `McpConnector`'s request hook
adds them (`add_connector`). For local servers, or any server the API cannot reach, use
`mcp_tools` instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MCP_CONNECTOR_BETA", "RemoteMcp", "add_connector", "check_servers"]

MCP_CONNECTOR_BETA = "mcp-client-2025-11-20"
"""The connector's beta header (docs, late 2026; `mcp-client-2025-04-04` is deprecated)."""

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


@dataclass(frozen=True)
class RemoteMcp:
    """A remote MCP server the API connects to: `url` (https), a unique `name`, an optional
    OAuth bearer `token`; `allowed_tools` limits which of its tools the model sees (None: all)."""

    name: str
    url: str
    token: str | None = field(default=None, repr=False)
    allowed_tools: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"RemoteMcp name {self.name!r} must match {_NAME.pattern}")
        if not isinstance(self.url, str) or not self.url.startswith("https://"):
            raise ValueError(f"RemoteMcp url must start with https:// (the API reaches it), not {self.url!r}")
        allowed = self.allowed_tools
        if allowed is not None and (isinstance(allowed, str) or not all(isinstance(t, str) for t in allowed)):
            raise TypeError(f"RemoteMcp allowed_tools must be a list of tool names, e.g. [{allowed!r}]")

    def server(self) -> dict[str, Any]:
        """The `mcp_servers` entry."""
        entry: dict[str, Any] = {"type": "url", "url": self.url, "name": self.name}
        if self.token is not None:
            entry["authorization_token"] = self.token
        return entry

    def toolset(self) -> dict[str, Any]:
        """The `tools` entry that enables this server's tools (all, or only `allowed_tools`)."""
        toolset: dict[str, Any] = {"type": "mcp_toolset", "mcp_server_name": self.name}
        if self.allowed_tools is not None:
            toolset["default_config"] = {"enabled": False}
            toolset["configs"] = {name: {"enabled": True} for name in sorted(self.allowed_tools)}
        return toolset


def check_servers(servers: Sequence[RemoteMcp]) -> tuple[RemoteMcp, ...]:
    """`servers` as given, refused early when they are not `RemoteMcp`s or a name repeats."""
    if isinstance(servers, str | Mapping) or any(not isinstance(s, RemoteMcp) for s in servers):
        raise TypeError("McpConnector takes agent.ext.mcp.RemoteMcp(name=..., url=...) servers")
    names = [s.name for s in servers]
    if len(set(names)) != len(names):
        raise ValueError(f"RemoteMcp names must be unique, got {names}")
    return tuple(servers)


def add_connector(request: Mapping[str, Any], servers: Sequence[RemoteMcp]) -> dict[str, Any]:
    """`request` with the servers, their toolsets (after the other tools: the cached prefix of
    a request without them is unchanged) and the beta header; as is when there are none.

    The toolsets are declared with the tools, so the tools' cache breakpoint (the core's,
    placed when no system prompt carries it) moves to the last toolset."""
    if not servers:
        return dict(request)
    servers = check_servers(servers)
    marker = _tools_marker(request)
    tools = list(request.get("tools") or ())
    if marker is not None and tools:
        tools[-1] = {k: v for k, v in tools[-1].items() if k != "cache_control"}
    toolsets = [s.toolset() for s in servers]
    if marker is not None:
        toolsets[-1]["cache_control"] = marker
    betas = list(request.get("betas") or ())
    return {
        **request,
        "tools": [*tools, *toolsets],
        "mcp_servers": [s.server() for s in servers],
        "betas": betas if MCP_CONNECTOR_BETA in betas else [*betas, MCP_CONNECTOR_BETA],
    }


def _tools_marker(request: Mapping[str, Any]) -> Any:
    """The cache marker the core put at the end of the tools, or would have put had it seen
    any (it marks the newest message too, so that one shows it): None with a system prompt
    (which carries the breakpoint) or with caching off."""
    if request.get("system"):
        return None
    tools = request.get("tools")
    if tools:
        return tools[-1].get("cache_control")
    messages = request.get("messages") or ()
    content = messages[-1].get("content") if messages else None
    last = content[-1] if isinstance(content, list) and content else None
    return last.get("cache_control") if isinstance(last, Mapping) else None
