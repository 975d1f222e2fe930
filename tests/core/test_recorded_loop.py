"""The real loop through the real SDK, replayed from cassettes recorded on the simulator.

Each test replays `cassettes/test_recorded_loop/<test name>.yaml`: the tools run
for real, and every request the loop builds must match the recorded one, so a
change in what the framework sends fails here with a diff. Re-record with
`pytest tests/core/test_recorded_loop.py --record-mode=rewrite` (cassettes/README.md).
"""

from __future__ import annotations

import traceback
from typing import Any

import pytest

from agent import Agent, ModelCallFailed
from agent.testing.cassettes import CassetteMiss
from agent.testing.policies import arithmetic, call, latest_results
from tools import calculator, word_count

SYSTEM = "You are a careful assistant. Use the tools for arithmetic and counting; never guess."


def results_sent(result: Any, turn: int = 2) -> list[dict[str, Any]]:
    """The tool_result blocks of the user turn at index `turn` of the final history."""
    return [b for b in result.messages[turn]["content"] if b["type"] == "tool_result"]


def test_calculator_agent(recorded_llm: Any) -> None:
    agent = Agent(system=SYSTEM, tools=[calculator, word_count], llm=recorded_llm(arithmetic), effort="high")
    result = agent.run("What is 123456 × 789?")

    assert result.stop_reason == "end_turn"
    assert result.text == "123456 * 789 = 97,406,784"
    assert [step.tools for step in result.steps] == [("calculator",), ()]
    (sent,) = results_sent(result)
    assert sent["content"] == "97406784" and "is_error" not in sent
    assert all(step.prompt == step.uncached + step.cache_read + step.cache_write for step in result.steps)


def parallel(body: Any) -> Any:
    results = latest_results(body)
    if not results:
        return [
            "Counting and multiplying at the same time.",
            call("word_count", text="the quick brown fox jumps"),
            call("calculator", a=6, op="*", b=7),
        ]
    return "; ".join(f"{r.name} said {r.text}" for r in results)


def test_parallel_tool_calls_come_back_in_call_order(recorded_llm: Any) -> None:
    agent = Agent(system=SYSTEM, tools=[calculator, word_count], llm=recorded_llm(parallel))
    result = agent.run("Count the words of 'the quick brown fox jumps' and multiply 6 by 7.")

    uses = [b for b in result.messages[1]["content"] if b["type"] == "tool_use"]
    sent = results_sent(result)
    assert [b["tool_use_id"] for b in sent] == [u["id"] for u in uses]
    assert [b["content"] for b in sent] == ['{"words":5,"lines":1,"characters":25}', "42"]
    assert result.text == 'word_count said {"words":5,"lines":1,"characters":25}; calculator said 42'


def test_tool_error_goes_back_as_an_error_result(recorded_llm: Any) -> None:
    agent = Agent(system=SYSTEM, tools=[calculator], llm=recorded_llm(arithmetic))
    result = agent.run("What is 10 / 0?")

    (sent,) = results_sent(result)
    assert sent["is_error"] is True
    assert "division by zero" in sent["content"]
    assert result.text.startswith("The calculator could not compute 10 / 0:")


def unknown_tool(body: Any) -> Any:
    results = latest_results(body)
    if not results:
        return [call("weather", city="Seoul")]
    return f"No weather tool here ({results[0].text})."


def test_unknown_tool_is_an_error_result_not_a_crash(recorded_llm: Any) -> None:
    agent = Agent(system=SYSTEM, tools=[calculator], llm=recorded_llm(unknown_tool))
    result = agent.run("What's the weather in Seoul?")

    (sent,) = results_sent(result)
    assert sent["is_error"] is True and "weather" in sent["content"]
    assert result.stop_reason == "end_turn" and len(result.steps) == 2


def test_a_changed_request_fails_the_replay_with_a_diff(recorded_llm: Any, agent_cassette: Any) -> None:
    llm = recorded_llm(arithmetic)
    assert Agent(system=SYSTEM, tools=[calculator], llm=llm).run("What is 2 × 3?").text == "2 * 3 = 6"
    if not agent_cassette.write_protected:
        return  # recording: only the run above goes into the cassette
    changed = Agent(system=SYSTEM + " Be terse.", tools=[calculator], llm=llm)
    with pytest.raises(CassetteMiss) as caught:  # a ModelCallFailed too: raised as itself
        changed.run("What is 2 × 3?")
    miss = caught.value
    assert isinstance(miss, ModelCallFailed) and miss.result is not None
    first, removed, added, *rest = str(miss).splitlines()
    assert first.startswith("the request is not in the cassette; against the nearest recorded one")
    assert removed == f'  -$.system[0].text = "{SYSTEM}"'
    assert added == f'  +$.system[0].text = "{SYSTEM} Be terse."'
    assert rest[0].startswith(
        "If the change is intended, re-record with `pytest <test> --record-mode=rewrite`"
    )

    # the failure reads as the miss: its first line and diff, nothing of httpx or vcrpy chained before it
    shown = traceback.format_exception(miss)
    assert shown[-1].startswith("agent.testing.cassettes.CassetteMiss: the request is not in the cassette")
    assert all(part.startswith(("Traceback", "  File")) for part in shown[:-1])
    plumbing = ("above exception", "During handling", "event loop", "APIConnectionError", "CannotOverwrite")
    assert not [word for word in plumbing if word in "".join(shown)]
