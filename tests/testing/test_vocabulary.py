"""One vocabulary scripts both offline models: `ScriptedLLM` and the simulator take the same answers."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, ModelCallFailed, tool
from agent.testing import MessagesSimulator, ScriptedLLM
from agent.testing.policies import call, latest_results, reply, scripted, text, tool_use


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def answer(body: Any) -> str:
    return f"The sum is {latest_results(body)[0].text}."


ANSWERS: dict[str, list[Any]] = {
    "blocks": [call("add", a=2, b=3), answer],
    "lists": [["Adding.", call("add", a=2, b=3)], answer],
    "replies": [reply("Adding.", tool_use("add", {"a": 2, "b": 3})), lambda body: reply(answer(body))],
    "texts": [[text("Adding."), call("add", a=2, b=3)], answer],
}


@pytest.mark.parametrize("shape", sorted(ANSWERS))
def test_the_same_answers_script_a_scripted_llm_and_the_simulator(shape: str) -> None:
    script = ANSWERS[shape]
    offline = Agent(tools=[add], llm=ScriptedLLM(script)).run("2 + 3?")
    with MessagesSimulator(scripted(*script)) as sim:
        served = Agent(tools=[add], llm=sim.llm()).run("2 + 3?")
    assert offline.text == served.text == "The sum is 5."


def test_a_scripted_llm_takes_a_whole_policy() -> None:
    policy = scripted(call("add", a=1, b=1), answer)
    llm = ScriptedLLM(policy)
    assert Agent(tools=[add], llm=llm).run("1 + 1?").text == "The sum is 2."
    assert len(llm.requests) == 2


def test_a_tool_call_without_its_type_names_the_helper_to_use() -> None:
    llm = ScriptedLLM([{"name": "add", "input": {"a": 1, "b": 2}}])
    with pytest.raises(TypeError, match=r"use call\('add', \.\.\.\)"):
        llm.create({"model": "claude-opus-5", "messages": []})


def test_a_response_without_content_names_the_vocabulary() -> None:
    llm = ScriptedLLM([{"stop_reason": "end_turn"}])
    with pytest.raises(TypeError, match=r"reply\(\.\.\.\).*agent\.testing\.policies"):
        llm.create({"model": "claude-opus-5", "messages": []})


def test_a_run_on_a_misshapen_script_fails_with_the_hint_not_a_key_error() -> None:
    agent = Agent(tools=[add], llm=ScriptedLLM([("tool_use", "add", {"a": 1})]), model_retries=0)
    with pytest.raises(ModelCallFailed) as failure:
        agent.run("1 + ?")
    assert "agent.testing.policies" in str(failure.value)
    assert "KeyError" not in str(failure.value)


def test_the_simulator_names_the_vocabulary_for_a_block_it_never_sends() -> None:
    with MessagesSimulator(lambda body: [{"name": "add", "input": {}}]) as sim:
        agent = Agent(tools=[add], llm=sim.llm(), model_retries=0)
        with pytest.raises(ModelCallFailed, match=r"MessagesSimulator\.errors"):
            agent.run("1 + 2?")
    assert "agent.testing.policies" in sim.errors[-1]
