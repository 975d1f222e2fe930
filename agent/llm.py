"""The one seam between the loop and a model.

Everything the loop knows about a model is `LLM.create(request) -> Message`: a
Messages API request body in, an SDK `Message` out. The real transport is
`AnthropicLLM` on the official SDK; tests plug in `agent.testing.ScriptedLLM` or
point `AnthropicLLM` at the local simulator through `ANTHROPIC_BASE_URL`. Keeping
the response type the SDK's own means the loop reads the same objects whatever
sits behind the seam.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import anthropic
from anthropic.types import Message

__all__ = ["LLM", "AnthropicLLM", "TokenCounter"]


@runtime_checkable
class LLM(Protocol):
    """Anything that answers a Messages API request body with an SDK `Message`."""

    def create(self, request: Mapping[str, Any]) -> Message: ...


@runtime_checkable
class TokenCounter(Protocol):
    """An `LLM` that can also count a request's input tokens exactly (optional)."""

    def count_tokens(self, request: Mapping[str, Any]) -> int: ...


_COUNTED_KEYS = ("model", "messages", "system", "tools", "tool_choice", "thinking")


class AnthropicLLM:
    """`LLM` on the official `anthropic` SDK.

    The key and base URL come from the arguments or, when omitted, from
    `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (the SDK's own lookup), so any
    Messages-API-compatible server works unchanged. `max_retries` and `timeout`
    go straight to the SDK, which retries 408/409/429/5xx with backoff.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 600.0,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.client = client or anthropic.Anthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
        )

    def create(self, request: Mapping[str, Any]) -> Message:
        response: Message = self.client.messages.create(**request)
        return response

    def count_tokens(self, request: Mapping[str, Any]) -> int:
        body = {key: request[key] for key in _COUNTED_KEYS if key in request}
        return self.client.messages.count_tokens(**body).input_tokens
