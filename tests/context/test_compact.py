"""Pair-safe compaction: the boundary, what the summary carries, the summarizer call, fallbacks."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.compact import (
    ACTION_PREFIX,
    SUMMARY_PROMPT,
    choose_boundary,
    compact,
    fit_context,
    original_request,
    transcript,
)
from agent.context.prune import is_stub
from agent.context.tokens import Calibration, estimate_tokens, request_tokens
from agent.ext.approval import Approval
from agent.messages import Msg
from agent.testing import ScriptedLLM, reply, tool_use, validate_request

REQUEST = "Refund order A-17 for Kim; the earphones arrived broken."
BIG = "r" * 3000


def call(i: int, name: str = "search", content: str = BIG, error: bool = False) -> list[Msg]:
    use = {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"n": i}}
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"t{i}", "content": content}
    if error:
        result["is_error"] = True
    return [
        {"role": "assistant", "content": [{"type": "text", "text": f"step {i}"}, use]},
        {"role": "user", "content": [result]},
    ]


def history(*turns: list[Msg]) -> list[Msg]:
    return [{"role": "user", "content": [{"type": "text", "text": REQUEST}]}, *(m for t in turns for m in t)]


def body(messages: list[Msg]) -> dict[str, Any]:
    return {"model": "claude-opus-5", "max_tokens": 100, "messages": messages}


def irreversible(name: str) -> bool:
    return name == "refund"


def run_compact(messages: list[Msg], summary: str = "Kim wants a refund.", budget: int = 2000) -> Any:
    seen: list[str] = []

    def summarize(text: str) -> str:
        seen.append(text)
        return summary

    outcome = compact(
        messages,
        summarize,
        tail_budget=budget,
        size=estimate_tokens,
        irreversible=irreversible,
        protected=irreversible,
    )
    return outcome, seen


def all_text(messages: list[Msg]) -> str:
    return json.dumps(messages, ensure_ascii=False)


def test_boundary_is_an_assistant_turn_after_a_user_turn_and_the_tail_fits() -> None:
    messages = history(*(call(i) for i in range(6)))
    cut = choose_boundary(messages, 2000, estimate_tokens)
    assert cut is not None
    assert messages[cut]["role"] == "assistant" and messages[cut - 1]["role"] == "user"
    assert sum(estimate_tokens(m) for m in messages[cut:]) <= 2000
    assert sum(estimate_tokens(m) for m in messages[cut - 2 :]) > 2000  # the earliest cut that fits


def test_boundary_skips_an_assistant_turn_continuing_another_one() -> None:
    # after a pause_turn two assistant messages follow each other: the API merges them,
    # so cutting between them would orphan the result of the first one's tool_use
    messages = history(call(0))
    use = {"type": "tool_use", "id": "p1", "name": "search", "input": {}}
    messages += [
        {"role": "assistant", "content": [use]},
        {"role": "assistant", "content": [{"type": "text", "text": "continuing"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "p1", "content": BIG}]},
    ]
    assert choose_boundary(messages, 10, estimate_tokens) == 3
    outcome, _ = run_compact(messages, budget=10)
    assert validate_request(body(outcome.messages)) == []


def test_compacted_history_is_summary_then_verbatim_tail_and_valid() -> None:
    messages = history(*(call(i) for i in range(8)))
    before = copy.deepcopy(messages)
    outcome, seen = run_compact(messages)
    assert outcome.outcome == "compacted"
    new = outcome.messages
    assert messages == before  # input untouched
    assert new[0]["role"] == "user" and new[1]["role"] == "assistant"
    assert REQUEST in new[0]["content"][0]["text"]
    assert "Kim wants a refund." in new[-len(new) :][0]["content"][-1]["text"]
    assert new[1:] == messages[outcome.folded :]  # the tail is verbatim
    assert validate_request(body(new)) == []
    assert len(seen) == 1 and "CALL search" in seen[0] and "RESULT of search" in seen[0]


def test_irreversible_results_in_the_head_are_carried_verbatim() -> None:
    receipt = json.dumps({"refund_id": "R-9", "amount": 89000, "status": "accepted"})
    messages = history(call(0), call(1, "refund", content=receipt), call(2, "refund", "declined", error=True))
    messages += [m for i in range(3, 9) for m in call(i)]
    outcome, _ = run_compact(messages, summary="(the model forgot the refund)")
    texts = [b["text"] for b in outcome.messages[0]["content"]]
    carried = [t for t in texts if t.startswith(ACTION_PREFIX)]
    assert len(carried) == 2
    assert carried[0].endswith(receipt) and 'refund({"n": 1})' in carried[0]
    assert "failed with" in carried[1] and carried[1].endswith("declined")


def test_a_second_compaction_keeps_the_request_and_the_carried_actions() -> None:
    receipt = "refund R-9 accepted"
    messages = history(call(0, "refund", content=receipt), *(call(i) for i in range(1, 8)))
    first, _ = run_compact(messages, summary="first summary")
    grown = first.messages + [m for i in range(20, 28) for m in call(i)]
    second, seen = run_compact(grown, summary="second summary")
    assert second.outcome == "compacted"
    assert original_request(second.messages) == REQUEST
    head = second.messages[0]["content"]
    assert sum(b["text"].endswith(receipt) for b in head) == 1
    assert "first summary" in seen[0]  # the old summary was part of what got summarized
    assert validate_request(body(second.messages)) == []


def test_nothing_happens_while_a_tool_use_is_unanswered() -> None:
    messages = history(*(call(i) for i in range(6)))[:-1]
    outcome, seen = run_compact(messages)
    assert outcome.outcome == "skipped" and outcome.messages == messages and seen == []


@pytest.mark.parametrize("failure", ["raise", "empty"])
def test_a_failed_summary_falls_back_to_pruning_and_is_logged(
    failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    def summarize(text: str) -> str:
        if failure == "raise":
            raise RuntimeError("overloaded")
        return "   "

    messages = history(*(call(i) for i in range(6)))
    with caplog.at_level(logging.WARNING, logger="agent.context"):
        outcome = compact(
            messages,
            summarize,
            tail_budget=100,
            size=estimate_tokens,
            irreversible=irreversible,
            protected=irreversible,
        )
    assert outcome.outcome == "fallback"
    assert "fell back to pruning" in caplog.text
    assert outcome.messages[0] == messages[0]  # the request survives
    results = [b["content"] for m in outcome.messages for b in m["content"] if b.get("type") == "tool_result"]
    assert [is_stub(c) for c in results] == [True] * 5 + [False]
    assert validate_request(body(outcome.messages)) == []


def test_transcript_is_plain_text_with_calls_results_and_errors() -> None:
    text = transcript(history(call(0), call(1, content="no such order", error=True)))
    assert text.startswith(f"USER: {REQUEST}")
    assert 'CALL search {"n": 0}' in text
    assert "ERROR from search(n=1): no such order" in text
    assert "tool_use" not in text


def test_fit_context_compacts_only_past_the_margin() -> None:
    messages = history(*(call(i) for i in range(6)))
    size = estimate_tokens(messages)

    def summarize(text: str) -> str:
        return "summary"

    def run(limit: int, margin: float) -> str:
        return fit_context(
            messages,
            summarize,
            limit=limit,
            margin=margin,
            measure=estimate_tokens,
            size=estimate_tokens,
            irreversible=irreversible,
            protected=irreversible,
        ).outcome

    assert run(size + 10, 0.0) == "skipped"
    assert run(size + 10, 0.2) == "compacted"
    assert run(0, 0.2) == "skipped"  # 0 disables


def test_over_the_line_pruning_comes_first_when_it_makes_enough_room() -> None:
    messages = history(*(call(i) for i in range(8)))
    size = estimate_tokens(messages)
    calls: list[str] = []

    def run(limit: int) -> str:
        return fit_context(
            messages,
            lambda text: calls.append(text) or "summary",
            limit=limit,
            margin=0.0,
            measure=estimate_tokens,
            size=estimate_tokens,
            irreversible=irreversible,
            protected=irreversible,
            keep_recent=1,
        ).outcome

    pruned_size = estimate_tokens(
        fit_context(
            messages,
            str,
            limit=size - 1,
            margin=0.0,
            measure=estimate_tokens,
            size=estimate_tokens,
            irreversible=irreversible,
            protected=irreversible,
            keep_recent=1,
        ).messages
    )
    assert run(size - 1) == "pruned" and not calls  # room enough: no summarizer call
    assert run(pruned_size * 2 - 10) == "compacted" and calls  # pruning alone would not get halfway down


class CountingLLM(ScriptedLLM):
    """A scripted model that also counts tokens, as `AnthropicLLM` does against the API."""

    def __init__(self, script: list[Any], exact: int | Exception) -> None:
        super().__init__(script)
        self.exact = exact
        self.counted = 0

    def count_tokens(self, request: Mapping[str, Any]) -> int:
        self.counted += 1
        if isinstance(self.exact, Exception):
            raise self.exact
        return self.exact


def test_request_tokens_asks_the_counter_only_near_the_line_and_survives_its_failure() -> None:
    request = body(history(call(0)))
    counter = CountingLLM([], 12345)
    calibration = Calibration()
    assert request_tokens(request, calibration, counter, exact_from=10**9) == estimate_tokens(request)
    assert counter.counted == 0
    assert request_tokens(request, calibration, counter) == 12345
    assert calibration.samples == 1 and calibration.ratio == pytest.approx(12345 / estimate_tokens(request))
    assert request_tokens(request, Calibration(), CountingLLM([], RuntimeError("down"))) == estimate_tokens(
        request
    )


@tool(compress=False)  # big results are the point here, not the diet
def search(n: int) -> str:
    """Search something large.

    Args:
        n: which.
    """
    return f"record {n}: " + "z" * 4000


@tool(irreversible=True)
def refund(order_id: str) -> str:
    """Refund an order.

    Args:
        order_id: the order.
    """
    return f"refund of {order_id} accepted as R-{order_id}"


def scripted_agent(steps: int, **options: Any) -> tuple[Agent, ScriptedLLM]:
    summaries: list[dict[str, Any]] = []
    steps_seen: list[int] = []

    def answer(request: Mapping[str, Any]) -> Any:
        if "tools" not in request:
            summaries.append(dict(request))
            return reply("Summary: searching records for Kim's refund.")
        steps_seen.append(1)
        done = len(steps_seen)
        if done == 2:
            return reply(tool_use("refund", {"order_id": "A-17"}))
        return reply(tool_use("search", {"n": done})) if done < steps else reply("finished")

    llm = options.pop("llm", None) or ScriptedLLM([answer] * (steps * 3))
    options.setdefault("artifacts_dir", None)
    options.setdefault("cache", False)  # ScriptedLLM reports no cache reads
    options.setdefault("keep_recent", 3)  # enough history kept that compaction, not pruning, bounds it
    options.setdefault("prune_batch", 4)
    options.setdefault("extensions", [Approval(allow=["refund"])])  # trusted: the gate is not under test
    agent = Agent(llm=llm, tools=[search, refund], system="You help with refunds.", **options)
    return agent, llm


def test_agent_summarizes_with_a_tool_less_call_and_records_its_cost() -> None:
    agent, llm = scripted_agent(
        30, max_context_tokens=6000, max_steps=40, summarizer_model="claude-haiku-4-5"
    )
    result = agent.run(REQUEST)
    summaries = [r for r in llm.requests if "tools" not in r]
    assert summaries, "the run never compacted"
    for request in summaries:
        assert request["model"] == "claude-haiku-4-5"
        assert "tool_choice" not in request
        [message] = request["messages"]
        assert SUMMARY_PROMPT in message["content"][0]["text"]
    purposes = [s.purpose for s in result.steps]
    assert purposes.count("summary") == len(summaries)
    assert all(validate_request(r) == [] for r in llm.requests)
    steps = [r for r in llm.requests if "tools" in r]
    assert max(estimate_tokens(r) for r in steps) <= 6000 * 1.2
    # a compacted history replaces the live one, so it is not summarized again at once
    assert len(summaries) < len(steps) // 3
    last = all_text(steps[-1]["messages"])
    assert REQUEST in last and "refund of A-17 accepted as R-A-17" in last


def test_agent_survives_a_failing_summarizer() -> None:
    def answer(request: Mapping[str, Any]) -> Any:
        if "tools" not in request:
            raise RuntimeError("summarizer down")
        calls.append(1)
        return reply(tool_use("search", {"n": len(calls)})) if len(calls) < 12 else reply("finished")

    calls: list[int] = []
    llm = ScriptedLLM([answer] * 40)
    agent = Agent(llm=llm, tools=[search], max_context_tokens=5000, artifacts_dir=None, cache=False)
    result = agent.run(REQUEST)
    assert result.text == "finished"
    assert result.messages[0]["content"][0]["text"] == REQUEST
    assert all(validate_request(r) == [] for r in llm.requests if "tools" in r)


def test_an_exact_count_over_the_line_triggers_compaction_the_estimate_would_not() -> None:
    def run(exact: bool) -> tuple[int, int]:
        llm = CountingLLM([], 10**6)
        agent, _ = scripted_agent(10, llm=llm, keep_recent=0, max_context_tokens=9_000, compact_margin=0.0)
        llm.script = scripted_agent(10)[1].script
        agent.exact_token_count = exact
        agent.run(REQUEST)
        return llm.counted, sum(1 for r in llm.requests if "tools" not in r)

    assert run(exact=False) == (0, 0)
    counted, summaries = run(exact=True)
    assert counted >= 1 and summaries >= 1
