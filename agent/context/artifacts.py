"""Full tool results kept on disk, so whatever the context leaves out stays one read away.

Cutting a tool result is only safe if the cut part can be had back. Every non-trivial
result is therefore written here in full, and the text the model reads carries a
short pointer to it:

    artifact:search_orders-1f0c9a7e42b1.json

The pointer is plain text (the history stays wire-clean) and greppable:
`find_pointer(text)` returns the name, `marker(name)` builds it. The `read_artifact`
tool (`tools/read_artifact.py`) turns a name back into a slice of the result.

Names are the sanitized tool name plus a hash of the content, so the same output is
stored once and a name can never point at different bytes. What is written goes
through the project's secret policy first (`agent.secrets.redact`): an API key a tool
echoed is not kept in clear. Writes are atomic (a temp file renamed into place, both
relative to the folder's descriptor), each artifact has a size cap, each run folder a
total cap, and reads have a byte cap.

Safety lives in `run_folders.py`: a live run holds a lease on its folder, so cleanup of
old runs (beyond `keep_runs`, older than `min_age_s`, lease free) never deletes a run in
progress; and files are opened with `O_NOFOLLOW` relative to a folder descriptor, then
checked on the open inode (regular, one link, same device), so neither a symlink swap
nor a hard link from outside the store is ever read. Close the store (or let it be
collected) when the run ends, to release its lease.

The index maps each `tool_use_id` to its artifact and is appended to a JSONL file in
the run folder, so `name_for(tool_use_id)` also works after a resume.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import stat
import threading
import uuid
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any

from agent.context.run_folders import (
    CLOEXEC,
    DEFAULT_MIN_AGE_S,
    DIRECTORY,
    INDEX_FILE,
    NOFOLLOW,
    Lease,
    Refused,
    cleanup_runs,
    find_in_runs,
    open_regular,
    read_capped,
)
from agent.secrets import redact

__all__ = [
    "INDEX_FILE",
    "MAX_READ_BYTES",
    "ArtifactStore",
    "Refused",
    "artifact_name",
    "cleanup_runs",
    "find_pointer",
    "marker",
    "read_artifact_text",
    "resolve_artifact",
]

MAX_READ_BYTES = 16 * 1024 * 1024
"""At most this much of one artifact is read back (a planted huge file cannot exhaust memory)."""
POINTER_PREFIX = "artifact:"
NAME_PATTERN = r"[A-Za-z0-9_-]{1,40}-[0-9a-f]{12}\.(?:json|txt)"
_NAME = re.compile(NAME_PATTERN)
_POINTER = re.compile(r"artifact:(" + NAME_PATTERN + r")(?![A-Za-z0-9_.-])")


def marker(name: str) -> str:
    """The pointer text for an artifact name (`artifact:<name>`)."""
    return POINTER_PREFIX + name


def find_pointer(text: str) -> str | None:
    """The artifact name of the first pointer in `text`, or None."""
    found = _POINTER.search(text) if isinstance(text, str) else None
    return found.group(1) if found else None


def is_artifact_name(name: str) -> bool:
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def artifact_name(tool_name: str, text: str, *, is_json: bool) -> str:
    """`<sanitized tool name>-<12 hex of sha256(text)>.<json|txt>`, pure and deterministic."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool_name or "result")[:40] or "result"
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"{safe}-{digest}.{'json' if is_json else 'txt'}"


def check_name(name: str) -> None:
    """ValueError, in words the model can act on, unless `name` is a plain artifact name."""
    if not is_artifact_name(name):
        shown = repr(name[:80]) + ("..." if isinstance(name, str) and len(name) > 80 else "")
        raise ValueError(
            f"not an artifact name: {shown} (pass exactly what follows `artifact:` in a cut note, "
            "like search_orders-1f0c9a7e42b1.json)"
        )


def folder_bytes(dir_fd: int) -> int:
    """Bytes in the folder's files. Another writer of the same folder may rename its temp file
    away between the listing and the `stat`: a file that is gone counts as nothing."""
    total = 0
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue
    return total


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_artifact_text(root: str | Path, name: str, *, max_bytes: int = MAX_READ_BYTES) -> tuple[str, int]:
    """The text of artifact `name` (its first `max_bytes`) and the file's whole size in bytes.

    Searches every run folder under `root`, newest first (content-hash names: any folder
    holding the name holds the same bytes). Refuses (`Refused`, a ValueError) a symlink, a
    file with more than one link, anything not a regular file or on another device.
    """
    check_name(name)
    fd, _ = find_in_runs(root, name)
    data, size = read_capped(fd, max_bytes)
    return _decode(data), size


