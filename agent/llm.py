"""The one seam between the loop and a model.

Everything the loop knows about a model is `LLM.create(request) -> Message`: a
Messages API request body in, an SDK `Message` out. The real transport is
`AnthropicLLM` (`agent.anthropic_llm`) on the official SDK; tests plug in
`agent.testing.ScriptedLLM` or point `AnthropicLLM` at the local simulator through
`ANTHROPIC_BASE_URL`. Keeping the response type the SDK's own means the loop reads the
same objects whatever sits behind the seam.

Two optional capabilities sit beside it, each its own small protocol so a fake
needs neither: `TokenCounter` (an exact `count_tokens`) and `StreamingLLM` (the
same call, reporting text and thinking deltas as they arrive). `AsyncLLM` is the seam's
async side, for `Agent.arun`: `acreate` (and optionally `astream`) awaited on the event
loop; a plain `LLM` works under `arun` too (called in a worker thread).

A request may carry `betas` (a list of beta names, as the SDK's beta methods take
them); an `LLM` sends them as the `anthropic-beta` header, never in the body.
"""

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
    """Answers a request body on the event loop (optional `astream(request, on_delta)` like
    `StreamingLLM.stream`). Named `acreate`, not `create`, so that one object can be both an
    `LLM` and an `AsyncLLM` (as `AsyncAnthropicLLM` is)."""

    async def acreate(self, request: Mapping[str, Any]) -> Message: ...


@runtime_checkable
class StreamingLLM(Protocol):
    """An `LLM` that can report the reply's text and thinking as they arrive (optional)."""

    def stream(self, request: Mapping[str, Any], on_delta: Delta | None = None) -> Message: ...


@runtime_checkable
class TokenCounter(Protocol):
    """An `LLM` that can also count a request's input tokens exactly (optional)."""

    def count_tokens(self, request: Mapping[str, Any]) -> int: ...
