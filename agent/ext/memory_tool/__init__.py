"""The API's memory tool (`memory_20250818`): declared by its type, run here, on a directory.

Unlike web search or code execution, the memory tool is not run by the API: the model
sends ordinary `tool_use` calls named `memory` (view, create, str_replace, insert,
delete, rename, on paths under `/memories`) and the client carries them out. So it is a
`Tool` like any `@tool` function, except that it is declared by its versioned type (the
model was trained on that interface; no schema is sent) and its files live in a
directory the caller chooses, where they outlast the run and any compaction.

Every path is confined to that directory: `..`, absolute paths elsewhere and symlinks
pointing out are refused, each as an error result the model can read.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from agent.tools import Tool, tool

__all__ = ["MEMORY_TOOL", "DefinedTool", "memory_tool"]

MEMORY_TOOL = "memory_20250818"
ROOT = "/memories"
Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


@dataclass(frozen=True)
class DefinedTool(Tool):
    """A tool the API defines (declared by `type`, no schema sent) and the client runs."""

    definition: Mapping[str, Any] = field(default_factory=dict)

    def declaration(self) -> dict[str, Any]:
        return dict(self.definition)


class MemoryFiles:
    """`/memories/...` paths mapped into one directory, and the six commands on them."""

    def __init__(self, directory: str | Path) -> None:
        self.root = Path(directory).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def local(self, path: str | None) -> Path:
        if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
            raise ValueError(f"path must be {ROOT} or under it, not {path!r}")
        target = (self.root / path.removeprefix(ROOT).lstrip("/")).resolve()
        if target != self.root and self.root not in target.parents:
            raise ValueError(f"path {path!r} leaves {ROOT}")
        return target

    def view(self, path: str | None, view_range: list[int] | None) -> str:
        target = self.local(path)
        if target.is_dir():
            entries = sorted(p for p in target.rglob("*") if p.is_file())
            lines = [f"{p.stat().st_size}\t{ROOT}/{p.relative_to(self.root).as_posix()}" for p in entries]
            return f"Directory {path}:\n" + ("\n".join(lines) if lines else "(empty)")
        text = self._read(target, path)
        numbered = text.splitlines()
        bounds = [*(view_range or [1]), len(numbered)]
        start, end = bounds[0], bounds[1] if bounds[1] != -1 else len(numbered)
        if not 1 <= start <= max(end, 1) or end > len(numbered):
            raise ValueError(f"view_range {view_range} is outside the file's {len(numbered)} lines")
        return "\n".join(f"{n:6d}\t{numbered[n - 1]}" for n in range(start, end + 1))

    def create(self, path: str | None, file_text: str | None) -> str:
        target = self.local(path)
        if target == self.root or target.is_dir():
            raise ValueError(f"{path} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_required(file_text, "file_text"), encoding="utf-8")
        return f"File created successfully at {path}"

    def str_replace(self, path: str | None, old_str: str | None, new_str: str | None) -> str:
        target = self.local(path)
        text, old = self._read(target, path), _required(old_str, "old_str")
        count = text.count(old) if old else 0
        if count != 1:
            raise ValueError(f"old_str must occur exactly once in {path}; it occurs {count} times")
        target.write_text(text.replace(old, new_str or "", 1), encoding="utf-8")
        return f"The memory file {path} has been edited"

    def insert(self, path: str | None, insert_line: int | None, insert_text: str | None) -> str:
        target = self.local(path)
        lines = self._read(target, path).splitlines(keepends=True)
        if insert_line is None or not 0 <= insert_line <= len(lines):
            raise ValueError(f"insert_line must be between 0 and {len(lines)}, not {insert_line}")
        added = _required(insert_text, "insert_text")
        if lines and not lines[-1].endswith("\n") and insert_line == len(lines):
            lines[-1] += "\n"
        lines.insert(insert_line, added if added.endswith("\n") else added + "\n")
        target.write_text("".join(lines), encoding="utf-8")
        return f"Text inserted at line {insert_line} of {path}"

    def delete(self, path: str | None) -> str:
        target = self.local(path)
        if target == self.root:
            raise ValueError(f"{ROOT} itself cannot be deleted")
        if not target.exists():
            raise FileNotFoundError(f"{path} does not exist")
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        return f"Deleted {path}"

    def rename(self, old_path: str | None, new_path: str | None) -> str:
        source, target = self.local(old_path), self.local(new_path)
        if not source.exists() or source == self.root:
            raise FileNotFoundError(f"{old_path} does not exist")
        if target.exists():
            raise FileExistsError(f"{new_path} already exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
        return f"Renamed {old_path} to {new_path}"

    def _read(self, target: Path, path: str | None) -> str:
        if not target.is_file():
            raise FileNotFoundError(f"{path} does not exist")
        return target.read_text(encoding="utf-8")


def _required(value: str | None, name: str) -> str:
    if value is None:
        raise ValueError(f"{name} is required for this command")
    return value


def memory_tool(directory: str | Path) -> DefinedTool:
    """The API's memory tool, its `/memories` kept in `directory` (created if missing)."""
    files = MemoryFiles(directory)

    def memory(
        command: Command,
        path: str | None = None,
        view_range: list[int] | None = None,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        insert_text: str | None = None,
        old_path: str | None = None,
        new_path: str | None = None,
    ) -> str:
        """Read and write files under /memories that persist across conversations."""
        if command == "view":
            return files.view(path, view_range)
        if command == "create":
            return files.create(path, file_text)
        if command == "str_replace":
            return files.str_replace(path, old_str, new_str)
        if command == "insert":
            return files.insert(path, insert_line, insert_text)
        if command == "delete":
            return files.delete(path)
        return files.rename(old_path, new_path)

    base = tool(name="memory", compress=False)(memory)  # file text is read back exact
    values = {f.name: getattr(base, f.name) for f in fields(Tool)}
    return DefinedTool(**values, definition={"type": MEMORY_TOOL, "name": "memory"})
