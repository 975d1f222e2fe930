"""The never-twice ledger: what the run already knows about each call.

One `Ledger` per run, in `run.extras[LEDGER]`: the verdicts given, the gated calls
started, every result, and the irreversible calls that took (or may have taken) effect.
The approval gate reads it before each call and writes to it as it decides; a session
(`agent.ext.sessions`) seeds it from its file on resume and is told each entry as it is
made (`journal`), so the file holds it before the call goes on. Without a session it
lives in memory, and "never twice" still holds within the run.

A call is matched on its tool_use id AND a fingerprint (a keyed hash of tool and
input), never on the id alone: an id reused for another call (a model or simulator that
restarts its ids after a resume) is a new call, and a recorded verdict or result never
passes to it. The fingerprint is taken over the input as the tool will receive it:
validated by the tool's own model, defaults filled (`refund(order_id=42)`, `42.0`, `"42"`
and `42` with the default `note=""` are one action, as pydantic makes them one call).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.render import renderable, safe_text
from agent.tools import Tool, ToolCall, ToolOutcome

if TYPE_CHECKING:
    from agent.state import RunState

__all__ = [
    "LEDGER",
    "MAX_RECORDED_CHARS",
    "CallKey",
    "Ledger",
    "Recorded",
    "as_text",
    "canonical_input",
    "fingerprint",
    "ledger_of",
    "to_json",
    "took_effect",
    "tool_for",
]

log = logging.getLogger("agent")

LEDGER = "ledger"
"""The key of the run's ledger in `RunState.extras` (shared by approval and sessions)."""
MAX_RECORDED_CHARS = 200_000
"""A raw result is kept up to this size; the full one lives in the artifact store."""

CallKey = tuple[str, str]
"""(tool_use id, fingerprint): one call. An id alone is not enough (ids get reused)."""


@dataclass(frozen=True)
class Recorded:
    """A call's result as the ledger holds it."""

    text: str
    is_error: bool


def canonical_input(call: ToolCall, tool_: Tool | None) -> Any:
    """The call's input as the tool will receive it (validated, defaults filled, as JSON);
    the raw input when there is no such tool or the input does not validate (it will not run)."""
    arguments = dict(call.input) if isinstance(call.input, Mapping) else call.input
    if tool_ is None or not isinstance(arguments, dict):
        return arguments
    try:
        return tool_.input_model.model_validate(arguments).model_dump(mode="json", by_alias=True)
    except Exception:
        return arguments


def fingerprint(call: ToolCall, key: bytes, tool_: Tool | None = None) -> str:
    """Identifies "the same action": a keyed hash of the tool name and its canonical input
    (`canonical_input`: what `tool_` will be called with, when the tool is given)."""
    text = f"{call.name}\0{to_json(canonical_input(call, tool_), sort_keys=True)}"
    return hmac.digest(key, text.encode("utf-8", "surrogatepass"), "sha256").hex()[:32]  # one C call


def took_effect(outcome: ToolOutcome) -> bool:
    """An irreversible call that succeeded, or may have: it timed out (and may still be
    running) or its outcome is unknown. Any of these blocks an identical repeat."""
    if outcome.tool is None or not outcome.tool.irreversible:
        return False
    return not outcome.is_error or outcome.uncertain


Journal = Callable[[dict[str, Any]], None]


