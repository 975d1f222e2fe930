"""Issue 15's whole promise in one conversation on the strict simulator: a server tool the API
runs (scripted web search), a tool from a real MCP server over stdio, and a deferred tool the
model finds through tool search, beside 80 other deferred tools. Every request is validated as
the API would (0 rejected), and the tools list (the cached prefix) never changes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.ext.mcp import StdioServer, mcp_tools
from agent.ext.server_tools import web_search
from agent.ext.tool_search import SEARCH_TOOL_NAME, ToolSearch
from agent.testing import reply, server_call
from agent.testing.deferred import referenced_names, visible_tools
from agent.testing.policies import call, latest_results
from agent.testing.simulator import MessagesSimulator
from agent.tools import Tool

DATA = Path(__file__).parents[2] / "benchmarks" / "tool_search_data"
SERVER = StdioServer(sys.executable, [str(Path(__file__).with_name("mcp_server.py")), "stdio"])
HITS = [
    {"type": "web_search_result", "url": "https://status.test/1", "title": "Outage", "encrypted_content": "e"}
]


def make_tool(declaration: dict[str, Any]) -> Tool:
    name = declaration["name"]

    def run(target: str) -> str:
        return f"{name} did {target}"

    return tool(name=name, description=declaration["description"])(run)


def policy(body: dict[str, Any]) -> Any:
    """Step 1: search the web (the API runs it), look for a tool, add on the MCP server.
    Step 2: call the tool the search loaded. Step 3: answer with what came back."""
    results = latest_results(body)
    if not results:
        return reply(
            "Checking the status page, finding the Slack tool and adding the counts.",
            *server_call("web_search", {"query": "outage status"}, HITS),
            call(SEARCH_TOOL_NAME, query="reply to a message in a slack thread"),
            call("add", a=20, b=22),
        )
    if any(r.name == SEARCH_TOOL_NAME for r in results):
        found = [n for block in body["messages"][-1]["content"] for n in referenced_names(block)]
        assert found and found[0] in visible_tools(body), "the search result loads the tool"
        return [call(found[0], target="thread 1712")]
    return "Done: " + "; ".join(r.text for r in results)


@pytest.mark.slow  # starts a real MCP server process
def test_a_server_tool_an_mcp_tool_and_a_found_deferred_tool_in_one_conversation(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    sim = simulator(policy)
    functions = [make_tool(d) for d in json.loads((DATA / "tools.json").read_text())[:80]]
    with mcp_tools(SERVER, options={"add": {"defer": False}}) as mcp:
        agent = Agent(
            llm=sim.llm(max_retries=0),
            tools=[*functions, *mcp, web_search(max_uses=1)],
            extensions=[ToolSearch()],
            artifacts_dir=None,
        )
        result = agent.run("Tell the Slack thread about the outage, and add 20 and 22.")
    assert sim.rejected == []
    requests = sim.requests
    assert len(requests) == 3
    declared = {t["name"]: t for t in requests[0]["tools"]}
    assert declared["web_search"]["type"].startswith("web_search_")  # the API runs it
    assert "defer_loading" not in declared["add"] and "defer_loading" not in declared[SEARCH_TOOL_NAME]
    found = result.text.removeprefix("Done: ").split(" did ")[0]
    assert declared[found].get("defer_loading") is True, "the tool called was deferred until found"
    assert all(r["tools"] == requests[0]["tools"] for r in requests), "the cached prefix never moved"
    first_turn = result.messages[1]["content"]
    kinds = [b["type"] for b in first_turn]
    assert "server_tool_use" in kinds and "web_search_tool_result" in kinds  # passed through, as a pair
    mcp_answer = next(
        b for b in result.messages[2]["content"] if b["type"] == "tool_result" and "42" in str(b["content"])
    )
    assert not mcp_answer.get("is_error")
    assert result.text == f"Done: {found} did thread 1712"
    assert sum(u.web_searches for u in result.usage.steps) == 1
