"""History economics: one 60-step audit with large results, under each history setting.

The scenario of `tests/core/test_long_run.py` (which imports it from here): a model pages
through a customer's orders (~1,400 tokens a page, two pages at once every 9th step,
a long note every 4th), issues three irreversible refunds, and hits one failing
call. Caching is on throughout; dollars at Opus 5 prices, summaries included.

    .venv/bin/python -m benchmarks.history
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agent import Agent, RunResult, tool
from agent.ext.approval import Approval
from agent.memory import Memory
from agent.testing import reply, tool_use
from agent.testing.simulator import MessagesSimulator
from agent.testing.validate import validate_request
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
        extensions=[Approval(allow=["issue_refund"])],  # trusted here: the gate is tested elsewhere
        artifacts_dir=None,
        max_steps=steps,
        **options,
    )
    return Run(agent.run(REQUEST), sim)


CONFIGS: dict[str, dict[str, Any]] = {
    "no pruning, no compaction": {"keep_recent": 0},
    "pruning, keep_recent=3, prune_batch=1": {"keep_recent": 3, "prune_batch": 1},
    "pruning, keep_recent=3, prune_batch=4": {"keep_recent": 3, "prune_batch": 4},
    "pruning, defaults (keep_recent=1, prune_batch=1)": {},
    "pruning + compaction at 8,000": {"max_context_tokens": 8_000},
    "compaction at 8,000 only": {"keep_recent": 0, "max_context_tokens": 8_000},
}


@contextlib.contextmanager
def simulators() -> Iterator[Callable[..., MessagesSimulator]]:
    """A factory of started simulators, all stopped on exit (what the test fixture gives)."""
    with contextlib.ExitStack() as stack:
        yield lambda *args, **kwargs: stack.enter_context(MessagesSimulator(*args, **kwargs))


def main() -> None:
    print(f"### History economics: {STEPS} steps, caching on, claude-opus-5\n")
    print("| run | rejected | summaries | largest prompt | all prompts | cache read | cache write | $ |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    growth: dict[str, list[int]] = {}
    for name, options in CONFIGS.items():
        with simulators() as make:
            run = run_scenario(make, **options)
            growth[name] = [u.prompt for u in run.result.usage.steps if u.purpose == "step"]
            rejected = sum(1 for body in run.sim.requests if validate_request(body))
            usage = run.result.usage
            summaries = sum(1 for u in usage.steps if u.purpose == "summary")
            print(
                f"| {name} | {rejected} | {summaries} | {max(run.prompts):,} | {usage.prompt:,} | "
                f"{usage.cache_read:,} | {usage.cache_write:,} | {usage.cost_usd or 0:.2f} |"
            )
    marks = [1, 10, 20, 30, 40, 50, 60]
    print("\nPrompt tokens of the step's request:\n")
    print("| run | " + " | ".join(f"step {m}" for m in marks) + " |")
    print("|---|" + "--:|" * len(marks))
    for name, prompts in growth.items():
        print(f"| {name} | " + " | ".join(f"{prompts[m - 1]:,}" for m in marks) + " |")


if __name__ == "__main__":
    main()
