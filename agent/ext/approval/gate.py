"""The human gate: who may say yes to a tool that acts on the world, and what a no looks like.

An approver is any callable `approve(call) -> bool | str`: `True` approves, `False` or a
string denies (the string is the reason the model reads). `deny_by_default` is the
approver of an agent with no person at hand: it says no, so nothing irreversible happens
unless the tool is on the allow list. A denial is an ordinary `is_error` tool result,
"denied: ...": the `tool_use`/`tool_result` pair stays valid and the model can adapt.

`TerminalApprover` asks y/N on the terminal, showing every control, bidi, zero-width or
otherwise invisible character of the arguments as an escape and naming it, so what the
person approves is what the tool gets.

`twin` and `denial` are the two checks `Approval.before_tool` makes after the ledger's own
(`agent.ext.approval.ledger.Ledger.settled`).
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Callable, Collection
from typing import Any, TextIO

from pydantic import ValidationError

from agent.ext.approval.ledger import Ledger
from agent.render import renderable
from agent.tools import Tool, ToolCall, ToolOutcome

__all__ = ["Approver", "TerminalApprover", "decide", "denial", "deny_by_default", "reveal", "twin"]

Approver = Callable[[ToolCall], "bool | str"]


def deny_by_default(call: ToolCall) -> str:
    """The non-interactive default: nobody is there to ask, so the answer is no."""
    return (
        f"{call.name} needs a person's approval and this agent has no approver "
        f"(pass Approval(approver=...), or Approval(allow=[{call.name!r}]) to trust it)"
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


def twin(call: ToolCall, tool_: Tool | None, ledger: Ledger, claimed: dict[str, str]) -> ToolOutcome | None:
    """An irreversible call asked for twice in one turn runs once; the twin is refused.
    `claimed` maps the fingerprint of each irreversible call this turn will run to its id."""
    if tool_ is None or not tool_.irreversible:
        return None
    if (first := claimed.get(ledger.fingerprint(call))) is None:
        return None
    return ToolOutcome(
        call,
        f"already done: {call.name} with these exact arguments is being run by call {first} in this "
        "same turn and is irreversible, so this duplicate was not run.",
        True,
        tool=tool_,
    )


def denial(
    call: ToolCall, tool_: Tool, ledger: Ledger, approver: Approver | None, allow: Collection[str]
) -> ToolOutcome | None:
    """None to run a gated call, or its denial outcome; the verdict goes in the ledger. A
    recorded verdict counts only for the very call it was given for (same id, tool and
    input). This may wait on a person: call it off the event loop."""
    try:
        tool_.input_model.model_validate(call.input)
    except ValidationError:
        return None  # nobody approves arguments that cannot run: the registry explains the error
    verdict = ledger.approvals.get(ledger.call_key(call))
    if verdict is None:
        verdict = True if call.name in allow else decide(call, approver)
        ledger.approve(call, verdict)
    if verdict is True:
        return None
    return ToolOutcome(call, f"denied: {verdict}", True, tool=tool_)
