"""The memory tool is confined by handle, not by name (issue 27): a hard link planted in its
directory, a symlink, and a folder swapped for a symlink while `create` runs never let a
command read or write a file outside it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent.ext.memory_tool import memory_tool
from agent.tool_runs import run_one
from agent.tools import ToolCall, ToolRegistry


def memory(root: Path, **arguments: Any) -> tuple[str, bool]:
    outcome = run_one(ToolRegistry([memory_tool(root)]), ToolCall("toolu_m", "memory", arguments))
    return str(outcome.value), outcome.is_error


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0\n")
    return secret


def test_a_planted_hard_link_is_neither_read_nor_edited(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    os.link(outside, root / "notes.txt")
    for arguments in (
        {"command": "view", "path": "/memories/notes.txt"},
        {"command": "str_replace", "path": "/memories/notes.txt", "old_str": "root", "new_str": "owned"},
        {"command": "insert", "path": "/memories/notes.txt", "insert_line": 0, "insert_text": "owned"},
    ):
        out, failed = memory(root, **arguments)
        assert failed and "refused" in out, arguments
    assert outside.read_text() == "root:x:0:0\n"


def test_a_symlink_inside_is_refused_for_every_command(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    (root / "link.txt").symlink_to(outside)
    (root / "dir").symlink_to(outside.parent, target_is_directory=True)
    for arguments in (
        {"command": "view", "path": "/memories/link.txt"},
        {"command": "create", "path": "/memories/dir/new.txt", "file_text": "owned"},
        {"command": "create", "path": "/memories/link.txt", "file_text": "owned"},
        {"command": "view", "path": "/memories/dir"},
    ):
        out, failed = memory(root, **arguments)
        assert failed, (arguments, out)
    assert sorted(p.name for p in outside.parent.iterdir()) == ["passwd"]
    assert outside.read_text() == "root:x:0:0\n"


@pytest.mark.slow
def test_a_folder_swapped_for_a_symlink_while_files_are_created_puts_nothing_outside(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    (root / "box").mkdir(parents=True)
    away = tmp_path / "away"
    away.mkdir()
    stop = threading.Event()

    def swap() -> None:  # the attacker: box is a folder, then a link out, then a folder again
        while not stop.is_set():
            try:
                (root / "box").rename(root / "box.real")
                (root / "box").symlink_to(away, target_is_directory=True)
                time.sleep(0.0005)  # the link stays a moment: a check-then-open-by-name loses
                (root / "box").unlink()
                (root / "box.real").rename(root / "box")
            except OSError:
                continue

    attacker = threading.Thread(target=swap, daemon=True)
    attacker.start()
    try:
        for i in range(3000):
            memory(root, command="create", path=f"/memories/box/f{i}.txt", file_text="x")
    finally:
        stop.set()
        attacker.join(5)
    assert list(away.iterdir()) == []


def test_delete_removes_a_link_never_its_target(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "memories"
    (root / "old").mkdir(parents=True)
    (root / "old" / "escape").symlink_to(outside.parent, target_is_directory=True)
    out, failed = memory(root, command="delete", path="/memories/old")
    assert not failed, out
    assert outside.read_text() == "root:x:0:0\n" and not (root / "old").exists()
