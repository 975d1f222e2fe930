"""Durable runs on DBOS (`agent.ext.durable`), on SQLite in this process and on a real Postgres
with worker processes, one of them SIGKILLed in the middle of an irreversible call.

Skipped when the `scale` extra (dbos) is not installed; the core never imports it.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from dbos import DBOS

from agent import Agent, tool
from agent.errors import StepBudgetExceeded
from agent.ext.durable import (
    RunClient,
    enqueue_run,
    launch,
    register_agent,
    register_queue,
    result,
    shutdown,
    start_run,
)
from agent.ext.durable.agent import MissingTools
from agent.ext.durable.calls import RATE_GATE
from agent.messages import blocks, content_text
from agent.testing.postgres import LocalPostgres, postgres_bin
from agent.testing.simulator import MessagesSimulator

pytestmark = pytest.mark.slow  # real DBOS runs, SQLite and a Postgres server started here

REPO = Path(__file__).resolve().parents[2]
MODEL = "claude-opus-4-5"


def turns(body: Mapping[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def adder_policy(body: Mapping[str, Any]) -> Any:
    n = turns(body)
    tools = {declared["name"] for declared in body.get("tools", [])}
    if "nap" in tools:
        naps = [{"type": "tool_use", "name": "nap", "input": {"n": i}} for i in (1, 2)]
        return {"content": ["Napping twice.", *naps]} if n == 0 else "napped"
    if "page" in tools:
        done = pages_read(body["messages"])
        if done >= PAGES:
            return "read them all"
        return {
            "content": [f"Page {done + 1}.", {"type": "tool_use", "name": "page", "input": {"n": done + 1}}]
        }
    if "lookup" in tools and n == 0:  # a tool this agent lacks: another worker's version had it
        return {"content": ["Adding.", {"type": "tool_use", "name": "add", "input": {"a": 1, "b": 2}}]}
    if n < 3:
        return {"content": [f"step {n}", {"type": "tool_use", "name": "add", "input": {"a": n, "b": 10}}]}
    return "done"


ADDS: list[int] = []
NAPS: list[tuple[int, float, float]] = []
PAGES = 8
_PAGE = re.compile(r"(?:PAGE|LAST PAGE READ:) (\d+)")


def pages_read(messages: list[Any]) -> int:
    texts = [
        content_text(b.get("content")) if b["type"] == "tool_result" else b.get("text", "")
        for m in messages
        for b in blocks(m)
    ]
    return max([0, *(int(n) for text in texts for n in _PAGE.findall(text or ""))])


def summarizer(body: Mapping[str, Any]) -> str:
    return f"Reading pages. LAST PAGE READ: {pages_read(list(body['messages']))}."


@tool
def nap(n: int) -> str:
    """Nap a little.

    Args:
        n: which nap.
    """
    started = time.monotonic()
    time.sleep(0.4)
    NAPS.append((n, started, time.monotonic()))
    return f"nap {n} done"


@tool(compress=False)
def page(n: int) -> str:
    """One long page.

    Args:
        n: from 1.
    """
    return f"PAGE {n}\n" + "\n".join(f"row {n}-{i}: a line of text that takes some room" for i in range(60))


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: one.
        b: two.
    """
    ADDS.append(a)
    return a + b


@pytest.fixture(scope="module")
def sqlite_dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MessagesSimulator]:
    """DBOS launched in this process on a SQLite file, and a simulator the agents call."""
    with MessagesSimulator(adder_policy, summarizer=summarizer) as sim:
        register_agent("adder", lambda: Agent(llm=sim.llm(), model=MODEL, tools=[add], model_retries=0))
        register_agent("napper", lambda: Agent(llm=sim.llm(), model=MODEL, tools=[nap]))
        register_agent(
            "reader",
            lambda: Agent(
                llm=sim.llm(),
                model=MODEL,
                tools=[page],
                keep_recent=5,
                prune_batch=1,
                max_context_tokens=3000,
                artifacts_dir=None,
                max_steps=30,
            ),
        )
        launch(f"sqlite:///{tmp_path_factory.mktemp('dbos')}/runs.sqlite")
        try:
            yield sim
        finally:
            shutdown()