@dataclass
class Ledger:
    """What the approval gate needs to know about every call of the run."""

    key: bytes = field(default_factory=lambda: os.urandom(16))
    """The fingerprint key (random per run; a session keeps it in its `start` record)."""
    approvals: dict[CallKey, bool | str] = field(default_factory=dict)
    started: dict[CallKey, bool] = field(default_factory=dict)
    """Calls whose `started` marker was written → whether they were irreversible."""
    results: dict[CallKey, Recorded] = field(default_factory=dict)
    done: dict[str, str] = field(default_factory=dict)
    """Fingerprints of irreversible calls that took (or may have taken) effect → call id."""
    seen: dict[str, str] = field(default_factory=dict)
    """tool_use id → fingerprint of the latest call that used it."""
    journal: Journal | None = field(default=None, repr=False, compare=False)
    """Told each entry (`approval`, `started`, `result`) the moment it is made, before the
    call goes on: a session writes it down there. It may raise (a full disk)."""

    lookup: Callable[[str], Tool | None] | None = field(default=None, repr=False, compare=False)
    """The run's tools by name, so a call is fingerprinted on its validated input (set by
    `ledger_of` from the running agent)."""
    canonical: bool = True
    """False for a ledger read back from a v2 session file, whose fingerprints were taken over
    the raw input: they are matched the way they were written."""

    def fingerprint(self, call: ToolCall) -> str:
        tool_ = self.lookup(call.name) if self.lookup is not None and self.canonical else None
        return fingerprint(call, self.key, tool_)

    def call_key(self, call: ToolCall) -> CallKey:
        return call.id, self.fingerprint(call)

    # -- entries -----------------------------------------------------------------------

    def listed(self, call: ToolCall) -> None:
        """The model asked for `call`; an id used before for a different call is logged."""
        fp = self.fingerprint(call)
        if self.seen.get(call.id, fp) != fp:
            log.warning(
                "tool_use id %s was used before for a different call; %s is treated as a new call",
                call.id,
                call.name,
            )
        self.seen[call.id] = fp

    def approve(self, call: ToolCall, verdict: bool | str) -> None:
        """A verdict on a gated call: True, or the reason it was denied."""
        key = self.call_key(call)
        self.approvals[key] = verdict
        reason = None if verdict is True else str(verdict)
        self._tell("approval", call, key, approved=verdict is True, reason=reason)

    def start(self, call: ToolCall, *, irreversible: bool) -> None:
        """A gated call is about to run (told before it runs: after a crash, it may have)."""
        key = self.call_key(call)
        self.started[key] = irreversible
        self._tell("started", call, key, irreversible=irreversible)

    def record(self, outcome: ToolOutcome) -> None:
        """One call's outcome, once (a call already recorded keeps its first record). Never
        raises on the value (it is kept as bounded text); a journal that fails raises after
        the ledger is updated."""
        call = outcome.call
        key = self.call_key(call)
        if key in self.results:
            return
        recorded = Recorded(as_text(outcome.value), bool(outcome.is_error))
        once = took_effect(outcome)
        self.results[key] = recorded
        if once:
            self.done[key[1]] = call.id
        self._tell("result", call, key, content=recorded.text, is_error=recorded.is_error, once=once)

    def _tell(self, event: str, call: ToolCall, key: CallKey, **fields: Any) -> None:
        if self.journal is not None:
            self.journal({"event": event, "id": call.id, "fp": key[1], "tool": call.name, **fields})

    # -- what a call already has ---------------------------------------------------------

    def recorded(self, call: ToolCall, tool_: Tool | None) -> ToolOutcome | None:
        """The result recorded for this very call (same id, tool and input), if any."""
        recorded = self.results.get(self.call_key(call))
        return None if recorded is None else ToolOutcome(call, recorded.text, recorded.is_error, tool=tool_)

    def settled(self, call: ToolCall, tool_: Tool | None) -> ToolOutcome | None:
        """The outcome a call already has (resume, repeats), or None: its recorded result;
        "outcome unknown" for a call started and never finished (it may have taken effect,
        so it is NOT run again); "already done" for an irreversible call repeating one that
        took effect in this run (same tool, same arguments). Ask before the call is marked
        `started`: after, it reads as started and unfinished."""
        if (recorded := self.recorded(call, tool_)) is not None:
            return recorded
        key = self.call_key(call)
        irreversible = tool_ is not None and tool_.irreversible
        if self.started.get(key) or (key in self.started and irreversible):
            if tool_ is not None and tool_.idempotent:  # its backend acts once per key: run it
                log.warning("%s was started and its outcome is unknown: run again with its key", call.name)
                return None  # again, with the same key (the run's id and this call's): exactly once
            return ToolOutcome(
                call,
                f"outcome unknown: {call.name} was started but the run stopped before its result was "
                "recorded. It was NOT run again, so it is done at most once. Check whether it took "
                "effect (look it up) before deciding anything; do not simply retry it.",
                True,
                tool=tool_,
            )
        if (earlier := self.done.get(key[1])) is not None:  # recorded as irreversible when it ran
            before = self.results.get((earlier, key[1]))
            said = f" It returned: {before.text[:500]}" if before is not None else ""
            return ToolOutcome(
                call,
                f"already done: {call.name} with these exact arguments already ran in this run "
                f"(call {earlier}) and is irreversible, so it was not run again.{said}",
                True,
                tool=tool_,
            )
        return None


def ledger_of(run: RunState) -> Ledger:
    """The run's ledger, created (in memory) on first use."""
    ledger: Ledger = run.extras.setdefault(LEDGER, Ledger())
    if ledger.lookup is None and run.agent is not None:
        ledger.lookup = run.agent.registry.get
    return ledger


def tool_for(run: RunState, call: ToolCall) -> Tool | None:
    """The tool `call` names in the running agent's registry (None: no such tool). A run
    with no agent fails loudly here: a gated tool must never pass for an unknown one."""
    if run.agent is None:
        raise RuntimeError("this run has no agent: run it through Agent.arun_state")
    tool_: Tool | None = run.agent.registry.get(call.name)
    return tool_


# -- values as text, never raising ---------------------------------------------------------------


_ENCODERS = {
    (sort_keys, ascii): json.JSONEncoder(
        ensure_ascii=ascii, separators=(",", ":"), sort_keys=sort_keys, default=safe_text
    )
    for sort_keys in (False, True)
    for ascii in (False, True)
}
"""The four encoders `to_json` needs, made once (`json.dumps` with options makes one a call)."""


def to_json(value: Any, *, sort_keys: bool = False, ascii: bool = False) -> str:
    """Compact JSON text of any value; never raises."""
    options: dict[str, Any] = {"ensure_ascii": ascii, "separators": (",", ":"), "sort_keys": sort_keys}
    try:
        return _ENCODERS[sort_keys, ascii].encode(value)
    except (TypeError, ValueError, RecursionError, OverflowError):
        pass
    try:
        return json.dumps(renderable(value), default=safe_text, **options)
    except (TypeError, ValueError, RecursionError, OverflowError):
        return json.dumps(safe_text(value), **options)


def as_text(value: Any, limit: int = MAX_RECORDED_CHARS) -> str:
    """A raw tool value as bounded text (what the ledger keeps of a result); never raises."""
    text = safe_text(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit:,} more chars not recorded in the session]"
