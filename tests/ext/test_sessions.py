"""Sessions: what is written, when, and how a run continues from it."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from session_story import STORY, get_order, lookups, refunds, request_refund, story_agent

from agent import Agent, AgentError, ModelCallFailed, RunState, StepBudgetExceeded, ToolCall, tool
from agent.ext.approval import Approval
from agent.ext.sessions import Session, SessionError, aresume, read_session, resume
from agent.ext.sessions.session import SessionLog
from agent.messages import Msg
from agent.testing import ScriptedLLM, reply, tool_use, validate_request


@pytest.fixture(autouse=True)
def _clear() -> None:
    refunds.clear()
    lookups.clear()


def assistant_turns(request: dict[str, Any]) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "assistant")


def by_turn(*answers: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A policy answering from the history's length, so a resumed run picks up the script
    where the history says it is (like a real model would)."""
    return lambda request: answers[assistant_turns(request)]


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def tool_pairs_ok(messages: list[Msg]) -> None:
    """Every tool_use is answered exactly once in the next message."""
    assert validate_request({"model": "m", "max_tokens": 1, "messages": messages}) == []


def test_session_records_each_event_as_it_happens_and_replays_to_the_same_history(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    agent, _ = story_agent()
    result = agent.run("Refund A1.", extensions=[Session(path)])
    assert path.read_bytes().endswith(b"\n")
    kinds = [e["event"] for e in events(path)]
    assert kinds == [
        "start",
        *("usage", "reply", "calls", "result", "turn"),  # step 1: a lookup
        *("usage", "reply", "calls", "approval", "started", "result", "turn"),  # step 2: the refund
        *("usage", "reply", "calls", "result", "result", "turn"),  # step 3: two lookups in parallel
        *("usage", "turn"),  # step 4: the answer
        "end",
    ]
    replay = read_session(path)
    assert replay.messages == result.messages
    assert replay.stop_reason == "end_turn" and replay.pending == []
    assert [u.step for u in replay.usage] == [1, 2, 3, 4]
    assert replay.usage == result.usage.steps


def test_every_record_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(stat.S_ISREG(os.fstat(fd).st_mode)) or real(fd))
    path = tmp_path / "s.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(path)])
    assert synced.count(True) == len(events(path))  # each record (and once the folder: the new entry)


def test_the_started_marker_is_on_disk_before_an_irreversible_tool_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    seen_on_disk: list[list[str]] = []

    @tool(irreversible=True)
    def request_refund(order_id: str) -> str:
        """Refund (irreversible).

        Args:
            order_id: the order.
        """
        seen_on_disk.append([e["event"] for e in events(path)])
        return "ok"

    llm = ScriptedLLM([reply(tool_use("request_refund", {"order_id": "A1"}, id="r1")), reply("ok")])
    agent = Agent(llm=llm, tools=[request_refund], extensions=[Approval(allow=["request_refund"])])
    agent.run("go", extensions=[Session(path)])
    assert seen_on_disk == [["start", "usage", "reply", "calls", "approval", "started"]]


def test_a_summary_is_recorded_as_soon_as_it_is_paid_for(tmp_path: Path) -> None:
    @tool
    def page(n: int) -> str:
        """A page.

        Args:
            n: which.
        """
        return f"page {n} " + "words " * 400

    path = tmp_path / "s.jsonl"
    paid: list[int] = []  # summaries the model was paid for, at each main call
    on_disk: list[int] = []  # summary usage records in the file, at each main call

    def policy(request: dict[str, Any]) -> dict[str, Any]:
        if "tools" not in request:
            paid.append(1)
            return reply("summary of the pages")
        records = [e for e in events(path) if e["event"] == "usage" and e["usage"]["purpose"] == "summary"]
        on_disk.append(len(records))
        paid_so_far = len(paid)
        assert len(records) == paid_so_far  # a crash now must not lose what the summaries cost
        return reply(tool_use("page", {"n": len(on_disk)}))

    agent = Agent(
        llm=ScriptedLLM([policy] * 40),
        tools=[page],
        max_context_tokens=2500,
        keep_recent=0,  # compaction, not pruning, bounds the history
        max_steps=8,
        artifacts_dir=tmp_path / "artifacts",
    )
    with pytest.raises(StepBudgetExceeded):
        agent.run("read pages", extensions=[Session(path)])
    assert paid and max(on_disk) >= 1


