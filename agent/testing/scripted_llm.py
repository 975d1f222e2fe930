"""`ScriptedLLM`: an in-process model that answers from a script.

The fastest witness for the loop's own logic: no HTTP, no server. It speaks the same
vocabulary as the simulator's policies (`agent.testing.policies`): each script entry is an
answer (a string, a block such as `call(...)`, a list of them, `reply(...)`), an SDK
`Message`, or a policy that gets the request and returns one of those; the script may also
be one policy that answers every call. Every request is kept (deep-copied, as sent) in
`requests` for assertions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from anthropic.types import Message

from agent.context.tokens import estimate_tokens, prompt_estimate
from agent.testing.policies import as_reply, call, reply, server_call, text, tool_use
from agent.testing.server_turns import name_calls

__all__ = ["ScriptedLLM", "call", "reply", "server_call", "text", "tool_use"]

Policy: TypeAlias = Callable[[Mapping[str, Any]], Any]


class ScriptedLLM:
    """Answers each `create` with the next scripted answer (or the policy's); fails loudly when out."""

    def __init__(self, script: Iterable[Any] | Policy, model: str = "claude-opus-5") -> None:
        self.policy: Policy | None = script if callable(script) else None
        self.script: list[Any] = [] if callable(script) else list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []

    def create(self, request: Mapping[str, Any]) -> Message:
        self.requests.append(copy.deepcopy(dict(request)))
        number = len(self.requests)
        if self.policy is not None:
            entry = self.policy(request)
        elif number > len(self.script):
            raise AssertionError(f"ScriptedLLM has no response for call {number}")
        else:
            entry = self.script[number - 1]
        if callable(entry) and not isinstance(entry, Message):
            entry = entry(request)
        if isinstance(entry, Message):
            return entry
        body = as_reply(entry)
        body["content"] = [
            {"id": f"toolu_{number:04d}_{i}", **b} if b["type"] == "tool_use" else dict(b)
            for i, b in enumerate(body["content"])
        ]
        name_calls(body["content"], f"{number:04d}")
        usage = {
            "input_tokens": prompt_estimate(request),  # as the API bills: unloaded deferred tools aside
            "output_tokens": estimate_tokens(body["content"]),
            **body.get("usage", {}),
        }
        return Message.model_validate(
            {
                "id": f"msg_{number:04d}",
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
