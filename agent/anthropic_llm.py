"""`AnthropicLLM`: the `LLM` seam (`agent.llm`) on the official `anthropic` SDK.

It streams by default. Today's models think inside `max_tokens`, so a useful budget is
tens of thousands of tokens; a non-streamed call that long risks an HTTP timeout that the
SDK retries and bills again, and the SDK refuses large non-streamed `max_tokens`
outright. The SDK's stream helper returns the very same `Message`. A stream that ends
before `message_stop`, or carries an `error` event, is a `StreamCutOff`: a lost answer,
never a final one.
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

BETA_BODY_KEYS = ("mcp_servers",)
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


def _relay(event: Any, on_delta: Delta | None) -> str:
    """Pass one stream event's text or thinking delta on; return the event's type."""
    if on_delta is not None:
        if event.type == "text":
            on_delta("text", event.text)
        elif event.type == "thinking":
            on_delta("thinking", event.thinking)
    return str(event.type)


def _mid_stream(error: anthropic.APIStatusError, response: Any) -> None:
    """Raise `StreamCutOff` for an `error` event inside a 200 stream (it keeps the 200)."""
    if error.status_code == 200:
        why = f"the reply stream carried an error: {error}"
        raise StreamCutOff(response=response, body=None, message=why)


def _whole(last: str, response: Any) -> None:
    """Raise `StreamCutOff` unless the stream's last event was its `message_stop`."""
    if last != "message_stop":
        why = f"the reply stream ended before message_stop (last event: {last or 'none'})"
        raise StreamCutOff(response=response, body=None, message=why)


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
        response: Message = self.client.messages.create(**body, extra_headers=headers or None)
        return response

    def stream(self, request: Mapping[str, Any], on_delta: Delta | None = None) -> Message:
        """Stream the reply through the SDK's helper; the final `Message` is what `create` returns."""
        _require_key(self.client)
        body, headers = split_betas(request)
        with self.client.messages.stream(**body, extra_headers=headers or None) as events:
            last = ""
            try:
                for event in events:
                    last = _relay(event, on_delta)
            except anthropic.APIStatusError as error:
                _mid_stream(error, events.response)
                raise
            _whole(last, events.response)
            return events.get_final_message()

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
        response: Message = await self.aclient.messages.create(**body, extra_headers=headers or None)
        return response

    async def astream(self, request: Mapping[str, Any], on_delta: Delta | None = None) -> Message:
        """`stream`, awaited: deltas reported as they arrive, the final `Message` returned."""
        _require_key(self.aclient)
        body, headers = split_betas(request)
        async with self.aclient.messages.stream(**body, extra_headers=headers or None) as events:
            last = ""
            try:
                async for event in events:
                    last = _relay(event, on_delta)
            except anthropic.APIStatusError as error:
                _mid_stream(error, events.response)
                raise
            _whole(last, events.response)
            return await events.get_final_message()
