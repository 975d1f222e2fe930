"""Deferred tools end to end: the real SDK, the `Agent`, and the strict simulator.

A model that sees only the search tool finds a deferred tool, the tool_result loads it
with a `tool_reference`, and the model calls it; nothing is rejected, the tools list stays
byte-for-byte the same (so the cached prefix holds), and the bill counts a deferred tool
only once a reference loads it. The simulator's own rules for deferred tools are checked
against the documented 400s.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, ModelCallFailed, RunState, tool
from agent.context.tokens import estimate_tokens, prompt_estimate
from agent.ext.tool_search import SEARCH_TOOL_NAME, SearchMode, ToolSearch
from agent.testing.cache_model import block_tokens, render
from agent.testing.deferred import referenced_names, visible_tools
from agent.testing.policies import call, latest_results
from agent.testing.simulator import MessagesSimulator
from agent.testing.validate import validate_request
from agent.tools import Tool

DATA = Path(__file__).parents[2] / "benchmarks" / "tool_search_data"
DECLARATIONS: list[dict[str, Any]] = json.loads((DATA / "tools.json").read_text())
MODEL = "claude-opus-5"
SYSTEM = "You operate a company's tools. Find the tool a task needs before calling it. " * 40


def make_tool(declaration: dict[str, Any]) -> Tool:
    name = declaration["name"]

    def run(target: str) -> str:
        return f"{name} did {target}"

    return tool(name=name, description=declaration["description"])(run)


TOOLS = [make_tool(d) for d in DECLARATIONS[:80]]


def finder(query: str) -> Callable[[dict[str, Any]], Any]:
    """Search for `query`, call the first tool the search loaded, then answer."""
    steps = itertools.count(1)

    def policy(body: dict[str, Any]) -> Any:
        step = next(steps)
        if step == 1:
            return ["Let me find the right tool.", call(SEARCH_TOOL_NAME, query=query)]
        if step == 2:
            last = body["messages"][-1]["content"]
            found = [name for block in last for name in referenced_names(block)]
            assert found and found[0] in visible_tools(body)
            return [call(found[0], target="thread 1712")]
        return "Done: " + latest_results(body)[0].text

    return policy


def run(sim: MessagesSimulator, mode: SearchMode = "client", **options: Any) -> Any:
    agent = Agent(
        llm=sim.llm(),
        model=MODEL,
        system=SYSTEM,
        tools=TOOLS,
        extensions=[ToolSearch(mode=mode)],
        artifacts_dir=None,
        model_retries=0,
        **options,
    )
    return agent.run("Answer the customer in the Slack thread about the outage.")


def prompt(usage: Mapping[str, Any]) -> int:
    return int(
        usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    )


def test_a_deferred_tool_is_found_loaded_and_called_with_nothing_rejected(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    sim = simulator(finder("reply in a slack thread"))
    result = run(sim)
    assert sim.rejected == [] and sim.errors == []
    assert result.stop_reason == "end_turn" and result.text == "Done: slack_reply_in_thread did thread 1712"
    first = sim.requests[0]
    loaded = [t["name"] for t in first["tools"] if not t.get("defer_loading")]
    assert loaded == [SEARCH_TOOL_NAME]  # only the search tool is in full
    results = sim.requests[1]["messages"][-1]["content"]
    assert results[0]["content"][0] == {"type": "tool_reference", "tool_name": "slack_reply_in_thread"}


def test_the_tools_list_and_the_cached_prefix_stay_byte_stable_as_tools_are_found(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    sim = simulator(finder("reply in a slack thread"))
    run(sim, cache=True)
    tool_digests = [[p.digest for p in render(r) if p.level == "tools"] for r in sim.requests]
    assert len(sim.requests) == 3 and tool_digests[0] == tool_digests[1] == tool_digests[2]
    for before, now in itertools.pairwise(sim.usages):  # each step reads the whole previous prompt
        assert now["cache_read_input_tokens"] == prompt(before) > 0


def test_the_bill_counts_a_deferred_tool_only_once_a_reference_loads_it(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    sim = simulator(finder("reply in a slack thread"))
    run(sim)
    everything = {
        **sim.requests[0],
        "tools": [{k: v for k, v in t.items() if k != "defer_loading"} for t in sim.requests[0]["tools"]],
    }
    declared_all = sum(p.tokens for p in render(everything))
    assert prompt(sim.usages[0]) < 0.5 * declared_all
    result = sim.requests[1]["messages"][-1]["content"][0]
    tools = {t["name"]: t for t in sim.requests[1]["tools"]}
    loaded = [tools[name] for name in referenced_names(result)]
    assert len(loaded) == 5
    without = sum(p.tokens for p in render(sim.requests[1]))
    assert prompt(sim.usages[1]) == without  # the simulator's bill is the rendered prompt...
    reference = next(p for p in render(sim.requests[1]) if "tool_reference" in p.text)
    own = math.ceil(len(reference.text) / 4)
    assert reference.tokens == own + sum(map(block_tokens, loaded))  # ...with the loaded definitions there


def test_a_model_cannot_call_a_deferred_tool_before_finding_it(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    sim = simulator(lambda body: [call("slack_reply_in_thread", target="x")])
    with pytest.raises(ModelCallFailed):
        run(sim)
    assert "not loaded yet" in sim.errors[0]


def test_server_side_tool_search_is_declared_and_accepted(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    sim = simulator(lambda body: "ok")
    result = run(sim, mode="bm25")
    assert sim.rejected == [] and result.text == "ok"
    tools = sim.requests[0]["tools"]
    assert tools[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert SEARCH_TOOL_NAME not in [t.get("name") for t in tools]


# -- the simulator's rules ---------------------------------------------------------------


def body(tools: list[dict[str, Any]], messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 100,
        "tools": tools,
        "messages": messages or [{"role": "user", "content": "hi"}],
    }


WEATHER = {"name": "weather", "description": "Weather.", "input_schema": {"type": "object"}}
FINDER = {"name": "find", "description": "Find tools.", "input_schema": {"type": "object"}}


def referencing(name: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "find", "input": {}}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "tool_reference", "tool_name": name}],
                }
            ],
        },
    ]


def test_deferred_tools_and_references_to_them_are_accepted() -> None:
    assert validate_request(body([FINDER, {**WEATHER, "defer_loading": True}], referencing("weather"))) == []


def test_all_tools_deferred_is_refused() -> None:
    errors = validate_request(body([{**WEATHER, "defer_loading": True}]))
    assert errors == ["All tools have defer_loading set. At least one tool must be non-deferred."]


def test_a_reference_to_an_undefined_tool_is_refused() -> None:
    errors = validate_request(body([FINDER, {**WEATHER, "defer_loading": True}], referencing("forecast")))
    assert errors == ["Tool reference 'forecast' has no corresponding tool definition"]


def test_a_server_search_result_in_the_history_is_accepted() -> None:
    messages = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "tool_search_tool_bm25",
                    "input": {"query": "w"},
                },
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": "weather"}],
                    },
                },
            ],
        },
        {"role": "user", "content": "go on"},
    ]
    server = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    request = body([server, {**WEATHER, "defer_loading": True}], messages)
    assert validate_request(request) == []
    assert visible_tools(request) == ["tool_search_tool_bm25", "weather"]  # the server's reference loads it


def test_pruning_keeps_the_search_result_so_found_tools_stay_loaded(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    steps = itertools.count(1)

    def policy(body: dict[str, Any]) -> Any:
        step = next(steps)
        if step == 1:
            return [call(SEARCH_TOOL_NAME, query="reply in a slack thread")]
        if step < 6:
            assert "slack_reply_in_thread" in visible_tools(body)
            return [call("slack_reply_in_thread", target="x" * 3000)]
        return "done"

    sim = simulator(policy)
    result = run(sim, keep_recent=1, prune_batch=1)
    assert sim.rejected == [] and sim.errors == [] and result.text == "done"
    last = sim.requests[-1]["messages"]
    assert any(
        name == "slack_reply_in_thread" for m in last for b in m["content"] for name in referenced_names(b)
    )
    pruned = [
        b
        for m in last[:-2]
        for b in m["content"]
        if b.get("type") == "tool_result" and "x" * 100 not in str(b)
    ]
    assert len(pruned) >= 3  # the tool's own old results were pruned; the search result was not


def test_token_estimates_leave_unloaded_deferred_tools_out_so_calibration_stays_true(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    seen: list[RunState] = []

    class Watched(Agent):
        def call_model(self, request: dict[str, Any], state: RunState) -> Any:
            seen.append(state)
            return super().call_model(request, state)

    sim = simulator(finder("reply in a slack thread"))
    agent = Watched(
        llm=sim.llm(),
        model=MODEL,
        system=SYSTEM,
        tools=TOOLS,
        extensions=[ToolSearch()],
        artifacts_dir=None,
        model_retries=0,
    )
    agent.run("Answer the customer in the Slack thread about the outage.")
    ratio = seen[-1].calibration.ratio  # billed / estimated, learned over the run's three calls
    assert 0.8 < ratio < 1.25, ratio
    first = sim.requests[0]
    assert prompt_estimate(first) < estimate_tokens(first) / 2  # 80 deferred declarations left out
