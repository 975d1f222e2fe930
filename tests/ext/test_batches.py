"""Bulk runs on the Message Batches API (`agent.ext.batches`), against the simulator's batches
endpoints (`agent.testing.batches`): many concurrent runs share batches, each gets its own
reply, a request that fails in a batch fails its run alone (retried or not as the same error
would be alone), batches expire, budgets are checked, replies are priced at half, and a
restarted process polls the batch it submitted instead of paying for it again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import Message

from agent import Agent
from agent.errors import BudgetExceeded, ModelCallFailed
from agent.ext.batches import BatchLLM, BatchRequestCanceled, BatchRequestErrored, BatchRequestExpired
from agent.extension import Extension
from agent.state import RunState
from agent.testing import MessagesSimulator
from agent.testing.batches import DAY_S
from agent.testing.policies import arithmetic, prompt_text
from agent.usage import BATCH_PRICE_FACTOR, Usage
from tools.basic import calculator

MODEL = "claude-haiku-4-5"
Sim = Callable[..., MessagesSimulator]


class Clock:
    """The simulator's clock and `BatchLLM`'s sleep in one: a poll's wait moves time on."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def batch_llm(sim: MessagesSimulator, clock: Clock | None = None, **options: Any) -> BatchLLM:
    client = anthropic.AsyncAnthropic(base_url=sim.base_url, api_key="sim", max_retries=0)
    settings: dict[str, Any] = {"poll_s": 1.0, "max_poll_s": 4.0, "window_s": 0.05}
    if clock is not None:
        settings["sleep"] = clock.sleep
    else:
        settings.update(poll_s=0.01, max_poll_s=0.02)
    return BatchLLM(client=client, **{**settings, **options})


def gather(agent: Agent, prompts: list[str], **run: Any) -> list[Any]:
    async def all_runs() -> list[Any]:
        return await asyncio.gather(*(agent.arun(p, **run) for p in prompts), return_exceptions=True)

    return asyncio.run(all_runs())


def echo(body: dict[str, Any]) -> str:
    return f"answer to: {prompt_text(body)}"


def test_concurrent_runs_share_batches_and_each_gets_its_own_answer(simulator: Sim) -> None:
    sim = simulator(arithmetic)
    llm = batch_llm(sim)
    agent = Agent(llm=llm, tools=[calculator], model=MODEL)
    results = gather(agent, [f"What is {i} + 1000?" for i in range(30)])
    assert [r.text for r in results] == [f"{i} + 1000 = {i + 1000:,}" for i in range(30)]
    assert sim.batches.creates == 2  # step 1 of all 30 runs, then step 2 of all 30
    assert [len(b.requests) for b in sim.batches.batches.values()] == [30, 30]
    assert llm.batches_created == list(sim.batches.batches)
    assert all(r.usage.steps[0].cost_usd is not None for r in results)
    assert {u["service_tier"] for u in sim.usages} == {"batch"}


def test_results_are_matched_by_custom_id_not_position(simulator: Sim) -> None:
    sim = simulator(echo)  # the simulator sends results in reverse order
    agent = Agent(llm=batch_llm(sim), model=MODEL)
    prompts = [f"question number {i}" for i in range(12)]
    results = gather(agent, prompts)
    assert [r.text for r in results] == [f"answer to: {p}" for p in prompts]
    assert sim.batches.creates == 1


def test_max_batch_splits_a_crowd_into_several_batches(simulator: Sim) -> None:
    sim = simulator(echo)
    agent = Agent(llm=batch_llm(sim, max_batch=4), model=MODEL)
    results = gather(agent, [f"q{i}" for i in range(10)])
    assert [r.text for r in results] == [f"answer to: q{i}" for i in range(10)]
    assert sorted(len(b.requests) for b in sim.batches.batches.values()) == [2, 4, 4]


class Bogus(Extension):
    """Adds a body key the API refuses, to one agent's requests."""

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        return {**request, "bogus_option": True}


def test_a_partly_failed_batch_fails_only_the_invalid_run(simulator: Sim) -> None:
    sim = simulator(echo)
    llm = batch_llm(sim)
    good, bad = Agent(llm=llm, model=MODEL), Agent(llm=llm, model=MODEL, extensions=[Bogus()])

    async def both() -> list[Any]:
        runs = [good.arun("first"), bad.arun("broken"), good.arun("third")]
        return await asyncio.gather(*runs, return_exceptions=True)

    first, broken, third = asyncio.run(both())
    assert (first.text, third.text) == ("answer to: first", "answer to: third")
    assert isinstance(broken, ModelCallFailed)
    assert broken.result is not None and broken.result.stop_reason == "error"
    cause = broken.__cause__
    assert isinstance(cause, BatchRequestErrored) and cause.status_code == 400  # not retried
    assert "bogus_option" in str(cause)
    assert sim.batches.creates == 1  # one batch, one request errored in it, no retry
    (batch,) = sim.batches.batches.values()
    assert batch.counts() == {"processing": 0, "succeeded": 2, "errored": 1, "canceled": 0, "expired": 0}
    assert len(sim.rejected) == 1 and "bogus_option" in sim.rejected[0][1][0]


