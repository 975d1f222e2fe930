"""The MCP connector's blocks in the simulator: a policy scripts the API's own MCP calls.

With `mcp_servers` in a request, the API calls a remote server's tools itself, within one
turn, and the response holds `mcp_tool_use` / `mcp_tool_result` pairs next to text. A policy
answers `mcp_call(server, name, input)` then `mcp_result(text, is_error=False)`; the
simulator names each call (`mcptoolu_...`) and points the result that follows it at it.
It refuses what the API never sends: a call to a server the request did not connect
(with its `mcp_toolset`), and a result that follows no call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MCP_BLOCKS", "check_connector", "mcp_block", "mcp_call", "mcp_result", "name_mcp_blocks"]

MCP_BLOCKS = frozenset({"mcp_tool_use", "mcp_tool_result"})


def mcp_call(server: str, name: str, /, **input: Any) -> dict[str, Any]:
    """A policy's MCP connector call (the API runs it; nothing runs on the client)."""
    return {"type": "mcp_tool_use", "server_name": server, "name": name, "input": input}


def mcp_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """The remote server's answer to the `mcp_call` just before it."""
    return {"type": "mcp_tool_result", "content": [{"type": "text", "text": text}], "is_error": is_error}


def mcp_block(block: Mapping[str, Any]) -> dict[str, Any]:
    """A policy's MCP block as the API shapes it (ids are given later, by `name_mcp_blocks`)."""
    if block.get("type") == "mcp_tool_use":
        if not (isinstance(block.get("server_name"), str) and isinstance(block.get("name"), str)):
            raise ValueError(f"an mcp_tool_use needs a server_name and a name: {block!r}")
        return {
            "type": "mcp_tool_use",
            "id": "",
            "name": block["name"],
            "server_name": block["server_name"],
            "input": dict(block.get("input") or {}),
        }
    content = block.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(c, Mapping) and c.get("text") for c in content):
        raise ValueError(f"an mcp_tool_result needs text content: {block!r}")
    return {
        "type": "mcp_tool_result",
        "tool_use_id": "",
        "is_error": bool(block.get("is_error")),
        "content": [{"type": "text", "text": c["text"]} for c in content],
    }


def name_mcp_blocks(content: list[dict[str, Any]], body: Mapping[str, Any], number: str) -> None:
    """Give each MCP call its id and each result its call's; ValueError for what the API never sends."""
    connected = {s.get("name") for s in body.get("mcp_servers") or () if isinstance(s, Mapping)}
    toolsets = {
        t.get("mcp_server_name")
        for t in body.get("tools") or ()
        if isinstance(t, Mapping) and t.get("type") == "mcp_toolset"
    }
    last: str | None = None
    for index, block in enumerate(content):
        if block["type"] == "mcp_tool_use":
            server = block["server_name"]
            if server not in connected or server not in toolsets:
                raise ValueError(f"policy called MCP server {server!r}, which the request did not connect")
            block["id"] = last = f"mcptoolu_sim_{number}_{index}"
        elif block["type"] == "mcp_tool_result":
            if last is None:
                raise ValueError("policy sent an mcp_tool_result that follows no mcp_tool_use")
            block["tool_use_id"], last = last, None


def check_connector(body: Mapping[str, Any]) -> list[str]:
    """The connector's rules the SDK types cannot express: server names are unique, each
    `mcp_toolset` names a server of the request, and (`mcp-client-2025-11-20`, the version with
    toolsets) each server is referenced by exactly one toolset. A request with no toolset at all
    is the deprecated `mcp-client-2025-04-04` shape (servers alone, `tool_configuration` on
    each), which the validator cannot tell apart without the beta header: accepted."""
    servers = [s.get("name") for s in _list(body.get("mcp_servers")) if isinstance(s, Mapping)]
    toolsets = [
        t.get("mcp_server_name")
        for t in _list(body.get("tools"))
        if isinstance(t, Mapping) and t.get("type") == "mcp_toolset"
    ]
    errors = [f"mcp_servers: duplicate server name {n!r}" for n in sorted(_repeated(servers), key=str)]
    errors += [
        f"tools: MCP server {n!r} is referenced by more than one mcp_toolset"
        for n in sorted(_repeated(toolsets), key=str)
    ]
    errors += [
        f"tools: mcp_toolset references MCP server {n!r}, which is not in mcp_servers"
        for n in toolsets
        if n not in servers
    ]
    errors += [
        f"mcp_servers: server {n!r} must be referenced by an mcp_toolset in tools"
        for n in servers
        if toolsets and n not in toolsets
    ]
    return errors


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _repeated(names: list[Any]) -> set[Any]:
    return {n for n in names if names.count(n) > 1 and isinstance(n, str)}
