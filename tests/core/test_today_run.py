"""The done-when of the today's-models work: the 40-step audit (`benchmarks.thinking`) on
today's models, through the real SDK, streaming, against the strict simulator.

It must complete with 0 rejected requests, the irreversible call made once, the largest
request within 1.2 x the window, and the reported cost within 2% of what was billed at
the model's own prices: on claude-sonnet-4-6, on claude-opus-5 with three steps that think
four times longer than usual, and on claude-opus-5-5 (preserved thinking). The control
shows the rule the last one needs: sending thinking back after a rewrite is a 400.
"""

from __future__ import annotations

import pytest

from benchmarks.thinking import DONE_WHEN, LONG_STEPS, USUAL_THINKING, WINDOW, run_triage


@pytest.mark.slow
@pytest.mark.parametrize(("name", "model", "options"), DONE_WHEN, ids=[m for _, m, _ in DONE_WHEN])
def test_the_forty_step_audit_completes_on_todays_models(name: str, model: str, options: dict) -> None:
    run = run_triage(name, model, **options)
    assert run.completed, run.error
    assert len(run.steps) == 40
    assert run.rejected == 0 and run.sim.errors == []
    assert run.irreversible_runs == 1
    assert run.largest_prompt <= 1.2 * WINDOW
    assert run.reported_usd() == pytest.approx(run.billed_usd(), rel=0.02)


@pytest.mark.slow
def test_long_thinking_fits_the_default_output_budget_on_opus_5() -> None:
    run = run_triage("opus-5", "claude-opus-5")
    thought = [u.get("output_tokens_details", {}).get("thinking_tokens", 0) for u in run.sim.usages]
    assert sum(t >= 4 * USUAL_THINKING for t in thought) == len(LONG_STEPS)  # the long steps happened
    assert all(u.stop_reason != "max_tokens" for u in run.result.steps)  # type: ignore[union-attr]


def test_without_a_strategy_preserved_thinking_rejects_the_first_rewrite() -> None:
    """The control: "keep" sends thinking back after pruning rewrote an earlier turn."""
    run = run_triage("keep", "claude-opus-5-5", thinking_history="keep")
    assert not run.completed and run.rejected == 1
    assert "bound to a different conversation" in " ".join(run.sim.rejected[0][1])


@pytest.mark.parametrize("strategy", ["strip", "drop_block", "append_only"])
def test_every_strategy_completes_on_preserved_thinking(strategy: str) -> None:
    run = run_triage(strategy, "claude-opus-5-5", thinking_history=strategy)
    assert run.completed and run.rejected == 0
    assert run.irreversible_runs == 1
    if strategy == "drop_block":
        assert sum(run.server_drops()) > 0  # the server, not the client, removed the invalid blocks
    else:
        assert sum(run.server_drops()) == 0
