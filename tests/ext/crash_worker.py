"""A deterministic agent run for the SIGKILL test (`tests/ext/test_sessions_crash_resume.py`).

Run as `python tests/ext/crash_worker.py SESSION WORKDIR SCENARIO [run|resume]`: it runs
(or resumes) a scripted refund agent with a session file, and at the point the
scenario names it writes `WORKDIR/ready` and blocks forever, so the test can kill
it there and know where it died. Every execution of the irreversible `request_refund` appends a line to
`WORKDIR/refunds.log`: the side effect the test counts. The test imports the same
tools and script to resume the run in-process.

Scenarios (where the process is when it is killed):
    after     a later, slow tool is running; the refund finished a turn earlier
    parallel  a slow tool in the same turn as the refund is still running
    during    the refund itself has taken effect but has not returned yet
In `resume` mode the slow export blocks (a second crash, during the resume).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent import Agent, Tool, tool
from agent.ext.approval import Approval
from agent.ext.sessions import Session, resume
from agent.testing import ScriptedLLM, reply, tool_use

SCENARIOS = ("after", "parallel", "during")
PROMPT = "Refund order A1, then export the report."
FINAL = "A1 is refunded and the report is exported."


def script(scenario: str) -> tuple[dict[str, Any], ...]:
    lookup = reply(tool_use("get_order", {"order_id": "A1"}, id="g1"))
    refund = tool_use("request_refund", {"order_id": "A1"}, id="r1")
    export = tool_use("export_report", {"name": "refunds"}, id="e1")
    if scenario == "parallel":
        return lookup, reply("Refunding and exporting.", refund, export), reply(FINAL)
    return lookup, reply("Refunding.", refund), reply(export), reply(FINAL)


def policy(scenario: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Answers by the number of assistant turns so far, so a resumed run continues it."""
    answers = script(scenario)
    return lambda request: answers[sum(m["role"] == "assistant" for m in request["messages"])]


def block_forever(workdir: Path) -> None:
    (workdir / "ready").write_text("ready")
    threading.Event().wait()


def blocking_tools(scenario: str, mode: str) -> frozenset[str]:
    """The tools that block (and so mark the kill point) in this process."""
    if mode == "resume" or scenario != "during":
        return frozenset({"export_report"})
    return frozenset({"request_refund"})


def make_tools(workdir: Path, blocking: frozenset[str] = frozenset()) -> list[Tool]:
    @tool
    def get_order(order_id: str) -> dict[str, str]:
        """Look an order up.

        Args:
            order_id: the order.
        """
        return {"order_id": order_id, "status": "delivered", "price": "59.00"}

    @tool(irreversible=True, timeout=600)
    def request_refund(order_id: str) -> str:
        """Refund an order: money leaves, so it must happen once.

        Args:
            order_id: the order.
        """
        with (workdir / "refunds.log").open("a") as log:
            log.write(f"{order_id}\n")
        if "request_refund" in blocking:
            block_forever(workdir)
        return f"refund R-{order_id} issued"

    @tool(timeout=600)
    def export_report(name: str) -> str:
        """Export a report (slow, harmless to repeat).

        Args:
            name: the report.
        """
        if "export_report" in blocking:
            block_forever(workdir)
        return f"report {name} exported"

    return [get_order, request_refund, export_report]


def agent(workdir: Path, scenario: str, blocking: frozenset[str] = frozenset()) -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM([policy(scenario)] * 10)
    tools = make_tools(workdir, blocking)
    trusted = [Approval(allow=["request_refund"])]
    return Agent(llm=llm, tools=tools, extensions=trusted, artifacts_dir=None), llm


if __name__ == "__main__":
    session, workdir, scenario = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    mode = sys.argv[4] if len(sys.argv) > 4 else "run"
    worker = agent(workdir, scenario, blocking_tools(scenario, mode))[0]
    if mode == "resume":
        resume(worker, session)
    else:
        worker.run(PROMPT, extensions=[Session(session)])
    sys.exit("the worker was supposed to be killed before finishing")
