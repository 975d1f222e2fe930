"""Pruning priced as a cache rewrite: results read once are never cached, the opening is rewritten once."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent import Agent, tool
from agent.context.cache import count_breakpoints, mark_breakpoints
from agent.context.history import worth_pruning
from agent.context.prune import is_stub, prune, pruned_next_step
from agent.messages import Msg
from agent.testing.policies import call
from agent.testing.simulator import MessagesSimulator

BIG = "x" * 2000
MODEL = "claude-sonnet-4-6"  # caches from 1,024 tokens


def turn(i: int, content: str = BIG, name: str = "search") -> list[Msg]:
    use = {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"q": i}}
    result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": content}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


def history(*turns: list[Msg], opening: str = "find it") -> list[Msg]:
    first: Msg = {"role": "user", "content": [{"type": "text", "text": opening}]}
    return [first, *(m for t in turns for m in t)]


def size(messages: Sequence[Msg]) -> int:
    return len(json.dumps(list(messages))) // 4


def cacheable(messages: Sequence[Msg]) -> bool:
    """A model that caches from 1,000 tokens of history."""
    return size(messages) >= 1000


def never(name: str) -> bool:
    return False


# -- which turn the next step stubs ---------------------------------------------------------


def test_with_one_result_kept_the_next_step_stubs_the_newest_turn() -> None:
    assert pruned_next_step(history(turn(0), turn(1)), 1, 1, never)
    assert not pruned_next_step(history(turn(0), turn(1)), 2, 1, never)  # kept one more step
    assert not pruned_next_step(history(turn(0)), 1, 3, never)  # a batch of three is not due
    assert not pruned_next_step(history(turn(0, name="refund")), 1, 1, "refund".__eq__)  # protected
    assert not pruned_next_step(history(turn(0, content="ok")), 1, 1, never)  # shorter than a stub
    assert not pruned_next_step(history(), 1, 1, never)  # no result at all


def test_a_turn_the_next_step_stubs_gets_no_breakpoint_the_turn_before_it_does() -> None:
    messages = history(turn(0), turn(1))
    marked = mark_breakpoints({"system": "s", "messages": messages}, newest_pruned=True)["messages"]
    assert "cache_control" not in marked[-1]["content"][-1]
    assert marked[-2]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    plain = mark_breakpoints({"system": "s", "messages": messages})["messages"]
    assert plain[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert count_breakpoints({"system": [{"type": "text", "text": "s"}], "messages": marked}) <= 4
    assert messages[-1]["content"][-1].get("cache_control") is None  # the caller's history untouched


# -- when a batch is worth its rewrite ---------------------------------------------------------


def test_a_batch_inside_an_uncacheable_opening_waits_unless_it_is_the_last_or_frees_more_than_it_writes() -> (
    None
):
    floor = 1000

    def left(before: list[Msg], after: list[Msg]) -> int:
        """What the batch leaves, up to the last turn it rewrites."""
        return size(
            after[: max(i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a is not b) + 1]
        )

    early = history(turn(0), turn(1))
    pruned = prune(early, keep_recent=1)
    assert size(early[:2]) < floor and left(early, pruned) < floor
    assert size(early) - size(pruned) < size(pruned)  # frees less than it rewrites
    assert pruned != early and not worth_pruning(early, pruned, cacheable, size)
    # many small results: what the batch leaves reaches the minimum, so no batch after it starts inside
    many = history(*(turn(i, content="z" * 150) for i in range(30)))
    pruned = prune(many, keep_recent=1)
    assert left(many, pruned) >= floor and size(many) - size(pruned) < size(pruned)
    assert worth_pruning(many, pruned, cacheable, size)
    # a few big results: the batch frees more than it writes again
    big = history(*(turn(i) for i in range(4)))
    pruned = prune(big, keep_recent=1)
    assert left(big, pruned) < floor and size(big) - size(pruned) >= size(pruned)
    assert worth_pruning(big, pruned, cacheable, size)


def test_a_batch_past_the_minimum_always_goes_and_no_change_is_always_fine() -> None:
    opening = "context " * 1000  # the opening alone is cacheable
    messages = history(turn(0), turn(1), opening=opening)
    pruned = prune(messages, keep_recent=1)
    assert pruned != messages and worth_pruning(messages, pruned, cacheable, size)
    assert worth_pruning(messages, list(messages), cacheable, size)


# -- on the simulator: what the defaults pay ----------------------------------------------------


@tool
def fetch(page: int) -> list[dict[str, Any]]:
    """One page of records.

    Args:
        page: page number, from 1.
    """
    return [{"id": f"r-{page}-{i}", "body": f"record {i} of page {page} " * 8} for i in range(80)]


SHORT_SYSTEM = "You read records and report on them. " * 75
"""With the tools, an opening of about 800 tokens: shorter than the model caches."""
LONG_SYSTEM = SHORT_SYSTEM * 2


def run(steps: int, system: str = LONG_SYSTEM, **options: Any) -> list[dict[str, Any]]:
    """The usage billed for each call of a default agent that fetches one page per step."""
    counter = itertools.count(1)

    def policy(body: dict[str, Any]) -> Any:
        step = next(counter)
        return [f"Step {step}.", call("fetch", page=step)] if step <= steps else "done"

    clock = itertools.count(0.0, 6.0)
    with MessagesSimulator(policy, clock=lambda: next(clock)) as sim:
        settings: dict[str, Any] = {"artifacts_dir": None, **options}
        agent = Agent(
            llm=sim.llm(), model=MODEL, system=system, tools=[fetch], max_steps=steps + 1, **settings
        )
        agent.run("Read every page.")
        return list(sim.usages)


def test_by_default_each_result_is_sent_once_uncached_and_never_written_to_the_cache() -> None:
    usages = run(16)
    view = 250  # a compressed page is well over this many tokens
    steady = usages[2:-1]
    assert all(u["input_tokens"] >= view for u in steady), [u["input_tokens"] for u in steady]
    assert all(u["cache_creation_input_tokens"] < view for u in steady)
    assert all(u["cache_read_input_tokens"] > 0 for u in steady)
    # the older placement writes each newest result into the cache, and reads it never
    kept = run(16, keep_recent=3, prune_batch=4)
    assert sum(u["cache_creation_input_tokens"] for u in kept) > 2 * sum(
        u["cache_creation_input_tokens"] for u in usages
    )


def test_by_default_an_uncacheable_opening_is_rewritten_once_not_at_every_early_step() -> None:
    # results of ~400 tokens each, as drawn: at ~490 (a full 2,000-char view) the fourth batch
    # frees as much as it rewrites and goes (`worth_pruning`), then a last one: two rewrites
    usages = run(16, SHORT_SYSTEM, compress_threshold=1_600)
    misses = [n for n, u in enumerate(usages, 1) if n > 2 and u["cache_read_input_tokens"] == 0]
    assert len(misses) == 1, misses


def test_by_default_the_model_reads_each_result_whole_once_then_its_stub(tmp_path: Path) -> None:
    counter = itertools.count(1)
    with MessagesSimulator(
        lambda body: [call("fetch", page=next(counter))] if len(body["messages"]) < 9 else "done"
    ) as sim:
        Agent(
            llm=sim.llm(), model=MODEL, system=LONG_SYSTEM, tools=[fetch], max_steps=8, artifacts_dir=tmp_path
        ).run("go")
        last = sim.requests[-1]["messages"]
    results = [b for m in last if m["role"] == "user" for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 4
    assert all(is_stub(b["content"]) for b in results[:-1]) and not is_stub(results[-1]["content"])
    assert all(
        re.fullmatch(r"\[pruned: [\d,]+ chars; full: artifact:fetch-[0-9a-f]+\.json\]", b["content"])
        for b in results[:-1]
    )
