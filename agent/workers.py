"""Daemon threads for sync tools, kept for the next call instead of started for each one.

Starting a thread costs more than a fast tool's whole run (a dictionary lookup, a small
JSON page), and a run starts one per call, every step. So a thread that finishes its call
waits a while for the next one. What each call gets is unchanged:

* its own thread at once: a call never queues behind another (with no idle thread, a new
  one starts), so the calls of one turn run in parallel, and a hung tool holds only its
  own thread, abandoned at its timeout as before;
* a daemon thread, so a tool that never returns cannot keep the process alive on exit;
* a fresh `contextvars` context, as a new thread would give it (a variable one tool sets
  does not leak into the next call run on the same thread).

Thread-local storage (`threading.local`) does carry over between calls on one thread,
as in any thread pool. An idle thread ends after `IDLE_SECONDS`.
"""

from __future__ import annotations

import contextvars
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE_SECONDS", "WORKERS", "Workers"]

log = logging.getLogger("agent")

IDLE_SECONDS = 30.0

Job = tuple[Callable[..., Any], tuple[Any, ...], str]


class _Worker:
    def __init__(self, pool: Workers) -> None:
        self.pool = pool
        self.jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self.serve, name="agent-worker", daemon=True)

    def serve(self) -> None:
        while True:
            try:
                fn, args, name = self.jobs.get(timeout=self.pool.idle_seconds)
            except queue.Empty:
                if self.pool.retire(self):
                    return
                continue  # handed a job just as it timed out: the job is on its way
            self.thread.name = name
            try:
                contextvars.Context().run(fn, *args)
            except BaseException as error:  # the job reports its own failures; this is a bug guard
                log.error("worker job %s raised %s: %s", name, type(error).__name__, error)
            finally:
                self.thread.name = "agent-worker"
                del fn, args  # nothing of the call stays alive while the thread waits
            self.pool.rest(self)


class Workers:
    """A set of daemon threads: `start(fn, *args)` runs `fn(*args)` on an idle one, or on a
    new one when none is idle. `fn` must handle its own exceptions (one that escapes is
    logged and dropped)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def start(self, fn: Callable[..., Any], *args: Any, name: str = "agent-worker") -> None:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self)
            worker.jobs.put((fn, args, name))
            worker.thread.start()
        else:
            worker.jobs.put((fn, args, name))

    def rest(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def retire(self, worker: _Worker) -> bool:
        """True when `worker` may end: it is idle, and nobody has just handed it a job."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False

    @property
    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def forget(self) -> None:
        """In a forked child: the parent's threads do not exist there."""
        self._lock = threading.Lock()
        self._idle = []


WORKERS = Workers()
"""The process's workers, shared by every registry and run (a thread serves one call at a time)."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WORKERS.forget)
