"""MCP tools in a whole run on the strict simulator, and the API's MCP connector passed through.

The local tools come from a real MCP server (`tests/mcp_server.py`) over stdio; the model
is the simulator, which validates every request as the API would (0 rejected)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, ToolCall
from agent.ext.mcp import MCP_CONNECTOR_BETA, McpConnector, RemoteMcp, StdioServer, mcp_tools
from agent.testing.mcp_blocks import mcp_call, mcp_result
from agent.testing.policies import call, latest_results
from agent.testing.simulator import MessagesSimulator
from agent.testing.validate import validate_request
from agent.tool_runs import run_all

pytestmark = pytest.mark.slow  # each test starts a real MCP server process

SERVER = StdioServer(sys.executable, [str(Path(__file__).with_name("mcp_server.py")), "stdio"])
Sim = Callable[..., MessagesSimulator]


def adder(body: Any) -> Any:
    results = latest_results(body)
    if not results:
        return ["Adding on the MCP server.", call("add", a=20, b=22), call("refuse", reason="no reason")]
    return "; ".join(f"{r.name}: {r.text} (error={r.is_error})" for r in results)


def test_a_run_calls_an_mcp_tool_and_reads_its_result(simulator: Sim) -> None:
    sim = simulator(adder)
    with mcp_tools(SERVER) as tools:
        agent = Agent(tools=[*tools], llm=sim.llm(max_retries=0), artifacts_dir=None)
        result = agent.run("What is 20 + 22?")
        declared = {t["name"]: t for t in agent.registry.declarations()}
    assert sim.rejected == []
    assert result.text == (
        "add: 42 (error=False); "
        "refuse: McpToolError: Error executing tool refuse: refused: no reason (error=True)"
    )
    assert declared["add"]["input_schema"]["title"] == "addArguments"  # the server's schema, as given


def test_an_awaited_run_calls_an_mcp_tool_under_async_with(simulator: Sim) -> None:
    sim = simulator(adder)

    async def main() -> str:
        async with mcp_tools(SERVER) as tools:
            agent = Agent(tools=tools, llm=sim.llm(max_retries=0), artifacts_dir=None)
            return (await agent.arun("What is 20 + 22?")).text

    assert asyncio.run(main()).startswith("add: 42 (error=False); refuse:")
    assert sim.rejected == []


DOCS = RemoteMcp(name="docs", url="https://mcp.example.com/mcp", token="t0k", allowed_tools=["search"])


def remote(body: Any) -> Any:
    found = mcp_result("pause_turn: send the turn back")
    return [mcp_call("docs", "search", query="pause_turn"), found, "Found it."]


def test_the_connector_adds_servers_toolsets_and_beta_and_its_blocks_pass_back(simulator: Sim) -> None:
    sim = simulator(remote)
    agent = Agent(extensions=[McpConnector(DOCS)], llm=sim.llm(max_retries=0), artifacts_dir=None)
    first = agent.run("What does pause_turn mean?")
    second = agent.run("And again?", history=first.messages)  # the mcp_* blocks are sent back
    assert sim.rejected == []
    assert first.text == second.text == "Found it."
    turn = [b for b in first.messages[1]["content"] if b["type"] != "thinking"]
    assert [b["type"] for b in turn] == ["mcp_tool_use", "mcp_tool_result", "text"]
    assert turn[1]["tool_use_id"] == turn[0]["id"] and turn[0]["server_name"] == "docs"

    request = agent.build_request(agent_state(agent, second.messages))
    assert request["mcp_servers"] == [
        {"type": "url", "url": "https://mcp.example.com/mcp", "name": "docs", "authorization_token": "t0k"}
    ]
    toolset = {k: v for k, v in request["tools"][-1].items() if k != "cache_control"}  # the tools breakpoint
    assert toolset == {
        "type": "mcp_toolset",
        "mcp_server_name": "docs",
        "default_config": {"enabled": False},
        "configs": {"search": {"enabled": True}},
    }
    assert MCP_CONNECTOR_BETA in request["betas"]
    assert validate_request({k: v for k, v in request.items() if k != "betas"}) == []


def agent_state(agent: Agent, messages: list[Any]) -> Any:
    from agent.state import RunState

    state = RunState(messages=[*messages, {"role": "user", "content": "next"}], prompt="next")
    state.extensions = list(agent.extensions)  # what `arun_state` does before the first step
    return state


def test_the_validator_holds_the_connectors_rules() -> None:
    base = {"model": "claude-opus-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    server = {"type": "url", "url": "https://a.example/mcp", "name": "a"}
    toolset = {"type": "mcp_toolset", "mcp_server_name": "a"}
    assert validate_request({**base, "mcp_servers": [server], "tools": [toolset]}) == []
    assert validate_request({**base, "mcp_servers": [server]}) == []  # the 2025-04-04 shape
    other = {**server, "name": "b"}
    assert validate_request({**base, "mcp_servers": [server, other], "tools": [toolset]}) == [
        "mcp_servers: server 'b' must be referenced by an mcp_toolset in tools"
    ]
    assert validate_request({**base, "tools": [toolset]}) == [
        "tools: mcp_toolset references MCP server 'a', which is not in mcp_servers"
    ]
    assert validate_request({**base, "mcp_servers": [server], "tools": [toolset, toolset]}) == [
        "tools: MCP server 'a' is referenced by more than one mcp_toolset"
    ]
    assert validate_request({**base, "mcp_servers": [{**server, "extra": 1}], "tools": [toolset]}) == [
        "mcp_servers.0.extra: Extra inputs are not permitted"
    ]


def test_the_simulator_refuses_an_mcp_call_to_a_server_the_request_did_not_connect(simulator: Sim) -> None:
    sim = simulator(remote)
    agent = Agent(llm=sim.llm(max_retries=0), model_retries=0, artifacts_dir=None)
    with pytest.raises(Exception, match="model call failed"):
        agent.run("What does pause_turn mean?")
    assert "did not connect" in sim.errors[-1]


def test_bad_connector_options_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="https"):
        RemoteMcp(name="docs", url="http://mcp.example.com")
    with pytest.raises(ValueError, match="name"):
        RemoteMcp(name="my docs", url="https://mcp.example.com")
    with pytest.raises(TypeError, match="RemoteMcp"):
        McpConnector({"name": "docs"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RemoteMcp"):
        McpConnector([DOCS])  # type: ignore[arg-type]  # the servers are the arguments themselves
    with pytest.raises(ValueError, match="unique"):
        McpConnector(DOCS, DOCS)  # at construction now, not at the first request


def crasher(body: Any) -> Any:
    results = latest_results(body)
    return [call("crash")] if not results else f"crash: {results[0].text}"


def test_options_put_an_mcp_tool_behind_the_approver(simulator: Sim) -> None:
    sim = simulator(crasher)
    with mcp_tools(SERVER, options={"crash": {"irreversible": True}, "add": {"keep": ["a"]}}) as tools:
        by_name = {t.name: t for t in tools}
        assert by_name["crash"].gated and by_name["add"].keep == ("a",) and not by_name["add"].gated
        agent = Agent(tools=tools, llm=sim.llm(max_retries=0), artifacts_dir=None)
        result = agent.run("Crash the server.")
        (pid,) = [o.value for o in run_all(agent.registry, [ToolCall("p", "server_pid", {})])]
    assert sim.rejected == []
    assert result.text.startswith("crash: ") and "denied" in result.text  # never sent to the server
    assert str(pid).isdigit()  # the server was still up after the denied call


def test_options_must_name_tools_and_policies_that_exist() -> None:
    with pytest.raises(TypeError, match="unknown destructive"):
        mcp_tools(SERVER, options={"crash": {"destructive": True}})
    with pytest.raises(ValueError, match="no tool of the servers: nope"):
        mcp_tools(SERVER, options={"nope": {"irreversible": True}}).open()
