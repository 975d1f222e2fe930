"""Message threads on the simulator (`agent.testing.threads`), through the SDK.

The SDK's tool runner threads by default, so every rule here is one the real client meets: a
`continue` is served from the conversation the thread holds, billed as that whole conversation,
refused as the API refuses it, and lost once it expires, and the SDK's replay recovers from the
loss. Each test fails when the rule it names breaks.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic import beta_tool
from anthropic.types import ThreadAlreadyContinuedError, ThreadNotFoundError

from agent.testing.cache_model import render
from agent.testing.policies import call, scripted
from agent.testing.simulator import MessagesSimulator
from agent.testing.threads import THREAD_TTL_SECONDS, THREADS_BETA

MODEL = "claude-opus-5"
RULES = "Rule: answer in the house style, cite the ledger, keep totals exact. " * 60
"""A system prompt past the model's minimum cacheable length, so the runs read and write the cache."""
MARK = {"type": "ephemeral"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@beta_tool
def add(a: int, b: int) -> str:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return str(a + b)


LOOP = scripted(
    call("add", a=1, b=2), call("add", a=3, b=4), call("add", a=5, b=6), "The sums are 3, 7 and 11."
)
"""Three tool steps and an answer, told apart by the assistant turns in the request: only a
request that holds the whole conversation gets the next step."""


def run_loop(sim: MessagesSimulator, **options: Any) -> list[anthropic.types.beta.BetaMessage]:
    runner = sim.client().beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        system=RULES,
        tools=[add],
        cache_control=MARK,
        messages=[{"role": "user", "content": "Add 1+2, 3+4 and 5+6, one call at a time."}],
        **options,
    )
    return list(runner)


def whole_prompt(body: dict[str, Any]) -> int:
    return sum(p.tokens for p in render(body))


def billed_prompt(usage: dict[str, Any]) -> int:
    return int(
        usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    )


def create(client: anthropic.Anthropic, **body: Any) -> anthropic.types.beta.BetaMessage:
    settings: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "betas": [THREADS_BETA]}
    return client.beta.messages.create(**{**settings, **body})


def user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


def continuing(message_id: str) -> dict[str, Any]:
    return {"type": "continue", "previous_message_id": message_id}


# -- (a) the tool runner's default threads ------------------------------------------------------


def test_the_tool_runner_runs_its_threaded_loop_to_the_end() -> None:
    with MessagesSimulator(LOOP) as sim:
        replies = run_loop(sim)
    assert sim.rejected == [] and sim.errors == []
    assert [r.stop_reason for r in replies] == ["tool_use", "tool_use", "tool_use", "end_turn"]
    assert replies[-1].content[-1].type == "text"
    sent = sim.threads.received
    assert [b["thread"]["type"] for b in sent] == ["create", "continue", "continue", "continue"]
    for previous, body in zip(replies, sent[1:], strict=False):
        # only the new turn went over the wire: the tool's result, and no system or tools
        assert body["thread"]["previous_message_id"] == previous.id
        assert "system" not in body and "tools" not in body
        assert [m["role"] for m in body["messages"]] == ["user"]
        assert body["messages"][0]["content"][0]["type"] == "tool_result"


def test_a_threaded_run_is_billed_as_the_same_run_without_a_thread() -> None:
    with MessagesSimulator(LOOP, clock=Clock()) as threaded:
        run_loop(threaded)
    with MessagesSimulator(LOOP, clock=Clock()) as unthreaded:
        run_loop(unthreaded, thread=False)
    assert unthreaded.threads.received == []  # the baseline sent whole conversations
    assert threaded.usages == unthreaded.usages
    assert any(u["cache_read_input_tokens"] > 0 for u in threaded.usages)  # the cache took part
    for body, usage in zip(threaded.requests, threaded.usages, strict=True):
        assert billed_prompt(usage) == whole_prompt(body)  # the whole rebuilt conversation


def test_sim_requests_and_the_policy_hold_the_rebuilt_conversation() -> None:
    seen: list[dict[str, Any]] = []

    def policy(body: dict[str, Any]) -> Any:
        seen.append(body)
        return LOOP(body)

    with MessagesSimulator(policy) as sim:
        run_loop(sim)
    last = sim.requests[-1]
    assert last["system"] == RULES and [t["name"] for t in last["tools"]] == ["add"]
    assert [m["role"] for m in last["messages"]] == ["user", "assistant"] * 3 + ["user"]
    assert seen[-1]["messages"] == last["messages"]
    assert last["thread"]["type"] == "continue"


