"""Reading a session file back: the events folded into what the run had done.

The writer (`agent.ext.sessions.session.SessionLog`) appends one JSON event per line as things happen;
this module is the other half. `read_session` folds the events into a `Replay`: the
committed history (after the last rewrite by pruning or compaction), the usage so far,
the pending calls of a turn that never finished, and the ledger of approvals, started
and finished calls that keeps an irreversible call from ever running twice.

It is read-only and strict. A torn last line is a record that never happened and is
ignored. Anything else that is not what the writer writes is refused with a
`SessionError` naming the line: a line that is not JSON, a record of the wrong shape,
a second `start`, records duplicated, missing or out of order (each carries its number,
so two writers on one file, or a file spliced by hand, cannot pass for one run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from agent.ext.approval.ledger import Ledger, Recorded
from agent.ext.sessions.session_format import (
    CHECKSUM,
    READABLE,
    VERSION,
    KeyMask,
    SessionError,
    configured_key,
    without_checksum,
)
from agent.ext.sessions.session_shapes import check_record
from agent.messages import Msg, as_object, blocks
from agent.tools import ToolCall
from agent.usage import Usage

__all__ = ["VERSION", "Recorded", "Replay", "SessionError", "pending_turn", "read_session"]

ANSWER_GOES_ON = (None, "tool_use", "pause_turn")


def pending_turn(calls: Sequence[ToolCall]) -> Msg:
    """The assistant turn of calls whose turn was never committed, rebuilt from the
    `calls` record (any text the model wrote beside them that turn is not recorded)."""
    content = [{"type": "tool_use", "id": c.id, "name": c.name, "input": as_object(c.input)} for c in calls]
    return {"role": "assistant", "content": content}


@dataclass
class Replay:
    """What a session file says happened (see `read_session`)."""

    run_id: str
    model: str
    messages: list[Msg]
    """The committed history, after the last compaction snapshot."""
    ledger: Ledger = field(default_factory=Ledger)
    """Approvals, started and finished calls, irreversible calls that took effect."""
    pending: list[ToolCall] = field(default_factory=list)
    """Calls of a turn whose results were never committed (the run died mid-turn)."""
    pending_reply: Msg | None = None
    """That turn's assistant message as the model sent it, when it was recorded."""
    usage: list[Usage] = field(default_factory=list)
    calibration: dict[str, Any] = field(default_factory=dict)
    """The token-estimate calibration as of the last model call (ratio, samples)."""
    stop_reason: str | None = None
    """Set when the run already finished: resuming it calls no model."""
    good_bytes: int = 0
    """Length of the file up to the end of its last complete record."""
    records: int = 0
    """How many complete records the file holds (the next record's number)."""
    prompt: str = ""
    """The run's request: the text of the last message the run started with."""
    unrestored: set[str] = field(default_factory=set)
    """Tags of API keys masked in the file that the configured key does not match."""


