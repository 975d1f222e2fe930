"""What a failed model call may have cost, and whether to try again.

A call answered the first time needs none of this, so `call_with_retries` (`agent.accounting`)
loads it at a call's first failure. A lost or unreadable answer (a dropped connection, a body
that does not parse, an impossible usage) may have been billed, as the server may have done the
work: it is booked at a conservative estimate, never as free. A transient status (408, 409, 429,
5xx) is tried again after the server's `retry-after` or a backoff, the budgets checked first; a
400 or 401 would fail the same way again. The books are accounting's: an estimate is booked
through the `book` it hands in (`book_usage`), so this module does not import it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anthropic

from agent.render import redact
from agent.state import check_budgets
from agent.usage import ImpossibleUsage, Usage

if TYPE_CHECKING:
    from agent.config import AgentConfig
    from agent.models import Price
    from agent.state import RunState

__all__ = [
    "DEFAULT_OUTPUT_GUESS",
    "MAX_BACKOFF_S",
    "MAX_RETRY_AFTER_S",
    "RETRY_STATUSES",
    "Book",
    "backoff_seconds",
    "book_failed_attempt",
    "estimated_attempt",
    "may_be_billed",
    "retry_after",
    "retryable",
]

log = logging.getLogger("agent")

MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 60.0
RETRY_STATUSES = frozenset({408, 409, 429})
DEFAULT_OUTPUT_GUESS = 1024

Book = Callable[["AgentConfig", "RunState", Usage], None]
"""How a usage record is added to the run's books (`agent.accounting.book_usage`)."""


_UNREADABLE_OR_LOST = (
    anthropic.APIConnectionError,
    anthropic.APIResponseValidationError,
    json.JSONDecodeError,
    ImpossibleUsage,
)


def retryable(error: BaseException) -> bool:
    """A lost or unreadable answer, or a transient status: a 400 or 401 will fail the same way again."""
    if may_be_billed(error):
        return True
    if isinstance(error, anthropic.APIStatusError):
        return error.status_code in RETRY_STATUSES or error.status_code >= 500
    return False


def may_be_billed(error: BaseException) -> bool:
    """The request went out and the answer was lost or unreadable, so the server may have done
    (and billed) the work. An error status is an answer the API does not bill."""
    return isinstance(error, _UNREADABLE_OR_LOST)


def backoff_seconds(error: BaseException, attempt: int) -> float:
    """The server's `retry-after` when it sent one (capped), else exponential from 0.5 s."""
    response = getattr(error, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    if header is not None:
        try:
            return min(MAX_RETRY_AFTER_S, max(0.0, float(header)))
        except ValueError:
            pass
    return min(MAX_BACKOFF_S, 0.5 * 2.0**attempt)


def estimated_attempt(
    step: int, model: str, prompt_tokens: int, earlier: Sequence[Usage], price: Price | None, max_tokens: int
) -> Usage:
    """A conservative usage for a failed attempt that may have been billed: the whole prompt at
    the dearest input price, and the run's largest step output."""
    outputs = [u.output for u in earlier if u.purpose == "step"]
    output = min(max_tokens, max(outputs) if outputs else DEFAULT_OUTPUT_GUESS)
    cost = None
    if price is not None:
        dearest = max(price.input, price.cache_write_5m, price.cache_write_1h)
        cost = (prompt_tokens * dearest + output * price.output) / 1e6
    return Usage(step, model, None, prompt_tokens, 0, 0, output, cost, purpose="failed_attempt")


def book_failed_attempt(
    config: AgentConfig,
    request: Mapping[str, Any],
    state: RunState,
    raw: int | None = None,
    *,
    book: Book,
) -> None:
    """Book a failed attempt that the server may have billed, at `estimated_attempt`'s estimate."""
    model = request["model"]
    prompt = state.calibration.estimate(request, raw)
    price = config.models.price(model)
    estimate = estimated_attempt(state.step, model, prompt, state.usage.steps, price, request["max_tokens"])
    book(config, state, estimate)


async def retry_after(
    config: AgentConfig,
    error: Exception,
    attempt: int,
    request: dict[str, Any],
    state: RunState,
    raw: int,
    book: Book,
) -> bool:
    """Book what a failed attempt may have cost, then say whether to try again."""
    if may_be_billed(error):
        book_failed_attempt(config, request, state, raw, book=book)
    if not retryable(error) or attempt >= (config.model_retries or 0):
        return False
    wait = backoff_seconds(error, attempt)
    failure, tries = redact(f"{type(error).__name__}: {error}"), f"{attempt + 1} of {config.model_retries}"
    log.warning("[step %d] model call failed (%s); retry %s in %.1f s", state.step, failure, tries, wait)
    check_budgets(request, state, config.budget_policy(), raw)
    await asyncio.sleep(wait)
    return True
