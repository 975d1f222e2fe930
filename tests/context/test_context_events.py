"""Pruning and compaction report themselves through `on_event`: which results, the summary, tokens."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agent import Agent, Event, tool
from agent.testing.scripted_llm import ScriptedLLM, reply, tool_use
from agent.usage import Usage

SUMMARY = "1. Request: read pages.\n2. Pages read so far.\n3. none\n4. none\n5. More pages."
PAGES = 14


@tool(compress=False)
def page(n: int) -> str:
    """One long page.

    Args:
        n: the page number.
    """
    return f"page {n}: " + "lorem ipsum dolor " * 120


def reader() -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Reads pages 1..PAGES, one per step, then answers; summary calls get SUMMARY."""
    asked = [0]

    def model(request: Mapping[str, Any]) -> dict[str, Any]:
        if "tools" not in request:  # the compaction's tool-less summary call
            return reply(SUMMARY)
        if asked[0] == PAGES:
            return reply("All pages read.")
        asked[0] += 1
        return reply(f"Page {asked[0]}.", tool_use("page", {"n": asked[0]}))

    return model


def run(**options: Any) -> tuple[list[Event], ScriptedLLM]:
    events: list[Event] = []
    llm = ScriptedLLM([reader()] * 40)
    options.setdefault("cache", False)  # ScriptedLLM caches nothing: no batch waits on the cache minimum
    agent = Agent(llm=llm, tools=[page], on_event=events.append, artifacts_dir=None, max_steps=30, **options)
    result = agent.run("Read the pages.")
    assert result.text == "All pages read."
    return events, llm


def test_each_prune_names_the_newly_stubbed_results_once_with_tokens_before_and_after() -> None:
    events, _ = run(keep_recent=2, prune_batch=2)
    prunes = [e for e in events if e.kind == "prune"]
    assert prunes[0].pruned == ("page(n=1)", "page(n=2)")
    named = [call for e in prunes for call in e.pruned]
    assert named == [f"page(n={n})" for n in range(1, len(named) + 1)]  # each once, oldest first
    assert len(named) == PAGES - 2 - (PAGES - 2) % 2
    assert all(0 < e.tokens_after < e.tokens_before for e in prunes)
    assert all("newest 2" in e.text for e in prunes)


def test_each_compaction_carries_its_summary_and_how_much_it_folded() -> None:
    events, llm = run(keep_recent=0, max_context_tokens=4_000)
    compactions = [e for e in events if e.kind == "compact"]
    summary_calls = [r for r in llm.requests if "tools" not in r]
    assert len(compactions) == len(summary_calls) >= 1
    for event in compactions:
        assert event.text == SUMMARY and event.folded > 0
        assert event.tokens_after < event.tokens_before
    first = compactions[0]
    after = next(r for r in llm.requests[llm.requests.index(summary_calls[0]) + 1 :])
    assert (
        SUMMARY in "".join(b["text"] for b in after["messages"][0]["content"])
        and len(after["messages"]) < first.folded
    )
    kinds = [(e.kind, e.step) for e in events if e.kind in ("step_start", "compact", "step_end")]
    at = kinds.index(("compact", first.step))
    assert kinds[at - 1] == ("step_start", first.step) and kinds[at + 1] == ("step_end", first.step)


def test_nothing_is_reported_when_nothing_changed() -> None:
    events, _ = run(keep_recent=0)
    assert not [e for e in events if e.kind in ("prune", "compact")]


def test_the_usage_line_labels_the_step_hit_rate_and_the_running_one_apart() -> None:
    record = Usage(
        3, "claude-opus-5", None, uncached=100, cache_read=300, cache_write=100, output=5, cost_usd=0.01
    )
    assert record.hit_ratio == 0.6
    assert "step_hit=60% run_hit=25%" in record.line(0.25)
    assert record.line().endswith("step_hit=60%")


def test_with_compaction_on_a_prune_event_reads_the_steps_own_measure_of_its_request() -> None:
    """Compaction measures the pruned request anyway; the event reuses that measure (less the
    request's fixed part) instead of encoding the whole history again, and says the same."""
    from agent.context.tokens import Calibration

    measured: list[int] = []

    class Counting(Agent):
        def measure(self, state: Any, candidate: Any) -> int:
            measured.append(len(candidate))
            return super().measure(state, candidate)

    events: list[Event] = []
    llm = ScriptedLLM([reader()] * 40)
    agent = Counting(
        llm=llm,
        tools=[page],
        on_event=events.append,
        artifacts_dir=None,
        max_steps=30,
        cache=False,
        keep_recent=2,
        prune_batch=2,
        max_context_tokens=200_000,
        system="You read pages. " * 300,  # a fixed part the history's figure must leave out
    )
    result = agent.run("Read the pages.")
    prunes = [e for e in events if e.kind == "prune"]
    assert len(prunes) >= 3
    sent = {
        e.step: r for e, r in zip([e for e in events if e.kind == "step_start"], llm.requests, strict=True)
    }
    for event in prunes:  # the request of the pruning step holds the pruned history
        history = sent[event.step]["messages"]
        assert abs(event.tokens_after - Calibration().estimate(history)) <= 0.02 * event.tokens_after
        assert 0 < event.tokens_after < event.tokens_before
    steps = len(llm.requests)
    assert sum(1 for n in measured if n > 0) == steps  # one whole-history measure a step, shared
    assert result.text == "All pages read."
