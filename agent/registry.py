"""Tools: declared once, validated on the way in, never allowed to crash the loop.

`@tool` turns a typed, documented function into a `Tool`. The `ToolRegistry`
declares tools sorted by name (a stable byte-for-byte prefix is what prompt caching
needs) and runs one turn's tool calls in parallel. Every failure a model can cause,
or a tool can suffer, becomes an `is_error` result the model can read and adapt to:
an unknown name, bad input (each bad field named), an exception, a timeout.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel, ValidationError

from agent.schema import input_model_for, json_schema, parse_docstring

__all__ = ["Tool", "ToolCall", "ToolOutcome", "ToolRegistry", "tool"]

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
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

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {TOOL_NAME.pattern}")
        if not self.description:
            raise TypeError(f"tool {self.name}: needs a docstring, the model reads it")

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
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool from a typed function; usable bare (`@tool`) or with options."""

    def build(func: Callable[..., Any]) -> Tool:
        tool_name = name or func.__name__
        summary, _ = parse_docstring(func.__doc__)
        return Tool(
            name=tool_name,
            description=description or summary,
            fn=func,
            input_model=input_model_for(func, tool_name),
            keep=tuple(keep) if keep is not None else None,
            never_prune=never_prune,
            irreversible=irreversible,
            requires_approval=requires_approval,
            compress=compress,
            timeout=timeout,
        )

    return build(fn) if fn is not None else build


@dataclass(frozen=True)
class ToolCall:
    """One `tool_use` block the model asked for."""

    id: str
    name: str
    input: Mapping[str, Any]


@dataclass
class ToolOutcome:
    """What running one call produced; `value` is the raw return, before any slimming."""

    call: ToolCall
    value: Any = None
    is_error: bool = False
    seconds: float = 0.0
    tool: Tool | None = field(default=None, repr=False)


def _invoke(tool_: Tool, arguments: dict[str, Any], timeout: float | None) -> Any:
    if inspect.iscoroutinefunction(tool_.fn):
        return asyncio.run(asyncio.wait_for(tool_.fn(**arguments), timeout))
    return tool_.fn(**arguments)


def bound_output(value: Any, limit: int, name: str) -> Any:
    """A str or bytes result longer than `limit` cut to its head and tail (other values as is)."""
    if not isinstance(value, (str, bytes)) or len(value) <= limit:
        return value
    cut = len(value) - limit
    note = f"\n[... {cut:,} chars cut: {name} returned {len(value):,}, over the {limit:,} kept ...]\n"
    if isinstance(value, bytes):
        return value[: limit // 2] + note.encode() + value[len(value) - limit // 2 :]
    return value[: limit // 2] + note + value[len(value) - limit // 2 :]


def _describe_validation(name: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(input)"
        problems.append(f"{where}: {item['msg']}")
    return f"invalid input for {name}: " + "; ".join(problems)


class ToolRegistry:
    """The tools of one agent, by name, declared in a stable order."""

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        default_timeout: float | None = 60.0,
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ):
        self.default_timeout = default_timeout
        self.max_output_chars = max_output_chars
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.add(item if isinstance(item, Tool) else tool(item))

    def add(self, tool_: Tool) -> None:
        if tool_.name in self._tools:
            raise ValueError(f"duplicate tool name: {tool_.name}")
        self._tools[tool_.name] = tool_

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        return len(self._tools)

    def declarations(self) -> list[dict[str, Any]]:
        """Tool declarations sorted by name: the cache-friendly, byte-stable order."""
        return [t.declaration() for t in self]

    def run_all(
        self, calls: Sequence[ToolCall], on_done: Callable[[ToolOutcome], None] | None = None
    ) -> list[ToolOutcome]:
        """Run every call at once (one daemon thread each); outcomes in call order.

        `on_done(outcome)` runs the moment each call ends (in its thread), so a caller can
        make each result durable while slower calls are still running; an exception it
        raises (a full disk, say) is re-raised here. Daemon threads rather than a pool: a
        tool that hangs past its timeout is abandoned with an error result and cannot keep
        the process alive on exit.
        """
        started = time.monotonic()
        running = [_Running(call, self.get(call.name), on_done) for call in calls]
        for item in running:
            threading.Thread(
                target=item.work, args=(self.run_one,), name=f"tool-{item.call.name}", daemon=True
            ).start()
        outcomes = []
        for item in running:
            timeout = self._timeout_for(item.tool)
            remaining = None if timeout is None else max(0.0, started + timeout - time.monotonic())
            try:
                outcomes.append(item.future.result(timeout=remaining))
            except FutureTimeout:
                late = f"timeout: {item.call.name} did not finish in {timeout:g}s"
                outcomes.append(item.finish(ToolOutcome(item.call, late, True, timeout or 0.0, item.tool)))
        return outcomes

    def run_one(self, call: ToolCall) -> ToolOutcome:
        """Validate and run one call, turning every failure into an error outcome."""
        tool_ = self.get(call.name)
        started = time.monotonic()
        if tool_ is None:
            return ToolOutcome(call, f"unknown tool: {call.name}", True)
        try:
            arguments = tool_.input_model.model_validate(dict(call.input))
        except ValidationError as error:
            return ToolOutcome(call, _describe_validation(call.name, error), True, tool=tool_)
        try:
            kwargs = {name: getattr(arguments, name) for name in type(arguments).model_fields}
            value = _invoke(tool_, kwargs, self._timeout_for(tool_))
        except (TimeoutError, asyncio.TimeoutError):
            value, failed = f"timeout: {call.name} did not finish in {self._timeout_for(tool_):g}s", True
        except Exception as error:  # the whole point: a tool's bug is the model's information
            value, failed = f"{type(error).__name__}: {error}", True
        else:
            failed = False
        value = bound_output(value, self.max_output_chars, call.name)
        return ToolOutcome(call, value, failed, time.monotonic() - started, tool_)

    def _timeout_for(self, tool_: Tool | None) -> float | None:
        if tool_ is not None and tool_.timeout is not None:
            return tool_.timeout
        return self.default_timeout


class _Running:
    """One call in flight: whichever ends it first (its thread, or the caller's timeout)
    reports the outcome, exactly once."""

    def __init__(self, call: ToolCall, tool_: Tool | None, on_done: Callable[[ToolOutcome], None] | None):
        self.call, self.tool, self.on_done = call, tool_, on_done
        self.future: Future[ToolOutcome] = Future()
        self._claimed = threading.Lock()

    def finish(self, outcome: ToolOutcome) -> ToolOutcome:
        if self._claimed.acquire(blocking=False) and self.on_done is not None:
            self.on_done(outcome)
        return outcome

    def work(self, run_one: Callable[[ToolCall], ToolOutcome]) -> None:
        try:
            outcome = run_one(self.call)
        except BaseException as error:  # SystemExit and friends: still just this call's failure
            outcome = ToolOutcome(self.call, f"{type(error).__name__}: {error}", True, tool=self.tool)
        try:
            self.future.set_result(self.finish(outcome))
        except BaseException as error:  # on_done failed: the caller re-raises it
            self.future.set_exception(error)
