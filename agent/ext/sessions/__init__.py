"""Sessions: the run written down as it happens, so a crash loses nothing paid for.

    agent.run("Refund A1.", extensions=[Session("runs/refund.jsonl")])
    # ... the process dies ...
    resume(agent, "runs/refund.jsonl")  # goes on where it stopped

`Session(path)` appends every event of the run to a JSONL file the moment it happens,
each made durable before the run goes on (the records: `agent.ext.sessions.session`).
`resume` reopens the file (locked: one writer at a time), replays it into a `RunState`
(the history, the usage, so budgets span both lives, and the never-twice ledger) and
runs on from there. A turn that died mid-way is finished first: a call with a recorded
result is not run again, and an irreversible call that started without a recorded
result is reported to the model as of unknown outcome, never repeated. A run that had
finished comes back as it was, calling no model.

How it meets approval (`agent.ext.approval`): the run's ledger is the one record of
its calls, kept in `run.extras` under `agent.ext.approval.ledger.LEDGER`. A session puts
its ledger there before any hook reads it (the replayed one, on resume) and is its
journal: each verdict, `started` marker and result the approval gate enters is written
down as it is entered, before the call runs. A session also enters each result itself
(`after_tool`, once per call whoever is first) and answers a call the file holds a result
for with that result (`before_tool`), so a resumed run loses no result even without an
approval gate; the rest of "never twice" (started and unfinished, already done, twins) is
the gate's, which the core requires for every gated call anyway.

Why an extension: where a run is kept (a file here, a database in `agent.ext.durable`)
is a deployment's choice, and a learner reads the loop without it. A `Session` is
per run: pass it to `run`, not to `Agent`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent.context.tokens import Calibration
from agent.ext.approval.ledger import LEDGER, ledger_of, tool_for
from agent.ext.sessions.replay import Replay, pending_turn, read_session
from agent.ext.sessions.session import SessionLog
from agent.ext.sessions.session_format import SessionError, SessionWriteError
from agent.extension import Extension
from agent.messages import final_text, reply_turn, text_of
from agent.state import RunResult, RunState
from agent.steps import run_sync
from agent.usage import RunUsage

if TYPE_CHECKING:
    from anthropic.types import Message

    from agent.loop import Agent
    from agent.messages import Msg
    from agent.tools import ToolCall, ToolOutcome

__all__ = ["Replay", "Session", "SessionError", "SessionWriteError", "aresume", "read_session", "resume"]

KEY = "session"
"""Key of the run's `SessionLog` in `RunState.extras`."""


class Session(Extension):
    """Records one run to the JSONL file at `path` (created; an existing run is refused)."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path, self.fsync = Path(path), fsync

    async def start(self, run: RunState) -> None:
        if any(isinstance(ext, Session) and ext is not self for ext in run.extensions):
            raise SessionError("a run is recorded in one session file: pass one Session")
        ledger = ledger_of(run)  # on resume, the replayed one (`aresume` opened the file)
        if KEY not in run.extras:
            model = str(getattr(run.agent, "model", ""))
            run.extras[KEY] = SessionLog.create(
                self.path,
                run_id=run.run_id,
                model=model,
                messages=run.messages,
                fsync=self.fsync,
                ledger=ledger,
            )

    def history(self, messages: list[Msg], run: RunState) -> list[Msg]:
        if (log := _log(run)) is not None:
            log.record_usage(run)  # a compaction's summary was just paid for: durable now
        return messages

    def response(self, response: Message, run: RunState) -> Message:
        """A reply that asks for tools is recorded, with its calls, before any of them runs."""
        if (log := _log(run)) is not None:
            log.last_reply = (response.stop_reason or "end_turn", text_of(response))
            turn, calls = reply_turn(response, after=run.messages)
            if response.stop_reason == "tool_use" and calls:  # the turn the loop runs (`Agent.loop`)
                log.record_reply(run, turn)
                log.record_calls(calls)
        return response

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        """A call the file holds a result for is answered with it (on resume), not run again.
        Only that: whether a call started in an earlier life may run is the gate's to say
        (`Approval`), and where there is none, the core denies every gated call."""
        return ledger_of(run).recorded(call, tool_for(run, call))

    def after_tool(self, outcome: ToolOutcome, run: RunState) -> ToolOutcome:
        ledger_of(run).record(outcome)  # the ledger's journal writes it to the file
        return outcome

    def record(self, turns: Sequence[Msg], run: RunState) -> None:
        if (log := _log(run)) is not None:
            log.record_turn(run, turns)

    def finish(self, run: RunState, error: BaseException | None) -> None:
        """`end` after a result, `stopped` after an error (which then carries the partial
        result); the file is closed either way."""
        log = _log(run)
        if log is None:  # never started (the file was refused)
            return
        try:
            if error is not None:
                log.record_stopped(run, error)
                return
            try:
                log.record_end(run)
            except BaseException as failed:
                log.record_stopped(run, failed)
                raise
        finally:
            log.close()


def _log(run: RunState) -> SessionLog | None:
    log: SessionLog | None = run.extras.get(KEY)
    return log


def resume(agent: Agent, path: str | os.PathLike[str], *, fsync: bool = True) -> RunResult:
    """Continue the run recorded at `path` with `agent` (built as for the first run).

    Finished tools are not run again; an irreversible call that started but has no
    recorded result is reported to the model as of unknown outcome, never repeated.
    Budgets count the whole run, before and after the resume.
    """
    return run_sync(lambda: aresume(agent, path, fsync=fsync))


async def aresume(agent: Agent, path: str | os.PathLike[str], *, fsync: bool = True) -> RunResult:
    """`resume`, awaited."""
    log, saved = SessionLog.reopen(Path(path), fsync=fsync)
    try:
        state = restored(saved)
    except BaseException:
        log.close()
        raise
    if saved.stop_reason is not None:  # it had finished: nothing to do
        log.close()
        return state.result(final_text(state.messages), saved.stop_reason)
    state.extras[KEY], state.extras[LEDGER] = log, log.ledger
    return await agent.arun_state(state, [Session(path, fsync=fsync)])


def restored(saved: Replay) -> RunState:
    """The run a session file describes, ready to go on: its history, usage (so budgets span
    the resume), calibration, step, ids, and the turn it died in, to finish first."""
    step = max((u.step for u in saved.usage if u.purpose == "step"), default=0)  # the last answered
    state = RunState(
        messages=saved.messages,
        usage=RunUsage(saved.usage),
        calibration=Calibration(**saved.calibration),
        step=step,
        run_id=saved.run_id,
        prompt=saved.prompt,
    )
    if saved.pending:  # it died mid-turn: the loop completes that turn before its next model call
        calls: list[ToolCall] = list(saved.pending)
        state.pending = (saved.pending_reply or pending_turn(calls), calls)
    return state
