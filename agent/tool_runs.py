"""Running one turn's tool calls: in parallel, each bounded by its timeout, none able to crash the loop.

Every failure (an unknown name, bad input, an exception, even SystemExit, a timeout) becomes an
`is_error` outcome the model can read and adapt to. Sync tools run on daemon threads, so a hung
one holds only its thread; async ones on the caller's loop (`agent.tool_awaits`). A failed call,
or a result the model reads as a default repr, is also a WARNING: a developer watching only the
final answer would never learn of it.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import functools
import inspect
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from agent.events import RESULT_CHARS, Event, emit
from agent.render import describe_error, redact, renderable, safe_text
from agent.schema import IDEMPOTENCY_KEY, call_arguments
from agent.steps import Workers, on_private_loop
from agent.tools import TOOL_NAME, Tool, ToolCall, ToolOutcome

if TYPE_CHECKING:
    from agent.state import RunState


__all__ = ["Execute", "Tools", "arun_all", "run_all", "run_one", "run_turn"]


class Expired(Exception):
    """An async tool ran past its timeout (not a TimeoutError the tool raised itself)."""


def invoke(
    fn: Callable[..., Any], arguments: BaseModel, timeout: float | None, key: str | None = None
) -> Any:
    """Call `fn` with its validated arguments (and `key`); a coroutine it returns runs to its timeout."""
    args, kwargs = call_arguments(fn, arguments)
    if key is not None:
        kwargs[IDEMPOTENCY_KEY] = key
    value = fn(*args, **kwargs)
    if inspect.iscoroutine(value):  # `async def`, an async __call__, a partial of either
        return asyncio.run(_bounded(value, timeout))
    return value


def is_async(fn: Callable[..., Any]) -> bool:
    """Declared `async` (a function, a partial of one, an async `__call__`): awaited on the loop."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def _bounded(coroutine: Coroutine[Any, Any, Any], timeout: float | None) -> Any:
    task = asyncio.ensure_future(coroutine)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        raise Expired
    return task.result()


MAX_INPUT_DEPTH = 64
"""Deepest nesting a call's input may have: thousands of levels (from a model or an injection)
would break validation, rendering and the history itself."""


def _deeper_than(value: object, limit: int) -> bool:
    """Whether `value` nests lists and objects more than `limit` levels (iteratively)."""
    level: list[object] = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, Mapping | list | tuple)
            for child in (item.values() if isinstance(item, Mapping) else item)
        ]
        if not level:
            return False
    return True


def input_problem(arguments: object) -> str | None:
    """Why a call's input is not an object of named arguments, or None if it is one."""
    if isinstance(arguments, Mapping):
        try:
            odd = [key for key in arguments if not isinstance(key, str)]
            deep = _deeper_than(arguments, MAX_INPUT_DEPTH)
        except Exception as error:
            return f"the input cannot be read ({describe_error(error)})"
        if odd:
            return f"argument names must be strings, got {safe_text(odd[0], 50)}"
        return f"the input nests more than {MAX_INPUT_DEPTH} levels deep" if deep else None
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


log = logging.getLogger("agent")

KINDS = (("denied: ", "was denied"), ("timeout: ", "timed out"), ("invalid input for ", "got invalid input"))
"""(prefix of the error text, how the warning words it); any other error text is an exception."""
_REPR = re.compile(r"<[A-Za-z_][\w.]* object at 0x[0-9a-fA-F]+>")
_SCANNED = 200_000
"""Characters of a result searched for a repr: enough for any, and bounded."""


def warn_outcomes(outcomes: Sequence[ToolOutcome], step: int) -> None:
    """One WARNING per failed call, and one per result that shows a default repr."""
    for outcome in outcomes:
        name = outcome.call.name
        if outcome.is_error:
            text = str(outcome.value)
            kind = next((words for prefix, words in KINDS if text.startswith(prefix)), "failed")
            first = redact(text.splitlines()[0][:300]) if text else ""
            log.warning("[step %d] tool %s %s: %s", step, name, kind, first)
        elif (shown := default_repr(outcome.value)) is not None:
            log.warning(
                "[step %d] tool %s returned %s: the model reads only that repr; return a dict, "
                "a dataclass, a pydantic model or a str instead",
                step,
                name,
                shown,
            )


def default_repr(value: Any) -> str | None:
    """The first `<X object at 0x...>` in the strings of a rendered result, or None."""
    stack, budget = [value], _SCANNED
    while stack and budget > 0:
        item = stack.pop()
        if isinstance(item, str):
            text = item[:budget]
            budget -= len(text)
            if " object at 0x" in text and (found := _REPR.search(text)):
                return found.group()
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None


