"""Every numbered example runs offline: on the simulator, from its cassette, re-recorded, and as `python -m`.

`pytest tests/core/test_examples.py --record-mode=rewrite` re-records the example
cassettes (`cassettes/examples/<name>.yaml`) on the simulator, like every other
cassette; a plain run replays them.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import StepBudgetExceeded
from examples import (
    e01_loop,
    e02_tools,
    e03_context,
    e04_memory,
    e05_seam,
    e06_caching,
    e07_refund,
    thinking,
)
from examples._runner import CASSETTE_DIR, Example, choose_mode, main, run

REPO = Path(__file__).resolve().parents[2]
NUMBERED = [e01_loop, e02_tools, e03_context, e04_memory, e05_seam, e06_caching, e07_refund]
EXAMPLES = [m.EXAMPLE for m in NUMBERED] + [thinking.EXAMPLE]
LONG = {"e03_context", "e04_memory"}  # dozens of calls: their extra record round trip is marked slow


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(e03_context, "ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setattr(e07_refund, "ARTIFACTS", str(tmp_path / "artifacts"))


def quiet(line: str) -> None:
    pass


def steps_of(lines: list[str]) -> list[str]:
    return [line for line in lines if re.match(r"\[step \d+\] ", line)]


def test_the_examples_are_numbered_in_reading_order_and_say_what_they_teach() -> None:
    names = sorted(p.stem for p in (REPO / "examples").glob("e[0-9][0-9]_*.py"))
    assert names == [m.__name__.split(".")[-1] for m in NUMBERED]
    for number, module in enumerate(NUMBERED, start=1):
        doc = module.__doc__ or ""
        assert doc.startswith(f"Idea {number}, "), module.__name__
        assert "What to look for in the output" in doc, module.__name__
        assert f"python -m {module.__name__}" in doc and "--replay" in doc
        assert len(Path(module.__file__ or "").read_text().splitlines()) <= 160


def test_e01_loop_runs_offline_on_the_simulator(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run(e01_loop.EXAMPLE, "simulator")
    printed = capsys.readouterr().out

    assert outcome.ok and outcome.result is not None
    assert outcome.result.text == "123456 * 789 = 97,406,784"
    assert "offline" in printed.splitlines()[0]
    steps = steps_of(printed.splitlines())
    assert len(steps) == 2 and all("sent=" in line for line in steps)
    assert len(outcome.sent_bytes) == 2 and outcome.sent_bytes[1] > outcome.sent_bytes[0]
    assert f"sent={outcome.sent_bytes[0]:,} B" in steps[0]


def test_e02_stops_at_the_step_budget_and_reports_it() -> None:
    outcome = run(e02_tools.EXAMPLE, "simulator", out=quiet)

    assert isinstance(outcome.stopped, StepBudgetExceeded) and outcome.ok
    assert outcome.result is not None and len(outcome.result.steps) == e02_tools.MAX_STEPS
    assert any(line.startswith("stopped: max_steps=4") for line in outcome.lines)
    first_results = outcome.result.messages[2]["content"]
    assert [b["content"] for b in first_results] == [
        '{"words":9,"lines":1,"characters":43}',
        "2026-01-15T09:30:00+00:00",
    ]
    assert outcome.result.messages[4]["content"][0]["content"] == "3"


def test_e03_shows_each_prune_and_compaction_in_step_order() -> None:
    outcome = run(e03_context.EXAMPLE, "simulator", out=quiet)
    assert outcome.ok and outcome.result is not None and outcome.result.stop_reason == "end_turn"
    lines = outcome.lines
    prunes = [line for line in lines if line.startswith("  pruned ")]
    assert prunes and prunes[0].startswith(
        "  pruned 2 result(s): fetch_orders(page=1), fetch_orders(page=2);"
    )
    for line in prunes:
        before, after = (int(n.replace(",", "")) for n in re.findall(r"~([\d,]+)", line))
        assert after < before
    compactions = [i for i, line in enumerate(lines) if line.startswith("  compacted: ")]
    summaries = [u for u in outcome.result.usage.steps if u.purpose == "summary"]
    assert len(compactions) == len(summaries) >= 2
    for i in compactions:  # the summary call is labelled, then the compaction, then its summary text
        assert re.match(r"\[step \d+ summary call\] ", lines[i - 1])
        assert lines[i + 1] == "  | 1. Request: audit u_88213's order history and refund broken orders."
    step_numbers = [int(m.group(1)) for line in lines if (m := re.match(r"\[step (\d+)[\] ]", line))]
    assert step_numbers == sorted(step_numbers)  # summary calls sit under the step that needed them
    for i, line in enumerate(lines):  # a warning prints under its own step's line
        if line.startswith("  warning: [step "):
            step = re.match(r"  warning: \[step (\d+)\]", line)
            assert step is not None
            assert any(prev.startswith(f"[step {step.group(1)}] ") for prev in lines[i - 3 : i])
    assert max(u.prompt for u in outcome.result.steps) <= e03_context.MAX_CONTEXT_TOKENS


def test_e04_memory_survives_the_compaction_that_loses_the_fact() -> None:
    outcome = run(e04_memory.EXAMPLE, "simulator", out=quiet)
    assert outcome.ok and outcome.result is not None
    assert e04_memory.BUDGET in outcome.result.text
    summary = [line for line in outcome.lines if line.startswith("  | ")]
    assert summary and not any("₩" in line or "budget is" in line for line in summary)
    write = next(i for i, line in enumerate(outcome.lines) if "tools=memory_write" in line)
    compacted = [i for i, line in enumerate(outcome.lines) if line.startswith("  compacted:")]
    read = next(i for i, line in enumerate(outcome.lines) if "tools=memory_read" in line)
    assert compacted and write < compacted[0] and compacted[-1] < read
    history = str(outcome.result.messages)
    assert "BUDGET: " not in history  # page 3 itself was folded away
    assert history.count(e04_memory.BUDGET) == 2  # memory_read's result and the answer


def test_e05_runs_the_same_agent_on_a_scripted_fake_and_on_the_sdk() -> None:
    scripted, llm = e05_seam.run_scripted()
    outcome = run(e05_seam.EXAMPLE, "simulator", out=quiet)
    assert outcome.ok and outcome.result is not None
    assert scripted.text == outcome.result.text == "123456 * 789 = 97,406,784"
    assert len(llm.requests) == len(outcome.result.steps) == 2
    assert outcome.lines[0].startswith("1/2 scripted: ScriptedLLM") and scripted.text in outcome.lines[0]
    assert e05_seam.make_agent is e01_loop.make_agent


def test_e06_labels_per_step_and_running_hit_rates_and_sends_effort() -> None:
    outcome = run(e06_caching.EXAMPLE, "simulator", out=quiet)
    assert outcome.ok and outcome.result is not None
    steps, lines = outcome.result.steps, steps_of(outcome.lines)
    assert len(steps) == len(lines)
    for n, (usage, line) in enumerate(zip(steps, lines, strict=True), start=1):
        so_far = steps[:n]
        running = sum(u.cache_read for u in so_far) / sum(u.prompt for u in so_far)
        assert f"step_hit={usage.cache_read / usage.prompt:.0%} run_hit={running:.0%}" in line
        assert "effort=low" in line and usage.effort == "low"
    assert any(a.cache_read != 0 for a, _ in itertools.pairwise(steps)) or steps[1].cache_read > 0


def test_e07_refund_reads_back_and_refunds() -> None:
    outcome = run(e07_refund.EXAMPLE, "simulator", out=quiet)
    assert outcome.ok and outcome.result is not None
    assert outcome.result.text == "Refund RF-0007 of 89,000 KRW requested for order 20260712-0007."


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


@pytest.mark.slow  # runs e03, a long run, once more
def test_verbosity_is_one_switch() -> None:
    silent = run(e03_context.EXAMPLE, "simulator", out=quiet, verbosity=0)
    loud = run(e01_loop.EXAMPLE, "simulator", out=quiet, verbosity=2)
    assert not steps_of(silent.lines) and not any("pruned" in line for line in silent.lines)
    assert any(line.startswith("answer: ") for line in silent.lines)
    assert any(line.startswith("  warning: ") for line in silent.lines)  # warnings print at 0 too
    assert "  -> calculator" in loud.lines and "  <- calculator" in loud.lines


@pytest.mark.parametrize(
    "example",
    [pytest.param(e, marks=[pytest.mark.slow] if e.name in LONG else []) for e in EXAMPLES],
    ids=lambda e: e.name,
)
def test_example_replays_its_cassette(example: Example, request: pytest.FixtureRequest) -> None:
    recording = request.config.getoption("--record-mode") in ("rewrite", "all")
    if recording:
        assert run(example, "simulator", record=True, out=quiet).ok
    replayed = run(example, "replay", out=quiet)
    offline = run(example, "simulator", out=quiet)

    assert replayed.ok and replayed.result is not None and offline.result is not None
    assert any("replaying" in line for line in replayed.lines[:3])
    assert replayed.result.text == offline.result.text
    assert replayed.sent_bytes == offline.sent_bytes


@pytest.mark.parametrize(
    "example",
    [pytest.param(e, marks=[pytest.mark.slow] if e.name in LONG else []) for e in EXAMPLES],
    ids=lambda e: e.name,
)
def test_every_mode_exits_0(
    example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr("examples._runner.CASSETTE_DIR", tmp_path)
    assert main(example, ["-v", "0"], environ={}) == 0
    assert main(example, ["--record", "-v", "0"], environ={}) == 0
    assert (tmp_path / f"{example.name}.yaml").exists()
    assert main(example, ["--replay", "-v", "0"], environ={}) == 0


def test_replay_without_a_cassette_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("examples._runner.CASSETTE_DIR", tmp_path)
    outcome = run(e01_loop.EXAMPLE, "replay", out=quiet)
    assert not outcome.ok and "no cassette at" in outcome.lines[-1]
    assert main(e01_loop.EXAMPLE, ["--replay"], environ={}) == 1


def test_modes() -> None:
    assert choose_mode(False, {}) == "simulator"
    assert choose_mode(False, {"ANTHROPIC_API_KEY": "k"}) == "live"
    assert choose_mode(True, {"ANTHROPIC_API_KEY": "k"}) == "replay"
    with pytest.raises(ValueError):
        run(e01_loop.EXAMPLE, "online")
    with pytest.raises(SystemExit):
        main(e01_loop.EXAMPLE, ["--replay", "--record"], environ={})


def test_cassettes_live_where_the_lint_looks_and_none_is_stale() -> None:
    assert CASSETTE_DIR == REPO / "cassettes" / "examples"
    assert sorted(p.stem for p in CASSETTE_DIR.glob("*.yaml")) == sorted(e.name for e in EXAMPLES)


@pytest.mark.slow  # runs python in a subprocess
def test_python_m_runs_the_first_example_from_the_repo_root() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    done = subprocess.run(
        [sys.executable, "-m", "examples.e01_loop"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("offline:") and "answer: 123456 * 789 = 97,406,784" in done.stdout
