"""Streams are complete or they are errors (issue 27): a reply cut mid-text, one that ends
without `message_delta` / `message_stop`, and an `error` event inside a 200 stream, each
sent by the simulator to the real SDK. None may end a run as a success."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent import Agent, ModelCallFailed, tool
from agent.anthropic_llm import StreamCutOff
from agent.testing.simulator import CUTS, MessagesSimulator

refunds: list[int] = []


@tool(irreversible=True)
def refund(order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: the order.
    """
    refunds.append(order_id)
    return "refunded"


def answer(body: dict[str, Any]) -> Any:
    return "The refund for order 42 was NOT issued: the order is not eligible."


def calls_refund(body: dict[str, Any]) -> Any:
    if any(m["role"] == "assistant" for m in body["messages"]):
        return "done"
    return {"content": ["Refunding.", {"type": "tool_use", "name": "refund", "input": {"order_id": 42}}]}


@pytest.mark.parametrize("how", CUTS)
def test_a_broken_stream_is_an_error_never_an_answer(
    simulator: Callable[..., MessagesSimulator], how: str
) -> None:
    sim = simulator(answer)
    sim.inject(cut=how, times=10)
    agent = Agent(llm=sim.llm(), model="claude-opus-5", model_retries=1, artifacts_dir=None)
    with pytest.raises(ModelCallFailed) as failed:
        agent.run("Was order 42 refunded?")
    assert isinstance(failed.value.__cause__, StreamCutOff)
    assert failed.value.result is not None and failed.value.result.stop_reason == "error"
    assert len(sim.requests) == 2  # retried once, like any lost answer


@pytest.mark.parametrize("how", CUTS)
def test_a_broken_stream_is_retried_and_the_whole_answer_wins(
    simulator: Callable[..., MessagesSimulator], how: str
) -> None:
    sim = simulator(answer)
    sim.inject(cut=how)
    agent = Agent(llm=sim.llm(), model="claude-opus-5", model_retries=2, artifacts_dir=None)
    result = agent.run("Was order 42 refunded?")
    assert result.text.endswith("the order is not eligible.") and result.stop_reason == "end_turn"
    assert len(result.usage.steps) == 2  # the broken attempt is counted, not free


def test_a_tool_call_cut_off_in_its_stream_is_not_run_and_not_an_answer(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    refunds.clear()
    sim = simulator(calls_refund)
    sim.inject(cut="no-stop")
    agent = Agent(llm=sim.llm(), model="claude-opus-5", model_retries=0, tools=[refund], artifacts_dir=None)
    with pytest.raises(ModelCallFailed):
        agent.run("Refund order 42.")
    assert refunds == []
