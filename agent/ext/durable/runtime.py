"""Durable runs: the workflow, where DBOS keeps its records, queues, and results by run id.

A worker process imports the module that registers its agents (`register_agent(name,
factory)`: every worker builds the same agent for a name), then `launch(url)`. A run is
the workflow `agent_run(name, prompt, history)`: the factory builds a fresh agent, made
durable (`agent.ext.durable.agent.durable`), and its `arun` is the run. Start one in this
process (`start_run`), or put it on a queue (`enqueue_run`, or `RunClient.enqueue` from a
process that runs no workflows), and read its result by run id from any process.

Storage: `sqlite:///file.sqlite` for one machine (DBOS 3.x keeps its system database in
SQLite when given such a URL), `postgresql://...` for workers on many machines. Each
worker needs its own `executor_id`; a worker restarted with a dead worker's id recovers
that worker's pending runs on launch (DBOS re-enqueues them, and any worker of the queue
may take them).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions, SetWorkflowID

from agent.errors import AgentError
from agent.ext.durable.agent import APPROVAL_EVENT, approval_topic, durable
from agent.loop import Agent
from agent.messages import Msg
from agent.state import RunResult

__all__ = ["DEFAULT_QUEUE", "RunClient", "agent_run", "approve", "enqueue_run", "launch", "register_agent"]
__all__ += ["DatabaseProblem", "check_database", "queue_for", "register_queue", "registered", "result"]
__all__ += ["shutdown", "start_run"]

DEFAULT_QUEUE = "agent-runs"
WORKFLOW_NAME = "agent_from_scratch.run"
_FACTORIES: dict[str, Callable[[], Agent]] = {}


def registered() -> list[str]:
    """The agent names registered in this process, sorted."""
    return sorted(_FACTORIES)


def register_agent(name: str, factory: Callable[[], Agent]) -> None:
    """Name the agent a run builds; register the same names in every worker."""
    if not isinstance(name, str) or not name:
        raise ValueError("register_agent needs a non-empty name")
    _FACTORIES[name] = factory


@DBOS.workflow(name=WORKFLOW_NAME)
async def agent_run(name: str, prompt: str, history: list[Msg] | None = None) -> RunResult:
    """One agent run, as a DBOS workflow."""
    factory = _FACTORIES.get(name)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES)) or "none"
        raise LookupError(f"no agent registered as {name!r} in this worker (registered: {known})")
    return await durable(factory()).arun(prompt, history=history or ())


class DatabaseProblem(AgentError):
    """A system database URL a worker cannot use: malformed, unreachable, or naming a database
    that does not exist. The message is one line that names it."""


def check_database(url: str, *, create: bool = False) -> None:
    """Refuse (`DatabaseProblem`) a URL that is not `sqlite:///<file>` or `postgresql://...`, a
    server that cannot be reached, and a database that does not exist unless `create` (the
    SQLite file's folder must exist either way)."""
    parsed = urlsplit(url) if isinstance(url, str) else None
    if parsed is None or parsed.scheme not in ("sqlite", "postgresql", "postgres", "postgresql+psycopg"):
        raise DatabaseProblem(f"--db {url!r} is neither sqlite:///path/file.sqlite nor postgresql://host/db")
    if parsed.scheme == "sqlite":
        path = Path(url.removeprefix("sqlite:///"))
        if not path.parent.is_dir():
            raise DatabaseProblem(f"no folder {path.parent} for the SQLite database {path}")
        if not path.exists() and not create:
            raise DatabaseProblem(f"no SQLite database at {path} (pass --create-db to create it)")
        return
    _check_postgres(url, parsed.path.lstrip("/") or "postgres", create)


def _check_postgres(url: str, name: str, create: bool) -> None:
    import psycopg  # dbos's own driver

    plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        psycopg.connect(plain, connect_timeout=10).close()
    except psycopg.OperationalError as error:
        reason = " ".join(str(error).split())
        if "does not exist" in reason and f'"{name}"' in reason:
            if create:
                return  # DBOS creates it on launch
            raise DatabaseProblem(
                f"database {name!r} does not exist on {urlsplit(plain).hostname}: create it "
                "(createdb, or pass --create-db), or fix the name in --db"
            ) from None
        raise DatabaseProblem(f"cannot connect to the database in --db: {reason[:300]}") from None


def launch(
    database_url: str = "sqlite:///agent-runs.sqlite",
    *,
    app_name: str = "agent-from-scratch",
    executor_id: str | None = None,
    listen: Sequence[str] | None = None,
    **config: Any,
) -> None:
    """Start DBOS in this process on `database_url` (SQLite file or Postgres), recovering
    the pending runs of `executor_id` (a restarted worker keeps its id). `listen`: the only
    queues this process takes runs from (`queue_for`; a worker passes its agents')."""
    settings: dict[str, Any] = {"name": app_name, "system_database_url": database_url, **config}
    settings.setdefault("application_version", "agent-from-scratch-1")  # workers of one fleet agree
    settings.setdefault("log_level", "WARNING")
    if executor_id is not None:
        settings["executor_id"] = executor_id
    DBOS(config=cast(DBOSConfig, settings))
    if listen is not None:
        DBOS.listen_queues(list(listen))
    DBOS.launch()


def shutdown() -> None:
    """Stop DBOS in this process (workflows and registered agents stay declared)."""
    DBOS.destroy(destroy_registry=False)


def queue_for(queue: str, agent: str) -> str:
    """The DBOS queue that holds `queue`'s runs of agent `agent`. One queue per agent, so a
    worker takes only runs it can serve: a run for an agent no worker registers yet waits
    on the queue (ENQUEUED) until one that has it starts, instead of failing in another."""
    return f"{queue}/{agent}"


def register_queue(
    name: str = DEFAULT_QUEUE,
    *,
    agents: Sequence[str] | None = None,
    worker_concurrency: int | None = 4,
    global_concurrency: int | None = None,
    starts_per_period: int | None = None,
    period_s: float = 1.0,
    polling_interval_s: float = 1.0,
) -> None:
    """Declare the run queue for `agents` (default: every agent registered in this process):
    at most `worker_concurrency` runs of each agent at once in each worker (and
    `global_concurrency` in all), and at most `starts_per_period` runs of each started per
    `period_s` across workers, sized for the API's rate limit."""
    limiter = None if starts_per_period is None else {"limit": starts_per_period, "period": period_s}
    for agent in sorted(_FACTORIES) if agents is None else agents:
        DBOS.register_queue(
            queue_for(name, agent),
            worker_concurrency=worker_concurrency,
            global_concurrency=global_concurrency,
            limiter=cast(Any, limiter),
            polling_interval_sec=polling_interval_s,
        )


def start_run(name: str, prompt: str, *, history: Sequence[Msg] = (), run_id: str | None = None) -> str:
    """Start a run in this process now; its run id (also a DBOS workflow id)."""
    run_id = run_id or new_run_id()
    with SetWorkflowID(run_id):
        DBOS.start_workflow(agent_run, name, prompt, list(history))
    return run_id


def enqueue_run(
    name: str,
    prompt: str,
    *,
    history: Sequence[Msg] = (),
    run_id: str | None = None,
    queue: str = DEFAULT_QUEUE,
) -> str:
    """Put a run on `queue` for any worker that has agent `name` to take; its run id."""
    run_id = run_id or new_run_id()
    with SetWorkflowID(run_id):
        DBOS.enqueue_workflow(queue_for(queue, name), agent_run, name, prompt, list(history))
    return run_id


def result(run_id: str) -> RunResult:
    """The run's result (waiting for it); raises what the run raised."""
    answer: RunResult = DBOS.retrieve_workflow(run_id).get_result()
    return answer


def approve(run_id: str, call_id: str, verdict: bool | str = True) -> None:
    """Decide on the gated call `call_id` that run `run_id` waits for (`WaitForApproval`):
    True runs it, False or a reason denies it."""
    DBOS.send(run_id, verdict, topic=approval_topic(call_id))


def new_run_id() -> str:
    return f"run-{uuid.uuid4().hex}"


class RunClient:
    """Enqueue runs, read results and decide approvals from a process that runs no workflows
    (a web service, a batch driver): it only talks to the system database."""

    def __init__(self, database_url: str) -> None:
        self.client = DBOSClient(system_database_url=database_url)

    def enqueue(
        self,
        name: str,
        prompt: str,
        *,
        history: Sequence[Msg] = (),
        run_id: str | None = None,
        queue: str = DEFAULT_QUEUE,
    ) -> str:
        run_id = run_id or new_run_id()
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": queue_for(queue, name),
            "workflow_id": run_id,
        }
        self.client.enqueue(options, name, prompt, list(history))
        return run_id

    def result(self, run_id: str) -> RunResult:
        answer: RunResult = self.client.retrieve_workflow(run_id).get_result()
        return answer

    def status(self, run_id: str) -> str:
        """PENDING, ENQUEUED, SUCCESS, ERROR, ... (DBOS workflow statuses)."""
        return str(self.client.retrieve_workflow(run_id).get_status().status)

    def waiting_approval(self, run_id: str, timeout_s: float = 0.0) -> dict[str, Any] | None:
        """The call run `run_id` waits on a decision for, if any: {"id", "name", "input"}."""
        event: dict[str, Any] | None = self.client.get_event(
            run_id, APPROVAL_EVENT, timeout_seconds=timeout_s
        )
        return event

    def approve(self, run_id: str, call_id: str, verdict: bool | str = True) -> None:
        self.client.send(run_id, verdict, topic=approval_topic(call_id))

    def close(self) -> None:
        self.client.destroy()
