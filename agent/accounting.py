"""One model call and what it leaves in the run's books: its usage, priced, and what it teaches.

`call_with_retries` is the loop's `call_model`: one attempt through the seam, tried again
on a transient failure (each retry budget-checked, each failed attempt that may have
been billed counted at a conservative estimate, `agent.retry`).

After every answer the run learns four things, each read by a later step: the usage
record (priced at the model's own prices, logged, appended to `usage_log`), the token
calibration (billed prompt vs estimate, so the next estimate is closer), the hidden
size of each new thinking block (so an empty-looking block is not mistaken for a small
one), and the prefix guard's view (so a silent cache miss gets a reason). A response
that carries no usage at all (a compatible server that sends none) is estimated, never
booked as free.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from anthropic.types import Message
from anthropic.types import Usage as SDKUsage

from agent import retry
from agent.budget import check_budgets
from agent.context.history import HistoryPolicy, SummaryCutOff
from agent.context.tokens import estimate_tokens, prompt_estimate
from agent.errors import ModelCallFailed
from agent.events import Event, emit
from agent.llm import LLM
from agent.messages import final_text, text_of
from agent.models import ModelInfo
from agent.retry import estimated_attempt
from agent.steps import ask
from agent.usage import Usage

if TYPE_CHECKING:
    from agent.budget import BudgetPolicy
    from agent.config import AgentConfig
    from agent.state import RunState

__all__ = [
    "book_answer",
    "book_failed_attempt",
    "book_usage",
    "call_with_retries",
    "larger_budget",
    "summarizer",
]

log = logging.getLogger("agent")


def book_usage(config: AgentConfig, state: RunState, record: Usage) -> None:
    """Add one usage record to the run (and to the JSONL usage log, if there is one)."""
    state.usage.add(record, Path(config.usage_log) if config.usage_log else None)


def book_failed_attempt(config: AgentConfig, request: Mapping[str, Any], state: RunState) -> None:
    """Book a failed attempt that the server may have billed, at `agent.retry`'s conservative
    estimate (the whole prompt at the dearest input price, the run's largest output)."""
    model = request["model"]
    estimate = estimated_attempt(
        state.step,
        model,
        state.calibration.estimate(request),
        state.usage.steps,
        config.models.price(model),
        request["max_tokens"],
    )
    book_usage(config, state, estimate)


def book_answer(
    config: AgentConfig, request: Mapping[str, Any], response: Message, state: RunState, latency_s: float
) -> Message:
    """Record `response` (the answer to `request`) in the run's books; returns the response,
    with an estimated usage when the server sent none."""
    if getattr(response, "usage", None) is None:
        log.warning("[step %d] the response carried no usage; recording an estimate", state.step)
        content = [b.model_dump(mode="json") for b in response.content]
        guess = {
            "input_tokens": state.calibration.estimate(request),
            "output_tokens": estimate_tokens(content),
        }
        response = response.model_copy(update={"usage": SDKUsage.model_validate(guess)})
    record = Usage.from_message(
        state.step,
        response,
        effort=(request.get("output_config") or {}).get("effort"),
        latency_s=latency_s,
        models=config.models,
        model=request["model"],
    )
    book_usage(config, state, record)
    calibration = state.calibration
    calibration.observe(prompt_estimate(request), record.prompt, calibration.hidden_tokens(request))
    details = response.usage.output_tokens_details
    if details is not None and details.thinking_tokens:
        calibration.note_thinking(
            [b.model_dump(mode="json") for b in response.content], details.thinking_tokens
        )
    if config.cache:
        state.cache_guard.observe(request, record)
    return response


async def call_with_retries(config: AgentConfig, request: dict[str, Any], state: RunState) -> Message:
    """The answer to `request`, booked; `ModelCallFailed` (with the partial run) once the
    retries are spent or the error is not transient."""
    for attempt in itertools.count():
        started = time.monotonic()
        try:
            response = await _send(config, request, state)
            break
        except Exception as error:
            if not await _retry_after(config, error, attempt, request, state):
                raise ModelCallFailed(
                    f"model call failed at step {state.step}: {type(error).__name__}: {error}",
                    state.result(final_text(state.messages), "error"),
                ) from error
    return book_answer(config, request, response, state, time.monotonic() - started)


async def _send(config: AgentConfig, request: dict[str, Any], state: RunState) -> Message:
    """One attempt; with `on_event` and a streaming `LLM`, deltas are reported as they come."""
    step, callback = state.step, config.on_event

    def on_delta(kind: str, text: str) -> None:
        emit(callback, Event("thinking" if kind == "thinking" else "text", step, text))

    return await ask(cast(LLM, config.llm), request, None if callback is None else on_delta)


async def _retry_after(
    config: AgentConfig, error: Exception, attempt: int, request: dict[str, Any], state: RunState
) -> bool:
    """Count what a failed attempt may have cost, then say whether to try again (a transient
    error, retries left, and the budgets still allow the next attempt)."""
    if retry.may_be_billed(error):
        book_failed_attempt(config, request, state)
    if not retry.retryable(error) or attempt >= (config.model_retries or 0):
        return False
    wait = retry.backoff_seconds(error, attempt)
    failure, tries = f"{type(error).__name__}: {error}", f"{attempt + 1} of {config.model_retries}"
    log.warning("[step %d] model call failed (%s); retry %s in %.1f s", state.step, failure, tries, wait)
    check_budgets(request, state, config.budget_policy())
    await asyncio.sleep(wait)
    return True


def larger_budget(request: Mapping[str, Any], info: ModelInfo | None, step: int) -> int | None:
    """Twice the request's `max_tokens` (up to the model's limit) for a reply cut off before
    it said anything usable, or None when there is no room to grow."""
    asked = int(request["max_tokens"])
    larger = min(info.max_output if info else asked * 2, asked * 2)
    if larger <= asked:
        return None
    cut = f"reply cut off by max_tokens={request['max_tokens']:,} before it said anything usable"
    log.warning("[step %d] %s; retrying once with max_tokens=%s", step, cut, f"{larger:,}")
    return larger


def _can_turn_thinking_off(info: ModelInfo | None) -> bool:
    """A summary needs no reasoning budget; turn thinking off where the model allows it."""
    return info is not None and info.thinks_by_default and "disabled" in info.thinking_types


def summarizer(
    llm: LLM, policy: HistoryPolicy, budgets: BudgetPolicy, state: RunState, usage_log: Any
) -> Callable[[str], str]:
    """One tool-less, budget-checked call per summary; its cost lands in the run's usage."""
    log_path = Path(usage_log) if usage_log else None

    def summarize(transcript: str) -> str:
        from agent.context.compact import SUMMARY_PROMPT, summary_request

        model = policy.summarizer_model
        request = summary_request(
            transcript,
            model=model,
            max_tokens=policy.max_tokens,
            prompt=policy.summary_prompt or SUMMARY_PROMPT,
            thinking_off=_can_turn_thinking_off(policy.models.lookup(model)),
        )
        check_budgets(request, state, budgets)
        response = llm.create(request)
        usage = Usage.from_message(state.step, response, models=policy.models, model=request["model"])
        state.usage.add(replace(usage, purpose="summary"), log_path)
        if response.stop_reason == "max_tokens":
            raise SummaryCutOff(f"the summary was cut off by max_tokens={request['max_tokens']:,}")
        return text_of(response).strip()

    return summarize
