"""`BatchLLM`: the `LLM` seam on the Message Batches API, gathering concurrent runs' calls.

Each `acreate` puts its request in the event loop's lane (`_Lane`) and waits. A lane sends
what has gathered `window_s` after its first request came (at once when `max_batch` are
waiting) as one `messages.batches.create`, then one poller per batch `retrieve`s it with
exponential backoff until `processing_status == "ended"` and reads the results (JSONL, matched
by `custom_id`, never by position), resolving each waiting call with its own reply or error.

Requests with different `betas` go in different batches: the `anthropic-beta` header of the
create call applies to every request in it. The other beta body keys (`mcp_servers`,
`context_management`) are plain JSON inside `params`, so they go as they are.

Why its errors look as they do: the loop retries a call by what it raised
(`agent.retries.retryable`), and a batch's requests fail one by one, after the HTTP call
that created the batch succeeded. So each failed result is raised as the error the same
request would have raised alone: `errored` as an `APIStatusError` with the status of its
error type (400 for `invalid_request_error`: not retried; 529 for `overloaded_error`:
retried), `expired` as a 408 (not processed in 24 hours, not billed: worth asking again),
`canceled` as `BatchRequestCanceled` (someone stopped it on purpose: not retried), and a
result missing from the file as an unreadable answer (retried, its possible cost booked). A
retry is a new request, in a later batch; the budgets are checked before it as before any.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anthropic
import httpx2 as httpx  # the SDK's HTTP client (anthropic 2.x)
from anthropic.types import Message

from agent.errors import MissingAPIKey
from agent.steps import run_sync
from agent.stream import message

__all__ = [
    "ERROR_STATUS",
    "BatchLLM",
    "BatchRequestCanceled",
    "BatchRequestErrored",
    "BatchRequestExpired",
    "BatchResultMissing",
]

log = logging.getLogger("agent")

ERROR_STATUS: Mapping[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each of the API's error types comes with (an unknown type: 500)."""

_TRANSIENT = frozenset({408, 409, 429})


class BatchRequestErrored(anthropic.APIStatusError):
    """One request of a batch came back `errored`; `status_code` is its error type's status."""

    def __init__(
        self, message: str, *, response: httpx.Response, body: object | None, custom_id: str, batch_id: str
    ):
        super().__init__(message, response=response, body=body)
        self.custom_id, self.batch_id = custom_id, batch_id


class BatchRequestExpired(BatchRequestErrored):
    """One request of a batch `expired`: the batch ended (24 hours) before it was processed.
    Raised with status 408, so the loop asks again in a new batch; nothing was billed."""


class BatchRequestCanceled(anthropic.AnthropicError):
    """One request of a batch was `canceled` (the batch was canceled before it ran): a
    decision, not a fault, so the loop does not retry it."""

    def __init__(self, message: str, *, custom_id: str, batch_id: str) -> None:
        super().__init__(message)
        self.custom_id, self.batch_id = custom_id, batch_id


class BatchResultMissing(anthropic.APIResponseValidationError):
    """The batch ended without a readable result for this request: an answer lost (retried,
    and its possible cost booked, as any lost answer)."""


@dataclass
class _Waiting:
    custom_id: str
    params: dict[str, Any]
    future: asyncio.Future[Message]


