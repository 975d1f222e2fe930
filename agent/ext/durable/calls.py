"""A model call as a DBOS step: recorded once, replayed from the record, never paid twice.

A step's output is stored (pickled) in the system database, so it must be plain data:
the `Message` is stored as its JSON dump, and a failed attempt as a small record from
which the same kind of SDK error is rebuilt outside the step (`agent.retries` decides on
the error's type and status, so a replayed failure is retried or not exactly as the
first time; an SDK exception itself holds an HTTP response and does not pickle).

A 429 does not fail the run: the step waits out the server's `retry-after` (capped) and
asks again, and while it waits every other model call of this worker process waits too
(`RateGate`), so a worker slows down as a whole instead of hammering a limited API. The
queue's own limiter (`agent.ext.durable.runtime.register_queue`) bounds how fast runs start.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import httpx2 as httpx
from anthropic.types import Message

from agent.retries import backoff_seconds, may_be_billed

__all__ = ["MAX_RATE_LIMIT_WAITS", "RATE_GATE", "RateGate", "as_record", "rebuild_error", "rebuild_message"]

MAX_RATE_LIMIT_WAITS = 30
"""429s one model call sits out before its error goes to the loop (which may retry it in turn)."""

_REQUEST = httpx.Request("POST", "https://api.anthropic.com/v1/messages")


class RateGate:
    """Not before this moment: the shared pause of one process after a 429."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._not_before = 0.0

    def slow_down(self, seconds: float) -> None:
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)

    def delay(self) -> float:
        with self._lock:
            return max(0.0, self._not_before - time.monotonic())


RATE_GATE = RateGate()


def rate_limit_wait(error: BaseException, attempt: int) -> float | None:
    """Seconds to wait before asking again after `error`, or None when it is not a 429
    (or this call has waited out enough of them)."""
    if not isinstance(error, anthropic.RateLimitError) or attempt >= MAX_RATE_LIMIT_WAITS:
        return None
    return max(0.05, backoff_seconds(error, min(attempt, 4)))


def call_through_gate(create: Callable[[], Message]) -> dict[str, Any]:
    """`create()` (blocking), 429s waited out; the answer or the failure as a plain record."""
    for attempt in range(MAX_RATE_LIMIT_WAITS + 1):
        time.sleep(RATE_GATE.delay())
        try:
            return {"message": create().model_dump(mode="json")}
        except Exception as error:
            if (wait := rate_limit_wait(error, attempt)) is None:
                return as_record(error)
            RATE_GATE.slow_down(wait)
    raise AssertionError("unreachable")  # pragma: no cover


async def acall_through_gate(create: Callable[[], Awaitable[Message]]) -> dict[str, Any]:
    """`call_through_gate` on the event loop."""
    for attempt in range(MAX_RATE_LIMIT_WAITS + 1):
        await asyncio.sleep(RATE_GATE.delay())
        try:
            return {"message": (await create()).model_dump(mode="json")}
        except Exception as error:
            if (wait := rate_limit_wait(error, attempt)) is None:
                return as_record(error)
            RATE_GATE.slow_down(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def as_record(error: BaseException) -> dict[str, Any]:
    """A failed attempt as plain data: enough to rebuild an error `agent.retries` judges alike."""
    record: dict[str, Any] = {"error": str(error)[:2000], "type": type(error).__name__}
    if isinstance(error, anthropic.APIStatusError):
        retry_after = error.response.headers.get("retry-after")
        record.update(kind="status", status=error.status_code, retry_after=retry_after)
    elif isinstance(error, anthropic.APITimeoutError):
        record["kind"] = "timeout"
    elif isinstance(error, anthropic.APIConnectionError):
        record["kind"] = "connection"
    elif may_be_billed(error):
        record["kind"] = "unreadable"
    else:
        record["kind"] = "other"
    return record


def rebuild_error(record: dict[str, Any]) -> Exception:
    """The exception a recorded failure stands for (same SDK class, status and retry-after)."""
    message, kind = str(record["error"]), record.get("kind")
    if kind == "status":
        headers = {} if record.get("retry_after") is None else {"retry-after": str(record["retry_after"])}
        response = httpx.Response(int(record["status"]), headers=headers, request=_REQUEST)
        error_class = anthropic.RateLimitError if record["status"] == 429 else anthropic.APIStatusError
        return error_class(message, response=response, body=None)
    if kind == "timeout":
        return anthropic.APITimeoutError(request=_REQUEST)
    if kind == "connection":
        return anthropic.APIConnectionError(message=message, request=_REQUEST)
    if kind == "unreadable":
        return anthropic.APIResponseValidationError(
            httpx.Response(200, request=_REQUEST), None, message=message
        )
    return RuntimeError(f"{record.get('type', 'Error')}: {message}")


def rebuild_message(record: dict[str, Any]) -> Message:
    """The recorded answer, or its recorded failure raised."""
    if "message" not in record:
        raise rebuild_error(record)
    return Message.model_validate(record["message"])
