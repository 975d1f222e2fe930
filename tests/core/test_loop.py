"""The loop on an in-process scripted model: tools, stop reasons, budgets, effort, history."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agent import (
    Agent,
    CostBudgetExceeded,
    StepBudgetExceeded,
    TokenBudgetExceeded,
    tool,
)
from agent.context.cache import strip_cache_control
from agent.testing import ScriptedLLM, reply, tool_use, validate_request
from tools import calculator

calls: list[str] = []


@tool
def record(note: str) -> str:
    """Record a note and say so.

    Args:
        note: what to record.
    """
    calls.append(note)
    return f"recorded {note}"


@tool
def explode() -> str:
    """Always fails."""
    raise ValueError("no luck")


def agent_with(script: list[Any], **options: Any) -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM(script)
    options.setdefault("artifacts_dir", None)
    return Agent(llm=llm, tools=[calculator, record, explode], **options), llm


def results_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of a request's newest message, without cache markers."""
    newest = strip_cache_control(request["messages"][-1])
    return [b for b in newest["content"] if b["type"] == "tool_result"]


def test_tool_is_executed_and_its_result_fed_back() -> None:
    agent, llm = agent_with(
        [
            reply("Let me compute.", tool_use("calculator", {"a": 123456, "op": "*", "b": 789}, id="t1")),
            reply("It is 97,406,784."),
        ]
    )
    result = agent.run("What is 123456 x 789?")
    assert result.text == "It is 97,406,784."
    assert result.stop_reason == "end_turn"
    assert len(llm.requests) == 2
    [fed_back] = results_of(llm.requests[1])
    assert fed_back == {"type": "tool_result", "tool_use_id": "t1", "content": "97406784"}
    assert all(validate_request(r) == [] for r in llm.requests)
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user", "assistant"]


def test_unknown_tool_and_exception_are_error_results_and_the_loop_goes_on() -> None:
    agent, llm = agent_with(
        [
            reply(tool_use("teleport", {}, id="u1"), tool_use("explode", {}, id="u2")),
            reply("Sorry, both failed."),
        ]
    )
    result = agent.run("try things")
    unknown, failed = results_of(llm.requests[1])
    assert unknown == {
        "type": "tool_result",
        "tool_use_id": "u1",
        "content": "unknown tool: teleport",
        "is_error": True,
    }
    assert failed["is_error"] is True and failed["content"] == "ValueError: no luck"
    assert result.text == "Sorry, both failed."


def test_max_steps_makes_exactly_that_many_calls_then_raises_with_the_partial_result() -> None:
    script = [reply(tool_use("record", {"note": str(i)})) for i in range(10)]
    agent, llm = agent_with(script, max_steps=3)
    with pytest.raises(StepBudgetExceeded) as raised:
        agent.run("loop forever")
    assert len(llm.requests) == 3
    partial = raised.value.result
    assert partial is not None and len(partial.steps) == 3
    assert partial.stop_reason == "max_steps"
    assert validate_request({"model": "m", "max_tokens": 1, "messages": partial.messages}) == []


def test_parallel_calls_keep_call_order_in_one_user_message() -> None:
    calls.clear()
    uses = [tool_use("record", {"note": n}, id=f"p{n}") for n in ("x", "y", "z")]
    agent, llm = agent_with([reply(*uses), reply("done")])
    agent.run("record three")
    last = llm.requests[1]["messages"][-1]
    assert last["role"] == "user"
    assert [b["tool_use_id"] for b in last["content"]] == ["px", "py", "pz"]
    assert [b["content"] for b in last["content"]] == ["recorded x", "recorded y", "recorded z"]
    assert sorted(calls) == ["x", "y", "z"]


def test_declarations_go_out_sorted_by_name() -> None:
    agent, llm = agent_with([reply("hi")])
    agent.run("hello")
    assert [t["name"] for t in llm.requests[0]["tools"]] == ["calculator", "explode", "record"]


def test_effort_is_sent_omitted_changed_per_step_and_validated() -> None:
    agent, llm = agent_with([reply("a")], effort="low")
    agent.run("x")
    assert llm.requests[0]["output_config"] == {"effort": "low"}

    agent, llm = agent_with([reply("a")])
    agent.run("x")
    assert "output_config" not in llm.requests[0]

    with pytest.raises(ValueError, match="effort"):
        Agent(llm=ScriptedLLM([]), effort="extreme")

    class Escalating(Agent):
        def choose_effort(self, state: Any) -> str | None:
            return "low" if state.step == 1 else "high"

    llm = ScriptedLLM([reply(tool_use("record", {"note": "n"})), reply("done")])
    Escalating(llm=llm, tools=[record], artifacts_dir=None).run("go")
    assert [r["output_config"]["effort"] for r in llm.requests] == ["low", "high"]


def test_pause_turn_sends_the_assistant_turn_back_as_is() -> None:
    paused = reply("Working on it...", stop_reason="pause_turn")
    agent, llm = agent_with([paused, reply("Finished.")])
    result = agent.run("long job")
    assert len(llm.requests) == 2
    assert strip_cache_control(llm.requests[1]["messages"][-1]) == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Working on it..."}],
    }
    assert result.text == "Finished."


