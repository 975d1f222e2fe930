"""Prompt caching, verified by the numbers: the real SDK against the strict simulator.

"We added cache_control" is not a result; cache reads in the billed usage are. Every
test here runs the `Agent` through `AnthropicLLM` over loopback HTTP and judges it by
what the simulator billed (`sim.usages`) and received (`sim.requests`). Sizes come
from the simulator's own renderer (`cache_model.render`), never hard-coded.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import pytest

from agent import Agent, RunResult, RunState, tool
from agent.testing.cache_model import render
from agent.testing.policies import call, latest_results
from agent.testing.simulator import MessagesSimulator
from examples import e06_caching as caching

MODEL = "claude-opus-5"  # minimum cacheable prefix 512 tokens (WIRE-RULES)
SYSTEM = (
    "You are a meticulous ledger clerk. Look entries up one at a time, quote ids exactly, "
    "and never guess an amount you have not read. "
) * 25  # ~700 tokens on its own: the prefix is above the minimum from step 1
# Prices of claude-opus-5 from WIRE-RULES ($ per million): input, 5m write, 1h write, read, output.
OPUS_5 = {"input": 5.0, "write_5m": 6.25, "write_1h": 10.0, "read": 0.50, "output": 25.0}


@tool
def lookup(entry: int) -> str:
    """One ledger entry, as text.

    Args:
        entry: the entry number.
    """
    return f"entry {entry}: " + ", ".join(f"line {entry}.{i} amount {i * 37 % 1000}" for i in range(60))


def ledger_policy(steps: int, parallel: int = 1) -> Callable[[dict[str, Any]], Any]:
    """Look up `parallel` entries per step until step `steps`, then answer.

    Steps are counted by calls, not from the history, which a compaction shortens.
    """
    calls_seen = itertools.count(1)

    def policy(body: dict[str, Any]) -> Any:
        step = next(calls_seen)
        if step >= steps:
            return f"Read {sum(len(r.text) for r in latest_results(body))} characters at the end."
        calls = [call("lookup", entry=step * 100 + j) for j in range(parallel)]
        return [f"Looking up batch {step}.", *calls]

    return policy


class Watched(Agent):
    """An Agent that keeps its last RunState, so a test can read the prefix guard."""

    state: RunState | None = None

    def call_model(self, request: dict[str, Any], state: RunState) -> Any:
        self.state = state
        return super().call_model(request, state)


def run(
    sim: MessagesSimulator, agent_class: type[Watched] = Watched, **options: Any
) -> tuple[Watched, RunResult]:
    settings: dict[str, Any] = {
        "llm": sim.llm(),
        "model": MODEL,
        "system": SYSTEM,
        "tools": [lookup],
        "artifacts_dir": None,
        "keep_recent": 0,  # plain steps: no pruning batch rewrites the prefix
        "max_steps": 30,
        **options,
    }
    agent = agent_class(**settings)
    return agent, agent.run("Total the ledger entries, one batch at a time.")


def prompt(usage: dict[str, Any]) -> int:
    return int(
        usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    )


def markers(value: Any) -> int:
    """cache_control markers anywhere in a body, counted independently of the framework's counter."""
    if isinstance(value, list):
        return sum(markers(item) for item in value)
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(markers(v) for k, v in value.items() if k != "cache_control")
    return 0


def last_breakpoint(body: dict[str, Any]) -> int:
    return max(i for i, p in enumerate(render(body)) if p.ttl is not None)


def assert_prefix_stable(requests: Sequence[dict[str, Any]]) -> None:
    """Each request repeats, byte for byte, the previous one up to its last breakpoint."""
    for number, (before, after) in enumerate(itertools.pairwise(requests), start=2):
        cut = last_breakpoint(before)
        old, new = render(before), render(after)
        assert len(new) > cut and new[cut].digest == old[cut].digest, (
            f"step {number} changed the prefix the previous step cached (position {cut})"
        )


# -- reads from step 2 on, and a stable prefix ------------------------------------------