def test_each_model_and_tool_call_is_a_step_and_a_replay_pays_nothing(sqlite_dbos: MessagesSimulator) -> None:
    before, adds = len(sqlite_dbos.requests), len(ADDS)
    run_id = start_run("adder", "add things")
    first = result(run_id)
    assert first.text == "done" and first.stop_reason == "end_turn"
    steps = [s["function_name"] for s in DBOS.list_workflow_steps(run_id)]
    assert steps == ["model", "tool:add"] * 3 + ["model"]
    assert len(sqlite_dbos.requests) - before == 4 and len(ADDS) - adds == 3
    results = [
        content_text(b["content"]) for m in first.messages for b in blocks(m) if b["type"] == "tool_result"
    ]
    assert results == ["10", "11", "12"]

    again = result(start_run("adder", "add things", run_id=run_id))  # the same run id: its record
    assert again.text == first.text and again.messages == first.messages
    assert len(sqlite_dbos.requests) - before == 4 and len(ADDS) - adds == 3  # nothing asked or run again


def replay_everything(run_id: str) -> Any:
    """The run again under a new id, every step from its record (a fork after its last step)."""
    after_last = 1 + max(s["function_id"] for s in DBOS.list_workflow_steps(run_id))
    return DBOS.fork_workflow(run_id, after_last).get_result()


def test_a_turn_s_tool_calls_run_in_parallel_as_steps_in_call_order(sqlite_dbos: MessagesSimulator) -> None:
    NAPS.clear()
    run_id = start_run("napper", "nap twice")
    first = result(run_id)
    assert first.text == "napped"
    assert [s["function_name"] for s in DBOS.list_workflow_steps(run_id)] == [
        "model",
        "tool:nap",
        "tool:nap",
        "model",
    ]
    (_, start_a, end_a), (_, start_b, end_b) = NAPS
    assert start_a < end_b and start_b < end_a  # at once, not one after the other
    results = [
        content_text(b["content"]) for m in first.messages for b in blocks(m) if b["type"] == "tool_result"
    ]
    assert results == ["nap 1 done", "nap 2 done"]
    before = len(sqlite_dbos.requests)
    assert replay_everything(run_id).messages == first.messages
    assert len(NAPS) == 2 and len(sqlite_dbos.requests) == before


def test_compaction_s_summary_call_is_a_step_too(sqlite_dbos: MessagesSimulator) -> None:
    run_id = start_run("reader", "read all the pages")
    first = result(run_id)
    assert first.text == "read them all"
    steps = [s["function_name"] for s in DBOS.list_workflow_steps(run_id)]
    assert "model:summary" in steps and steps.count("tool:page") == PAGES
    assert any(u.purpose == "summary" for u in first.usage.steps)
    before = len(sqlite_dbos.requests)
    again = replay_everything(run_id)
    assert again.messages == first.messages and len(sqlite_dbos.requests) == before  # summary not asked again


def test_the_queue_runs_one_at_a_time_in_a_worker_when_told(sqlite_dbos: MessagesSimulator) -> None:
    register_queue("one-at-a-time", worker_concurrency=1, polling_interval_s=0.05)
    NAPS.clear()
    run_ids = [enqueue_run("napper", f"nap {i}", queue="one-at-a-time") for i in range(3)]
    assert all(result(run_id).text == "napped" for run_id in run_ids)
    pairs = zip(NAPS[::2], NAPS[1::2], strict=True)
    runs = sorted((min(a[1], b[1]), max(a[2], b[2])) for a, b in pairs)
    assert len(runs) == 3
    for (_, end), (start, _) in itertools.pairwise(runs):
        assert start >= end


def test_a_run_for_an_agent_no_worker_has_waits_for_one_that_has_it(sqlite_dbos: MessagesSimulator) -> None:
    run_id = enqueue_run("late", "add things")  # nobody here serves "late" yet
    time.sleep(1.0)
    status = DBOS.get_workflow_status(run_id)
    assert status is not None and status.status == "ENQUEUED"  # waiting, not failed
    register_agent("late", lambda: Agent(llm=sqlite_dbos.llm(), model=MODEL, tools=[add], model_retries=0))
    register_queue(agents=["late"], polling_interval_s=0.05)  # a worker that has it starts
    assert result(run_id).text == "done"


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    return key


def test_a_run_that_calls_a_tool_its_worker_lacks_fails_instead_of_succeeding(
    sqlite_dbos: MessagesSimulator,
) -> None:
    register_agent("older", lambda: Agent(llm=sqlite_dbos.llm(), model=MODEL, tools=[lookup]))
    run_id = start_run("older", "add 1 and 2")
    with pytest.raises(MissingTools, match="add") as failed:
        result(run_id)
    assert failed.value.result is not None and failed.value.result.stop_reason == "error"
    status = DBOS.get_workflow_status(run_id)
    assert status is not None and status.status == "ERROR"