class Tools(Protocol):
    """What running calls reads of a registry."""

    default_timeout: float | None
    max_output_chars: int

    def get(self, name: str) -> Tool | None: ...


T = TypeVar("T")


def _start(work: Callable[[], T], then: Callable[[T], None], name: str) -> None:
    """`then(work())` on a new daemon thread, in a fresh `contextvars` context."""
    context = contextvars.Context()
    threading.Thread(target=context.run, args=(lambda: then(work()),), name=name, daemon=True).start()


OnDone = Callable[[ToolOutcome], None]
Execute = Callable[["Tools", Sequence[ToolCall], OnDone | None], Awaitable[list[ToolOutcome]]]
"""How the calls that passed the hooks run: `arun_all`, or a durable runner's steps."""


async def run_turn(
    registry: Tools,
    calls: Sequence[ToolCall],
    state: RunState,
    on_event: Callable[[Event], None] | None = None,
    execute: Execute | None = None,
) -> list[ToolOutcome]:
    """One turn's calls, in call order, each an event. `before_tool` hooks may settle a call unrun;
    a gated one runs only if an extension decides gates; the rest run by `execute` (`arun_all`).
    Each outcome passes `after_tool` once known, so it can be made durable while others run."""
    extensions = state.extensions
    calls = [dataclasses.replace(c, idempotency_key=f"{state.run_id}:{c.id}") for c in calls]
    for call in calls:
        emit(on_event, Event("tool_call", state.step, tool=call.name, tool_use_id=call.id, input=call.input))
    gates = any(ext.gate for ext in extensions)
    settled: dict[int, ToolOutcome] = {}
    for i, call in enumerate(calls):  # in call order: an approver is asked one call at a time
        for ext in extensions:
            if (outcome := await ext.before_tool(call, state)) is not None:
                settled[i] = outcome
                break
        tool_ = registry.get(call.name)
        if i not in settled and tool_ is not None and tool_.gated and not gates:
            reason = "no approval extension decides gated tools (agent.ext.approval.Approval)"
            settled[i] = ToolOutcome(call, f"denied: {reason}", True, tool=tool_)

    def after(outcome: ToolOutcome) -> ToolOutcome:
        for ext in extensions:
            outcome = ext.after_tool(outcome, state)
        return outcome

    for i, outcome in settled.items():
        settled[i] = after(outcome)
    to_run = [i for i in range(len(calls)) if i not in settled]
    finished: dict[str, ToolOutcome] = {}

    def on_done(outcome: ToolOutcome) -> None:
        finished[outcome.call.id] = after(outcome)

    execute = execute or functools.partial(arun_all, workers=state.workers)
    ran = await execute(registry, [calls[i] for i in to_run], on_done if extensions else None)
    for i, outcome in zip(to_run, ran, strict=True):
        settled[i] = finished.get(outcome.call.id, outcome) if extensions else outcome
    outcomes = [settled[i] for i in range(len(calls))]
    state.uncertain += [f"{o.call.name} ({o.call.id})" for o in outcomes if o.uncertain]
    warn_outcomes(outcomes, state.step)
    for o in outcomes if on_event is not None else ():
        text = redact(safe_text(o.value, RESULT_CHARS))
        emit(on_event, Event("tool_result", state.step, text, o.call.name, o.call.id, o.is_error))
    return outcomes


def run_all(
    registry: Tools, calls: Sequence[ToolCall], on_done: Callable[[ToolOutcome], None] | None = None
) -> list[ToolOutcome]:
    """Run every call at once, each on a daemon thread; outcomes in call order. `on_done` runs in a
    call's thread as it ends (to make it durable early); an exception it raises is re-raised here."""
    return _join([_Running(registry, call, on_done) for call in calls])


def _join(running: list[_Running], workers: Workers | None = None) -> list[ToolOutcome]:
    """Start each call on a thread (of `workers`, if given) and wait for all, each up to its
    timeout. Stopped while waiting (Ctrl-C), later outcomes are no longer reported."""
    started = time.monotonic()
    for item in running:
        item.start(workers)
    outcomes = []
    try:
        for item in running:
            timeout = item.timeout
            remaining = None if timeout is None else max(0.0, started + timeout - time.monotonic())
            try:
                outcomes.append(item.future.result(timeout=remaining))
            except FutureTimeout:
                late = f"timeout: {item.call.name} did not finish in {timeout:g}s"
                outcomes.append(item.finish(ToolOutcome(item.call, late, True, timeout or 0.0, item.tool)))
    except BaseException:
        for item in running:
            item.abandon()
        raise
    return outcomes


