"""A short run of the token-economics benchmark: the levers order as they should, on the simulator.

The full benchmark (`python -m benchmarks.economics`, 80 steps) prints the tables of the
README; this 12-step version checks what must hold at any length: every configuration
makes the same calls and gets no request rejected, each lever is cheaper than the naive
loop, all of them together is the cheapest, and the cached runs do read the cache.
"""

from __future__ import annotations

import pytest

from benchmarks import economics
from benchmarks.economics import Outcome

STEPS = 12


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    return {o.name: o for o in economics.run_all(STEPS)}


def test_every_configuration_runs_the_same_scenario_cleanly(outcomes: dict[str, Outcome]) -> None:
    assert list(outcomes) == list(economics.CONFIGS)
    calls = {name: [u.tools for u in o.result.steps if u.purpose == "step"] for name, o in outcomes.items()}
    assert all(c == calls["naive"] for c in calls.values())
    for o in outcomes.values():
        assert o.rejected == 0 and o.errors == 0
        assert o.result.stop_reason == "end_turn" and o.result.text.startswith("Audit done")
        assert sum(u.tools.count("issue_refund") for u in o.result.steps) == 1
        kinds = {name for u in o.result.steps for name in u.tools}
        assert {"search_orders", "http_get", "fetch_page", "run_tests", "get_order"} <= kinds


def test_each_lever_costs_less_than_naive_and_all_together_least(outcomes: dict[str, Outcome]) -> None:
    cost = {name: o.result.usage.cost_usd or 0.0 for name, o in outcomes.items()}
    naive = cost.pop("naive")
    everything = cost.pop("all")
    assert all(c < naive for c in cost.values()), cost
    assert everything < min(cost.values())
    assert everything < 0.2 * naive


def test_cached_runs_read_the_cache_and_uncached_ones_never_touch_it(outcomes: dict[str, Outcome]) -> None:
    for name in ("+caching", "all"):
        steps = [u for u in outcomes[name].result.steps if u.purpose == "step"]
        assert steps[0].cache_read == 0 and steps[0].cache_write > 0
        assert all(u.cache_read > 0 for u in steps[1:]), name
    for name in ("naive", "+diet", "+pruning", "+compaction"):
        usage = outcomes[name].result.usage
        assert usage.cache_read == usage.cache_write == 0, name


def test_summaries_are_billed_and_counted(outcomes: dict[str, Outcome]) -> None:
    compaction = outcomes["+compaction"]
    assert compaction.summaries >= 1
    summary_cost = sum(u.cost_usd or 0.0 for u in compaction.result.steps if u.purpose == "summary")
    assert summary_cost > 0
    assert compaction.cost_at(STEPS) == pytest.approx(compaction.result.usage.cost_usd)
    assert compaction.requests == len(compaction.result.steps)


def test_the_tables_show_every_configuration(outcomes: dict[str, Outcome]) -> None:
    printed = economics.tables(list(outcomes.values()), STEPS)
    for name in economics.CONFIGS:
        assert f"| {name} |" in printed
    assert f"Rejected requests: 0 of {sum(o.requests for o in outcomes.values())}" in printed
