"""A 60-step run with large tool results, on the strict simulator, through the real SDK.

The done-when of the history work: zero rejected requests, the largest request
within 1.2 x `max_context_tokens`, and the original request plus every
irreversible result visible to the model at the last step. A second test shows
what batching the pruning buys in cache reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agent import Agent, RunResult, tool
from agent.context.prune import content_text
from agent.memory import Memory
from agent.messages import Msg, blocks
from agent.testing import reply, tool_use
from agent.testing.simulator import MessagesSimulator
from tools import memory_tools

REQUEST = (
    "Audit every page of customer u_88213's order history. Refund each order whose status is "
    "'broken' (one refund per order, never twice), then report the refunded orders and the total."
)
STEPS = 60
REFUND_STEPS = {8: "08-007", 27: "27-011", 46: "46-003"}
BROKEN_PAGE_STEP = 15


@tool(compress=False)  # the history work is under test, not the diet: results stay big
def fetch_orders(page: int) -> str:
    """One page of the customer's order history, as JSON rows.

    Args:
        page: page number, from 1.
    """
    if page < 1:
        raise ValueError(f"page must be >= 1, got {page}")
    rows = [
        {
            "order_id": f"{page:02d}-{i:03d}",
            "item": f"item {i} of page {page}",
            "price": 1000 * (i + page),
            "status": "broken" if i == 7 else "delivered",
            "shipping": {"carrier": "CJ", "hub": "Dongtan-1", "events": ["PICKED", "MOVING", "DELIVERED"]},
        }
        for i in range(24)
    ]
    return json.dumps(rows)


@tool(irreversible=True)
def issue_refund(order_id: str, amount: int) -> dict[str, Any]:
    """Refund one order. Irreversible.

    Args:
        order_id: the order to refund.
        amount: the amount in won.
    """
    return {"refund_id": f"R-{order_id}", "order_id": order_id, "amount": amount, "status": "accepted"}


def scripted_model(steps: int) -> Callable[[dict[str, Any]], Any]:
    """The model's side of the run: what it asks for at each step (counted by requests)."""
    seen = [0]

    def policy(request: dict[str, Any]) -> Any:
        seen[0] += 1
        step = seen[0]
        if step == steps:
            return reply("Refunded 08-007, 27-011 and 46-003.")
        if step == 2:
            return reply(
                "Noting the customer.", tool_use("memory_write", {"key": "customer", "value": "u_88213"})
            )
        if step in REFUND_STEPS:
            order = REFUND_STEPS[step]
            return reply(f"{order} is broken.", tool_use("issue_refund", {"order_id": order, "amount": 8000}))
        if step == BROKEN_PAGE_STEP:
            return reply(tool_use("fetch_orders", {"page": -1}))
        if step % 9 == 0:  # two pages at once
            return reply(
                tool_use("fetch_orders", {"page": step}), tool_use("fetch_orders", {"page": step + 100})
            )
        note = f"Page {step - 1} checked." if step % 4 else f"Notes so far, page {step - 1}: " + "ok; " * 900
        return reply(note, tool_use("fetch_orders", {"page": step}))

    return policy


def summarizer(request: dict[str, Any]) -> Any:
    assert "tools" not in request and "tool_choice" not in request
    return (
        "1. Original request: audit u_88213's orders and refund the broken ones.\n"
        "2. Customer u_88213; pages checked so far have one broken order each at index 007.\n"
        "3. Refunds: see the carried actions.\n"
        "4. Page -1 failed: page must be >= 1.\n"
        "5. Remaining: the rest of the pages, then the report."
    )


@dataclass
class Run:
    result: RunResult
    sim: MessagesSimulator

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [r for r in self.sim.requests if "tools" in r]

    @property
    def prompts(self) -> list[int]:
        return [
            u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
            for u in self.sim.usages
        ]


def run_scenario(simulator: Callable[..., MessagesSimulator], steps: int = STEPS, **options: Any) -> Run:
    sim = simulator(scripted_model(steps), summarizer=summarizer)
    memory = Memory()
    agent = Agent(
        llm=sim.llm(),
        system="You audit order histories and issue refunds. Be exact with ids and amounts.",
        tools=[fetch_orders, issue_refund, *memory_tools(memory)],
        memory=memory,
        allow=["issue_refund"],  # trusted in this test: the approval gate is tested elsewhere
        artifacts_dir=None,
        max_steps=steps,
        **options,
    )
    return Run(agent.run(REQUEST), sim)


def visible(messages: list[Msg]) -> str:
    parts = []
    for message in messages:
        for block in blocks(message):
            if block.get("type") == "text":
                parts.append(block["text"])
            elif block.get("type") == "tool_result":
                parts.append(content_text(block.get("content")))
    return "\n".join(parts)


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
    last = visible(run.steps[-1]["messages"])
    assert REQUEST in last
    for result in refunds:
        assert result in last
    assert "customer" in last  # the memory key is still shown
    assert "page must be >= 1" in visible(run.steps[BROKEN_PAGE_STEP]["messages"])  # errors reach the model
    purposes = [u.purpose for u in run.result.steps]
    assert purposes.count("summary") == len(summaries) and purposes.count("step") == STEPS


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
    every_step = run_scenario(simulator, steps, keep_recent=3, prune_batch=1)
    batched = run_scenario(simulator, steps, keep_recent=3, prune_batch=4)
    assert every_step.sim.rejected == [] and batched.sim.rejected == []
    reads = every_step.result.usage.cache_read, batched.result.usage.cache_read
    assert reads[1] > 2 * reads[0], reads
    assert (batched.result.usage.cost_usd or 0) < (every_step.result.usage.cost_usd or 0)


def test_the_context_example_stays_flat_offline() -> None:
    from examples import context
    from examples._runner import run

    lines: list[str] = []
    outcome = run(context.EXAMPLE, "simulator", out=lines.append)
    assert outcome.ok and outcome.result is not None and outcome.result.stop_reason == "end_turn"
    usage = outcome.result.usage.steps
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
