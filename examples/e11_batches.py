"""Lesson 11, batches: many runs' model calls sent together through the Message Batches API, at half price.

`BatchLLM` (`agent/ext/batches/`) is one more implementation of the LLM seam (e05): the loop
calls `acreate` as it calls any model. What changes is where the call goes. The calls that
concurrent `agent.arun(...)`s make at about the same time wait `window_s` (0.1 s) for company,
then go out together as one `messages.batches.create`; `BatchLLM` polls the batch until it has
ended, reads its results file and hands each run its own reply, matched by `custom_id`. Each
reply says `usage.service_tier: "batch"`, and the core prices it at half (docs/batches.md).

Here five runs ask for a product each: the model calls `multiply`, then states the result.
A run's next call comes only when its last reply does, so the five runs' first calls make one
batch and their second calls another. The trade is latency for money: a real batch takes
minutes (up to 24 hours), so this is for evaluations and backfills, where nobody waits.
`multiply` is an `async def`: under `arun` it runs on the event loop (a plain `def` runs on a
thread), so the runs come back to the model in the same order each time and the second batch
lists its requests in the same order; with threads it holds the same requests, in any order.

What to look for in the output: `2 batches` for 10 calls (every run's step 1, then every run's
step 2), five answers each in its own run's order although the API does not keep request order,
and the batch total at half of what the same tokens cost at standard prices.

    python -m examples.e11_batches            # on the simulator (or live with ANTHROPIC_API_KEY)
    python -m examples.e11_batches --replay   # from cassettes/examples/e11_batches.yaml
    python -m examples.e11_batches --live     # real batches: expect to wait minutes, polled
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from agent import Agent, RunResult
from agent.ext.batches import BatchLLM
from agent.testing.policies import call, latest_results, prompt_text
from agent.tools import tool
from agent.usage import Usage, cost_of, price_for
from examples._course import Course

EXAMPLE = "e11_batches"  # its cassette: cassettes/examples/e11_batches.yaml
SYSTEM = "Use the multiply tool for every product, then state the result."
QUESTIONS = [f"What is {a} × {b}?" for a, b in ((12, 34), (56, 78), (91, 23), (45, 67), (89, 10))]


@tool
async def multiply(a: int, b: int) -> int:
    """The exact product of two whole numbers.

    Args:
        a: the left factor.
        b: the right factor.
    """
    return a * b


def model(body: dict[str, Any]) -> Any:
    """The scripted model (offline only): call `multiply`, then state what it returned."""
    results = latest_results(body)
    if results:
        return f"{results[0].input['a']} × {results[0].input['b']} = {int(results[0].text):,}"
    a, b = re.findall(r"(\d+) × (\d+)", prompt_text(body))[0]
    return [f"I'll multiply {a} by {b}.", call("multiply", a=int(a), b=int(b))]


def at_standard_prices(steps: Sequence[Usage]) -> float:
    """What the same tokens cost outside a batch: each call repriced at its model's table price."""
    total = 0.0
    for step in steps:
        price = price_for(step.model)
        assert price is not None, f"no price for {step.model}"
        usage = {
            "input_tokens": step.uncached,
            "cache_read_input_tokens": step.cache_read,
            "cache_creation_input_tokens": step.cache_write,
            "cache_creation": {"ephemeral_1h_input_tokens": step.cache_write_1h},
            "output_tokens": step.output,
        }
        total += cost_of(usage, price)
    return total


async def run_all(agent: Agent) -> list[RunResult]:
    """Every run at once, on one event loop: that is what lets their calls share a batch."""
    return await asyncio.gather(*(agent.arun(question) for question in QUESTIONS))


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    # the simulator's clock, stopped: the batches' `created_at`/`ended_at` come out the same each time
    with course.async_client(model, clock=lambda: 0.0) as client:
        llm = BatchLLM(client=client)  # polls every 10 s at first, doubling up to 5 minutes
        agent = Agent(system=SYSTEM, tools=[multiply], llm=llm, max_steps=5, on_event=course.show)
        results = asyncio.run(run_all(agent))
    for result in results:
        print(f"answer: {result.text}")
    steps = [step for result in results for step in result.usage.steps]
    print(f"{len(llm.batches_created)} batches for {len(steps)} calls: {', '.join(llm.batches_created)}")
    course.say(f"run 1, call by call (its {len(results[0].usage.steps)} replies came from batches):")
    course.usage(results[0].usage)
    batch = sum(step.cost_usd or 0.0 for step in steps)
    standard = at_standard_prices(steps)
    print(
        f"total: {len(results)} runs, {len(steps)} calls, ${batch:.4f} at batch prices; "
        f"the same tokens at standard prices: ${standard:.4f} ({batch / standard:.0%} of it)"
    )
    return results[0]


if __name__ == "__main__":
    main()
