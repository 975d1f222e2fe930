"""Budgets checked *before* a call, so a run never overshoots by more than one step.

What was billed so far is exact; what is about to be sent is estimated (chars/4,
calibrated against billed usage). A call is refused when the two together would
pass a budget, so the only overshoot left is the last call's output and the
estimate's error. Dollars assume the worst input price the request could be billed
at (a cache write when caching is on), never a hoped-for cache read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.errors import CostBudgetExceeded, TokenBudgetExceeded
from agent.messages import final_text
from agent.models import ModelTable

if TYPE_CHECKING:
    from agent.state import RunState

__all__ = ["BudgetPolicy", "check_budgets"]


@dataclass(frozen=True)
class BudgetPolicy:
    """The budgets of a run and what the price of the next call depends on."""

    model: str
    models: ModelTable
    max_input_tokens: int | None = None
    max_cost_usd: float | None = None
    cache: bool = True
    cache_ttl: str = "5m"


def check_budgets(
    request: Mapping[str, Any], state: RunState, policy: BudgetPolicy, raw: int | None = None
) -> None:
    """Raise `TokenBudgetExceeded` / `CostBudgetExceeded` if `request` would break a budget
    (`raw`: the request's `prompt_estimate`, when the caller has it already)."""
    if policy.max_input_tokens is None and policy.max_cost_usd is None:
        return
    coming = state.calibration.estimate(request, raw)
    spent = state.usage.prompt
    if policy.max_input_tokens is not None and spent + coming > policy.max_input_tokens:
        raise TokenBudgetExceeded(
            f"next call (~{coming:,} tokens) would take the run past max_input_tokens="
            f"{policy.max_input_tokens:,} ({spent:,} used)",
            state.result(final_text(state.messages), "max_input_tokens"),
        )
    price = policy.models.price(str(request.get("model", policy.model)))
    if policy.max_cost_usd is None or price is None:
        return
    write = price.cache_write_1h if policy.cache_ttl == "1h" else price.cache_write_5m
    worst = max(price.input, write) if policy.cache else price.input
    so_far = state.usage.priced_cost_usd  # an unpriced step adds 0
    next_call = coming * worst / 1e6 + policy.models.fees.most(request)  # server tools' fees at most
    if so_far + next_call > policy.max_cost_usd:
        raise CostBudgetExceeded(
            f"next call (~${next_call:.4f}) would take the run past "
            f"max_cost_usd={policy.max_cost_usd} (${so_far:.4f} spent)",
            state.result(final_text(state.messages), "max_cost_usd"),
        )
