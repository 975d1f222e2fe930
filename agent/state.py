"""What one run is and what it leaves behind.

`RunState` is everything a run accumulates (history, usage, calibration, the cache
guard, the session, the artifact store). Every overridable step receives it, so one
`Agent` holds configuration only and can serve two runs at once. `RunResult` is the
snapshot a finished (or stopped) run hands back.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agent.context.artifacts import ArtifactStore
from agent.context.guard import PrefixGuard
from agent.context.tokens import Calibration
from agent.messages import Msg
from agent.session import Session
from agent.usage import RunUsage, Usage

__all__ = ["RunResult", "RunState"]


@dataclass
class RunResult:
    """How a run ended: the final text, why it stopped, what it cost, what was said."""

    text: str
    stop_reason: str
    usage: RunUsage
    messages: list[Msg]
    detail: str | None = None
    """Why the run ended when that was not a normal final answer."""

    @property
    def steps(self) -> list[Usage]:
        """One usage record per model call."""
        return self.usage.steps


@dataclass
class RunState:
    """Everything one run accumulates; hooks receive it, so one Agent can run twice at once."""

    messages: list[Msg]
    usage: RunUsage = field(default_factory=RunUsage)
    calibration: Calibration = field(default_factory=Calibration)
    step: int = 0
    cache_guard: PrefixGuard = field(default_factory=PrefixGuard)
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6])
    """Names this run's artifacts folder and session records."""
    session: Session = field(default_factory=Session)
    """The run's record: approvals, started and finished calls; also a JSONL file with `session=`."""
    prompt: str = ""
    """This run's request, verbatim: what a compaction summary must quote (with `history=`,
    the history's first message is an older request)."""
    artifacts: ArtifactStore | None = None
    """Full tool results of this run (created on first use; see `agent.context.diet.store_for`)."""
    container: str | None = None
    """The code-execution container the last response ran in, sent back on the next request."""
    sent: dict[str, Any] = field(default_factory=dict, repr=False)
    """The last request written to the `request_log` (what the next one is stored as a delta of)."""
    built: list[tuple[dict[str, Any], dict[str, Any], tuple[Any, ...]]] = field(
        default_factory=list, repr=False
    )
    """The last request body built and not yet sent (`agent.context.built_once`); shared with
    the copies `with_messages` makes, as the history policy's measuring does."""

    def result(self, text: str, stop_reason: str, detail: str | None = None) -> RunResult:
        return RunResult(text, stop_reason, self.usage, list(self.messages), detail)

    def with_messages(self, messages: list[Msg]) -> RunState:
        """A shallow copy holding `messages` instead: what `dataclasses.replace` makes, without
        running `__init__` over every field (the history policy measures a candidate history
        this way at every step)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.messages = messages
        return clone
