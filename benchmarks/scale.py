"""Beyond one machine: 100 durable runs on 4 DBOS workers over Postgres, one worker SIGKILLed.

The benchmark starts Debian's Postgres on a free localhost port (`LocalPostgres`,
installed with apt-get if missing), the Messages API simulator in this process, and 4
worker processes (`python -m agent.ext.durable.worker`). It enqueues `--runs` runs of a
10-step task: nine turns that each call a reversible `lookup` and, every third turn, an
irreversible `ship` (which appends one line to a side-effect log, then takes a moment to
return: the window in which a kill leaves it started but unrecorded), then a final answer.
When a third of the shipments are done, it SIGKILLs worker 1 the moment that worker
ships again (inside the irreversible call, before its result is recorded), and starts a
replacement with the same executor id, which recovers the dead worker's runs through the
queue (DBOS re-enqueues them; any worker may take them).

* irreversible_repeats: `ship` lines in the side-effect log beyond one per (run, order);
* lost_results: runs whose result cannot be read by run id, or is not the task's answer;
* model_calls_repeated: model requests beyond 10 per run (calls in flight when the worker
  died, asked again on recovery: a finished call is never asked or paid for again);
* unknown_outcomes: `ship` calls cut off by the kill, reported to the model as unknown.

    .venv/bin/python -m benchmarks.scale [--runs 100] [--workers 4] [--concurrency 4]

Prints a table and, last, one JSON object: {"runs", "completed", "irreversible_repeats",
"lost_results", "runs_per_s", "workers", "killed"}.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent import Agent, tool
from agent.ext.approval import Approval
from agent.messages import blocks, content_text

STEPS = 10
FINAL = "Batch processed."
MODEL = "claude-opus-4-5"
_BATCH = re.compile(r"batch (\d+)")


# -- the task (imported by every worker: `--agents benchmarks.scale`) -----------------------------


def make_agent() -> Agent:
    log = Path(os.environ["SCALE_SIDE_EFFECTS"])

    @tool
    def lookup(batch: int, item: int) -> str:
        """Look an item of a batch up.

        Args:
            batch: the batch.
            item: the item.
        """
        time.sleep(0.02)
        return f"batch {batch} item {item}: in stock"

    @tool(irreversible=True)
    def ship(order: str) -> str:
        """Ship an order (irreversible).

        Args:
            order: the order id.
        """
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{order} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        time.sleep(0.25)  # it shipped; the result is not recorded yet
        return f"shipped {order}"

    from agent.anthropic_llm import AnthropicLLM

    llm = AnthropicLLM(base_url=os.environ["SCALE_SIM_URL"], api_key="sim", max_retries=0)
    trusted = [Approval(allow=["ship"])]
    return Agent(
        llm=llm, model=MODEL, tools=[lookup, ship], extensions=trusted, artifacts_dir=None, max_steps=20
    )


def policy(body: Mapping[str, Any]) -> Any:
    """The model: decides from the request alone (the turn count and the batch number)."""
    messages = list(body["messages"])
    batch = int(_BATCH.findall(content_text(messages[0]["content"]))[0])
    turn = 1 + sum(1 for m in messages if m["role"] == "assistant")
    if turn >= STEPS:
        return FINAL
    calls: list[dict[str, Any]] = [
        {"type": "tool_use", "name": "lookup", "input": {"batch": batch, "item": turn}}
    ]
    if turn % 3 == 0:
        calls.append({"type": "tool_use", "name": "ship", "input": {"order": f"{batch}-{turn}"}})
    return {"content": [f"Turn {turn} of batch {batch}.", *calls]}


if "agent.ext.durable.worker" in sys.modules or os.environ.get("SCALE_SIM_URL"):  # in a worker
    from agent.ext.durable import register_agent

    register_agent("scale", make_agent)


# -- the driver ------------------------------------------------------------------------------------


class Worker:
    def __init__(self, executor_id: str, db: str, env: dict[str, str], concurrency: int, logs: Path) -> None:
        self.executor_id = executor_id
        command = [
            sys.executable,
            "-m",
            "agent.ext.durable.worker",
            "--db",
            db,
            "--agents",
            "benchmarks.scale",
        ]
        command += ["--executor-id", executor_id, "--worker-concurrency", str(concurrency), "--create-db"]
        self.out = (logs / f"{executor_id}-{time.monotonic_ns()}.log").open("w")
        root = Path(__file__).resolve().parent.parent
        self.process = subprocess.Popen(command, env=env, cwd=root, stdout=self.out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while "ready" not in Path(self.out.name).read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"worker {self.executor_id} did not start: {Path(self.out.name).read_text()}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.out.close()


def wait_for(predicate: Any, timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4, help="runs at once in each worker")
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args(argv)
    logging.getLogger("agent").setLevel(logging.ERROR)

    from agent.ext.durable import RunClient
    from agent.testing.postgres import LocalPostgres
    from agent.testing.simulator import MessagesSimulator

    folder = Path(tempfile.mkdtemp(prefix="agent-scale-"))
    side_effects = folder / "shipped.log"
    side_effects.touch()
    sim = MessagesSimulator(policy)
    pg = LocalPostgres()
    workers: list[Worker] = []
    client: RunClient | None = None
    try:
        t0 = time.monotonic()
        if args.db == "postgres":
            pg.start()
        sim.start()
        db = pg.database_url("agent_scale") if args.db == "postgres" else f"sqlite:///{folder}/runs.sqlite"
        env = {**os.environ, "SCALE_SIM_URL": sim.base_url, "SCALE_SIDE_EFFECTS": str(side_effects)}
        env.pop("ANTHROPIC_API_KEY", None)
        workers = [Worker(f"worker-{i + 1}", db, env, args.concurrency, folder) for i in range(args.workers)]
        for worker in workers:
            worker.wait_ready()
        setup_s = time.monotonic() - t0
        client = RunClient(db)
        started = time.monotonic()
        run_ids = [
            client.enqueue("scale", f"Process batch {i}.", run_id=f"scale-{i}") for i in range(args.runs)
        ]
        ships_per_run = len(range(3, STEPS, 3))
        expected_ships = ships_per_run * args.runs

        def shipped() -> list[str]:
            return [line.split()[0] for line in side_effects.read_text().splitlines() if line.strip()]

        wait_for(lambda: len(shipped()) >= expected_ships // 3, 300)
        victim = workers[0]
        mine = f" {victim.process.pid}\n"
        seen = side_effects.read_text().count(mine)
        # the moment the victim ships again: killed inside the call, before its result is recorded
        wait_for(lambda: side_effects.read_text().count(mine) > seen, 60, step=0.005)
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        killed = 1
        killed_at = time.monotonic() - started
        replacement = Worker(victim.executor_id, db, env, args.concurrency, folder)
        workers.append(replacement)
        replacement.wait_ready()

        completed, lost, unknown = 0, 0, 0
        for run_id in run_ids:
            try:
                result = client.result(run_id)
            except Exception:
                lost += 1
                continue
            if result.text == FINAL and result.stop_reason == "end_turn":
                completed += 1
            else:
                lost += 1
            for message in result.messages:
                for block in blocks(message):
                    if block.get("type") == "tool_result" and "outcome unknown" in content_text(
                        block.get("content")
                    ):
                        unknown += 1
        elapsed = time.monotonic() - started
        lines = Counter(shipped())
        repeats = sum(count - 1 for count in lines.values() if count > 1)
        model_calls = len(sim.requests)
    finally:
        if client is not None:
            client.close()
        for worker in workers:
            worker.stop()
        sim.stop()
        pg.stop()

    rows = [
        ("runs enqueued", args.runs),
        ("database", "Postgres (Debian, localhost)" if args.db == "postgres" else "SQLite file"),
        ("workers (concurrency each)", f"{args.workers} ({args.concurrency})"),
        (f"setup: {args.db} + workers (s)", f"{setup_s:.1f}"),
        ("worker SIGKILLed at (s)", f"{killed_at:.1f}"),
        ("completed", completed),
        ("lost results", lost),
        ("irreversible calls done", f"{sum(lines.values())} of {expected_ships} asked"),
        ("irreversible repeats", repeats),
        ("irreversible outcomes unknown (cut off)", unknown),
        ("model calls", f"{model_calls} ({model_calls - STEPS * args.runs} repeated)"),
        ("wall time, enqueue to last result (s)", f"{elapsed:.1f}"),
        ("runs per second", f"{args.runs / elapsed:.2f}"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(
        json.dumps(
            {
                "runs": args.runs,
                "completed": completed,
                "irreversible_repeats": repeats,
                "lost_results": lost,
                "runs_per_s": round(args.runs / elapsed, 2),
                "workers": args.workers,
                "killed": killed,
            }
        )
    )


if __name__ == "__main__":
    main()
