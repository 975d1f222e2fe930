"""The human gate in front of tools that act on the world, and "at most once" for them.

A tool marked `irreversible=True` (a refund, an email, a deletion) or
`requires_approval=True` runs only after an approver says yes. An approver is any
callable `approve(call) -> bool | str`: `True` approves, `False` or a string denies
(the string is the reason the model reads). The default approver denies, so an
agent with no person at hand can never act irreversibly unless the tool is on its
`allow` list. A denial is an ordinary `is_error` tool result, "denied: ...": the
`tool_use`/`tool_result` pair stays valid and the model can adapt.

`arun_guarded` is what `Agent.run_tools` awaits (`run_guarded` is the same gate, sync).
Around the registry's parallel run it keeps the run's `Session` ledger, so that an
irreversible action happens at most once and is never forgotten:

- the calls, each verdict, and a `started` marker are recorded before a gated
  call runs; each result is recorded the moment that call finishes;
- on resume, a call with a recorded result is not run again;
- an irreversible call that was started but has no recorded result is NOT run
  again: it might have taken effect, and doing a refund twice is worse than
  asking. The model gets an error result saying the outcome is unknown, so it
  checks (look the order up) instead of blindly retrying;
- an irreversible call repeating one that already took effect in this run (same
  tool, same arguments, e.g. after compaction made the model forget) is refused, and
  so is a second identical irreversible call in the same turn;
- a call is matched in the ledger on its tool_use id, tool AND input (a keyed
  fingerprint), never on the id alone: an id reused for another call (a model or
  simulator that restarts its ids after a resume) is a new call, which is logged,
  and a recorded verdict or result never passes to it.

`TerminalApprover` shows every control, bidi, zero-width or otherwise invisible
character of the arguments as an escape and names it, so what the person approves
is what the tool gets.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Callable, Collection, Sequence
from typing import Any, TextIO

from pydantic import ValidationError

from agent.registry import Tool, ToolCall, ToolOutcome, ToolRegistry
from agent.render import renderable
from agent.session import Session
from agent.steps import blocking, on_private_loop

__all__ = ["Approver", "TerminalApprover", "arun_guarded", "deny_by_default", "reveal", "run_guarded"]

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
        plain = renderable(call.input)
        name, hidden_in_name = reveal(call.name)
        arguments, _ = reveal(json.dumps(plain, ensure_ascii=False, indent=2))
        hidden = {*hidden_in_name, *_hidden_in(plain)}
        warning = ""
        if hidden:
            found = ", ".join(sorted(hidden))
            warning = (
                f"WARNING: hidden or direction-changing characters are shown as \\u escapes: {found}.\n"
                "What you see is what the tool gets; read it carefully.\n"
            )
        stdout.write(f"\nThe agent wants to run {name} with:\n{arguments}\n{warning}Allow? [y/N] ")
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


# Characters a terminal does not show as themselves: controls (ANSI escapes included),
# format characters (bidi overrides and isolates, zero-width space/joiners, BOM, soft
# hyphen, tags), line/paragraph separators, surrogates, private-use and unassigned code
# points, spaces other than U+0020, and letters and marks that render as nothing.
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}
_BLANK_LOOKING = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x180E, *range(0xFE00, 0xFE10)}


def _hidden(char: str) -> bool:
    code = ord(char)
    if char in " \n\t":
        return False
    return (
        unicodedata.category(char) in _HIDDEN_CATEGORIES
        or code in _BLANK_LOOKING
        or 0xE0100 <= code <= 0xE01EF  # variation selectors supplement
    )


def _describe(char: str) -> str:
    fallback = "CONTROL" if unicodedata.category(char) == "Cc" else "UNNAMED"
    return f"U+{ord(char):04X} {unicodedata.name(char, fallback)}"


def reveal(text: str) -> tuple[str, list[str]]:
    """`text` with every invisible, control or bidi character spelled as an escape
    (`\\u202e`), and the names of what was found ("U+202E RIGHT-TO-LEFT OVERRIDE")."""
    shown: list[str] = []
    found: list[str] = []
    for char in text:
        if not _hidden(char):
            shown.append(char)
            continue
        code = ord(char)
        shown.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        found.append(_describe(char))
    return "".join(shown), found


def _hidden_in(value: Any) -> list[str]:
    """What `reveal` would find in every string of a JSON-like value, keys included (JSON
    text escapes control characters itself, so they are looked for in the values)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.extend(_describe(c) for c in item if _hidden(c))
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


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
    turn = _Turn(registry, calls, session, approver, allow)
    return turn.outcomes(registry.run_all(turn.to_run, on_done=turn.finished))


