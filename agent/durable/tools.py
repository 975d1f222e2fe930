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
`took effect` rule as a JSONL session resume, `agent.approval`). A worker killed before
`started` was recorded draws a fresh nonce on replay: the tool had not started, it runs.

A turn's calls run one after another: DBOS numbers the steps of a workflow in the order
they start, and a replay must meet them in the same order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from dbos import DBOS

from agent.registry import ToolCall, ToolOutcome, ToolRegistry

__all__ = ["DurableRegistry", "unknown_outcome"]


def unknown_outcome(call: ToolCall) -> str:
    """What the model reads for an irreversible call cut off by a dead worker."""
    return (
        f"outcome unknown: {call.name} was started by a worker that died before its result was "
        "recorded. It was NOT run again, so it is done at most once. Check whether it took "
        "effect (look it up) before deciding anything; do not simply retry it."
    )


def _echo(nonce: str) -> str:
    return nonce


class DurableRegistry(ToolRegistry):
    """The agent's tools, each call run as a DBOS step (only inside a DBOS workflow)."""

    @classmethod
    def of(cls, registry: ToolRegistry) -> DurableRegistry:
        if isinstance(registry, DurableRegistry):
            return registry
        return cls(list(registry), registry.default_timeout, registry.max_output_chars)

    async def arun_all(
        self, calls: Sequence[ToolCall], on_done: Callable[[ToolOutcome], None] | None = None
    ) -> list[ToolOutcome]:
        outcomes = []
        for call in calls:
            outcome = await self._durable_one(call)
            if on_done is not None:
                on_done(outcome)
            outcomes.append(outcome)
        return outcomes

    def run_all(
        self, calls: Sequence[ToolCall], on_done: Callable[[ToolOutcome], None] | None = None
    ) -> list[ToolOutcome]:
        raise RuntimeError("a durable run's tools run on the event loop (Agent.arun), not run_all")

    async def _durable_one(self, call: ToolCall) -> ToolOutcome:
        tool_ = self.get(call.name)
        cut_off = False
        if tool_ is not None and tool_.irreversible:
            nonce = uuid.uuid4().hex
            cut_off = await DBOS.run_step_async({"name": f"started:{call.name}"}, _echo, nonce) != nonce

        async def run() -> tuple[Any, bool, float]:
            if cut_off:
                return unknown_outcome(call), True, 0.0
            [outcome] = await ToolRegistry.arun_all(self, [call])
            return outcome.value, outcome.is_error, outcome.seconds

        value, is_error, seconds = await DBOS.run_step_async({"name": f"tool:{call.name}"}, run)
        return ToolOutcome(call, value, is_error, seconds, tool_)
