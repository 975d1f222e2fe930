"""A 60-step run with large tool results, on the strict simulator, through the real SDK.

The done-when of the history work: zero rejected requests, the largest request
within 1.2 x `max_context_tokens`, and the original request plus every
irreversible result visible to the model at the last step. A second test shows
what batching the pruning buys in cache reads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.messages import blocks, content_text, visible_text
from agent.testing.simulator import MessagesSimulator
from benchmarks.history import BROKEN_PAGE_STEP, REFUND_STEPS, REQUEST, STEPS, run_scenario


def irreversible_results(requests: list[dict[str, Any]]) -> list[str]:
    """Each issue_refund result exactly as the model first read it."""
    found: dict[str, str] = {}
    for request in requests:
        names = {
            b["id"]: b["name"] for m in request["messages"] for b in blocks(m) if b.get("type") == "tool_use"
        }
        for message in request["messages"]:
            for block in blocks(message):
                if block.get("type") == "tool_result" and names.get(block["tool_use_id"]) == "issue_refund":
                    found.setdefault(block["tool_use_id"], content_text(block["content"]))
    return list(found.values())


LIMIT = 8_000


@pytest.mark.slow
def test_sixty_steps_stay_valid_bounded_and_remember_what_matters(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    run = run_scenario(simulator, max_context_tokens=LIMIT)
    assert run.sim.rejected == [] and run.sim.errors == []
    assert run.result.stop_reason == "end_turn" and len(run.steps) == STEPS
    summaries = [r for r in run.sim.requests if "tools" not in r]
    assert len(summaries) >= 2, "the run should have compacted more than once"
    assert max(run.prompts) <= 1.2 * LIMIT
    refunds = irreversible_results(run.steps)
    assert len(refunds) == len(REFUND_STEPS)
    last = visible_text(run.steps[-1]["messages"])
    assert REQUEST in last
    for result in refunds:
        assert result in last
    assert "customer" in last  # the memory key is still shown
    assert "page must be >= 1" in visible_text(
        run.steps[BROKEN_PAGE_STEP]["messages"]
    )  # errors reach the model
    purposes = [u.purpose for u in run.result.steps]
    assert purposes.count("summary") == len(summaries) and purposes.count("step") == STEPS


@pytest.mark.slow
def test_without_compaction_the_same_run_outgrows_the_limit(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    """The control: what the 60 steps cost with pruning alone, and with nothing at all."""
    pruned = run_scenario(simulator)
    naive = run_scenario(simulator, keep_recent=0)
    assert max(pruned.prompts) > LIMIT
    assert max(naive.prompts) > 5 * LIMIT
    assert naive.result.usage.prompt > pruned.result.usage.prompt


@pytest.mark.parametrize("steps", [30])
def test_batched_pruning_keeps_the_cache_reading(
    simulator: Callable[..., MessagesSimulator], steps: int
) -> None:
    no_thinking = {"thinking": {"type": "disabled"}}  # pruning's economics alone (thinking: test_today_run)
    every_step = run_scenario(simulator, steps, keep_recent=3, prune_batch=1, **no_thinking)
    batched = run_scenario(simulator, steps, keep_recent=3, prune_batch=4, **no_thinking)
    assert every_step.sim.rejected == [] and batched.sim.rejected == []
    reads = every_step.result.usage.cache_read, batched.result.usage.cache_read
    assert reads[1] > 2 * reads[0], reads
    assert (batched.result.usage.cost_usd or 0) < (every_step.result.usage.cost_usd or 0)


def test_the_context_example_stays_flat_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from examples import e03_context as context

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(context, "ARTIFACTS", str(tmp_path / "artifacts"))  # not the repo's artifacts/
    result = context.main([])
    lines = capsys.readouterr().out.splitlines()
    assert result.stop_reason == "end_turn"
    usage = result.usage.steps
    prompts = [u.prompt for u in usage if u.purpose == "step"]
    assert len(prompts) > context.PAGES
    assert sum(u.purpose == "summary" for u in usage) >= 1
    assert max(prompts) <= context.MAX_CONTEXT_TOKENS
    assert max(prompts[len(prompts) // 2 :]) <= max(prompts[: len(prompts) // 2]) * 1.2  # flat, not growing
    assert "offline" in lines[0]


def test_exact_counts_come_from_the_count_tokens_endpoint_near_the_line(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    run = run_scenario(simulator, 30, max_context_tokens=LIMIT, exact_token_count=True)
    assert run.sim.rejected == [] and run.sim.errors == []
    assert run.sim.count_requests, "count_tokens was never asked"
    assert all("tools" in body and "max_tokens" not in body for body in run.sim.count_requests)
    assert max(run.prompts) <= 1.2 * LIMIT
