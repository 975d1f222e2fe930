"""Edge cases of the loop that would otherwise produce a request the API rejects, or lose the task."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, CostBudgetExceeded, RunState, tool
from agent.context.compact import original_request
from agent.messages import visible_text
from agent.state import check_budgets
from agent.testing import ScriptedLLM, reply, text, tool_use, validate_request

ran: list[str] = []


@tool
def note(what: str) -> str:
    """Note something.

    Args:
        what: the note.
    """
    ran.append(what)
    return f"noted {what} " + "detail " * 300


def valid(messages: list[dict[str, Any]]) -> bool:
    return validate_request({"model": "m", "max_tokens": 1, "messages": messages}) == []


def agent_with(script: list[Any], **options: Any) -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM(script)
    options.setdefault("artifacts_dir", None)
    return Agent(llm=llm, tools=[note], **options), llm


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


@pytest.mark.parametrize("stop", ["end_turn", "stop_sequence", "refusal", "model_context_window_exceeded"])
def test_a_final_turn_never_runs_or_keeps_a_tool_call(stop: str) -> None:
    agent, _ = agent_with([reply("Here.", tool_use("note", {"what": "x"}), stop_reason=stop)])
    result = agent.run("go")
    assert ran == [] and result.stop_reason == stop
    assert result.messages[-1]["content"] == [{"type": "text", "text": "Here."}]
    assert valid(result.messages)
    follow_up, llm = agent_with([reply("fine")])
    follow_up.run("and now?", history=result.messages)
    assert validate_request(llm.requests[0]) == []


def test_tool_use_stop_without_a_tool_call_ends_the_run_instead_of_sending_an_empty_turn() -> None:
    agent, llm = agent_with([reply("I would call a tool.", stop_reason="tool_use")])
    result = agent.run("go")
    assert len(llm.requests) == 1 and result.stop_reason == "tool_use"
    assert valid(result.messages)


def test_empty_text_blocks_from_the_model_are_not_sent_back() -> None:
    agent, llm = agent_with([reply(text(""), tool_use("note", {"what": "a"})), reply("done")])
    agent.run("go")
    assert validate_request(llm.requests[1]) == []
    assert all(b.get("text") != "" for m in llm.requests[1]["messages"] for b in m["content"])


def test_an_empty_prompt_is_refused_before_any_call() -> None:
    agent, llm = agent_with([])
    with pytest.raises(ValueError, match="prompt"):
        agent.run("   ")
    assert llm.requests == []


def test_history_markers_and_string_content_are_normalised() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": "b"},
    ]
    seen: list[RunState] = []

    class Watching(Agent):
        def call_model(self, request: dict[str, Any], state: RunState) -> Any:
            seen.append(state)
            return super().call_model(request, state)

    llm = ScriptedLLM([reply(tool_use("note", {"what": str(i)})) for i in range(3)] + [reply("ok")])
    Watching(llm=llm, tools=[note], artifacts_dir=None, system="s " * 400).run("c", history=history)
    assert all(validate_request(r) == [] for r in llm.requests)
    assert llm.requests[0]["messages"][1]["content"] == [{"type": "text", "text": "b"}]
    assert seen[-1].cache_guard.changes == []  # no phantom "history rewritten" on plain steps


def test_compaction_quotes_this_runs_request_not_the_historys_first_one() -> None:
    def policy(request: dict[str, Any]) -> dict[str, Any]:
        if "tools" not in request:
            return reply("pages were read")
        return reply(tool_use("note", {"what": str(len(request["messages"]))}))

    history = [
        {"role": "user", "content": [{"type": "text", "text": "Earlier: say hello."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
    ]
    task = "CURRENT TASK: refund order XYZ-42."
    agent, llm = agent_with([policy] * 30, max_context_tokens=2500, max_steps=12, keep_recent=0)
    with pytest.raises(Exception, match="max_steps"):
        agent.run(task, history=history)
    summaries = [r for r in llm.requests if "tools" not in r]
    assert summaries, "the scenario must compact"
    last = [r for r in llm.requests if "tools" in r][-1]
    assert task in visible_text(last["messages"])
    assert original_request(last["messages"]) == task


def test_budget_assumes_a_cache_write_when_caching_is_on() -> None:
    # Opus 5: input $5/M, 5m write $6.25/M. A ~40,000-token request costs $0.20 uncached, $0.25 as a write.
    request = {
        "model": "claude-opus-5",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "x" * 160_000}],
    }
    state = RunState(messages=[])
    cached = Agent(llm=ScriptedLLM([]), max_cost_usd=0.22)
    with pytest.raises(CostBudgetExceeded):
        check_budgets(request, state, cached.budget_policy())
    check_budgets(request, state, Agent(llm=ScriptedLLM([]), max_cost_usd=0.22, cache=False).budget_policy())


def test_a_dollar_budget_needs_a_price_for_the_summarizer_too_and_prices_what_was_asked_for() -> None:
    with pytest.raises(ValueError, match="house-model"):
        Agent(llm=ScriptedLLM([]), max_cost_usd=1.0, summarizer_model="house-model")
    llm = ScriptedLLM([reply("hi")], model="claude-opus-5")
    served_as = llm.create  # a compatible server answering with its own spelling of the model

    def create(request: Any) -> Any:
        return served_as(request).model_copy(update={"model": "anthropic/claude-opus-5@2026"})

    llm.create = create  # type: ignore[method-assign]
    result = Agent(llm=llm, artifacts_dir=None, max_cost_usd=1.0).run("x")
    assert result.steps[0].cost_usd is not None and result.steps[0].cost_usd > 0
