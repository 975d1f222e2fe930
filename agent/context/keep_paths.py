"""Keep paths that can never match, warned about when the agent is built.

A `@tool(keep=...)` path or a `keep_fields` entry (`agent.context.slim`'s whitelist) that names
a field the tool's result cannot have, or a tool the agent lacks, raises nowhere: the whitelist
just keeps nothing. So each gets a WARNING on the `agent` logger, checked against the fields the
tool's return annotation declares. Only an agent with a keep path or `keep_fields` has anything
to check, so `AgentConfig` loads this module for those alone.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from pydantic import BaseModel

from agent.errors import did_you_mean

if TYPE_CHECKING:
    from agent.tools import Tool

__all__ = ["Fields", "check_keep_paths", "check_tools", "result_fields"]

log = logging.getLogger("agent")

Fields = dict[str, "Fields | None"]
"""Field name -> its own fields (None: not known)."""


def result_fields(annotation: Any, depth: int = 0) -> Fields | None:
    """The fields a value of this type has, as a tree; None when the type does not say (`dict`, `Any`)."""
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
            resolved = typing.get_type_hints(annotation)
            hints = {f.name: resolved.get(f.name, f.type) for f in dataclasses.fields(annotation)}
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
