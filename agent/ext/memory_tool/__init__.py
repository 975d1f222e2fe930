"""The API's memory tool (`memory_20250818`): declared by its type, run here, on a directory.

Unlike web search or code execution, the memory tool is not run by the API: the model
sends ordinary `tool_use` calls named `memory` (view, create, str_replace, insert,
delete, rename, on paths under `/memories`) and the client carries them out. So it is a
`Tool` like any `@tool` function, except that it is declared by its versioned type (the
model was trained on that interface; no schema is sent) and its files live in a
directory the caller chooses, where they outlast the run and any compaction.

Every path is confined to that directory, by handle rather than by name (`MemoryFiles`):
`..`, paths elsewhere, symlinks and hard-linked files are refused, each as an error result
the model can read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
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
    """`/memories/...` paths mapped into one directory, and the six commands on them.

    Confined by handle, not by name: every path is walked one component at a time from a
    descriptor of the directory, each opened with `O_NOFOLLOW` (a symlink anywhere is
    refused, even one swapped in while a command runs), a file must be a regular file with
    one link (a hard link planted inside would let an edit reach a file outside), and a
    file is written as a new file renamed over the old one in its own folder, so a write
    never follows anything to the outside."""

    def __init__(self, directory: str | Path) -> None:
        self.root = Path(directory).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def parts(self, path: str | None) -> list[str]:
        if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
            raise ValueError(f"path must be {ROOT} or under it, not {path!r}")
        parts = [p for p in path.removeprefix(ROOT).split("/") if p]
        if any(p in (".", "..") or "\0" in p for p in parts):
            raise ValueError(f"path {path!r} leaves {ROOT}")
        return parts

    def _root_fd(self) -> int:
        return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def _folder(self, parts: list[str], path: str | None, *, make: bool = False) -> int:
        """A descriptor of the folder `parts` names (made if `make`); symlinks refused."""
        fd = self._root_fd()
        try:
            for part in parts:
                if make:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=fd)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    raise FileNotFoundError(f"{path} does not exist") from None
                except (NotADirectoryError, OSError) as error:
                    if isinstance(error, OSError) and error.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    raise ValueError(f"path {path!r} goes through a link or a file: refused") from None
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _kind(self, folder: int, name: str) -> str | None:
        """ "dir", "file" (regular, one link), None if absent; anything else is refused."""
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(info.st_mode):
            return "dir"
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
            return "file"
        raise ValueError(f"{name} is a link or a special file: refused")

    def _read(self, parts: list[str], path: str | None) -> str:
        if not parts:
            raise ValueError(f"{path} is a directory")
        folder = self._folder(parts[:-1], path)
        try:
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            except FileNotFoundError:
                raise FileNotFoundError(f"{path} does not exist") from None
            except OSError as error:
                if error.errno != errno.ELOOP:
                    raise
                raise ValueError(f"{path} is a link: refused") from None
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise (
                        FileNotFoundError(f"{path} does not exist")
                        if stat.S_ISDIR(info.st_mode)
                        else ValueError(f"{path} is not a regular file: refused")
                    )
                if info.st_nlink != 1:
                    raise ValueError(f"{path} has other links (a hard link): refused")
                return handle.read().decode("utf-8")
        finally:
            os.close(folder)

    def _write(self, parts: list[str], path: str | None, text: str, *, make: bool = False) -> None:
        """`text` as the file `parts` names: written to a new file in its folder, then renamed
        over the old name (a rename replaces the name, never writes through a link)."""
        if not parts:
            raise ValueError(f"{path} is a directory")
        folder = self._folder(parts[:-1], path, make=make)
        try:
            if self._kind(folder, parts[-1]) == "dir":
                raise ValueError(f"{path} is a directory")
            temporary = f".{parts[-1]}.{uuid.uuid4().hex}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temporary, flags, 0o600, dir_fd=folder)
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
            os.rename(temporary, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        finally:
            os.close(folder)

    def view(self, path: str | None, view_range: list[int] | None) -> str:
        parts = self.parts(path)
        folder = self._folder(parts, path) if not parts or self._is_dir(parts, path) else None
        if folder is not None:
            try:
                lines = []
                for top, _, files, top_fd in os.fwalk(".", dir_fd=folder, follow_symlinks=False):
                    for name in files:
                        info = os.stat(name, dir_fd=top_fd, follow_symlinks=False)
                        if stat.S_ISREG(info.st_mode):
                            shown = "/".join(
                                p for p in (path.rstrip("/") if path else ROOT, top[2:], name) if p
                            )
                            lines.append((shown, info.st_size))
            finally:
                os.close(folder)
            listed = [f"{size}\t{shown}" for shown, size in sorted(lines)]
            return f"Directory {path}:\n" + ("\n".join(listed) if listed else "(empty)")
        numbered = self._read(parts, path).splitlines()
        bounds = [*(view_range or [1]), len(numbered)]
        start, end = bounds[0], bounds[1] if bounds[1] != -1 else len(numbered)
        if not 1 <= start <= max(end, 1) or end > len(numbered):
            raise ValueError(f"view_range {view_range} is outside the file's {len(numbered)} lines")
        return "\n".join(f"{n:6d}\t{numbered[n - 1]}" for n in range(start, end + 1))

    def _is_dir(self, parts: list[str], path: str | None) -> bool:
        folder = self._folder(parts[:-1], path)
        try:
            return self._kind(folder, parts[-1]) == "dir"
        finally:
            os.close(folder)

    def create(self, path: str | None, file_text: str | None) -> str:
        self._write(self.parts(path), path, _required(file_text, "file_text"), make=True)
        return f"File created successfully at {path}"

    def str_replace(self, path: str | None, old_str: str | None, new_str: str | None) -> str:
        parts = self.parts(path)
        text, old = self._read(parts, path), _required(old_str, "old_str")
        count = text.count(old) if old else 0
        if count != 1:
            raise ValueError(f"old_str must occur exactly once in {path}; it occurs {count} times")
        self._write(parts, path, text.replace(old, new_str or "", 1))
        return f"The memory file {path} has been edited"

    def insert(self, path: str | None, insert_line: int | None, insert_text: str | None) -> str:
        parts = self.parts(path)
        lines = self._read(parts, path).splitlines(keepends=True)
        if insert_line is None or not 0 <= insert_line <= len(lines):
            raise ValueError(f"insert_line must be between 0 and {len(lines)}, not {insert_line}")
        added = _required(insert_text, "insert_text")
        if lines and not lines[-1].endswith("\n") and insert_line == len(lines):
            lines[-1] += "\n"
        lines.insert(insert_line, added if added.endswith("\n") else added + "\n")
        self._write(parts, path, "".join(lines))
        return f"Text inserted at line {insert_line} of {path}"

    def delete(self, path: str | None) -> str:
        parts = self.parts(path)
        if not parts:
            raise ValueError(f"{ROOT} itself cannot be deleted")
        folder = self._folder(parts[:-1], path)
        try:
            kind = self._kind(folder, parts[-1])
            if kind is None:
                raise FileNotFoundError(f"{path} does not exist")
            if kind == "dir":
                _remove_tree(folder, parts[-1])
            else:
                os.unlink(parts[-1], dir_fd=folder)
        finally:
            os.close(folder)
        return f"Deleted {path}"

    def rename(self, old_path: str | None, new_path: str | None) -> str:
        source, target = self.parts(old_path), self.parts(new_path)
        if not source:
            raise FileNotFoundError(f"{old_path} does not exist")
        if not target:
            raise FileExistsError(f"{new_path} already exists")
        source_folder = self._folder(source[:-1], old_path)
        try:
            if self._kind(source_folder, source[-1]) is None:
                raise FileNotFoundError(f"{old_path} does not exist")
            target_folder = self._folder(target[:-1], new_path, make=True)
            try:
                if self._kind(target_folder, target[-1]) is not None:
                    raise FileExistsError(f"{new_path} already exists")
                os.rename(source[-1], target[-1], src_dir_fd=source_folder, dst_dir_fd=target_folder)
            finally:
                os.close(target_folder)
        finally:
            os.close(source_folder)
        return f"Renamed {old_path} to {new_path}"


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _remove_tree(folder: int, name: str) -> None:
    """Delete folder `name` of `folder` and all in it, by descriptor: a link inside is removed
    as a link, never followed (`shutil.rmtree` takes `dir_fd` only from Python 3.11)."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=folder)
    try:
        for _, dirs, files, top in os.fwalk(".", dir_fd=fd, topdown=False, follow_symlinks=False):
            for file in files:
                os.unlink(file, dir_fd=top)
            for child in dirs:
                try:
                    os.rmdir(child, dir_fd=top)
                except NotADirectoryError:  # a link to a folder: the link goes, not its target
                    os.unlink(child, dir_fd=top)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=folder)


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
