"""What a run reports as it happens (`Agent(on_event=callback)`), prunes and compactions included.

The callback runs on the loop's thread (keep it quick); what it raises is logged and swallowed: a broken
progress bar must never cost a paid-for run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["RESULT_CHARS", "Event", "EventKind", "emit"]

log = logging.getLogger("agent")

EventKind = Literal[
    "step_start", "text", "thinking", "tool_call", "tool_result", "retry", "prune", "compact", "step_end"
]


@dataclass(frozen=True)
class Event:
    """One thing that happened in a run."""

    kind: EventKind
    step: int
    text: str = ""
    """The delta (`text`/`thinking`), reason (`retry`, `prune`), stop reason (`step_end`), summary (`compact`)
    or, for `tool_result`, what the tool returned as text (its first `RESULT_CHARS`, before the diet)."""
    tool: str | None = None
    """The tool's name, for `tool_call` and `tool_result`."""
    tool_use_id: str | None = None
    is_error: bool = False
    pruned: tuple[str, ...] = ()
    """For `prune`: each newly stubbed result, as its call: `fetch_orders(page=3)`."""
    folded: int = 0
    """For `compact`: how many messages of the history the summary replaced."""
    tokens_before: int = 0
    """For `prune` and `compact`: the history's estimated tokens before the change."""
    tokens_after: int = 0
    """... and after it (estimates calibrated on billed usage, as the budgets use)."""
    input: Mapping[str, Any] | None = None
    """For `tool_call`: the arguments the model sent."""


RESULT_CHARS = 2_000
"""Enough of a result to show what came back; the whole of it is in the history (and artifact)."""


def emit(callback: Callable[[Event], None] | None, event: Event) -> None:
    """Call `callback(event)` if there is one; its failures are logged, never raised."""
    if callback is not None:
        try:
            callback(event)
        except Exception:
            log.exception("on_event callback failed on %s (ignored)", event.kind)
