"""The one seam for everything beyond the core loop (sessions, approval, MCP, ...): `Agent(extensions=[...])`.

Hooks, not `Agent` keywords: a feature's options live on its own constructor, and the loop reads without it.
Every hook is optional, declared in the order a run meets it and called in list order (a request passes
each `request` hook in turn, so a logger that should see the final body goes last). Per-run state goes
in `run.extras`, never on the extension, so one agent can serve two runs at once."""

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
        """The tools as this extension would declare them (its own added, some deferred), at construction."""
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
        """The model's final reply (any stop but a tool call or pause), already in the history: None accepts
        it; a user turn turns it down and is sent as the next step (budgets, `max_steps` apply), as only the
        model can fix, say, invalid JSON. Raise an `AgentError` to end the run."""
        return None

    def finish(self, run: RunState, error: BaseException | None) -> None:
        """The run ended, normally (`error` is None) or by `error`, which is raised after."""


def rejected(response: Message, run: RunState) -> Msg | None:
    """The turn of the first extension whose `final_answer` turns `response` down, else None."""
    extensions: list[Extension] = run.extensions  # typed here: `agent.state` cannot import the seam
    return next((t for ext in extensions if (t := ext.final_answer(response, run)) is not None), None)


@asynccontextmanager
async def hooked(run: RunState) -> AsyncIterator[None]:
    """Start the run's extensions (in order) before the body, finish them (in reverse) after it, with the
    error it raised, if any; a failed `start` fails the run, and every extension still hears `finish`."""
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
