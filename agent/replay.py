"""Reading a session file back: the events folded into what the run had done.

The writer (`agent.session.Session`) appends one JSON event per line as things happen;
this module is the other half. `read_session` folds the events into a `Replay`: the
committed history (after the last rewrite by pruning or compaction), the usage so far,
the pending calls of a turn that never finished, and the ledger of approvals, started
and finished calls that keeps an irreversible call from ever running twice. It is
read-only and tolerates a torn last line, which is a record that never happened.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from agent.messages import Msg, blocks
from agent.registry import ToolCall
from agent.usage import Usage

__all__ = ["VERSION", "Recorded", "Replay", "SessionError", "fingerprint", "pending_turn", "read_session"]

VERSION = 1

ANSWER_GOES_ON = (None, "tool_use", "pause_turn")


class SessionError(ValueError):
    """A session file that cannot be started, read or resumed; the message says why."""


@dataclass(frozen=True)
class Recorded:
    """A call's result as the session holds it."""

    text: str
    is_error: bool


def fingerprint(call: ToolCall) -> str:
    """Identifies "the same action": tool name plus canonical arguments."""
    return call.name + json.dumps(call.input, sort_keys=True, separators=(",", ":"), default=str)


def pending_turn(calls: Sequence[ToolCall]) -> Msg:
    """The assistant turn of calls whose turn was never committed, rebuilt from the
    `calls` record (any text the model wrote beside them that turn is not recorded)."""
    content = [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.input)} for c in calls]
    return {"role": "assistant", "content": content}


@dataclass
class Replay:
    """What a session file says happened (see `read_session`)."""

    run_id: str
    model: str
    messages: list[Msg]
    """The committed history, after the last compaction snapshot."""
    pending: list[ToolCall] = field(default_factory=list)
    """Calls of a turn whose results were never committed (the run died mid-turn)."""
    pending_reply: Msg | None = None
    """That turn's assistant message as the model sent it, when it was recorded."""
    usage: list[Usage] = field(default_factory=list)
    calibration: dict[str, Any] = field(default_factory=dict)
    """The token-estimate calibration as of the last model call (ratio, samples)."""
    stop_reason: str | None = None
    """Set when the run already finished: resuming it calls no model."""
    approvals: dict[str, bool | str] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)
    results: dict[str, Recorded] = field(default_factory=dict)
    done: dict[str, str] = field(default_factory=dict)
    """Fingerprints of irreversible calls that took (or may have taken) effect → call id."""
    good_bytes: int = 0
    """Length of the file up to the end of its last complete record."""
    prompt: str = ""
    """The run's request: the text of the last message the run started with."""


def read_session(path: str | Path) -> Replay:
    """Fold a session file's events into a `Replay`; read-only, tolerates a torn last line."""
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    events: list[dict[str, Any]] = []
    good = offset = 0
    for number, raw in enumerate(lines, start=1):
        complete = number < len(lines)  # a newline follows: the record was fully written
        offset += len(raw) + complete
        if not raw.strip():
            good = offset if complete else good
            continue
        if not complete:
            break  # torn last line: that record never happened
        try:
            event = json.loads(raw)
            if not isinstance(event, dict) or "event" not in event:
                raise ValueError("not an event")
        except ValueError as error:
            if all(not rest.strip() for rest in lines[number:]):
                break  # a damaged last line (crash mid-write): ignored like a torn one
            raise SessionError(
                f"{path}: line {number} is damaged ({error}); the file was not changed"
            ) from None
        events.append(event)
        good = offset
    if not events or events[0].get("event") != "start":
        raise SessionError(f"{path}: not a session file (no start record)")
    if events[0].get("v") != VERSION:
        raise SessionError(f"{path}: session format v{events[0].get('v')} is not supported (v{VERSION})")
    first = list(events[0]["messages"])
    replay = Replay(events[0]["run_id"], events[0]["model"], first, good_bytes=good)
    replay.prompt = (
        "\n\n".join(b["text"] for b in blocks(first[-1]) if b.get("type") == "text") if first else ""
    )
    for event in events[1:]:
        _fold(replay, event)
    last = replay.messages[-1] if replay.messages else {}
    steps = [u for u in replay.usage if getattr(u, "purpose", "step") == "step"]  # not summaries
    answered = steps[-1].stop_reason if steps else None
    if replay.stop_reason is None and last.get("role") == "assistant" and answered not in ANSWER_GOES_ON:
        replay.stop_reason = answered  # the final answer was committed, the end record was not
    return replay


def _fold(replay: Replay, event: Mapping[str, Any]) -> None:
    kind = event["event"]
    if kind == "reply":
        replay.pending_reply = event["message"]
    elif kind == "calls":
        replay.pending = [ToolCall(c["id"], c["name"], c["input"]) for c in event["calls"]]
    elif kind == "approval":
        replay.approvals[event["id"]] = True if event["approved"] else event["reason"]
    elif kind == "started":
        replay.started.add(event["id"])
    elif kind == "result":
        replay.results[event["id"]] = Recorded(event["content"], event["is_error"])
        if event.get("once"):
            replay.done[event["once"]] = event["id"]
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
