"""Framework overhead per step, as a ratio to the time it takes to JSON-encode the request.

Milliseconds depend on the machine; a ratio measured in the same run does not (much).
For each history size (50, 200 and 1,000 messages, built from realistic tool results and
pruned the way a long run would have pruned them) the agent runs a few more steps
against an in-process model that answers instantly. Per step:

* **framework time**: everything the loop does between two `step_start` events (shrink
  the history, build and mark the request, budgets, book the answer, calibration, cache
  guard, run the tool, render its result), minus the model call itself;
* **encode time**: `json.dumps` of that step's request body, the way httpx encodes it
  (`ensure_ascii=False`, compact separators, UTF-8), timed inside the fake model and
  therefore not part of the framework time.

The agent is configured as a long run would be: caching on, pruning as by default (a stub
a step), `max_context_tokens` set (so every step measures the request for compaction),
a cost budget (so every step estimates the request), the diet storing artifacts in a
temporary folder.

    .venv/bin/python -m benchmarks.overhead                 # the table, then one JSON line
    .venv/bin/python -m benchmarks.overhead --breakdown 200 # each bookkeeping step's share
    .venv/bin/python -m benchmarks.overhead --profile 200   # cProfile of a run at 200
    .venv/bin/python -m benchmarks.overhead --cpu           # also in CPU time (a busy machine)

The tool's own time stays inside the framework time, so the tool is made trivial: its pages
are computed before the run (`page_json`), and a call is a dictionary lookup of ~1 us. (Building
and encoding a page inside the call took ~180 us, more than half the encode time at 200
messages: the tool's work, not the framework's.) So `run_tools` in the breakdown is the dispatch
(the worker thread, validation, the outcome), not the tool. The breakdown averages over every
step of a run, the cold first one included (where the run's `Sizes` encode every message), and every garbage
collection, so it reads higher than the table (medians).

Last line: `{"ratio_at_200": X, "ratio_at_1000": Y}` (median framework time / median
encode time; at or below 1.0 the bookkeeping costs no more than encoding the body).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import inspect
import itertools
import json
import pstats
import statistics
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from anthropic.types import Message

from agent import Agent, tool
from agent.context.prune import prune
from agent.events import Event

SIZES = (50, 200, 1000)
STEPS = 12
"""Measured steps per run (after `WARMUP`)."""
WARMUP = 2
RUNS = 3


def _rows(page: int) -> list[dict[str, Any]]:
    return [
        {
            "order_id": f"{page:03d}-{i:03d}",
            "item": f"item {i} of page {page}",
            "price": 1000 * (i + page),
            "status": "broken" if i == 7 else "delivered",
            "shipping": {"carrier": "CJ", "hub": "Dongtan-1", "events": ["PICKED", "MOVING", "DELIVERED"]},
        }
        for i in range(16)
    ]


@functools.cache
def page_json(page: int) -> str:
    """The JSON text of one page (~2.5k chars), computed once per page: see `one_run`."""
    return json.dumps(_rows(page))


@tool(compress=False)
def fetch_orders(page: int) -> str:
    """One page of the customer's order history, as JSON rows.

    Args:
        page: page number, from 1.
    """
    return page_json(page)


@tool
def lookup_customer(customer_id: str, include_notes: bool = False) -> dict[str, Any]:
    """A customer's profile.

    Args:
        customer_id: the customer's id, e.g. u_88213.
        include_notes: also return the support notes.
    """
    notes = ["called twice"] if include_notes else []
    return {"id": customer_id, "name": "Kim", "tier": "gold", "notes": notes}


def history(size: int) -> list[dict[str, Any]]:
    """`size` messages: a request, tool call/result pairs with ~2.5k-char JSON results, and a
    final answer; pruned as a run with keep_recent=3 would have left it."""
    pairs = (size - 2) // 2
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Audit customer u_88213's orders."}]
    for k in range(1, pairs + 1):
        call_id = f"toolu_h{k:05d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading page {k} of the order history next."},
                    {"type": "tool_use", "id": call_id, "name": "fetch_orders", "input": {"page": k}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": page_json(k)}],
            }
        )
    final = {"type": "text", "text": "Pages read; no refund due."}
    messages.append({"role": "assistant", "content": [final]})
    return prune(messages, 3, batch=1)


class InstantModel:
    """Answers at once: a tool call per step, then a final answer. Times its own work and the
    encoding of each request (both are left out of the framework's time)."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls = 0
        self.llm_seconds = 0.0
        self.llm_cpu = 0.0
        self.encode: list[float] = []
        self.encode_cpu: list[float] = []

    def create(self, request: Mapping[str, Any]) -> Message:
        started, started_cpu = time.perf_counter(), time.process_time()
        body = {k: v for k, v in request.items() if k != "betas"}
        t0, c0 = time.perf_counter(), time.process_time()
        json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self.encode.append(time.perf_counter() - t0)
        self.encode_cpu.append(time.process_time() - c0)
        self.calls += 1
        if self.calls < self.steps:
            name, args = (
                ("lookup_customer", {"customer_id": "u_88213"})
                if self.calls % 5 == 0
                else ("fetch_orders", {"page": 500 + self.calls})
            )
            content: list[dict[str, Any]] = [
                {"type": "text", "text": "Next page."},
                {"type": "tool_use", "id": f"toolu_s{self.calls:04d}", "name": name, "input": args},
            ]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "Done: nothing to refund."}], "end_turn"
        message = Message.model_validate(
            {
                "id": f"msg_{self.calls:04d}",
                "type": "message",
                "role": "assistant",
                "model": request["model"],
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 50,
                    "cache_read_input_tokens": 20_000,
                    "cache_creation_input_tokens": 1_000,
                    "output_tokens": 40,
                },
            }
        )
        self.llm_seconds += time.perf_counter() - started
        self.llm_cpu += time.process_time() - started_cpu
        return message


