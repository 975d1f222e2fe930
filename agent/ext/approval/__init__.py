"""Approval: a person's yes in front of tools that act on the world, and "at most once" for them.

A tool marked `irreversible=True` (a refund, an email, a deletion) or
`requires_approval=True` is gated: the core runs it only where an extension decides
gated calls, and denies it everywhere else. `Approval` is that extension:

    agent = Agent(tools=[...], extensions=[Approval(TerminalApprover(), allow=["ship"])])

- a tool on the `allow` list runs without asking; any other gated call asks `approver`
  (`agent.ext.approval.gate`): True runs it, anything else denies with a reason the
  model reads. No approver denies (`deny_by_default`), and so does one that fails;
- it keeps the run's never-twice ledger (`agent.ext.approval.ledger`): a call with a
  recorded result gets that result back; an irreversible call that was started and never
  finished (the run died) is NOT run again, since it may have taken effect: the model
  reads "outcome unknown" and checks instead of retrying; an irreversible call repeating
  one that took effect (same tool, same arguments: after compaction made the model
  forget, say) is refused, and so is an identical twin in the same turn;
- verdicts, `started` markers and results go in the ledger as they happen. With a
  session (`agent.ext.sessions.Session`) the ledger comes from, and goes to, its file, so
  a resumed run neither asks twice nor runs twice.

Why an extension: who may say yes is a deployment's policy (a terminal, a ticket queue,
a list of trusted tools), and the loop stays the same whichever it is. The core's part
is only the safe default, a no.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from agent.ext.approval.gate import Approver, TerminalApprover, denial, deny_by_default, twin
from agent.ext.approval.ledger import Ledger, ledger_of, tool_for
from agent.extension import Extension
from agent.steps import blocking

if TYPE_CHECKING:
    from agent.state import RunState
    from agent.tools import Tool, ToolCall, ToolOutcome

__all__ = ["Approval", "Approver", "Ledger", "TerminalApprover", "deny_by_default"]

TURN = "approval"
"""Key in `RunState.extras`: (step, fingerprint -> id of each irreversible call this turn runs)."""


class Approval(Extension):
    """Decides gated calls: the allow list, else `approver`, else no; and never twice."""

    gate = True

    def __init__(self, approver: Approver | None = None, allow: Iterable[str] = ()) -> None:
        if approver is not None and not callable(approver):
            raise TypeError(f"approver must be a callable approve(call) -> bool | str, not {approver!r}")
        if isinstance(allow, str | bytes) or not isinstance(allow, Iterable):
            raise TypeError(f"allow must be a list of tool names, e.g. allow=[{allow!r}]")
        self.approver = approver
        self.allow = frozenset(allow)

    async def start(self, run: RunState) -> None:
        ledger_of(run)  # a session's, seeded from its file; else a new one, in memory

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        """Already settled by the ledger, a twin in this turn, or the gate's verdict; the
        calls that pass and are gated get their `started` marker before they run."""
        ledger, tool_ = ledger_of(run), tool_for(run, call)
        ledger.listed(call)
        claimed = _claimed(run)
        outcome = ledger.settled(call, tool_) or twin(call, tool_, ledger, claimed)
        if outcome is None and tool_ is not None and tool_.gated:
            outcome = await blocking(self.ask, call, tool_, ledger)  # a person may take a while
        if outcome is None and tool_ is not None and tool_.irreversible:
            claimed[ledger.fingerprint(call)] = call.id
        return outcome

    def ask(self, call: ToolCall, tool_: Tool, ledger: Ledger) -> ToolOutcome | None:
        """The gate for one gated call (blocking); a call let through is marked `started`."""
        denied = denial(call, tool_, ledger, self.approver, self.allow)
        if denied is None:
            ledger.start(call, irreversible=tool_.irreversible)
        return denied

    def after_tool(self, outcome: ToolOutcome, run: RunState) -> ToolOutcome:
        ledger_of(run).record(outcome)  # once per call; an irreversible success blocks a repeat
        return outcome


def _claimed(run: RunState) -> dict[str, str]:
    """The irreversible calls this turn will run, by fingerprint (fresh at each step)."""
    turn: tuple[int, dict[str, str]] | None = run.extras.get(TURN)
    if turn is None or turn[0] != run.step:
        turn = run.extras[TURN] = (run.step, {})
    return turn[1]
