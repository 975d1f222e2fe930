"""Sub-agents on the simulator: a child `Agent` as a parent's tool, one bill, one budget, one
ledger, its transcript an artifact, its answer an ordinary tool result.

One simulator serves both agents; the scripted model tells them apart by their system prompts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.artifacts import find_pointer, read_artifact_text
from agent.errors import TokenBudgetExceeded
from agent.ext.approval import Approval
from agent.ext.sessions import Session, read_session, resume
from agent.ext.subagents import SubAgent
from agent.extension import Extension
from agent.models import MODELS
from agent.state import RunState
from agent.testing.policies import call, latest_results, scripted, step_number
from agent.testing.simulator import MessagesSimulator
from agent.tools import ToolCall, ToolOutcome

Simulator = Callable[..., MessagesSimulator]
Body = Mapping[str, Any]

LEAD = "You lead an incident review. Delegate log reading; report the root cause in one line."
READER = "You read service logs and report findings in three lines at most."
TASK = "Read the checkout logs around 03:12 and report what failed."
FINDINGS = "03:12:07 checkout: payment gateway timeout (stripe), 41 orders failed."
LOG = "\n".join(f"03:{i // 60 % 60:02d}:{i % 60:02d} INFO checkout request ok id={i}" for i in range(4000))
LOG += "\n03:12:07 ERROR checkout payment gateway timeout gateway=stripe orders=41\n"


@tool
def read_log(service: str) -> str:
    """The whole log of one service.

    Args:
        service: the service name, e.g. checkout.
    """
    return LOG


def system_of(body: Body) -> str:
    return "".join(b.get("text", "") for b in body.get("system") or [])


def by_agent(lead: Callable[[Body], Any], reader: Callable[[Body], Any]) -> Callable[[Body], Any]:
    """One simulator policy for both agents: the reader's requests carry its system prompt."""
    return lambda body: reader(body) if system_of(body) == READER else lead(body)


LEAD_MODEL = scripted(
    call("read_logs", task=TASK), lambda body: "Root cause: " + latest_results(body)[0].text.split("\n")[0]
)
READER_MODEL = scripted(call("read_log", service="checkout"), FINDINGS)


def agents(sim: MessagesSimulator, tmp_path: Path, *also: Extension, **lead: Any) -> tuple[Agent, Agent]:
    """The lead, with the log reader as its sub-agent `read_logs` (and `also`), and the reader."""
    reader = Agent(system=READER, tools=[read_log], llm=sim.llm(), artifacts_dir=tmp_path / "artifacts")
    delegate = SubAgent(reader, name="read_logs", description="Reads service logs and reports findings.")
    extensions = [delegate, *also]
    parent = Agent(
        system=LEAD, llm=sim.llm(), artifacts_dir=tmp_path / "artifacts", extensions=extensions, **lead
    )
    return parent, reader


def test_the_child_answers_as_a_tool_and_its_bill_is_the_parents(
    simulator: Simulator, tmp_path: Path
) -> None:
    sim = simulator(by_agent(LEAD_MODEL, READER_MODEL))
    parent, _ = agents(sim, tmp_path)
    result = parent.run("Why did checkout fail at 03:12?")
    assert result.text == f"Root cause: {FINDINGS}"

    steps = result.usage.steps  # the parent's two calls and the child's two, in one bill
    assert [s.purpose for s in steps] == ["step", "subagent:read_logs", "subagent:read_logs", "step"]
    assert len(sim.usages) == 4 and result.usage.prompt == sum(
        u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
        for u in sim.usages
    )
    assert result.usage.cost_usd == pytest.approx(sum(s.cost_usd or 0 for s in steps))
    assert all(s.step == 1 for s in steps[1:3])  # booked at the parent's step that delegated

    child_requests = [r for r in sim.requests if system_of(r) == READER]
    assert len(child_requests) == 2 and child_requests[0]["messages"][0]["content"][0]["text"] == TASK
    parent_requests = [r for r in sim.requests if system_of(r) == LEAD]
    assert [t["name"] for t in parent_requests[0]["tools"] if t["name"] != "read_artifact"] == ["read_logs"]
    sent = json.dumps(parent_requests)
    assert "INFO checkout request ok" not in sent and FINDINGS in sent  # the logs stayed in the child


