"""Tool calls as DBOS steps, with the project's never-twice rule for irreversible tools.

DBOS records a step's output when the step returns. A worker killed while a tool runs
leaves no output, and on recovery DBOS would simply run that step again: fine for a
lookup, not for a refund. So an irreversible call is two steps:

1. `started`: records, before the tool runs, a nonce drawn by this execution;
2. `tool`: runs the tool, and its result is recorded.

On replay the `started` step returns the nonce an *earlier* execution drew. If the
`tool` step then has no recorded output (its body runs again), that earlier execution
started the tool and died before its result was stored: the tool may have taken effect,
so it is not run again and the model reads "outcome unknown" (the same words and the same
`took effect` rule as a JSONL session resume, `agent.ext.approval.gate`). A worker killed before
`started` was recorded draws a fresh nonce on replay: the tool had not started, it runs. A
tool that takes an `idempotency_key` (`Tool.idempotent`) is run again instead, with the same
key (the workflow id and the call's id): its backend makes that exactly once.

DBOS numbers the steps of a workflow in the order they start, and a replay must meet them
in the same order: the `started` steps are taken one after another, then the turn's tool
steps all start at once in call order (`asyncio.gather` starts them in that order; each
takes its number before its first await) and run in parallel.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from dbos import DBOS

from agent.tool_runs import Tools, arun_all
from agent.tools import ToolCall, ToolOutcome

__all__ = ["run_as_steps", "unknown_outcome"]


def unknown_outcome(call: ToolCall) -> str:
    """What the model reads for an irreversible call cut off by a dead worker."""
    return (
        f"outcome unknown: {call.name} was started by a worker that died before its result was "
        "recorded. It was NOT run again, so it is done at most once. Check whether it took "
        "effect (look it up) before deciding anything; do not simply retry it."
    )


def _echo(nonce: str) -> str:
    return nonce


async def run_as_steps(
    registry: Tools, calls: Sequence[ToolCall], on_done: Callable[[ToolOutcome], None] | None = None
) -> list[ToolOutcome]:
    """The calls that passed the extensions' hooks, each a DBOS step (`run_turn`'s `execute`)."""
    cut_off = [await _started(registry, call) for call in calls]  # one after another: in call order
    steps = [
        DBOS.run_step_async({"name": f"tool:{c.name}"}, _runner(registry, c, cut))
        for c, cut in zip(calls, cut_off, strict=True)
    ]
    # numbered as they start (in call order, before their first await), then run at once
    records: list[tuple[Any, bool, float]] = await asyncio.gather(*steps)
    outcomes = []
    for call, (value, is_error, seconds) in zip(calls, records, strict=True):
        outcome = ToolOutcome(call, value, is_error, seconds, registry.get(call.name))
        if on_done is not None:
            on_done(outcome)
        outcomes.append(outcome)
    return outcomes


async def _started(registry: Tools, call: ToolCall) -> bool:
    """For an irreversible call: record that it starts; True when an earlier execution
    already did (and so may have run it)."""
    tool_ = registry.get(call.name)
    if tool_ is None or not tool_.irreversible:
        return False
    nonce = uuid.uuid4().hex
    return bool(await DBOS.run_step_async({"name": f"started:{call.name}"}, _echo, nonce) != nonce)


def _runner(
    registry: Tools, call: ToolCall, cut_off: bool
) -> Callable[[], Coroutine[Any, Any, tuple[Any, bool, float]]]:
    async def run() -> tuple[Any, bool, float]:
        tool_ = registry.get(call.name)
        if cut_off and not (tool_ is not None and tool_.idempotent):  # an idempotent one runs again
            return unknown_outcome(call), True, 0.0  # (same key: the workflow's id and the call's)
        [outcome] = await arun_all(registry, [call])
        return outcome.value, outcome.is_error, outcome.seconds

    return run