def test_an_existing_session_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(path)])
    before = path.read_bytes()
    with pytest.raises(SessionError, match="already holds a session"):
        story_agent()[0].run("Something else.", extensions=[Session(path)])
    assert path.read_bytes() == before


def test_resuming_a_finished_run_calls_no_model(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    first = story_agent()[0].run("Refund A1.", extensions=[Session(path)])
    before = path.read_bytes()
    agent, llm = story_agent()
    again = resume(agent, path)
    assert llm.requests == [] and refunds == ["A1"]
    assert (again.text, again.stop_reason, again.messages) == (first.text, first.stop_reason, first.messages)
    assert path.read_bytes() == before


def cut_after(path: Path, keep: int) -> list[dict[str, Any]]:
    """Simulate a crash: keep only the first `keep` records."""
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:keep]))
    return [json.loads(line) for line in lines[:keep]]


def test_a_crash_at_any_record_resumes_to_a_valid_finished_run_without_repeats(tmp_path: Path) -> None:
    full = tmp_path / "full.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(full)])
    total = len(events(full))
    for keep in range(1, total):
        path = tmp_path / f"cut{keep}.jsonl"
        path.write_bytes(full.read_bytes())
        kept = cut_after(path, keep)
        refunds.clear()
        agent, llm = story_agent()
        result = resume(agent, path)
        started = any(e["event"] == "started" and e["id"] == "r1" for e in kept)
        finished = any(e["event"] == "result" and e["id"] == "r1" for e in kept)
        assert refunds == ([] if started else ["A1"]), keep  # at most once over both lives
        assert all(validate_request(r) == [] for r in llm.requests), keep
        tool_pairs_ok(result.messages)
        assert result.text == "Done: A1 is refunded.", keep
        said = [b.get("text") for m in result.messages if m["role"] == "assistant" for b in m["content"]]
        assert "Refunding." in said, keep  # the interrupted turn comes back whole, text included
        answers = {
            b["tool_use_id"]: b for m in result.messages for b in m["content"] if b["type"] == "tool_result"
        }
        assert set(answers) == {"g1", "r1", "g2", "g3"}, keep
        if started and not finished:
            assert answers["r1"]["content"].startswith("outcome unknown: request_refund"), keep
            assert answers["r1"]["is_error"] is True
        else:
            assert answers["r1"]["content"] == "refund R-A1 issued", keep
        replay = read_session(path)  # the resumed stretch is recorded too
        assert replay.stop_reason == "end_turn" and replay.messages == result.messages, keep


def test_resume_keeps_counting_budgets_and_usage(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(StepBudgetExceeded):
        story_agent(max_steps=2)[0].run("Refund A1.", extensions=[Session(path)])
    assert [e["event"] for e in events(path)][-1] == "stopped"
    with pytest.raises(StepBudgetExceeded):  # the same budget, counted over the whole run
        resume(story_agent(max_steps=2)[0], path)
    agent, llm = story_agent(max_steps=4)
    result = resume(agent, path)
    assert len(llm.requests) == 2 and [u.step for u in result.steps] == [1, 2, 3, 4]
    assert refunds == ["A1"]


def test_a_failed_model_call_leaves_the_session_resumable(tmp_path: Path) -> None:
    def down(request: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionError("API unreachable")

    path = tmp_path / "s.jsonl"
    llm = ScriptedLLM([by_turn(*STORY), by_turn(*STORY), down])
    agent = Agent(llm=llm, tools=[request_refund, get_order], extensions=[Approval(allow=["request_refund"])])
    with pytest.raises(ModelCallFailed) as failure:
        agent.run("Refund A1.", extensions=[Session(path)])
    assert failure.value.result is not None and len(failure.value.result.steps) == 2
    agent, llm = story_agent()
    result = resume(agent, path)
    assert refunds == ["A1"] and sorted(lookups) == ["A1", "A1", "B2"]  # nothing ran twice
    assert result.text == "Done: A1 is refunded." and len(llm.requests) == 2


@pytest.mark.parametrize(
    "tear",
    [
        lambda line: line[: len(line) // 2],  # died mid-write
        lambda line: line[:-1],  # the whole record but not its newline: not committed yet
        lambda line: b"\0" * len(line),  # a power cut can leave zeros where the record was going
    ],
    ids=["half", "no-newline", "zeros"],
)
def test_a_torn_last_line_is_ignored_and_cut_off_on_resume(
    tmp_path: Path, tear: Callable[[bytes], bytes]
) -> None:
    full = tmp_path / "s.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(full)])
    lines = full.read_bytes().splitlines(keepends=True)
    full.write_bytes(b"".join(lines[:9]) + tear(lines[9]))  # record 10 is torn
    replay = read_session(full)
    assert replay.good_bytes == len(b"".join(lines[:9]))
    assert replay.ledger.results == read_session_of(lines[:9], tmp_path).ledger.results
    resume(story_agent()[0], full)
    assert all(isinstance(e, dict) for e in events(full))  # every line parses again


def read_session_of(lines: list[bytes], tmp_path: Path) -> Any:
    path = tmp_path / "prefix.jsonl"
    path.write_bytes(b"".join(lines))
    return read_session(path)


def test_a_damaged_middle_line_is_refused_and_the_file_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(path)])
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"event": "usa\n'
    path.write_bytes(b"".join(lines))
    before = path.read_bytes()
    with pytest.raises(SessionError, match="line 4 is damaged"):
        resume(story_agent()[0], path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [b"", b"hello\n", b'{"event": "calls", "calls": []}\n'])
def test_a_file_that_is_not_a_session_gets_a_clear_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionError):
        read_session(path)