class BatchLLM:
    """An `LLM` (and `AsyncLLM`) answering every model call through the Message Batches API.

        llm = BatchLLM(client=anthropic.AsyncAnthropic())
        agent = Agent(llm=llm, tools=[...])
        results = await asyncio.gather(*(agent.arun(task) for task in tasks))

    Calls made at about the same time (within `window_s` of the first waiting one, up to
    `max_batch`) share a batch; every token is then billed at half price (`agent.usage`'s
    `BATCH_PRICE_FACTOR`, read from the reply's `usage.service_tier`). A batch takes minutes
    to hours, so this is for runs where nobody waits: evaluations, backfills.

    `poll_s` is the first wait between `retrieve`s, doubled up to `max_poll_s`; `sleep` is how
    it waits (a test passes one that moves a fake clock). `max_retries` is how often the agent
    retries a failed call. With `journal=path`, each submitted request's batch id is appended
    there (`{"custom_id", "batch_id"}` per line) and a request found there is not sent again:
    its batch is polled (see `agent.ext.batches` on restarts).

    `create` (a sync caller: `Agent.run`, a compaction summary) sends a batch of its one
    request on a private event loop and waits for it.
    """

    def __init__(
        self,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        window_s: float = 0.1,
        max_batch: int = 10_000,
        poll_s: float = 10.0,
        max_poll_s: float = 300.0,
        max_retries: int = 2,
        journal: str | Path | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not 1 <= max_batch <= 100_000:
            raise ValueError(f"max_batch must be 1 to 100,000 (the API's limit per batch), not {max_batch}")
        if window_s < 0 or poll_s <= 0 or max_poll_s < poll_s:
            raise ValueError("window_s must be >= 0, poll_s > 0 and max_poll_s >= poll_s")
        self.client = client or anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url)
        self.window_s, self.max_batch = window_s, max_batch
        self.poll_s, self.max_poll_s, self.sleep = poll_s, max_poll_s, sleep
        self.max_retries = max_retries
        self.journal = None if journal is None else Path(journal)
        self.batches_created: list[str] = []
        """The ids of the batches this object created, in order."""
        self._lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Lane] = weakref.WeakKeyDictionary()
        self._seen: dict[str, int] = {}
        self._journaled: dict[str, str] | None = None
        self._lock = threading.Lock()

    # -- the seam ---------------------------------------------------------------------

    async def acreate(self, request: Mapping[str, Any]) -> Message:
        """The reply to `request`, once the batch it went into has ended."""
        return await self._ask(request, self._lane())

    def create(self, request: Mapping[str, Any]) -> Message:
        """`acreate` for a sync caller: a batch of this one request, sent from a private event
        loop through a client of its own (an async client's connections belong to one loop)."""

        async def alone() -> Message:
            client = self.client.with_options(http_client=anthropic.DefaultAsyncHttpxClient())
            try:
                return await self._ask(request, _Lane(self, client))
            finally:
                await client.close()

        return run_sync(alone)

    async def _ask(self, request: Mapping[str, Any], lane: _Lane) -> Message:
        if self.client.api_key is None and self.client.auth_token is None:
            raise MissingAPIKey("no Anthropic API key: set ANTHROPIC_API_KEY (or pass BatchLLM(client=...))")
        custom_id = self.custom_id(request)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        batch_id = self._journal_lookup(custom_id)
        if batch_id is not None:
            log.info("batch request %s resumes batch %s", custom_id, batch_id)
            lane.wait_for(batch_id, custom_id, future)
        else:
            params, beta = _params(request)
            lane.add(beta, _Waiting(custom_id, params, future))
        return await future

    # -- ids and the journal ------------------------------------------------------------

    def custom_id(self, request: Mapping[str, Any]) -> str:
        """`<digest of the request>-<n>`: the nth time this object is asked this exact request.
        Deterministic, so a restarted run asking what it asked before finds its batch in the
        journal; and byte-identical requests (the same prompt sampled twice) are interchangeable,
        so which of them gets which answer does not matter, only that each gets one."""
        text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        digest = hashlib.sha256(text.encode()).hexdigest()[:40]
        with self._lock:
            n = self._seen.get(digest, 0)
            self._seen[digest] = n + 1
        return f"{digest}-{n}"

    def _journal_lookup(self, custom_id: str) -> str | None:
        if self.journal is None:
            return None
        with self._lock:
            if self._journaled is None:
                self._journaled = _read_journal(self.journal)
            return self._journaled.get(custom_id)

    def _journal_write(self, custom_ids: list[str], batch_id: str) -> None:
        """Append the batch id of each request, made durable before its run waits on it."""
        with self._lock:
            self.batches_created.append(batch_id)
            if self.journal is None:
                return
            lines = "".join(json.dumps({"custom_id": c, "batch_id": batch_id}) + "\n" for c in custom_ids)
            try:
                self.journal.parent.mkdir(parents=True, exist_ok=True)
                with self.journal.open("a", encoding="utf-8") as out:
                    out.write(lines)
                    out.flush()
                    os.fsync(out.fileno())
            except OSError as error:  # the batch is paid for and running: poll it anyway
                log.warning(
                    "batch journal %s not written (a restart would submit again): %s", self.journal, error
                )
                return
            if self._journaled is not None:
                self._journaled.update(dict.fromkeys(custom_ids, batch_id))

    def _lane(self) -> _Lane:
        """This event loop's lane (its own waiting requests and pollers), on `client`: like any
        `AsyncAnthropic` client, one that serves one event loop at a time."""
        loop = asyncio.get_running_loop()
        with self._lock:
            lane = self._lanes.get(loop)
            if lane is None:
                lane = self._lanes[loop] = _Lane(self, self.client)
            return lane


