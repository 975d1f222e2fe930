"""Faults on the wire and in tools: typed errors, nothing lost, the session resumable.

The model side runs on the local simulator through the real SDK. The agent owns the
retries (429/5xx/timeouts; the SDK's own are switched off so the budgets see every
attempt); what the loop must do is count each attempt that may have been billed, end
the run with `ModelCallFailed` (carrying the partial result) once the retries are
spent, and leave the session so `resume` finishes the job without running a tool twice.
"""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from agent import MODELS, Agent, AgentError, ModelCallFailed, tool
from agent.ext.approval import Approval
from agent.ext.sessions import Session, resume
from agent.testing import ScriptedLLM, reply, tool_use, validate_request
from agent.testing.simulator import MessagesSimulator
from agent.tools import MAX_OUTPUT_CHARS
from agent.usage import cost_of

Simulator = Callable[..., MessagesSimulator]


def answers(request: dict[str, Any]) -> dict[str, Any]:
    """Look the order up, refund it, then answer (by how far the history is)."""
    turns = sum(m["role"] == "assistant" for m in request["messages"])
    script = [
        reply(tool_use("get_order", {"order_id": "A1"})),
        reply(tool_use("request_refund", {"order_id": "A1"})),
        reply("A1 is refunded."),
    ]
    return script[turns]


def refund_agent(llm: Any, fault: Callable[[], None], counts: dict[str, int]) -> Agent:
    """`fault()` runs inside the refund, so it hits the model call right after it."""

    @tool
    def get_order(order_id: str) -> str:
        """Look an order up.

        Args:
            order_id: the order.
        """
        counts["get_order"] += 1
        return f"{order_id}: delivered, 59.00"

    @tool(irreversible=True)
    def request_refund(order_id: str) -> str:
        """Refund an order.

        Args:
            order_id: the order.
        """
        counts["request_refund"] += 1
        fault()
        return f"refund R-{order_id} issued"

    trusted = [Approval(allow=["request_refund"])]
    return Agent(llm=llm, tools=[get_order, request_refund], extensions=trusted, artifacts_dir=None)


FAULTS: dict[str, tuple[dict[str, Any], type[Exception], bool]] = {
    # name: (what the simulator does, the SDK's error, whether the server may have billed it)
    "429 rate limited": ({"status": 429, "retry_after": 0.01}, anthropic.RateLimitError, False),
    "529 overloaded": ({"status": 529, "retry_after": 0.01}, anthropic.OverloadedError, False),
    "500 server error": ({"status": 500, "retry_after": 0.01}, anthropic.InternalServerError, False),
    "malformed body": ({"malformed": True}, Exception, True),
    "timeout": ({"delay": 1.0}, anthropic.APITimeoutError, True),
}
TRIES = 2
"""`max_retries=1`: the agent makes every call at most twice."""


@pytest.mark.parametrize("name", FAULTS)
def test_a_model_call_that_still_fails_after_retries_ends_typed_and_resumable(
    simulator: Simulator, tmp_path: Path, name: str
) -> None:
    fault, sdk_error, billed = FAULTS[name]
    tries = TRIES
    sim = simulator(answers)
    counts = {"get_order": 0, "request_refund": 0}
    llm = sim.llm(max_retries=1, timeout=0.25)
    agent = refund_agent(llm, lambda: sim.inject(**fault, times=tries), counts)  # every try fails
    path = tmp_path / "s.jsonl"

    with pytest.raises(ModelCallFailed) as failure:
        agent.run("Refund A1.", extensions=[Session(path)])

    assert isinstance(failure.value.__cause__, sdk_error)
    assert len(sim.requests) == 2 + tries  # steps 1 and 2, then every try of step 3
    partial = failure.value.result
    assert partial is not None and partial.stop_reason == "error"
    failed = ["failed_attempt"] * (tries if billed else 0)
    assert [u.purpose for u in partial.steps] == ["step", "step", *failed]
    assert all(u.cost_usd for u in partial.steps)  # a possibly billed attempt is counted, never free
    kinds = [b["type"] for m in partial.messages for b in m["content"]]
    assert kinds.count("tool_result") == 2  # the paid-for work is in the error
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["event"] == "stopped" and last["error"] == "ModelCallFailed"

    resumed = resume(refund_agent(sim.llm(), lambda: None, counts), path)
    assert resumed.text == "A1 is refunded." and resumed.stop_reason == "end_turn"
    assert counts == {"get_order": 1, "request_refund": 1}  # nothing ran twice
    assert sim.rejected == []  # every request, before and after, was valid
    assert [u.step for u in resumed.steps if u.purpose == "step"] == [1, 2, 3]


def test_one_fault_within_the_retries_is_absorbed_by_the_sdk(simulator: Simulator) -> None:
    sim = simulator(answers)
    counts = {"get_order": 0, "request_refund": 0}
    agent = refund_agent(sim.llm(max_retries=1), lambda: sim.inject(status=529, retry_after=0.01), counts)
    assert agent.run("Refund A1.").text == "A1 is refunded."
    assert len(sim.requests) == 4 and counts["request_refund"] == 1


