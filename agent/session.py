"""Sessions: the run written down as it happens, so a crash loses nothing paid for.

A session is a JSONL file with one event per line, appended (flushed and fsynced)
the moment something happens:

    start     the run's id, model and first history
    reply     the assistant turn that asked for tools (text, thinking and calls), as received
    calls     the tool calls the model just asked for (before any of them runs)
    approval  a person's (or the allow list's) verdict on a gated call
    started   a gated call is about to run (written BEFORE it runs)
    result    one call's result, as soon as that call finishes
    usage     what one model call cost
    turn      committed messages (an assistant turn and its tool results)
    history   the rewritten part of the history, when pruning or compaction changed it
    stopped / end / resume   how each stretch of the run ended or began

Replaying the events (`agent.replay`) rebuilds the history, the usage (so budgets span a resume)
and the ledger the approval gate keeps: which calls were approved, started and
finished, and which irreversible actions already took effect. That ledger is what
lets `Agent.resume` finish an interrupted turn without running a finished tool
again, and refuse to repeat an irreversible call whose outcome was never recorded.

A record counts once its line is complete: a torn last line (the process died
mid-write) is ignored and cut off when the session is reopened. A damaged line
anywhere else is refused with its line number, and the file is left as it was.
Nothing in a session comes from the client's configuration, and anything shaped
like an Anthropic API key is redacted before it is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent.messages import Msg
from agent.registry import ToolCall, ToolOutcome
from agent.replay import VERSION, Recorded, Replay, SessionError, fingerprint, pending_turn, read_session

if TYPE_CHECKING:
    from agent.state import RunResult, RunState

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, one writer is on you
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MAX_RECORDED_CHARS",
    "Replay",
    "Session",
    "SessionError",
    "fingerprint",
    "pending_turn",
    "read_session",
]

MAX_RECORDED_CHARS = 200_000
"""A raw result is recorded up to this size; the full one lives in the artifact store."""
_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")


def as_text(value: Any, limit: int = MAX_RECORDED_CHARS) -> str:
    """A raw tool value as bounded text (what a session keeps of a result)."""
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit:,} more chars not recorded in the session]"


class Session:
    """The durable record of one run, and the ledger the approval gate reads.

    `Session()` keeps the ledger in memory only (every run has one, so an
    irreversible call is never repeated even without a file); `Session.create`
    and `Session.reopen` also append every event to a JSONL file.
    """

    def __init__(self, *, fsync: bool = True) -> None:
        self.path: Path | None = None
        self.fsync = fsync
        self.approvals: dict[str, bool | str] = {}
        self.started: set[str] = set()
        self.results: dict[str, Recorded] = {}
        self.done: dict[str, str] = {}
        self._file: IO[bytes] | None = None
        self._lock = threading.Lock()
        self._history: list[Msg] = []
        self._usage_written = 0

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def create(
        cls, path: str | Path, *, run_id: str, model: str, messages: Sequence[Msg], fsync: bool = True
    ) -> Session:
        """Start a new session file; refuses to overwrite one that holds a run."""
        session = cls(fsync=fsync)
        target = Path(path)
        if target.exists() and target.stat().st_size > 0:
            raise SessionError(f"{target} already holds a session: resume it, or pick a new path")
        target.parent.mkdir(parents=True, exist_ok=True)
        session._open(target)
        session._history = list(messages)
        session.write(
            {"event": "start", "v": VERSION, "run_id": run_id, "model": model, "messages": messages}
        )
        return session

    @classmethod
    def reopen(cls, path: str | Path, *, fsync: bool = True) -> tuple[Session, Replay]:
        """Open a session to continue it: lock it, replay it, cut a torn tail, seed the ledger."""
        if not Path(path).is_file():
            raise SessionError(f"no session file at {path}")
        session = cls(fsync=fsync)
        session._open(Path(path))
        try:
            replay = read_session(path)
        except BaseException:
            session.close()
            raise
        session._truncate(replay.good_bytes)
        session.approvals = dict(replay.approvals)
        session.started = set(replay.started)
        session.results = dict(replay.results)
        session.done = dict(replay.done)
        session._history = list(replay.messages)
        session._usage_written = len(replay.usage)
        if replay.stop_reason is None:
            session.write({"event": "resume"})
        return session, replay

    def _open(self, path: Path) -> None:
        """Open for appending, holding an exclusive lock: one writer per session, so two
        processes can never resume (and so run the same calls) at once."""
        file = path.open("ab")
        if fcntl is not None:
            try:
                fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                file.close()
                raise SessionError(f"{path} is in use by another running agent") from None
        self.path, self._file = path, file

    def _truncate(self, size: int) -> None:
        """Drop a torn tail, so the next record starts on a fresh line."""
        if self._file is not None and size < self._file.seek(0, os.SEEK_END):
            self._file.truncate(size)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    # -- writing ---------------------------------------------------------------------

    def write(self, event: Mapping[str, Any]) -> None:
        """Append one event and make it durable before returning."""
        if self._file is None:
            return
        line = json.dumps({**event, "t": round(time.time(), 3)}, ensure_ascii=False, default=str)
        data = (_redact(line) + "\n").encode("utf-8")
        with self._lock:
            self._file.write(data)
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())

    def record_reply(self, state: RunState, message: Msg | None) -> None:
        """The assistant turn that asked for tools, before any of them runs (so a resume
        sends it back whole, text and thinking included, not rebuilt from the calls)."""
        self.record_usage(state)
        if message is not None:
            self.write({"event": "reply", "message": message})

    def record_calls(self, calls: Sequence[ToolCall]) -> None:
        self.write(
            {"event": "calls", "calls": [{"id": c.id, "name": c.name, "input": dict(c.input)} for c in calls]}
        )

    def record_approval(self, call: ToolCall, verdict: bool | str) -> None:
        self.approvals[call.id] = verdict
        reason = None if verdict is True else verdict
        self.write(
            {
                "event": "approval",
                "id": call.id,
                "tool": call.name,
                "approved": verdict is True,
                "reason": reason,
            }
        )

    def record_started(self, call: ToolCall) -> None:
        self.started.add(call.id)
        self.write({"event": "started", "id": call.id, "tool": call.name, "input": dict(call.input)})

    def record_result(self, outcome: ToolOutcome, *, took_effect: bool = False) -> None:
        """One call's result; `took_effect` marks an irreversible action that must not repeat."""
        call = outcome.call
        recorded = Recorded(as_text(outcome.value), outcome.is_error)
        event: dict[str, Any] = {"event": "result", "id": call.id, "tool": call.name}
        event.update(content=recorded.text, is_error=recorded.is_error)
        with self._lock:
            self.results[call.id] = recorded
            if took_effect:
                self.done[fingerprint(call)] = call.id
                event["once"] = fingerprint(call)
        self.write(event)

    def record_usage(self, state: RunState) -> None:
        """The model calls billed since the last record, with the token-estimate calibration
        (so a resumed run estimates, and so checks its budgets, as the original did)."""
        kept = state.calibration
        calibration = {"ratio": kept.ratio, "samples": kept.samples, "hidden": kept.hidden}
        for step in state.usage.steps[self._usage_written :]:
            self.write({"event": "usage", "usage": step.to_json(), "calibration": calibration})
        self._usage_written = len(state.usage.steps)

    def record_turn(self, state: RunState, new: Iterable[Msg]) -> None:
        """Commit new messages; first, if pruning, compaction or a memory note rewrote the
        history since the last turn, record the messages that changed (by position)."""
        new, history = list(new), state.messages
        self.record_usage(state)
        if history is not self._history:
            changed = _changed(self._history, history)
            if changed or len(history) != len(self._history):
                self.write({"event": "history", "length": len(history), "changed": changed})
        self.write({"event": "turn", "messages": new})
        self._history = [*history, *new]

    def record_run(self, loop: Callable[[RunState], RunResult], state: RunState) -> RunResult:
        """Run `loop(state)`, writing how it ended (`end`, or `stopped` with the error)."""
        try:
            result = loop(state)
        except BaseException as error:
            with contextlib.suppress(OSError):  # the run's own error matters more than this record
                self.record_usage(state)
                self.write({"event": "stopped", "error": type(error).__name__, "detail": str(error)})
            raise
        else:
            self.record_usage(state)
            self.write({"event": "end", "stop_reason": result.stop_reason, "text": result.text})
            return result
        finally:
            self.close()


def _changed(old: Sequence[Msg], new: Sequence[Msg]) -> dict[str, Msg]:
    """The messages of `new` that differ from `old` at the same position, by index."""
    return {
        str(i): message
        for i, message in enumerate(new)
        if i >= len(old) or (message is not old[i] and message != old[i])
    }


def _redact(line: str) -> str:
    """Remove anything shaped like an API key, and the configured key itself."""
    line = _KEY_SHAPE.sub("sk-ant-[redacted]", line)
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    if len(key) >= 8 and key in line:
        line = line.replace(key, "[redacted]")
    return line
