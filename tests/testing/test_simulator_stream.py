"""The simulator's server-sent event stream, through the real SDK: the streamed `Message` is the
non-streamed one, the events come in the API's order, and faults still apply."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from agent.testing.policies import call
from agent.testing.simulator import MessagesSimulator
from agent.testing.thinking import BINDING_BETA

USER = [{"role": "user", "content": "Look it up."}]
TOOLS = [{"name": "lookup", "input_schema": {"type": "object"}}]
ANSWER = [
    {"type": "thinking", "thinking": 'The user wants a lookup; quote "carefully" \\ twice.'},
    "I'll look that up — one moment, with a few words so the text comes in several deltas.",
    call("lookup", q='a "quoted" \\ path', nested={"list": [1, 2.5, None, "é"]}, flag=True),
]


def body(**extra: Any) -> dict[str, Any]:
    return {"model": "claude-opus-5", "max_tokens": 1000, "messages": USER, "tools": TOOLS, **extra}


def both(simulator: Any, policy: Any = lambda b: ANSWER, **extra: Any) -> tuple[Any, Any]:
    """The same request answered plainly by one simulator and streamed by a twin."""
    plain = simulator(policy).client().messages.create(**body(**extra))
    with simulator(policy).client().messages.stream(**body(**extra)) as stream:
        return plain, stream.get_final_message()


@pytest.mark.parametrize(
    "extra",
    [{}, {"thinking": {"type": "adaptive", "display": "summarized"}}, {"thinking": {"type": "disabled"}}],
)
def test_the_streamed_message_is_the_plain_one(simulator: Any, extra: dict[str, Any]) -> None:
    plain, streamed = both(simulator, **extra)
    assert streamed.to_dict() == plain.to_dict()
    assert streamed.content[-1].input == ANSWER[2]["input"]


def test_a_cut_answer_streams_the_same(simulator: Any) -> None:
    plain, streamed = both(simulator, max_tokens=60)
    assert plain.stop_reason == "max_tokens" and streamed.to_dict() == plain.to_dict()


def test_the_llm_streams_by_default_and_gets_the_same_message(simulator: Any) -> None:
    sim = simulator(lambda b: ANSWER)
    message = sim.llm().create(body())
    assert sim.requests[0].get("stream") is True
    assert message.to_dict() == simulator(lambda b: ANSWER).client().messages.create(**body()).to_dict()


def test_events_come_in_the_api_order(simulator: Any) -> None:
    sim = simulator(lambda b: ANSWER)
    events = list(sim.client().messages.create(**body(), stream=True))
    kinds = [e.type if e.type not in ("content_block_delta",) else e.delta.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert events[0].message.content == [] and events[0].message.stop_reason is None
    blocks = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert blocks == ["thinking", "text", "tool_use"]
    assert kinds.count("signature_delta") == 1 and kinds.count("text_delta") >= 2
    assert kinds.count("input_json_delta") >= 2
    assert kinds.count("content_block_stop") == 3
    assert events[-2].delta.stop_reason == "tool_use"
    assert events[-2].usage.output_tokens_details.thinking_tokens > 0


def test_input_transformations_arrive_in_message_start(simulator: Any) -> None:
    sim = simulator(lambda b: "ok")
    request = body(
        model="claude-opus-5-5",
        thinking={"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
    )
    with sim.client().beta.messages.stream(**request, betas=[BINDING_BETA]) as stream:
        final = stream.get_final_message()
    assert final.input_transformations == []
    raw = sim.handle(
        "POST",
        "/v1/messages",
        {"x-api-key": "k", "anthropic-version": "v", "anthropic-beta": BINDING_BETA},
        json.dumps({**request, "stream": True}).encode(),
    )
    start = json.loads(raw.body.split(b"\n")[1].removeprefix(b"data: "))
    assert start["type"] == "message_start" and start["message"]["input_transformations"] == []


def test_status_faults_come_before_the_stream(simulator: Any) -> None:
    sim = simulator(lambda b: "fine")
    sim.inject(status=529, retry_after=0)
    with pytest.raises(anthropic.OverloadedError), sim.client().messages.stream(**body()) as stream:
        stream.get_final_message()
    with sim.client().messages.stream(**body()) as stream:
        assert stream.get_final_text() == "fine"


def test_a_malformed_stream_fails_to_parse(simulator: Any) -> None:
    sim = simulator()
    sim.inject(malformed=True)
    with pytest.raises(json.JSONDecodeError), sim.client().messages.stream(**body()) as stream:
        stream.get_final_message()
    assert not sim.usages


def test_a_delayed_stream_trips_the_client_timeout(simulator: Any) -> None:
    sim = simulator()
    sim.inject(delay=1.0)
    with pytest.raises(anthropic.APITimeoutError), sim.client(timeout=0.2).messages.stream(**body()) as s:
        s.get_final_message()


def test_errors_are_json_even_for_streamed_requests(simulator: Any) -> None:
    sim: MessagesSimulator = simulator()
    bad = body(messages=[{"role": "user", "content": "x", "x": 1}])
    with (
        pytest.raises(anthropic.BadRequestError, match="Extra inputs"),
        sim.client().messages.stream(**bad) as s,
    ):
        s.get_final_message()
