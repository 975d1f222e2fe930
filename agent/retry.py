"""Retrying a failed model call without hiding what the failures cost.

The SDK retries 408/409/429/5xx and lost connections on its own, but its retries are
invisible: a call that timed out twice and then succeeded reports one usage, while the
server may have billed three. A dollar budget that cannot see two thirds of the bill is
not a budget. So the agent owns the retry loop (the SDK's own retries are switched off,
see `AnthropicLLM.without_retries`), and every failed attempt that the server may have
billed (a timeout, a dropped connection, a malformed answer) is recorded with a
conservative estimate: the whole prompt at the dearest input price it could have been
billed at, and as much output as the run's calls have averaged. Budgets are checked
again before each retry, so the README's promise holds under timeouts too: a budget is
overshot by at most one call.

Pure functions: what to retry, how long to wait, what an attempt may have cost.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import anthropic

from agent.models import Price
from agent.usage import Usage

__all__ = ["MAX_BACKOFF_S", "backoff_seconds", "estimated_attempt", "may_be_billed", "retryable"]

MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 60.0
RETRY_STATUSES = frozenset({408, 409, 429})
DEFAULT_OUTPUT_GUESS = 1024
_UNREADABLE_OR_LOST = (
    anthropic.APIConnectionError,
    anthropic.APIResponseValidationError,
    json.JSONDecodeError,
)
"""Errors after which the server may have done the work: lost, timed out, or answered unreadably."""


def retryable(error: BaseException) -> bool:
    """Worth another attempt: a lost connection or timeout, a malformed answer, or a status the
    API documents as transient (408, 409, 429, 5xx). A 400 or 401 will fail the same way again."""
    if may_be_billed(error):
        return True
    if isinstance(error, anthropic.APIStatusError):
        return error.status_code in RETRY_STATUSES or error.status_code >= 500
    return False


def may_be_billed(error: BaseException) -> bool:
    """The server may have done (and billed) the work: it timed out or the connection dropped
    after the request went out, or it answered with a body the client could not read. An error
    status is an answer that the API does not bill."""
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
    step: int,
    model: str,
    prompt_tokens: int,
    earlier: Sequence[Usage],
    price: Price | None,
    max_tokens: int,
) -> Usage:
    """A conservative usage record for an attempt that failed after it may have been billed."""
    outputs = [u.output for u in earlier if u.purpose == "step"]
    output = min(max_tokens, max(outputs) if outputs else DEFAULT_OUTPUT_GUESS)
    cost = None
    if price is not None:
        dearest = max(price.input, price.cache_write_5m, price.cache_write_1h)
        cost = (prompt_tokens * dearest + output * price.output) / 1e6
    return Usage(step, model, None, prompt_tokens, 0, 0, output, cost, purpose="failed_attempt")