def test_cache_reads_from_step_two_on(simulator: Callable[..., MessagesSimulator]) -> None:
    sim = simulator(ledger_policy(steps=6))
    _, result = run(sim)
    assert result.stop_reason == "end_turn" and len(sim.usages) == 6
    assert sim.usages[0]["cache_read_input_tokens"] == 0
    assert sim.usages[0]["cache_creation_input_tokens"] > 0
    for step, (before, now) in enumerate(itertools.pairwise(sim.usages), start=2):
        # the whole previous prompt is read back: the history accumulates in the cache
        assert now["cache_read_input_tokens"] == prompt(before), f"step {step}"
        assert now["cache_read_input_tokens"] > 0
    assert [u.cache_read for u in result.steps] == [u["cache_read_input_tokens"] for u in sim.usages]
    assert result.usage.cache_hit_ratio > 0.5


def test_guard_sees_no_prefix_change_between_plain_steps(simulator: Callable[..., MessagesSimulator]) -> None:
    sim = simulator(ledger_policy(steps=7, parallel=2))
    agent, _ = run(sim)
    assert isinstance(agent, Watched) and agent.state is not None
    guard = agent.state.cache_guard
    assert guard.previous is not None  # it did observe the run
    assert guard.changes == [] and guard.warnings == []
    assert_prefix_stable(sim.requests)


def test_a_prefix_change_between_plain_steps_is_caught(simulator: Callable[..., MessagesSimulator]) -> None:
    """The classic silent miss: a clock in the system prompt. The guard names it and warns."""

    class Clocked(Watched):
        def build_request(self, state: RunState) -> dict[str, Any]:
            self.system = f"{SYSTEM}\nCurrent time: 10:{state.step:02d}"
            return super().build_request(state)

    sim = simulator(ledger_policy(steps=4))
    agent, _ = run(sim, Clocked)
    assert agent.state is not None
    guard = agent.state.cache_guard
    assert [step for step, _ in guard.changes] == [2, 3, 4]
    assert all(reasons == ["system changed"] for _, reasons in guard.changes)
    assert [u["cache_read_input_tokens"] for u in sim.usages] == [0, 0, 0, 0]
    assert len(guard.warnings) == 3 and "system changed" in guard.warnings[0]
    with pytest.raises(AssertionError, match="changed the prefix"):
        assert_prefix_stable(sim.requests)


# -- at most four breakpoints -----------------------------------------------------------


def test_more_than_four_breakpoints_is_rejected(simulator: Callable[..., MessagesSimulator]) -> None:
    sim = simulator()
    mark = {"type": "ephemeral"}
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": mark} for i in range(5)]
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 32,
        "messages": [{"role": "user", "content": blocks}],
    }
    with pytest.raises(anthropic.BadRequestError) as caught:
        sim.client().messages.create(**body)
    assert caught.value.status_code == 400
    assert "maximum of 4" in str(caught.value) and "Found 5" in str(caught.value)
    four = {**body, "messages": [{"role": "user", "content": blocks[:4]}]}
    assert sim.client().messages.create(**four).stop_reason == "end_turn"
    assert len(sim.rejected) == 1


@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_agent_requests_carry_at_most_four_breakpoints(
    simulator: Callable[..., MessagesSimulator], ttl: str
) -> None:
    """Wide parallel turns (more blocks per step than the 20-block lookback) and pruning on."""
    sim = simulator(ledger_policy(steps=8, parallel=12))
    run(sim, cache_ttl=ttl, keep_recent=2, prune_batch=2)
    assert sim.rejected == [] and len(sim.usages) == 8
    for number, body in enumerate(sim.requests, start=1):
        assert 1 <= markers(body) <= 4, f"step {number} carries {markers(body)} breakpoints"
    assert all(u["cache_read_input_tokens"] > 0 for u in sim.usages[1:])


# -- effort changes invalidate the messages cache, not tools and system -------------------


def test_effort_change_per_step_reads_only_tools_and_system(
    simulator: Callable[..., MessagesSimulator],
) -> None:
    efforts = ["low", "medium", "high", "max"]  # each differs from every earlier step

    class Restless(Watched):
        def choose_effort(self, state: RunState) -> str | None:
            return efforts[state.step - 1]

    sim = simulator(ledger_policy(steps=len(efforts)))
    agent, _ = run(sim, Restless)
    assert agent.state is not None
    changes = agent.state.cache_guard.changes
    assert [step for step, _ in changes] == [2, 3, 4]
    assert all(reasons == ["effort changed"] for _, reasons in changes)
    assert [r["output_config"]["effort"] for r in sim.requests] == efforts
    for body, usage in zip(sim.requests[1:], sim.usages[1:], strict=True):
        system_level = sum(p.tokens for p in render(body) if p.level in ("tools", "system"))
        assert usage["cache_read_input_tokens"] == system_level > 0