def transcript_of(result_text: str) -> str:
    name = find_pointer(result_text.rsplit("full transcript: ", 1)[1])
    assert name is not None and name.startswith("read_logs_transcript-")
    return name


def test_the_childs_whole_transcript_is_an_artifact_the_parent_reads_back(
    simulator: Simulator, tmp_path: Path
) -> None:
    def lead(body: Body) -> Any:
        if step_number(body) == 1:
            return call("read_logs", task=TASK)
        results = latest_results(body)
        if results[0].name == "read_logs":
            return call("read_artifact", name=transcript_of(results[0].text), pattern="-> read_log")
        return "The reader called: " + results[0].text

    sim = simulator(by_agent(lead, READER_MODEL))
    parent, _ = agents(sim, tmp_path)
    result = parent.run("Why did checkout fail at 03:12?")
    assert 'read_log {"service": "checkout"}' in result.text  # read back by the parent's model

    delegated = result.messages[2]["content"][0]["content"]
    text, _ = read_artifact_text(tmp_path / "artifacts", transcript_of(delegated))
    assert text.startswith("# sub-agent read_logs\ntask: " + TASK)
    assert "## 1 user" in text and FINDINGS in text and "<- read_log:" in text
    assert "sub-agent read_logs: 2 model calls" in text


class Seen(Extension):
    """Keeps each outcome the parent's `after_tool` hook is shown (a test's eyes)."""

    def __init__(self) -> None:
        self.outcomes: list[ToolOutcome] = []

    def after_tool(self, outcome: ToolOutcome, run: RunState) -> ToolOutcome:
        self.outcomes.append(outcome)
        return outcome


def test_the_childs_answer_goes_through_the_parents_diet_like_any_result(
    simulator: Simulator, tmp_path: Path
) -> None:
    long_findings = "\n".join(
        f"finding {i}: order O-{i:04d} failed at the payment gateway" for i in range(120)
    )
    reader = scripted(call("read_log", service="checkout"), long_findings)
    sim = simulator(by_agent(scripted(call("read_logs", task=TASK), "Done."), reader))
    seen = Seen()
    parent, _ = agents(sim, tmp_path, seen)
    parent.run("Why did checkout fail at 03:12?")

    (outcome,) = seen.outcomes  # the parent's hook saw it as an ordinary outcome of the tool
    assert outcome.call.name == "read_logs" and not outcome.is_error and outcome.tool is not None
    assert outcome.tool.name == "read_logs" and outcome.value.startswith(long_findings)
    shown = next(r for r in sim.requests if system_of(r) == LEAD and step_number(r) == 2)
    content = shown["messages"][2]["content"][0]["content"]
    assert len(content) <= parent.compress_threshold + 200 < len(outcome.value)  # compressed by the diet
    assert "full transcript: artifact:read_logs_transcript-" in content  # the tail is kept
    pointer = find_pointer(content.rsplit("\n", 1)[1])  # the diet's cut note, last
    assert pointer is not None and pointer.startswith("read_logs-")  # the full result, stored as any
    assert read_artifact_text(tmp_path / "artifacts", pointer)[0].startswith(long_findings)


