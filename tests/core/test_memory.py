"""Key/value memory: the store, its tools, the key note that never moves the cached prefix."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.cache import strip_cache_control
from agent.memory import MEMORY_NOTE_PREFIX, Memory, latest_memory_note, with_memory_note
from agent.messages import Msg
from agent.testing import ScriptedLLM, reply, tool_use, validate_request
from agent.tool_runs import run_all
from agent.tools import ToolCall, ToolRegistry
from tools import memory_tools


def test_write_read_overwrite_and_keys() -> None:
    memory = Memory()
    assert memory.write("order_id", "A-17") == "saved order_id (4 chars)"
    assert memory.write("order_id", "A-18") == "updated order_id (4 chars)"
    memory.write("amount", "89000")
    assert memory.read("order_id") == "A-18"
    assert memory.keys() == ["amount", "order_id"]
    assert memory.note() == f"{MEMORY_NOTE_PREFIX}amount, order_id] (read a value with memory_read)"


def test_bad_input_gets_a_clear_error_and_changes_nothing() -> None:
    memory = Memory(max_keys=1, max_value_chars=5, initial={"a": "1"})
    with pytest.raises(ValueError, match="invalid memory key"):
        memory.write("two words", "x")
    with pytest.raises(ValueError, match="too long"):
        memory.write("a", "123456")
    with pytest.raises(ValueError, match="full"):
        memory.write("b", "x")
    with pytest.raises(KeyError) as missing:
        memory.read("nope")
    assert str(missing.value) == "no memory under 'nope'; known keys: a"
    assert memory.items() == {"a": "1"}


def test_persists_to_json_and_a_corrupt_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "mem" / "memory.json"
    Memory(path).write("city", "서울")
    assert Memory(path).read("city") == "서울"
    assert json.loads(path.read_text(encoding="utf-8")) == {"city": "서울"}
    assert [p.name for p in path.parent.iterdir()] == ["memory.json"]  # no temp files left
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot load memory"):
        Memory(path)
    assert path.read_text(encoding="utf-8") == "{not json"


def test_parallel_writes_from_tool_threads_all_land(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.json")
    registry = ToolRegistry(memory_tools(memory))
    calls = [ToolCall(f"w{i}", "memory_write", {"key": f"k{i}", "value": str(i)}) for i in range(20)]
    outcomes = run_all(registry, calls)
    assert not any(o.is_error for o in outcomes)
    assert Memory(tmp_path / "m.json").items() == {f"k{i}": str(i) for i in range(20)}


def test_tools_report_a_missing_key_as_an_error_result_naming_the_keys() -> None:
    memory = Memory(initial={"order_id": "A-17"})
    registry = ToolRegistry(memory_tools(memory))
    [ok, missing] = run_all(
        registry,
        [ToolCall("r1", "memory_read", {"key": "order_id"}), ToolCall("r2", "memory_read", {"key": "x"})],
    )
    assert ok.value == "A-17" and not ok.is_error
    assert missing.is_error and "known keys: order_id" in str(missing.value)


def user(*texts: str) -> Msg:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def test_note_is_appended_to_the_newest_user_turn_only_when_the_keys_changed() -> None:
    memory = Memory()
    messages = [user("hi")]
    assert with_memory_note(messages, memory) == messages  # empty memory, never noted
    memory.write("a", "1")
    noted = with_memory_note(messages, memory)
    assert noted[-1]["content"][-1]["text"] == memory.note()
    assert messages == [user("hi")]  # input untouched
    assert with_memory_note(noted, memory) == noted  # unchanged keys: nothing added
    later = [*noted, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}, user("more")]
    assert with_memory_note(later, memory) == later
    memory.write("b", "2")
    again = with_memory_note(later, memory)
    assert again[:-1] == later[:-1] and latest_memory_note(again) == memory.note()
    paused = [*later, {"role": "assistant", "content": [{"type": "text", "text": "thinking"}]}]
    assert with_memory_note(paused, memory) == paused  # never after an assistant turn


@tool(compress=False)  # big results are the point here, not the diet
def lookup(n: int) -> str:
    """Look something large up.

    Args:
        n: which.
    """
    return f"record {n}: " + "q" * 3000


def test_keys_reach_the_model_without_rewriting_the_prefix_and_survive_compaction() -> None:
    memory = Memory()
    calls: list[int] = []

    def answer(request: Mapping[str, Any]) -> Any:
        if "tools" not in request:
            return reply("summary: looked up records")
        calls.append(1)
        n = len(calls)
        if n == 1:
            return reply(tool_use("memory_write", {"key": "order_id", "value": "A-17"}))
        if n == 2:
            return reply(tool_use("memory_write", {"key": "amount", "value": "89000"}))
        if n < 14:
            return reply(tool_use("lookup", {"n": n}))
        if n == 14:
            return reply(tool_use("memory_read", {"key": "order_id"}))
        return reply("done")

    llm = ScriptedLLM([answer] * 40)
    agent = Agent(
        llm=llm,
        tools=[*memory_tools(memory), lookup],
        memory=memory,
        system="You are careful.",
        max_context_tokens=4000,
        keep_recent=0,  # no pruning: any change to a sent message would be the note's doing
        artifacts_dir=None,
        cache=False,
    )
    result = agent.run("Refund A-17")
    steps = [copy.deepcopy(strip_cache_control(r)) for r in llm.requests if "tools" in r]
    assert any("tools" not in r for r in llm.requests), "never compacted"
    assert len({json.dumps(r["system"]) for r in steps}) == 1  # the system prompt never changes
    assert (
        latest_memory_note(steps[1]["messages"])
        == f"{MEMORY_NOTE_PREFIX}order_id] (read a value with memory_read)"
    )
    compactions, before = 0, None
    for request in (strip_cache_control(r) for r in llm.requests):
        if "tools" not in request:  # a summarizer call: the next step may rewrite everything
            compactions, before = compactions + 1, None
            continue
        if before is not None:
            # what was sent stays byte-identical: the note only ever lands in the new turn
            assert request["messages"][: len(before["messages"])] == before["messages"]
        before = request
    assert compactions >= 1
    for request in steps[2:]:
        assert latest_memory_note(request["messages"]) == memory.note()
    assert "A-17" in json.dumps(steps[-1]["messages"][-1])  # memory_read after compaction
    assert result.text == "done"
    assert all(validate_request(r) == [] for r in llm.requests)
