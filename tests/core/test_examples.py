"""The course: every example runs offline, on the simulator, from its cassette, re-recorded
byte for byte, and as `python -m examples.<name>`; each is a plain script that calls the
model (or `agent.run`, `agent.arun`) itself.

`pytest tests/core/test_examples.py --record-mode=rewrite` re-records the example cassettes
(`cassettes/examples/<name>.yaml`) on the simulator, like every other cassette; a plain run
records each into a temporary folder and checks it comes out identical to the committed one.
"""

from __future__ import annotations

import importlib
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent import RunResult
from agent.testing.cassette_lint import read_cassette
from examples import (
    _course,
    e00_bare_loop,
    e01_loop,
    e02_tools,
    e03_context,
    e04_memory,
    e05_seam,
    e06_caching,
    e07_refund,
    e11_batches,
    thinking,
)

REPO = Path(__file__).resolve().parents[2]
NUMBERED = [
    importlib.import_module(f"examples.{p.stem}")
    for p in sorted((REPO / "examples").glob("e[0-9][0-9]_*.py"))
]
"""Every numbered lesson, found on disk: a new one is in every test below without being listed."""
EXAMPLES = [*NUMBERED, thinking]
LONG = {"e03_context", "e04_memory"}  # dozens of calls: their extra runs are marked slow


def name_of(module: ModuleType) -> str:
    return module.__name__.split(".")[-1]


