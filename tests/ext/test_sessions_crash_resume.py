"""Kill a real agent process with SIGKILL mid-run, resume it here, lose nothing, repeat nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import crash_worker
import pytest

from agent.ext.sessions import read_session, resume
from agent.testing import validate_request

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

WORKER = Path(crash_worker.__file__)
ROOT = WORKER.parents[2]  # the project: on the worker's path, and where the benchmark runs


def wait_for(condition: Any, worker: subprocess.Popen[bytes], what: str) -> None:
    """Poll a file-based condition (no guessed sleeps); fail early if the worker died."""
    deadline = time.monotonic() + 60
    while not condition():
        if worker.poll() is not None:
            raise AssertionError(
                f"worker exited ({worker.returncode}) before {what}: {worker.stderr.read()!r}"
            )  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            worker.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def recorded(session: Path) -> list[dict[str, Any]]:
    lines = session.read_bytes().split(b"\n")[:-1] if session.exists() else []
    return [json.loads(line) for line in lines]


def run_and_kill(session: Path, workdir: Path, scenario: str, mode: str = "run") -> list[dict[str, Any]]:
    """Start the worker, kill it with SIGKILL at the scenario's point; the records it left."""
    (workdir / "ready").unlink(missing_ok=True)
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), str(session), str(workdir), scenario, mode],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        wait_for((workdir / "ready").exists, worker, "the blocking tool")
        if scenario == "parallel" and mode == "run":  # the refund runs beside the blocked tool: let it finish
            wait_for(
                lambda: any(e.get("id") == "r1" and e["event"] == "result" for e in recorded(session)),
                worker,
                "r1",
            )
        os.kill(worker.pid, signal.SIGKILL)
        assert worker.wait(timeout=30) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.stderr.close()  # type: ignore[union-attr]
    return recorded(session)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", crash_worker.SCENARIOS)
def test_sigkill_then_resume_loses_no_result_and_refunds_exactly_once(tmp_path: Path, scenario: str) -> None:
    session = tmp_path / "run.jsonl"
    before = run_and_kill(session, tmp_path, scenario)
    assert (tmp_path / "refunds.log").read_text() == "A1\n"  # the refund did happen, once
    results_before = {e["id"]: e["content"] for e in before if e["event"] == "result"}

    agent, llm = crash_worker.agent(tmp_path, scenario)
    result = resume(agent, session)

    assert (tmp_path / "refunds.log").read_text() == "A1\n"  # ...and never again
    assert result.text == crash_worker.FINAL
    assert llm.requests and all(validate_request(r) == [] for r in llm.requests)
    answers = {
        b["tool_use_id"]: b for m in result.messages for b in m["content"] if b["type"] == "tool_result"
    }
    asked = {b["id"] for m in result.messages for b in m["content"] if b["type"] == "tool_use"}
    assert set(answers) == asked == {"g1", "r1", "e1"}
    for call_id, content in results_before.items():  # zero lost: every recorded result is in the history
        assert answers[call_id]["content"] == content
    if scenario == "during":
        assert "r1" not in results_before
        assert answers["r1"]["is_error"] is True
        assert answers["r1"]["content"].startswith("outcome unknown: request_refund")
    else:
        assert results_before["r1"] == "refund R-A1 issued" and "is_error" not in answers["r1"]
    assert answers["e1"]["content"] == "report refunds exported"
    assert read_session(session).stop_reason == "end_turn"


@pytest.mark.slow
def test_a_second_sigkill_during_the_resume_is_survived_too(tmp_path: Path) -> None:
    session = tmp_path / "run.jsonl"
    run_and_kill(session, tmp_path, "during")  # killed inside the refund
    second = run_and_kill(session, tmp_path, "during", mode="resume")  # killed in the export
    unknown = [e for e in second if e["event"] == "result" and e["id"] == "r1"]
    assert len(unknown) == 1 and unknown[0]["content"].startswith("outcome unknown")
    assert [e["event"] for e in second].count("resume") == 1

    agent, llm = crash_worker.agent(tmp_path, "during")
    result = resume(agent, session)
    assert (tmp_path / "refunds.log").read_text() == "A1\n"
    assert all(validate_request(r) == [] for r in llm.requests)
    answers = {
        b["tool_use_id"]: b["content"]
        for m in result.messages
        for b in m["content"]
        if b["type"] == "tool_result"
    }
    assert answers["r1"] == unknown[0]["content"]  # the same verdict, not a fresh guess
    assert answers["e1"] == "report refunds exported" and result.text == crash_worker.FINAL


@pytest.mark.slow
def test_the_kill_trials_benchmark_finds_nothing_in_a_few_trials() -> None:
    """A smoke run of `benchmarks.kill_trials` (random SIGKILLs of a simulator-backed run with
    pruning, compaction, thinking and restarted tool ids), so the benchmark cannot rot."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.kill_trials", "--trials", "4", "--parallel", "4", "--seed", "7"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary == {"trials": 4, "irreversible_repeats": 0, "lost_results": 0, "invalid_requests": 0}
