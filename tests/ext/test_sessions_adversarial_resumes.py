"""Sessions raced, interrupted and resumed in ways they were not meant to be.

Two writers at once, a create that loses a race, a file torn inside its first record,
a full disk, a finished run resumed again, a resume with different tools or another
API key: each must keep "never twice", lose nothing recorded, and say what happened.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from session_story import finished_story, get_order, lines_of, refunds, refused, request_refund, story_agent

from agent import Agent, AgentError, tool
from agent.ext.sessions import Session, SessionError, read_session, resume
from agent.ext.sessions.session import SessionLog
from agent.testing import ScriptedLLM, reply, validate_request


@pytest.fixture(autouse=True)
def _clear() -> None:
    refunds.clear()


@pytest.fixture
def full(tmp_path: Path) -> Path:
    return finished_story(tmp_path)


# -- races, torn starts, full disks (issue 11, item 10) ------------------------------------------


def test_create_checks_the_file_under_the_lock(
    full: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another agent wins the race: it writes its start between our check and our lock."""
    import fcntl

    path, real = tmp_path / "race.jsonl", fcntl.flock
    other = full.read_bytes()

    def flock(fd: int, operation: int) -> None:
        if not path.read_bytes():
            path.write_bytes(other)  # the winner wrote its run, then released its lock
        real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    with pytest.raises(SessionError, match="already holds a session"):
        story_agent()[0].run("Something else.", extensions=[Session(path)])
    assert path.read_bytes() == other