def test_a_hanging_tool_times_out_and_the_run_goes_on() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def stuck() -> str:
        """Never answers."""
        release.wait(30)
        return "too late"

    @tool
    def quick() -> str:
        """Answers at once."""
        return "fast"

    llm = ScriptedLLM([reply(tool_use("stuck", id="s1"), tool_use("quick", id="q1")), reply("moved on")])
    try:
        result = Agent(llm=llm, tools=[stuck, quick], artifacts_dir=None).run("go")
    finally:
        release.set()
    sent = llm.requests[1]["messages"][-1]["content"]
    assert sent[0]["tool_use_id"] == "s1" and sent[0]["is_error"] is True
    assert sent[0]["content"] == "timeout: stuck did not finish in 0.2s"
    assert sent[1]["content"] == "fast" and "is_error" not in sent[1]
    assert result.text == "moved on" and validate_request(llm.requests[1]) == []


def test_an_irreversible_tool_that_times_out_is_not_repeated(tmp_path: Path) -> None:
    release = threading.Event()
    runs: list[str] = []

    @tool(irreversible=True, timeout=0.2)
    def wire_money(to: str) -> str:
        """Send money.

        Args:
            to: the account.
        """
        runs.append(to)
        release.wait(30)
        return "sent"

    call = {"to": "X"}
    script = [
        reply(tool_use("wire_money", call, id="w1")),
        reply(tool_use("wire_money", call, id="w2")),
        reply("ok"),
    ]
    llm = ScriptedLLM(script)
    try:
        Agent(llm=llm, tools=[wire_money], extensions=[Approval(allow=["wire_money"])]).run(
            "pay X", extensions=[Session(tmp_path / "s.jsonl")]
        )
    finally:
        release.set()
    assert runs == ["X"]  # it may still be running: retrying it could pay twice
    retry = llm.requests[2]["messages"][-1]["content"][0]
    assert retry["content"].startswith("already done: wire_money")


@pytest.mark.parametrize("kind", [str, bytes])
@pytest.mark.slow  # 40 MB through a whole run, traced by tracemalloc
def test_a_tool_returning_megabytes_is_bounded_in_memory_history_and_session(
    tmp_path: Path, kind: type[Any]
) -> None:
    size = 40_000_000
    line = "log line with a value\n"
    text = line * (size // len(line))
    value = text if kind is str else text.encode()  # made before measuring: it is the tool's own

    @tool
    def dump() -> Any:
        """Returns far too much."""
        return value

    llm = ScriptedLLM([reply(tool_use("dump", id="d1")), reply("summarised")])
    path = tmp_path / "s.jsonl"
    tracemalloc.start()
    try:
        Agent(llm=llm, tools=[dump], artifacts_dir=None).run("dump it", extensions=[Session(path)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    sent = llm.requests[1]["messages"][-1]["content"][0]["content"]
    assert len(sent) <= MAX_OUTPUT_CHARS + 200 and f"chars cut: dump returned {len(text):,}" in sent
    assert path.stat().st_size < 3 * MAX_OUTPUT_CHARS
    assert peak < size / 4  # measured: ~5 MB bounded, ~125 MB when the 40 MB is kept and copied


def billed_usd(sim: MessagesSimulator, model: str) -> float:
    """What the simulator billed (answers the client gave up on included), at `model`'s prices."""
    price = MODELS.price(model)
    assert price is not None
    return sum(cost_of(u, price) for u in sim.usages)


@pytest.mark.slow  # waits out real timeouts
def test_timed_out_attempts_count_against_the_dollar_budget(simulator: Simulator) -> None:
    """The issue's repro: answers come after 0.8 s, the client waits 0.5 s and retries twice,
    the budget is $0.05. Before, the run counted $0.037 while the server billed $0.166."""

    def talkative(request: dict[str, Any]) -> Any:
        return reply("Still thinking about it. " * 40, tool_use("get_order", {"order_id": "A1"}))

    sim = simulator(talkative)
    sim.inject(delay=0.8, times=50)
    counts = {"get_order": 0, "request_refund": 0}
    agent = refund_agent(sim.llm(max_retries=2, timeout=0.5), lambda: None, counts)
    agent.max_cost_usd = 0.05
    agent.system = "You look orders up. " * 400  # ~2,000 tokens a call: about $0.013 per attempt
    with pytest.raises(AgentError) as stopped:
        agent.run("Refund A1.")
    time.sleep(0.9)  # let the simulator bill the last answer the client gave up on
    counted = stopped.value.result.usage.cost_usd if stopped.value.result else None
    billed = billed_usd(sim, agent.model)
    assert counted is not None and counted >= billed * 0.98, (counted, billed)
    one_call = max(u.cost_usd or 0 for u in stopped.value.result.steps)  # type: ignore[union-attr]
    assert billed <= 0.05 + one_call, "the budget was overshot by more than one call"
