"""A sync call on the calling thread, stopped at its timeout by SIGALRM.

A sync tool runs on a worker thread so that its timeout can be kept: the caller waits for
the thread, up to the timeout, and abandons it if it hangs. That costs two thread wake-ups
per call, ~40 µs on a warm core and ~100 µs on this project's VMs: at 200 messages, an
eighth of the loop's own time per step of a run whose turns make one sync call each.

On the main thread of a POSIX process the timeout can be kept without a thread: an interval
timer raises `AlarmExpired` into the call when it runs out. That also stops a call blocked in
`sleep`, on a lock or on a socket (Python retries no interrupted system call once a handler
has raised), where a worker thread would only be abandoned, still running. A C call that
never returns to Python is stopped only once it does: the one case a thread handles better.

Two promises of the thread must hold here too. A KeyboardInterrupt the tool raises itself is
that call's failure, while the user's Ctrl-C stops the run: so SIGINT is watched during the
call, and the user's arrives as `UserInterrupt`. And nothing else may own the signals: this
is used only while SIGALRM and SIGINT have Python's own handlers and no timer runs; both are
put back as they were.
"""

from __future__ import annotations

import importlib
import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

_raw: Any
"""The C module `signal` wraps: its handlers come back as they are, not as enums (a conversion
that raises and catches inside, some µs a call, six calls a step)."""
try:
    _raw = importlib.import_module("_signal")
except ImportError:  # pragma: no cover - not CPython
    _raw = signal

__all__ = ["AlarmExpired", "UserInterrupt", "alarm_available", "call_here"]

T = TypeVar("T")


class AlarmExpired(BaseException):
    """The call ran past its timeout. A BaseException, so that a tool's own `except Exception`
    does not swallow it."""


class UserInterrupt(KeyboardInterrupt):
    """Ctrl-C (SIGINT) while a call ran on this thread: the user's, not the tool's."""


def alarm_available(timeout: float | None) -> bool:
    """Whether a call with `timeout` may run on this thread through `call_here`."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    if _raw.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    if timeout is None:
        return True
    return _raw.getsignal(signal.SIGALRM) == signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL)[0] == 0


def call_here(fn: Callable[..., T], timeout: float | None, *args: Any) -> T:
    """`fn(*args)`, interrupted with `AlarmExpired` after `timeout` seconds (never, if None); a
    Ctrl-C meanwhile raises `UserInterrupt`. Call only where `alarm_available(timeout)` said so."""
    armed = True

    def ring(signum: int, frame: Any) -> None:
        if armed:  # a late signal, after the call returned, is dropped
            raise AlarmExpired(f"{timeout:g}s")

    def interrupt(signum: int, frame: Any) -> None:
        raise UserInterrupt if armed else KeyboardInterrupt

    previous_int = _raw.signal(signal.SIGINT, interrupt)
    previous_alarm = _raw.signal(signal.SIGALRM, ring) if timeout is not None else None
    try:
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            return fn(*args)
        finally:
            armed = False
            if timeout is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        if previous_alarm is not None:
            _raw.signal(signal.SIGALRM, previous_alarm)
        _raw.signal(signal.SIGINT, previous_int)
