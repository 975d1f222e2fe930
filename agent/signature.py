"""What a callable offers as a tool: a default name, its docstring, its parameters.

Accepted: functions (sync or `async def`), bound methods, `functools.partial`
objects (named after the function they wrap; the keywords they bind are hidden
from the model, which must not be able to override them), and instances of a class
with `__call__` (named after the class). Refused at decoration time, with the
reason, because no call could ever work: classes, generator functions (the model
reads one result, not a stream), `*args`/`**kwargs`, parameter names the API
rejects, parameters without a type hint, hints that do not resolve.

Positional-only parameters are fine: `call_arguments` passes them by position.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["PARAM_NAME", "Described", "call_arguments", "caller_locals", "describe_callable"]

PARAM_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,64}")
"""What the Messages API accepts as a property key of `input_schema`."""


@dataclass(frozen=True)
class Described:
    """A callable as a tool sees it."""

    name: str
    """The default tool name: the function's, or the class's for a callable object."""
    doc: str | None
    params: tuple[inspect.Parameter, ...]
    """The parameters the model fills (partial-bound ones left out)."""
    hints: Mapping[str, Any]


def describe_callable(
    fn: Callable[..., Any], label: str | None = None, localns: Mapping[str, Any] | None = None
) -> Described:
    """Everything `input_model_for` needs to know about `fn`; TypeError if it cannot be a tool.

    `label` names the tool in error messages; `localns` resolves string hints that name
    something local to the scope that decorated the tool.
    """
    if not callable(fn):
        raise TypeError(f"tool: a {type(fn).__name__} is not callable")
    target: Any = fn
    bound: set[str] = set()
    while isinstance(target, functools.partial):
        bound.update(target.keywords)
        target = target.func
    if isinstance(target, type):
        raise TypeError(
            f"tool: {target.__name__} is a class; pass a function, or an instance of a class with __call__"
        )
    is_object = not inspect.isroutine(target)
    core = type(target).__call__ if is_object else target
    name = type(target).__name__ if is_object else getattr(target, "__name__", "")
    label = label or name
    if inspect.isgeneratorfunction(core) or inspect.isasyncgenfunction(core):
        raise TypeError(
            f"tool {label}: a generator function cannot be a tool (the model reads one result); "
            "return a list instead"
        )
    doc = (type(target).__doc__ or core.__doc__) if is_object else target.__doc__
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"tool {label}: its signature cannot be read ({error})") from None
    params = tuple(p for p in signature.parameters.values() if p.name not in bound)
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {label}: *args/**kwargs cannot be described to a model")
        if not PARAM_NAME.fullmatch(param.name):
            raise TypeError(
                f"tool {label}: parameter {param.name!r} is not a name the API accepts "
                f"({PARAM_NAME.pattern}); rename it"
            )
    return Described(name, doc, params, _hints(target.__call__ if is_object else target, label, localns))


def _hints(fn: Any, label: str, localns: Mapping[str, Any] | None) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except NameError as error:
        if localns is not None:
            try:
                return typing.get_type_hints(fn, localns=dict(localns), include_extras=True)
            except Exception:
                pass
        problem = f"{type(error).__name__}: {error}"
    except Exception as error:  # a malformed string annotation, a bad typing construct
        problem = f"{type(error).__name__}: {error}"
    raise TypeError(
        f"tool {label}: its type hints cannot be resolved ({problem}); define or import every "
        "type a parameter names before the tool is decorated"
    ) from None


def call_arguments(fn: Callable[..., Any], arguments: BaseModel) -> tuple[list[Any], dict[str, Any]]:
    """(positional, keyword) arguments for `fn` from its validated input model.

    Fields are named by their alias when they have one (a parameter whose own name would
    clash with pydantic's); positional-only parameters are passed by position, in order.
    """
    fields = type(arguments).model_fields
    values = {info.alias or key: getattr(arguments, key) for key, info in fields.items()}
    positional = _positional_only(fn)
    return [values.pop(name) for name in positional if name in values], values


def _positional_only(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names of `fn`'s positional-only parameters, read from its signature at each call."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in params if p.kind is p.POSITIONAL_ONLY)


def caller_locals() -> dict[str, Any] | None:
    """The namespace the caller of our caller runs in (where `@tool` was applied): string
    hints may name a class local to it."""
    try:
        return dict(sys._getframe(2).f_locals)
    except Exception:
        return None