def read_session(path: str | Path) -> Replay:
    """Fold a session file's events into a `Replay`; read-only, tolerates a torn last line."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise SessionError(f"no session file at {path}") from None
    except OSError as error:
        raise SessionError(f"cannot read the session at {path}: {error}") from error
    lines = data.split(b"\n")
    events: list[tuple[int, dict[str, Any]]] = []
    mask: KeyMask | None = None
    unrestored: set[str] = set()
    good = offset = 0
    checked = False  # v3 and later: every record carries a checksum of its line
    for number, raw in enumerate(lines, start=1):
        complete = number < len(lines)  # a newline follows: the record was fully written
        offset += len(raw) + complete
        if not raw.strip():
            good = offset if complete else good
            continue
        if not complete:
            if checked and _whole(raw):
                raise SessionError(
                    f"{path}: line {number} is a whole record whose line end is damaged; the file "
                    "was not changed (restore it, or start a new run)"
                )
            break  # torn last line: that record never happened
        try:
            event = _parse(raw, mask, unrestored, checked if events else None)
        except ValueError as error:
            last = all(not rest.strip() for rest in lines[number:])
            if last and (not checked or not raw.strip(b"\0")):
                break  # a damaged last line of a v2 file, or a zero-filled tail: never written
            raise SessionError(
                f"{path}: line {number} is damaged ({error}); the file was not changed. A damaged "
                "record is never replayed (it could name another call): restore the file, or start a new run"
            ) from None
        if not events:
            mask = _start_mask(path, number, event)
            event = _parse(raw, mask, unrestored, None)
            checked = event.get("v", 0) >= 3
            if checked and not CHECKSUM.search(raw):
                raise SessionError(f"{path}: line {number}: a v3 start record without its checksum")
        elif event.get("n") != len(events):
            raise SessionError(
                f"{path}: line {number} is record #{event.get('n')}, expected #{len(events)}: records "
                "are duplicated, missing or out of order (two writers, or an edited file)"
            )
        events.append((number, event))
        good = offset
    if not events:
        raise SessionError(_no_record(path, data))
    return _fold_all(path, events, good, unrestored)


def _whole(raw: bytes) -> bool:
    """A last line holding a complete record followed by one byte that is not its newline: a
    damaged line end. (A record without its newline is a write cut short, never committed.)"""
    try:
        without_checksum(raw[:-1])
    except ValueError:
        return False
    return True


def _parse(raw: bytes, mask: KeyMask | None, unrestored: set[str], checked: bool | None) -> dict[str, Any]:
    """One line as an event. `checked`: its checksum must be there and match (True), or is
    checked if it is there (None: a start record, whose version is read from it)."""
    if checked or (checked is None and CHECKSUM.search(raw) is not None):
        raw = without_checksum(raw)
    if mask is not None:
        raw, foreign = mask.restore(raw)
        unrestored |= foreign
    try:
        event = json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        raise ValueError("not an event")
    return event


def _start_mask(path: str | Path, number: int, event: dict[str, Any]) -> KeyMask:
    """Check the first record is a start of this format; the mask that restores the API key."""
    if event.get("event") != "start":
        raise SessionError(f"{path}: not a session file (line {number} is not a start record)")
    if event.get("v") not in READABLE:
        raise SessionError(
            f"{path}: session format v{event.get('v')} is not supported (this version reads "
            f"v{READABLE[0]} to v{VERSION}); "
            "finish that run with the version that wrote it, or start a new one"
        )
    if event.get("n") != 0:
        raise SessionError(f"{path}: line {number}: the start record is #{event.get('n')}, not #0")
    try:
        key = bytes.fromhex(event["fp_key"])
    except (KeyError, TypeError, ValueError):
        raise SessionError(f"{path}: line {number}: the start record has no valid fp_key") from None
    return KeyMask(key, configured_key())


def _no_record(path: str | Path, data: bytes) -> str:
    body = data.strip(b"\0 \t\r\n")
    if not data:
        return f"{path}: empty, not a session file (no start record)"
    if not body or body.startswith(b'{"event":"start"'):
        return (
            f"{path}: torn inside its first record: the run died while starting, before any model "
            "call or tool ran, so there is nothing to resume; run the prompt again with the same "
            "Session(path) (the file is reused)"
        )
    return f"{path}: not a session file (no start record)"


def _fold_all(
    path: str | Path, events: list[tuple[int, dict[str, Any]]], good: int, unrestored: set[str]
) -> Replay:
    number, start = events[0]
    try:
        check_record(start)
    except (SessionError, KeyError, TypeError, ValueError) as error:
        raise SessionError(f"{path}: line {number}: malformed start record: {error}") from None
    first = list(start["messages"])
    ledger = Ledger(bytes.fromhex(start["fp_key"]), canonical=start["v"] >= 3)
    replay = Replay(start["run_id"], start["model"], first, ledger)
    replay.good_bytes, replay.records, replay.unrestored = good, len(events), unrestored
    replay.prompt = (
        "\n\n".join(str(b.get("text", "")) for b in blocks(first[-1]) if b.get("type") == "text")
        if first
        else ""
    )
    for number, event in events[1:]:
        try:
            check_record(event)
            _fold(replay, event)
        except (SessionError, KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
            raise SessionError(
                f"{path}: line {number}: malformed {event.get('event')!r} record "
                f"({type(error).__name__}: {error}); the file was not changed"
            ) from None
    if replay.pending and replay.pending_reply is not None:
        asked = [
            (b.get("id"), b.get("name"), b.get("input"))
            for b in blocks(replay.pending_reply)
            if b.get("type") == "tool_use"
        ]
        if asked != [(c.id, c.name, as_object(c.input)) for c in replay.pending]:
            raise SessionError(f"{path}: the last reply and its calls record disagree; the file was edited")
    last = replay.messages[-1] if replay.messages else {}
    steps = [u for u in replay.usage if getattr(u, "purpose", "step") == "step"]  # not summaries
    answered = steps[-1].stop_reason if steps else None
    if replay.stop_reason is None and last.get("role") == "assistant" and answered not in ANSWER_GOES_ON:
        replay.stop_reason = answered  # the final answer was committed, the end record was not
    return replay


def _fold(replay: Replay, event: Mapping[str, Any]) -> None:
    kind, ledger = event["event"], replay.ledger
    if kind == "start":
        raise SessionError("a second start record (two runs in one file?)")
    if kind == "reply":
        replay.pending_reply = event["message"]
    elif kind == "calls":
        replay.pending = [ToolCall(c["id"], c["name"], c["input"]) for c in event["calls"]]
        for call in replay.pending:
            ledger.seen[call.id] = ledger.fingerprint(call)
    elif kind == "approval":
        ledger.approvals[event["id"], event["fp"]] = True if event["approved"] else str(event.get("reason"))
    elif kind == "started":
        ledger.started[event["id"], event["fp"]] = bool(event.get("irreversible", True))
    elif kind == "result":
        ledger.results[event["id"], event["fp"]] = Recorded(event["content"], event["is_error"])
        if event.get("once"):
            ledger.done[event["fp"]] = event["id"]
    elif kind == "usage":
        replay.calibration = dict(event.get("calibration") or {})
        known = {f.name for f in fields(Usage)}
        record = {k: v for k, v in event["usage"].items() if k in known}
        replay.usage.append(Usage(**{**record, "tools": tuple(record.get("tools", ()))}))
    elif kind == "history":
        changed, old = event["changed"], replay.messages
        replay.messages = [changed[str(i)] if str(i) in changed else old[i] for i in range(event["length"])]
    elif kind == "turn":
        replay.messages = [*replay.messages, *event["messages"]]
        replay.pending, replay.pending_reply = [], None
    elif kind == "end":
        replay.stop_reason = event["stop_reason"]