def test_one_session_cannot_be_resumed_twice_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(ModelCallFailed):
        Agent(llm=ScriptedLLM([]), artifacts_dir=None).run("hi", extensions=[Session(path)])
    holder, _ = SessionLog.reopen(path)
    try:
        with pytest.raises(SessionError, match="in use"):
            resume(story_agent()[0], path)
    finally:
        holder.close()


class Compacting(Agent):
    """Replaces the history with a one-message summary before step 3 (as compaction may)."""

    def prepare_context(self, state: RunState) -> list[Msg]:
        if state.step == 3:
            note = "Summary: order A1 looked up; refund R-A1 issued (call r1)."
            return [{"role": "user", "content": [{"type": "text", "text": note}]}]
        return state.messages


def test_resume_after_compaction_uses_the_compacted_history_and_never_repeats(tmp_path: Path) -> None:
    forgetful = (
        *STORY[:2],
        reply(tool_use("request_refund", {"order_id": "A1"}, id="r2")),  # forgot it was done
        reply("Done."),
    )

    def policy(request: dict[str, Any]) -> dict[str, Any]:
        first = request["messages"][0]["content"][0]["text"]
        return (
            forgetful[2 + assistant_turns(request)]
            if first.startswith("Summary")
            else forgetful[assistant_turns(request)]
        )

    path = tmp_path / "s.jsonl"
    llm = ScriptedLLM([policy] * 3 + [lambda r: (_ for _ in ()).throw(ConnectionError("down"))])
    trusted = [Approval(allow=["request_refund"])]
    agent = Compacting(llm=llm, tools=[request_refund, get_order], extensions=trusted)
    with pytest.raises(ModelCallFailed):
        agent.run("Refund A1.", extensions=[Session(path)])
    assert "history" in [e["event"] for e in events(path)]
    resumed_llm = ScriptedLLM([policy])
    result = resume(Compacting(llm=resumed_llm, tools=[request_refund, get_order], extensions=trusted), path)
    assert refunds == ["A1"]
    sent = resumed_llm.requests[0]["messages"]
    assert sent[0]["content"][0]["text"].startswith("Summary")  # resumed from the compacted history
    repeat = next(b for b in sent[-1]["content"] if b["type"] == "tool_result")
    assert repeat["tool_use_id"] == "r2" and repeat["content"].startswith("already done: request_refund")
    assert result.text == "Done."


def test_an_approval_recorded_before_a_crash_is_not_asked_again(tmp_path: Path) -> None:
    asked: list[str] = []

    def approve(call: ToolCall) -> bool:
        asked.append(call.id)
        return True

    path = tmp_path / "s.jsonl"
    agent, _ = story_agent(allow=(), approver=approve)
    agent.run("Refund A1.", extensions=[Session(path)])
    kept = cut_after(path, [e["event"] for e in events(path)].index("approval") + 1)
    assert kept[-1]["approved"] is True
    refunds.clear()
    agent, _ = story_agent(allow=(), approver=approve)
    resume(agent, path)
    assert asked == ["r1"] and refunds == ["A1"]


