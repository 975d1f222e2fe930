"""Many agents on one machine: 200 runs at once through `Agent.arun`, 429s injected.

Every run is its own `Agent` with its own tool, and a unique token in its prompt and in
its tool's name and results; all runs share one event loop and one `AsyncAnthropicLLM`
(one connection pool) pointed at the local simulator, with `asyncio.gather` under a
semaphore as the concurrency limit. The simulator answers each run with a few tool
calls, then a final answer quoting what the tool said. While they run, rate limits
(429 with `retry-after: 0.05`) are injected in waves, so runs back off and retry with
`asyncio.sleep` while the others go on.

Cross-talk is any request, result or final answer of one run that carries another
run's token (or not its own): there must be none.

    .venv/bin/python -m benchmarks.concurrency [--runs 200] [--limit 50] [--steps 3]

Prints a table (runs per second, p50/p95 step latency, retries absorbed, peak RSS,
cross-talk) and a last line of JSON: {"runs": N, "completed": N, "cross_talk": N, "runs_per_s": X}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import resource
import statistics
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agent import Agent, AsyncAnthropicLLM, RunResult, tool
from agent.events import Event
from agent.testing import reply, tool_use
from agent.testing.simulator import MessagesSimulator

TOKEN = re.compile(r"tok[0-9a-f]{12}")


def policy(steps: int) -> Any:
    """The simulated model: call the run's own tool `steps` times, then answer with its results."""

    def answer(body: dict[str, Any]) -> Any:
        name = body["tools"][0]["name"]
        said = [
            block["content"]
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        if len(said) < steps:
            return reply(tool_use(name, {"key": f"k{len(said)}"}))
        return reply("done: " + "; ".join(str(s) for s in said))

    return answer


@dataclass
class Run:
    """One run's token, the agent that carries it, and what it measured."""

    token: str
    agent: Agent
    step_seconds: list[float] = field(default_factory=list)
    result: RunResult | None = None
    error: str | None = None


def make_run(llm: AsyncAnthropicLLM) -> Run:
    token = "tok" + uuid.uuid4().hex[:12]

    @tool(name=f"lookup_{token}")
    async def lookup(key: str) -> str:
        """Look a key up in this run's store.

        Args:
            key: what to look up.
        """
        await asyncio.sleep(0.01)  # a little I/O
        return f"{token}:{key}"

    run = Run(token, Agent(llm=llm, tools=[lookup], artifacts_dir=None, model_retries=8))
    started: dict[int, float] = {}

    def on_event(event: Event) -> None:
        if event.kind == "step_start":
            started[event.step] = time.monotonic()
        elif event.kind == "step_end":
            run.step_seconds.append(time.monotonic() - started[event.step])

    run.agent.on_event = on_event
    return run


async def drive(runs: list[Run], limit: int) -> None:
    gate = asyncio.Semaphore(limit)

    async def one(run: Run) -> None:
        async with gate:
            try:
                run.result = await run.agent.arun(f"Audit the store of run {run.token}.")
            except Exception as error:  # counted as not completed
                run.error = f"{type(error).__name__}: {error}"

    await asyncio.gather(*(one(run) for run in runs))


async def rate_limits(sim: MessagesSimulator, runs: list[Run], stop: asyncio.Event, waves: int) -> int:
    """Every half second, a wave of 429s for whichever requests come next: one for every
    fifth unfinished run, at most ten (so the last few runs are not all that is left to
    hit); returns how many were injected."""
    injected = 0
    for _ in range(waves):
        wave = min(10, sum(run.result is None and run.error is None for run in runs) // 5)
        if wave:
            sim.inject(status=429, retry_after=0.05, times=wave)
        injected += wave
        try:
            await asyncio.wait_for(stop.wait(), timeout=0.5)
            break
        except asyncio.TimeoutError:
            continue
    return injected


def cross_talk(runs: list[Run], sim: MessagesSimulator, steps: int) -> int:
    """Requests, histories and answers that carry a token other than exactly their run's own
    (an answer must quote its own tool's `steps` results)."""
    bad = sum(len(set(TOKEN.findall(json.dumps(body)))) != 1 for body in sim.requests)
    for run in runs:
        if run.result is None:
            continue
        in_history = set(TOKEN.findall(json.dumps(run.result.messages)))
        in_answer = TOKEN.findall(run.result.text)
        bad += in_history != {run.token} or in_answer != [run.token] * steps
    return bad


async def main(count: int, limit: int, steps: int) -> dict[str, Any]:
    with MessagesSimulator(policy(steps)) as sim:
        llm = AsyncAnthropicLLM(base_url=sim.base_url, api_key="sim", max_retries=0)
        runs = [make_run(llm) for _ in range(count)]
        stop = asyncio.Event()
        injector = asyncio.create_task(rate_limits(sim, runs, stop, waves=20))
        started = time.monotonic()
        await drive(runs, limit)
        elapsed = time.monotonic() - started
        stop.set()
        injected = await injector
        talk = cross_talk(runs, sim, steps)
        rejected = len(sim.rejected)
        requests = len(sim.requests)
    completed = sum(run.result is not None and run.result.stop_reason == "end_turn" for run in runs)
    latencies = sorted(s for run in runs for s in run.step_seconds)
    p50 = statistics.median(latencies) if latencies else 0.0
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else 0.0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        ("runs (concurrency limit)", f"{count} ({limit})"),
        ("completed", f"{completed}"),
        ("wall time", f"{elapsed:.2f} s"),
        ("runs per second", f"{count / elapsed:.1f}"),
        ("model steps", f"{len(latencies)}"),
        ("step latency p50 / p95", f"{p50 * 1000:.0f} ms / {p95 * 1000:.0f} ms"),
        ("requests (429s injected, retried)", f"{requests} ({injected}, {requests - len(latencies)})"),
        ("requests rejected by the simulator", f"{rejected}"),
        ("peak RSS", f"{peak_mb:.0f} MB"),
        ("cross-talk", f"{talk}"),
    ]
    for name, value in rows:
        print(f"{name:<38} {value}")
    for run in runs:
        if run.error:
            print(f"failed run {run.token}: {run.error}")
    return {
        "runs": count,
        "completed": completed,
        "cross_talk": talk,
        "runs_per_s": round(count / elapsed, 1),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--steps", type=int, default=3)
    options = parser.parse_args()
    logging.getLogger("agent").setLevel(logging.ERROR)  # one warning per retry: counted instead
    print(json.dumps(asyncio.run(main(options.runs, options.limit, options.steps))))