def test_the_parents_dollar_budget_covers_the_child(simulator: Simulator, tmp_path: Path) -> None:
    def reader(body: Body) -> Any:  # never done: keeps reading, as a runaway child would
        return call("read_log", service=f"s{step_number(body)}")

    sim = simulator(by_agent(LEAD_MODEL, reader))
    cap = 0.03
    parent, child = agents(sim, tmp_path, max_cost_usd=cap)
    assert child.max_cost_usd is None and child.max_steps == 20  # on its own it would run 20 calls
    result = parent.run("Why did checkout fail at 03:12?")  # the lead answers with what it has left

    usage = result.usage
    children = [s for s in usage.steps if s.purpose == "subagent:read_logs"]
    assert 2 <= len(children) < child.max_steps
    assert usage.priced_cost_usd <= cap * 1.05  # only the last call's output can overshoot
    assert result.text.startswith("Root cause: sub-agent read_logs stopped: next call")
    delegated = result.messages[2]["content"][0]
    assert delegated["is_error"] and "sub-agent read_logs stopped: next call" in delegated["content"]
    assert (
        "max_cost_usd" in delegated["content"] and child.max_cost_usd is None
    )  # the caller's agent as it was


def test_a_child_cannot_spend_tokens_the_parent_does_not_have(simulator: Simulator, tmp_path: Path) -> None:
    sim = simulator(by_agent(LEAD_MODEL, READER_MODEL))
    parent, child = agents(sim, tmp_path, max_input_tokens=400)  # the first call leaves ~100
    with pytest.raises(TokenBudgetExceeded) as stopped:
        parent.run("Why did checkout fail at 03:12?")
    assert not [r for r in sim.requests if system_of(r) == READER]  # its first call would not fit
    delegated = stopped.value.result.messages[2]["content"][0]  # type: ignore[union-attr]
    assert delegated["is_error"] and delegated["content"].startswith("sub-agent read_logs stopped: next call")
    assert "max_input_tokens=" in delegated["content"] and child.max_input_tokens is None


# -- never twice, across a resume ------------------------------------------------------------


class Crash(BaseException):
    """The process dying, as far as the run can tell (nothing catches it)."""


class CrashAt(Extension):
    """Dies at one point of the child's run: after the reply that follows the irreversible
    call (`after`), or just before that call runs, its `started` marker written (`during`)."""

    def __init__(self, where: str) -> None:
        self.where = where

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        if self.where == "during" and call.name == "restart":
            raise Crash("died while restarting")
        return None

    def response(self, response: Any, run: RunState) -> Any:
        if self.where == "after" and run.step == 2:
            raise Crash("died after the restart")
        return response


def fixer_world(sim: MessagesSimulator, tmp_path: Path, crash: str | None) -> tuple[Agent, list[str]]:
    restarts: list[str] = []

    @tool(irreversible=True)
    def restart(service: str) -> str:
        """Restart a service (drops its in-flight requests).

        Args:
            service: the service to restart.
        """
        restarts.append(service)
        return f"{service} restarted"

    extensions: list[Extension] = [Approval(allow=["restart"])]
    fixer = Agent(
        system=READER,
        tools=[restart],
        llm=sim.llm(),
        extensions=[*extensions, CrashAt(crash)] if crash else extensions,
        artifacts_dir=tmp_path / "artifacts",
    )
    delegate = SubAgent(fixer, name="fix", description="Fixes a service.")
    parent = Agent(system=LEAD, llm=sim.llm(), extensions=[delegate], artifacts_dir=tmp_path / "artifacts")
    return parent, restarts


FIXER = scripted(call("restart", service="checkout"), lambda body: "Restart: " + latest_results(body)[0].text)
LEAD_FIX = scripted(
    call("fix", task="Restart checkout."), lambda body: "Done: " + latest_results(body)[0].text
)


