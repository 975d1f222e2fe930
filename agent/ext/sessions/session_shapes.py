"""The shape of each session record, checked before a record is folded into a `Replay`.

A line can be valid JSON and still not be a record the writer could have written: a
string where a list of messages belongs, a call without an id, a usage with a token
count of "many". Folding such a record would fail later and far away (a `KeyError` in
the loop, an invalid request to the API after a resume was paid for), so each record
is checked here first and refused with a `SessionError` naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.ext.sessions.session_format import SessionError

__all__ = ["check_record"]

ROLES = ("user", "assistant")
USAGE_INTS = ("step", "uncached", "cache_read", "cache_write", "output")


def _need(record: dict[str, Any], name: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
    if name not in record:
        if optional:
            return None
        raise SessionError(f"missing {name!r}")
    value = record[name]
    if optional and value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
        raise SessionError(f"{name!r} is {type(value).__name__}, not {_names(kind)}")
    return value


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _types(kind))


def check_message(message: Any, role: str | None = None) -> None:
    """A wire-shaped message: a role, and text or a list of typed blocks."""
    if not isinstance(message, dict):
        raise SessionError(f"a message is {type(message).__name__}, not an object")
    if message.get("role") not in ((role,) if role else ROLES):
        raise SessionError(f"a message has role {message.get('role')!r}")
    content = message.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise SessionError(f"a message's content is {type(content).__name__}")
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise SessionError("a content block has no type")


def _messages(record: dict[str, Any], name: str = "messages") -> None:
    for message in _need(record, name, list):
        check_message(message)


def _start(record: dict[str, Any]) -> None:
    for name in ("run_id", "model", "fp_key"):
        _need(record, name, str)
    _messages(record)
    if not record["messages"]:
        raise SessionError("the start record holds no message (a run starts with its prompt)")


def _reply(record: dict[str, Any]) -> None:
    check_message(_need(record, "message", dict), "assistant")


def _calls(record: dict[str, Any]) -> None:
    for call in _need(record, "calls", list):
        if not isinstance(call, dict):
            raise SessionError("a call is not an object")
        _need(call, "id", str)
        _need(call, "name", str)
        _need(call, "input", dict)


def _call_ref(record: dict[str, Any]) -> None:
    _need(record, "id", str)
    _need(record, "fp", str)


def _approval(record: dict[str, Any]) -> None:
    _call_ref(record)
    _need(record, "approved", bool)
    _need(record, "reason", str, optional=True)


def _started(record: dict[str, Any]) -> None:
    _call_ref(record)
    _need(record, "irreversible", bool, optional=True)


def _result(record: dict[str, Any]) -> None:
    _call_ref(record)
    _need(record, "content", str)
    _need(record, "is_error", bool)
    _need(record, "once", bool, optional=True)


def _usage(record: dict[str, Any]) -> None:
    usage = _need(record, "usage", dict)
    for name in USAGE_INTS:
        _need(usage, name, int)
    _need(usage, "model", str)
    _need(usage, "cost_usd", (int, float), optional=True)
    _need(record, "calibration", dict, optional=True)


def _history(record: dict[str, Any]) -> None:
    length = _need(record, "length", int)
    for index, message in _need(record, "changed", dict).items():
        if not index.isdigit() or int(index) >= length:
            raise SessionError(f"changed message index {index!r} is outside 0..{length - 1}")
        check_message(message)


def _end(record: dict[str, Any]) -> None:
    _need(record, "stop_reason", str)


CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "start": _start,
    "reply": _reply,
    "calls": _calls,
    "approval": _approval,
    "started": _started,
    "result": _result,
    "usage": _usage,
    "history": _history,
    "turn": _messages,
    "stopped": lambda record: None,
    "end": _end,
    "resume": lambda record: None,
}


def check_record(record: dict[str, Any]) -> None:
    """Raise `SessionError` unless `record` has the shape its kind requires."""
    check = CHECKS.get(record.get("event"))  # type: ignore[arg-type]
    if check is None:
        raise SessionError(f"unknown record kind {record.get('event')!r}")
    check(record)
