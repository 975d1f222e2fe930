"""What one model call leaves in the run's books: its usage, priced, and what it teaches.

After every answer the run learns four things, each read by a later step: the usage
record (priced at the model's own prices, logged, appended to `usage_log`), the token
calibration (billed prompt vs estimate, so the next estimate is closer), the hidden
size of each new thinking block (so an empty-looking block is not mistaken for a small
one), and the prefix guard's view (so a silent cache miss gets a reason). A response
that carries no usage at all (a compatible server that sends none) is estimated, never
booked as free.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anthropic.types import Message
from anthropic.types import Usage as SDKUsage

from agent.context.tokens import estimate_tokens, prompt_estimate
from agent.retry import estimated_attempt
from agent.usage import Usage

if TYPE_CHECKING:
    from agent.config import AgentConfig
    from agent.state import RunState

__all__ = ["book_answer", "book_failed_attempt", "book_usage"]

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
