"""Cache breakpoints and the prefix-stability guard (placement and diagnosis, no server)."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.cache import (
    PrefixGuard,
    count_breakpoints,
    mark_breakpoints,
    prefix_changes,
    strip_cache_control,
)
from agent.testing import ScriptedLLM, reply, tool_use, validate_request
from agent.usage import Usage


@tool
def fetch(n: int) -> str:
    """Fetch item n.

    Args:
        n: which item.
    """
    return f"item {n} " * 50


def run_steps(steps: int, parallel: int = 1, **options: Any) -> ScriptedLLM:
    script = [reply(*(tool_use("fetch", {"n": i * 100 + j}) for j in range(parallel))) for i in range(steps)]
    llm = ScriptedLLM([*script, reply("done")])
    options.setdefault("system", "You fetch things. " * 40)
    options.setdefault("keep_recent", 0)
    Agent(llm=llm, tools=[fetch], artifacts_dir=None, **options).run("fetch many")
    return llm


def prefix_before_last_breakpoint(request: dict[str, Any]) -> list[Any]:
    """The messages up to and including the block that carries the last message breakpoint."""
    flat = [(i, j, b) for i, m in enumerate(request["messages"]) for j, b in enumerate(m["content"])]
    last = max(k for k, (_, _, b) in enumerate(flat) if "cache_control" in b)
    return strip_cache_control([b for _, _, b in flat[: last + 1]])


def test_breakpoints_on_system_previous_end_and_newest_message() -> None:
    llm = run_steps(4)
    first, *later = llm.requests
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert count_breakpoints(first) == 2
    for request in later:
        assert count_breakpoints(request) == 3
        assert "cache_control" in request["messages"][-1]["content"][-1]
        assert "cache_control" in request["messages"][-3]["content"][-1]
        assert validate_request(request) == []


def test_never_more_than_four_breakpoints_and_no_marker_leaks_into_history() -> None:
    llm = run_steps(6, parallel=3, cache_ttl="1h")
    for request in llm.requests:
        assert count_breakpoints(request) <= 4
    final = llm.requests[-1]
    marked = [b for m in final["messages"] for b in m["content"] if "cache_control" in b]
    assert all(b["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for b in marked)
    assert len(marked) == 2  # earlier steps' markers were not left behind in the history


def test_prefix_is_byte_stable_between_plain_steps() -> None:
    llm = run_steps(5, parallel=2)
    for before, after in zip(llm.requests, llm.requests[1:], strict=False):
        cached = prefix_before_last_breakpoint(before)
        now = strip_cache_control([b for m in after["messages"] for b in m["content"]])
        assert json.dumps(now[: len(cached)]) == json.dumps(cached)
        assert json.dumps(strip_cache_control(after["tools"])) == json.dumps(
            strip_cache_control(before["tools"])
        )
        assert prefix_changes(before, after) == []


def test_marking_never_mutates_the_request_or_history() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "fetch", "input": {"n": 1}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
    ]
    request = {"model": "m", "max_tokens": 5, "system": "s", "messages": messages}
    snapshot = copy.deepcopy(request)
    marked = mark_breakpoints(request)
    assert request == snapshot
    assert marked["system"] == [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    assert marked["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_caching_can_be_switched_off() -> None:
    llm = run_steps(2, cache=False)
    assert all(count_breakpoints(r) == 0 for r in llm.requests)


def test_guard_names_what_changed() -> None:
    base = {
        "tools": [{"name": "a"}],
        "system": [{"type": "text", "text": "s"}],
        "messages": [{"role": "user", "content": "q"}],
    }
    assert (
        prefix_changes(base, {**base, "messages": [*base["messages"], {"role": "assistant", "content": "x"}]})
        == []
    )
    assert prefix_changes(base, {**base, "tools": [{"name": "b"}]}) == ["tools changed"]
    assert prefix_changes(base, {**base, "system": [{"type": "text", "text": "s2"}]}) == ["system changed"]
    assert prefix_changes(base, {**base, "output_config": {"effort": "low"}}) == ["effort changed"]
    rewritten = {**base, "messages": [{"role": "user", "content": "other"}]}
    assert prefix_changes(base, rewritten) == ["history rewritten from message 0"]


def test_guard_warns_when_reads_stay_zero_on_a_cacheable_prefix(caplog: pytest.LogCaptureFixture) -> None:
    class Changing(Agent):
        def choose_effort(self, state: Any) -> str | None:
            return "low" if state.step % 2 else "high"

    counts = {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}  # a server that caches says so
    script = [reply(tool_use("fetch", {"n": i}), **counts) for i in range(3)] + [reply("done", **counts)]
    agent = Changing(llm=ScriptedLLM(script), tools=[fetch], system="Be useful. " * 300, artifacts_dir=None)
    with caplog.at_level(logging.INFO, logger="agent.cache"):
        agent.run("go")
    assert "cache prefix changed: effort changed" in caplog.text
    assert "cache read 0 although" in caplog.text and "effort changed" in caplog.text


def test_a_model_that_reports_no_cache_counts_raises_no_cache_alarm(caplog: pytest.LogCaptureFixture) -> None:
    """A scripted model (no cache fields in its usage) over a long prompt: nothing to warn of."""
    llm = ScriptedLLM([reply(tool_use("fetch", {"n": i})) for i in range(4)] + [reply("done")])
    agent = Agent(llm=llm, tools=[fetch], system="Be useful. " * 300, artifacts_dir=None)
    with caplog.at_level(logging.INFO, logger="agent.cache"):
        result = agent.run("go " * 600)
    assert result.text == "done"
    assert "cache read 0" not in caplog.text


def test_guard_is_quiet_when_the_server_reads_the_cache() -> None:
    guard = PrefixGuard()
    request = {
        "model": "claude-opus-5",
        "system": [{"type": "text", "text": "x" * 9000, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "q"}],
    }
    for step, read in [(1, 0), (2, 2000), (3, 2100)]:
        guard.observe(request, Usage(step, "claude-opus-5", None, 10, read, 0, 5, None))
    assert guard.warnings == [] and guard.changes == []
    guard.observe(request, Usage(4, "claude-opus-5", None, 10, 0, 0, 5, None))
    assert len(guard.warnings) == 1 and "no change in the prefix" in guard.warnings[0]


def test_a_fourth_breakpoint_holds_the_pruning_frontier() -> None:
    # an opening the model caches, so no batch waits for the history to grow (`worth_pruning`)
    llm = run_steps(8, keep_recent=2, prune_batch=2, system="You fetch things. " * 200)
    pruned_requests = 0
    for request in llm.requests:
        assert count_breakpoints(request) <= 4
        stub_turns = [
            i
            for i, m in enumerate(request["messages"])
            if m["role"] == "user"
            and any(
                b["type"] == "tool_result" and str(b["content"]).startswith("[pruned: ") for b in m["content"]
            )
        ]
        if stub_turns:
            pruned_requests += 1
            assert "cache_control" in request["messages"][stub_turns[-1]]["content"][-1]
            assert count_breakpoints(request) == 4
    assert pruned_requests >= 3


def test_guard_tolerates_one_history_rewrite_but_warns_on_rewrites_in_a_row() -> None:
    guard = PrefixGuard()
    text = [{"type": "text", "text": "x" * 4000, "cache_control": {"type": "ephemeral"}}]

    def request(first: str, n: int) -> dict[str, Any]:
        turns = [{"role": "user", "content": first}] + [
            {"role": "user", "content": f"t{i}"} for i in range(n)
        ]
        return {"model": "claude-opus-5", "system": text, "messages": turns}

    usage = [Usage(step, "claude-opus-5", None, 1_100, 0, 0, 5, None) for step in range(1, 6)]  # none read
    guard.observe(request("q", 1), usage[0])
    guard.observe(request("q", 2), usage[1])  # plain step, but nothing read: warned
    assert len(guard.warnings) == 1
    guard.observe(request("pruned", 3), usage[2])  # one rewrite explains the miss
    assert len(guard.warnings) == 1
    guard.observe(request("pruned again", 4), usage[3])  # a rewrite every step is the bug
    assert len(guard.warnings) == 2 and "history rewritten from message 0" in guard.warnings[-1]
