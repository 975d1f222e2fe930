"""Sub-agents: an `Agent` used as a tool of another, so the reading happens in its own window.

    logs = Agent(system="You read logs and report findings in a few lines.", tools=[read_log])
    lead = Agent(tools=[...], extensions=[SubAgent(logs, name="read_logs", description="...")])
    lead.run("Why did checkout fail at 03:12?")

The parent's model sees one more tool, `read_logs(task)`. Calling it runs `logs` (its own
system prompt, tools, context window, diet and budgets) on the task, and its final answer
comes back as the tool's result: the child may read 200K tokens of logs, the parent reads
the 300 tokens of findings. Why: context economy. What the parent's window never holds it
never pays for again on every later step, and never has to prune or compact.

What a delegation guarantees (each tested in tests/ext/test_subagents.py):

- **One bill.** Each of the child's model calls is booked in the parent's `result.usage`
  (and its usage log and session), marked `purpose="subagent:<name>"`. The child runs under
  the smaller of its own budgets and what the parent has left (`max_cost_usd`,
  `max_input_tokens`), so a parent's budget covers its children; a child stopped by it
  comes back as an error result, and the parent's next call is checked as always.
- **A transcript.** The child's whole conversation is stored in the parent's artifact store;
  the result ends with `artifact:<name>_transcript-....txt`, which the parent's model (or
  you) reads back with `read_artifact`.
- **An ordinary tool result.** The findings are a `ToolOutcome` of the declared tool: the
  parent's `after_tool` hooks see it, the parent's diet renders it (compressed past the
  threshold, stored in full), a session records it, pruning treats it like any other.
- **Never twice, across the tree.** The child's run shares the parent's never-twice ledger
  (`agent.ext.approval.ledger`): with a `Session` on the parent, the child's approvals,
  `started` markers and results are written to the parent's file; a resumed parent that runs
  the child again never repeats the child's irreversible call: a finished one is refused as
  `already done`, one an earlier life left unfinished as of `outcome unknown`. The child
  still needs its own `Approval` to run gated tools at all (the core denies them otherwise).

How: `SubAgent` is an `Extension`. `tools` declares the task tool; `before_tool` runs the
child for a call to it and returns the outcome, with the parent's `RunState` in hand (its
usage, budget, store and ledger), which a tool function never gets. The price of that seam:
several delegations asked for in one turn run one after another, in call order; which also
keeps the dollar cap exact, since each child is bounded by what is left when it starts.
The child's own budgets bound how long it runs (the parent's `tool_timeout` does not apply).
The child keeps its own artifacts (under its own `artifacts_dir`); the parent's
`read_artifact` reaches them when both agents use the same folder (the default).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError

from agent.context.artifacts import artifact_name
from agent.errors import AgentError
from agent.ext.approval.ledger import LEDGER, ledger_of
from agent.ext.subagents.child import (
    KEY,
    ChildRun,
    Watch,
    bounded,
    roll_up,
    shared_ledger,
    transcript_text,
    unfinished,
    unpriced_models,
)
from agent.extension import Extension
from agent.loop import Agent
from agent.messages import opening_messages
from agent.render import describe_error, redact
from agent.state import RunState
from agent.tools import ServerTool, Tool, ToolCall, ToolOutcome, tool

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore

__all__ = ["ChildRun", "SubAgent", "transcript_text"]

TASK_HELP = (
    "the task, with everything the sub-agent needs: it sees nothing of this conversation but "
    "this text, and answers with its findings"
)


def task_tool(name: str, description: str) -> Tool:
    """The tool the parent's model calls: `name(task)`. Its body never runs under a `SubAgent`
    (whose `before_tool` answers every call); declared elsewhere, it says so."""

    def delegate(task: str) -> str:
        raise RuntimeError(f"the sub-agent {name} runs only under its SubAgent extension")

    delegate.__doc__ = f"Delegate a task.\n\nArgs:\n    task: {TASK_HELP}\n"
    if not isinstance(description, str) or not description.strip():
        raise TypeError(f"SubAgent {name!r}: description= is what the parent's model reads; it is empty")
    return tool(name=name, description=description)(delegate)


class SubAgent(Extension):
    """`agent` as the parent's tool `name(task)`: run on the task, its answer the tool's result."""

    def __init__(self, agent: Agent, *, name: str, description: str) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"SubAgent takes an Agent to delegate to, not {type(agent).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"SubAgent: name must be a str (the tool's name), not {type(name).__name__}")
        self.agent, self.name = agent, name
        self.tool = task_tool(name, description)

    def tools(self, declared: Sequence[Tool | ServerTool]) -> Sequence[Tool | ServerTool]:
        return [*declared, self.tool]

    async def start(self, run: RunState) -> None:
        """Refuse, before any call, a child the parent's dollar budget could not cover."""
        parent = run.agent
        if parent is self.agent:
            raise ValueError(f"SubAgent {self.name}: an agent cannot be its own sub-agent")
        if (
            parent is not None
            and parent.max_cost_usd is not None
            and (missing := unpriced_models(self.agent))
        ):
            raise ValueError(
                f"SubAgent {self.name}: the parent's max_cost_usd cannot cover a child whose model has "
                f"no price ({', '.join(missing)}): pass the child models=MODELS.with_price(...)"
            )

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        """A call to this sub-agent's tool is answered by running the child; invalid input is
        left to the core, which tells the model what is wrong with it."""
        if call.name != self.name or run.agent is None:
            return None
        declared: Tool | None = run.agent.registry.get(self.name)
        if declared is None:
            return None
        try:
            task = str(declared.input_model.model_validate(dict(call.input)).model_dump()["task"])
        except (ValidationError, TypeError, ValueError, KeyError):
            return None
        return await self.delegate(call, task, run)

    async def delegate(self, call: ToolCall, task: str, run: RunState) -> ToolOutcome:
        """Run the child on `task` under the parent's remaining budgets and ledger; its usage is
        booked in the parent's however it ends, its transcript stored, its answer returned."""
        began, declared = time.monotonic(), run.agent.registry.get(self.name)

        def outcome(text: str, is_error: bool) -> ToolOutcome:
            return ToolOutcome(call, text, is_error, time.monotonic() - began, declared)

        if not task.strip():
            return outcome(f"invalid input for {self.name}: the task is empty; say what to do", True)
        child = bounded(self.agent, run.agent, run.usage.priced_cost_usd, run.usage.prompt)
        if isinstance(child, str):
            return outcome(f"not run: sub-agent {self.name} has no budget left: {child}", True)
        try:
            messages = opening_messages((), task, tools_declared=len(child.registry) > 0)
        except ValueError as error:
            return outcome(f"invalid input for {self.name}: {error}", True)
        state = RunState(messages=messages, prompt=task)
        ledger = state.extras[LEDGER] = shared_ledger(ledger_of(run), child)
        watch = state.extras[KEY] = Watch(self.name, unfinished=unfinished(ledger))
        try:
            result = await child.arun_state(state, [ChildRun()])
            text, is_error, stop = result.text or "(no answer)", False, result.stop_reason
        except AgentError as error:
            last = error.result.text if error.result is not None else ""
            stop = error.result.stop_reason if error.result is not None else type(error).__name__
            text, is_error = f"sub-agent {self.name} stopped: {error}", True
            text += f"\nIts last words: {last}" if last else ""
        except Exception as error:  # the child's bug is the parent model's information, as a tool's is
            text, is_error, stop = f"sub-agent {self.name} failed: {describe_error(error)}", True, "error"
        finally:  # paid for, however it ended (a Ctrl-C included)
            roll_up(state.usage, run, self.name)
            run.uncertain += [f"{self.name}/{entry}" for entry in state.uncertain]
        cost = "$?" if state.usage.cost_usd is None else f"${state.usage.cost_usd:.4f}"
        footer = f"sub-agent {self.name}: {len(state.usage.steps)} model calls, {cost}, stop={stop}"
        kept = keep_transcript(run.agent.artifact_store(run), self.name, task, watch, footer)
        where = f"full transcript: artifact:{kept}" if kept else "no transcript kept (artifacts are off)"
        return outcome(f"{text}\n\n[{footer}; {where}]", is_error)


def keep_transcript(
    store: ArtifactStore | None, name: str, task: str, watch: Watch, footer: str
) -> str | None:
    """Store the child's transcript (redacted) in the parent's store; its artifact name, or
    None when there is no store or it refused (a full disk never breaks the parent's run)."""
    if store is None:
        return None
    kept = store.fit(redact(transcript_text(name, task, watch.turns, footer)))
    stored = artifact_name(f"{name}_transcript", kept, is_json=False)
    try:
        return stored if store.put(stored, kept, redacted=True) else None
    except (OSError, NotImplementedError):
        return None
