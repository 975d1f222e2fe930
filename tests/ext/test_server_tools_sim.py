"""Server tools end to end: the real SDK over HTTP against the strict simulator, which scripts
the API's side (search results, a paused turn, code run in a container) and refuses what the
API refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import pytest

from agent import Agent, tool
from agent.ext.server_tools import Containers, code_execution, web_search
from agent.testing import reply, server_call
from agent.testing.simulator import MessagesSimulator

Simulator = Callable[..., MessagesSimulator]


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first.
        b: second.
    """
    return a + b


HITS = [{"type": "web_search_result", "url": "https://w.test/r", "title": "Rates", "encrypted_content": "e1"}]


def ran(stdout: str) -> dict[str, Any]:
    return {"type": "code_execution_result", "stdout": stdout, "stderr": "", "return_code": 0, "content": []}


def open_call_in(request: dict[str, Any]) -> str:
    """The id of the server call the paused turn (the request's last message) left open."""
    content = request["messages"][-1]["content"]
    answered = {b.get("tool_use_id") for b in content}
    return str(next(b["id"] for b in content if b["type"] == "server_tool_use" and b["id"] not in answered))


def story(request: dict[str, Any]) -> Any:
    """One conversation: search, a turn paused mid-code, its continuation calling a client
    tool, then more code in the same container and the answer."""
    last = request["messages"][-1]
    kinds = [b["type"] for b in last["content"]]
    if last["role"] == "user" and "tool_result" not in kinds:  # the prompt
        code = {"type": "server_tool_use", "name": "code_execution", "input": {"code": "x = 2"}}
        return reply(
            "Searching.", *server_call("web_search", {"query": "rates"}, HITS), code, stop_reason="pause_turn"
        )
    if last["role"] == "assistant":  # the paused turn, sent back to be continued
        done = {
            "type": "code_execution_tool_result",
            "tool_use_id": open_call_in(request),
            "content": ran(""),
        }
        return reply(done, {"type": "tool_use", "name": "add", "input": {"a": 2, "b": 2}})
    return reply(
        *server_call("code_execution", {"code": "print(x + 2)"}, ran("4\n")), "x + 2 is 4; add says 4."
    )


@pytest.mark.parametrize("stream", [True, False])
def test_a_conversation_with_search_a_paused_turn_and_code_in_one_container(
    simulator: Simulator, stream: bool
) -> None:
    sim = simulator(story)
    agent = Agent(
        llm=sim.llm(stream=stream),
        tools=[add, web_search(max_uses=3), code_execution()],
        extensions=[Containers()],
        artifacts_dir=None,
    )
    result = agent.run("What are rates, and what is 2 + 2?")
    assert sim.rejected == [] and sim.errors == []
    assert result.text == "x + 2 is 4; add says 4." and len(sim.requests) == 3
    paused = sim.requests[1]["messages"][-1]
    assert paused["role"] == "assistant"  # sent back as it came, the open call included
    assert [b["type"] for b in paused["content"] if b["type"] != "thinking"] == [
        "text",
        "server_tool_use",
        "web_search_tool_result",
        "server_tool_use",
    ]
    # the container the first reply ran code in is sent back, and the later code runs in it
    (container,) = sim.containers.used
    assert "container" not in sim.requests[0]
    assert sim.requests[1]["container"] == sim.requests[2]["container"] == container
    assert sim.containers.used[container] == ["0001", "0002", "0003"]
    # the search was billed per use, from the usage the API reported
    assert [s.web_searches for s in result.steps] == [1, 0, 0]
    assert result.steps[0].server_tool_fees_usd == pytest.approx(0.01)
    # the history goes on: a new question after it is accepted
    again = agent.run("And now?", history=result.messages)
    assert sim.rejected == [] and again.text


def test_a_turn_cut_off_mid_pair_leaves_a_history_the_api_takes(simulator: Simulator) -> None:
    def policy(request: dict[str, Any]) -> Any:
        if len(request["messages"]) == 1:
            return reply("Let me search.", *server_call("web_search", {"query": "q" * 400}, HITS * 40))
        return "Fine."

    sim = simulator(policy)
    agent = Agent(
        llm=sim.llm(), tools=[web_search()], max_tokens=150, thinking={"type": "disabled"}, artifacts_dir=None
    )
    result = agent.run("search")
    assert result.stop_reason == "max_tokens"
    assert [b["type"] for b in result.messages[-1]["content"]] == ["text"]  # the cut pair went whole
    agent.run("go on", history=result.messages)
    assert sim.rejected == []


