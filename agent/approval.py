"""The human gate in front of tools that act on the world, and "at most once" for them.

A tool marked `irreversible=True` (a refund, an email, a deletion) or
`requires_approval=True` runs only after an approver says yes. An approver is any
callable `approve(call) -> bool | str`: `True` approves, `False` or a string denies
(the string is the reason the model reads). The default approver denies, so an
agent with no person at hand can never act irreversibly unless the tool is on its
`allow` list. A denial is an ordinary `is_error` tool result, "denied: ...": the
`tool_use`/`tool_result` pair stays valid and the model can adapt.

`run_guarded` is what `Agent.run_tools` calls. Around the registry's parallel run
it keeps the run's `Session` ledger, so that an irreversible action happens at
most once and is never forgotten:

- the calls, each verdict, and a `started` marker are recorded before a gated
  call runs; each result is recorded the moment that call finishes;
- on resume, a call with a recorded result is not run again;
- an irreversible call that was started but has no recorded result is NOT run
  again: it might have taken effect, and doing a refund twice is worse than
  asking. The model gets an error result saying the outcome is unknown, so it
  checks (look the order up) instead of blindly retrying;
- an irreversible call repeating one that already took effect in this run (same
  tool, same arguments, e.g. after compaction made the model forget) is refused.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Collection, Sequence
from typing import TextIO

from pydantic import ValidationError

from agent.registry import Tool, ToolCall, ToolOutcome, ToolRegistry
from agent.session import Session, fingerprint

__all__ = ["Approver", "TerminalApprover", "deny_by_default", "run_guarded"]

Approver = Callable[[ToolCall], "bool | str"]


def deny_by_default(call: ToolCall) -> str:
    """The non-interactive default: nobody is there to ask, so the answer is no."""
    return (
        f"{call.name} needs a person's approval and this agent has no approver "
        f"(pass approver=..., or allow=[{call.name!r}] to trust it)"
    )


class TerminalApprover:
    """Shows the tool and its arguments on the terminal and asks y/N.

    Without a terminal (stdin not a TTY: CI, a pipe, a service) it denies at once
    instead of waiting for input that will never come. Answering anything but y
    denies; words after "n" (or any other answer) become the reason the model reads.
    """

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin
        self.stdout = stdout

    def __call__(self, call: ToolCall) -> bool | str:
        stdin = self.stdin or sys.stdin
        stdout = self.stdout or sys.stdout
        if stdin is None or not stdin.isatty():
            return f"no terminal to ask a person about {call.name}, so it was not run"
        arguments = json.dumps(call.input, ensure_ascii=False, indent=2, default=str)
        stdout.write(f"\nThe agent wants to run {call.name} with:\n{arguments}\nAllow? [y/N] ")
        stdout.flush()
        answer = stdin.readline()
        if not answer:
            return f"no answer about {call.name} (end of input)"
        words = answer.strip().split(maxsplit=1)
        first = words[0].lower() if words else ""
        if first in ("y", "yes"):
            return True
        if first in ("", "n", "no"):
            return words[1] if len(words) > 1 else f"the user declined {call.name}"
        return answer.strip()


def decide(call: ToolCall, approver: Approver | None) -> bool | str:
    """True, or the reason for a denial; a failing approver denies (never approves)."""
    try:
        verdict = (approver or deny_by_default)(call)
    except Exception as error:
        return f"the approver failed ({type(error).__name__}: {error})"
    if verdict is True:
        return True
    if isinstance(verdict, str) and verdict.strip():
        return verdict.strip()
    return f"the user declined {call.name}"


def run_guarded(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    session: Session,
    approver: Approver | None = None,
    allow: Collection[str] = (),
) -> list[ToolOutcome]:
    """Run one turn's calls through the gate and the ledger; outcomes in call order."""
    session.record_calls(calls)
    settled: dict[int, ToolOutcome] = {}
    to_run: list[tuple[int, ToolCall]] = []
    for i, call in enumerate(calls):
        tool_ = registry.get(call.name)
        outcome = _already_settled(call, tool_, session) or _gate(call, tool_, session, approver, allow)
        if outcome is None:
            to_run.append((i, call))
        else:
            settled[i] = outcome
            if call.id not in session.results:
                session.record_result(outcome, took_effect=_took_effect(outcome))
    for _, call in to_run:
        if (tool_ := registry.get(call.name)) is not None and tool_.gated:
            session.record_started(call)

    def finished(outcome: ToolOutcome) -> None:
        session.record_result(outcome, took_effect=_took_effect(outcome))

    ran = registry.run_all([call for _, call in to_run], on_done=finished)
    settled.update((i, outcome) for (i, _), outcome in zip(to_run, ran, strict=True))
    return [settled[i] for i in range(len(calls))]


def _already_settled(call: ToolCall, tool_: Tool | None, session: Session) -> ToolOutcome | None:
    """The outcome a call already has in the ledger, if any (resume, repeats)."""
    if (recorded := session.results.get(call.id)) is not None:
        return ToolOutcome(call, recorded.text, recorded.is_error, tool=tool_)
    if tool_ is None or not tool_.irreversible:
        return None
    if call.id in session.started:
        return ToolOutcome(
            call,
            f"outcome unknown: {call.name} was started but the run stopped before its result was "
            "recorded. It was NOT run again, so it is done at most once. Check whether it took "
            "effect (look it up) before deciding anything; do not simply retry it.",
            True,
            tool=tool_,
        )
    if (earlier := session.done.get(fingerprint(call))) is not None:
        before = session.results.get(earlier)
        said = f" It returned: {before.text[:500]}" if before is not None else ""
        return ToolOutcome(
            call,
            f"already done: {call.name} with these exact arguments already ran in this run "
            f"(call {earlier}) and is irreversible, so it was not run again.{said}",
            True,
            tool=tool_,
        )
    return None


def _gate(
    call: ToolCall, tool_: Tool | None, session: Session, approver: Approver | None, allow: Collection[str]
) -> ToolOutcome | None:
    """None to run the call, or its denial outcome."""
    if tool_ is None or not tool_.gated:
        return None
    try:
        tool_.input_model.model_validate(dict(call.input))
    except ValidationError:
        return None  # nobody approves arguments that cannot run: the registry explains the error
    verdict = session.approvals.get(call.id)
    if verdict is None:
        verdict = True if call.name in allow else decide(call, approver)
        session.record_approval(call, verdict)
    if verdict is True:
        return None
    return ToolOutcome(call, f"denied: {verdict}", True, tool=tool_)


def _took_effect(outcome: ToolOutcome) -> bool:
    """An irreversible call that succeeded, or may have: it timed out (and may still be
    running) or its outcome is unknown. Any of these blocks an identical repeat."""
    if outcome.tool is None or not outcome.tool.irreversible:
        return False
    return not outcome.is_error or str(outcome.value).startswith(("timeout:", "outcome unknown:"))