def test_a_continue_takes_its_own_settings_and_the_thread_keeps_system_and_tools() -> None:
    with MessagesSimulator(lambda body: "ok") as sim:
        client = sim.client()
        first = create(client, system="Be brief.", messages=[user("Hi")], thread={"type": "create"})
        create(client, max_tokens=32, messages=[user("Again")], thread=continuing(first.id))
    rebuilt = sim.requests[-1]
    assert rebuilt["system"] == "Be brief." and rebuilt["max_tokens"] == 32
    assert [m["role"] for m in rebuilt["messages"]] == ["user", "assistant", "user"]


def test_streamed_turns_are_stored_and_continued_like_plain_ones() -> None:
    def streamed(client: anthropic.Anthropic, content: str, thread: dict[str, Any]) -> Any:
        with client.beta.messages.stream(
            model=MODEL, max_tokens=64, betas=[THREADS_BETA], messages=[user(content)], thread=thread
        ) as stream:
            return stream.get_final_message()

    with MessagesSimulator(scripted("one", "two", "three")) as sim:
        client = sim.client()
        first = streamed(client, "Hi", {"type": "create"})
        second = streamed(client, "And?", continuing(first.id))
        third = create(client, messages=[user("And then?")], thread=continuing(second.id))
    assert [m.content[-1].text for m in (first, second, third)] == ["one", "two", "three"]
    assert sim.rejected == []


def test_breakpoints_set_on_earlier_turns_do_not_count_against_a_later_one() -> None:
    """Each turn marks its own message; a thread that kept every marker would pass the limit."""
    with MessagesSimulator(lambda body: "ok") as sim:
        client = sim.client()
        marked = [{"type": "text", "text": "Turn 0, with its facts.", "cache_control": MARK}]
        reply = create(
            client, system=RULES, messages=[{"role": "user", "content": marked}], thread={"type": "create"}
        )
        for turn in range(1, 6):
            content = [{"type": "text", "text": f"Turn {turn}, with its facts.", "cache_control": MARK}]
            reply = create(
                client, messages=[{"role": "user", "content": content}], thread=continuing(reply.id)
            )
    assert sim.rejected == []
    assert sim.usages[-1]["cache_read_input_tokens"] > 0  # the earlier turns' writes are read back


# -- (b) an unknown id, and the SDK's replay -----------------------------------------------------


def test_a_continue_from_an_unknown_id_gets_thread_not_found() -> None:
    with MessagesSimulator() as sim, pytest.raises(ThreadNotFoundError) as raised:
        create(sim.client(), messages=[user("Hi")], thread=continuing("msg_never_sent"))
    error = raised.value
    assert error.status_code == 404
    assert isinstance(error.body, dict)
    assert error.body["error"]["type"] == "not_found_error"
    assert error.body["error"]["details"] == {"error_code": "thread_not_found"}
    assert sim.usages == [] and sim.rejected == []  # nothing answered, and not a 400


def test_the_tool_runner_replays_a_lost_thread_and_finishes() -> None:
    with MessagesSimulator(LOOP) as sim:
        losses = [sim.threads.drop]  # the API loses the thread once, during the first tool call

        @beta_tool(name="add")
        def add_during_a_loss(a: int, b: int) -> str:
            """Add two numbers while the API may lose its threads.

            Args:
                a: the first.
                b: the second.
            """
            if losses:
                losses.pop()()
            return str(a + b)

        runner = sim.client().beta.messages.tool_runner(
            model=MODEL, max_tokens=256, system=RULES, tools=[add_during_a_loss], messages=[user("Add them.")]
        )
        replies = list(runner)
    assert replies[-1].stop_reason == "end_turn"
    kinds = [b["thread"]["type"] for b in sim.threads.received]
    assert kinds == ["create", "continue", "create", "continue", "continue"]
    replay = sim.threads.received[2]  # the whole conversation again, under a new thread
    assert replay["system"] == RULES and len(replay["messages"]) == 3
    assert sim.threads.received[3]["thread"]["previous_message_id"] == replies[1].id
    assert sim.rejected == []


def test_the_tool_runner_goes_on_unthreaded_when_a_replayed_thread_is_lost_again() -> None:
    with MessagesSimulator(LOOP) as sim:

        @beta_tool(name="add")
        def add_losing_threads(a: int, b: int) -> str:
            """Add two numbers while the API loses every thread.

            Args:
                a: the first.
                b: the second.
            """
            sim.threads.drop()
            return str(a + b)

        runner = sim.client().beta.messages.tool_runner(
            model=MODEL, max_tokens=256, tools=[add_losing_threads], messages=[user("Add them.")]
        )
        replies = list(runner)
    assert replies[-1].stop_reason == "end_turn"
    assert [b["thread"]["type"] for b in sim.threads.received] == ["create", "continue", "create", "continue"]
    unthreaded = sim.requests[len(sim.threads.received) :]
    assert len(unthreaded) == 2 and all("thread" not in body for body in unthreaded)
    assert sim.rejected == []


