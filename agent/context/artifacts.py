"""Full tool results kept on disk, so whatever the context cuts stays one read away.

A cut result carries a greppable pointer (`artifact:search_orders-1f0c9a7e42b1.json`) that
the `read_artifact` tool reads back. A name is the tool name plus a hash of the content, so
it never points at different bytes. Results are redacted, appended to the run's pack
(`agent.context.packs`) and indexed by `tool_use_id`, so lookups survive a resume. Leases and
safe opening live in `run_folders.py`; close the store when the run ends, to release its lease.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from agent.context.packs import PACK_FILE, Packed, open_pack_for_append, parse_index
from agent.context.run_folders import (
    CLOEXEC,
    DEFAULT_MIN_AGE_S,
    DIRECTORY,
    INDEX_FILE,
    MAX_INDEX_BYTES,
    NOFOLLOW,
    Lease,
    Refused,
    cleanup_runs,
    find_in_runs,
    open_in_folder,
    open_regular,
    read_capped,
    read_opened,
)
from agent.render import redact

T = TypeVar("T")

__all__ = [
    "INDEX_FILE",
    "MAX_READ_BYTES",
    "PACK_FILE",
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


def artifact_name(tool_name: str, text: str, *, is_json: bool) -> str:
    """`<tool name>-<12 hex of sha256>.<json|txt>`, hashing the bytes as stored, so a read can check them."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool_name or "result")[:40] or "result"
    digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:12]
    return f"{safe}-{digest}.{'json' if is_json else 'txt'}"


def check_name(name: str) -> None:
    """ValueError, in words the model can act on, unless `name` is a plain artifact name."""
    if not (isinstance(name, str) and _NAME.fullmatch(name)):
        shown = repr(name[:80]) + ("..." if isinstance(name, str) and len(name) > 80 else "")
        raise ValueError(
            f"not an artifact name: {shown} (pass exactly what follows `artifact:` in a cut note, "
            "like search_orders-1f0c9a7e42b1.json)"
        )


def folder_bytes(dir_fd: int) -> int:
    """Bytes in the folder's files; one removed between the listing and the `stat` counts nothing."""
    total = 0
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            with contextlib.suppress(FileNotFoundError):
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    return total


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_artifact_text(root: str | Path, name: str, *, max_bytes: int = MAX_READ_BYTES) -> tuple[str, int]:
    """The first `max_bytes` of artifact `name` and its whole size, from the newest run under `root`
    holding it; `Refused` for a symlink, a hard link, or anything not a regular file on the store's device."""
    check_name(name)
    data, size = read_opened(find_in_runs(root, name), max_bytes)
    return _decode(data), size


def resolve_artifact(root: str | Path, name: str) -> Path:
    """The checked path of the file holding artifact `name` (its own file or its run's pack), only
    for showing: opening it again by name would reopen the race the checks close."""
    check_name(name)
    found = find_in_runs(root, name)
    os.close(found.fd)
    return Path(root) / found.folder / (name if found.size is None else PACK_FILE)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


_INDEX_JSON = json.JSONEncoder(ensure_ascii=False)  # made once, not per line

