"""Every example runs offline: on the simulator, from its cassette, and as `python -m`.

`pytest tests/test_examples.py --record-mode=rewrite` re-records the example
cassettes (`cassettes/examples/<name>.yaml`) on the simulator, like every other
cassette; a plain run replays them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import StepBudgetExceeded
from examples import loop, thinking, tools_budget
from examples._runner import CASSETTE_DIR, Example, choose_mode, main, run

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = [loop.EXAMPLE, tools_budget.EXAMPLE, thinking.EXAMPLE]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def quiet(line: str) -> None:
    pass


def test_loop_runs_offline_on_the_simulator(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run(loop.EXAMPLE, "simulator")
    printed = capsys.readouterr().out

    assert outcome.ok and outcome.result is not None
    assert outcome.result.text == "123456 * 789 = 97,406,784"
    assert "offline" in printed.splitlines()[0]
    steps = [line for line in printed.splitlines() if line.startswith("[step ")]
    assert len(steps) == 2 and all("sent=" in line for line in steps)
    assert len(outcome.sent_bytes) == 2 and outcome.sent_bytes[1] > outcome.sent_bytes[0]
    assert f"sent={outcome.sent_bytes[0]:,} B" in steps[0]


def test_tools_budget_stops_at_the_step_budget_and_reports_it() -> None:
    outcome = run(tools_budget.EXAMPLE, "simulator", out=quiet)

    assert isinstance(outcome.stopped, StepBudgetExceeded) and outcome.ok
    assert outcome.result is not None and len(outcome.result.steps) == tools_budget.MAX_STEPS
    assert any(line.startswith("stopped: max_steps=4") for line in outcome.lines)
    first_results = outcome.result.messages[2]["content"]
    assert [b["content"] for b in first_results] == [
        '{"words":9,"lines":1,"characters":43}',
        "2026-01-15T09:30:00+00:00",
    ]
    assert outcome.result.messages[4]["content"][0]["content"] == "3"


def test_thinking_streams_opus_5_reasoning_offline_and_sends_it_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outcome = run(thinking.EXAMPLE, "simulator")
    printed = capsys.readouterr().out
    assert outcome.ok and outcome.result is not None
    assert outcome.result.text == "A year's revenue is 131414400 won."
    shown = [line for line in printed.splitlines() if "thinking> " in line]
    assert shown[0] == "[step 1] thinking> Revenue is units x price x 12. Multiply in two steps."
    assert len(shown) == 3  # streamed, step by step
    sent_back = [b for m in outcome.result.messages if m["role"] == "assistant" for b in m["content"]]
    assert [b["type"] for b in sent_back].count("thinking") == 3
    assert all(b.get("signature") for b in sent_back if b["type"] == "thinking")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_example_replays_its_cassette(example: Example, request: pytest.FixtureRequest) -> None:
    recording = request.config.getoption("--record-mode") in ("rewrite", "all")
    if recording:
        assert run(example, "simulator", record=True, out=quiet).ok
    replayed = run(example, "replay", out=quiet)
    offline = run(example, "simulator", out=quiet)

    assert replayed.ok and replayed.result is not None and offline.result is not None
    assert "replaying" in replayed.lines[0]
    assert replayed.result.text == offline.result.text
    assert replayed.sent_bytes == offline.sent_bytes


def test_replay_without_a_cassette_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("examples._runner.CASSETTE_DIR", tmp_path)
    outcome = run(loop.EXAMPLE, "replay", out=quiet)
    assert not outcome.ok and "no cassette at" in outcome.lines[-1]


def test_modes() -> None:
    assert choose_mode(False, {}) == "simulator"
    assert choose_mode(False, {"ANTHROPIC_API_KEY": "k"}) == "live"
    assert choose_mode(True, {"ANTHROPIC_API_KEY": "k"}) == "replay"
    with pytest.raises(ValueError):
        run(loop.EXAMPLE, "online")


def test_main_exit_codes(capsys: Any) -> None:
    assert main(loop.EXAMPLE, [], environ={}) == 0
    assert main(tools_budget.EXAMPLE, [], environ={}) == 0  # a reported budget stop is not a failure
    with pytest.raises(SystemExit):
        main(loop.EXAMPLE, ["--replay", "--record"], environ={})


def test_cassettes_live_where_the_lint_looks() -> None:
    assert CASSETTE_DIR == REPO / "cassettes" / "examples"


def test_python_m_examples_loop_works_from_the_repo_root() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    done = subprocess.run(
        [sys.executable, "-m", "examples.loop"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("offline:") and "answer: 123456 * 789 = 97,406,784" in done.stdout
