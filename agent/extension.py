"""The one seam for everything beyond the core: an `Extension` is a small class with hooks.

A feature that is not the loop itself (sessions, approval, MCP, tool search, a request log)
is an `Extension` passed as `Agent(extensions=[...])`. Every hook is optional, declared below
in the order a run meets them, and called in list order: a request passes through each
`request` hook in turn, so a logger that should see the final body goes last.

Why hooks and not `Agent` keywords: a feature's options live on its own constructor, the
core's option list stays the mission's, and a learner can read the loop without meeting any
of it. What a hook keeps for one run goes in `run.extras`, never on the extension, so one
agent can serve two runs at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anthropic.types import Message

    from agent.state import RunState
    from agent.tools import ServerTool, Tool, ToolCall, ToolOutcome

__all__ = ["Extension", "hooked", "rejected"]

Msg = dict[str, Any]


class Extension:
    """Base class of a feature on the seam; every hook is optional."""

    gate: bool = False
    """True for an extension that decides gated calls (`irreversible`, `requires_approval`)
    in `before_tool`. Without one, the core denies every gated call: safe by default."""

    def tools(self, declared: Sequence[Tool | ServerTool]) -> Sequence[Tool | ServerTool]:
        """The agent's tools as this extension wants them declared (its own added, some
        deferred); called once at construction, the result is declared all run."""
        return declared

    async def start(self, run: RunState) -> None:
        """A run starts (or resumes from a recorded state)."""

    def history(self, messages: list[Msg], run: RunState) -> list[Msg]:
        """Each step, after the core's pruning: the history to send (a new list; never edit in place)."""
        return messages

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        """Each step, the request body about to be sent; return a new dict to change it."""
        return request

    def response(self, response: Message, run: RunState) -> Message:
        """Each model reply, once booked; return it (or a corrected copy)."""
        return response

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        """Before each call: an outcome to use instead (a denial, a recorded result), or None to run it."""
        return None

    def after_tool(self, outcome: ToolOutcome, run: RunState) -> ToolOutcome:
        """Each outcome the moment it is known, before it is rendered; return it or a replacement.
        For a sync tool this runs on the tool's thread: keep it quick and thread-safe."""
        return outcome

    def render(self, outcome: ToolOutcome, run: RunState) -> str | list[dict[str, Any]] | None:
        """For each result, the `tool_result` content, or None to let the core render it."""
        return None

    def record(self, turns: Sequence[Msg], run: RunState) -> None:
        """Turns just appended to the run's history."""

    def final_answer(self, response: Message, run: RunState) -> Msg | None:
        """The model's final reply (any stop but a tool call or a pause), already in the history:
        None accepts it and the run ends with it; a user turn turns it down, and the loop sends
        that turn and goes on, a step like any other (budgets and `max_steps` included). Why a
        hook: an answer that must be, say, valid JSON of a type is only known to be wrong once
        it is read, and the model is the one who can fix it. Raise an `AgentError` to end the run."""
        return None

    def finish(self, run: RunState, error: BaseException | None) -> None:
        """The run ended, normally (`error` is None) or by `error`, which is raised after."""


def rejected(response: Message, run: RunState) -> Msg | None:
    """The turn of the first extension whose `final_answer` turns `response` down, else None."""
    extensions: list[Extension] = run.extensions  # typed here: `agent.state` cannot import the seam
    return next((t for ext in extensions if (t := ext.final_answer(response, run)) is not None), None)


@asynccontextmanager
async def hooked(run: RunState) -> AsyncIterator[None]:
    """The run's extensions started (in order) before the body, and finished (in reverse)
    after it: with None, or with the error the body raised, which is raised again. A
    `start` that fails counts as the run failing: every extension still hears `finish`."""
    try:
        for ext in run.extensions:
            await ext.start(run)
        yield
    except BaseException as error:
        for ext in reversed(run.extensions):
            ext.finish(run, error)
        raise
    for ext in reversed(run.extensions):
        ext.finish(run, None)