def each(modules: list[ModuleType], slow: bool = True) -> pytest.MarkDecorator:
    marks = [
        pytest.param(m, marks=[pytest.mark.slow] if slow and name_of(m) in LONG else []) for m in modules
    ]
    return pytest.mark.parametrize("module", marks, ids=name_of)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(e03_context, "ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setattr(e07_refund, "ARTIFACTS", str(tmp_path / "artifacts"))


def play(module: ModuleType, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[Any, list[str]]:
    """Run the example's `main` with `flags`: what it returned, and what it printed."""
    capsys.readouterr()
    returned = module.main(list(flags))
    return returned, capsys.readouterr().out.splitlines()


def usage_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if re.match(r"\[step \d+\] prompt=", line)]


# -- the shape of the course ------------------------------------------------------------


def test_the_examples_are_numbered_in_reading_order_and_say_what_they_teach() -> None:
    assert [int(name_of(m)[1:3]) for m in NUMBERED] == list(range(len(NUMBERED)))  # no gap, no twin
    for number, module in enumerate(NUMBERED):
        doc = module.__doc__ or ""
        assert doc.startswith(f"Lesson {number}, "), module.__name__
        assert "What to look for in the output" in doc, module.__name__
        assert f"python -m {module.__name__}" in doc and "--replay" in doc
    for module in EXAMPLES:
        lines = Path(module.__file__ or "").read_text().splitlines()
        assert len(lines) <= 120, f"{module.__name__}: {len(lines)} lines"


def test_each_example_runs_its_agent_itself_and_swaps_nothing_behind_the_readers_back() -> None:
    for path in sorted((REPO / "examples").glob("*.py")):
        source = path.read_text()
        assert not re.search(r"\.(llm|on_event)\s*=(?!=)", source), f"{path.name} swaps a part of an agent"
    for module in NUMBERED:
        source = Path(module.__file__ or "").read_text()
        calls = ("messages.create(",) if module is e00_bare_loop else ("agent.run(", "agent.arun(")
        assert any(c in source for c in calls), module.__name__
        assert "import arithmetic" not in source and "policies import arithmetic" not in source
        if module is not e05_seam:  # e05 reuses e01's model, imported by name
            assert module.model.__module__ == module.__name__, "the scripted model is in the file"


def test_cassettes_live_where_the_lint_looks_and_none_is_stale() -> None:
    assert _course.CASSETTE_DIR == REPO / "cassettes" / "examples"
    assert sorted(p.stem for p in _course.CASSETTE_DIR.glob("*.yaml")) == sorted(map(name_of, EXAMPLES))


# -- every example, every way ------------------------------------------------------------


@each(EXAMPLES, slow=False)
def test_example_runs_offline_on_the_simulator(
    module: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    returned, lines = play(module, capsys)
    first = next(line for line in lines if line.startswith(("offline", "live")))
    assert first.startswith("offline: no ANTHROPIC_API_KEY") and "simulator" in first
    assert any(line.startswith(("answer: ", "stopped: ")) for line in lines) and lines[-1].startswith(
        "total: "
    )
    if module is not e00_bare_loop:
        assert isinstance(returned, RunResult) and len(usage_lines(lines)) == len(returned.usage.steps)


@each(EXAMPLES)
def test_example_replays_its_cassette_and_re_records_it_byte_for_byte(
    module: ModuleType,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    name = name_of(module)
    committed = _course.CASSETTE_DIR / f"{name}.yaml"
    if request.config.getoption("--record-mode") in ("rewrite", "all"):
        play(module, capsys, "--record", "-v", "0")
    replayed, replay_lines = play(module, capsys, "--replay")
    offline, offline_lines = play(module, capsys)
    assert f"offline: replaying cassettes/examples/{name}.yaml (no server, no network)" in replay_lines
    answer = [line for line in offline_lines if line.startswith(("answer: ", "[step ", "total: "))]
    assert [line for line in replay_lines if line.startswith(("answer: ", "[step ", "total: "))] == answer
    if isinstance(replayed, RunResult):
        assert replayed.messages == offline.messages

    monkeypatch.setattr(_course, "CASSETTE_DIR", tmp_path)
    play(module, capsys, "--record", "-v", "0")
    assert (tmp_path / f"{name}.yaml").read_bytes() == committed.read_bytes(), f"re-record {name}"


@pytest.mark.slow  # runs python in a subprocess, once per example
@each(EXAMPLES, slow=False)
def test_python_m_runs_each_example(module: ModuleType, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    env["PYTHONPATH"] = str(REPO)  # as from the checkout, but what it writes (artifacts/) lands in tmp_path
    done = subprocess.run(
        [sys.executable, "-m", module.__name__, "-v", "0"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,  # e07 asks a person at a terminal; none here
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert any(line.startswith("offline: no ANTHROPIC_API_KEY") for line in printed)
    assert any(line.startswith(("answer: ", "stopped: ")) for line in printed), done.stdout


def test_replay_without_a_cassette_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_course, "CASSETTE_DIR", tmp_path)
    with pytest.raises(SystemExit, match=r"no cassette at .*e01_loop\.yaml; record one with --record"):
        e01_loop.main(["--replay"])


def test_the_flags_pick_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _course.Course("e01_loop", []).mode == "simulator"
    assert _course.Course("e01_loop", ["--live"]).mode == "live"
    assert _course.Course("e01_loop", ["--replay", "-v", "0"]).verbosity == 0
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert _course.Course("e01_loop", []).mode == "live"
    assert _course.Course("e01_loop", ["--replay"]).mode == "replay"
    with pytest.raises(SystemExit):
        _course.Course("e01_loop", ["--replay", "--record"])


# -- what each lesson shows --------------------------------------------------------------


def test_e00_is_the_bare_loop_on_the_sdk(capsys: pytest.CaptureFixture[str]) -> None:
    answer, lines = play(e00_bare_loop, capsys, "-v", "2")
    assert answer == "123456 * 789 = 97,406,784"
    steps = [line for line in lines if line.startswith("[step ")]
    assert len(steps) == 2 and "stop=tool_use" in steps[0] and "stop=end_turn" in steps[1]
    assert '  [step 1] -> calculator {"a": 123456, "op": "*", "b": 789}' in lines
    assert "  [step 1] <- calculator: 97406784" in lines
    assert re.fullmatch(r"total: 2 calls, in=[\d,]+ out=[\d,]+ tokens", lines[-1])


def test_e01_is_the_same_agent_with_the_loop_in_agent_run(capsys: pytest.CaptureFixture[str]) -> None:
    result, lines = play(e01_loop, capsys)
    assert result.text == "123456 * 789 = 97,406,784" and "answer: 123456 * 789 = 97,406,784" in lines
    steps = usage_lines(lines)
    assert len(steps) == 2 and "tools=calculator" in steps[0]
    assert result.usage.steps[1].prompt > result.usage.steps[0].prompt  # the history is resent
    assert e01_loop.PROMPT == e00_bare_loop.PROMPT and e01_loop.SYSTEM == e00_bare_loop.SYSTEM


def test_verbosity_2_prints_each_call_with_its_arguments_and_each_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, loud = play(e01_loop, capsys, "-v", "2")
    assert '  [step 1] -> calculator {"a": 123456, "op": "*", "b": 789}' in loud
    assert "  [step 1] <- calculator: 97406784" in loud
    _, normal = play(e01_loop, capsys)
    assert not any(" -> " in line or " <- " in line for line in normal)
    _, long_results = play(e07_refund, capsys, "-v", "2")
    read = [line for line in long_results if line.startswith("  [step 1] <- search_orders: ")]
    assert len(read) == 1 and read[0].endswith(" chars)") and len(read[0]) < 180  # shortened


def test_e02_stops_at_the_step_budget_and_reports_it(capsys: pytest.CaptureFixture[str]) -> None:
    result, lines = play(e02_tools, capsys)
    assert len(result.steps) == e02_tools.MAX_STEPS and result.stop_reason == "max_steps"
    assert "stopped: max_steps=4 reached with the task unfinished" in lines
    assert "tools=word_count,current_time" in usage_lines(lines)[0]
    first_results = result.messages[2]["content"]
    assert [b["content"] for b in first_results] == [
        '{"words":9,"lines":1,"characters":43}',
        "2026-01-15T09:30:00+00:00",
    ]
    assert result.messages[4]["content"][0]["content"] == "3"


@pytest.mark.slow  # e03 again, at two verbosities
def test_e03_shows_each_prune_and_compaction_and_counts_the_refunds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result, lines = play(e03_context, capsys)
    assert result.stop_reason == "end_turn"
    assert result.text == "All 40 pages audited; 4 orders refunded: R-03-007, R-13-007, R-23-007, R-33-007."
    prunes = [line for line in lines if " pruned " in line]
    assert prunes[0].startswith("  [step 6] pruned 2 result(s): fetch_orders(page=1), fetch_orders(page=2);")
    for line in prunes:
        before, after = (int(n.replace(",", "")) for n in re.findall(r"~([\d,]+)", line))
        assert after < before
    events = [
        int(m.group(1)) for line in lines if (m := re.match(r"  \[step (\d+)\] (pruned|compacted)", line))
    ]
    assert events == sorted(events)  # printed as they happen, in step order
    compactions = [i for i, line in enumerate(lines) if " compacted: " in line]
    summaries = [u for u in result.usage.steps if u.purpose == "summary"]
    assert len(compactions) == len(summaries) == 3
    counts = [re.search(r"(\d+) refund\(s\) issued", lines[i + 3]) for i in compactions]
    assert [int(m.group(1)) for m in counts if m] == [1, 3, 4]  # each refund once, carried ones too
    assert sum(line.endswith("(summary)") for line in usage_lines(lines)) == 3
    assert max(u.prompt for u in result.steps) <= e03_context.MAX_CONTEXT_TOKENS

    _, silent = play(e03_context, capsys, "-v", "0")
    assert not usage_lines(silent) and not any("pruned" in line for line in silent)
    assert silent[-2].startswith("answer: ") and silent[-1].startswith("total: 48 calls")


def test_e04_memory_survives_the_compaction_that_loses_the_fact(capsys: pytest.CaptureFixture[str]) -> None:
    result, lines = play(e04_memory, capsys)
    assert e04_memory.BUDGET in result.text
    summary = [line for line in lines if line.startswith("  | ")]
    assert summary and not any("₩" in line or "budget is" in line for line in summary)

    def step_of(tools: str) -> int:
        line = next(line for line in usage_lines(lines) if f"tools={tools}" in line)
        return int(line.split("]")[0].removeprefix("[step "))

    compacted = [int(m.group(1)) for line in lines if (m := re.match(r"  \[step (\d+)\] compacted", line))]
    assert (
        len(compacted) == 3
        and step_of("memory_write") < compacted[0]
        and compacted[-1] < step_of("memory_read")
    )
    history = str(result.messages)
    assert "BUDGET: " not in history  # page 3 itself was folded away
    assert history.count(e04_memory.BUDGET) == 2  # memory_read's result and the answer


def test_e05_runs_the_same_agent_on_a_scripted_fake_and_on_the_sdk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result, lines = play(e05_seam, capsys)
    assert lines[0] == "1/2 ScriptedLLM, in-process, no HTTP: 2 calls, answer: 123456 * 789 = 97,406,784"
    assert "2/2 the same make_agent(llm), now on AnthropicLLM (the official SDK):" in lines
    assert result.text == "123456 * 789 = 97,406,784" and len(result.steps) == 2

    def requests(name: str) -> list[Any]:
        return [i.request for i in read_cassette(_course.CASSETTE_DIR / f"{name}.yaml").interactions]

    assert requests("e05_seam") == requests("e01_loop")  # the agent of e01, byte for byte


def test_e06_labels_per_step_and_running_hit_rates_and_sends_effort(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result, lines = play(e06_caching, capsys)
    steps, table = result.steps, usage_lines(lines)
    assert len(steps) == len(table) == len(e06_caching.TOPICS) + 1
    for n, (usage, line) in enumerate(zip(steps, table, strict=True), start=1):
        so_far = steps[:n]
        running = sum(u.cache_read for u in so_far) / sum(u.prompt for u in so_far)
        assert f"step_hit={usage.cache_read / usage.prompt:.0%} run_hit={running:.0%}" in line
        assert line.endswith(" effort=low") and usage.effort == "low"
    assert steps[0].cache_read == 0 and all(b.cache_read >= a.prompt for a, b in itertools.pairwise(steps))


def test_e07_refund_says_what_the_diet_cut_and_refunds(capsys: pytest.CaptureFixture[str]) -> None:
    result, lines = play(e07_refund, capsys)
    assert result.text == "Refund RF-0007 of 89,000 KRW requested for order 20260712-0007."
    diet = [line for line in lines if " raw ~" in line]
    assert [line.split()[0] for line in diet] == [
        "search_orders",
        "read_artifact",
        "read_artifact",
        "get_order",
        "request_refund",
    ]
    sizes = re.search(r"raw ~\s*([\d,]+) tokens -> sent ~\s*([\d,]+) tokens", diet[0])
    assert sizes is not None
    raw, sent = (int(n.replace(",", "")) for n in sizes.groups())
    assert raw > 10 * sent, f"search_orders: {raw} raw vs {sent} sent tokens"
    assert diet[0].endswith(".json)") and "(cut 7 more items, 28 other fields; full: artifact:" in diet[0]
    assert "(cut 29 other fields: ordered_at, qty, currency, payment, ...; full: artifact:" in diet[3]
    assert diet[4].endswith("(cut 3 other fields: reason, method, days; full result not kept)")
    assert [line.split()[0] for line in diet if line.endswith("(whole)")] == ["read_artifact"] * 2


def test_e11_sends_the_runs_calls_as_two_batches_at_half_price(capsys: pytest.CaptureFixture[str]) -> None:
    result, lines = play(e11_batches, capsys)
    assert result.text == "12 × 34 = 408" and result.usage.steps[0].cost_usd is not None
    assert [line for line in lines if line.startswith("answer: ")] == [
        "answer: 12 × 34 = 408",
        "answer: 56 × 78 = 4,368",
        "answer: 91 × 23 = 2,093",
        "answer: 45 × 67 = 3,015",
        "answer: 89 × 10 = 890",
    ]  # each run its own answer, though the results file lists them in reverse
    assert "2 batches for 10 calls: msgbatch_sim_0001, msgbatch_sim_0002" in lines
    assert lines[-1].startswith("total: 5 runs, 10 calls, $") and lines[-1].endswith("(50% of it)")
    recorded = read_cassette(_course.CASSETTE_DIR / "e11_batches.yaml").interactions
    urls = [i.response["results_url"] for i in recorded if (i.response or {}).get("results_url")]
    assert urls == [f"http://127.0.0.1/v1/messages/batches/msgbatch_sim_000{n}/results" for n in (1, 2)]


def test_thinking_streams_before_the_step_it_belongs_to_and_goes_back_signed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result, lines = play(thinking, capsys, "-v", "2")
    assert result.text == "A year's revenue is 131414400 won."
    shown = [line for line in lines if "thinking> " in line]
    assert shown[0] == "[step 1] thinking> Revenue is units x price x 12. Multiply in two steps."
    assert len(shown) == 3  # streamed, step by step
    for step in (1, 2, 3):
        thought = lines.index(next(line for line in shown if line.startswith(f"[step {step}] ")))
        usage = next(i for i, line in enumerate(lines) if line.startswith(f"[step {step}] prompt="))
        assert thought < usage
    call = lines.index('  [step 1] -> calculator {"a": 1296, "op": "*", "b": 8450}')
    assert lines.index(shown[0]) < call < lines.index(shown[1])
    sent_back = [b for m in result.messages if m["role"] == "assistant" for b in m["content"]]
    assert [b["type"] for b in sent_back].count("thinking") == 3
    assert all(b.get("signature") for b in sent_back if b["type"] == "thinking")


def test_the_usage_log_flag_writes_one_json_line_per_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.jsonl"
    result, _ = play(e06_caching, capsys, "-v", "0", "--usage-log", str(log))
    rows = log.read_text().splitlines()
    assert len(rows) == len(result.usage.steps) and '"cache_read": 0' in rows[0]
