"""The simulator's Message Batches API: create, retrieve, cancel and results (JSONL).

    POST /v1/messages/batches                      {"requests": [{"custom_id", "params"}, ...]}
    GET  /v1/messages/batches/{id}                 the `MessageBatch` object
    POST /v1/messages/batches/{id}/cancel          processing_status "canceling"
    GET  /v1/messages/batches/{id}/results         one JSON line per request, once it has ended

Why a model of its own: a batch is asynchronous, and what a client gets wrong about it is the
waiting (polling too early, reading results before the end, matching results by position) and
the failures that arrive one request at a time. So, as the API documents it
(https://platform.claude.com/docs/en/build-with-claude/batch-processing and the `anthropic`
2.15 SDK's `types/messages/message_batch*.py`, `batch_create_params.py`):

- The create call checks the envelope only (a list of 1 to 100,000 requests, each a unique
  `custom_id` of 1-64 letters, digits, `-` or `_`, and a `params` object) and refuses the whole
  batch otherwise. Each request's `params` are checked when the batch is processed, by the same
  strict rules as `POST /v1/messages` (the simulator's own `answer`): an invalid request comes
  back `errored` with the API's error object, alone; the others succeed. A streamed request
  (`"stream": true`) is one such error.
- The `anthropic-beta` header of the create call applies to every request in the batch.
- Processing ends on the simulator's injectable clock: a batch has ended once `processing_s`
  have passed since it was created and it has been retrieved `polls_to_end` times (either 0:
  no wait). Until then `request_counts` shows every request `processing` and `results_url` is
  null (the counts move only when the whole batch ends).
- Expiry: a batch not done `expires_s` after creation (24 hours, as the API) ends with its
  unprocessed requests `expired`; `capacity` (requests processed per batch, None: all) makes a
  batch that partly expires. A canceled batch ends with its unprocessed requests `canceled`.
- Results come back in reverse request order: the API does not promise request order, and a
  client that matches by position, not `custom_id`, gets caught.
- Succeeded messages report `usage.service_tier: "batch"`, which is what prices them at the
  batch discount (`agent.usage`).

Injected faults (`MessagesSimulator.inject(status=...)`) apply to the batch's requests as they
are processed, in request order: a faulted request comes back `errored` with that status's
error type (`overloaded_error` for 529), as one that failed inside the API would.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from agent.testing.answers import Reply, error_body, json_reply

__all__ = ["DAY_S", "MAX_REQUESTS", "Batch", "BatchStore"]

DAY_S = 24 * 3600.0
"""A batch expires 24 hours after it was created (the API's `expires_at`)."""
MAX_REQUESTS = 100_000
"""The most requests one batch may hold (the API's limit; its 256 MB limit is not modelled)."""
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
_PREFIX = "/v1/messages/batches"

Answer = Callable[[dict[str, Any], Mapping[str, str]], Reply]
"""`answer(params, headers) -> Reply`: one request processed as `POST /v1/messages` would be."""


@dataclass
class Batch:
    """One submitted batch and where its processing is."""

    id: str
    requests: list[dict[str, Any]]
    headers: dict[str, str]
    created: float
    status: str = "in_progress"
    polls: int = 0
    ended: float | None = None
    cancel_at: float | None = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """custom_id -> its `result` object, for the requests processed so far."""

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if self.status != "ended":
            counts["processing"] = len(self.requests)
            return counts
        for result in self.results.values():
            counts[result["type"]] += 1
        return counts


class BatchStore:
    """The batches of one simulator, and its settings for how they are processed."""

    def __init__(self, answer: Answer, clock: Callable[[], float]) -> None:
        self.answer = answer
        self.clock = clock
        self.origin = clock()
        self.processing_s = 0.0
        """Clock seconds a batch takes before it can end."""
        self.polls_to_end = 1
        """Retrieves before it ends: the first `retrieve` of a batch sees it ended (with 1)."""
        self.expires_s = DAY_S
        self.capacity: int | None = None
        """Requests processed per batch before it expires (None: all of them)."""
        self.batches: dict[str, Batch] = {}
        self.creates = 0
        """`POST /v1/messages/batches` calls that made a batch."""
        self.retrieves = 0
        self._lock = threading.Lock()

    def handle(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        """Answer one request under `/v1/messages/batches` (headers lower-cased)."""
        if "x-api-key" not in headers and "authorization" not in headers:
            return json_reply(401, error_body(401, "x-api-key header is required"))
        if "anthropic-version" not in headers:
            return json_reply(400, error_body(400, "anthropic-version: header is required"))
        rest = path.removeprefix(_PREFIX).strip("/")
        with self._lock:
            if method == "POST" and rest == "":
                return self._create(headers, raw)
            parts = rest.split("/")
            batch = self.batches.get(parts[0])
            if batch is None or len(parts) > 2:
                return json_reply(404, error_body(404, f"{method} {path}: not found"))
            action = parts[1] if len(parts) == 2 else ""
            if method == "GET" and action == "":
                batch.polls += 1
                self.retrieves += 1
                self._advance(batch)
                return json_reply(200, self._shape(batch, headers))
            if method == "POST" and action == "cancel":
                if batch.status == "in_progress":
                    batch.status, batch.cancel_at = "canceling", self.clock()
                self._advance(batch)
                return json_reply(200, self._shape(batch, headers))
            if method == "GET" and action == "results":
                self._advance(batch)
                if batch.status != "ended":
                    return json_reply(400, error_body(400, f"message batch {batch.id} is still processing"))
                return self._results(batch)
        return json_reply(404, error_body(404, f"{method} {path}: not found"))

    def _create(self, headers: Mapping[str, str], raw: bytes) -> Reply:
        try:
            body = json.loads(raw or b"null")
        except ValueError as error:
            return json_reply(400, error_body(400, f"request body is not valid JSON: {error}"))
        problem = _envelope_problem(body)
        if problem is not None:
            return json_reply(400, error_body(400, problem))
        self.creates += 1
        kept = {
            k: v
            for k, v in headers.items()
            if k in ("x-api-key", "authorization", "anthropic-version", "anthropic-beta")
        }
        batch = Batch(f"msgbatch_sim_{self.creates:04d}", copy.deepcopy(body["requests"]), kept, self.clock())
        self.batches[batch.id] = batch
        self._advance(batch)
        return json_reply(200, self._shape(batch, headers))

    def _advance(self, batch: Batch) -> None:
        """Process, expire or cancel `batch` as far as the clock and its polls allow."""
        if batch.status == "ended":
            return
        now = self.clock()
        if batch.status == "canceling":
            self._end(batch, "canceled", now)
            return
        due = now - batch.created >= self.processing_s and batch.polls >= self.polls_to_end
        if due and not batch.results:
            self._process(batch)
            if len(batch.results) == len(batch.requests):
                self._end(batch, "", now)
                return
        if now - batch.created >= self.expires_s:
            self._end(batch, "expired", now)

    def _process(self, batch: Batch) -> None:
        """Answer the batch's requests (up to `capacity`), each as `/v1/messages` would."""
        limit = len(batch.requests) if self.capacity is None else self.capacity
        for item in batch.requests[:limit]:
            params = copy.deepcopy(item["params"])
            if isinstance(params, dict) and params.get("stream") is True:  # `false` is allowed
                reply = json_reply(
                    400, error_body(400, "stream: streaming is not supported in a message batch")
                )
            else:
                reply = self.answer(params, batch.headers)
            body = json.loads(reply.body)
            if reply.status == 200:
                batch.results[item["custom_id"]] = {"type": "succeeded", "message": body}
            else:
                request_id = reply.headers.get("request-id") or f"req_sim_{batch.id}_{len(batch.results)}"
                error = {"type": "error", "error": body.get("error"), "request_id": request_id}
                batch.results[item["custom_id"]] = {"type": "errored", "error": error}

    def _end(self, batch: Batch, unprocessed: str, now: float) -> None:
        for item in batch.requests:
            batch.results.setdefault(item["custom_id"], {"type": unprocessed})
        batch.status, batch.ended = "ended", now

    def _shape(self, batch: Batch, headers: Mapping[str, str]) -> dict[str, Any]:
        """The `MessageBatch` object, as the API sends it."""
        host = headers.get("host")
        url = f"{_PREFIX}/{batch.id}/results"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.status,
            "request_counts": batch.counts(),
            "created_at": self._stamp(batch.created),
            "expires_at": self._stamp(batch.created + self.expires_s),
            "ended_at": None if batch.ended is None else self._stamp(batch.ended),
            "cancel_initiated_at": None if batch.cancel_at is None else self._stamp(batch.cancel_at),
            "archived_at": None,
            "results_url": None if batch.status != "ended" else (f"http://{host}{url}" if host else url),
        }

    def _stamp(self, moment: float) -> str:
        """An RFC 3339 time on the simulator's clock (its start is 2026-01-01T00:00:00Z)."""
        when = _EPOCH + timedelta(seconds=moment - self.origin)
        return when.isoformat().replace("+00:00", "Z")

    def _results(self, batch: Batch) -> Reply:
        lines = [
            json.dumps({"custom_id": item["custom_id"], "result": batch.results[item["custom_id"]]})
            for item in reversed(batch.requests)  # not request order: match by custom_id
        ]
        body = ("\n".join(lines) + "\n").encode()
        return Reply(200, body, {"content-type": "application/binary"})


def _envelope_problem(body: Any) -> str | None:
    """Why the create call's body is refused as a whole (None: it is accepted)."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    unknown = sorted(set(body) - {"requests"})
    if unknown:
        return f"{unknown[0]}: Extra inputs are not permitted"
    requests = body.get("requests")
    if not isinstance(requests, list) or not requests:
        return "requests: must be a non-empty list"
    if len(requests) > MAX_REQUESTS:
        return f"requests: at most {MAX_REQUESTS:,} requests per batch, got {len(requests):,}"
    seen: set[str] = set()
    for number, item in enumerate(requests):
        where = f"requests.{number}"
        if not isinstance(item, dict):
            return f"{where}: must be an object"
        extra = sorted(set(item) - {"custom_id", "params"})
        if extra:
            return f"{where}.{extra[0]}: Extra inputs are not permitted"
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
            return f"{where}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$, got {custom_id!r}"
        if custom_id in seen:
            return f"{where}.custom_id: {custom_id!r} is used by another request in this batch"
        seen.add(custom_id)
        if not isinstance(item.get("params"), dict):
            return f"{where}.params: must be an object"
    return None
