"""Bulk runs on the Message Batches API: many runs' model calls sent as batches, at half price.

    llm = BatchLLM(client=anthropic.AsyncAnthropic(), journal="runs/batches.jsonl")
    agent = Agent(llm=llm, tools=[...])
    results = await asyncio.gather(*(agent.arun(task) for task in tasks))

Why: evaluations and batch jobs run thousands of agent runs where latency does not matter,
and the Message Batches API bills every token at 50% of the standard price. `BatchLLM` is a
seam implementation (`agent.llm`), not a loop feature: the loop calls `acreate` as it calls
any model, and the calls that many concurrent `arun`s make at about the same time go out
together as one batch (`agent.ext.batches.llm` says how). Each reply reports
`usage.service_tier: "batch"`, and the core prices that at the discount
(`agent.usage.BATCH_PRICE_FACTOR`), so budgets and usage logs see what is billed. Each call
is retried and budget-checked by the loop like any other: a request that failed in a batch
raises the error it would have raised alone.

Restarts: with `journal=path`, the batch id of every submitted request is appended to a JSONL
file, keyed by a `custom_id` made from the request itself (its digest, and how many times this
object was asked it). A restarted process whose runs ask again what they asked before (a
session or DBOS resuming them rebuilds the same requests) finds their batch there and polls
it instead of paying for it twice. The journal is its own small file, not a session record,
because a batch spans many runs while a session is one run's, and the seam sees requests, not
runs: it works the same under `agent.ext.sessions`, `agent.ext.durable` or neither.
"""

from agent.ext.batches.llm import (
    ERROR_STATUS,
    BatchLLM,
    BatchRequestCanceled,
    BatchRequestErrored,
    BatchRequestExpired,
    BatchResultMissing,
)

__all__ = [
    "ERROR_STATUS",
    "BatchLLM",
    "BatchRequestCanceled",
    "BatchRequestErrored",
    "BatchRequestExpired",
    "BatchResultMissing",
]
