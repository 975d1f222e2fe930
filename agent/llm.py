"""The one seam between the loop and a model: `LLM.create(request) -> Message`, a Messages API body in,
the SDK's own `Message` out, so the loop reads the same objects whatever sits behind it (`AnthropicLLM`,
`agent.testing.ScriptedLLM`, the simulator). `TokenCounter` and `StreamingLLM` are optional protocols, so a
fake needs neither; `Agent.arun` awaits an `AsyncLLM` (a plain `LLM` runs in a thread). A request's `betas`
go in the `anthropic-beta` header, never in the body."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from anthropic.types import Message

__all__ = ["LLM", "AsyncLLM", "Delta", "StreamingLLM", "TokenCounter"]

Delta = Callable[[str, str], None]
"""`on_delta(kind, text)`, kind "text" or "thinking": a piece of the reply as it streams."""


@runtime_checkable
class LLM(Protocol):
    """Anything that answers a Messages API request body with an SDK `Message`."""

    def create(self, request: Mapping[str, Any]) -> Message: ...


@runtime_checkable
class AsyncLLM(Protocol):
    """Answers a request body on the event loop (optional `astream` like `StreamingLLM.stream`); `acreate`,
    so one object can be both an `LLM` and an `AsyncLLM` (as `AsyncAnthropicLLM` is)."""

    async def acreate(self, request: Mapping[str, Any]) -> Message: ...


@runtime_checkable
class StreamingLLM(Protocol):
    """An `LLM` that can report the reply's text and thinking as they arrive (optional)."""

    def stream(self, request: Mapping[str, Any], on_delta: Delta | None = None) -> Message: ...


@runtime_checkable
class TokenCounter(Protocol):
    """An `LLM` that can also count a request's input tokens exactly (optional)."""

    def count_tokens(self, request: Mapping[str, Any]) -> int: ...
