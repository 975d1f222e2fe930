"""Tool calls awaited on an event loop that other runs share: async tools run on it, sync ones
on threads whose outcomes land back on it.

`agent.tool_runs.arun_all` comes here only when it must: `run` on its own loop with no async
tool joins threads and never loads this module. A call is a `Running` (`tool_runs._Running`):
this module sees only the methods it needs, so it imports nothing of `tool_runs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from pydantic import BaseModel

from agent.render import describe_error
from agent.schema import IDEMPOTENCY_KEY, call_arguments
from agent.steps import Workers
from agent.tools import Tool, ToolCall, ToolOutcome

__all__ = ["BLOCKING_S", "Running", "await_all"]

log = logging.getLogger("agent")

BLOCKING_S = 1.0
"""An async tool that runs this long without yielding is reported: it holds every run on the
loop, and no timeout can fire meanwhile."""


class Running(Protocol):
    """One call in flight, as `agent.tool_runs` builds it."""

    call: ToolCall
    tool: Tool | None
    timeout: float | None
    awaited: bool
    """Declared `async`: awaited on the loop, not run on a thread."""
    future: Future[ToolOutcome]

    def prepare(self) -> tuple[Tool, BaseModel] | ToolOutcome: ...
    def key(self, tool_: Tool) -> str | None: ...
    def rendered(self, value: Any) -> Any: ...
    def finish(self, outcome: ToolOutcome) -> ToolOutcome: ...
    def abandon(self) -> None: ...
    def start(self, workers: Workers | None) -> None: ...


async def await_all(running: Sequence[Running], workers: Workers | None) -> list[ToolOutcome]:
    """Every call at once, outcomes in call order; cancelled, later outcomes are not reported."""
    try:
        if len(running) == 1:  # the usual turn: no task to gather it into
            return [await _await_one(running[0], workers)]
        return list(await asyncio.gather(*(_await_one(item, workers) for item in running)))
    except BaseException:
        for item in running:
            item.abandon()
        raise


async def _await_one(item: Running, workers: Workers | None) -> ToolOutcome:
    timeout = item.timeout
    if item.awaited:
        work: asyncio.Future[ToolOutcome] = asyncio.ensure_future(_arun_one(item))
    else:
        work = _in_thread(item, workers)
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


async def _arun_one(item: Running) -> ToolOutcome:
    """`run_one` for an async tool, awaited on the event loop."""
    started, call = time.monotonic(), item.call
    prepared = item.prepare()
    if isinstance(prepared, ToolOutcome):
        return item.finish(prepared)
    tool_, arguments = prepared
    watched: _Watched | None = None
    try:
        args, kwargs = call_arguments(tool_.fn, arguments)
        if (key := item.key(tool_)) is not None:
            kwargs[IDEMPOTENCY_KEY] = key
        watched = _Watched(tool_.fn(*args, **kwargs))
        value, failed = await watched, False
    except KeyboardInterrupt as error:
        if threading.current_thread() is threading.main_thread():  # the loop's: maybe the user's Ctrl-C
            raise
        value, failed = describe_error(error), True
    except BaseException as error:  # as in run_one, a CancelledError too (ours, after a timeout)
        value, failed = describe_error(error), True
    seconds = time.monotonic() - started
    blocked = watched.longest if watched is not None else 0.0
    if blocked >= BLOCKING_S:
        log.warning(
            "[tool %s] blocked the event loop for %.1f s without yielding (every run on the loop "
            "waited): make it a plain def, or await asyncio.sleep / asyncio.to_thread",
            call.name,
            blocked,
        )
    limit = item.timeout
    if limit is not None and blocked >= limit:  # its timeout could not fire: the loop was held
        late = (
            f"timeout: {call.name} did not finish in {limit:g}s (it blocked the event loop {blocked:.1f} s)"
        )
        return item.finish(ToolOutcome(call, late, True, seconds, tool_))
    return item.finish(ToolOutcome(call, item.rendered(value), failed, seconds, tool_))


class _Watched:
    """Awaits a coroutine slice by slice (code run without giving the loop back), timing each:
    the longest is how long the tool blocked the loop (a `time.sleep` in an `async def`)."""

    def __init__(self, coroutine: Any) -> None:
        self.coroutine = coroutine
        self.longest = 0.0

    def __await__(self) -> Any:
        inner = self.coroutine.__await__()
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.monotonic()
            try:
                yielded = inner.throw(thrown) if thrown is not None else inner.send(sent)
            except StopIteration as stop:
                return stop.value
            finally:
                self.longest = max(self.longest, time.monotonic() - started)
            sent, thrown = None, None
            try:
                sent = yield yielded
            except GeneratorExit:
                inner.close()
                raise
            except BaseException as error:  # a cancellation, say: passed on to the tool
                thrown = error


def _in_thread(item: Running, workers: Workers | None) -> asyncio.Future[ToolOutcome]:
    """Start the call on a daemon thread; the returned future, of the running loop, gets its outcome."""
    loop = asyncio.get_running_loop()
    landed: asyncio.Future[ToolOutcome] = loop.create_future()

    def land(source: Future[ToolOutcome]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_copy_outcome, source, landed)

    item.future.add_done_callback(land)
    item.start(workers)
    return landed


def _copy_outcome(source: Future[ToolOutcome], target: asyncio.Future[ToolOutcome]) -> None:
    if not target.done():
        if (error := source.exception()) is not None:
            target.set_exception(error)
        else:
            target.set_result(source.result())
