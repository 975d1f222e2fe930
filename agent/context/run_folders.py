"""Run folders of the artifact store: who may delete one, and how an artifact in one is opened.

Cleanup must never delete a live run (runs may share one `artifacts_dir`): a live run holds a
shared `flock` on its folder (its lease) until the store closes or the process dies. A folder
beyond the newest `keep`, untouched for `min_age_s`, is locked exclusively without waiting,
renamed to `.trash-*` and deleted; where `flock` is refused nothing is, and without `fcntl`
(Windows) only the age protects. Checking a path then opening it races with a symlink swap, and
a hard link from outside looks like any file: so files are opened relative to their folder's
descriptor with `O_NOFOLLOW`, and the open inode must be a regular file with one link on the
store's device.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from agent.context.packs import PACK_FILE, Packed, parse_index, pread_all

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, only the age protects a run
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CLOEXEC",
    "DEFAULT_MIN_AGE_S",
    "DIRECTORY",
    "INDEX_FILE",
    "NOFOLLOW",
    "Lease",
    "Opened",
    "Refused",
    "cleanup_runs",
    "find_in_runs",
    "list_runs",
    "open_in_folder",
    "open_in_store",
    "open_root",
    "read_capped",
    "read_opened",
]

INDEX_FILE = "index.jsonl"
MAX_INDEX_BYTES = 1 << 26
"""An index read back is cut here (a planted huge file cannot exhaust memory)."""
DEFAULT_MIN_AGE_S = 3600.0
"""A run folder untouched for less than this is never deleted, lease or not."""
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # getattr: Windows has none of these (nor dir_fd: see diet)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | CLOEXEC
_READ = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)  # a FIFO: no wait
_READ |= CLOEXEC


class Refused(ValueError):
    """A file in the store that the store did not write, or cannot vouch for."""


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def open_root(root: str | Path) -> int:
    """A descriptor of the store's root (the configured path may itself be a symlink)."""
    return os.open(root, DIRECTORY)


def _open_folder(root_fd: int, name: str) -> int | None:
    """A descriptor of run folder `name` under `root_fd`; None if absent or not a real folder."""
    try:
        return os.open(name, DIRECTORY | NOFOLLOW, dir_fd=root_fd)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None
        raise


def open_regular(dir_fd: int, name: str, device: int) -> int | None:
    """`name` in `dir_fd` opened to read, or None if absent; `Refused` unless the open inode (no race)
    is a regular file with one link on `device`."""
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ENOENT:
            return None
        if error.errno in (errno.ELOOP, errno.EMLINK):
            raise Refused(f"refused: {name} is a symlink, not a regular file in the store") from None
        raise
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = f"{name} is not a regular file in the store"
    elif info.st_nlink != 1:
        problem = f"{name} has {info.st_nlink} hard links; the store only serves files it wrote itself"
    elif info.st_dev != device:
        problem = f"{name} is on another device than the store"
    if problem:
        os.close(fd)
        raise Refused("refused: " + problem)
    return fd


@dataclass(frozen=True)
class Opened:
    """An artifact found in a run folder: a checked descriptor of its own file, or of its run's pack
    (`size` bytes from `at`)."""

    fd: int
    folder: str
    at: int = 0
    size: int | None = None


def open_in_folder(
    folder_fd: int, folder: str, name: str, device: int, packed: Packed | None = None
) -> Opened | None:
    """Artifact `name` of one run folder, checked as in `open_regular`: in the pack where the index (or
    `packed`) places it, else a file of that name; pack first, so a planted file is never read instead."""
    if packed is None:
        index = open_regular(folder_fd, INDEX_FILE, device)
        if index is not None:
            text = read_capped(index, MAX_INDEX_BYTES)[0].decode("utf-8", errors="replace")
            packed = parse_index(text)[1].get(name)
    if packed is not None:
        pack = open_regular(folder_fd, PACK_FILE, device)
        if pack is not None:
            return Opened(pack, folder, packed.at, packed.size)
    fd = open_regular(folder_fd, name, device)
    return Opened(fd, folder) if fd is not None else None


def open_in_store(root_fd: int, folder: str, name: str) -> Opened | None:
    """Open artifact `name` of run folder `folder` (see `open_in_folder`)."""
    folder_fd = _open_folder(root_fd, folder)
    if folder_fd is None:
        return None
    try:
        return open_in_folder(folder_fd, folder, name, os.fstat(root_fd).st_dev)
    finally:
        os.close(folder_fd)


def genuine(found: Opened, name: str) -> bool:
    """Whether `found`'s bytes hash to the digest in `name`, whichever folder, pack or process wrote them."""
    digest = name.rsplit("-", 1)[-1].split(".", 1)[0]
    whole = os.fstat(found.fd).st_size - found.at if found.size is None else found.size
    hasher, done = hashlib.sha256(), 0
    while done < whole:
        chunk = os.pread(found.fd, min(1 << 20, whole - done), found.at + done)
        if not chunk:
            return False
        hasher.update(chunk)
        done += len(chunk)
    return hasher.hexdigest()[:12] == digest