async def arun_guarded(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    session: Session,
    approver: Approver | None = None,
    allow: Collection[str] = (),
) -> list[ToolOutcome]:
    """`run_guarded` on the event loop (`ToolRegistry.arun_all`). The gate runs off the loop
    (`agent.steps.blocking`): an approver may wait on a person, and other runs must not."""
    turn = await blocking(_Turn, registry, calls, session, approver, allow)
    ran = await registry.arun_all(turn.to_run, on_done=turn.finished, block=on_private_loop())
    return turn.outcomes(ran)


class _Turn:
    """One turn through the gate: built, it has settled what the ledger and the approver
    decide and recorded the `started` markers; `to_run` is what is left to run."""

    def __init__(
        self,
        registry: ToolRegistry,
        calls: Sequence[ToolCall],
        session: Session,
        approver: Approver | None,
        allow: Collection[str],
    ) -> None:
        self.session, self.count = session, len(calls)
        session.record_calls(calls)
        self.settled: dict[int, ToolOutcome] = {}
        self.indices: list[int] = []
        self.to_run: list[ToolCall] = []
        claimed: dict[str, str] = {}  # fingerprint -> id of an irreversible call this turn will run
        for i, call in enumerate(calls):
            tool_ = registry.get(call.name)
            outcome = (
                _already_settled(call, tool_, session)
                or _twin(call, tool_, session, claimed)
                or _gate(call, tool_, session, approver, allow)
            )
            if outcome is None:
                self.indices.append(i)
                self.to_run.append(call)
                if tool_ is not None and tool_.irreversible:
                    claimed[session.fingerprint(call)] = call.id
            else:
                self.settled[i] = outcome
                if session.ledger.call_key(call) not in session.ledger.results:
                    session.record_result(outcome, took_effect=_took_effect(outcome))
        for call in self.to_run:
            if (tool_ := registry.get(call.name)) is not None and tool_.gated:
                session.record_started(call, irreversible=tool_.irreversible)

    def finished(self, outcome: ToolOutcome) -> None:
        self.session.record_result(outcome, took_effect=_took_effect(outcome))

    def outcomes(self, ran: Sequence[ToolOutcome]) -> list[ToolOutcome]:
        """Every call's outcome in call order, given those of `to_run`."""
        self.settled.update(zip(self.indices, ran, strict=True))
        return [self.settled[i] for i in range(self.count)]


def _already_settled(call: ToolCall, tool_: Tool | None, session: Session) -> ToolOutcome | None:
    """The outcome a call already has in the ledger, if any (resume, repeats). A call is
    matched on its id, tool and input together: an id reused for another call is a new call."""
    ledger = session.ledger
    key = ledger.call_key(call)
    if (recorded := ledger.results.get(key)) is not None:
        return ToolOutcome(call, recorded.text, recorded.is_error, tool=tool_)
    irreversible = tool_ is not None and tool_.irreversible
    if ledger.started.get(key) or (key in ledger.started and irreversible):
        return ToolOutcome(
            call,
            f"outcome unknown: {call.name} was started but the run stopped before its result was "
            "recorded. It was NOT run again, so it is done at most once. Check whether it took "
            "effect (look it up) before deciding anything; do not simply retry it.",
            True,
            tool=tool_,
        )
    if (earlier := ledger.done.get(key[1])) is not None:  # recorded as irreversible when it ran
        before = ledger.results.get((earlier, key[1]))
        said = f" It returned: {before.text[:500]}" if before is not None else ""
        return ToolOutcome(
            call,
            f"already done: {call.name} with these exact arguments already ran in this run "
            f"(call {earlier}) and is irreversible, so it was not run again.{said}",
            True,
            tool=tool_,
        )
    return None


def _twin(
    call: ToolCall, tool_: Tool | None, session: Session, claimed: dict[str, str]
) -> ToolOutcome | None:
    """An irreversible call asked for twice in one turn runs once; the twin is refused."""
    if tool_ is None or not tool_.irreversible:
        return None
    if (first := claimed.get(session.fingerprint(call))) is None:
        return None
    return ToolOutcome(
        call,
        f"already done: {call.name} with these exact arguments is being run by call {first} in this "
        "same turn and is irreversible, so this duplicate was not run.",
        True,
        tool=tool_,
    )


def _gate(
    call: ToolCall, tool_: Tool | None, session: Session, approver: Approver | None, allow: Collection[str]
) -> ToolOutcome | None:
    """None to run the call, or its denial outcome. A recorded verdict counts only for the
    very call it was given for (same id, tool and input)."""
    if tool_ is None or not tool_.gated:
        return None
    try:
        tool_.input_model.model_validate(call.input)
    except ValidationError:
        return None  # nobody approves arguments that cannot run: the registry explains the error
    verdict = session.ledger.approvals.get(session.ledger.call_key(call))
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