def test_an_overloaded_request_is_retried_in_a_new_batch(simulator: Sim) -> None:
    sim = simulator(echo)
    sim.inject(status=529)  # the first request processed comes back errored: overloaded_error
    agent = Agent(llm=batch_llm(sim), model=MODEL, model_retries=2)
    results = gather(agent, ["a", "b", "c"])
    assert [r.text for r in results] == ["answer to: a", "answer to: b", "answer to: c"]
    assert [len(b.requests) for b in sim.batches.batches.values()] == [3, 1]
    assert all(len(r.usage.steps) == 1 for r in results)  # an error status is not billed


def test_retries_end_in_a_failed_run(simulator: Sim) -> None:
    sim = simulator(echo)
    sim.inject(status=529, times=3)
    agent = Agent(llm=batch_llm(sim), model=MODEL, model_retries=2)
    (failed,) = gather(agent, ["a"])
    assert isinstance(failed, ModelCallFailed)
    assert isinstance(failed.__cause__, BatchRequestErrored) and failed.__cause__.status_code == 529
    assert sim.batches.creates == 3  # the first try and two retries, each its own batch


def test_budgets_are_checked_before_a_batch_is_submitted(simulator: Sim) -> None:
    sim = simulator(arithmetic)
    agent = Agent(llm=batch_llm(sim), tools=[calculator], model=MODEL, max_cost_usd=1e-7)
    (refused,) = gather(agent, ["What is 2 + 2?"])
    assert isinstance(refused, BudgetExceeded)
    assert sim.batches.creates == 0


