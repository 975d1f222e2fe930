"""Tools, and the registry that declares an agent's tools sorted by name: a byte-stable prefix is
what prompt caching needs. `@tool` refuses at decoration time anything no call could get through.
"""

from __future__ import annotations

import bisect
import copy
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel

from agent.schema import (
    caller_locals,
    check_sendable,
    describe_callable,
    input_model_for,
    json_schema,
    parse_docstring,
    takes_idempotency_key,
)

__all__ = [
    "MAX_OUTPUT_CHARS",
    "TOOL_NAME",
    "ServerTool",
    "Tool",
    "ToolCall",
    "ToolOutcome",
    "ToolRegistry",
    "server_tool",
    "tool",
]

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
"""What the API accepts as a tool name."""

MAX_OUTPUT_CHARS = 1_000_000
"""Longest str or bytes result kept from one call (its middle cut): a runaway tool must not fill memory."""


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
    """`defer_loading`: True always (a tool search loads it), False never, None: a tool search decides."""
    idempotent: bool = False
    """Takes a hidden `idempotency_key` for a backend that acts once per key: a call in doubt can rerun."""

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

    @functools.cached_property
    def input_schema(self) -> dict[str, Any]:
        """The input's JSON Schema, derived once: it cannot go stale, and pydantic's generation is costly."""
        return json_schema(self.input_model)

    @functools.cached_property
    def _schema_json(self) -> str:
        return json.dumps(self.input_schema)

    def declaration(self) -> dict[str, Any]:
        """The tool as the API declares it: a fresh copy a caller may mark (JSON is quicker than deepcopy)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": json.loads(self._schema_json),
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
            idempotent=takes_idempotency_key(func),
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
    idempotency_key: str | None = None
    """`<run id>:<call id>`, set by the loop: the same for this call in every life of the run."""


@dataclass
class ToolOutcome:
    """What running one call produced: `value` is the tool's return, not yet slimmed, or the error text."""

    call: ToolCall
    value: Any = None
    is_error: bool = False
    seconds: float = 0.0
    tool: Tool | None = field(default=None, repr=False)

    @property
    def uncertain(self) -> bool:
        """An irreversible call that may have taken effect: it timed out, or a run died while it ran."""
        return (
            self.tool is not None
            and self.tool.irreversible
            and self.is_error
            and str(self.value).startswith(("timeout:", "outcome unknown:"))
        )


def _keep(keep: Iterable[str] | None, name: str) -> tuple[str, ...] | None:
    if keep is None:
        return None
    if isinstance(keep, str) or not all(isinstance(path, str) for path in keep):
        raise TypeError(f"tool {name}: keep= takes a list of field paths, e.g. keep=[{str(keep)!r}]")
    return tuple(keep)


@dataclass(frozen=True)
class ServerTool:
    """A tool the API runs, by its versioned definition; `betas`: the `anthropic-beta` headers it needs."""

    definition: Mapping[str, Any]
    betas: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.definition, Mapping):
            raise TypeError(f"a server tool is a definition dict, not {type(self.definition).__name__}")
        kind, name = self.definition.get("type"), self.definition.get("name")
        if "input_schema" in self.definition or kind in (None, "custom"):
            raise ValueError(
                f"{dict(self.definition)!r} is not a server tool: a server tool has a versioned `type` "
                "(e.g. 'web_search_20260318'); declare your own functions with @tool"
            )
        if not isinstance(kind, str) or not kind.strip():
            raise ValueError(f"server tool `type` must be a non-empty string, not {kind!r}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"server tool {kind}: needs the `name` its type goes with (e.g. 'web_search')")
        if isinstance(self.betas, str) or not all(isinstance(b, str) and b for b in self.betas):
            raise TypeError(f"server tool {name}: betas= takes a list of beta names")
        object.__setattr__(self, "definition", copy.deepcopy(dict(self.definition)))
        object.__setattr__(self, "betas", tuple(self.betas))

    @property
    def name(self) -> str:
        return str(self.definition["name"])

    @property
    def type(self) -> str:
        return str(self.definition["type"])

    def declaration(self) -> dict[str, Any]:
        """The definition as the request carries it (a copy: callers may mark it for caching)."""
        return copy.deepcopy(dict(self.definition))


def server_tool(definition: Mapping[str, Any] | ServerTool, *, betas: Iterable[str] = ()) -> ServerTool:
    """`definition` as a `ServerTool` (a `ServerTool` is returned unchanged when no betas are added)."""
    if isinstance(betas, str):
        raise TypeError(f"betas= takes a list of beta names, e.g. [{betas!r}]")
    if isinstance(definition, ServerTool):
        extra = tuple(b for b in betas if b not in definition.betas)
        return ServerTool(definition.definition, definition.betas + extra) if extra else definition
    return ServerTool(definition, tuple(betas))


class ToolRegistry:
    """The tools of one agent, by name, declared in a stable order."""

    def __init__(
        self,
        tools: Iterable[Tool | ServerTool | Mapping[str, Any] | Callable[..., Any]] = (),
        default_timeout: float | None = 60.0,
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ):
        self.default_timeout = default_timeout
        self.max_output_chars = max_output_chars
        self._tools: dict[str, Tool] = {}
        self._by_name: list[Tool] = []
        """The tools run here, sorted by name: declared in that order at every step."""
        self._server: dict[str, ServerTool] = {}
        for item in tools:
            if isinstance(item, ServerTool | Mapping):
                self.add_server(server_tool(item))
            else:
                self.add(item if isinstance(item, Tool) else tool(item))

    def add(self, tool_: Tool) -> None:
        if tool_.name in self._tools or tool_.name in self._server:
            raise ValueError(f"duplicate tool name: {tool_.name}")
        self._tools[tool_.name] = tool_
        bisect.insort(self._by_name, tool_, key=lambda t: t.name)

    def add_server(self, tool_: ServerTool) -> None:
        """Declare a tool the API runs (its definition is sent as given)."""
        if tool_.name in self._tools or tool_.name in self._server:
            raise ValueError(f"duplicate tool name: {tool_.name}")
        self._server[tool_.name] = tool_

    def all(self) -> list[Tool | ServerTool]:
        """Every tool, made a `Tool` or `ServerTool`, in the order given."""
        return [*self._tools.values(), *self._server.values()]

    @property
    def server_tools(self) -> list[ServerTool]:
        return [self._server[name] for name in sorted(self._server)]

    def betas(self) -> list[str]:
        """The beta headers the declared server tools need, each once, in a stable order."""
        return sorted({beta for t in self._server.values() for beta in t.betas})

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(self._by_name)

    def __len__(self) -> int:
        """Every declared tool: the functions run here and the tools the API runs."""
        return len(self._tools) + len(self._server)

    def declarations(self) -> list[dict[str, Any]]:
        """Declarations sorted by name (server tools among them): the byte-stable order caching needs."""
        functions = [
            {**t.declaration(), "defer_loading": True} if t.defer is True else t.declaration() for t in self
        ]
        server = [t.declaration() for t in self.server_tools]
        return sorted([*functions, *server], key=lambda d: str(d.get("name", "")))


class RunTools:
    """The registry as one run's calls see it: a tool named in `own` is the registry's, bound to the run."""

    def __init__(self, registry: ToolRegistry, own: Mapping[str, Tool]) -> None:
        self.registry, self.own = registry, dict(own)
        self.default_timeout, self.max_output_chars = registry.default_timeout, registry.max_output_chars

    def get(self, name: str) -> Tool | None:
        return self.own.get(name) or self.registry.get(name) if isinstance(name, str) else None
