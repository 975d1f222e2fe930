"""What one run is and what it leaves behind.

`RunState` is everything a run accumulates (history, usage, calibration, the cache
guard, the artifact store, what extensions keep). Every overridable step receives it, so one
`Agent` holds configuration only and can serve two runs at once. `RunResult` is the
snapshot a finished (or stopped) run hands back.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agent.context.cache import PrefixGuard
from agent.context.tokens import Calibration, prompt_estimate
from agent.messages import Msg
from agent.result import RunResult
from agent.steps import Workers
from agent.tools import ToolCall
from agent.usage import RunUsage

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore

__all__ = ["RunResult", "RunState"]


@dataclass
class RunState:
    """Everything one run accumulates; hooks receive it, so one Agent can run twice at once."""

    messages: list[Msg]
    usage: RunUsage = field(default_factory=RunUsage)
    calibration: Calibration = field(default_factory=Calibration)
    step: int = 0
    cache_guard: PrefixGuard = field(default_factory=PrefixGuard)
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6])
    """Names this run's artifacts folder (and an extension's records of it)."""
    prompt: str = ""
    """This run's request, verbatim: what a compaction summary must quote (with `history=`,
    the history's first message is an older request)."""
    artifacts: ArtifactStore | None = None
    """Full tool results of this run (created on first use; see `AgentConfig.artifact_store`)."""
    pending: tuple[Msg, list[ToolCall]] | None = None
    """A turn restored mid-way (its reply and the calls it made, not yet answered): the loop
    runs those calls before its next model call. Set by whoever restores a run."""
    agent: Any = field(default=None, repr=False)
    """The `Agent` running this run, for extensions that need its options (the llm, prices,
    budgets, the artifact store). Context functions never take it."""
    extensions: list[Any] = field(default_factory=list, repr=False)
    """This run's `Extension`s, in hook order (the run's own, then the agent's)."""
    extras: dict[str, Any] = field(default_factory=dict, repr=False)
    """What extensions keep for this run, each under its own key."""
    uncertain: list[str] = field(default_factory=list)
    """Irreversible calls whose outcome is unknown, `name (id)` (`ToolOutcome.uncertain`)."""
    workers: Workers = field(default_factory=Workers, repr=False)
    """The threads this run's sync tool calls run on (closed when the run ends)."""
    measured: tuple[int, dict[str, Any], int] | None = field(default=None, repr=False)
    """(step, request, its `prompt_estimate`): the last request this step's compaction check
    measured, so the call that sends an equal request does not encode it again."""

    def result(self, text: str, stop_reason: str, detail: str | None = None) -> RunResult:
        if self.uncertain and detail is None:
            detail = (
                f"outcome unknown for {len(self.uncertain)} irreversible call(s): {', '.join(self.uncertain)}"
            )
        return RunResult(text, stop_reason, self.usage, list(self.messages), detail, tuple(self.uncertain))

    def raw_estimate(self, request: dict[str, Any]) -> int:
        """`prompt_estimate(request)`, reusing this step's measure when the request is equal to
        it (compared by content: `==` on the dicts, which skips what the two share)."""
        if self.measured is not None and self.measured[0] == self.step and self.measured[1] == request:
            return self.measured[2]
        return prompt_estimate(request)

    def with_messages(self, messages: list[Msg]) -> RunState:
        """A shallow copy holding `messages` instead (to measure a candidate history)."""
        return replace(self, messages=messages)
