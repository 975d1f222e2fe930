"""Any `Agent` as a durable run: the same loop, its model and tool calls made DBOS steps.

`DurableAgent` overrides the two steps of the loop that touch the world:

- each attempt of `call_model` runs as a step whose record holds the answer (or the
  failure) AND the history the request was built from. On replay the step returns
  both, and the run goes on from the recorded history: what was sent, whatever pruning
  or compaction would decide if recomputed (a changed setting, a changed estimate);
- the summary call of compaction goes through `DurableLLM`, a step as well;
- tool calls run as steps, one each (`agent.ext.durable.tools.run_as_steps`);
- the approver's verdict is recorded in a step too, so a replay meets the same verdict;
  `WaitForApproval` instead waits durably (`DBOS.recv`) for a decision that another
  process sends (`agent.ext.durable.runtime.approve`).

The run id is the workflow id, so artifact folders and session records are named alike in
every execution. Use `DurableAgent` as a base class, or `durable(agent)` on an agent of any
`Agent` subclass; either runs only inside a DBOS workflow (`agent.ext.durable.runtime`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, cast

from anthropic.types import Message
from dbos import DBOS

from agent.errors import AgentError
from agent.ext.approval import Approval
from agent.ext.approval.gate import Approver, deny_by_default
from agent.ext.durable.calls import acall_through_gate, call_through_gate, rebuild_message
from agent.ext.durable.tools import run_as_steps
from agent.extension import Extension
from agent.llm import LLM
from agent.loop import Agent
from agent.messages import final_text
from agent.state import RunResult, RunState
from agent.steps import ask
from agent.tool_runs import run_turn
from agent.tools import ToolCall, ToolOutcome

__all__ = [
    "APPROVAL_EVENT",
    "DurableAgent",
    "DurableLLM",
    "MissingTools",
    "WaitForApproval",
    "approval_topic",
]
__all__ += ["durable"]

APPROVAL_EVENT = "approval"
"""The workflow event naming the call that waits for a decision (None when none waits)."""


def approval_topic(call_id: str) -> str:
    return f"approval:{call_id}"


class DurableLLM:
    """The agent's model with each call a DBOS step: `acreate` is the loop's call (step
    "model", which also records the history it answered, see `_SENT`), `create` the
    compaction summary's (step "model:summary", called from the context step)."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.max_retries = 0

    def create(self, request: Mapping[str, Any]) -> Message:
        record = DBOS.run_step(
            {"name": "model:summary"}, call_through_gate, lambda: self.inner.create(request)
        )
        return rebuild_message(record)

    async def acreate(self, request: Mapping[str, Any]) -> Message:
        sent = _SENT.get()
        live = None if sent is None else sent.messages

        async def call() -> dict[str, Any]:
            record = await acall_through_gate(lambda: ask(self.inner, request, None))
            return {**record, "sent": live}

        record: dict[str, Any] = await DBOS.run_step_async({"name": "model"}, call)
        if sent is not None and record.get("sent") is not None:
            sent.messages = record["sent"]
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
    """`Agent`, with every model call, summary call, verdict and tool call a DBOS step.

    It overrides two steps of the loop, `call_model` and `run_tools`, and wraps the
    approvers of its `Approval` extensions; every other step (and a subclass's overrides)
    runs as it would outside DBOS."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        make_durable_parts(self)

    async def arun_state(self, state: RunState, extensions: Sequence[Extension] = ()) -> RunResult:
        run_id = DBOS.workflow_id
        if run_id is None:
            raise RuntimeError(
                "a DurableAgent runs inside a DBOS workflow: start it with agent.ext.durable.start_run "
                "or enqueue_run, or use a plain Agent"
            )
        state.run_id = run_id
        return await super().arun_state(state, [recorded_verdicts(e) for e in extensions])

    async def call_model(self, request: dict[str, Any], state: RunState) -> Message:
        """The core's `call_model`, its attempts steps (`DurableLLM.acreate`) that also keep
        the history the request was built from: a replay goes on from that history."""
        sent = _Sent(state.messages)
        token = _SENT.set(sent)
        try:
            response = await super().call_model(request, state)
        finally:
            _SENT.reset(token)
        if sent.messages is not state.messages and sent.messages != state.messages:
            state.messages = list(sent.messages)
        return response

    async def run_tools(self, calls: Sequence[ToolCall], state: RunState) -> list[ToolOutcome]:
        """Each call a step. A call to a tool this agent does not have stops the run: in a fleet
        it means this worker's agent is not the one the run began with (another version),
        and answering "unknown tool" would let the run end as a success it is not."""
        missing = sorted({c.name for c in calls if self.registry.get(c.name) is None})
        if missing:
            raise MissingTools(
                f"the run calls {', '.join(missing)}, which this worker's agent does not have: run it on "
                "workers whose agents have the same tools (register_agent with the same factory)",
                state.result(final_text(state.messages), "error"),
            )
        return await run_turn(self.registry, calls, state, self.on_event, execute=run_as_steps)


class MissingTools(AgentError):
    """A durable run asked for tools its worker's agent does not have."""


class _Sent:
    """The history one model call answers: the live one, replaced by the recorded one on replay."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages


_SENT: ContextVar[_Sent | None] = ContextVar("agent_durable_sent", default=None)
"""Set by `DurableAgent.call_model` for the call it makes: `DurableLLM` is reached through
the core's retry loop, which knows nothing of the run's history, so the history travels
beside the call (per task, so concurrent runs never see each other's)."""


def recorded_verdicts(extension: Extension) -> Extension:
    """An `Approval` whose approver's verdicts are steps (a copy); any other extension as is."""
    if not isinstance(extension, Approval):
        return extension
    if isinstance(extension.approver, WaitForApproval | RecordedApprover):
        return extension
    wrapped = copy.copy(extension)
    wrapped.approver = RecordedApprover(extension.approver)
    return wrapped


def make_durable_parts(agent: Agent) -> None:
    """Route the agent's model calls and approvers through DBOS steps (once)."""
    if isinstance(agent.llm, DurableLLM):
        return
    agent.llm = DurableLLM(cast(LLM, agent.llm))
    agent.extensions = [recorded_verdicts(e) for e in agent.extensions]


def durable(agent: Agent) -> Agent:
    """`agent`, of whatever `Agent` subclass, made durable in place (its class gains the
    `DurableAgent` steps; its overrides of the other steps stay as they are)."""
    if not isinstance(agent, DurableAgent):
        base = type(agent)
        agent.__class__ = type(f"Durable{base.__name__}", (DurableAgent, base), {})
    make_durable_parts(agent)
    return agent
