"""The MCP connector as an extension: the request bodies it makes are byte for byte those the
old loop made (`Agent(mcp_servers=...)`, which added the connector before the cache
breakpoints; the hook runs after them). No server process: nothing runs here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from agent import Agent, RunState, tool
from agent.context.cache import mark_breakpoints
from agent.ext.mcp import MCP_CONNECTOR_BETA, McpConnector, RemoteMcp
from agent.ext.server_tools import Containers, server_tool
from agent.testing import ScriptedLLM

DOCS = RemoteMcp(name="docs", url="https://mcp.example.com/mcp", token="t0k", allowed_tools=["search"])
WIKI = RemoteMcp(name="wiki", url="https://wiki.example.com/mcp")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def old_add_connector(request: Mapping[str, Any], servers: Sequence[RemoteMcp]) -> dict[str, Any]:
    """`add_connector` as the old loop called it, before the breakpoints were placed
    (agent/mcp/connector.py at 044e69f), kept here as the reference."""
    betas = list(request.get("betas") or ())
    return {
        **request,
        "tools": [*(request.get("tools") or ()), *(s.toolset() for s in servers)],
        "mcp_servers": [s.server() for s in servers],
        "betas": betas if MCP_CONNECTOR_BETA in betas else [*betas, MCP_CONNECTOR_BETA],
    }


def state(agent: Agent, container: str | None) -> RunState:
    history = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]
    run = RunState(messages=history, prompt="next")
    run.extensions = list(agent.extensions)
    if container is not None:  # as a reply that ran code leaves it
        reply = SimpleNamespace(container=SimpleNamespace(id=container, expires_at=None))
        for ext in run.extensions:
            ext.response(reply, run)  # type: ignore[arg-type]
    return run


BETA_TOOL = server_tool({"type": "x_20250101", "name": "x"}, betas=["b-1"])


@pytest.mark.parametrize("system", ["", "You add."])
@pytest.mark.parametrize("tools", [[], [add], [add, BETA_TOOL]])
@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("container", [None, "container_1"])
@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_the_request_body_is_byte_for_byte_the_old_loops(
    system: str, tools: list[Any], cache: bool, container: str | None, ttl: str
) -> None:
    options: dict[str, Any] = {"system": system, "tools": tools, "artifacts_dir": None, "cache_ttl": ttl}
    options |= {"thinking": {"type": "adaptive"}, "effort": "high", "llm": ScriptedLLM([])}
    agent = Agent(**options, cache=cache, extensions=[Containers(), McpConnector(DOCS, WIKI)])
    new = agent.build_request(state(agent, container))

    core = Agent(**options, cache=False)  # the old build_request, step by step
    old = core.build_request(state(core, None))
    if container is not None:
        old["container"] = container
    old = old_add_connector(old, [DOCS, WIKI])
    if cache:
        old = mark_breakpoints(old, ttl)
    assert json.dumps(new) == json.dumps(old)


def test_no_servers_leave_the_request_as_it_is() -> None:
    agent = Agent(tools=[add], artifacts_dir=None, llm=ScriptedLLM([]), extensions=[McpConnector()])
    plain = Agent(tools=[add], artifacts_dir=None, llm=ScriptedLLM([]))
    assert agent.build_request(state(agent, None)) == plain.build_request(state(plain, None))
