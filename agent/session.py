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
moved is caught on reading. Replaying the events (`agent.replay`) rebuilds the history,
the usage (so budgets span a resume) and the ledger the approval gate keeps. A call is
identified by its tool_use id AND its fingerprint (a keyed hash of tool and input),
never by the id alone: models and simulators reuse ids. What is kept verbatim and what
is redacted is explained in `agent.session_format`; in short, what a resume sends back
or runs is exact, the configured API key is never written, and the file is 0600.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.messages import Msg, as_object, final_text, shared_length
from agent.registry import ToolCall, ToolOutcome
from agent.render import describe_error
from agent.replay import Replay, pending_turn, read_session
from agent.session_file import SessionFile, sync_directory
from agent.session_format import (
    MAX_RECORDED_CHARS,
    VERSION,
    KeyMask,
    Ledger,
    Recorded,
    SessionError,
    SessionWriteError,
    as_text,
    configured_key,
    encode_line,
    fingerprint,
    redact,
)

if TYPE_CHECKING:
    from agent.state import RunResult, RunState

__all__ = [
    "MAX_RECORDED_CHARS",
    "Replay",
    "Session",
    "SessionError",
    "SessionWriteError",
    "as_text",
    "fingerprint",
    "pending_turn",
    "read_session",
]

log = logging.getLogger("agent")


class Session:
    """The durable record of one run, and the ledger the approval gate reads.

    `Session()` keeps the ledger in memory only (every run has one, so an
    irreversible call is never repeated even without a file); `Session.create`
    and `Session.reopen` also append every event to a JSONL file.
    """

    def __init__(self, *, fsync: bool = True) -> None:
        self.path: Path | None = None
        self.fsync = fsync
        self.ledger = Ledger()
        self._file: SessionFile | None = None
        self._lock = threading.RLock()
        self._history: list[Msg] = []
        self._usage_written = 0
        self._records = 0
        self._mask = KeyMask(self.ledger.key)

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def create(
        cls, path: str | Path, *, run_id: str, model: str, messages: Sequence[Msg], fsync: bool = True
    ) -> Session:
        """Start a new session file; refuses one that holds a run (checked under the lock)."""
        session, target = cls(fsync=fsync), Path(path)
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
    def reopen(cls, path: str | Path, *, fsync: bool = True) -> tuple[Session, Replay]:
        """Open a session to continue it: lock it, replay it, cut a torn tail, seed the ledger."""
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

    def fingerprint(self, call: ToolCall) -> str:
        return self.ledger.fingerprint(call)

    def record_reply(self, state: RunState, message: Msg | None) -> None:
        """The assistant turn that asked for tools, before any of them runs (so a resume
        sends it back whole, text and thinking included, not rebuilt from the calls)."""
        self.record_usage(state)
        if message is not None:
            self.write({"event": "reply", "message": message})

    def record_calls(self, calls: Sequence[ToolCall]) -> None:
        """The calls of a turn, before any runs; an id reused for another call is logged."""
        seen = self.ledger.seen
        for call in calls:
            fp = self.fingerprint(call)
            if seen.get(call.id, fp) != fp:
                log.warning(
                    "tool_use id %s was used before for a different call; %s is treated as a new call",
                    call.id,
                    call.name,
                )
            seen[call.id] = fp
        if self._file is not None:  # kept in memory only: nothing to list
            listed = [{"id": c.id, "name": c.name, "input": as_object(c.input)} for c in calls]
            self.write({"event": "calls", "calls": listed})

    def record_approval(self, call: ToolCall, verdict: bool | str) -> None:
        key = self.ledger.call_key(call)
        self.ledger.approvals[key] = verdict
        reason = None if verdict is True else redact(str(verdict))
        event = {"event": "approval", "id": call.id, "fp": key[1], "tool": call.name}
        self.write({**event, "approved": verdict is True, "reason": reason})

    def record_started(self, call: ToolCall, *, irreversible: bool = True) -> None:
        key = self.ledger.call_key(call)
        self.ledger.started[key] = irreversible
        event = {"event": "started", "id": call.id, "fp": key[1], "tool": call.name}
        self.write({**event, "irreversible": irreversible})

    def record_result(self, outcome: ToolOutcome, *, took_effect: bool = False) -> None:
        """One call's result; `took_effect` marks an irreversible action that must not repeat.
        Never raises on the value (any value is recorded as text); a failed write raises
        `SessionWriteError` after the in-memory ledger is updated."""
        call = outcome.call
        recorded = Recorded(as_text(outcome.value), bool(outcome.is_error))
        with self._lock:
            key = self.ledger.call_key(call)
            self.ledger.results[key] = recorded
            if took_effect:
                self.ledger.done[key[1]] = call.id
            event = {"event": "result", "id": call.id, "fp": key[1], "tool": call.name}
            self.write(
                {**event, "content": recorded.text, "is_error": recorded.is_error, "once": took_effect}
            )

    def record_usage(self, state: RunState) -> None:
        """The model calls billed since the last record, with the token-estimate calibration
        (so a resumed run estimates, and so checks its budgets, as the original did)."""
        if self._file is None:  # kept in memory only: nothing to write, nothing to encode
            self._usage_written = len(state.usage.steps)
            return
        kept = state.calibration
        calibration = {"ratio": kept.ratio, "samples": kept.samples, "hidden": kept.hidden}
        for step in state.usage.steps[self._usage_written :]:
            self.write({"event": "usage", "usage": step.to_json(), "calibration": calibration})
            self._usage_written += 1

    def record_turn(self, state: RunState, new: Iterable[Msg]) -> None:
        """Commit new messages; first, if pruning, compaction or a memory note rewrote the
        history since the last turn, record the messages that changed (by position)."""
        new, history = list(new), state.messages
        self.record_usage(state)
        if self._file is None:  # kept in memory only: the history is the run's, not ours to diff
            return
        if history is not self._history:
            changed = _changed(self._history, history)
            if changed or len(history) != len(self._history):
                self.write({"event": "history", "length": len(history), "changed": changed})
        self.write({"event": "turn", "messages": new})
        self._history = [*history, *new]

    def record_run(self, loop: Callable[[RunState], RunResult], state: RunState) -> RunResult:
        """Run `loop(state)`, writing how it ended (`end`, or `stopped` with the error).
        Whatever escapes carries the partial `RunResult` in `.result`."""
        try:
            result = loop(state)
            self.record_usage(state)
            self.write({"event": "end", "stop_reason": result.stop_reason, "text": redact(result.text)})
            return result
        except BaseException as error:
            if isinstance(error, Exception) and getattr(error, "result", None) is None:
                with contextlib.suppress(Exception):  # e.g. an exception type that refuses attributes
                    error.result = state.result(final_text(state.messages), "error")  # type: ignore[attr-defined]
            with contextlib.suppress(OSError, SessionWriteError):  # the run's own error matters more
                self.record_usage(state)
                detail = redact(describe_error(error))
                self.write({"event": "stopped", "error": type(error).__name__, "detail": detail})
            raise
        finally:
            self.close()


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
