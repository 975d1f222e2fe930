"""Mistakes that would otherwise do nothing, caught when the agent is built.

A typo in a keep path keeps nothing (the whole result is sent instead, or none of it);
`keep_fields` for a tool the agent does not have is never read; a subclass attribute
spelled `systme` or `max_step` is an ordinary attribute nobody looks at. None of these
raise anywhere, so each gets a WARNING on the `agent` logger with a did-you-mean when
the agent (or the subclass) is built. Wrong option *types* are errors instead
(`agent.config.AgentConfig.validate`): they would fail later, less clearly.

Which fields a tool's result has is read from its return annotation (a TypedDict, a
dataclass, a pydantic model, or a list/tuple/Optional of those); a result annotated
`dict`, `Any` or nothing cannot be checked, and is not.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import logging
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, Union

from pydantic import BaseModel


class Tool(Protocol):
    """What these checks read of a tool (a leaf module: the schema builder imports it)."""

    name: str
    keep: tuple[str, ...] | None
    fn: Callable[..., Any]


__all__ = ["check_keep_paths", "check_subclass", "check_tools", "did_you_mean", "result_fields"]

log = logging.getLogger("agent")

Fields = dict[str, "Fields | None"]
"""Field name -> its own fields (None: not known)."""


def did_you_mean(name: str, options: Iterable[str], cutoff: float = 0.6) -> str:
    """' (did you mean "x"?)' for the closest option, else ''."""
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=cutoff)
    return f' (did you mean "{close[0]}"?)' if close else ""


def result_fields(annotation: Any, depth: int = 0) -> Fields | None:
    """The fields a value of this type has, as a tree; None when the type does not say."""
    if depth > 8 or annotation is None or annotation is inspect.Signature.empty:
        return None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return result_fields(args[0], depth)
    if origin in (Union, types.UnionType):
        merged: Fields = {}
        for member in args:
            if member is type(None):
                continue
            fields = result_fields(member, depth)
            if fields is None:
                return None
            merged.update(fields)
        return merged
    if origin in (list, tuple, set, frozenset, Sequence) or origin is getattr(typing, "Sequence", None):
        items = [a for a in args if a is not Ellipsis]
        return result_fields(items[0], depth) if len(items) == 1 else None
    if not isinstance(annotation, type):
        return None
    try:
        if typing.is_typeddict(annotation):
            hints = typing.get_type_hints(annotation)
        elif dataclasses.is_dataclass(annotation):
            hints = {f.name: f.type for f in dataclasses.fields(annotation)}
            resolved = typing.get_type_hints(annotation)
            hints = {name: resolved.get(name, hint) for name, hint in hints.items()}
        elif issubclass(annotation, BaseModel):
            hints = {name: info.annotation for name, info in annotation.model_fields.items()}
        else:
            return None
    except Exception:  # an unresolvable forward reference: nothing to check against
        return None
    return {name: result_fields(hint, depth + 1) for name, hint in hints.items()}


def check_keep_paths(tool_: Tool, keep: Sequence[str], source: str) -> None:
    """Warn about each keep path that names a field the tool's result cannot have."""
    try:
        annotation = typing.get_type_hints(tool_.fn).get("return")
    except Exception:  # a partial, a callable object, an unresolvable hint: nothing to check against
        annotation = None
    fields = result_fields(annotation)
    for path in keep:
        known: Fields | None = fields
        for part in str(path).split("."):
            if known is None:
                break
            if part not in known:
                log.warning(
                    "%s for tool %s: %r can never match: its result has no field %r%s (fields: %s)",
                    source,
                    tool_.name,
                    path,
                    part,
                    did_you_mean(part, known),
                    ", ".join(known) or "none",
                )
                break
            known = known[part]


def check_tools(tools: Iterable[Tool], keep_fields: Mapping[str, Sequence[str]]) -> None:
    """Keep paths against what each tool returns, and `keep_fields` against the tool names."""
    by_name = {t.name: t for t in tools}
    for tool_ in by_name.values():
        if tool_.keep is not None and tool_.name not in keep_fields:
            check_keep_paths(tool_, tool_.keep, "@tool(keep=...)")
    for name, keep in keep_fields.items():
        if name in by_name:
            check_keep_paths(by_name[name], keep, "keep_fields")
        else:
            log.warning(
                "keep_fields names %r, not one of this agent's tools%s: it is never read (tools: %s)",
                name,
                did_you_mean(name, by_name),
                ", ".join(sorted(by_name)) or "none",
            )


def check_subclass(cls: type, options: Iterable[str]) -> None:
    """Warn about a class attribute of an Agent subclass that looks like a misspelt option."""
    known = set(options)
    inherited = {name for base in cls.__mro__[1:] for name in vars(base)}
    for name, value in vars(cls).items():
        if name.startswith("_") or name in known or name in inherited:
            continue
        if inspect.isfunction(value) or isinstance(value, staticmethod | classmethod | property):
            continue
        hint = did_you_mean(name, known, cutoff=0.75)  # an attribute of its own, unless it is close
        if hint:
            log.warning("%s.%s is not an Agent option, so nothing reads it%s", cls.__name__, name, hint)


def check_option_types(config: Any) -> None:
    """TypeError for options of a type that would fail later or do nothing: `tools=find`
    (not a list), `allow="refund"` (a string is a list of letters), a non-str model."""
    tools = config.tools
    if isinstance(tools, str | bytes | Mapping) or callable(tools) or not isinstance(tools, Iterable):
        raise TypeError(f"tools must be a list of tools, e.g. tools=[{_named(tools)}], not {_shown(tools)}")
    if not isinstance(config.model, str):
        raise TypeError(f"model must be a str, not {_shown(config.model)}")
    if config.system is not None and not isinstance(config.system, str):
        raise TypeError(f"system must be a str, not {_shown(config.system)}")
    keep_fields = config.keep_fields
    if not isinstance(keep_fields, Mapping):
        raise TypeError(f"keep_fields must map tool names to field lists, not {_shown(keep_fields)}")
    for tool_name, paths in keep_fields.items():
        if isinstance(paths, str | bytes) or not isinstance(paths, Iterable):
            raise TypeError(f"keep_fields[{tool_name!r}] must be a list of field paths, e.g. [{paths!r}]")


def _named(value: Any) -> str:
    name = getattr(value, "name", None) or getattr(value, "__name__", None)
    return name if isinstance(name, str) else "my_tool"


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}"