async def arun_all(
    registry: Tools,
    calls: Sequence[ToolCall],
    on_done: Callable[[ToolOutcome], None] | None = None,
    workers: Workers | None = None,
) -> list[ToolOutcome]:
    """`run_all` for the event loop: async tools run on it, the others on daemon threads (of
    `workers`). Cancelled, it cancels the async tools; what threads finish later is not reported."""
    running = [_Running(registry, call, on_done) for call in calls]
    if on_private_loop() and not any(item.awaited for item in running):
        return _join(running, workers)  # `run`'s own loop: nothing else waits on it
    from agent.tool_awaits import await_all  # loaded by the runs that share a loop or await a tool

    return await await_all(running, workers)


def _key(call: ToolCall, tool_: Tool) -> str | None:
    """The `idempotency_key` an idempotent tool is called with (the call's id, outside a run)."""
    return (call.idempotency_key or call.id) if tool_.idempotent else None


def _prepare(registry: Tools, call: ToolCall) -> tuple[Tool, BaseModel] | ToolOutcome:
    """The tool and its validated arguments, or the error outcome the model reads instead."""
    tool_ = registry.get(call.name)
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


def run_one(registry: Tools, call: ToolCall) -> ToolOutcome:
    """Validate and run one call, every failure an error outcome. A value is never an error for its
    shape (an irreversible tool did take effect), save a generator (its body never ran); a tool's own
    KeyboardInterrupt or SystemExit fails the call: in a worker thread neither is the user's Ctrl-C."""
    started = time.monotonic()
    prepared = _prepare(registry, call)
    if isinstance(prepared, ToolOutcome):
        return prepared
    tool_, arguments = prepared
    timeout = timeout_for(registry, tool_)
    try:
        value, failed = invoke(tool_.fn, arguments, timeout, _key(call, tool_)), False
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
    return ToolOutcome(call, _rendered(registry, value, call.name), failed, time.monotonic() - started, tool_)


def _rendered(registry: Tools, value: Any, name: str) -> Any:
    try:
        return renderable(bound_output(value, registry.max_output_chars, name), registry.max_output_chars)
    except BaseException as error:  # only a BaseException escapes renderable: a __str__'s SystemExit
        if isinstance(error, KeyboardInterrupt) and in_main_thread():
            raise
        return f"<unrenderable result: {describe_error(error)}>"


def timeout_for(registry: Tools, tool_: Tool | None) -> float | None:
    if tool_ is not None and tool_.timeout is not None:
        return tool_.timeout
    return registry.default_timeout


_PLAIN = (str, int, float, bool, type(None))


def _own_copy(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the input: a flat one of plain values (the usual case) needs no deep copy."""
    flat = dict(arguments)
    return flat if all(type(value) in _PLAIN for value in flat.values()) else copy.deepcopy(flat)


class _Running:
    """One call in flight: whichever ends it first (its thread, or the caller's timeout)
    reports the outcome, exactly once."""

    def __init__(self, registry: Tools, call: ToolCall, on_done: Callable[[ToolOutcome], None] | None):
        self.registry, self.call, self.on_done = registry, call, on_done
        self.tool = registry.get(call.name)
        self.timeout = timeout_for(registry, self.tool)
        self.awaited = self.tool is not None and is_async(self.tool.fn)
        self.future: Future[ToolOutcome] = Future()
        self._claimed = threading.Lock()

    def prepare(self) -> tuple[Tool, BaseModel] | ToolOutcome:
        return _prepare(self.registry, self.call)

    def key(self, tool_: Tool) -> str | None:
        return _key(self.call, tool_)

    def rendered(self, value: Any) -> Any:
        return _rendered(self.registry, value, self.call.name)

    def start(self, workers: Workers | None) -> None:
        """Run the call on a daemon thread (of `workers`, if given); `future` gets its outcome."""
        start = workers.start if workers is not None else _start
        start(self.work, self.publish, f"tool-{self.call.name}")

    def finish(self, outcome: ToolOutcome) -> ToolOutcome:
        if self._claimed.acquire(blocking=False) and self.on_done is not None:
            self.on_done(outcome)
        return outcome

    def abandon(self) -> None:
        """The caller stopped waiting (cancelled): an outcome arriving later is not reported."""
        self._claimed.acquire(blocking=False)

    def work(self) -> ToolOutcome:
        """The call's outcome (in its thread; a failure of any kind is an error outcome)."""
        try:
            return run_one(self.registry, self.call)
        except BaseException as error:  # SystemExit and friends: still just this call's failure
            return ToolOutcome(self.call, describe_error(error), True, tool=self.tool)

    def publish(self, outcome: ToolOutcome) -> None:
        """Report `outcome` (unless a timeout claimed the call first) and hand it to the waiter."""
        try:
            self.future.set_result(self.finish(outcome))
        except BaseException as error:  # on_done failed: the caller re-raises it
            self.future.set_exception(error)
