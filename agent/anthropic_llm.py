"""`AnthropicLLM`: the `LLM` seam (`agent.llm`) on the official `anthropic` SDK.

It streams by default. Today's models think inside `max_tokens`, so a useful budget is
tens of thousands of tokens; a non-streamed call that long risks an HTTP timeout that the
SDK retries and bills again, and the SDK refuses large non-streamed `max_tokens`
outright. A stream that ends before `message_stop`, or carries an `error` event, is a
`StreamCutOff`: a lost answer, never a final one.

The SDK sends every request (its stream helper's, so the headers are its own), but the reply
is read from the body the API sent, streamed or not (`agent.stream`): the SDK's accumulator
and its stable types drop what they do not model (an MCP call's streamed input, a compaction's
content, `context_management`, `usage.iterations`, whole block types). Both paths return the
same `Message`, every field the API sent kept.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import anthropic
from anthropic.types import Message
from typing_extensions import Self

from agent.errors import MissingAPIKey
from agent.llm import Delta
from agent.models import ModelTable, refine_from_capabilities
from agent.stream import ReplyStream, message

__all__ = ["AnthropicLLM", "AsyncAnthropicLLM", "StreamCutOff", "split_betas"]

NO_KEY = (
    "no Anthropic API key: set ANTHROPIC_API_KEY (or pass AnthropicLLM(api_key=...)). "
    "Offline, a scripted model stands in: `from agent import Agent; from agent.testing import ScriptedLLM; "
    "print(Agent(llm=ScriptedLLM(['Hello!'])).run('hi').text)`; the course runs with no key: "
    "python -m examples.e01_loop"
)


def _require_key(client: anthropic.Anthropic | anthropic.AsyncAnthropic) -> None:
    if client.api_key is None and client.auth_token is None:
        raise MissingAPIKey(NO_KEY)


_COUNTED_KEYS = ("model", "messages", "system", "tools", "tool_choice", "thinking")

BETA_BODY_KEYS = ("mcp_servers", "context_management")
"""Body keys only the SDK's beta methods declare: sent through `extra_body`, so the stable
methods (which refuse unknown keyword arguments) carry them unchanged."""


def split_betas(request: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(body without `betas`, extra headers carrying them as `anthropic-beta`)."""
    body = {k: v for k, v in request.items() if k != "betas" and k not in BETA_BODY_KEYS}
    extra = {k: request[k] for k in BETA_BODY_KEYS if k in request}
    if extra:
        body["extra_body"] = extra
    betas = request.get("betas") or ()
    return body, ({"anthropic-beta": ",".join(betas)} if betas else {})


class StreamCutOff(anthropic.APIResponseValidationError):
    """A streamed reply that ended before its `message_stop`, or with an `error` event. Half a
    sentence is not a final answer and a cut tool call is not a call: like a dropped
    connection, it is retried, its possible cost counted, and past the retries a failed call."""


def _relay(reply: ReplyStream, events: list[dict[str, Any]], on_delta: Delta | None, response: Any) -> None:
    """Pass the events' text and thinking deltas on; `StreamCutOff` at an `error` event (a 200
    stream that failed half-way: overloaded, say)."""
    if reply.error is not None:
        why = f"the reply stream carried an error: {reply.error}"
        raise StreamCutOff(response=response, body=reply.error, message=why)
    if on_delta is None:
        return
    for event in events:
        delta = event.get("delta") if event.get("type") == "content_block_delta" else None
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            on_delta("text", str(delta.get("text", "")))
        elif isinstance(delta, dict) and delta.get("type") == "thinking_delta":
            on_delta("thinking", str(delta.get("thinking", "")))


def _read(response: Any) -> Message:
    """A non-streamed reply's `Message`, read from the body the API sent."""
    body = response.json()
    if not isinstance(body, dict):
        raise anthropic.APIResponseValidationError(
            response=response, body=body, message="the reply is no object"
        )
    return message(body)


def _whole(reply: ReplyStream, response: Any) -> Message:
    """The streamed reply's `Message`; `StreamCutOff` unless its `message_stop` came."""
    if not reply.complete:
        why = f"the reply stream ended before message_stop (last event: {reply.last or 'none'})"
        raise StreamCutOff(response=response, body=None, message=why)
    return message(reply.message())


