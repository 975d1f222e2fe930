"""`max_cost_usd` is a hard budget: a run never spends more than it plus one step.

The check runs before each call on what was billed so far plus an estimate of the
request, so what was spent before the last call is always within the budget; the
last call can overshoot only by its own output and estimation error. Checked with
a priced model over random per-step bills (hypothesis), and across a resume.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import Agent, CostBudgetExceeded, tool
from agent.ext.sessions import Session, resume
from agent.testing import ScriptedLLM, reply, tool_use
from agent.usage import PRICES

OPUS = PRICES["claude-opus-5"]


@tool
def work(n: int) -> str:
    """Do one unit of work.

    Args:
        n: which unit.
    """
    return f"unit {n} done"


Bill = tuple[int, int, int, int]  # uncached input, cache write, cache read, output


def script_for(bills: list[Bill]) -> list[dict[str, Any]]:
    """One tool call per step, billed as given; the last step answers."""
    steps = []
    for i, (uncached, write, read, output) in enumerate(bills):
        usage = {
            "input_tokens": uncached,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "output_tokens": output,
        }
        content = ("all done",) if i == len(bills) - 1 else (tool_use("work", {"n": i}),)
        steps.append(reply(*content, **usage))
    return steps


def cost(bill: Bill) -> float:
    uncached, write, read, output = bill
    return (
        uncached * OPUS.input + write * OPUS.cache_write_5m + read * OPUS.cache_read + output * OPUS.output
    ) / 1e6


bills = st.lists(
    st.tuples(
        st.integers(0, 200_000), st.integers(0, 50_000), st.integers(0, 200_000), st.integers(1, 20_000)
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bills=bills, budget=st.floats(0.0001, 10.0))
def test_spend_never_exceeds_the_budget_by_more_than_the_last_step(bills: list[Bill], budget: float) -> None:
    llm = ScriptedLLM(script_for(bills))
    agent = Agent(llm=llm, tools=[work], max_cost_usd=budget, max_steps=20, artifacts_dir=None)
    try:
        result = agent.run("Do the work.")
    except CostBudgetExceeded as stop:
        assert stop.result is not None
        result = stop.result
    costs = [step.cost_usd or 0.0 for step in result.steps]
    assert costs == pytest.approx([cost(b) for b in bills[: len(costs)]])
    assert sum(costs[:-1]) <= budget + 1e-12  # everything but the last call fit the budget
    assert sum(costs) <= budget + max(costs, default=0.0) + 1e-12


def test_a_concrete_run_stops_before_the_call_that_would_break_the_budget() -> None:
    bill = (20_000, 0, 0, 1_000)  # $0.125 per step at Opus prices
    llm = ScriptedLLM(script_for([bill] * 10))
    agent = Agent(llm=llm, tools=[work], max_cost_usd=0.30, artifacts_dir=None)
    with pytest.raises(CostBudgetExceeded, match=r"would take the run past max_cost_usd=0\.3 ") as stop:
        agent.run("Do the work.")
    partial = stop.value.result
    assert partial is not None and partial.stop_reason == "max_cost_usd"
    assert 0 < len(llm.requests) == len(partial.steps) < 10
    assert partial.usage.cost_usd is not None and partial.usage.cost_usd <= 0.30


def test_a_resumed_run_spends_from_the_same_budget(tmp_path: Path) -> None:
    bill = (20_000, 0, 0, 1_000)
    path = tmp_path / "s.jsonl"
    with pytest.raises(CostBudgetExceeded):
        Agent(llm=ScriptedLLM(script_for([bill] * 10)), tools=[work], max_cost_usd=0.30).run(
            "go", extensions=[Session(path)]
        )
    again = ScriptedLLM(script_for([bill] * 10))
    with pytest.raises(CostBudgetExceeded) as stop:
        resume(Agent(llm=again, tools=[work], max_cost_usd=0.30), path)
    assert again.requests == []  # the resumed run knew what was already spent
    assert stop.value.result is not None
    spent = stop.value.result.usage.cost_usd
    assert spent is not None and 0 < spent <= 0.30
    more = ScriptedLLM(script_for([bill] * 10)[len(stop.value.result.steps) :])
    result = resume(Agent(llm=more, tools=[work], max_cost_usd=10.0), path)  # a bigger budget goes on
    assert result.text == "all done"
    assert [s.step for s in result.steps] == list(range(1, 11))
    assert result.usage.cost_usd == pytest.approx(10 * cost(bill))


def test_a_compaction_summary_does_not_break_the_one_step_bound() -> None:
    @tool
    def fetch(page: int) -> str:
        """Fetch a page.

        Args:
            page: which one.
        """
        return f"page {page}: " + "lorem ipsum dolor " * 150

    def policy(request: dict[str, Any]) -> dict[str, Any]:
        if "tools" not in request:  # the summarizer's tool-less call
            return reply("Summary: pages read so far.", input_tokens=30_000, output_tokens=2_000)
        turn = sum(m["role"] == "assistant" for m in request["messages"])
        return reply(tool_use("fetch", {"page": turn}), input_tokens=5_000, output_tokens=3_000)

    budget = 0.785
    agent = Agent(
        llm=ScriptedLLM([policy] * 100),
        tools=[fetch],
        max_cost_usd=budget,
        max_context_tokens=3000,
        max_steps=60,
        artifacts_dir=None,
    )
    with pytest.raises(CostBudgetExceeded) as stop:
        agent.run("Read every page.")
    assert stop.value.result is not None
    costs = [step.cost_usd or 0.0 for step in stop.value.result.steps]
    assert sum(costs) <= budget + max(costs) + 1e-12
