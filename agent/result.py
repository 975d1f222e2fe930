"""What a run hands back: the final text, why it stopped, what it cost, what was said.

A module of its own so that the errors, which carry the partial result of a run that
stopped early, need nothing of the run's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.usage import RunUsage, Usage

__all__ = ["RunResult"]

Msg = dict[str, Any]


@dataclass
class RunResult:
    """How a run ended: the final text, why it stopped, what it cost, what was said."""

    text: str
    stop_reason: str
    usage: RunUsage
    messages: list[Msg]
    detail: str | None = None
    """Why the run ended when that was not a normal final answer."""
    uncertain: tuple[str, ...] = ()
    """The irreversible calls whose outcome is unknown (`name (id)`): they timed out, or a run
    died while they ran and their tool takes no idempotency key. Check each before trusting
    a final answer: a run with one does not end in plain success (`detail` says so)."""

    @property
    def steps(self) -> list[Usage]:
        """One usage record per model call."""
        return self.usage.steps
