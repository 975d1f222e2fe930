"""How a run ends: its `RunResult`, or a typed exception carrying the partial one, so paid-for work is
never lost because the run could not finish."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agent.usage import RunUsage, Usage

__all__ = [
    "AgentError",
    "BudgetExceeded",
    "CostBudgetExceeded",
    "MissingAPIKey",
    "ModelCallFailed",
    "RunResult",
    "StepBudgetExceeded",
    "TokenBudgetExceeded",
    "did_you_mean",
]

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
    """Irreversible calls (`name (id)`) whose outcome is unknown (timed out, or cut off by a dead run with no
    idempotency key): check each before trusting the answer."""
    output: Any = None
    """The final answer as an object, when an extension made one of it (`agent.ext.output`); else None."""

    @property
    def steps(self) -> list[Usage]:
        """One usage record per model call."""
        return self.usage.steps


def did_you_mean(name: str, options: Iterable[str], cutoff: float = 0.6) -> str:
    """' (did you mean "x"?)' for the closest option, else ''."""
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=cutoff)
    return f' (did you mean "{close[0]}"?)' if close else ""


class AgentError(Exception):
    """Base class of every error a run raises; `result` holds what was done so far."""

    def __init__(self, message: str, result: RunResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class BudgetExceeded(AgentError):
    """A run stopped because the next step would go over one of its budgets."""


class StepBudgetExceeded(BudgetExceeded):
    """`max_steps` model calls were made and the model still wanted to go on."""


class CostBudgetExceeded(BudgetExceeded):
    """The next call would push the run's dollar cost over `max_cost_usd`."""


class TokenBudgetExceeded(BudgetExceeded):
    """The next call would push the run's cumulative prompt tokens over `max_input_tokens`."""


class ModelCallFailed(AgentError):
    """The model call still failed after the SDK's retries; `__cause__` is the SDK error."""


class MissingAPIKey(AgentError):
    """No key and no auth token: raised before the first request, not as the SDK's `TypeError` mid-call."""
