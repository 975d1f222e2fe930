"""The API's memory tool: declared by its type, run here on a directory the caller owns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent import Agent
from agent.ext.memory_tool import memory_tool
from agent.testing import reply, tool_use
from agent.testing.simulator import MessagesSimulator
from agent.tool_runs import run_one
from agent.tools import ToolCall, ToolRegistry


def run(registry: ToolRegistry, **command: Any) -> tuple[str, bool]:
    outcome = run_one(registry, ToolCall("toolu_1", "memory", command))
    return str(outcome.value), outcome.is_error


def test_it_is_declared_by_type_and_the_validator_takes_it(tmp_path: Path) -> None:
    from agent.testing import validate_request

    declared = memory_tool(tmp_path).declaration()
    assert declared == {"type": "memory_20250818", "name": "memory"}
    request = {
        "model": "claude-opus-5",
        "max_tokens": 9,
        "tools": [declared],
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert validate_request(request) == []


def test_the_six_commands_on_files_under_memories(tmp_path: Path) -> None:
    registry = ToolRegistry([memory_tool(tmp_path)])
    assert run(registry, command="create", path="/memories/notes/todo.md", file_text="a\nb\n")[1] is False
    assert (tmp_path / "notes" / "todo.md").read_text() == "a\nb\n"
    assert (
        run(registry, command="str_replace", path="/memories/notes/todo.md", old_str="b", new_str="c")[1]
        is False
    )
    assert (
        run(registry, command="insert", path="/memories/notes/todo.md", insert_line=0, insert_text="top")[1]
        is False
    )
    text, failed = run(registry, command="view", path="/memories/notes/todo.md", view_range=[2, 3])
    assert not failed and text == "     2\ta\n     3\tc"
    listing, _ = run(registry, command="view", path="/memories")
    assert "/memories/notes/todo.md" in listing
    assert (
        run(registry, command="rename", old_path="/memories/notes/todo.md", new_path="/memories/done.md")[1]
        is False
    )
    assert (tmp_path / "done.md").exists() and not (tmp_path / "notes" / "todo.md").exists()
    assert run(registry, command="delete", path="/memories/done.md")[1] is False
    assert not (tmp_path / "done.md").exists()


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ({"command": "view", "path": "/memories/../secret"}, "leaves /memories"),
        ({"command": "create", "path": "/etc/passwd", "file_text": "x"}, "must be /memories"),
        ({"command": "view", "path": "/memories/missing.md"}, "does not exist"),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "zz", "new_str": "y"},
            "occurs 0 times",
        ),
        ({"command": "delete", "path": "/memories"}, "cannot be deleted"),
        ({"command": "shred", "path": "/memories/a.md"}, "invalid input for memory"),
    ],
)
def test_bad_commands_are_error_results_and_nothing_leaves_the_directory(
    tmp_path: Path, command: dict[str, Any], words: str
) -> None:
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "a.md").write_text("abc")
    (tmp_path / "secret").write_text("keep")
    registry = ToolRegistry([memory_tool(tmp_path / "mem")])
    text, failed = run(registry, **command)
    assert failed and words in text
    assert (tmp_path / "secret").read_text() == "keep" and (tmp_path / "mem" / "a.md").read_text() == "abc"


def test_a_run_on_the_simulator_writes_then_reads_its_memory(
    simulator: Callable[..., MessagesSimulator], tmp_path: Path
) -> None:
    def policy(request: dict[str, Any]) -> Any:
        done = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if done == 0:
            return reply(
                tool_use(
                    "memory", {"command": "create", "path": "/memories/user.md", "file_text": "likes tea"}
                )
            )
        if done == 1:
            return reply(tool_use("memory", {"command": "view", "path": "/memories/user.md"}))
        return "You like tea."

    sim = simulator(policy)
    result = Agent(llm=sim.llm(), tools=[memory_tool(tmp_path)], artifacts_dir=None).run(
        "remember: I like tea"
    )
    assert sim.rejected == [] and result.text == "You like tea."
    assert sim.requests[0]["tools"][0]["type"] == "memory_20250818"
    results = [b for m in sim.requests[2]["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert "likes tea" in str(results[-1]["content"])
    assert (tmp_path / "user.md").read_text() == "likes tea"
