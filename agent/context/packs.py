"""A run's artifacts in one append-only file, found through the run's index.

A file per artifact made the artifact store the dearest part of a step: creating a file
(an inode, a directory entry, a rename into place) took 50-300 µs on this project's
machines, more than the rest of the loop's bookkeeping at 200 messages, and it varied
with the disk's mood. So a run's artifacts are appended to one file, `results.pack`, one
write each, and the run's index line for an artifact says where its bytes are:

    {"id": "toolu_01", "name": "fetch_orders-1f0c9a7e42b1.json", "at": 18244, "size": 3002}

Why this stays as safe as a file each:

- **Appends never split.** The pack is opened with `O_APPEND` and each artifact is one
  `write`: the kernel places it whole at the end, whatever other writers of the same
  folder do; where it landed is read back from the descriptor's own offset. A short
  write (a full disk) is an error, and its bytes stay unindexed.
- **The index is written after the bytes.** A crash between the two leaves bytes no line
  points at, never a line pointing at bytes that are not there; a torn line is skipped.
- **Reads are checked as file reads are.** The pack is opened relative to its folder,
  without following links, and must be a regular file with one link on the store's
  device (`run_folders.open_regular`); only the range an index line names is read.

Older runs that hold one file per artifact are still read: a name is looked for as a file
first, then in the pack.
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
    """(tool_use_id -> artifact name, artifact name -> where it is packed) from an index's lines;
    a torn or foreign line (after a crash or a full disk) is skipped."""
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
    """The folder's pack, opened to append (created if missing); OSError unless it is a regular
    file with one link (a planted link or device is refused, never written through)."""
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
