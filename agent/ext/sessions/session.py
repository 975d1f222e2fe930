"""Sessions: the run written down as it happens, so a crash loses nothing paid for.

A session is a JSONL file with one event per line, appended (written, then fsynced)
the moment something happens:

    start     the run's id, model, first history, and the per-session fingerprint key
    reply     the assistant turn that asked for tools (text, thinking and calls), as received
    calls     the tool calls the model just asked for (before any of them runs)
    approval  a person's (or the allow list's) verdict on a gated call
    started   a gated call is about to run (written BEFORE it runs)
    result    one call's result, as soon as that call finishes
    usage     what one model call cost
    turn      committed messages (an assistant turn and its tool results)
    history   the rewritten part of the history, when pruning or compaction changed it
    stopped / end / resume   how each stretch of the run ended or began

Every record carries its number `n` (0 for `start`), so a record duplicated, lost or
moved is caught on reading. Replaying the events (`agent.ext.sessions.replay`) rebuilds
the history, the usage (so budgets span a resume) and the run's never-twice ledger
(`agent.ext.approval.ledger`: `approval`, `started` and `result` are its entries, written
as the ledger tells them). A call is identified by its tool_use id AND its fingerprint (a
keyed hash of tool and input), never by the id alone: models and simulators reuse ids.
What is kept verbatim and what is redacted is explained in
`agent.ext.sessions.session_format`; in short, what a resume sends back or runs is exact,
the configured API key is never written, and the file is 0600.

A record counts once its line is complete: a torn last line (the process died
mid-write) is ignored and cut off when the session is reopened. A failed write (disk
full) is rolled back to the last complete record and raises `SessionWriteError`.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.ext.approval.ledger import Ledger
from agent.ext.sessions.replay import Replay, read_session
from agent.ext.sessions.session_file import SessionFile, sync_directory
from agent.ext.sessions.session_format import (
    VERSION,
    KeyMask,
    SessionError,
    SessionWriteError,
    configured_key,
    encode_line,
    redact,
)
from agent.messages import Msg, as_object, final_text, shared_length
from agent.render import describe_error
from agent.tools import ToolCall, ToolOutcome

if TYPE_CHECKING:
    from agent.state import RunState

__all__ = ["SessionLog"]

log = logging.getLogger("agent")


class SessionLog:
    """The JSONL record of one run, and the journal of its ledger.

    `SessionLog.create` starts a file, `SessionLog.reopen` continues one; every record is
    appended, and made durable, before the method that writes it returns. The `Session`
    extension (`agent.ext.sessions`) calls these at the loop's hooks.
    """

    def __init__(self, *, fsync: bool = True, ledger: Ledger | None = None) -> None:
        self.path: Path | None = None
        self.fsync = fsync
        self.ledger = ledger or Ledger()
        self.ledger.journal = self.entry
        self.last_reply: tuple[str, str] = ("end_turn", "")
        """The newest reply's stop reason and text: what the `end` record says."""
        self._file: SessionFile | None = None
        self._lock = threading.RLock()
        self._history: list[Msg] = []
        self._usage_written = 0
        self._records = 0
        self._mask = KeyMask(self.ledger.key)

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | Path,
        *,
        run_id: str,
        model: str,
        messages: Sequence[Msg],
        fsync: bool = True,
        ledger: Ledger | None = None,
    ) -> SessionLog:
        """Start a new session file; refuses one that holds a run (checked under the lock)."""
        session, target = cls(fsync=fsync, ledger=ledger), Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise SessionError(f"cannot create a session at {target}: {error}") from error
        session._attach(SessionFile(target, create=True, fsync=fsync))
        try:
            session._claim_empty(target)
            session._mask = KeyMask(session.ledger.key, configured_key())
            session._history = list(messages)
            start = {"v": VERSION, "run_id": run_id, "model": model, "fp_key": session.ledger.key.hex()}
            session.write({"event": "start", **start, "messages": messages})
            sync_directory(target)
        except BaseException:
            session.close()
            raise
        return session

    def _claim_empty(self, target: Path) -> None:
        """Under the lock: the file must be empty, or torn inside its first record (then reused)."""
        assert self._file is not None
        if self._file.size > 0:
            try:
                read_session(target)
            except SessionError as error:
                if "torn inside its first record" not in str(error):
                    raise SessionError(f"{target} holds data that is not a session: {error}") from None
                log.warning("%s was torn inside its first record (nothing ran); starting over in it", target)
                self._file.truncate(0)
            else:
                raise SessionError(f"{target} already holds a session: resume it, or pick a new path")
        self._file.make_private()

    @classmethod
    def reopen(cls, path: str | Path, *, fsync: bool = True) -> tuple[SessionLog, Replay]:
        """Open a session to continue it: lock it, replay it, cut a torn tail; its ledger is
        the replayed one."""
        session = cls(fsync=fsync)
        session._attach(SessionFile(Path(path), create=False, fsync=fsync))
        try:
            replay = read_session(path)
            if replay.unrestored and replay.stop_reason is None:  # a finished run sends nothing
                raise SessionError(
                    f"{path} holds an API key masked in the file, and the configured ANTHROPIC_API_KEY "
                    "is not that key: resume with the key the run was started with"
                )
            assert session._file is not None
            session._file.truncate(replay.good_bytes)
            session.ledger = replay.ledger
            session.ledger.journal = session.entry
            session._mask = KeyMask(replay.ledger.key, configured_key())
            session._history = list(replay.messages)
            session._usage_written = len(replay.usage)
            session._records = replay.records
            if replay.stop_reason is None:
                session.write({"event": "resume"})
        except BaseException:
            session.close()
            raise
        return session, replay

    def _attach(self, file: SessionFile) -> None:
        self.path, self._file = file.path, file

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()

    # -- writing ---------------------------------------------------------------------

    def write(self, event: Mapping[str, Any]) -> None:
        """Append one event and make it durable before returning; `SessionWriteError` if not
        (the file is then rolled back to its last complete record)."""
        with self._lock:
            if self._file is None:
                return
            record = {"event": event["event"], "n": self._records, **event, "t": round(time.time(), 3)}
            self._file.append(encode_line(record, self._mask))
            self._records += 1

    def entry(self, entry: dict[str, Any]) -> None:
        """A ledger entry (`approval`, `started`, `result`), written as the ledger makes it;
        an approval's reason is free text nothing replays, so it is redacted."""
        if entry.get("reason") is not None:
            entry = {**entry, "reason": redact(str(entry["reason"]))}
        self.write(entry)

    def record_reply(self, state: RunState, message: Msg | None) -> None:
        """The assistant turn that asked for tools, before any of them runs (so a resume
        sends it back whole, text and thinking included, not rebuilt from the calls)."""
        self.record_usage(state)
        if message is not None:
            self.write({"event": "reply", "message": message})

    def record_calls(self, calls: Sequence[ToolCall]) -> None:
        """The calls of a turn, before any runs (the turn a resume finishes if it dies now)."""
        listed = [{"id": c.id, "name": c.name, "input": as_object(c.input)} for c in calls]
        self.write({"event": "calls", "calls": listed})

    def record_result(self, outcome: ToolOutcome) -> None:
        """One call's result, through the ledger (which marks an irreversible success)."""
        self.ledger.record(outcome)

    def record_usage(self, state: RunState) -> None:
        """The model calls billed since the last record, with the token-estimate calibration
        (so a resumed run estimates, and so checks its budgets, as the original did)."""
        kept = state.calibration
        calibration = {"ratio": kept.ratio, "samples": kept.samples, "hidden": kept.hidden}
        with self._lock:
            for step in state.usage.steps[self._usage_written :]:
                self.write({"event": "usage", "usage": step.to_json(), "calibration": calibration})
                self._usage_written += 1

    def record_turn(self, state: RunState, new: Iterable[Msg]) -> None:
        """Commit `new`, the messages just appended to `state.messages`; first, if pruning,
        compaction or a memory note rewrote the history since the last turn, record the
        messages that changed (by position)."""
        new = list(new)
        history = state.messages[: len(state.messages) - len(new)]
        self.record_usage(state)
        changed = _changed(self._history, history)
        if changed or len(history) != len(self._history):
            self.write({"event": "history", "length": len(history), "changed": changed})
        self.write({"event": "turn", "messages": new})
        self._history = list(state.messages)

    def record_end(self, state: RunState) -> None:
        """The run finished: its stop reason and (redacted) final text."""
        stop_reason, text = self.last_reply
        self.record_usage(state)
        self.write({"event": "end", "stop_reason": stop_reason, "text": redact(text)})

    def record_stopped(self, state: RunState, error: BaseException) -> None:
        """The run stopped on `error`; never raises (the run's own error matters more). An
        exception without a partial result gets one, so whatever escapes carries it."""
        if isinstance(error, Exception) and getattr(error, "result", None) is None:
            with contextlib.suppress(Exception):  # e.g. an exception type that refuses attributes
                error.result = state.result(final_text(state.messages), "error")  # type: ignore[attr-defined]
        with contextlib.suppress(OSError, SessionWriteError):  # the run's own error matters more
            self.record_usage(state)
            detail = redact(describe_error(error))
            self.write({"event": "stopped", "error": type(error).__name__, "detail": detail})


def _changed(old: Sequence[Msg], new: Sequence[Msg]) -> dict[str, Msg]:
    """The messages of `new` that differ from `old` at the same position, by index."""
    skipped = shared_length(old, new)  # list comparisons in C: most messages are shared
    same = list(map(operator.is_, new[skipped:], old[skipped:]))
    changed: dict[str, Msg] = {}
    start = 0
    while True:
        try:
            index = same.index(False, start)
        except ValueError:
            break
        if new[skipped + index] != old[skipped + index]:
            changed[str(skipped + index)] = new[skipped + index]
        start = index + 1
    changed.update((str(i), new[i]) for i in range(len(old), len(new)))
    return changed
