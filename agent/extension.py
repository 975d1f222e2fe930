"""The one seam for everything beyond the core: an `Extension` is a small class with hooks.

A feature that is not the loop itself (sessions, approval, MCP, tool search, a request log,
...) is an `Extension` passed as `Agent(extensions=[...])`. Each hook is optional: the base
class does nothing, so a feature overrides only the points it cares about. The loop calls
them at its natural points, in list order (a request passes through each `request` hook in
turn, so a logger that should see the final body goes last):

    tools(declared)           at construction: the tool list as this feature wants it declared
    start(run)                a run begins (or resumes)
    history(messages, run)    the history to send this step, after the core's pruning
    request(body, run)        adjust the request body (betas, containers, toolsets)
    response(reply, run)      see each model reply, as it comes
    before_tool(call, run)    an outcome to use instead of running the call (a denial, a
                              result already recorded), or None to let it run
    after_tool(outcome, run)  see (or replace) each tool's outcome
    render(outcome, run)      the content the model reads for a result, or None for the core's
    record(turns, run)        turns just appended to the history
    finish(run, error)        the run ended: with a result (error None) or with `error`

Why hooks and not `Agent` keywords: a feature's options live on its own constructor, the
core's option list stays the mission's, and a learner can read the loop without meeting
any of it. What a hook keeps for one run goes in `run.extras`, never on the extension,
so one agent can serve two runs at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anthropic.types import Message

    from agent.state import RunState
    from agent.tools import ServerTool, Tool, ToolCall, ToolOutcome

__all__ = ["Extension", "hooked"]

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
        """The history to send this step; return a new list to change it, never edit in place."""
        return messages

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        """The request body about to be sent; return a new dict to change it."""
        return request

    def response(self, response: Message, run: RunState) -> Message:
        """A model reply, booked; return it (or a corrected copy)."""
        return response

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        """An outcome to use instead of running `call`, or None to run it."""
        return None

    def after_tool(self, outcome: ToolOutcome, run: RunState) -> ToolOutcome:
        """A tool's outcome the moment it is known (on the thread that ran it, for a sync
        tool: keep it quick and thread-safe), before it is rendered for the model."""
        return outcome

    def render(self, outcome: ToolOutcome, run: RunState) -> str | list[dict[str, Any]] | None:
        """The `tool_result` content for `outcome`, or None to let the core render it."""
        return None

    def record(self, turns: Sequence[Msg], run: RunState) -> None:
        """Turns just appended to the run's history."""

    def finish(self, run: RunState, error: BaseException | None) -> None:
        """The run ended, normally (`error` is None) or by `error`, which is raised after."""


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