TOUCH_EVERY_S = 1.0
"""A run marks its folder as used at most this often (cleanup spares folders used within the hour)."""


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
        self._packed: dict[str, Packed] = {}  # where each artifact the index knows of is in the pack
        self._index_fd: int | None = None
        self._release_index: weakref.finalize[Any, Any] | None = None
        self._pack_fd: int | None = None
        self._release_pack: weakref.finalize[Any, Any] | None = None
        self._total: int | None = None
        self._touched = -math.inf

    @classmethod
    def for_run(cls, root: str | Path, run_id: str, **options: Any) -> ArtifactStore:
        """The store of run `run_id` under `root` (nothing is written until the first `put`); a
        `run_id` that is not a safe folder name gets a distinct hash suffix."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id).lstrip(".")[:80] or "run"
        if safe != run_id:
            safe += "-" + hashlib.sha256(run_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:8]
        return cls(Path(root) / safe, **options)

    def close(self) -> None:
        """Release this run's lease (its folder may then be cleaned up once it is old enough)."""
        with self._lock:
            self._close_index()
            self._close_pack()
            if self._release is not None:
                self._release()
            self._lease = self._release = None

    def __enter__(self) -> ArtifactStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def fit(self, text: str) -> str:
        """`text`, cut to `max_bytes` with a note; name an artifact after this, to hash the bytes read."""
        data = text.encode("utf-8", errors="replace")
        if len(data) <= self.max_bytes:
            return text
        note = f"\n[artifact truncated: first {{:,}} of {len(data):,} bytes kept]\n"
        keep = max(0, self.max_bytes - len(note.format(self.max_bytes).encode()))
        kept = data[:keep].decode("utf-8", errors="ignore")
        return kept + note.format(len(kept.encode()))

    def put(self, name: str, text: str, *, tool_use_id: str | None = None, redacted: bool = False) -> bool:
        """Store `text` (redacted unless `redacted`) as `name`, idempotently, and index it; False if a cap
        refused it. OSError when the disk fails, with no index line pointing at the half-written bytes."""
        check_name(name)
        data = self.fit(text if redacted else redact(text)).encode("utf-8", errors="replace")
        with self._lock:
            dir_fd = self._open()
            index = self._load_index()
            if name in self._packed:
                if tool_use_id and index.get(tool_use_id) != name:
                    self._append_index(dir_fd, {"id": tool_use_id, "name": name})
                    index[tool_use_id] = name
            else:
                if self._used(dir_fd) + len(data) > self.max_total_bytes:
                    return False
                at = self._append_pack(dir_fd, data)
                self._total = self._used(dir_fd) + len(data)
                self._append_index(dir_fd, {"id": tool_use_id, "name": name, "at": at, "size": len(data)})
                self._packed[name] = Packed(at, len(data))
                if tool_use_id:
                    index[tool_use_id] = name
            assert self._lease is not None
            if time.monotonic() - self._touched >= TOUCH_EVERY_S:
                self._lease.touch()
                self._touched = time.monotonic()
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

    def _used(self, dir_fd: int) -> int:
        if self._total is None:
            self._total = folder_bytes(dir_fd)
        return self._total

    def _append_pack(self, dir_fd: int, data: bytes) -> int:
        """Append `data` to the run's pack (opened once per lease); where it starts."""
        if self._pack_fd is None:
            self._pack_fd = open_pack_for_append(dir_fd, NOFOLLOW | CLOEXEC)
            self._release_pack = weakref.finalize(self, _close_quietly, self._pack_fd)
        try:
            self._write_file(self._pack_fd, data)
        except BaseException:
            self._close_pack()  # reopened next time
            raise
        return os.lseek(self._pack_fd, 0, os.SEEK_CUR) - len(data)  # O_APPEND: our own offset says

    def _close_pack(self) -> None:
        if self._release_pack is not None:
            self._release_pack()
        self._pack_fd = self._release_pack = None

    @staticmethod
    def _write_file(fd: int, data: bytes) -> None:
        """All of `data` in one write, so no other writer lands between its halves; a short one raises."""
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(errno.ENOSPC, f"short write: {written:,} of {len(data):,} bytes")

    def _append_index(self, dir_fd: int, entry: dict[str, Any]) -> None:
        line = (_INDEX_JSON.encode(entry) + "\n").encode()
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

    def _close_index(self) -> None:
        if self._release_index is not None:
            self._release_index()
        self._index_fd = self._release_index = None

    def name_for(self, tool_use_id: str) -> str | None:
        """The artifact holding the full result of `tool_use_id`, if one was stored."""
        with self._lock:
            return self._load_index().get(tool_use_id)

    def read(self, name: str, *, max_bytes: int = MAX_READ_BYTES) -> str:
        """The text of `name` (its first `max_bytes`): this run's folder first, then the others."""
        return self.read_sized(name, max_bytes=max_bytes)[0]

    def read_sized(self, name: str, *, max_bytes: int = MAX_READ_BYTES) -> tuple[str, int]:
        """`read`, with the whole size; through the lease's descriptor, so a store moved or swapped for a
        link mid-run still gives back what it wrote."""
        check_name(name)
        with self._lock:
            self._load_index()
            packed = self._packed.get(name)
            found = self._in_own_folder(
                lambda dir_fd, device: open_in_folder(dir_fd, "", name, device, packed)
            )
        if found is None:
            return read_artifact_text(self.folder.parent, name, max_bytes=max_bytes)
        data, size = read_opened(found, max_bytes)
        return _decode(data), size

    def _in_own_folder(self, open_: Callable[[int, int], T]) -> T | None:
        """`open_(folder descriptor, device)` in this run's own folder; None if it has none."""
        if self._lease is not None:
            return open_(self._lease.dir_fd, os.fstat(self._lease.dir_fd).st_dev)
        try:
            dir_fd = os.open(self.folder, DIRECTORY | NOFOLLOW)
        except OSError:
            return None
        try:
            return open_(dir_fd, os.fstat(dir_fd).st_dev)
        finally:
            os.close(dir_fd)

    def _load_index(self) -> dict[str, str]:
        """tool_use_id -> name, read from the index once (then kept up to date by `put`)."""
        if self._index is None:
            text = ""
            with contextlib.suppress(OSError, Refused):
                fd = self._in_own_folder(lambda dir_fd, device: open_regular(dir_fd, INDEX_FILE, device))
                text = _decode(read_capped(fd, MAX_INDEX_BYTES)[0]) if fd is not None else ""
            self._index, self._packed = parse_index(text)  # a torn line (crash, full disk) is skipped
        return self._index