def test_same_effort_every_step_reads_the_history(simulator: Callable[..., MessagesSimulator]) -> None:
    """The control for the test above: with a fixed effort the reads go past the system level."""
    sim = simulator(ledger_policy(steps=4))
    run(sim, effort="high")
    for body, usage in zip(sim.requests[1:], sim.usages[1:], strict=True):
        system_level = sum(p.tokens for p in render(body) if p.level in ("tools", "system"))
        assert usage["cache_read_input_tokens"] > system_level


# -- $ with the cache multipliers --------------------------------------------------------


def billed_dollars(usage: dict[str, Any]) -> float:
    write_1h = usage["cache_creation"]["ephemeral_1h_input_tokens"]
    write_5m = usage["cache_creation_input_tokens"] - write_1h
    return (
        float(
            usage["input_tokens"] * OPUS_5["input"]
            + write_5m * OPUS_5["write_5m"]
            + write_1h * OPUS_5["write_1h"]
            + usage["cache_read_input_tokens"] * OPUS_5["read"]
            + usage["output_tokens"] * OPUS_5["output"]
        )
        / 1e6
    )


def short_summary(body: dict[str, Any]) -> str:
    assert "tools" not in body
    return "Summary: entries looked up so far were totalled; continue with the next batch."


@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_run_cost_is_the_billed_usage_times_the_prices(
    simulator: Callable[..., MessagesSimulator], ttl: str
) -> None:
    """Every call, summaries included, priced with write 1.25x (5m) / 2x (1h) and read 0.1x."""
    sim = simulator(ledger_policy(steps=12, parallel=2), summarizer=short_summary)
    _, result = run(sim, cache_ttl=ttl, max_context_tokens=6_000)
    assert len(sim.requests) > 12, "the run should have compacted at least once"
    assert [u.purpose for u in result.steps].count("summary") == len(sim.requests) - 12
    assert len(result.steps) == len(sim.usages)
    for record, billed in zip(result.steps, sim.usages, strict=True):
        assert (record.uncached, record.cache_read, record.cache_write, record.output) == (
            billed["input_tokens"],
            billed["cache_read_input_tokens"],
            billed["cache_creation_input_tokens"],
            billed["output_tokens"],
        )
        assert record.cost_usd == pytest.approx(billed_dollars(billed), rel=1e-12)
    written = sum(u["cache_creation"][f"ephemeral_{ttl}_input_tokens"] for u in sim.usages)
    assert written == result.usage.cache_write > 0 and result.usage.cache_read > 0
    assert result.usage.cost_usd == pytest.approx(sum(billed_dollars(u) for u in sim.usages), rel=1e-12)


# -- examples/e06_caching.py --------------------------------------------------------------


def step_reads(lines: Sequence[str]) -> list[int]:
    found = [re.search(r"^\[step \d+\] prompt=[\d,]+ \(read=([\d,]+) ", line) for line in lines]
    return [int(m.group(1).replace(",", "")) for m in found if m]


def play(flags: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[RunResult, list[str]]:
    capsys.readouterr()
    result = caching.main(flags)
    return result, capsys.readouterr().out.splitlines()


def test_caching_example_reads_the_cache_from_step_two_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result, lines = play([], capsys)
    assert result.stop_reason == "end_turn"
    assert "offline" in lines[0]
    reads = step_reads(lines)
    assert len(reads) == len(caching.TOPICS) + 1
    assert reads[0] == 0 and all(read > 0 for read in reads[1:])
    steps = result.steps
    assert reads == [u.cache_read for u in steps]
    for before, now in itertools.pairwise(steps):
        assert now.cache_read == before.prompt and now.uncached == 0  # the whole history is read back


def test_caching_example_replays_its_cassette(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    replayed, replay_lines = play(["--replay"], capsys)
    offline, offline_lines = play([], capsys)
    assert "replaying" in replay_lines[0]
    assert step_reads(replay_lines) == step_reads(offline_lines)
    assert replayed.messages == offline.messages  # the same conversation, from the tape