def test_the_queue_starts_no_more_runs_per_second_than_its_limit(sqlite_dbos: MessagesSimulator) -> None:
    register_queue(
        "one-per-second", worker_concurrency=None, starts_per_period=1, period_s=1.0, polling_interval_s=0.05
    )
    run_ids = [enqueue_run("adder", f"add {i}", queue="one-per-second") for i in range(3)]
    assert all(result(run_id).text == "done" for run_id in run_ids)
    statuses = [DBOS.get_workflow_status(run_id) for run_id in run_ids]
    dequeued = sorted(status.dequeued_at or 0 for status in statuses if status is not None)
    assert len(dequeued) == 3 and dequeued[-1] - dequeued[0] >= 2000  # (stored in whole seconds)


def test_budgets_stop_a_durable_run_as_they_stop_any_run(sqlite_dbos: MessagesSimulator) -> None:
    register_agent("short", lambda: Agent(llm=sqlite_dbos.llm(), model=MODEL, tools=[add], max_steps=2))
    run_id = start_run("short", "add more than two")
    with pytest.raises(StepBudgetExceeded) as stopped:
        result(run_id)  # read back from the record: the error and the partial run
    assert stopped.value.result is not None and stopped.value.result.stop_reason == "max_steps"
    assert [s["function_name"] for s in DBOS.list_workflow_steps(run_id)] == ["model", "tool:add"] * 2


NOTE = {"version": "v1"}


class NotingAgent(Agent):
    """Decides its context with a setting that changes between executions (a stand-in for
    any decision that a replay could make differently: compaction, pruning, a new model table)."""

    def prepare_context(self, state: Any) -> list[dict[str, Any]]:
        messages = super().prepare_context(state)
        first = {**messages[0], "content": f"{state.prompt} [context {NOTE['version']}]"}
        return [first, *messages[1:]]


def test_a_replay_goes_on_from_the_history_that_was_sent_not_a_recomputed_one(
    sqlite_dbos: MessagesSimulator,
) -> None:
    register_agent("noting", lambda: NotingAgent(llm=sqlite_dbos.llm(), model=MODEL, tools=[add]))
    NOTE["version"] = "v1"
    run_id = start_run("noting", "add again")
    original = result(run_id)
    assert original.messages[0]["content"] == "add again [context v1]"
    before, adds = len(sqlite_dbos.requests), len(ADDS)
    NOTE["version"] = "v2"  # a replay would now decide the context differently
    replayed = replay_everything(run_id)
    assert replayed.messages == original.messages
    assert len(sqlite_dbos.requests) == before and len(ADDS) == adds  # nothing asked or run again


def test_a_429_with_retry_after_slows_the_run_and_does_not_fail_it(sqlite_dbos: MessagesSimulator) -> None:
    sqlite_dbos.inject(status=429, retry_after=0.3, times=2)
    started = time.monotonic()
    run_id = start_run("adder", "add under a rate limit")  # model_retries=0: the loop itself would give up
    assert result(run_id).text == "done"
    assert time.monotonic() - started >= 0.6  # both retry-after waits were honoured
    assert [s["function_name"] for s in DBOS.list_workflow_steps(run_id)].count("model") == 4
    assert RATE_GATE.delay() == 0.0


# -- Postgres, worker processes, a SIGKILL ------------------------------------------------------


def gated_policy(body: Mapping[str, Any]) -> Any:
    n = turns(body)
    if n == 0:
        return {"content": ["Refunding.", {"type": "tool_use", "name": "refund", "input": {"order": "A-1"}}]}
    if n == 1:
        return {"content": ["Shipping.", {"type": "tool_use", "name": "ship", "input": {"order": "B-2"}}]}
    return "all done"


