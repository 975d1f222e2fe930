"""The session file on disk: one writer at a time, whole lines, durable, rolled back on failure.

`SessionFile` holds the file open for appending under an exclusive `flock` (two
processes can never resume, and so run the same calls, at once). `append` writes one
complete line and fsyncs it before returning; when the disk is full or the device
fails mid-line, whatever part of the line got out is cut off again, so the file always
ends on a complete record and stays resumable, and `SessionWriteError` says what
failed. If even the cut fails, the file is closed and every later append raises: no
record may ever follow a torn one.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from agent.ext.sessions.session_format import SessionError, SessionWriteError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, one writer is on you
    fcntl = None  # type: ignore[assignment]

__all__ = ["SessionFile", "sync_directory"]

log = logging.getLogger("agent")


class SessionFile:
    """A session file opened for appending, locked, with its size tracked."""

    def __init__(self, path: Path, *, create: bool, fsync: bool = True) -> None:
        """Open and lock `path` (created, mode 0600, if `create`); `SessionError` if it cannot
        be opened or another agent holds it."""
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
        try:
            fd = os.open(path, flags, 0o600)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as error:
            if not create:
                raise SessionError(f"no session file at {path}") from None
            raise SessionError(f"cannot create a session at {path}: {error}") from error
        except OSError as error:
            raise SessionError(f"cannot open the session at {path}: {error}") from error
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise SessionError(f"{path} is in use by another running agent") from None
        self.path, self.fsync = path, fsync
        self._fd: int | None = fd
        self._failed: str | None = None
        self.size = os.fstat(fd).st_size

    def make_private(self) -> None:
        """Owner-only (0600): a session holds the conversation verbatim."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.fchmod(self._fd, 0o600)

    def truncate(self, size: int) -> None:
        """Cut the file to `size` bytes (a torn tail, or a torn first record)."""
        if self._fd is not None and size < self.size:
            os.ftruncate(self._fd, size)
            self.size = size

    def append(self, data: bytes) -> None:
        """Write `data` (whole lines) and make it durable, or raise `SessionWriteError`."""
        if self._fd is None:
            if self._failed:
                raise SessionWriteError(f"{self.path}: not recording since a write failed ({self._failed})")
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            if self.fsync:
                os.fsync(self._fd)
        except OSError as error:
            self._roll_back()
            raise SessionWriteError(f"could not write to the session {self.path}: {error}") from error
        self.size += len(data)

    def _roll_back(self) -> None:
        """After a failed write: cut what part of the line got out, or stop writing at all."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self.size)
        except OSError as error:
            log.error("%s: a failed write could not be rolled back; recording stops here", self.path)
            self._failed = str(error)
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def sync_directory(path: Path) -> None:
    """Make a new file's directory entry durable too (a power cut must not lose the file)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