def resolve_artifact(root: str | Path, name: str) -> Path:
    """The path of artifact `name`, checked as `read_artifact_text` checks it.

    Only for showing where it is: opening the path again by name would reopen the race
    the checks close. Read with `read_artifact_text` or `ArtifactStore.read`.
    """
    check_name(name)
    fd, folder = find_in_runs(root, name)
    os.close(fd)
    return Path(root) / folder / name


_TEMP_PREFIX = uuid.uuid4().hex[:12]
_TEMP_COUNTER = itertools.count()


def _reset_temp_prefix() -> None:
    global _TEMP_PREFIX
    _TEMP_PREFIX = uuid.uuid4().hex[:12]  # a forked child must not reuse its parent's names


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_temp_prefix)


def _safe_folder_name(run_id: str) -> str:
    """`run_id` as one folder name; a distinct suffix when it had to be changed or cut."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id).lstrip(".")[:80] or "run"
    if safe != run_id:
        safe += "-" + hashlib.sha256(run_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:8]
    return safe


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


class ArtifactStore:
    """One run's folder of full results, with an index by `tool_use_id`."""

    def __init__(
        self,
        folder: str | Path,
        *,
        max_bytes: int = 10_000_000,
        max_total_bytes: int = 200_000_000,
        keep_runs: int = 20,
        min_age_s: float = DEFAULT_MIN_AGE_S,
    ) -> None:
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        """Largest artifact stored; a larger result is stored truncated, with a last line saying so."""
        self.max_total_bytes = max_total_bytes
        """Largest total for the folder; past it new results are not stored (and not cut-pointed)."""
        self.keep_runs = keep_runs
        """Run folders kept beside this one; older ones, free and untouched for `min_age_s`, go."""
        self.min_age_s = min_age_s
        """A run folder used more recently than this is never deleted, whatever `keep_runs` says."""
        self._lock = threading.Lock()
        self._lease: Lease | None = None
        self._release: weakref.finalize[Any, Any] | None = None
        self._index: dict[str, str] | None = None
        self._index_fd: int | None = None
        self._release_index: weakref.finalize[Any, Any] | None = None
        self._total: int | None = None

    @classmethod
    def for_run(cls, root: str | Path, run_id: str, **options: Any) -> ArtifactStore:
        """The store of run `run_id` under `root` (nothing is written until the first `put`)."""
        return cls(Path(root) / _safe_folder_name(run_id), **options)

    def close(self) -> None:
        """Release this run's lease (its folder may then be cleaned up once it is old enough)."""
        with self._lock:
            self._close_index()
            if self._release is not None:
                self._release()
            self._lease = self._release = None

    def __enter__(self) -> ArtifactStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------

    def put(self, name: str, text: str, *, tool_use_id: str | None = None) -> bool:
        """Store `text` (secrets redacted) as `name`, idempotently, and index it; False if a cap
        refused it. Raises OSError when the disk does (full, read-only): nothing half-written stays."""
        check_name(name)
        data = redact(text).encode("utf-8", errors="replace")
        if len(data) > self.max_bytes:
            note = f"\n[artifact truncated: first {self.max_bytes:,} of {len(data):,} bytes kept]\n"
            data = data[: self.max_bytes].decode("utf-8", errors="ignore").encode() + note.encode()
        with self._lock:
            dir_fd = self._open()
            if not self._holds(dir_fd, name):
                if self._used(dir_fd) + len(data) > self.max_total_bytes:
                    return False
                self._write_atomic(dir_fd, name, data)
                self._total = self._used(dir_fd) + len(data)
            assert self._lease is not None
            self._lease.touch()
            if tool_use_id:
                self._append_index(dir_fd, tool_use_id, name)
        return True

    def _open(self) -> int:
        """Lease the folder (creating it and its index), once; then clean up old runs."""
        if self._lease is None:
            lease = Lease(self.folder)
            try:  # the index marks the folder as ours: without it nothing in it could be read
                flags = os.O_WRONLY | os.O_CREAT | NOFOLLOW | CLOEXEC
                os.close(os.open(INDEX_FILE, flags, 0o600, dir_fd=lease.dir_fd))
            except BaseException:
                lease.close()
                raise
            self._lease, self._release = lease, weakref.finalize(self, lease.close)
            cleanup_runs(self.folder.parent, self.keep_runs, current=self.folder, min_age_s=self.min_age_s)
        return self._lease.dir_fd

    @staticmethod
    def _holds(dir_fd: int, name: str) -> bool:
        """Whether `name` is already a file this store wrote (a planted link gets replaced)."""
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return stat.S_ISREG(info.st_mode) and info.st_nlink == 1

    def _used(self, dir_fd: int) -> int:
        if self._total is None:
            self._total = folder_bytes(dir_fd)
        return self._total

    def _write_atomic(self, dir_fd: int, name: str, data: bytes) -> None:
        temp = f".tmp-{_TEMP_PREFIX}-{next(_TEMP_COUNTER)}"  # unique per process: cheaper than a uuid4
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
        fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
        try:
            try:
                self._write_file(fd, data)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise

    @staticmethod
    def _write_file(fd: int, data: bytes) -> None:
        """Write all of `data` to `fd` (the one place bytes hit the disk: a full disk raises here)."""
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def _append_index(self, dir_fd: int, tool_use_id: str, name: str) -> None:
        index = self._load_index()
        if index.get(tool_use_id) == name:
            return
        line = (json.dumps({"id": tool_use_id, "name": name}, ensure_ascii=False) + "\n").encode()
        if self._index_fd is None:  # opened once per lease; a failed append closes it (see below)
            fd = os.open(INDEX_FILE, os.O_RDWR | os.O_APPEND | NOFOLLOW | CLOEXEC, dir_fd=dir_fd)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line  # the last append was torn (crash, full disk): start afresh
            except BaseException:
                os.close(fd)
                raise
            self._index_fd = fd
            assert self._release_index is None
            self._release_index = weakref.finalize(self, _close_quietly, fd)
        try:
            self._write_file(self._index_fd, line)
        except BaseException:
            self._close_index()  # reopened next time, and a torn line then checked for
            raise
        index[tool_use_id] = name

    def _close_index(self) -> None:
        if self._release_index is not None:
            self._release_index()
        self._index_fd = self._release_index = None

    # -- reading --------------------------------------------------------------------

    def name_for(self, tool_use_id: str) -> str | None:
        """The artifact holding the full result of `tool_use_id`, if one was stored."""
        with self._lock:
            return self._load_index().get(tool_use_id)

    def read(self, name: str, *, max_bytes: int = MAX_READ_BYTES) -> str:
        """The text of `name` (its first `max_bytes`): this run's folder first, then the others."""
        check_name(name)
        with self._lock:
            fd = self._open_own(name)
        if fd is None:
            return read_artifact_text(self.folder.parent, name, max_bytes=max_bytes)[0]
        return _decode(read_capped(fd, max_bytes)[0])

    def _open_own(self, name: str) -> int | None:
        """A checked descriptor of `name` in this run's own folder, or None."""
        if self._lease is not None:
            return open_regular(self._lease.dir_fd, name, os.fstat(self._lease.dir_fd).st_dev)
        try:
            dir_fd = os.open(self.folder, DIRECTORY | NOFOLLOW)
        except OSError:
            return None
        try:
            return open_regular(dir_fd, name, os.fstat(dir_fd).st_dev)
        finally:
            os.close(dir_fd)

    def _load_index(self) -> dict[str, str]:
        if self._index is None:
            self._index = {}
            try:
                fd = self._open_own(INDEX_FILE)
                text = _decode(read_capped(fd, 1 << 26)[0]) if fd is not None else ""
            except (OSError, Refused):
                text = ""
            for line in text.splitlines():
                try:
                    entry = json.loads(line)
                    self._index[str(entry["id"])] = str(entry["name"])
                except (ValueError, KeyError, TypeError):
                    continue  # a torn line after a crash or a full disk: skip it
        return self._index
