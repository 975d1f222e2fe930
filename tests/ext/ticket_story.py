"""What the context-management tests share: a policy that keeps what the model was shown
(`Seen`), and the ticket story: open a ticket (irreversible), read long
log parts until the server edits the prompt, then say the ticket's number.

Whether the number survives is what each edit is judged on: clearing may clear its result,
compaction may summarize it away. `ticket_run` runs the story on a simulator with the given
extension besides the approval gate.
"""

from __future__ import annotations

from typing import Any

from agent import Agent, RunResult, tool
from agent.ext.approval import Approval
from agent.extension import Extension
from agent.testing.simulator import MessagesSimulator


class Seen:
    """A policy that answers "ok" and keeps every prompt the model was shown."""

    def __init__(self) -> None:
        self.prompts: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        self.prompts.append(body)
        return "ok"

    def results(self) -> dict[str, Any]:
        """tool_use_id -> content of each result in the last prompt."""
        return {
            b["tool_use_id"]: b["content"]
            for m in self.prompts[-1]["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        }


PROMPT = "Open a ticket for the full disk, read the log, and tell me the ticket number."


@tool(irreversible=True)
def open_ticket(subject: str) -> str:
    """Open a support ticket. Irreversible: the customer is told its number.

    Args:
        subject: what it is about.
    """
    return "opened TICKET-4821"


@tool
def read_log(part: int) -> str:
    """Read one part of the server log.

    Args:
        part: which part, from 1.
    """
    return f"log part {part}: " + "x" * 60_000  # ~15,000 tokens a part


def ticket_run(sim: MessagesSimulator, model: str, extension: Extension) -> RunResult:
    """The story on `sim`, whole results (no diet, no pruning, no compaction of ours)."""
    agent = Agent(
        llm=sim.llm(),
        model=model,
        tools=[open_ticket, read_log],
        extensions=[Approval(allow=["open_ticket"]), extension],
        diet=False,
        keep_recent=0,
        max_context_tokens=0,
        artifacts_dir=None,
    )
    result = agent.run(PROMPT)
    assert sim.rejected == [] and sim.errors == []
    return result
