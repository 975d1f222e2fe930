"""What the examples print as a run goes: the context economy, in step order.

Everything comes from what any user of the framework gets too: the `on_event`
events (`prune`, `compact`, tool calls) and the `agent` logger (the cache guard's
warnings). One switch, `--verbosity`, picks how much:

    0   the answer, the totals and warnings
    1   (default) plus each model call's usage line with per-step and running cache
        hit rates, each prune (which results, history tokens before -> after), each
        compaction (messages folded, tokens before -> after, and the summary itself),
        summary calls labelled as such, and warnings, each under its own step
    2   plus every tool call and result, and the cache guard's notes on why a prefix moved
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agent import Event

__all__ = ["Watch"]

Say = Callable[[str], None]


class Watch:
    """An `on_event` callback and a log handler that print through `say` at a `verbosity`."""

    def __init__(self, say: Say, verbosity: int = 1, forward: Callable[[Event], None] | None = None) -> None:
        self.say, self.verbosity, self.forward = say, verbosity, forward
        self.step = 0

    def __call__(self, event: Event) -> None:
        if self.forward is not None:
            self.forward(event)
        if event.kind == "step_start":
            self.step = event.step
        if self.verbosity >= 1 and event.kind == "prune":
            self.say(
                f"  pruned {len(event.pruned)} result(s): {', '.join(event.pruned)}; "
                f"history ~{event.tokens_before:,} -> ~{event.tokens_after:,} tokens ({event.text})"
            )
        elif self.verbosity >= 1 and event.kind == "compact":
            self.say(
                f"  compacted: {event.folded} messages folded into a summary; "
                f"history ~{event.tokens_before:,} -> ~{event.tokens_after:,} tokens; the summary:"
            )
            for line in event.text.splitlines():
                self.say(f"  | {line}")
        elif self.verbosity >= 2 and event.kind == "tool_call":
            self.say(f"  -> {event.tool}")
        elif self.verbosity >= 2 and event.kind == "tool_result":
            self.say(f"  <- {event.tool}{' (error)' if event.is_error else ''}")

    def show(self, line: str) -> None:
        """A usage line: printed from verbosity 1 on."""
        if self.verbosity >= 1:
            self.say(line)

    @contextmanager
    def logs(self) -> Iterator[None]:
        """Route the `agent` logger's warnings (and at 2, the cache guard's notes) through `say`,
        so they print under the step they belong to, not on another stream out of order
        (warnings print at every verbosity: a cache miss is worth a line even at 0)."""
        logger = logging.getLogger("agent")
        handler = _Handler(self, self.verbosity >= 2)
        level = logger.level
        logger.addHandler(handler)
        if self.verbosity >= 2 and logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)


class _Handler(logging.Handler):
    def __init__(self, watch: Watch, notes: bool) -> None:
        super().__init__(logging.INFO)
        self.watch, self.notes = watch, notes

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.watch.say(f"  warning: {record.getMessage()}")
        elif self.notes and record.name == "agent.cache":
            self.watch.say(f"  note: {record.getMessage()}")
