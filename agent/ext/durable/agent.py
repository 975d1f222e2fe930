"""Any `Agent` as a durable run: the same loop, its model and tool calls made DBOS steps.

`DurableAgent` changes no step of the loop; it routes the two that touch the world:

- `send` (one model call attempt) runs as a step whose record holds the answer (or the
  failure) AND the history the request was built from. On replay the step returns
  both, and the run goes on from the recorded history: what was sent, whatever pruning
  or compaction would decide if recomputed (a changed setting, a changed estimate);
- the summary call of compaction goes through `DurableLLM`, a step as well;
- tool calls run through `DurableRegistry` (`agent.ext.durable.tools`), one step each;
- the approver's verdict is recorded in a step too, so a replay meets the same verdict;
  `WaitForApproval` instead waits durably (`DBOS.recv`) for a decision that another
  process sends (`agent.ext.durable.runtime.approve`).

The run id is the workflow id, so artifact folders and session records are named alike in
every execution. Use `DurableAgent` as a base class, or `durable(agent)` on an agent of any
`Agent` subclass; either runs only inside a DBOS workflow (`agent.ext.durable.runtime`).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from anthropic.types import Message
from dbos import DBOS

from agent.ext.approval.gate import Approver, deny_by_default
from agent.ext.durable.calls import acall_through_gate, call_through_gate, rebuild_message
from agent.ext.durable.tools import DurableRegistry
from agent.llm import LLM
from agent.loop import Agent
from agent.state import RunResult, RunState
from agent.steps import ask
from agent.tools import ToolCall

__all__ = ["APPROVAL_EVENT", "DurableAgent", "DurableLLM", "WaitForApproval", "approval_topic", "durable"]

APPROVAL_EVENT = "approval"
"""The workflow event naming the call that waits for a decision (None when none waits)."""


def approval_topic(call_id: str) -> str:
    return f"approval:{call_id}"


class DurableLLM:
    """An `LLM` whose `create` is a DBOS step (the compaction summary's call)."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.max_retries = 0

    def create(self, request: Mapping[str, Any]) -> Message:
        record = DBOS.run_step(
            {"name": "model:summary"}, call_through_gate, lambda: self.inner.create(request)
        )
        return rebuild_message(record)


class RecordedApprover:
    """A plain approver whose verdict is a step: asked once, replayed from the record."""

    def __init__(self, approver: Approver | None) -> None:
        self.approver = approver or deny_by_default

    def __call__(self, call: ToolCall) -> bool | str:
        verdict: bool | str = DBOS.run_step({"name": f"approve:{call.name}"}, self.approver, call)
        return verdict


class WaitForApproval:
    """An approver that waits durably for a decision sent from any process.

    It publishes the call as the workflow's `approval` event, then waits on
    `DBOS.recv` for `True` or a reason to deny. The wait survives the worker: a
    recovered run waits again for the same message, and a decision sent meanwhile is
    kept. No decision within `timeout_s` denies the call.
    """

    def __init__(self, timeout_s: float = 3600.0) -> None:
        self.timeout_s = timeout_s

    def __call__(self, call: ToolCall) -> bool | str:
        DBOS.set_event(APPROVAL_EVENT, {"id": call.id, "name": call.name, "input": dict(call.input)})
        verdict = DBOS.recv(approval_topic(call.id), timeout_seconds=self.timeout_s)
        DBOS.set_event(APPROVAL_EVENT, None)
        if verdict is None:
            return f"nobody decided on {call.name} within {self.timeout_s:g} s, so it was not run"
        if verdict is True or (isinstance(verdict, str) and verdict.strip()):
            return verdict if verdict is True else str(verdict)
        return f"the user declined {call.name}"


class DurableAgent(Agent):
    """`Agent`, with every model call, summary call, verdict and tool call a DBOS step."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        make_durable_parts(self)

    async def drive(
        self, loop: Callable[[RunState], Coroutine[Any, Any, RunResult]], state: RunState
    ) -> RunResult:
        run_id = DBOS.workflow_id
        if run_id is None:
            raise RuntimeError(
                "a DurableAgent runs inside a DBOS workflow: start it with agent.ext.durable.start_run "
                "or enqueue_run, or use a plain Agent"
            )
        state.run_id = run_id
        return await super().drive(loop, state)

    async def send(self, request: dict[str, Any], state: RunState) -> Message:
        inner: LLM = getattr(self, "inner_llm", self.llm)
        sent = state.messages

        async def call() -> dict[str, Any]:
            record = await acall_through_gate(lambda: ask(inner, request, None))
            return {**record, "sent": sent}

        record: dict[str, Any] = await DBOS.run_step_async({"name": "model"}, call)
        if record["sent"] != state.messages:  # a replay recomputed the history otherwise: keep what was sent
            state.messages = list(record["sent"])
        return rebuild_message(record)


def make_durable_parts(agent: Agent) -> None:
    """Route the agent's model, tools and approver through DBOS steps (once)."""
    if isinstance(agent.tools, DurableRegistry):
        return
    agent.inner_llm = agent.llm  # type: ignore[attr-defined]
    agent.llm = DurableLLM(agent.llm)
    agent.tools = DurableRegistry.of(agent.tools)
    if not isinstance(agent.approver, WaitForApproval):
        agent.approver = RecordedApprover(agent.approver)


_CLASSES: dict[type[Agent], type[Agent]] = {}


def durable(agent: Agent) -> Agent:
    """`agent`, of whatever `Agent` subclass, made durable in place (its class gains the
    `DurableAgent` steps; its overrides of the other steps stay as they are)."""
    if not isinstance(agent, DurableAgent):
        base = type(agent)
        if base not in _CLASSES:
            _CLASSES[base] = type(f"Durable{base.__name__}", (DurableAgent, base), {})
        agent.__class__ = _CLASSES[base]
    make_durable_parts(agent)
    return agent