def test_pruning_records_only_what_changed_so_the_session_stays_linear(tmp_path: Path) -> None:
    @tool
    def fetch(page: int) -> str:
        """Fetch a page.

        Args:
            page: which one.
        """
        return f"page {page}: " + "lorem ipsum " * 120

    steps = 20
    script = [reply(tool_use("fetch", {"page": i})) for i in range(steps)] + [reply("read them all")]
    path = tmp_path / "s.jsonl"
    agent = Agent(
        llm=ScriptedLLM(script), tools=[fetch], keep_recent=1, prune_batch=1, max_steps=30, artifacts_dir=None
    )
    result = agent.run("Read every page.", extensions=[Session(path)])
    recorded = events(path)
    rewrites = [e for e in recorded if e["event"] == "history"]
    assert rewrites  # pruning did rewrite the history
    size = {
        kind: sum(len(json.dumps(e)) for e in recorded if e["event"] == kind) for kind in ("history", "turn")
    }
    assert size["history"] < size["turn"] / 4  # the stubs only, not a copy per rewrite (~10x the turns)
    assert read_session(path).messages == result.messages


def test_resuming_a_missing_session_says_so_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "typo.jsonl"
    with pytest.raises(SessionError, match="no session file"):
        resume(story_agent()[0], path)
    assert not path.exists()


# -- the extension on its own, and beside approval ------------------------------------------------


def test_a_session_without_approval_still_never_reruns_a_recorded_result(tmp_path: Path) -> None:
    """The session enters results in the ledger itself, so a resume without an approval gate
    finishes the interrupted turn without running its finished calls again."""
    path = tmp_path / "s.jsonl"
    tools = [request_refund, get_order]
    agent = Agent(llm=ScriptedLLM([by_turn(*STORY)] * 5), tools=tools, artifacts_dir=None)
    agent.run("Look A1 and B2 up.", extensions=[Session(path)])
    kinds = [e["event"] for e in events(path)]
    lost = events(path)[len(kinds) - 1 - kinds[::-1].index("result")]  # g2 or g3: whichever ran last
    cut_after(path, lost["n"])
    lookups.clear()
    again = Agent(llm=ScriptedLLM([by_turn(*STORY)] * 5), tools=tools, artifacts_dir=None)
    result = resume(again, path)
    assert lookups == [{"g2": "A1", "g3": "B2"}[lost["id"]]]  # only the call without a recorded result ran
    refund = next(
        b for m in result.messages for b in m["content"] if b.get("tool_use_id") == "r1"
    )  # gated, and no approval extension: the core denied it, in the first life
    assert refund["is_error"] is True and "agent.ext.approval.Approval" in refund["content"]
    assert result.text == "Done: A1 is refunded."


def test_approval_before_the_session_in_hook_order_records_the_same(tmp_path: Path) -> None:
    """Which of the two starts first does not matter: they share one ledger."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(first)])
    approval = Approval(allow=["request_refund"])
    agent = Agent(llm=ScriptedLLM([by_turn(*STORY)] * 5), tools=[request_refund, get_order])
    agent.run("Refund A1.", extensions=[approval, Session(second)])
    assert [e["event"] for e in events(first)] == [e["event"] for e in events(second)]
    assert refunds == ["A1", "A1"]  # once per run


def test_one_run_records_to_one_session(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="one session file"):
        story_agent()[0].run("Refund A1.", extensions=[Session(tmp_path / "a"), Session(tmp_path / "b")])
    assert refunds == []


def test_session_errors_are_agent_errors(tmp_path: Path) -> None:
    with pytest.raises(AgentError) as error:
        resume(story_agent()[0], tmp_path / "missing.jsonl")
    assert isinstance(error.value, SessionError) and error.value.result is None


def test_aresume_continues_a_run_on_the_callers_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(StepBudgetExceeded):
        story_agent(max_steps=2)[0].run("Refund A1.", extensions=[Session(path)])
    agent, llm = story_agent()
    result = asyncio.run(aresume(agent, path))
    assert result.text == "Done: A1 is refunded." and refunds == ["A1"] and len(llm.requests) == 2