# -- (c) expiry on the simulator's clock ---------------------------------------------------------


def test_a_thread_expires_after_its_time_to_live_and_each_answer_restarts_it() -> None:
    clock = Clock()
    with MessagesSimulator(lambda body: "ok", clock=clock) as sim:
        client = sim.client()
        reply = create(client, messages=[user("Hi")], thread={"type": "create"})
        for _ in range(3):  # each continue comes just in time, later than a first-only clock allows
            clock.now += THREAD_TTL_SECONDS - 1
            reply = create(client, messages=[user("Still there?")], thread=continuing(reply.id))
        clock.now += THREAD_TTL_SECONDS
        with pytest.raises(ThreadNotFoundError):
            create(client, messages=[user("And now?")], thread=continuing(reply.id))
    assert len(sim.usages) == 4


def test_the_tool_runner_replays_a_thread_that_expired_between_its_steps() -> None:
    clock = Clock()
    with MessagesSimulator(LOOP, clock=clock) as sim:

        @beta_tool(name="add")
        def slow_add(a: int, b: int) -> str:
            """Add two numbers slowly.

            Args:
                a: the first.
                b: the second.
            """
            if a == 1:  # the first step outlives the thread
                clock.now += THREAD_TTL_SECONDS
            return str(a + b)

        runner = sim.client().beta.messages.tool_runner(
            model=MODEL, max_tokens=256, tools=[slow_add], messages=[user("Add them.")]
        )
        replies = list(runner)
    assert replies[-1].stop_reason == "end_turn"
    kinds = [b["thread"]["type"] for b in sim.threads.received]
    assert kinds == ["create", "continue", "create", "continue", "continue"]
    assert sim.rejected == []


# -- (d) what else the API refuses ---------------------------------------------------------------


@pytest.mark.parametrize("field", ["system", "tools"])
def test_a_continue_that_sends_system_or_tools_again_is_refused(field: str) -> None:
    again = {
        "system": "Be brief.",
        "tools": [{"name": "add", "input_schema": {"type": "object", "properties": {}}}],
    }
    with MessagesSimulator(lambda body: "ok") as sim:
        client = sim.client()
        first = create(client, messages=[user("Hi")], thread={"type": "create"}, **{field: again[field]})
        with pytest.raises(anthropic.BadRequestError, match=f"{field}: not allowed"):
            create(client, messages=[user("Again")], thread=continuing(first.id), **{field: again[field]})
    assert len(sim.rejected) == 1 and sim.rejected[0][1][0].startswith(f"{field}: not allowed")
    assert len(sim.usages) == 1


def test_a_thread_needs_the_beta_header() -> None:
    with (
        MessagesSimulator(lambda body: "ok") as sim,
        pytest.raises(anthropic.BadRequestError, match=THREADS_BETA),
    ):
        sim.client().beta.messages.create(
            model=MODEL, max_tokens=64, messages=[user("Hi")], thread={"type": "create"}
        )
    assert sim.usages == [] and len(sim.rejected) == 1


def test_each_response_can_be_continued_only_once() -> None:
    with MessagesSimulator(lambda body: "ok") as sim:
        client = sim.client()
        first = create(client, messages=[user("Hi")], thread={"type": "create"})
        second = create(client, messages=[user("One way")], thread=continuing(first.id))
        with pytest.raises(ThreadAlreadyContinuedError) as raised:
            create(client, messages=[user("The other way")], thread=continuing(first.id))
        create(client, messages=[user("Onwards")], thread=continuing(second.id))
    assert raised.value.status_code == 400
    assert len(sim.usages) == 3


def test_a_refused_continue_leaves_its_thread_to_continue() -> None:
    with MessagesSimulator(lambda body: "ok") as sim:
        client = sim.client()
        first = create(client, messages=[user("Hi")], thread={"type": "create"})
        with pytest.raises(anthropic.BadRequestError):  # an empty text block: a validation error
            create(
                client,
                messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}],
                thread=continuing(first.id),
            )
        create(client, messages=[user("Again, properly")], thread=continuing(first.id))
    assert len(sim.usages) == 2
