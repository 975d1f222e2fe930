"""What a tool is: a typed, documented function with the policies the loop reads.

`@tool` turns a callable into a `Tool` (`agent.signature` says which callables can be
tools, `agent.schema` builds the input model from its type hints and docstring), refusing
at decoration time anything no call could ever get through. `ToolCall` is one call the
model asked for, `ToolOutcome` what running it produced. Declaring tools is
`agent.registry`'s job, running them `agent.tool_runs`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel

from agent.calls import TOOL_NAME
from agent.schema import check_sendable, input_model_for, json_schema, parse_docstring
from agent.signature import caller_locals, describe_callable

__all__ = ["MAX_OUTPUT_CHARS", "Tool", "ToolCall", "ToolOutcome", "tool"]

MAX_OUTPUT_CHARS = 1_000_000
"""Longest text (str or bytes) result kept from one call. A runaway tool that returns
megabytes must not fill memory, the session file or the artifact store: the middle
is cut, the head and tail kept. The model sees far less anyway once results are slimmed."""


@dataclass(frozen=True)
class Tool:
    """A function the model may call, with the policies the context economy reads."""

    name: str
    description: str
    fn: Callable[..., Any]
    input_model: type[BaseModel]
    keep: tuple[str, ...] | None = None
    """Whitelisted fields (dotted paths allowed) kept when the result is slimmed."""
    never_prune: bool = False
    """Keep this tool's results verbatim through keep-recent pruning."""
    irreversible: bool = False
    """Has effects in the world: never pruned, and gated by the approver."""
    requires_approval: bool = False
    """Gated by the approver even though it is reversible."""
    compress: bool = True
    """False keeps results exact (files about to be edited, migrations, diffs)."""
    timeout: float | None = None
    """Seconds before the call becomes an error result; None uses the agent's default."""
    defer: bool | None = None
    """Declared `defer_loading` (found through tool search): None when the registry is over its
    threshold (`agent.tool_search.deferral`), False never (a core tool), True always."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TOOL_NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must match {TOOL_NAME.pattern}")
        if not isinstance(self.description, str) or not self.description.strip():
            raise TypeError(f"tool {self.name}: needs a docstring (or description=), the model reads it")
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf
        ):
            raise ValueError(f"tool {self.name}: timeout must be a positive number of seconds or None")

    @property
    def gated(self) -> bool:
        return self.irreversible or self.requires_approval

    def declaration(self) -> dict[str, Any]:
        """The tool as the Messages API declares it."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": json_schema(self.input_model),
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    keep: Iterable[str] | None = None,
    never_prune: bool = False,
    irreversible: bool = False,
    requires_approval: bool = False,
    compress: bool = True,
    timeout: float | None = None,
    defer: bool | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    keep: Iterable[str] | None = None,
    never_prune: bool = False,
    irreversible: bool = False,
    requires_approval: bool = False,
    compress: bool = True,
    timeout: float | None = None,
    defer: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool from a typed function; usable bare (`@tool`) or with options."""

    localns = caller_locals()

    def build(func: Callable[..., Any]) -> Tool:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"tool: name must be a str, not {type(name).__name__}")
        described = describe_callable(func, name, localns)
        tool_name = described.name if name is None else name
        if not TOOL_NAME.fullmatch(tool_name):
            hint = " (a lambda has no name of its own)" if tool_name == "<lambda>" else ""
            raise ValueError(
                f"tool name {tool_name!r}{hint} must match {TOOL_NAME.pattern}; pass @tool(name=...)"
            )
        made = Tool(
            name=tool_name,
            description=description if description is not None else parse_docstring(described.doc)[0],
            fn=func,
            input_model=input_model_for(func, tool_name, described=described),
            keep=_keep(keep, tool_name),
            never_prune=never_prune,
            irreversible=irreversible,
            requires_approval=requires_approval,
            compress=compress,
            timeout=timeout,
            defer=defer,
        )
        check_sendable(made.declaration(), made.name)
        return made

    return build(fn) if fn is not None else build


@dataclass(frozen=True)
class ToolCall:
    """One `tool_use` block the model asked for."""

    id: str
    name: str
    input: Mapping[str, Any]


@dataclass
class ToolOutcome:
    """What running one call produced. `value` is the tool's return before any slimming, made
    renderable (`agent.render.renderable`: the very object when it is plain data), or the
    error text."""

    call: ToolCall
    value: Any = None
    is_error: bool = False
    seconds: float = 0.0
    tool: Tool | None = field(default=None, repr=False)


def _keep(keep: Iterable[str] | None, name: str) -> tuple[str, ...] | None:
    if keep is None:
        return None
    if isinstance(keep, str) or not all(isinstance(path, str) for path in keep):
        raise TypeError(f"tool {name}: keep= takes a list of field paths, e.g. keep=[{str(keep)!r}]")
    return tuple(keep)
