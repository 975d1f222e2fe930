"""See what the model saw: the exact request of every step (after pruning and compaction)
is in the request log, `python -m agent.ext.request_log.inspect` prints any step of it or of a session
file, and a multi-turn chat passes `result.messages` back as `history`."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.ext.request_log import RequestLog, read_requests, request_at
from agent.ext.request_log.inspect import session_messages_at
from agent.ext.sessions import Session
from agent.testing import ScriptedLLM, reply, tool_use

REPO = Path(__file__).resolve().parents[2]


@tool
def fetch(page: int) -> str:
    """Fetch one page of the report.

    Args:
        page: The page number.
    """
    return f"page {page}: " + " ".join(f"figure-{page}-{i}" for i in range(400))


def run_long(tmp_path: Path) -> tuple[ScriptedLLM, Path, Path]:
    calls = itertools.count(1)

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if "tools" not in request:  # compaction's summary call
            return reply("Pages 1 to 4 were fetched; each lists figures.")
        n = next(calls)
        return reply(tool_use("fetch", {"page": n})) if n < 10 else reply("All pages read.")

    llm = ScriptedLLM([answer] * 40)
    log, session = tmp_path / "run.requests.jsonl", tmp_path / "session.jsonl"
    agent = Agent(
        tools=[fetch],
        llm=llm,
        artifacts_dir=tmp_path / "artifacts",
        keep_recent=2,
        prune_batch=1,
        max_context_tokens=1_000,
        extensions=[RequestLog(log)],
    )
    assert agent.run("Read the report.", extensions=[Session(session)]).text == "All pages read."
    return llm, log, session


def step_requests(llm: ScriptedLLM) -> list[dict[str, Any]]:
    return [r for r in llm.requests if "tools" in r]


def test_the_log_gives_back_the_exact_request_of_every_step(tmp_path: Path) -> None:
    llm, log, _ = run_long(tmp_path)
    sent = step_requests(llm)
    assert len(llm.requests) > len(sent), "the run compacted at least once"
    logged = list(read_requests(log))
    assert [step for _, step, _ in logged] == list(range(1, len(sent) + 1))
    assert [request for _, _, request in logged] == sent
    assert request_at(log, 7) == sent[6]

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    rewrites = [n for n, line in enumerate(lines[1:], 1) if line["keep"] < len(sent[n - 1]["messages"])]
    assert rewrites, "pruning or compaction rewrote an earlier message"


def test_the_log_grows_with_the_run_not_with_its_square(tmp_path: Path) -> None:
    steps = 30
    script = [reply(tool_use("fetch", {"page": n})) for n in range(1, steps)] + [reply("done")]
    llm, log = ScriptedLLM(script), tmp_path / "requests.jsonl"
    agent = Agent(
        tools=[fetch],
        llm=llm,
        artifacts_dir=None,
        keep_recent=0,
        max_steps=steps,
        extensions=[RequestLog(log)],
    )
    agent.run("Read the report.")
    assert [request for _, _, request in read_requests(log)] == llm.requests
    whole = sum(len(json.dumps(r)) for r in llm.requests)
    last = len(json.dumps(llm.requests[-1]))
    assert whole > 10 * last  # kept whole, the requests would be this big
    # each line holds only what changed: the new turns, and the few messages whose cache
    # breakpoint moved (each result is stored about three times, not once per later step)
    assert log.stat().st_size < 4 * last


def test_a_session_file_gives_the_messages_of_each_step(tmp_path: Path) -> None:
    llm, _, session = run_long(tmp_path)

    def without_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        plain = copy.deepcopy(messages)
        for message in plain:
            for block in message["content"] if isinstance(message["content"], list) else []:
                block.pop("cache_control", None)
        return plain

    for step, request in enumerate(step_requests(llm), 1):
        assert session_messages_at(session, step) == without_breakpoints(request["messages"]), step


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent.ext.request_log.inspect", *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.mark.slow  # runs the command in a subprocess
def test_python_m_inspect_prints_a_step(tmp_path: Path) -> None:
    llm, log, session = run_long(tmp_path)
    shown = inspect(str(log), "--step", "8")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"step 8 of {log}: the exact request"
    assert lines[1].startswith('model="claude-opus-5", max_tokens=')
    assert "tools: fetch, read_artifact" in lines
    assert f"messages: {len(step_requests(llm)[7]['messages'])}" in lines
    assert any("[cache_control]" in line for line in lines)

    as_json = inspect(str(log), "--step", "8", "--json")
    assert json.loads(as_json.stdout) == step_requests(llm)[7]

    from_session = inspect(str(session), "--step", "3")
    assert from_session.returncode == 0, from_session.stderr
    assert "[1] user" in from_session.stdout and "tool_use fetch" in from_session.stdout

    missing = inspect(str(log), "--step", "99")
    assert missing.returncode == 1 and "no step 99" in missing.stderr


def test_a_three_turn_chat_on_the_simulator(simulator: Any) -> None:
    def policy(body: dict[str, Any]) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        blocks = [b for content in users for b in (content if isinstance(content, list) else [content])]
        said = [b if isinstance(b, str) else b["text"] for b in blocks if isinstance(b, str) or "text" in b]
        return f"heard {len(said)}: " + " | ".join(said)

    agent = Agent(llm=simulator(policy).llm(), artifacts_dir=None)
    first = agent.run("My name is Ada.")
    kept = copy.deepcopy(first.messages)
    second = agent.run("I like tea.", history=first.messages)
    third = agent.run("What do you know about me?", history=second.messages)
    assert third.text == "heard 3: My name is Ada. | I like tea. | What do you know about me?"
    assert [m["role"] for m in third.messages] == ["user", "assistant"] * 3
    assert first.messages == kept, "the caller's history is never changed"


@pytest.mark.slow  # runs the command in a subprocess
@pytest.mark.parametrize("bad", ["not json\n", '{"neither": 1}\n'])
def test_a_file_that_is_neither_is_refused(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(bad)
    shown = inspect(str(path), "--step", "1")
    assert shown.returncode == 1 and "not a request log or a session file" in shown.stderr


def test_a_log_that_cannot_be_written_warns_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLLM([reply(tool_use("fetch", {"page": 1})), reply("done")])
    agent = Agent(tools=[fetch], llm=llm, artifacts_dir=None, extensions=[RequestLog(tmp_path)])  # a folder
    assert agent.run("Read page 1.").text == "done"
    warned = [r.getMessage() for r in caplog.records if "request log" in r.getMessage()]
    assert len(warned) == 2 and warned[0].startswith(f"[step 1] request log {tmp_path} not written:")


def test_a_call_that_fails_is_in_the_log_and_a_later_extension_sees_its_body(tmp_path: Path) -> None:
    """The request written is the one sent: after every earlier extension's `request` hook, and
    also when the call fails (written as the run ends, since no reply came)."""
    from agent import Extension, ModelCallFailed

    class Tagged(Extension):
        def request(self, request: dict[str, Any], run: Any) -> dict[str, Any]:
            return {**request, "metadata": {"user_id": "u-1"}}

    def refused(request: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("the server refused the request")  # not transient: no retry

    llm, log = ScriptedLLM([reply(tool_use("fetch", {"page": 1})), refused]), tmp_path / "requests.jsonl"
    agent = Agent(tools=[fetch], llm=llm, artifacts_dir=None, extensions=[Tagged(), RequestLog(log)])
    with pytest.raises(ModelCallFailed):
        agent.run("Read page 1.")
    logged = [(step, request) for _, step, request in read_requests(log)]
    assert [step for step, _ in logged] == [1, 2]
    assert [request for _, request in logged] == llm.requests
    assert all(request["metadata"] == {"user_id": "u-1"} for _, request in logged)


def test_inspect_lists_the_steps_of_a_request_log_and_a_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent.ext.request_log.inspect import main

    llm, log, session = run_long(tmp_path)
    sent = step_requests(llm)
    assert main([str(log)]) == 0  # no --step: the listing
    lines = capsys.readouterr().out.splitlines()
    (run,) = {run for run, _, _ in read_requests(log)}
    assert lines[:2] == [f"{len(sent)} requests in {log}", f"run {run}"]
    for line, (step, request) in zip(lines[2:], enumerate(sent, 1), strict=True):
        size = len(json.dumps(request, ensure_ascii=False).encode())
        assert line.startswith(f"step {step:>3}  model=claude-opus-5  messages={len(request['messages'])}  ")
        assert f"  bytes={size:,}  " in line
    assert lines[2].endswith("ends_with=user: text") and lines[3].endswith(
        "ends_with=user: tool_result fetch"
    )

    assert main([str(log), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["run"], r["step"], r["messages"]) for r in rows] == [
        (run, n, len(r["messages"])) for n, r in enumerate(sent, 1)
    ]

    assert main([str(session)]) == 0  # a session holds the replies: tokens, stop reasons, tools
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == f"{len(llm.requests)} model calls in {session}"
    assert "stop_reason=tool_use  tools=fetch" in listed[1] and listed[-1].endswith("stop_reason=end_turn")
    assert sum("purpose=summary" in line for line in listed) == len(llm.requests) - len(sent)


def test_inspect_help_documents_the_listing(capsys: pytest.CaptureFixture[str]) -> None:
    from agent.ext.request_log.inspect import main

    with pytest.raises(SystemExit):
        main(["--help"])
    assert "without it, list the steps" in " ".join(capsys.readouterr().out.split())


@pytest.mark.slow  # runs the command in a subprocess
def test_inspect_ends_quietly_when_its_reader_leaves(tmp_path: Path) -> None:
    from agent.ext.request_log.log import append_request

    log = tmp_path / "requests.jsonl"  # one request far bigger than a pipe holds
    append_request(
        log, {"model": "m", "messages": [{"role": "user", "content": "x " * 2_000_000}]}, "r", 1, {}
    )
    command = [sys.executable, "-m", "agent.ext.request_log.inspect", str(log), "--step", "1", "--json"]
    with subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == "{\n"
        process.stdout.close()  # as `| head -1` does
        errors = process.stderr.read()
        assert (process.wait(timeout=60), errors) == (141, "")