def test_a_resumed_parent_never_repeats_a_childs_irreversible_call(
    simulator: Simulator, tmp_path: Path
) -> None:
    sim = simulator(by_agent(LEAD_FIX, FIXER))
    session = tmp_path / "run.jsonl"
    parent, restarts = fixer_world(sim, tmp_path, crash="after")
    with pytest.raises(Crash):
        parent.run("Checkout is down.", extensions=[Session(session)])
    assert restarts == ["checkout"]
    replay = read_session(session)
    assert [u.purpose for u in replay.usage] == ["step", "subagent:fix", "subagent:fix"]  # spend kept
    ledger = replay.ledger  # the child's entries are in the parent's file
    assert any(entry.text == "checkout restarted" for entry in ledger.results.values()) and ledger.done

    again, restarts_again = fixer_world(sim, tmp_path, crash=None)  # the process, restarted
    result = resume(again, session)
    assert restarts_again == []  # the child ran again, its model asked again, nothing restarted
    assert "already done: restart with these exact arguments already ran" in result.text
    assert result.text.startswith("Done: Restart: already done")
    assert sum(u.purpose == "subagent:fix" for u in result.usage.steps) == 4  # both lives' children


def test_a_childs_irreversible_call_left_unfinished_is_not_run_again(
    simulator: Simulator, tmp_path: Path
) -> None:
    sim = simulator(by_agent(LEAD_FIX, FIXER))
    session = tmp_path / "run.jsonl"
    parent, restarts = fixer_world(sim, tmp_path, crash="during")
    with pytest.raises(Crash):
        parent.run("Checkout is down.", extensions=[Session(session)])
    assert restarts == [] and read_session(session).ledger.started  # started, never finished

    again, restarts_again = fixer_world(sim, tmp_path, crash=None)
    result = resume(again, session)
    assert restarts_again == []  # it may have taken effect: at most once
    assert "outcome unknown: restart with these exact arguments was started by sub-agent fix" in result.text


# -- what the extension refuses, and what it costs a plain run -----------------------------


def test_bad_input_gets_a_clear_error(simulator: Simulator, tmp_path: Path) -> None:
    sim = simulator(by_agent(scripted(call("read_logs", task=" "), "ok"), READER_MODEL))
    with pytest.raises(TypeError, match="takes an Agent"):
        SubAgent("reader", name="x", description="y")  # type: ignore[arg-type]
    reader = Agent(system=READER, llm=sim.llm())
    with pytest.raises(TypeError, match="description"):
        SubAgent(reader, name="read_logs", description=" ")
    with pytest.raises(ValueError, match="tool name"):
        SubAgent(reader, name="read logs", description="Reads.")

    parent, _ = agents(sim, tmp_path)
    result = parent.run("Go.")
    assert result.messages[2]["content"][0]["is_error"]
    assert "invalid input for read_logs: the task is empty" in result.messages[2]["content"][0]["content"]

    no_price = MODELS.with_price("claude-opus-5", None)  # type: ignore[arg-type]  # a model without one
    unpriced = Agent(system=READER, llm=sim.llm(), models=no_price)
    lead = Agent(
        llm=sim.llm(), max_cost_usd=1.0, extensions=[SubAgent(unpriced, name="r", description="Reads.")]
    )
    with pytest.raises(ValueError, match="cannot cover a child whose model has no price"):
        lead.run("Go.")


def test_a_plain_run_does_not_import_the_package() -> None:
    code = (
        "import sys\n"
        "from agent import Agent\n"
        "from agent.testing import ScriptedLLM\n"
        "Agent(llm=ScriptedLLM(['hi']), artifacts_dir=None).run('hello')\n"
        "assert 'agent.ext.subagents' not in sys.modules, 'imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_benchmark_prints_both_reviews_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import subagents

    text = subagents.main(["--pages", "1", "--checks", "1"])
    assert capsys.readouterr().out.count("| one agent alone |") == 2
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith(("| one", "| lead"))]
    total = [float(row[7].lstrip("$")) for row in rows]
    lead_prompt = [int(row[3].replace(",", "")) for row in rows]
    for alone, same, small in (total[:3], total[3:]):
        assert small < same and small < alone  # a small reader is what saves dollars
    assert lead_prompt[4] < lead_prompt[3] / 4  # exact pages: the lead's window stays small
