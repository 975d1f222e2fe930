"""Running one tool call: its input checked, the function called, failures worded.

The pieces `ToolRegistry.run_one` is made of, kept apart so each is small: whether
the input is an object of named arguments at all, the call itself (sync or async,
positional-only parameters by position, an async tool bounded by its timeout), and
the texts a model reads when something went wrong.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from agent.render import describe_error, safe_text
from agent.signature import call_arguments

__all__ = [
    "TOOL_NAME",
    "Expired",
    "bound_output",
    "describe_validation",
    "in_main_thread",
    "input_problem",
    "invoke",
    "is_async",
    "shown_name",
]

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
"""A tool name the API accepts (matched whole: a trailing newline is not a name)."""


class Expired(Exception):
    """An async tool ran past its timeout (not a TimeoutError the tool raised itself)."""


def invoke(fn: Callable[..., Any], arguments: BaseModel, timeout: float | None) -> Any:
    """Call `fn` with its validated arguments; a coroutine it returns is run to its timeout."""
    args, kwargs = call_arguments(fn, arguments)
    value = fn(*args, **kwargs)
    if inspect.iscoroutine(value):  # `async def`, an async __call__, a partial of either
        return asyncio.run(_bounded(value, timeout))
    return value


def is_async(fn: Callable[..., Any]) -> bool:
    """Declared `async` (a function, a partial of one, an object with an async `__call__`): such
    a tool can be awaited on the caller's event loop. Anything else runs in a thread, where
    `invoke` still runs a coroutine it happens to return."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def _bounded(coroutine: Coroutine[Any, Any, Any], timeout: float | None) -> Any:
    task = asyncio.ensure_future(coroutine)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        raise Expired
    return task.result()


def input_problem(arguments: object) -> str | None:
    """Why a call's input is not an object of named arguments, or None if it is one."""
    if isinstance(arguments, Mapping):
        try:
            odd = [key for key in arguments if not isinstance(key, str)]
        except Exception as error:
            return f"the input cannot be read ({describe_error(error)})"
        return f"argument names must be strings, got {safe_text(odd[0], 50)}" if odd else None
    kinds = {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "an array"}
    kind = "null" if arguments is None else kinds.get(type(arguments), f"a {type(arguments).__name__}")
    return f"the input must be a JSON object of named arguments, not {kind}"


def shown_name(name: object) -> str:
    """A tool name the model sent, as an error message may quote it."""
    if isinstance(name, str) and TOOL_NAME.fullmatch(name):
        return name
    try:
        return safe_text(repr(name), 140)
    except Exception:
        return "(unprintable name)"


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def bound_output(value: Any, limit: int, name: str) -> Any:
    """A str or bytes result longer than `limit` cut to its head and tail (other values as is)."""
    if not isinstance(value, (str, bytes)) or len(value) <= limit:
        return value
    cut = len(value) - limit
    note = f"\n[... {cut:,} chars cut: {name} returned {len(value):,}, over the {limit:,} kept ...]\n"
    if isinstance(value, bytes):
        return value[: limit // 2] + note.encode() + value[len(value) - limit // 2 :]
    return value[: limit // 2] + note + value[len(value) - limit // 2 :]


def describe_validation(name: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(input)"
        problems.append(f"{where}: {item['msg']}")
    return f"invalid input for {name}: " + "; ".join(problems)
