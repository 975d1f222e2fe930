"""What one run accumulates (`RunState`, so an `Agent` is configuration only) and may still spend.

Budgets are checked *before* each call: billed usage plus the calibrated estimate of the next request, so
the only overshoot is the last output and the estimate's error. Dollars assume the worst input price."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agent.context.cache import PrefixGuard
from agent.context.tokens import Calibration, Sizes, prompt_estimate
from agent.errors import CostBudgetExceeded, RunResult, TokenBudgetExceeded
from agent.messages import Msg, final_text
from agent.models import ModelTable
from agent.steps import Workers
from agent.tools import ToolCall
from agent.usage import RunUsage

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore

__all__ = ["BudgetPolicy", "RunResult", "RunState", "check_budgets"]


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
    """Raise `TokenBudgetExceeded` / `CostBudgetExceeded` if `request` (`raw`: its `prompt_estimate`, if
    known) would break a budget."""
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


@dataclass
class RunState:
    """Everything one run accumulates; hooks receive it, so one Agent can run twice at once."""

    messages: list[Msg]
    usage: RunUsage = field(default_factory=RunUsage)
    calibration: Calibration = field(default_factory=Calibration)
    step: int = 0
    cache_guard: PrefixGuard = field(default_factory=PrefixGuard)
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6])
    """Names this run's artifacts folder (and an extension's records of it)."""
    prompt: str = ""
    """This run's request, verbatim, for compaction to quote (with `history=`, it is not `messages[0]`)."""
    artifacts: ArtifactStore | None = None
    """Full tool results of this run (created on first use; see `AgentConfig.artifact_store`)."""
    pending: tuple[Msg, list[ToolCall]] | None = None
    """A restored turn's reply and its unanswered calls, run before the next model call (set on restore)."""
    agent: Any = field(default=None, repr=False)
    """The `Agent` running this run, for extensions that need its options; context functions never take it."""
    extensions: list[Any] = field(default_factory=list, repr=False)
    """This run's `Extension`s, in hook order (the run's own, then the agent's)."""
    extras: dict[str, Any] = field(default_factory=dict, repr=False)
    """What extensions keep for this run, each under its own key."""
    uncertain: list[str] = field(default_factory=list)
    """Irreversible calls whose outcome is unknown, `name (id)` (`ToolOutcome.uncertain`)."""
    workers: Workers = field(default_factory=Workers, repr=False)
    """The threads this run's sync tool calls run on (closed when the run ends)."""
    tools: Any = field(default=None, repr=False)
    """What this run's calls run against (`AgentConfig.tools_for`), made on the first turn."""
    output: Any = None
    """The final answer as an object, set by the extension that validated it (`RunResult.output`)."""
    sizes: Sizes = field(default_factory=Sizes, repr=False, compare=False)
    """The JSON length of each message this run measured (`agent.context.tokens.Sizes`)."""
    measured: tuple[int, dict[str, Any], int] | None = field(default=None, repr=False)
    """(step, request, its `prompt_estimate`) of this step's last compaction measure (`raw_estimate`)."""

    def result(self, text: str, stop_reason: str, detail: str | None = None) -> RunResult:
        if self.uncertain and detail is None:
            detail = (
                f"outcome unknown for {len(self.uncertain)} irreversible call(s): {', '.join(self.uncertain)}"
            )
        return RunResult(
            text, stop_reason, self.usage, list(self.messages), detail, tuple(self.uncertain), self.output
        )

    def raw_estimate(self, request: dict[str, Any]) -> int:
        """`prompt_estimate(request)`, reusing this step's measure when `request` equals it."""
        if self.measured is not None and self.measured[0] == self.step and self.measured[1] == request:
            return self.measured[2]
        return prompt_estimate(request, self.sizes.chars)

    def with_messages(self, messages: list[Msg]) -> RunState:
        """A shallow copy holding `messages` instead (to measure a candidate history)."""
        return replace(self, messages=messages)
