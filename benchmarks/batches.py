"""Bulk runs at half price: 200 short agent runs through the Message Batches API vs live.

Each run is the same small job with its own numbers: "What is N × M?", answered by the
simulator's `arithmetic` model in two model calls (a `calculator` call, then the answer). The
same 200 runs go once live (`AsyncAnthropicLLM`, every call its own `POST /v1/messages`,
`asyncio.gather` under a semaphore of `--limit`: the simulator's loopback server queues only a
few connections, and past ~10 at once some are refused, retried and booked as possibly billed,
which the `calls` column would show) and once through `BatchLLM` (the calls of all
runs gathered into one batch per step), both against the strict local simulator, on the same
model and prices. Dollars are what the simulator billed, priced by `agent.usage` (the batch
replies report `service_tier: "batch"` and cost half).

Wall time, two ways, as the simulator answers instantly:

- measured: real seconds on this machine, the framework and loopback HTTP only;
- modeled: the waiting a real deployment would see. Batches: the simulator's injectable clock,
  where each batch takes `--batch-s` (default 300 s; the docs say most batches finish within
  an hour) and `BatchLLM` polls with backoff from `--poll-s`, its sleeps moving that clock (so
  it includes the polling's overshoot). Live: every run's calls one after another at
  `--call-s` each (default 2 s, an assumption, not a measurement), `--limit` runs at a time.

    python -m benchmarks.batches [--runs 200] [--limit 10] [--batch-s 300] [--poll-s 30] [--call-s 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import anthropic

from agent import Agent, AsyncAnthropicLLM, RunResult
from agent.ext.batches import BatchLLM
from agent.testing.policies import arithmetic
from agent.testing.simulator import MessagesSimulator
from tools.basic import calculator

MODEL = "claude-sonnet-4-6"


class Clock:
    """The simulator's clock, moved only by `BatchLLM`'s poll sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


@dataclass
class Row:
    mode: str
    runs: int
    correct: int
    calls: int
    batches: int
    dollars: float
    measured_s: float
    modeled_s: float


def prompts(runs: int) -> list[tuple[str, str]]:
    """(prompt, the answer it must get): each run its own numbers."""
    return [(f"What is {n + 12} * {n + 7}?", f"{(n + 12) * (n + 7):,}") for n in range(runs)]


async def gather(agent: Agent, jobs: list[tuple[str, str]], limit: int) -> list[RunResult]:
    gate = asyncio.Semaphore(limit)

    async def one(prompt: str) -> RunResult:
        async with gate:
            return await agent.arun(prompt)

    return await asyncio.gather(*(one(p) for p, _ in jobs))


def row(mode: str, results: list[RunResult], jobs: list[tuple[str, str]], **rest: Any) -> Row:
    correct = sum(1 for r, (_, answer) in zip(results, jobs, strict=True) if r.text.endswith(answer))
    calls = sum(len(r.usage.steps) for r in results)
    dollars = sum(r.usage.cost_usd or 0.0 for r in results)
    return Row(mode, len(results), correct, calls, dollars=dollars, **rest)


def live(runs: int, limit: int, call_s: float) -> Row:
    jobs = prompts(runs)
    with MessagesSimulator(arithmetic) as sim:
        llm = AsyncAnthropicLLM(base_url=sim.base_url, api_key="sim", max_retries=2)
        agent = Agent(llm=llm, tools=[calculator], model=MODEL)
        started = time.perf_counter()
        results = asyncio.run(gather(agent, jobs, limit))
        measured = time.perf_counter() - started
    waves = -(-runs // limit)  # the semaphore lets `limit` runs go at a time
    modeled = waves * max(len(r.usage.steps) for r in results) * call_s
    return row("live", results, jobs, batches=0, measured_s=measured, modeled_s=modeled)


def batched(runs: int, batch_s: float, poll_s: float) -> Row:
    jobs = prompts(runs)
    clock = Clock()
    with MessagesSimulator(arithmetic, clock=clock) as sim:
        sim.batches.processing_s = batch_s
        client = anthropic.AsyncAnthropic(base_url=sim.base_url, api_key="sim")
        llm = BatchLLM(client=client, poll_s=poll_s, max_poll_s=max(poll_s, batch_s / 2), sleep=clock.sleep)
        agent = Agent(llm=llm, tools=[calculator], model=MODEL)
        started = time.perf_counter()
        results = asyncio.run(gather(agent, jobs, runs))  # no limit: a batch has room for all
        measured = time.perf_counter() - started
        count = sim.batches.creates
    return row("batches", results, jobs, batches=count, measured_s=measured, modeled_s=clock.now)


def table(rows: list[Row]) -> str:
    head = (
        f"{'mode':<8} {'runs':>5} {'correct':>7} {'calls':>6} {'batches':>7} {'$ total':>9} "
        f"{'$ / run':>9} {'measured s':>10} {'modeled wall':>12}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        modeled = f"{r.modeled_s / 60:.1f} min" if r.modeled_s >= 120 else f"{r.modeled_s:.0f} s"
        lines.append(
            f"{r.mode:<8} {r.runs:>5} {r.correct:>7} {r.calls:>6} {r.batches:>7} {r.dollars:>9.4f} "
            f"{r.dollars / r.runs:>9.6f} {r.measured_s:>10.2f} {modeled:>12}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10, help="live runs at a time")
    parser.add_argument("--batch-s", type=float, default=300.0, help="modeled seconds one batch takes")
    parser.add_argument("--poll-s", type=float, default=30.0, help="BatchLLM's first poll wait")
    parser.add_argument("--call-s", type=float, default=2.0, help="modeled seconds of one live call")
    args = parser.parse_args(argv)
    rows = [live(args.runs, args.limit, args.call_s), batched(args.runs, args.batch_s, args.poll_s)]
    print(f"{args.runs} runs of 'What is N * M?' (calculator, then the answer) on {MODEL}, on the simulator")
    print(table(rows))
    ratio = rows[1].dollars / rows[0].dollars if rows[0].dollars else float("nan")
    summary = {
        "runs": args.runs,
        "live_usd": round(rows[0].dollars, 6),
        "batch_usd": round(rows[1].dollars, 6),
        "batch_over_live": round(ratio, 4),
        "batches": rows[1].batches,
        "correct": [rows[0].correct, rows[1].correct],
    }
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
