"""Durable agent runs on DBOS Transact: `pip install -e ".[scale]"`.

The core never imports this package. A run is a DBOS workflow; each model call, summary
call, approval verdict and tool call is a DBOS step, so a run recovered after its worker
died neither repeats a finished step nor pays for it again, and an irreversible tool cut
off mid-call is reported as of unknown outcome, never run twice. Runs go on DBOS queues
with per-worker concurrency and a start-rate limit; results are read by run id from any
process. Storage is SQLite on one machine or Postgres for many workers.
"""

from agent.ext.durable.agent import APPROVAL_EVENT, DurableAgent, DurableLLM, WaitForApproval, durable
from agent.ext.durable.runtime import (
    DEFAULT_QUEUE,
    RunClient,
    agent_run,
    approve,
    enqueue_run,
    launch,
    register_agent,
    register_queue,
    result,
    shutdown,
    start_run,
)
from agent.ext.durable.tools import run_as_steps

__all__ = [
    "APPROVAL_EVENT",
    "DEFAULT_QUEUE",
    "DurableAgent",
    "DurableLLM",
    "RunClient",
    "WaitForApproval",
    "agent_run",
    "approve",
    "durable",
    "enqueue_run",
    "launch",
    "register_agent",
    "register_queue",
    "result",
    "run_as_steps",
    "shutdown",
    "start_run",
]
