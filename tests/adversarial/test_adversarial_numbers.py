"""Hostile numbers (issue 27): usage no server could mean, and inputs nested absurdly deep."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message

from agent import Agent, ModelCallFailed, tool
from agent.testing import ScriptedLLM, reply, tool_use, validate_request


class Constructed:
    """A model whose answers bypass validation (`model_construct`), as a hand-written
    client or a compatible server's SDK may hand them over."""

    def __init__(self, usage: dict[str, Any]) -> None:
        self.usage, self.calls = usage, 0

    def create(self, request: Any) -> Message:
        self.calls += 1
        good = reply("The refund is done.", input_tokens=100, output_tokens=10)
        message = Message.model_validate(
            {
                **good,
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": request["model"],
                "stop_sequence": None,
            }
        )
        return message.model_copy(update={"usage": message.usage.model_copy(update=self.usage)})


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": -50_000_000},
        {"output_tokens": float("nan")},
        {"cache_read_input_tokens": "12"},
        {"input_tokens": 1.5},
        {"output_tokens": True},
    ],
    ids=["negative", "nan", "string", "fraction", "bool"],
)
def test_impossible_usage_is_a_failed_call_never_a_refund(usage: dict[str, Any]) -> None:
    model = Constructed(usage)
    agent = Agent(llm=model, model_retries=1, max_cost_usd=0.5, artifacts_dir=None)
    with pytest.raises(ModelCallFailed, match="usage") as failed:
        agent.run("Refund order 42.")
    assert model.calls == 2  # retried, as an unreadable answer is
    run = failed.value.result
    assert run is not None and run.usage.cost_usd >= 0  # the attempts are counted, never credited


@tool
def echo(data: dict[str, Any]) -> str:
    """Echo some data.

    Args:
        data: anything.
    """
    return "ok"


@pytest.mark.parametrize("depth", [100, 300])
def test_an_input_nested_absurdly_deep_is_an_error_result(depth: int) -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    llm = ScriptedLLM([reply(tool_use("echo", {"data": deep})), reply("done")])
    result = Agent(llm=llm, tools=[echo], artifacts_dir=None).run("Echo this.")
    assert result.text == "done"
    answer = llm.requests[1]["messages"][-1]["content"][0]
    assert answer["is_error"] is True and "levels deep" in answer["content"]
    assert validate_request(llm.requests[1]) == []