def test_max_tokens_never_runs_a_cut_off_tool_call() -> None:
    calls.clear()
    cut = reply("I will record", tool_use("record", {"note": "half"}), stop_reason="max_tokens")
    agent, llm = agent_with([cut, cut])  # cut off, retried once with more room, cut off again
    result = agent.run("do it")
    assert calls == [] and len(llm.requests) == 2
    assert llm.requests[1]["max_tokens"] == 2 * llm.requests[0]["max_tokens"]
    assert result.stop_reason == "max_tokens"
    assert result.detail is not None and "max_tokens" in result.detail
    assert result.messages[-1]["content"] == [{"type": "text", "text": "I will record"}]
    assert validate_request({"model": "m", "max_tokens": 1, "messages": result.messages}) == []


def test_refusal_ends_the_run_with_the_reason() -> None:
    agent, _ = agent_with([reply("I can't help with that.", stop_reason="refusal")])
    result = agent.run("bad idea")
    assert result.stop_reason == "refusal"
    assert result.detail == "the model refused to continue"


def test_the_callers_history_is_never_mutated() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "earlier question"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]},
    ]
    snapshot = copy.deepcopy(history)
    agent, llm = agent_with([reply(tool_use("record", {"note": "a"})), reply("ok")])
    result = agent.run("next", history=history)
    assert history == snapshot
    assert strip_cache_control(llm.requests[0]["messages"][:2]) == snapshot
    result.messages[0]["content"][0]["text"] = "changed"
    assert history == snapshot


def test_usage_is_parsed_priced_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    usage = {
        "input_tokens": 400,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 200,
        "output_tokens": 100,
    }
    log_file = tmp_path / "usage.jsonl"
    agent, _ = agent_with(
        [reply(tool_use("record", {"note": "a"}), **usage), reply("ok", **usage)],
        model="claude-sonnet-4-6",
        usage_log=log_file,
        effort="medium",
    )
    with caplog.at_level(logging.INFO, logger="agent"):
        result = agent.run("x")
    step = result.steps[0]
    assert (step.uncached, step.cache_read, step.cache_write, step.output) == (400, 3000, 200, 100)
    assert step.prompt == 3600
    # Sonnet 4.6 (Sonnet 4.5 takes no effort): $3 input, $3.75 5m write, $0.30 read, $15 output per million.
    assert step.cost_usd == pytest.approx((400 * 3 + 200 * 3.75 + 3000 * 0.3 + 100 * 15) / 1e6)
    assert step.tools == ("record",) and step.effort == "medium" and step.stop_reason == "tool_use"
    assert result.usage.cost_usd == pytest.approx(2 * step.cost_usd)
    assert result.usage.cache_hit_ratio == pytest.approx(3000 / 3600)
    assert "[step 1] prompt=3,600 (read=3,000 write=200 uncached=400) out=100 $0.0043" in caplog.text
    records = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and records[0]["prompt"] == 3600
    (run_id,) = {r["run_id"] for r in records}  # one log can hold many runs, told apart by this
    assert run_id


def test_unknown_model_has_no_cost_rather_than_a_guess() -> None:
    llm = ScriptedLLM([reply("hi")], model="someone-elses-model")
    result = Agent(llm=llm, model="someone-elses-model", artifacts_dir=None).run("x")
    assert result.steps[0].cost_usd is None and result.usage.cost_usd is None
    with pytest.raises(ValueError, match="price"):
        Agent(llm=llm, model="someone-elses-model", max_cost_usd=1.0)


def test_token_budget_stops_before_the_call_that_would_exceed_it() -> None:
    script = [reply(tool_use("record", {"note": str(i)}), input_tokens=1000) for i in range(10)]
    agent, llm = agent_with(script, max_input_tokens=2500)
    with pytest.raises(TokenBudgetExceeded) as raised:
        agent.run("go")
    assert len(llm.requests) == 2  # 2,000 used; a third call (~1,000 more) would pass 2,500
    assert raised.value.result is not None and raised.value.result.usage.prompt == 2000


def test_cost_budget_stops_before_the_call_that_would_exceed_it() -> None:
    # Opus 5: $5/M input, $25/M output. Each step costs 10,000 * 5e-6 + 1,000 * 25e-6 = $0.075.
    script = [
        reply(tool_use("record", {"note": str(i)}), input_tokens=10_000, output_tokens=1_000)
        for i in range(10)
    ]
    agent, llm = agent_with(script, max_cost_usd=0.2)
    with pytest.raises(CostBudgetExceeded) as raised:
        agent.run("go")
    spent = raised.value.result.usage.cost_usd if raised.value.result else None
    assert spent is not None and spent <= 0.2
    assert len(llm.requests) == 2


def test_subclass_class_attributes_configure_the_agent() -> None:
    class Calculating(Agent):
        system = "You do arithmetic."
        tools = (calculator,)
        max_steps = 4
        effort = "high"
        artifacts_dir = None

    llm = ScriptedLLM([reply("4")])
    agent = Calculating(llm=llm)
    agent.run("2+2")
    request = llm.requests[0]
    assert strip_cache_control(request["system"]) == [{"type": "text", "text": "You do arithmetic."}]
    assert [t["name"] for t in request["tools"]] == ["calculator"]
    assert agent.max_steps == 4 and request["output_config"] == {"effort": "high"}
    assert Calculating(llm=llm, max_steps=9).max_steps == 9
    with pytest.raises(TypeError, match="unknown Agent option"):
        Agent(llm=llm, max_step=3)  # type: ignore[call-arg]