@pytest.mark.parametrize(
    "tear", [lambda line: line[: len(line) // 2], lambda line: line[:-1], lambda line: b"\0" * 40]
)
def test_a_file_torn_inside_its_first_record_says_so_and_can_be_run_again(full: Path, tear: Any) -> None:
    full.write_bytes(tear(lines_of(full)[0]))
    error = refused(full, "torn inside its first record")
    assert "run the prompt again" in str(error)
    result = story_agent()[0].run("Refund A1.", extensions=[Session(full)])
    assert result.text == "Done: A1 is refunded." and read_session(full).stop_reason == "end_turn"


def fail_nth(monkeypatch: pytest.MonkeyPatch, n: int, partial: bool = False) -> None:
    """The n-th durable write of a record (0-based) fails with ENOSPC; `partial` lets half
    the line reach the file first."""
    calls = [0]
    real_fsync, real_write = os.fsync, os.write

    def fsync(fd: int) -> None:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return real_fsync(fd)  # the folder, once, when the file is created
        calls[0] += 1
        if calls[0] == n + 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    def write(fd: int, data: Any) -> int:
        if calls[0] == n and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).endswith(".jsonl"):
            real_write(fd, bytes(data[: len(data) // 2]))
            calls[0] += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "fsync", fsync)
    if partial:
        monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("partial", [False, True], ids=["fsync", "half-written"])
def test_a_full_disk_raises_a_typed_error_with_the_result_and_leaves_the_file_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partial: bool
) -> None:
    path = tmp_path / "s.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(path)])
    kinds = [json.loads(line)["event"] for line in lines_of(path)]
    at = kinds.index("started") + 1  # the refund's result record
    path.unlink()
    refunds.clear()
    with monkeypatch.context() as patch:
        fail_nth(patch, at, partial)
        with pytest.raises(AgentError) as failure:
            story_agent()[0].run("Refund A1.", extensions=[Session(path)])
    assert isinstance(failure.value.__cause__, OSError)
    assert failure.value.result is not None and len(failure.value.result.steps) == 2  # both calls paid
    assert refunds == ["A1"]
    agent, llm = story_agent()
    result = resume(agent, path)  # no torn line was left behind
    assert refunds == ["A1"] and all(validate_request(r) == [] for r in llm.requests)
    assert result.text == "Done: A1 is refunded."


def test_any_error_a_run_raises_carries_the_result(tmp_path: Path) -> None:
    agent = Agent(llm=ScriptedLLM([reply("hi")]), usage_log=tmp_path / "missing" / "usage.jsonl")
    try:
        agent.run("hello", extensions=[Session(tmp_path / "s.jsonl")])
    except Exception as error:  # the usage log's folder is missing: fine, if the result survives
        assert getattr(error, "result", None) is not None and len(error.result.steps) == 1


# -- writers at once --------------------------------------------------------------------------------


def test_two_resumes_at_once_one_runs_one_is_refused(full: Path) -> None:
    lines = lines_of(full)
    kinds = [json.loads(line)["event"] for line in lines]
    full.write_bytes(b"".join(lines[: kinds.index("approval")]))  # the refund is pending
    gate, outcomes = threading.Barrier(2), []

    def resume_it() -> None:
        agent, _ = story_agent()
        gate.wait()
        try:
            outcomes.append(resume(agent, full).text)
        except SessionError as error:
            outcomes.append(str(error))

    threads = [threading.Thread(target=resume_it) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    finished = [o for o in outcomes if o == "Done: A1 is refunded."]
    assert refunds == ["A1"] and len(finished) >= 1
    assert all(o == "Done: A1 is refunded." or "in use" in o for o in outcomes)
    assert read_session(full).stop_reason == "end_turn"


def test_two_runs_creating_one_session_at_once(tmp_path: Path) -> None:
    path, gate, outcomes = tmp_path / "s.jsonl", threading.Barrier(4), []

    def run() -> None:
        agent, _ = story_agent([get_order])
        gate.wait()
        try:
            outcomes.append(agent.run("Look A1 up.", extensions=[Session(path)]).stop_reason)
        except (SessionError, AgentError) as error:
            outcomes.append(type(error).__name__)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("end_turn") == 1, outcomes
    assert [json.loads(line)["event"] for line in lines_of(path)].count("start") == 1


# -- resuming what should not be resumed as if nothing changed ---------------------------------------


def test_resuming_a_finished_run_twice_changes_nothing(full: Path) -> None:
    before = full.read_bytes()
    for _ in range(2):
        agent, llm = story_agent()
        assert resume(agent, full).text == "Done: A1 is refunded." and llm.requests == []
    assert full.read_bytes() == before and refunds == []


def started_refund(full: Path) -> None:
    """Cut the story right after the refund's `started` marker: it may have taken effect."""
    lines = lines_of(full)
    kinds = [json.loads(line)["event"] for line in lines]
    full.write_bytes(b"".join(lines[: kinds.index("started") + 1]))


@pytest.mark.parametrize("change", ["removed", "made-reversible"])
def test_resume_with_different_tools_never_repeats_an_irreversible_call(full: Path, change: str) -> None:
    started_refund(full)

    @tool(name="request_refund")
    def reversible_refund(order_id: str) -> str:
        """Refund, now declared reversible.

        Args:
            order_id: the order.
        """
        refunds.append(order_id)
        return "refund issued"

    tools = [get_order] if change == "removed" else [get_order, reversible_refund]
    agent, llm = story_agent(tools)
    result = resume(agent, full)
    assert refunds == []
    answers = {
        b["tool_use_id"]: b for m in result.messages for b in m["content"] if b["type"] == "tool_result"
    }
    assert answers["r1"]["content"].startswith("outcome unknown: request_refund")
    assert all(validate_request(r) == [] for r in llm.requests)


def test_resume_with_a_new_tool_is_valid(full: Path) -> None:
    started_refund(full)

    @tool
    def extra(x: int) -> int:
        """A tool the first life did not have.

        Args:
            x: a number.
        """
        return x

    agent, llm = story_agent([request_refund, get_order, extra])
    assert resume(agent, full).text == "Done: A1 is refunded."
    assert refunds == [] and all(validate_request(r) == [] for r in llm.requests)


def test_a_masked_key_resumes_only_with_the_same_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "Aa1" * 20)
    path = tmp_path / "s.jsonl"
    prompt = f"Refund A1. My key: {os.environ['ANTHROPIC_API_KEY']}"
    story_agent()[0].run(prompt, extensions=[Session(path)])
    started_refund(path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "Bb2" * 20)
    refunds.clear()
    assert read_session(path).unrestored  # reading (to look at it) works; resuming does not
    before = path.read_bytes()
    with pytest.raises(SessionError, match="resume with the key the run was started with"):
        resume(story_agent()[0], path)
    assert path.read_bytes() == before and refunds == []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "Aa1" * 20)
    agent, llm = story_agent()
    resume(agent, path)
    assert os.environ["ANTHROPIC_API_KEY"] in llm.requests[0]["messages"][0]["content"][0]["text"]


def test_odd_line_breaks_inside_values_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    text = "a\u2028b\u2029c\rd\x85e\x00f\n"
    session = SessionLog.create(path, run_id="r", model="m", messages=[{"role": "user", "content": text}])
    session.close()
    assert read_session(path).messages[0]["content"] == text