class _Lane:
    """One event loop's batcher: the requests waiting to be sent, and the batches polled."""

    def __init__(self, owner: BatchLLM, client: anthropic.AsyncAnthropic) -> None:
        self.owner = owner
        self.client = client
        self.sender = client.with_options(max_retries=0)  # a retried create could make a second batch
        self.pending: dict[str, list[_Waiting]] = {}  # by the anthropic-beta header they need
        self.timers: dict[str, asyncio.Task[None]] = {}
        self.waiters: dict[str, dict[str, list[asyncio.Future[Message]]]] = {}
        self.pollers: dict[str, asyncio.Task[None]] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def add(self, beta: str, waiting: _Waiting) -> None:
        queue = self.pending.setdefault(beta, [])
        queue.append(waiting)
        if len(queue) >= self.owner.max_batch:
            self.flush(beta)
        elif beta not in self.timers:
            self.timers[beta] = self._spawn(self._flush_later(beta))

    async def _flush_later(self, beta: str) -> None:
        await asyncio.sleep(self.owner.window_s)
        self.timers.pop(beta, None)
        self.flush(beta)

    def flush(self, beta: str) -> None:
        """Send what waits for `beta` now, `max_batch` per batch, in `custom_id` order: the order
        the runs got here in depends on their tool threads, and a batch's bytes should not."""
        waiting = sorted(
            (w for w in self.pending.pop(beta, []) if not w.future.done()), key=lambda w: w.custom_id
        )
        timer = self.timers.pop(beta, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        size = self.owner.max_batch
        for start in range(0, len(waiting), size):
            self._spawn(self._submit(beta, waiting[start : start + size]))

    async def _submit(self, beta: str, chunk: list[_Waiting]) -> None:
        requests = [{"custom_id": w.custom_id, "params": w.params} for w in chunk]
        try:
            batch = await self.sender.messages.batches.create(
                requests=cast(Any, requests), extra_headers={"anthropic-beta": beta} if beta else None
            )
        except Exception as error:  # the create call itself failed: each run sees it, and retries
            for w in chunk:
                _fail(w.future, copy.copy(error))
            return
        self.owner._journal_write([w.custom_id for w in chunk], batch.id)
        log.info("batch %s: %d request(s) submitted", batch.id, len(chunk))
        for w in chunk:
            self.wait_for(batch.id, w.custom_id, w.future)

    def wait_for(self, batch_id: str, custom_id: str, future: asyncio.Future[Message]) -> None:
        self.waiters.setdefault(batch_id, {}).setdefault(custom_id, []).append(future)
        if batch_id not in self.pollers:
            self.pollers[batch_id] = self._spawn(self._poll(batch_id))

    async def _poll(self, batch_id: str) -> None:
        """Retrieve until ended (transient errors waited out), then hand out the results."""
        wait = self.owner.poll_s
        while True:
            try:
                batch = await self.client.messages.batches.retrieve(batch_id)
                if batch.processing_status == "ended" and batch.results_url:
                    results = await self._results(batch_id, batch.results_url)
                    break
            except Exception as error:
                if not _transient(error):
                    self._settle(batch_id, _copies(error))
                    return
                log.warning("batch %s: polling failed (%s); trying again", batch_id, error)
            if not any(not f.done() for fs in self.waiters.get(batch_id, {}).values() for f in fs):
                self.pollers.pop(batch_id, None)  # every run waiting on it was cancelled
                self.waiters.pop(batch_id, None)
                return
            await self.owner.sleep(wait)
            wait = min(wait * 2, self.owner.max_poll_s)
        self._settle(batch_id, lambda custom_id: _outcome(results.get(custom_id), custom_id, batch_id))

    async def _results(self, batch_id: str, url: str) -> dict[str, dict[str, Any]]:
        """custom_id -> `result`, read from the JSONL file as the API sent it (every field kept)."""
        response = await self.client.get(
            url, cast_to=httpx.Response, options={"headers": {"Accept": "application/binary"}}
        )
        results: dict[str, dict[str, Any]] = {}
        for line in response.text.splitlines():
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                log.warning("batch %s: an unreadable results line was skipped", batch_id)
                continue
            if isinstance(entry, dict) and isinstance(entry.get("result"), dict):
                results[str(entry.get("custom_id"))] = entry["result"]
        return results

    def _settle(self, batch_id: str, outcome: Callable[[str], Message | BaseException]) -> None:
        self.pollers.pop(batch_id, None)
        for custom_id, futures in self.waiters.pop(batch_id, {}).items():
            for future in futures:
                if future.done():
                    continue
                result = outcome(custom_id)
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)