def test_the_simulator_refuses_what_the_api_refuses(simulator: Simulator) -> None:
    sim = simulator(lambda request: "ok")
    client = sim.client()
    tools = [web_search().declaration()]
    orphan = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_x", "content": HITS}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [orphan]},
        {"role": "user", "content": "more"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="srvtoolu_x"):
        client.messages.create(model="claude-opus-5", max_tokens=50, tools=tools, messages=messages)  # type: ignore[arg-type]
    paused = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_y", "name": "web_search", "input": {"query": "q"}}
            ],
        },
    ]
    client.messages.create(model="claude-opus-5", max_tokens=50, tools=tools, messages=paused)  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError, match="srvtoolu_y"):
        client.messages.create(
            model="claude-opus-5",
            max_tokens=50,
            tools=tools,  # type: ignore[arg-type]
            messages=[*paused, {"role": "user", "content": "never mind"}],
        )
    assert len(sim.rejected) == 2


def test_a_policy_cannot_call_a_server_tool_the_request_does_not_declare(simulator: Simulator) -> None:
    sim = simulator(lambda request: reply(*server_call("web_fetch", {"url": "https://x.test"}, {})))
    agent = Agent(llm=sim.llm(), tools=[web_search()], model_retries=0, artifacts_dir=None)
    with pytest.raises(Exception, match="model call failed"):
        agent.run("fetch it")
    assert "does not declare" in sim.errors[0]


def test_a_final_answer_keeps_the_result_of_a_call_its_paused_turn_opened(simulator: Simulator) -> None:
    def policy(request: dict[str, Any]) -> Any:
        if request["messages"][-1]["role"] == "user" and len(request["messages"]) == 1:
            call = {"type": "server_tool_use", "name": "web_search", "input": {"query": "rates"}}
            return reply("Searching.", call, stop_reason="pause_turn")
        if request["messages"][-1]["role"] == "assistant":
            found = {"type": "web_search_tool_result", "tool_use_id": open_call_in(request), "content": HITS}
            return reply(found, "Rates are 4%.")
        return "Still 4%."

    sim = simulator(policy)
    agent = Agent(llm=sim.llm(), tools=[web_search()], artifacts_dir=None)
    result = agent.run("rates?")
    assert result.text == "Rates are 4%."
    final = [b["type"] for b in result.messages[-1]["content"] if b["type"] != "thinking"]
    assert final == ["web_search_tool_result", "text"]
    assert agent.run("and now?", history=result.messages).text == "Still 4%."
    assert sim.rejected == []


def test_a_call_left_in_flight_while_client_tools_ran_keeps_its_late_result(simulator: Simulator) -> None:
    def policy(request: dict[str, Any]) -> Any:
        last = request["messages"][-1]
        if len(request["messages"]) == 1:  # the API defers its search while the client adds
            search = {"type": "server_tool_use", "name": "web_search", "input": {"query": "rates"}}
            return reply(search, {"type": "tool_use", "name": "add", "input": {"a": 2, "b": 2}})
        if any(b["type"] == "tool_result" for b in last["content"]):
            asked = request["messages"][-2]["content"]
            search_id = next(b["id"] for b in asked if b["type"] == "server_tool_use")
            found = {"type": "web_search_tool_result", "tool_use_id": search_id, "content": HITS}
            return reply(found, "Rates are 4%, and 2 + 2 = 4.")
        return "Still the same."

    sim = simulator(policy)
    agent = Agent(llm=sim.llm(), tools=[add, web_search()], artifacts_dir=None)
    result = agent.run("rates, and 2 + 2?")
    assert result.text == "Rates are 4%, and 2 + 2 = 4."
    final = [b["type"] for b in result.messages[-1]["content"] if b["type"] != "thinking"]
    assert final == ["web_search_tool_result", "text"]  # the late result stays with the final answer
    assert agent.run("and now?", history=result.messages).text == "Still the same."
    assert sim.rejected == []
