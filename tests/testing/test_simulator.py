"""The simulator as the SDK sees it: strict answers, scripted replies, injected faults."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from agent.testing import reply
from agent.testing.policies import call
from agent.testing.simulator import SERVER_NAME, MessagesSimulator

USER = [{"role": "user", "content": "hello"}]


def ask(sim: MessagesSimulator, **body: Any) -> Any:
    return sim.client().messages.create(
        **{"model": "claude-opus-5", "max_tokens": 100, "messages": USER, **body}
    )


def text_of(message: Any) -> str:
    """The answer's text (Opus 5 thinks first, so the text is not the first block)."""
    return "".join(b.text for b in message.content if b.type == "text")


def test_answers_with_the_policy_and_keeps_what_it_received(simulator: Any) -> None:
    sim = simulator(lambda body: ["Let me look.", call("lookup", q=body["messages"][0]["content"])])
    message = ask(sim, tools=[{"name": "lookup", "input_schema": {"type": "object"}}])

    assert message.stop_reason == "tool_use"
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[2].input == {"q": "hello"} and message.content[2].id == "toolu_sim_0001_0"
    assert sim.requests[0]["messages"] == USER
    assert sim.usages[0]["output_tokens"] == message.usage.output_tokens > 0


def test_stop_reason_from_the_policy_wins(simulator: Any) -> None:
    sim = simulator(lambda body: reply("cut off", stop_reason="max_tokens"))
    assert ask(sim).stop_reason == "max_tokens"


def test_invalid_body_is_a_400_listing_every_violation(simulator: Any) -> None:
    sim = simulator()
    bad = [
        {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "x", "_n": 1}]}
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(sim, messages=bad)

    error = caught.value.body["error"]
    assert caught.value.body["type"] == "error" and error["type"] == "invalid_request_error"
    assert "2 validation error(s)" in error["message"]
    assert "Extra inputs are not permitted" in error["message"]
    assert "text content blocks must be non-empty" in error["message"]
    assert sim.rejected and not sim.usages


def test_unknown_model_is_a_404(simulator: Any) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        ask(simulator(), model="claude-imaginary-9")
    assert caught.value.body["error"] == {"type": "not_found_error", "message": "model: claude-imaginary-9"}


def test_dated_model_ids_are_known(simulator: Any) -> None:
    assert ask(simulator(), model="claude-haiku-4-5-20251001").model == "claude-haiku-4-5-20251001"


def test_haiku_rejects_effort(simulator: Any) -> None:
    with pytest.raises(anthropic.BadRequestError, match="does not support the effort parameter"):
        ask(simulator(), model="claude-haiku-4-5", output_config={"effort": "low"})


def test_headers_the_api_requires(simulator: Any) -> None:
    sim = simulator()
    body = json.dumps({"model": "claude-opus-5", "max_tokens": 5, "messages": USER})
    no_key = httpx2.post(sim.base_url + "/v1/messages", content=body, headers={"anthropic-version": "x"})
    no_version = httpx2.post(sim.base_url + "/v1/messages", content=body, headers={"x-api-key": "k"})
    assert no_key.status_code == 401 and no_key.json()["error"]["type"] == "authentication_error"
    assert no_version.status_code == 400 and "anthropic-version" in no_version.json()["error"]["message"]
    assert no_key.headers["server"] == SERVER_NAME


def test_count_tokens_is_the_whole_prompt(simulator: Any) -> None:
    sim = simulator()
    body = {"model": "claude-opus-5", "system": "Be brief.", "messages": USER}
    counted = sim.client().messages.count_tokens(**body).input_tokens
    usage = ask(sim, system="Be brief.").usage
    assert counted == usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    assert sim.count_requests == [body]


def test_tool_less_requests_go_to_the_summarizer(simulator: Any) -> None:
    sim = simulator(lambda body: "from the policy", summarizer=lambda body: "from the summarizer")
    tools = [{"name": "t", "input_schema": {"type": "object"}}]
    assert text_of(ask(sim)) == "from the summarizer"
    assert text_of(ask(sim, tools=tools)) == "from the policy"


def test_a_policy_that_raises_is_a_500_with_the_traceback_kept(simulator: Any) -> None:
    def broken(body: Any) -> Any:
        raise KeyError("nope")

    sim = simulator(broken)
    with pytest.raises(anthropic.InternalServerError):
        ask(sim)
    assert "KeyError: 'nope'" in sim.errors[0]


def test_a_policy_answer_the_api_never_sends_is_refused(simulator: Any) -> None:
    sim = simulator(lambda body: [{"type": "text", "text": ""}])
    with pytest.raises(anthropic.InternalServerError):
        ask(sim)
    assert "never sends" in sim.errors[0]


def test_responses_are_deterministic(simulator: Any) -> None:
    def run() -> list[Any]:
        sim = simulator(lambda body: [call("a"), call("b")])
        tools = [{"name": n, "input_schema": {"type": "object"}} for n in ("a", "b")]
        return [ask(sim, tools=tools).model_dump() for _ in range(2)]

    assert run() == run()


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.OverloadedError),
    ],
)
def test_injected_status_faults(simulator: Any, status: int, error: type[Exception]) -> None:
    sim = simulator(lambda body: "fine")
    sim.inject(status=status, times=2, retry_after=0)
    for _ in range(2):
        with pytest.raises(error):
            ask(sim)
    assert text_of(ask(sim)) == "fine"
    assert len(sim.requests) == 3 and len(sim.usages) == 1


def test_sdk_retries_ride_out_a_transient_fault(simulator: Any) -> None:
    sim = simulator(lambda body: "fine")
    sim.inject(status=529, retry_after=0)
    message = sim.client(max_retries=1).messages.create(model="claude-opus-5", max_tokens=100, messages=USER)
    assert text_of(message) == "fine" and len(sim.requests) == 2


def test_injected_malformed_body(simulator: Any) -> None:
    sim = simulator()
    sim.inject(malformed=True)
    with pytest.raises(json.JSONDecodeError):
        ask(sim)
    assert text_of(ask(sim)) == "ok"


def test_injected_delay_trips_the_client_timeout(simulator: Any) -> None:
    sim = simulator()
    sim.inject(delay=1.0)
    with pytest.raises(anthropic.APITimeoutError):
        sim.client(timeout=0.2).messages.create(model="claude-opus-5", max_tokens=5, messages=USER)


def test_inject_refuses_nonsense(simulator: Any) -> None:
    sim = simulator()
    with pytest.raises(ValueError):
        sim.inject()
    with pytest.raises(ValueError):
        sim.inject(status=200)


def test_base_url_needs_a_running_simulator() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = MessagesSimulator().base_url