def _params(request: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """(the batch request's `params`, its `anthropic-beta` header): `betas` go in the header of
    the create call, which applies it to every request of the batch; the rest is the body."""
    params = {k: copy.deepcopy(v) for k, v in request.items() if k != "betas"}
    return params, ",".join(request.get("betas") or ())


def _copies(error: BaseException) -> Callable[[str], BaseException]:
    """Each waiting call gets its own copy of one error (a traceback belongs to one raise)."""
    return lambda custom_id: copy.copy(error)


def _fail(future: asyncio.Future[Message], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def _transient(error: BaseException) -> bool:
    """A poll that may work next time: a lost connection, a 408/409/429 or a 5xx."""
    if isinstance(error, (anthropic.APIConnectionError, json.JSONDecodeError)):
        return True
    if isinstance(error, anthropic.APIStatusError):
        return error.status_code in _TRANSIENT or error.status_code >= 500
    return False


def _response(status: int, batch_id: str, request_id: str | None = None) -> httpx.Response:
    """A stand-in HTTP response for one request's result, so it reads like its own call's."""
    request = httpx.Request("GET", f"https://api.anthropic.com/v1/messages/batches/{batch_id}/results")
    headers = {"request-id": request_id} if request_id else {}
    return httpx.Response(status, request=request, headers=headers)


def _outcome(result: dict[str, Any] | None, custom_id: str, batch_id: str) -> Message | BaseException:
    """The reply, or the error the same request would have raised alone."""
    kind = result.get("type") if result is not None else None
    where = f"batch {batch_id} request {custom_id}"
    if result is not None and kind == "succeeded" and isinstance(result.get("message"), dict):
        return message(result["message"])
    if result is not None and kind == "errored":
        body: dict[str, Any] = result["error"] if isinstance(result.get("error"), dict) else {}
        inner: dict[str, Any] = body["error"] if isinstance(body.get("error"), dict) else {}
        error_type = str(inner.get("type") or "api_error")
        status = ERROR_STATUS.get(error_type, 500)
        text = f"{where} errored: {error_type}: {inner.get('message', '')}"
        response = _response(status, batch_id, body.get("request_id"))
        return BatchRequestErrored(text, response=response, body=body, custom_id=custom_id, batch_id=batch_id)
    if kind == "expired":
        text = f"{where} expired: the batch ended before it was processed"
        return BatchRequestExpired(
            text, response=_response(408, batch_id), body=result, custom_id=custom_id, batch_id=batch_id
        )
    if kind == "canceled":
        return BatchRequestCanceled(f"{where} was canceled", custom_id=custom_id, batch_id=batch_id)
    why = f"{where}: no readable result in the batch's results ({kind or 'missing'})"
    return BatchResultMissing(_response(200, batch_id), result, message=why)


def _read_journal(path: Path) -> dict[str, str]:
    """custom_id -> batch_id, the latest line winning; a torn last line (a crash) skipped."""
    found: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return found
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("custom_id"), str)
            and isinstance(entry.get("batch_id"), str)
        ):
            found[entry["custom_id"]] = entry["batch_id"]
    return found