class Worker:
    """A `python -m agent.ext.durable.worker` process serving `tests.ext.durable_agents`."""

    def __init__(self, db: str, executor_id: str, env: dict[str, str], log: Path) -> None:
        self.log = log
        command = [
            sys.executable,
            "-m",
            "agent.ext.durable.worker",
            "--db",
            db,
            "--agents",
            "tests.ext.durable_agents",
        ]
        command += ["--executor-id", executor_id, "--create-db"]
        with log.open("w") as out:
            self.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while "ready" not in log.read_text():
            assert self.process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_until(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.skipif(
    postgres_bin() is None, reason="Postgres is not installed here (.ci/run installs the postgresql package)"
)
@pytest.mark.parametrize(
    ("agent", "cut_off"),
    [("gated", "outcome unknown: ship was started"), ("gated-idempotent", "shipped B-2")],
    ids=["at-most-once", "idempotent-exactly-once"],
)
def test_a_killed_worker_s_run_is_recovered_approved_once_and_its_irreversible_call_not_repeated(
    tmp_path: Path, agent: str, cut_off: str
) -> None:
    """A worker SIGKILLed inside `ship`: the refund is not asked again, the shipment happens once.
    Without an idempotency key the run reads "outcome unknown" (at most once); with one, `ship`
    runs again with its key and the carrier ships once: exactly one shipment, and it is known."""
    env = {**os.environ, "DURABLE_DIR": str(tmp_path)}
    env.pop("ANTHROPIC_API_KEY", None)
    workers: list[Worker] = []
    with LocalPostgres() as pg, MessagesSimulator(gated_policy) as sim:
        env["DURABLE_SIM_URL"] = sim.base_url
        db = pg.database_url("durable_test")
        try:
            workers.append(Worker(db, "worker-a", env, tmp_path / "a.log"))
            client = RunClient(db)
            try:
                run_id = client.enqueue(agent, "Refund A-1, then ship B-2.")
                waiting = None
                while waiting is None:  # the run waits, durably, for a person in another process
                    waiting = client.waiting_approval(run_id, timeout_s=60)
                assert waiting["name"] == "refund" and waiting["input"] == {"order": "A-1"}
                assert not (tmp_path / "side_effects.log").exists()
                client.approve(run_id, waiting["id"], True)

                wait_until(lambda: (tmp_path / "ship.started").exists())
                workers[0].process.send_signal(signal.SIGKILL)  # mid-ship: done, result not recorded
                workers[0].process.wait()
                requests_before = len(sim.requests)
                workers.append(Worker(db, "worker-a", env, tmp_path / "a2.log"))  # recovers worker-a's runs

                answer = client.result(run_id)
            finally:
                client.close()
        finally:
            for worker in workers:
                worker.stop()
    assert answer.text == "all done"
    effects = (tmp_path / "side_effects.log").read_text().splitlines()
    assert effects == ["refund A-1", "ship B-2"]  # each exactly once: the approval was not asked again
    results = [
        content_text(b["content"]) for m in answer.messages for b in blocks(m) if b["type"] == "tool_result"
    ]
    assert results[0] == "refunded A-1"
    assert results[1].startswith(cut_off)
    if agent == "gated-idempotent":
        assert answer.uncertain == () and answer.detail is None
    else:
        assert len(answer.uncertain) == 1 and answer.uncertain[0].startswith("ship (")
    assert len(sim.requests) - requests_before == 1  # only the answer after the cut-off call: none repeated


def worker_exit(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent.ext.durable.worker", "--agents", "tests.ext.durable_agents"]
    env = {**os.environ, "DURABLE_DIR": "/nonexistent", "DURABLE_SIM_URL": "http://127.0.0.1:9"}
    return subprocess.run(
        [*command, "--executor-id", "w1", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_worker_refuses_a_database_that_does_not_exist_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "runs.sqlite"
    done = worker_exit("--db", f"sqlite:///{missing}")
    assert done.returncode != 0 and not missing.exists()
    assert done.stderr.strip().splitlines() == [
        f"worker w1: no SQLite database at {missing} (pass --create-db to create it)"
    ]
    done = worker_exit("--db", f"sqlite:///{tmp_path}/no/such/folder/runs.sqlite")
    assert len(done.stderr.strip().splitlines()) == 1 and "no folder" in done.stderr
    done = worker_exit("--db", "mysql://localhost/runs")
    assert len(done.stderr.strip().splitlines()) == 1 and "neither sqlite" in done.stderr


@pytest.mark.skipif(postgres_bin() is None, reason="Postgres is not installed here (.ci/run installs it)")
def test_a_worker_refuses_a_misspelt_postgres_database_and_an_unreachable_server() -> None:
    with LocalPostgres() as pg:
        pg_ok = pg.database_url("postgres")
        assert worker_exit(
            "--db", pg_ok.replace("/postgres", "/runz"), "--polling-interval-s", "0.1"
        ).stderr.strip() == (
            "worker w1: database 'runz' does not exist on 127.0.0.1: create it "
            "(createdb, or pass --create-db), or fix the name in --db"
        )
    done = worker_exit("--db", "postgresql://postgres@127.0.0.1:9/runs")  # nothing listens on port 9
    assert len(done.stderr.strip().splitlines()) == 1 and "cannot connect" in done.stderr
