"""One live MCP session, kept on an event loop of its own in a daemon thread.

The MCP SDK is async (anyio) and its session lives inside the task that opened it, while
an agent runs on many loops: `run` makes a private loop per run, `arun` uses the caller's,
and sync tools run in threads. So the session gets a loop of its own, started when the
toolset is entered and stopped when it is left; a call from any thread or loop is handed
to it (`call`), and awaiting it never blocks the caller's loop. One thread per server, so a
server that dies takes down only its own tools.

Closing is bounded: the SDK stops a stdio server (terminate, then kill) when its session
ends, and `close` waits for that, so no child process outlives the `with` block.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent.ext.mcp.servers import HttpServer, McpServer

__all__ = ["Connection", "McpUnavailable"]

T = TypeVar("T")

HTTP_TIMEOUT = (30.0, 300.0)
"""(connect/write, read) seconds for HTTP servers: a server may hold a response stream open."""


class McpUnavailable(RuntimeError):
    """The MCP server could not be started or reached, or is gone."""


class Connection:
    """A session with one MCP server on its own loop: `open`, `call`, `close`."""

    def __init__(self, server: McpServer, startup_timeout: float) -> None:
        self.server = server
        self.startup_timeout = startup_timeout
        self.client: Any = None  # mcp.Client, once open
        self.tools: list[Any] = []  # mcp_types.Tool, as listed at open
        self.gone: str | None = None  # why calls can no longer be made
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._main, name=f"mcp-{server.label}"[:60], daemon=True)

    def open(self) -> None:
        """Start the server (or connect to it) and list its tools; McpUnavailable on failure.
        On failure or timeout, everything started is stopped before this returns."""
        self._thread.start()
        try:
            self._ready.result(timeout=self.startup_timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise McpUnavailable(
                f"MCP server {self.server.label} did not answer within {self.startup_timeout:g}s"
            ) from None
        except Exception as error:
            self.close()
            reason = _reason(error)
            raise McpUnavailable(f"could not start MCP server {self.server.label}: {reason}") from error

    def close(self, timeout: float = 10.0) -> None:
        """End the session and wait (bounded) for the server to be stopped."""
        if self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._request_stop)
            self._thread.join(timeout)
        self.gone = self.gone or "the toolset was closed"

    async def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await `coroutine` on the session's loop, from any loop; cancelling this cancels it there."""
        if self.gone is not None or not self._thread.is_alive():
            coroutine.close()
            why = self.gone or "stopped"
            raise McpUnavailable(f"MCP server {self.server.label} is not connected ({why})")
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        except RuntimeError:  # the loop closed between the check and now
            coroutine.close()
            raise McpUnavailable(f"MCP server {self.server.label} is not connected (stopped)") from None
        return await asyncio.wrap_future(future)

    def _request_stop(self) -> None:
        """End the session: a ready one leaves its wait; one still starting (a server that
        never answers `initialize`) is cancelled, which stops its process on the way out."""
        if self._stop is not None:
            self._stop.set()
        if not self._ready.done() and self._task is not None:
            self._task.cancel()

    def _main(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as error:  # reported through `_ready` if open() still waits
            if not self._ready.done():
                self._ready.set_exception(error if isinstance(error, Exception) else RuntimeError(str(error)))
            self.gone = f"the session ended: {_reason(error)}"
        finally:
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    async def _serve(self) -> None:
        from mcp import Client

        self._stop = asyncio.Event()
        self._task = asyncio.current_task()
        async with contextlib.AsyncExitStack() as stack:
            client = Client(await _target(self.server, stack))
            self.client = await stack.enter_async_context(client)
            self.tools = await _list_tools(self.client)
            self._ready.set_result(None)
            await self._stop.wait()


async def _target(server: McpServer, stack: contextlib.AsyncExitStack) -> Any:
    """What `mcp.Client` connects to: stdio parameters, a URL, or an HTTP transport with headers."""
    if not isinstance(server, HttpServer):
        from mcp import StdioServerParameters

        env = dict(server.env) if server.env is not None else None
        return StdioServerParameters(command=server.command, args=list(server.args), env=env, cwd=server.cwd)
    if not server.headers:
        return server.url
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(HTTP_TIMEOUT[0], read=HTTP_TIMEOUT[1])
    http = await stack.enter_async_context(httpx2.AsyncClient(headers=dict(server.headers), timeout=timeout))
    return streamable_http_client(server.url, http_client=http)


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):  # a server that pages forever must not hang the start
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _reason(error: BaseException) -> str:
    """The innermost useful message of an error (anyio wraps task failures in groups)."""
    inner = getattr(error, "exceptions", None)
    while inner:
        error = inner[0]
        inner = getattr(error, "exceptions", None)
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