def find_in_runs(root: str | Path, name: str) -> Opened:
    """Artifact `name`, checked, from the newest run folder under `root` whose copy is `genuine`;
    FileNotFoundError if absent, `Refused` if only differing (planted or damaged) copies were found."""
    try:
        root_fd = open_root(root)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"no artifact store at {root}") from None
    forged: list[str] = []
    try:
        for _, folder in list_runs(root_fd):
            found = open_in_store(root_fd, folder, name)
            if found is None:
                continue
            if genuine(found, name):
                return found
            os.close(found.fd)
            forged.append(folder)
    finally:
        os.close(root_fd)
    if forged:
        raise Refused(
            f"artifact {name} was found (in {', '.join(forged)}) but its bytes do not match its name: "
            "it was not written by this store, or was damaged; call the tool again"
        )
    raise FileNotFoundError(
        f"no artifact named {name} under {root} (its run may have been cleaned up; call the tool again)"
    )


def read_capped(fd: int, max_bytes: int, at: int = 0, size: int | None = None) -> tuple[bytes, int]:
    """Up to `max_bytes` of `fd` (closed after) from `at`, and the whole size (`size`, else the file's)."""
    try:
        whole = os.fstat(fd).st_size if size is None else size
        return pread_all(fd, at, min(whole, max_bytes)), whole
    finally:
        os.close(fd)


def read_opened(found: Opened, max_bytes: int) -> tuple[bytes, int]:
    """Up to `max_bytes` of the artifact `found` holds (its descriptor closed after), and its size."""
    return read_capped(found.fd, max_bytes, found.at, found.size)


def list_runs(root_fd: int) -> list[tuple[float, str]]:
    """(mtime, name) of the run folders under `root_fd` (ours: they hold an index), newest first."""
    found = []
    with contextlib.suppress(OSError), os.scandir(root_fd) as entries:
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                index = os.stat(f"{entry.name}/{INDEX_FILE}", dir_fd=root_fd, follow_symlinks=False)
                if stat.S_ISREG(index.st_mode):
                    found.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
    return sorted(found, reverse=True)


class Lease:
    """A live run's hold on its folder: the folder's descriptor, with a shared lock on it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        for _ in range(50):
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            dir_fd = os.open(self.folder, DIRECTORY | NOFOLLOW)
            if fcntl is not None:
                with contextlib.suppress(OSError):  # a file system without flock: age only
                    fcntl.flock(dir_fd, fcntl.LOCK_SH)  # waits only while a cleanup holds it
            with contextlib.suppress(OSError):  # still the folder at that path?
                if _same(os.stat(self.folder, follow_symlinks=False), os.fstat(dir_fd)):
                    self.dir_fd = dir_fd
                    return
            os.close(dir_fd)  # a cleanup deleted it while we waited: make a new one
        raise OSError(errno.EBUSY, f"could not lease run folder {self.folder}")

    def touch(self) -> None:
        """Mark the folder as just used (cleanup spares folders younger than its min age)."""
        with contextlib.suppress(OSError):
            os.utime(self.dir_fd)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.dir_fd)  # the lock goes with the last descriptor of it
        self.dir_fd = -1


def cleanup_runs(
    root: str | Path, keep: int, *, current: Path | None = None, min_age_s: float = DEFAULT_MIN_AGE_S
) -> list[Path]:
    """Delete and return the run folders (holding an index) under `root` beyond the newest `keep`, free
    and untouched for `min_age_s`; symlinks are never followed, and `current` is never deleted."""
    if keep < 1:
        return []
    base = Path(root)
    try:
        root_fd = open_root(base)
    except OSError:
        return []
    removed = []
    try:
        _remove_trash(root_fd, base)
        for mtime, name in list_runs(root_fd)[keep:]:
            if (current is not None and name == Path(current).name) or time.time() - mtime < min_age_s:
                continue
            with contextlib.suppress(OSError):  # one folder we cannot delete never stops the run
                if _delete_if_free(root_fd, base, name, min_age_s):
                    removed.append(base / name)
    finally:
        os.close(root_fd)
    return removed


def _delete_if_free(root_fd: int, base: Path, name: str, min_age_s: float) -> bool:
    folder_fd = _open_folder(root_fd, name)
    if folder_fd is None:
        return False
    try:
        if fcntl is not None:
            try:
                fcntl.flock(folder_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # a live run holds it (or the lock cannot be had: keep it)
        if time.time() - os.fstat(folder_fd).st_mtime < min_age_s:
            return False  # touched since it was listed
        trash = f".trash-{name[:80]}-{uuid.uuid4().hex[:8]}"
        os.rename(name, trash, src_dir_fd=root_fd, dst_dir_fd=root_fd)
        if not _same(os.stat(trash, dir_fd=root_fd, follow_symlinks=False), os.fstat(folder_fd)):
            with contextlib.suppress(OSError):  # swapped under us: put it back, delete nothing
                os.rename(trash, name, src_dir_fd=root_fd, dst_dir_fd=root_fd)
            return False
        shutil.rmtree(base / trash, ignore_errors=True)  # fd-based on POSIX: never follows links
        return True
    finally:
        os.close(folder_fd)


def _remove_trash(root_fd: int, base: Path) -> None:
    """Finish deletions that a cleanup started and did not end (it died mid-way)."""
    with contextlib.suppress(OSError), os.scandir(root_fd) as entries:
        stale = [e.name for e in entries if e.name.startswith(".trash-") and e.is_dir(follow_symlinks=False)]
    for name in stale:
        shutil.rmtree(base / name, ignore_errors=True)
