"""How one loop serves both `Agent.run` and `Agent.arun`: the loop is a coroutine, so a fix to it fixes both.

`arun` awaits it on the caller's event loop; `run` drives it on a private one (`run_sync`). The steps that
wait on the world (the model, the tools) are awaited, through small adapters: `settle`, `ask`, `blocking`,
and `Workers`, the threads of one run's sync tool calls."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar, cast, overload

from anthropic.types import Message

from agent.llm import LLM, AsyncLLM, Delta

__all__ = ["Workers", "ask", "blocking", "on_private_loop", "run_sync", "settle"]

T = TypeVar("T")

_PRIVATE_LOOP: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_private_loop", default=False)
"""True inside `run_sync`, whose loop serves one run and ends with it: blocking calls need no thread, and an
LLM both sync and async is called sync (an async client's pooled connections would outlive the loop)."""


def run_sync(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `work()` to completion on a private event loop: in a worker thread if this one
    runs a loop already (a notebook: `arun` is better there). Ctrl-C raises KeyboardInterrupt as usual."""

    async def private() -> T:
        _PRIVATE_LOOP.set(True)
        return await work()

    def on_a_new_loop() -> T:
        loop = asyncio.new_event_loop()
        task = loop.create_task(private())
        try:
            return loop.run_until_complete(task)
        except BaseException:  # Ctrl-C while the loop waited: the run still records `stopped`
            if not task.done():  # raised inside the run (a blocking call), it has recorded it already;
                task.cancel()  # and waiting again on a task KeyboardInterrupt ended never returns
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(task)
            raise
        finally:
            _close(loop)

    try:
        asyncio.get_running_loop()
        inside_a_loop = True
    except RuntimeError:
        inside_a_loop = False  # (the run starts outside this `except`: its errors chain nothing)
    if not inside_a_loop:
        return on_a_new_loop()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agent-run") as pool:
        return pool.submit(on_a_new_loop).result()


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Close a private loop, giving what is left (an async tool past its timeout) a moment to cancel."""
    left = asyncio.all_tasks(loop)
    for task in left:
        task.cancel()
    if left:
        loop.run_until_complete(asyncio.wait(left, timeout=0.1))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def on_private_loop() -> bool:
    """True inside `run_sync`: a step may block the loop (it serves one run), not hand off to a thread."""
    return _PRIVATE_LOOP.get()


async def blocking(fn: Callable[..., T], /, *args: Any) -> T:
    """`fn(*args)`, a call that blocks: in a worker thread, so other runs on the loop go on; on `run`'s
    private loop in place (no thread hop, and Ctrl-C interrupts it as usual)."""
    if _PRIVATE_LOOP.get():
        return fn(*args)
    return await asyncio.to_thread(fn, *args)


@overload
async def settle(value: Awaitable[T]) -> T: ...
@overload
async def settle(value: T) -> T: ...
async def settle(value: Any) -> Any:
    """`value`, awaited first if it is awaitable (a step overridden as a plain method)."""
    if inspect.isawaitable(value):
        return await value
    return value


async def ask(llm: LLM, request: Mapping[str, Any], on_delta: Delta | None) -> Message:
    """One attempt through the seam, streamed when `on_delta` is given and the LLM can stream."""
    # what isinstance with the runtime protocols checks (the methods are there), at a tenth the cost
    is_async, is_sync = hasattr(llm, "acreate"), hasattr(llm, "create")
    if is_async and not (_PRIVATE_LOOP.get() and is_sync):
        astream = getattr(llm, "astream", None)
        if on_delta is not None and astream is not None:
            return cast(Message, await astream(request, on_delta))
        return await cast(AsyncLLM, llm).acreate(request)
    stream = getattr(llm, "stream", None)
    if on_delta is None or stream is None:
        return await blocking(llm.create, request)
    loop, report, owner = asyncio.get_running_loop(), on_delta, threading.get_ident()

    def relay(kind: str, text: str) -> None:  # from a worker thread, reported on the loop's
        if threading.get_ident() == owner:
            report(kind, text)
        else:
            loop.call_soon_threadsafe(report, kind, text)

    return cast(Message, await blocking(stream, request, relay))


Job = tuple[Callable[[], Any], Callable[[Any], None], str]


class Workers:
    """The daemon threads of one run's sync tool calls, reused (a thread start costs more than the rest of a
    dispatch) and per run (a shared pool would outlive runs); daemon, so a hung tool cannot keep the process
    alive. Each call runs in a fresh `contextvars` context, as on a new thread."""

    def __init__(self) -> None:
        self._idle: list[queue.SimpleQueue[Job | None]] = []
        self._lock = threading.Lock()
        self._closed = False

    def start(self, work: Callable[[], T], then: Callable[[T], None], name: str) -> None:
        """`then(work())` (neither may raise) on an idle thread, else a new one named `name`; it is idle
        again before `then` runs, so a caller woken by `then` finds it so."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
        inbox.put((work, then, name))

    def _serve(self, inbox: queue.SimpleQueue[Job | None]) -> None:
        while (job := inbox.get()) is not None:
            work, then, name = job
            threading.current_thread().name = name
            context = contextvars.Context()
            result = context.run(work)
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle.append(inbox)
            context.run(then, result)
            if closed:
                return

    def close(self) -> None:
        """End the idle threads; a busy one ends when its call does."""
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
        for inbox in idle:
            inbox.put(None)