PARTS = ("prepare_context", "build_request", "run_tools", "rendered", "append")
"""Agent methods timed by `--breakdown` (plus `book_answer`, what an answer leaves in the books)."""


def timed_agent(seconds: dict[str, float]) -> type[Agent]:
    """An Agent whose bookkeeping methods add their time to `seconds` (for `--breakdown`)."""

    def wrap(name: str) -> Any:
        method = getattr(Agent, name)

        def timed(self: Agent, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started

        async def timed_async(self: Agent, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await method(self, *args, **kwargs)
            finally:
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started

        return timed_async if inspect.iscoroutinefunction(method) else timed

    return type("TimedAgent", (Agent,), {name: wrap(name) for name in PARTS})


def one_run(
    size: int,
    artifacts: str,
    profiler: cProfile.Profile | None = None,
    agent_class: type[Agent] = Agent,
    cpu: bool = False,
) -> list[tuple[float, float]]:
    """(framework seconds, encode seconds) for each measured step of one run: wall-clock time,
    or with `cpu` the CPU time of the whole process (worker threads included; time spent
    waiting for the machine's other work left out)."""
    model = InstantModel(WARMUP + STEPS + 1)
    marks: list[tuple[float, float]] = []  # (clock, model seconds so far) at each step start

    def on_event(event: Event) -> None:
        if event.kind == "step_start":
            marks.append(
                (time.process_time(), model.llm_cpu) if cpu else (time.perf_counter(), model.llm_seconds)
            )

    agent = agent_class(
        model="claude-opus-5",
        system="You audit customer orders. Refund only broken orders, once each.",
        tools=[fetch_orders, lookup_customer],
        llm=model,
        max_steps=WARMUP + STEPS + 5,
        max_context_tokens=900_000,
        max_cost_usd=1_000.0,
        artifacts_dir=artifacts,
        on_event=on_event,
    )
    prior = history(size)
    for page in range(500, 500 + model.steps):  # the tool's own work becomes a lookup (see the docstring)
        page_json(page)
    if profiler is not None:
        profiler.enable()
    agent.run("Now check page 500 onwards.", history=prior)
    if profiler is not None:
        profiler.disable()
    steps = []
    for k in range(WARMUP, WARMUP + STEPS):
        (t0, m0), (t1, m1) = marks[k], marks[k + 1]
        steps.append(((t1 - t0) - (m1 - m0), (model.encode_cpu if cpu else model.encode)[k]))
    return steps


def measure(size: int, runs: int = RUNS, cpu: bool = False) -> dict[str, float]:
    framework: list[float] = []
    encode: list[float] = []
    with tempfile.TemporaryDirectory() as artifacts:
        for _ in range(runs):
            for f, e in one_run(size, artifacts, cpu=cpu):
                framework.append(f)
                encode.append(e)
    f, e = statistics.median(framework), statistics.median(encode)
    return {"messages": size, "framework_ms": f * 1e3, "encode_ms": e * 1e3, "ratio": f / e}


def profile(size: int) -> None:
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as artifacts:
        one_run(size, artifacts, profiler)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)


def breakdown(size: int) -> None:
    """Where the framework's time goes at `size` messages, per step, as a share of encoding."""
    import agent.accounting as loop_module

    seconds: dict[str, float] = {}
    booked = loop_module.book_answer

    def book_answer(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return booked(*args, **kwargs)
        finally:
            seconds["book_answer"] = seconds.get("book_answer", 0.0) + time.perf_counter() - started

    loop_module.book_answer = book_answer  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as artifacts:
            one_run(size, artifacts, agent_class=timed_agent({}))  # warm up
            steps = one_run(size, artifacts, agent_class=timed_agent(seconds))
    finally:
        loop_module.book_answer = booked  # type: ignore[assignment]
    encode = sum(e for _, e in steps) / len(steps)
    total = sum(f for f, _ in steps) / len(steps)
    calls = WARMUP + STEPS + 1
    print(f"at {size:,} messages, per step, as a multiple of the JSON-encode time:")
    for name, spent in sorted(seconds.items(), key=lambda item: -item[1]):
        print(f"  {name:<16} {spent / calls / encode:6.2f}")
    print(f"  {'everything':<16} {total / encode:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", type=int, metavar="MESSAGES", help="print a cProfile instead")
    parser.add_argument("--breakdown", type=int, metavar="MESSAGES", help="time the bookkeeping steps")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument(
        "--cpu", action="store_true", help="also measure in CPU time (steadier on a busy machine)"
    )
    args = parser.parse_args()
    if args.breakdown:
        breakdown(args.breakdown)
        return
    if args.profile:
        profile(args.profile)
        return
    results = [measure(size, args.runs) for size in SIZES]
    cpu = [measure(size, args.runs, cpu=True) for size in SIZES] if args.cpu else []
    print("| messages | framework time / JSON-encode time |" + (" in CPU time |" if cpu else ""))
    print("|--:|--:|" + ("--:|" if cpu else ""))
    for r, c in itertools.zip_longest(results, cpu):
        print(f"| {r['messages']:,} | {r['ratio']:.2f} |" + (f" {c['ratio']:.2f} |" if c else ""))
    by_size = {r["messages"]: r["ratio"] for r in results}
    last = {"ratio_at_200": round(by_size[200], 2), "ratio_at_1000": round(by_size[1000], 2)}
    if cpu:
        by_cpu = {c["messages"]: c["ratio"] for c in cpu}
        last |= {"cpu_ratio_at_200": round(by_cpu[200], 2), "cpu_ratio_at_1000": round(by_cpu[1000], 2)}
    print(json.dumps(last))


if __name__ == "__main__":
    main()
