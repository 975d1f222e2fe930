"""A run's artifacts in one append-only file, `results.pack`, found through the run's index.

A file per artifact cost 50-300 µs each (inode, directory entry, rename), more than the rest of a
step's bookkeeping. The index line says where an artifact's bytes are:
`{"id": "toolu_01", "name": "fetch_orders-1f0c9a7e42b1.json", "at": 18244, "size": 3002}`.
It stays as safe as a file each: each artifact is one `O_APPEND` write, placed whole whatever other
writers do (a short write is an error, its bytes unindexed); the index is written after the bytes,
so a crash leaves bytes no line points at, never the reverse (a torn line is skipped); reads go
through `run_folders.open_regular` (no links followed, a regular file with one link) and read only
the range a line names. Older runs with a file per artifact are still read: a file is looked for first.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass

__all__ = ["PACK_FILE", "Packed", "open_pack_for_append", "parse_index", "pread_all"]

PACK_FILE = "results.pack"


@dataclass(frozen=True)
class Packed:
    """Where an artifact's bytes are in its run's pack."""

    at: int
    size: int


def parse_index(text: str) -> tuple[dict[str, str], dict[str, Packed]]:
    """(tool_use_id -> artifact name, artifact name -> where packed); torn or foreign lines are skipped."""
    names: dict[str, str] = {}
    packed: dict[str, Packed] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            name = str(entry["name"])
            if entry.get("id") is not None:
                names[str(entry["id"])] = name
            at, size = entry.get("at"), entry.get("size")
            if type(at) is int and type(size) is int and at >= 0 and size >= 0:
                packed.setdefault(name, Packed(at, size))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return names, packed


def open_pack_for_append(dir_fd: int, flags: int) -> int:
    """The folder's pack, opened to append (created if missing); OSError unless a regular file with
    one link (a planted link or device is never written through)."""
    fd = os.open(PACK_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | flags, 0o600, dir_fd=dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise OSError(errno.EPERM, f"{PACK_FILE} is not a regular file of this store: not written")
    return fd


def pread_all(fd: int, at: int, size: int) -> bytes:
    """`size` bytes of `fd` from `at` (fewer if the file ends first)."""
    chunks = []
    while size > 0:
        chunk = os.pread(fd, min(size, 1 << 20), at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
        size -= len(chunk)
    return b"".join(chunks)