def _losing_the_first_result(sim: MessagesSimulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch's results file comes back without its lines: answers lost."""
    served = sim.batches._results

    def results(batch: Any) -> Any:
        reply = served(batch)
        return reply if batch.id != "msgbatch_sim_0001" else type(reply)(200, b"\n", reply.headers)

    monkeypatch.setattr(sim.batches, "_results", results)


def test_a_lost_result_is_booked_and_retried(simulator: Sim, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = simulator(echo)
    _losing_the_first_result(sim, monkeypatch)
    (result,) = gather(Agent(llm=batch_llm(sim), model=MODEL, model_retries=1), ["a"])
    assert result.text == "answer to: a"
    assert sim.batches.creates == 2
    assert [u.purpose for u in result.usage.steps] == ["failed_attempt", "step"]  # it may have been billed


def test_budgets_are_checked_before_each_retry(simulator: Sim, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = simulator(echo)
    _losing_the_first_result(sim, monkeypatch)
    # the first attempt fits; the lost one is booked at a conservative ~$0.005; no room for a retry
    agent = Agent(llm=batch_llm(sim), model=MODEL, model_retries=3, max_cost_usd=0.004)
    (refused,) = gather(agent, ["a"])
    assert isinstance(refused, BudgetExceeded)
    assert sim.batches.creates == 1


def test_a_batch_that_partly_expires_retries_the_expired_request(simulator: Sim) -> None:
    clock = Clock()
    sim = simulator(echo, clock=clock)
    sim.batches.capacity = 2  # two of three requests processed; the third waits until expiry
    llm = batch_llm(sim, clock, max_poll_s=3600.0)
    agent = Agent(llm=llm, model=MODEL, model_retries=1)
    results = gather(agent, ["a", "b", "c"])
    assert [r.text for r in results] == ["answer to: a", "answer to: b", "answer to: c"]
    first, second = sim.batches.batches.values()
    assert first.counts() == {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0, "expired": 1}
    assert len(second.requests) == 1
    assert clock.now - 1000.0 >= DAY_S  # the retry came only once the first batch had expired
    assert max(clock.slept) == 3600.0  # the backoff doubled up to its cap


def test_an_expired_request_without_retries_fails_its_run(simulator: Sim) -> None:
    clock = Clock()
    sim = simulator(echo, clock=clock)
    sim.batches.processing_s = 2 * DAY_S  # nothing is processed before the batch expires
    agent = Agent(llm=batch_llm(sim, clock, max_poll_s=7200.0), model=MODEL, model_retries=0)
    (failed,) = gather(agent, ["a"])
    assert isinstance(failed, ModelCallFailed)
    assert isinstance(failed.__cause__, BatchRequestExpired) and failed.__cause__.status_code == 408
    assert sim.requests == []  # never processed, so never billed
    assert failed.result is not None and failed.result.usage.steps == []


def test_a_canceled_batch_is_not_retried(simulator: Sim) -> None:
    clock = Clock()
    sim = simulator(echo, clock=clock)
    sim.batches.polls_to_end = 5
    headers = {"x-api-key": "sim", "anthropic-version": "2023-06-01"}

    async def sleep_and_cancel(seconds: float) -> None:
        for batch_id in sim.batches.batches:
            sim.batches.handle("POST", f"/v1/messages/batches/{batch_id}/cancel", headers, b"")
        await clock.sleep(seconds)

    agent = Agent(llm=batch_llm(sim, sleep=sleep_and_cancel), model=MODEL, model_retries=3)
    (failed,) = gather(agent, ["a"])
    assert isinstance(failed, ModelCallFailed) and isinstance(failed.__cause__, BatchRequestCanceled)
    assert sim.batches.creates == 1


def test_polling_waits_for_the_end_with_backoff(simulator: Sim) -> None:
    clock = Clock()
    sim = simulator(echo, clock=clock)
    sim.batches.processing_s = 30.0
    llm = batch_llm(sim, clock, poll_s=2.0, max_poll_s=8.0)
    (result,) = gather(Agent(llm=llm, model=MODEL), ["a"])
    assert result.text == "answer to: a"
    assert clock.slept == [2.0, 4.0, 8.0, 8.0, 8.0]  # the poll at 30 s sees it ended
    assert sim.batches.retrieves == 6


def test_a_batch_reply_costs_half_the_same_reply_standard(simulator: Sim) -> None:
    sim = simulator(echo)
    live = Agent(llm=sim.llm(), model=MODEL).run("the same question")
    batched = Agent(llm=batch_llm(sim), model=MODEL).run("the same question")
    assert live.text == batched.text
    assert (live.usage.prompt, live.usage.output) == (batched.usage.prompt, batched.usage.output)
    assert live.usage.cost_usd is not None and batched.usage.cost_usd is not None
    assert batched.usage.cost_usd == pytest.approx(live.usage.cost_usd * 0.5)
    assert BATCH_PRICE_FACTOR == 0.5


def _reply(tier: str) -> Message:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1000,
            "output_tokens": 500,
            "cache_read_input_tokens": 2000,
            "cache_creation_input_tokens": 300,
            "service_tier": tier,
        },
    }
    return Message.model_validate(body)


def test_batch_pricing_halves_every_part_of_the_bill() -> None:
    standard = Usage.from_message(1, _reply("standard"))
    batch = Usage.from_message(1, _reply("batch"))
    assert standard.cost_usd is not None and batch.cost_usd is not None
    assert batch.cost_usd == pytest.approx(standard.cost_usd / 2)
    assert Usage.from_message(1, _reply("priority")).cost_usd == pytest.approx(standard.cost_usd)


def test_a_restarted_process_polls_the_batch_instead_of_resubmitting(simulator: Sim, tmp_path: Path) -> None:
    sim = simulator(echo)
    sim.batches.polls_to_end = 10**9  # the batch is still running when the process "dies"
    journal = tmp_path / "batches.jsonl"
    agent = Agent(llm=batch_llm(sim, journal=journal), model=MODEL)

    async def crash() -> None:
        task = asyncio.ensure_future(agent.arun("a long job"))
        while sim.batches.creates == 0:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(crash())
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [line["batch_id"] for line in lines] == ["msgbatch_sim_0001"]
    sim.batches.polls_to_end = 0  # meanwhile, the batch has ended
    again = Agent(llm=batch_llm(sim, journal=journal), model=MODEL)
    (result,) = gather(again, ["a long job"])
    assert result.text == "answer to: a long job"
    assert sim.batches.creates == 1  # polled, not submitted again
    assert len(sim.requests) == 1  # and answered (billed) once


def test_identical_requests_get_distinct_custom_ids(simulator: Sim) -> None:
    calls = iter(range(100))
    sim = simulator(lambda body: f"sample {next(calls)}")
    agent = Agent(llm=batch_llm(sim), model=MODEL)
    results = gather(agent, ["the same prompt"] * 3)
    assert sorted(r.text for r in results) == ["sample 0", "sample 1", "sample 2"]
    (batch,) = sim.batches.batches.values()
    assert len({item["custom_id"] for item in batch.requests}) == 3


def test_betas_go_in_the_create_header_one_batch_per_set(simulator: Sim) -> None:
    sim = simulator(echo)
    llm = batch_llm(sim)
    plain = {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": "x"}]}
    beta = {
        **plain,
        "betas": ["context-management-2025-06-27"],
        "messages": [{"role": "user", "content": "y"}],
    }

    async def both() -> tuple[Message, Message]:
        return await asyncio.gather(llm.acreate(plain), llm.acreate(beta))

    asyncio.run(both())
    # the two lanes are sent in whichever order their windows close: tell them apart by content
    by_text = {b.requests[0]["params"]["messages"][0]["content"]: b for b in sim.batches.batches.values()}
    assert set(by_text) == {"x", "y"}
    assert "anthropic-beta" not in by_text["x"].headers
    assert by_text["y"].headers["anthropic-beta"] == "context-management-2025-06-27"
    assert all("betas" not in item["params"] for item in by_text["y"].requests)


def test_sync_run_goes_through_a_batch_of_one(simulator: Sim) -> None:
    sim = simulator(arithmetic)
    result = Agent(llm=batch_llm(sim), tools=[calculator], model=MODEL).run("What is 6 * 7?")
    assert result.text == "6 * 7 = 42"
    assert [len(b.requests) for b in sim.batches.batches.values()] == [1, 1]


# -- the simulator's endpoints, read with the SDK's own types -------------------------------


def _params(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": text}], **extra}


def test_simulator_batches_read_with_the_sdks_types(simulator: Sim) -> None:
    sim = simulator(echo)
    client = sim.client()
    requests: list[Mapping[str, Any]] = [
        {"custom_id": "ok-1", "params": _params("one")},
        {"custom_id": "bad-2", "params": _params("two", temperature="hot")},
        {"custom_id": "stream-3", "params": _params("three", stream=True)},
    ]
    created = client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
    assert created.processing_status == "in_progress" and created.results_url is None
    assert created.request_counts.processing == 3
    ended = client.messages.batches.retrieve(created.id)
    assert ended.processing_status == "ended" and ended.ended_at is not None
    assert (ended.expires_at - ended.created_at).total_seconds() == DAY_S
    assert ended.request_counts.succeeded == 1 and ended.request_counts.errored == 2
    results = {r.custom_id: r.result for r in client.messages.batches.results(created.id)}
    ok = results["ok-1"]
    assert ok.type == "succeeded" and ok.message.usage.service_tier == "batch"
    bad = results["bad-2"]
    assert bad.type == "errored" and bad.error.error.type == "invalid_request_error"
    assert results["stream-3"].type == "errored"


def test_simulator_refuses_a_bad_envelope_whole(simulator: Sim) -> None:
    client = simulator(echo).client()
    twice = [{"custom_id": "same", "params": _params("a")}, {"custom_id": "same", "params": _params("b")}]
    with pytest.raises(anthropic.BadRequestError, match="another request"):
        client.messages.batches.create(requests=twice)  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError, match="custom_id"):
        client.messages.batches.create(requests=[{"custom_id": "has space", "params": _params("a")}])  # type: ignore[typeddict-item]
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve("msgbatch_nope")


def test_simulator_results_before_the_end_are_refused(simulator: Sim) -> None:
    sim = simulator(echo)
    sim.batches.polls_to_end = 3
    client = sim.client()
    created = client.messages.batches.create(requests=[{"custom_id": "a", "params": _params("a")}])  # type: ignore[typeddict-item]
    reply = sim.handle(
        "GET",
        f"/v1/messages/batches/{created.id}/results",
        {"x-api-key": "k", "anthropic-version": "2023-06-01"},
        b"",
    )
    assert reply.status == 400
    assert client.messages.batches.retrieve(created.id).processing_status == "in_progress"


def test_a_failed_create_call_fails_each_waiting_run_as_that_error(simulator: Sim) -> None:
    sim = simulator(echo)
    base = sim.base_url
    sim.stop()  # nothing listens there now: the create call cannot connect
    client = anthropic.AsyncAnthropic(base_url=base, api_key="sim", max_retries=0)
    agent = Agent(llm=BatchLLM(client=client, window_s=0.01), model=MODEL, model_retries=0)
    failures = gather(agent, ["a", "b"])
    assert all(isinstance(f, ModelCallFailed) for f in failures)
    assert all(isinstance(f.__cause__, anthropic.APIConnectionError) for f in failures)
    assert failures[0].__cause__ is not failures[1].__cause__  # each run raises its own copy


def test_a_torn_journal_line_is_skipped(simulator: Sim, tmp_path: Path) -> None:
    sim = simulator(echo)
    journal = tmp_path / "batches.jsonl"
    (result,) = gather(Agent(llm=batch_llm(sim, journal=journal), model=MODEL), ["a"])
    journal.write_text(journal.read_text() + '{"custom_id": "x-0", "batch_')  # a crash mid-write
    again = batch_llm(sim, journal=journal)
    (result,) = gather(Agent(llm=again, model=MODEL), ["a"])
    assert result.text == "answer to: a" and again.batches_created == [] and sim.batches.creates == 1
