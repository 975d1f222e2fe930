"""`ScriptedLLM`: an in-process model that answers from a script.

The fastest witness for the loop's own logic: no HTTP, no server. Each entry of the
script is an SDK `Message`, a dict in the API's response shape, or a callable that
gets the request and returns either; `reply()`, `text()` and `tool_use()` build
them. Every request is kept (deep-copied, as sent) in `requests` for assertions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from anthropic.types import Message

from agent.context.tokens import estimate_tokens, prompt_estimate
from agent.testing.server_turns import name_calls

__all__ = ["ScriptedLLM", "reply", "server_call", "text", "tool_use"]

Scripted: TypeAlias = Message | Mapping[str, Any] | Callable[[Mapping[str, Any]], Any]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, input: Mapping[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    """A tool call; without `id`, the model that sends it names it (as the API does)."""
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": dict(input or {})}
    return {**block, "id": id} if id is not None else block


def server_call(
    name: str,
    input: Mapping[str, Any],
    content: Any,
    *,
    result_type: str | None = None,
    id: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A server tool's call and its result, as the API puts them side by side in one turn:
    `reply("Searching.", *server_call("web_search", {"query": q}, [result...]), "Found it.")`.
    Without `id`, the model that sends it names it (and links the result to it)."""
    call: dict[str, Any] = {"type": "server_tool_use", "name": name, "input": dict(input)}
    result: dict[str, Any] = {"type": result_type or f"{name}_tool_result", "content": content}
    if id is not None:
        call["id"], result["tool_use_id"] = id, id
    return call, result


def reply(*content: dict[str, Any] | str, stop_reason: str | None = None, **usage: int) -> dict[str, Any]:
    """A response body; `stop_reason` defaults to tool_use when it holds a tool call."""
    blocks = [text(c) if isinstance(c, str) else c for c in content]
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"content": blocks, "stop_reason": stop_reason, "usage": usage}


class ScriptedLLM:
    """Answers each `create` with the next scripted response; fails loudly when out."""

    def __init__(self, script: Iterable[Scripted], model: str = "claude-opus-5") -> None:
        self.script = list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []

    def create(self, request: Mapping[str, Any]) -> Message:
        self.requests.append(copy.deepcopy(dict(request)))
        if len(self.requests) > len(self.script):
            raise AssertionError(f"ScriptedLLM has no response for call {len(self.requests)}")
        entry = self.script[len(self.requests) - 1]
        if callable(entry) and not isinstance(entry, Message):
            entry = entry(request)
        if isinstance(entry, Message):
            return entry
        body = dict(entry)
        body["content"] = [
            {"id": f"toolu_{len(self.requests):04d}_{i}", **b} if b["type"] == "tool_use" else dict(b)
            for i, b in enumerate(body["content"])
        ]
        name_calls(body["content"], f"{len(self.requests):04d}")
        usage = {
            "input_tokens": prompt_estimate(request),  # as the API bills: unloaded deferred tools aside
            "output_tokens": estimate_tokens(body["content"]),
            **body.get("usage", {}),
        }
        return Message.model_validate(
            {
                "id": f"msg_{len(self.requests):04d}",
                "type": "message",
                "role": "assistant",
                "model": request.get("model", self.model),
                "content": body["content"],
                "stop_reason": body.get("stop_reason", "end_turn"),
                "stop_sequence": None,
                "usage": usage,
                **({"container": body["container"]} if "container" in body else {}),
            }
        )
