"""Properties of pruning and compaction over random valid histories (hypothesis).

Random histories mix parallel tool calls, error results, list-shaped results,
text-only exchanges, `pause_turn` continuations (two assistant messages in a row)
and irreversible and never-prune tools. Whatever the `keep_recent`, batch size,
tail budget or summarizer behaviour, every resulting request must pass
`validate_request`, the first request must survive, irreversible results must
stay visible (verbatim, in a result or in the summary), the inputs must be left
unchanged, and pruning must be idempotent.

2,000 examples per property by default, derandomized so CI is reproducible. For
a longer, randomized hunt: `AGENT_PROPERTY_EXAMPLES=50000 pytest tests/context/test_history_properties.py`.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent.context.compact import compact, fit_context, original_request
from agent.context.prune import is_stub, prune, tool_result_turns
from agent.context.tokens import estimate_tokens
from agent.memory import Memory, with_memory_note
from agent.messages import Msg, blocks, content_text, visible_text
from agent.testing import validate_request

EXAMPLES = int(os.environ.get("AGENT_PROPERTY_EXAMPLES", "2000"))
settings.register_profile(
    "history",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="AGENT_PROPERTY_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile("history")

TOOLS = ["search", "fetch", "refund", "spec"]
IRREVERSIBLE = {"refund"}
NEVER_PRUNE = {"spec"}
SIZES = [0, 3, 40, 200, 1500, 1500, 6000]


def irreversible(name: str) -> bool:
    return name in IRREVERSIBLE


def protected(name: str) -> bool:
    return name in IRREVERSIBLE or name in NEVER_PRUNE


@st.composite
def tool_turn(draw: st.DrawFn, ids: list[int], pause: bool = False) -> list[Msg]:
    """An assistant turn with 1-4 parallel calls (maybe split by a pause_turn) and its results."""
    calls = []
    for _ in range(draw(st.integers(1, 4))):
        ids[0] += 1
        name = draw(st.sampled_from(TOOLS))
        calls.append(
            {"type": "tool_use", "id": f"toolu_{ids[0]}", "name": name, "input": {"q": f"q{ids[0]}"}}
        )
    assistant: list[Msg] = []
    if pause:  # server work paused and continued: two assistant messages, merged by the API
        assistant.append({"role": "assistant", "content": [{"type": "text", "text": "working on it"}]})
    lead = [{"type": "text", "text": "let me look"}] if draw(st.booleans()) else []
    assistant.append({"role": "assistant", "content": [*lead, *calls]})
    results = []
    for call in calls:
        size = draw(st.sampled_from(SIZES))
        text = f"{call['name']} result {call['id']} " + "x" * size
        content: Any = [{"type": "text", "text": text}] if draw(st.booleans()) else text
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call["id"], "content": content}
        if draw(st.integers(0, 4)) == 0:
            block["is_error"] = True
        results.append(block)
    if draw(st.integers(0, 5)) == 0:
        results.append({"type": "text", "text": "[memory keys: a, b]"})
    return [*assistant, {"role": "user", "content": results}]


@st.composite
def histories(draw: st.DrawFn, max_turns: int = 12, min_turns: int = 0) -> list[Msg]:
    ids = [draw(st.integers(0, 10_000))]
    request = draw(st.sampled_from(["Refund order A-17.", "요청: 주문 20260801-0012 환불", "find x " * 50]))
    messages: list[Msg] = [{"role": "user", "content": [{"type": "text", "text": request}]}]
    for _ in range(draw(st.integers(min_turns, max_turns))):
        kind = draw(st.sampled_from(["tools", "tools", "tools", "text", "pause"]))
        if kind == "text":
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "a question?"}]})
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "an answer " * draw(st.integers(1, 50))}],
                }
            )
        else:
            messages += draw(tool_turn(ids, pause=kind == "pause"))
    if draw(st.integers(0, 6)) == 0:  # a paused assistant turn waiting to be continued
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "paused"}]})
    return messages


def renamed(messages: list[Msg], prefix: str) -> list[Msg]:
    """`messages` with every tool id prefixed, so histories drawn separately can be joined."""
    text = json.dumps(messages).replace('"toolu_', f'"toolu_{prefix}')
    return list(json.loads(text))


def body(messages: list[Msg]) -> dict[str, Any]:
    return {"model": "claude-opus-5", "max_tokens": 64, "messages": messages}


def irreversible_results(messages: list[Msg]) -> list[str]:
    names = {b["id"]: b["name"] for m in messages for b in blocks(m) if b.get("type") == "tool_use"}
    return [
        content_text(b.get("content"))
        for m in messages
        for b in blocks(m)
        if b.get("type") == "tool_result" and names.get(b["tool_use_id"]) in IRREVERSIBLE
    ]


def summarizer(kind: str) -> Any:
    def summarize(text: str) -> str:
        assert "tool_use" not in text and text  # a plain-text transcript
        if kind == "raise":
            raise RuntimeError("overloaded")
        return "" if kind == "empty" else "Summary: partial progress; nothing irreversible remembered."

    return summarize


@pytest.mark.slow
@PROFILE
@given(histories(min_turns=3), st.integers(0, 4), st.integers(1, 3))
def test_pruning_keeps_requests_valid_protected_results_verbatim_and_is_idempotent(
    messages: list[Msg], keep_recent: int, batch: int
) -> None:
    before = copy.deepcopy(messages)
    pruned = prune(messages, keep_recent, batch=batch, protected=protected)
    event(f"stubs: {min(3, sum(is_stub(b.get('content')) for m in pruned for b in blocks(m)))}")
    assert messages == before
    assert validate_request(body(pruned)) == []
    assert pruned[0] == messages[0]
    assert prune(pruned, keep_recent, batch=batch, protected=protected) == pruned
    assert len(pruned) == len(messages)
    recent = set(tool_result_turns(messages)[-keep_recent:]) if keep_recent else set()
    for index, (old, new) in enumerate(zip(messages, pruned, strict=True)):
        assert old["role"] == new["role"] and len(blocks(old)) == len(blocks(new))
        for a, b in zip(blocks(old), blocks(new), strict=True):
            if a != b:  # the only change pruning may make: a result's content becomes a stub
                assert index not in recent and index > 0
                assert {**a, "content": None} == {**b, "content": None} and is_stub(b["content"])
    assert irreversible_results(pruned) == irreversible_results(messages)


@pytest.mark.slow
@PROFILE
@given(histories(), st.integers(0, 12_000), st.sampled_from(["ok", "ok", "empty", "raise"]))
def test_compaction_keeps_requests_valid_the_request_and_irreversible_results(
    messages: list[Msg], tail_budget: int, kind: str
) -> None:
    before = copy.deepcopy(messages)
    outcome = compact(
        messages,
        summarizer(kind),
        tail_budget=tail_budget,
        size=estimate_tokens,
        irreversible=irreversible,
        protected=protected,
    )
    new = outcome.messages
    event(f"compaction {outcome.outcome}")
    assert messages == before
    assert validate_request(body(new)) == []
    assert original_request(new) == original_request(messages)
    assert original_request(messages) in visible_text(new[:1])
    text = visible_text(new)
    for result in irreversible_results(messages):
        assert result in text
    if outcome.outcome == "compacted":
        assert kind == "ok" and new[1]["role"] == "assistant" and new[1:] == messages[outcome.folded :]
    else:
        assert outcome.outcome == "skipped" or kind != "ok"


@pytest.mark.slow
@PROFILE
@given(
    st.lists(histories(max_turns=5), min_size=2, max_size=4),
    st.integers(0, 4),
    st.integers(500, 20_000),
    st.sampled_from(["ok", "ok", "ok", "raise"]),
)
def test_repeated_steps_of_prune_compact_and_memory_note_stay_valid(
    chunks: list[list[Msg]], keep_recent: int, limit: int, kind: str
) -> None:
    """A growing run: prune, compact (maybe again and again), note memory, append more turns."""
    memory = Memory(initial={"order_id": "A-17"})
    history = chunks[0]
    request = original_request(history)
    seen_irreversible: list[str] = []
    for number, extra in enumerate(chunks[1:]):
        seen_irreversible += irreversible_results(history)
        frozen = copy.deepcopy(history)
        pruned = prune(history, keep_recent, batch=2, protected=protected)
        fitted = fit_context(
            pruned,
            summarizer(kind),
            limit=limit,
            margin=0.1,
            measure=lambda m: estimate_tokens(body(list(m))),
            size=estimate_tokens,
            irreversible=irreversible,
            protected=protected,
            keep_recent=keep_recent,
        )
        event(f"step {number}: {fitted.outcome}")
        sent = with_memory_note(fitted.messages, memory)
        assert history == frozen
        assert validate_request(body(sent)) == []
        assert original_request(sent) == request
        text = visible_text(sent)
        assert all(result in text for result in seen_irreversible)
        if sent[-1]["role"] == "user":
            assert "order_id" in text
        # the next turns continue the conversation (their first message is the user's request: drop it)
        tail = renamed(extra[1:], f"c{number}_")
        if sent[-1]["role"] == "assistant" and tail and tail[0]["role"] == "assistant":
            tail = [{"role": "user", "content": [{"type": "text", "text": "go on"}]}, *tail]
        history = [*sent, *tail]


@pytest.mark.slow
@PROFILE
@given(histories(), st.integers(0, 5_000))
def test_compaction_never_runs_with_a_tool_use_unanswered(messages: list[Msg], tail_budget: int) -> None:
    pending = {"type": "tool_use", "id": "toolu_pending", "name": "search", "input": {}}
    if messages[-1]["role"] == "assistant":
        messages = [*messages[:-1], {"role": "assistant", "content": [*blocks(messages[-1]), pending]}]
    else:
        messages = [*messages, {"role": "assistant", "content": [pending]}]
    called: list[str] = []
    outcome = compact(
        messages,
        lambda text: called.append(text) or "summary",
        tail_budget=tail_budget,
        size=estimate_tokens,
        irreversible=irreversible,
        protected=protected,
    )
    assert outcome.outcome == "skipped" and outcome.messages == messages and not called
    assert json.dumps(outcome.messages) == json.dumps(messages)
