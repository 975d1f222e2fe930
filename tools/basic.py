"""Three small tools the teaching examples use: arithmetic, counting, the time.

They are deliberately boring: what they show is the contract of a tool (typed
arguments, a docstring the model reads, errors raised as ordinary exceptions that
the registry turns into `is_error` results).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Literal

from agent.tools import Tool, tool

__all__ = ["calculator", "current_time", "make_current_time", "word_count"]


@tool
def calculator(a: float, op: Literal["+", "-", "*", "/"], b: float) -> float | int:
    """Exact arithmetic on two numbers; use it instead of computing in your head.

    Args:
        a: the left operand.
        op: one of + - * /.
        b: the right operand.
    """
    if op == "+":
        result = a + b
    elif op == "-":
        result = a - b
    elif op == "*":
        result = a * b
    else:
        if b == 0:
            raise ZeroDivisionError("division by zero")
        result = a / b
    return int(result) if float(result).is_integer() and abs(result) < 2**53 else result


@tool
def word_count(text: str) -> dict[str, int]:
    """Count the words, lines and characters of a text.

    Args:
        text: the text to count.
    """
    return {"words": len(text.split()), "lines": len(text.splitlines()), "characters": len(text)}


def make_current_time(clock: Callable[[], datetime] | None = None) -> Tool:
    """A `current_time` tool reading `clock` (default: the system clock, UTC).

    Injecting the clock keeps tests and recorded cassettes deterministic.
    """
    now = clock or (lambda: datetime.now(timezone.utc))

    def current_time() -> str:
        """The current date and time in RFC 3339 format (UTC unless the clock says otherwise)."""
        moment = now()
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.isoformat(timespec="seconds")

    return tool(current_time)


current_time = make_current_time()
