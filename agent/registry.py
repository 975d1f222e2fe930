"""Tools: declared once, validated on the way in, never allowed to crash the loop.

`@tool` turns a typed, documented callable into a `Tool` (`agent.signature` says
which callables can be tools, `agent.schema` builds the input model), refusing at
decoration time anything no call could ever get through. The `ToolRegistry`
declares tools sorted by name (a stable byte-for-byte prefix is what prompt caching
needs) and runs one turn's tool calls in parallel. Every failure a model can cause,
or a tool can suffer, becomes an `is_error` result the model can read and adapt to:
an unknown name, input that is not an object, bad input (each bad field named), an
exception (even SystemExit), a timeout. Whatever a tool returns comes back
renderable (`agent.render`); `safe_text(value)` is the never-raising text of any value.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import math
import operator
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel, ValidationError

from agent.calls import (
    TOOL_NAME,
    Expired,
    bound_output,
    describe_validation,
    in_main_thread,
    input_problem,
    invoke,
    is_async,
    shown_name,
)
from agent.render import describe_error, renderable, safe_text
from agent.schema import check_sendable, input_model_for, json_schema, parse_docstring
from agent.server_tools import ServerTool, server_tool
from agent.signature import call_arguments, caller_locals, describe_callable
from agent.tool_search.deferral import (
    DEFAULT_THRESHOLD,
    SEARCH_TOOL_NAME,
    SearchMode,
    declare,
    deferral_active,
    search_function,
)
from agent.tool_search.index import ToolIndex
from agent.workers import WORKERS

__all__ = ["MAX_OUTPUT_CHARS", "Tool", "ToolCall", "ToolOutcome", "ToolRegistry", "bound_output"]
__all__ += ["input_problem", "safe_text", "tool"]

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


class ToolRegistry:
    """The tools of one agent, by name, declared in a stable order."""

    def __init__(
        self,
        tools: Iterable[Tool | ServerTool | Mapping[str, Any] | Callable[..., Any]] = (),
        default_timeout: float | None = 60.0,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        defer_above: int | None = DEFAULT_THRESHOLD,
        tool_search: SearchMode = "client",
    ):
        self.default_timeout = default_timeout
        self.max_output_chars = max_output_chars
        self.defer_above = defer_above
        self.tool_search: SearchMode = tool_search
        self._tools: dict[str, Tool] = {}
        self._server: dict[str, ServerTool] = {}
        """Tools the API runs (`agent.server_tools`): declared, never run here."""
        for item in tools:
            if isinstance(item, (ServerTool, Mapping)):
                self.add_server(server_tool(item))
            else:
                self.add(item if isinstance(item, Tool) else tool(item))

    def add(self, tool_: Tool) -> None:
        if tool_.name in self._tools or tool_.name in self._server:
            raise ValueError(f"duplicate tool name: {tool_.name}")
        self._tools[tool_.name] = tool_
        if (
            self.tool_search == "client"
            and SEARCH_TOOL_NAME not in self._tools
            and deferral_active(list(self._tools.values()), self.defer_above)
        ):  # the tool that finds the deferred ones; never pruned, or found tools would vanish
            search = search_function(self._search_deferred)
            self._tools[SEARCH_TOOL_NAME] = tool(never_prune=True, defer=False)(search)

    def search(self, query: str, k: int = 5) -> list[str]:
        """The names of the `k` tools that best fit `query` (BM25 + graph expansion + weighted
        rank fusion, `agent.tool_search.index`), best first. Needs the `toolsearch` extra."""
        return [hit.name for hit in self._index(deferred_only=False).search(query, k)]

    def _search_deferred(self, query: str, k: int) -> list[str]:
        return [hit.name for hit in self._index(deferred_only=True).search(query, k)]

    def _index(self, deferred_only: bool) -> ToolIndex:
        """Built once per tool set (declarations are cached, so their identities say when the
        tools changed)."""
        declared = [d for d in self.declarations() if "input_schema" in d]
        if deferred_only:
            declared = [d for d in declared if d.get("defer_loading")]
        key = (deferred_only, tuple(map(id, declared)))
        indexes: dict[tuple[bool, tuple[int, ...]], ToolIndex] = getattr(self, "_indexes", {})
        if key not in indexes:
            indexes = {k: v for k, v in indexes.items() if k[0] != deferred_only} | {key: ToolIndex(declared)}
            self._indexes = indexes
        return indexes[key]

    def add_server(self, tool_: ServerTool) -> None:
        """Declare a tool the API runs (its definition is sent as given)."""
        if tool_.name in self._tools or tool_.name in self._server:
            raise ValueError(f"duplicate tool name: {tool_.name}")
        self._server[tool_.name] = tool_

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
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        """Every declared tool: the functions run here and the tools the API runs."""
        return len(self._tools) + len(self._server)

    def declarations(self) -> list[dict[str, Any]]:
        """Tool declarations sorted by name (server tools among them): the cache-friendly,
        byte-stable order.

        Computed once, then again only when the tools change (one added, or replaced): a new
        list every call, holding the same declaration dicts, which callers must not edit in
        place (`mark_breakpoints` copies the one it marks)."""
        tools: tuple[Tool | ServerTool, ...] = (*self._tools.values(), *self._server.values())
        cached: tuple[tuple[Tool | ServerTool, ...], list[dict[str, Any]]] | None = getattr(
            self, "_declared", None
        )
        if cached is None or len(cached[0]) != len(tools) or any(map(operator.is_not, cached[0], tools)):
            functions = declare(list(self), self.defer_above, self.tool_search)
            server = [t.declaration() for t in self.server_tools]
            cached = (tools, sorted([*functions, *server], key=lambda d: str(d.get("name", ""))))
            self._declared = cached
        return list(cached[1])

    def run_all(
        self, calls: Sequence[ToolCall], on_done: Callable[[ToolOutcome], None] | None = None
    ) -> list[ToolOutcome]:
        """Run every call at once (each on its own daemon thread); outcomes in call order.

        `on_done(outcome)` runs the moment each call ends (in its thread), so a caller can
        make each result durable while slower calls are still running; an exception it
        raises (a full disk, say) is re-raised here. Daemon threads (`agent.workers`: kept
        for the next call, never shared by two calls at once) rather than a bounded pool: a
        tool that hangs past its timeout is abandoned with an error result, holds only its
        own thread, and cannot keep the process alive on exit.
        """
        return self._join([_Running(call, self.get(call.name), on_done) for call in calls])

    def _join(self, running: list[_Running]) -> list[ToolOutcome]:
        """Start each call on a worker thread and wait for all, each up to its timeout. Stopped
        while waiting (Ctrl-C), later outcomes are no longer reported."""
        started = time.monotonic()
        for item in running:
            WORKERS.start(item.work, self.run_one, name=f"tool-{item.call.name}")
        outcomes = []
        try:
            for item in running:
                timeout = self._timeout_for(item.tool)
                remaining = None if timeout is None else max(0.0, started + timeout - time.monotonic())
                try:
                    outcomes.append(item.future.result(timeout=remaining))
                except FutureTimeout:
                    late = f"timeout: {item.call.name} did not finish in {timeout:g}s"
                    late_outcome = ToolOutcome(item.call, late, True, timeout or 0.0, item.tool)
                    outcomes.append(item.finish(late_outcome))
        except BaseException:
            for item in running:
                item.abandon()
            raise
        return outcomes

    async def arun_all(
        self,
        calls: Sequence[ToolCall],
        on_done: Callable[[ToolOutcome], None] | None = None,
        *,
        block: bool = False,
    ) -> list[ToolOutcome]:
        """`run_all` for the event loop: async tools run concurrently on it, the others each in
        a daemon thread (as in `run_all`, so a hung one cannot keep the process alive), each
        bounded by its timeout; outcomes in call order. Cancelled, it cancels the async tools;
        threads cannot be stopped, and what they finish after that is no longer reported.
        An async tool that blocks the event loop (`time.sleep`) blocks every run on it.

        `block=True` says the event loop serves this run alone (`Agent.run`'s private loop):
        a turn of sync tools is then waited for in place, as `run_all` does, without the
        loop's futures and wake-ups around each call."""
        running = [_Running(call, self.get(call.name), on_done) for call in calls]
        if block and not any(item.tool is not None and is_async(item.tool.fn) for item in running):
            return self._join(running)
        try:
            return list(await asyncio.gather(*(self._await_one(item) for item in running)))
        except BaseException:
            for item in running:
                item.abandon()
            raise

    async def _await_one(self, item: _Running) -> ToolOutcome:
        timeout = self._timeout_for(item.tool)
        if item.tool is not None and is_async(item.tool.fn):
            work: asyncio.Future[ToolOutcome] = asyncio.ensure_future(self._arun_one(item))
        else:
            work = item.in_thread(self.run_one)
        try:
            done, _ = await asyncio.wait({work}, timeout=timeout)
        except BaseException:  # cancelled: whatever the tool does next is no longer reported
            item.abandon()
            work.cancel()
            raise
        if not done:  # the tool sees its cancellation only after the timeout outcome is claimed
            work.cancel()
            late = f"timeout: {item.call.name} did not finish in {timeout:g}s"
            return item.finish(ToolOutcome(item.call, late, True, timeout or 0.0, item.tool))
        return work.result()

    async def _arun_one(self, item: _Running) -> ToolOutcome:
        """`run_one` for an async tool, awaited on the event loop."""
        started, call = time.monotonic(), item.call
        prepared = self._prepare(call)
        if isinstance(prepared, ToolOutcome):
            return item.finish(prepared)
        tool_, arguments = prepared
        try:
            args, kwargs = call_arguments(tool_.fn, arguments)
            value, failed = await tool_.fn(*args, **kwargs), False
        except KeyboardInterrupt as error:
            if in_main_thread():  # the loop runs there: this may be the user's Ctrl-C
                raise
            value, failed = describe_error(error), True
        except BaseException as error:  # as in run_one; a CancelledError it raised, or ours after a
            value, failed = describe_error(error), True  # timeout, when its outcome is claimed
        seconds = time.monotonic() - started
        return item.finish(ToolOutcome(call, self._rendered(value, call.name), failed, seconds, tool_))

    def _prepare(self, call: ToolCall) -> tuple[Tool, BaseModel] | ToolOutcome:
        """The tool and its validated arguments, or the error outcome the model reads instead."""
        tool_ = self.get(call.name)
        if tool_ is None:
            return ToolOutcome(call, f"unknown tool: {shown_name(call.name)}", True)
        problem = input_problem(call.input)
        if problem is not None:
            return ToolOutcome(call, f"invalid input for {call.name}: {problem}", True, tool=tool_)
        try:  # a copy: the tool may mutate its arguments, the call is part of the history
            return tool_, tool_.input_model.model_validate(_own_copy(call.input))
        except ValidationError as error:
            return ToolOutcome(call, describe_validation(call.name, error), True, tool=tool_)
        except Exception as error:  # too deep to copy, or a validator of the tool's raised oddly
            message = f"invalid input for {call.name}: {describe_error(error)}"
            return ToolOutcome(call, message, True, tool=tool_)

    def run_one(self, call: ToolCall) -> ToolOutcome:
        """Validate and run one call, turning every failure into an error outcome.

        Whatever the tool returns comes back renderable (`agent.render.renderable`): a value
        is never made an error for its shape, as an irreversible tool did take effect. A
        generator is the exception (its body never ran). A tool's own KeyboardInterrupt or
        SystemExit is that call's failure: in a worker thread neither can be the user's
        Ctrl-C (signals reach the main thread, where it propagates as usual).
        """
        started = time.monotonic()
        prepared = self._prepare(call)
        if isinstance(prepared, ToolOutcome):
            return prepared
        tool_, arguments = prepared
        timeout = self._timeout_for(tool_)
        try:
            value, failed = invoke(tool_.fn, arguments, timeout), False
            if inspect.isgenerator(value) or inspect.isasyncgen(value):
                kind = type(value).__name__
                value, failed = f"{call.name} returned a {kind}, not a value (its body never ran)", True
        except Expired:
            value, failed = f"timeout: {call.name} did not finish in {timeout:g}s", True
        except KeyboardInterrupt as error:
            if in_main_thread():
                raise
            value, failed = describe_error(error), True
        except BaseException as error:  # the whole point: a tool's bug is the model's information
            value, failed = describe_error(error), True
        return ToolOutcome(call, self._rendered(value, call.name), failed, time.monotonic() - started, tool_)

    def _rendered(self, value: Any, name: str) -> Any:
        try:
            return renderable(bound_output(value, self.max_output_chars, name), self.max_output_chars)
        except BaseException as error:  # only a BaseException escapes renderable: a __str__'s SystemExit
            if isinstance(error, KeyboardInterrupt) and in_main_thread():
                raise
            return f"<unrenderable result: {describe_error(error)}>"

    def _timeout_for(self, tool_: Tool | None) -> float | None:
        if tool_ is not None and tool_.timeout is not None:
            return tool_.timeout
        return self.default_timeout


_PLAIN = (str, int, float, bool, type(None))


def _own_copy(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a call's input the tool may mutate (the call itself is part of the history):
    a flat one of plain values needs no deep copy, the usual case."""
    flat = dict(arguments)
    return flat if all(type(value) in _PLAIN for value in flat.values()) else copy.deepcopy(flat)


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

    def abandon(self) -> None:
        """The caller stopped waiting (cancelled): an outcome arriving later is not reported."""
        self._claimed.acquire(blocking=False)

    def in_thread(self, run_one: Callable[[ToolCall], ToolOutcome]) -> asyncio.Future[ToolOutcome]:
        """Start `work` in a daemon thread; the returned future (of the running event loop)
        gets its outcome. A loop that closed meanwhile is not told."""
        loop = asyncio.get_running_loop()
        landed: asyncio.Future[ToolOutcome] = loop.create_future()

        def land(source: Future[ToolOutcome]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
                loop.call_soon_threadsafe(_copy_outcome, source, landed)

        self.future.add_done_callback(land)
        WORKERS.start(self.work, run_one, name=f"tool-{self.call.name}")
        return landed

    def work(self, run_one: Callable[[ToolCall], ToolOutcome]) -> None:
        try:
            outcome = run_one(self.call)
        except BaseException as error:  # SystemExit and friends: still just this call's failure
            outcome = ToolOutcome(self.call, describe_error(error), True, tool=self.tool)
        try:
            self.future.set_result(self.finish(outcome))
        except BaseException as error:  # on_done failed: the caller re-raises it
            self.future.set_exception(error)


def _copy_outcome(source: Future[ToolOutcome], target: asyncio.Future[ToolOutcome]) -> None:
    if target.done():
        return
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())
