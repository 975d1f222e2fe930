"""Message threads (beta `message-threads-2026-08-12`): the conversation the API holds between turns.

The SDK's tool runner threads by default: after the first request, each one carries only the
messages since the previous response, and no `system` or `tools`. Judged as a whole
conversation such a request looks broken (a `tool_result` whose `tool_use` it cannot see), yet
the API accepts it, because it rebuilds the conversation before anything else reads it. So does
this store, so that the simulator is no stricter than the API here, and no looser:

* `"thread": {"type": "create"}` is served as usual; once answered, the request's conversation,
  Claude's reply included, is stored under the response `id`, with the request's `system` and
  `tools`, which the thread keeps.
* `"thread": {"type": "continue", "previous_message_id": ...}` is rebuilt: the thread's `system`
  and `tools`, its messages and reply, then the new messages; every other field is the request's
  own, as the SDK sends them again on each turn. The rebuilt request is then validated, cached,
  billed and answered as a plain request would be, so the usage is the whole conversation's, as
  without a thread. The answer moves the thread on to the new response `id`.
* Refused, as the docs and the API's error types (in the SDK) say: a `continue` whose id names
  no live thread (404 `not_found_error`, `error.details.error_code` `thread_not_found`, which
  the SDK answers by replaying the whole conversation under a new thread); one that names a
  response already continued (400 `thread_already_continued`); one that sends `system` or
  `tools` again (400, the simulator's wording: the API's error code for it is not documented);
  and a `thread` without the beta header (400, the simulator's wording, as for the other betas).
* A thread expires `THREAD_TTL_SECONDS` after the last response it stored, on the simulator's
  own `clock`, so tests move time instead of waiting.

A refused or failed `continue` stores nothing, and its `previous_message_id` can be continued
again: the API learns only from an answered turn that the thread moved on.

The block-level `cache_control` of stored messages is dropped: a breakpoint belongs to the
request that sent it, and a thread request takes the same few breakpoints as any other, so a
marker set on an earlier turn neither counts against a later one nor writes the cache again.
The SDK's replay strips the same markers, so a `continue` and its replay bill alike. `system`
and `tools` keep theirs: they are the create request's values, kept as they were sent.

Not modelled, because the docs name no rule to follow: which fields must stay the same across a
thread's turns (`thread_fingerprint_mismatch`), which fields a thread refuses
(`thread_unsupported_request`), a second `continue` while one is in flight (the simulator
answers one request at a time), and threads inside the Message Batches API.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.testing.answers import Reply, error_body, json_reply

__all__ = ["CREATE_ONLY_FIELDS", "THREADS_BETA", "THREAD_TTL_SECONDS", "Refusal", "ThreadStore"]

THREADS_BETA = "message-threads-2026-08-12"
THREAD_TTL_SECONDS = 300.0
"""How long a thread lives after the last response it stored, as the docs give it."""
CREATE_ONLY_FIELDS = ("system", "tools")
"""Request fields a thread keeps from its create request, and a `continue` must leave out."""


@dataclass(frozen=True)
class Refusal:
    """A thread request the API would not serve: the HTTP status, the message, and the
    `error.details.error_code` the SDK reads to decide on a replay (`None` when undocumented)."""

    status: int
    message: str
    error_code: str | None = None

    def reply(self) -> Reply:
        body = error_body(self.status, self.message)
        if self.error_code is not None:
            body["error"]["details"] = {"error_code": self.error_code}
        return json_reply(self.status, body)


@dataclass
class _Thread:
    """One held conversation: the create request's `system` / `tools` (those it sent), the
    messages up to the latest reply, the only response `id` a `continue` may name, and when a
    response was last stored."""

    fields: dict[str, Any]
    messages: list[Any]
    latest: str
    stored_at: float


class ThreadStore:
    """The threads a simulator holds, by response `id`, on its clock."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.received: list[dict[str, Any]] = []
        """Every `/v1/messages` body that carried a `thread`, as it was sent (before a rebuild)."""
        self._threads: dict[str, _Thread] = {}

    def take(self, body: dict[str, Any], headers: Mapping[str, str]) -> tuple[dict[str, Any], Refusal | None]:
        """`body` as the API reads it: a `continue` rebuilt from its thread, any other body as it
        is, and the refusal when the thread field cannot be served. A `thread` of the wrong shape
        is left for the validator to name."""
        thread = body.get("thread")
        if thread is None:
            return body, None
        self.received.append(copy.deepcopy(body))
        betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
        if THREADS_BETA not in betas:
            return body, Refusal(400, f"thread: needs the beta header {THREADS_BETA}")
        if not isinstance(thread, Mapping) or thread.get("type") != "continue":
            return body, None
        previous = thread.get("previous_message_id")
        if not isinstance(previous, str):
            return body, None
        repeated = [field for field in CREATE_ONLY_FIELDS if field in body]
        if repeated:
            names = " and ".join(repeated)
            return body, Refusal(
                400,
                f"{names}: not allowed with thread.type continue: "
                "the thread keeps the system and tools of the request that created it",
            )
        held = self._live(previous)
        if held is None:
            return body, Refusal(
                404,
                f"thread.previous_message_id: no usable thread state was found for {previous}; "
                'replay the full conversation with thread: {"type": "create"}',
                "thread_not_found",
            )
        if held.latest != previous:
            return body, Refusal(
                400,
                f"thread.previous_message_id: {previous} has already been continued, and each response "
                f"can be continued only once; continue from the thread's most recent response {held.latest}",
                "thread_already_continued",
            )
        new = body.get("messages")
        messages = [*copy.deepcopy(held.messages), *new] if isinstance(new, list) else new
        return {**copy.deepcopy(held.fields), **body, "messages": messages}, None

    def keep(self, body: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        """Store the answered `message` for a `body` that creates or continues a thread (a
        `continue` as `take` rebuilt it), restarting the thread's time to live."""
        thread = body.get("thread")
        kind = thread.get("type") if isinstance(thread, Mapping) else None
        if kind not in ("create", "continue"):
            return
        now = self.clock()
        reply = {"role": "assistant", "content": copy.deepcopy(message["content"])}
        messages = [*unmarked(body.get("messages") or []), reply]
        previous = thread.get("previous_message_id") if isinstance(thread, Mapping) else None
        held = self._threads.get(str(previous)) if kind == "continue" else None
        if held is None:
            fields = {field: copy.deepcopy(body[field]) for field in CREATE_ONLY_FIELDS if field in body}
            held = _Thread(fields, messages, str(message["id"]), now)
        else:  # the same thread moves on: its older ids now name a response already continued
            held.messages, held.latest, held.stored_at = messages, str(message["id"]), now
        self._threads[held.latest] = held
        self._forget_expired(now)

    def drop(self) -> None:
        """Forget every thread, as the API may at any time (a thread is best-effort): a test of the
        replay path needs a thread lost before it expires."""
        self._threads = {}

    def _live(self, response_id: str) -> _Thread | None:
        held = self._threads.get(response_id)
        if held is None or self.clock() >= held.stored_at + THREAD_TTL_SECONDS:
            return None
        return held

    def _forget_expired(self, now: float) -> None:
        self._threads = {
            key: held for key, held in self._threads.items() if now < held.stored_at + THREAD_TTL_SECONDS
        }


def unmarked(messages: list[Any]) -> list[Any]:
    """A copy of `messages` without the `cache_control` of any block in them, nested blocks (a
    `tool_result`'s content) included; a tool's `input` is data and stays as it is."""
    return [_unmark(m) for m in messages]


def _unmark(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            key: _unmark(item) if key == "content" else copy.deepcopy(item)
            for key, item in value.items()
            if key != "cache_control"
        }
    if isinstance(value, list):
        return [_unmark(item) for item in value]
    return copy.deepcopy(value)