class AnthropicLLM:
    """`LLM` on the official `anthropic` SDK, streaming by default.

    The key and base URL default to `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (the SDK's
    own lookup), so any Messages-API-compatible server works. `max_retries` is how often a
    failed call is retried; an `Agent` does that itself (`without_retries`) so that its budgets
    see every attempt.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 600.0,
        stream: bool = True,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.streaming = stream
        self.client = client or anthropic.Anthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
        )
        self.max_retries = self.client.max_retries

    def without_retries(self) -> Self:
        """The same transport with the SDK's own (budget-invisible) retries switched off."""
        if self.client.max_retries == 0:
            return self
        twin = copy.copy(self)  # keeps `max_retries`: how often the agent itself retries
        twin.client = self.client.with_options(max_retries=0)
        twin.retries_off()
        return twin

    def retries_off(self) -> None:
        """Hook for `without_retries`: switch off retries in any further client a subclass holds."""

    def create(self, request: Mapping[str, Any]) -> Message:
        _require_key(self.client)
        if self.streaming:
            return self.stream(request)
        body, headers = split_betas(request)
        raw = self.client.messages.with_raw_response.create(**body, extra_headers=headers or None)
        return _read(raw.http_response)

    def stream(self, request: Mapping[str, Any], on_delta: Delta | None = None) -> Message:
        """Stream the reply (the request sent by the SDK's helper, the events read as the API
        sent them); the final `Message` is what `create` returns."""
        _require_key(self.client)
        body, headers = split_betas(request)
        with self.client.messages.stream(**body, extra_headers=headers or None) as events:
            reply = ReplyStream()
            for chunk in events.response.iter_bytes():
                _relay(reply, reply.feed(chunk), on_delta, events.response)
            _relay(reply, reply.finish(), on_delta, events.response)
            return _whole(reply, events.response)

    def count_tokens(self, request: Mapping[str, Any]) -> int:
        _require_key(self.client)
        body, headers = split_betas(request)
        counted = {key: body[key] for key in _COUNTED_KEYS if key in body}
        return self.client.messages.count_tokens(**counted, extra_headers=headers or None).input_tokens

    def refine(self, models: ModelTable, model: str) -> ModelTable:
        """A copy of `models` whose entry for `model` takes the efforts and thinking types the
        API reports (needs a key); an unknown model leaves the table as it was."""
        _require_key(self.client)
        try:
            info = self.client.models.retrieve(model)
        except anthropic.NotFoundError:
            return models
        return refine_from_capabilities(models, model, getattr(info, "capabilities", None))


class AsyncAnthropicLLM(AnthropicLLM):
    """`AnthropicLLM` whose model calls are awaited on `AsyncAnthropic` (for `Agent.arun`).
    The sync methods it inherits run outside the event loop (`count_tokens`, `refine`,
    compaction's summary call, `Agent.run`), so they use a sync twin with the same settings."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 600.0,
        stream: bool = True,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        self.aclient = client or anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
        )
        sync = anthropic.Anthropic(
            api_key=self.aclient.api_key,
            base_url=str(self.aclient.base_url),
            max_retries=self.aclient.max_retries,
            timeout=self.aclient.timeout,
        )
        super().__init__(stream=stream, client=sync)

    def retries_off(self) -> None:
        self.aclient = self.aclient.with_options(max_retries=0)

    async def acreate(self, request: Mapping[str, Any]) -> Message:
        _require_key(self.aclient)
        if self.streaming:
            return await self.astream(request)
        body, headers = split_betas(request)
        raw = await self.aclient.messages.with_raw_response.create(**body, extra_headers=headers or None)
        return _read(raw.http_response)

    async def astream(self, request: Mapping[str, Any], on_delta: Delta | None = None) -> Message:
        """`stream`, awaited: deltas reported as they arrive, the final `Message` returned."""
        _require_key(self.aclient)
        body, headers = split_betas(request)
        async with self.aclient.messages.stream(**body, extra_headers=headers or None) as events:
            reply = ReplyStream()
            async for chunk in events.response.aiter_bytes():
                _relay(reply, reply.feed(chunk), on_delta, events.response)
            _relay(reply, reply.finish(), on_delta, events.response)
            return _whole(reply, events.response)
