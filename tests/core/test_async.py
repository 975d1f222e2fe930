"""`Agent.arun` behaves as `Agent.run`: one shared set of behaviour tests, run both ways.

The `runner` fixture runs a given agent through `run` (the sync call, whose model is a
sync `LLM` called in a worker thread) or through `arun` (awaited on a fresh event loop,
with the model behind the async seam only: a scripted model wrapped as an `AsyncLLM`, or
`AsyncAnthropicLLM` on the simulator). Below the shared set: what only async has
(concurrent async tools, sync tools in threads, cancellation that leaves a resumable
session, `run` called from inside a running event loop).
"""

from __future__ import annotations

import asyncio
import copy
import json
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import Message
from test_loop import agent_with, calls, record, results_of

from agent import (
    MODELS,
    Agent,
    AnthropicLLM,
    AsyncAnthropicLLM,
    CostBudgetExceeded,
    ModelCallFailed,
    StepBudgetExceeded,
    TokenBudgetExceeded,
    ToolCall,
    tool,
)
from agent.context.cache import strip_cache_control
from agent.events import Event
from agent.ext.approval import Approval
from agent.ext.sessions import Session, aresume, resume
from agent.llm import LLM
from agent.state import RunResult, RunState
from agent.testing import ScriptedLLM, reply, tool_use, validate_request
from agent.testing.simulator import MessagesSimulator

Simulator = Callable[..., MessagesSimulator]


class AsyncOnly:
    """A scripted model behind the async seam only (no sync `create`): `arun` must await it."""

    def __init__(self, inner: ScriptedLLM) -> None:
        self.inner = inner

    async def acreate(self, request: Mapping[str, Any]) -> Message:
        await asyncio.sleep(0)
        return self.inner.create(request)


class Runner:
    """Runs an agent one way: `run`/`resume`, or `arun`/`aresume` on an async model."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def sim_llm(self, sim: MessagesSimulator, **options: Any) -> AnthropicLLM:
        if self.mode == "run":
            return sim.llm(**options)
        settings: dict[str, Any] = {"base_url": sim.base_url, "api_key": "sim", "max_retries": 0}
        return AsyncAnthropicLLM(**{**settings, **options})

    def _async_model(self, agent: Agent) -> None:
        if isinstance(agent.llm, ScriptedLLM):
            agent.llm = AsyncOnly(agent.llm)  # type: ignore[assignment]

    def run(self, agent: Agent, prompt: str, **options: Any) -> RunResult:
        if self.mode == "run":
            return agent.run(prompt, **options)
        self._async_model(agent)
        return asyncio.run(agent.arun(prompt, **options))

    def resume(self, agent: Agent, path: Path) -> RunResult:
        if self.mode == "run":
            return resume(agent, path)
        self._async_model(agent)
        return asyncio.run(aresume(agent, path))


@pytest.fixture(params=["run", "arun"])
def runner(request: pytest.FixtureRequest) -> Runner:
    return Runner(request.param)


def last_event(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(path.read_text().splitlines()[-1])
    return record


# -- the shared behaviour set: every test runs through `run` and through `arun` -------------


def test_tool_is_executed_and_its_result_fed_back(runner: Runner) -> None:
    agent, llm = agent_with(
        [
            reply("Let me compute.", tool_use("calculator", {"a": 123456, "op": "*", "b": 789}, id="t1")),
            reply("It is 97,406,784."),
        ]
    )
    result = runner.run(agent, "What is 123456 x 789?")
    assert result.text == "It is 97,406,784." and result.stop_reason == "end_turn"
    [fed_back] = results_of(llm.requests[1])
    assert fed_back == {"type": "tool_result", "tool_use_id": "t1", "content": "97406784"}
    assert all(validate_request(r) == [] for r in llm.requests)
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user", "assistant"]


def test_unknown_tool_and_exception_are_error_results_and_the_loop_goes_on(runner: Runner) -> None:
    agent, llm = agent_with(
        [reply(tool_use("teleport", {}, id="u1"), tool_use("explode", {}, id="u2")), reply("Both failed.")]
    )
    result = runner.run(agent, "try things")
    unknown, failed = results_of(llm.requests[1])
    assert unknown["content"] == "unknown tool: teleport" and unknown["is_error"] is True
    assert failed["is_error"] is True and failed["content"] == "ValueError: no luck"
    assert result.text == "Both failed."


def test_max_steps_makes_exactly_that_many_calls_then_raises_with_the_partial_result(runner: Runner) -> None:
    agent, llm = agent_with([reply(tool_use("record", {"note": str(i)})) for i in range(10)], max_steps=3)
    with pytest.raises(StepBudgetExceeded) as raised:
        runner.run(agent, "loop forever")
    assert len(llm.requests) == 3
    partial = raised.value.result
    assert partial is not None and len(partial.steps) == 3 and partial.stop_reason == "max_steps"
    assert validate_request({"model": "m", "max_tokens": 1, "messages": partial.messages}) == []


def test_parallel_calls_keep_call_order_in_one_user_message(runner: Runner) -> None:
    calls.clear()
    uses = [tool_use("record", {"note": n}, id=f"p{n}") for n in ("x", "y", "z")]
    agent, llm = agent_with([reply(*uses), reply("done")])
    runner.run(agent, "record three")
    last = llm.requests[1]["messages"][-1]
    assert [b["tool_use_id"] for b in last["content"]] == ["px", "py", "pz"]
    assert [b["content"] for b in last["content"]] == ["recorded x", "recorded y", "recorded z"]
    assert sorted(calls) == ["x", "y", "z"]


def test_max_tokens_never_runs_a_cut_off_tool_call(runner: Runner) -> None:
    calls.clear()
    cut = reply("I will record", tool_use("record", {"note": "half"}), stop_reason="max_tokens")
    agent, llm = agent_with([cut, cut])  # cut off, retried once with more room, cut off again
    result = runner.run(agent, "do it")
    assert calls == [] and len(llm.requests) == 2
    assert llm.requests[1]["max_tokens"] == 2 * llm.requests[0]["max_tokens"]
    assert result.stop_reason == "max_tokens"
    assert result.messages[-1]["content"] == [{"type": "text", "text": "I will record"}]


def test_the_callers_history_is_never_mutated(runner: Runner) -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "earlier question"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]},
    ]
    snapshot = copy.deepcopy(history)
    agent, llm = agent_with([reply(tool_use("record", {"note": "a"})), reply("ok")])
    result = runner.run(agent, "next", history=history)
    assert history == snapshot
    assert strip_cache_control(llm.requests[0]["messages"][:2]) == snapshot
    result.messages[0]["content"][0]["text"] = "changed"
    assert history == snapshot


def test_token_budget_stops_before_the_call_that_would_exceed_it(runner: Runner) -> None:
    script = [reply(tool_use("record", {"note": str(i)}), input_tokens=1000) for i in range(10)]
    agent, llm = agent_with(script, max_input_tokens=2500)
    with pytest.raises(TokenBudgetExceeded) as raised:
        runner.run(agent, "go")
    assert len(llm.requests) == 2
    assert raised.value.result is not None and raised.value.result.usage.prompt == 2000


def test_cost_budget_stops_before_the_call_that_would_exceed_it(runner: Runner) -> None:
    script = [
        reply(tool_use("record", {"note": str(i)}), input_tokens=10_000, output_tokens=1_000)
        for i in range(10)
    ]
    agent, llm = agent_with(script, max_cost_usd=0.2)
    with pytest.raises(CostBudgetExceeded) as raised:
        runner.run(agent, "go")
    spent = raised.value.result.usage.cost_usd if raised.value.result else None
    assert spent is not None and spent <= 0.2 and len(llm.requests) == 2


def test_a_hanging_tool_times_out_and_the_run_goes_on(runner: Runner) -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def stuck() -> str:
        """Never answers."""
        release.wait(30)
        return "too late"

    @tool(timeout=0.2)
    async def stuck_async() -> str:
        """Never answers either."""
        await asyncio.sleep(30)
        return "too late"

    script = [reply(tool_use("stuck", id="s1"), tool_use("stuck_async", id="s2")), reply("moved on")]
    llm = ScriptedLLM(script)
    started = time.monotonic()
    try:
        result = runner.run(Agent(llm=llm, tools=[stuck, stuck_async], artifacts_dir=None), "go")
    finally:
        release.set()
    assert time.monotonic() - started < 5
    sent = llm.requests[1]["messages"][-1]["content"]
    assert [b["content"] for b in sent] == [
        "timeout: stuck did not finish in 0.2s",
        "timeout: stuck_async did not finish in 0.2s",
    ]
    assert result.text == "moved on" and validate_request(llm.requests[1]) == []


def test_an_irreversible_tool_that_times_out_is_not_repeated(runner: Runner, tmp_path: Path) -> None:
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
    agent = Agent(
        llm=llm, tools=[wire_money], extensions=[Approval(allow=["wire_money"])], artifacts_dir=None
    )
    try:
        runner.run(agent, "pay X", extensions=[Session(tmp_path / "s.jsonl")])
    finally:
        release.set()
    assert runs == ["X"]
    assert llm.requests[2]["messages"][-1]["content"][0]["content"].startswith("already done: wire_money")


def test_default_denies_an_irreversible_tool_and_an_approver_can_allow(runner: Runner) -> None:
    done: list[str] = []

    @tool(irreversible=True)
    def refund(order_id: str) -> str:
        """Refund an order.

        Args:
            order_id: the order.
        """
        done.append(order_id)
        return f"refunded {order_id}"

    llm = ScriptedLLM([reply(tool_use("refund", {"order_id": "A1"}, id="r1")), reply("no")])
    runner.run(Agent(llm=llm, tools=[refund], artifacts_dir=None), "Refund A1.")
    denial = results_of(llm.requests[1])[0]
    assert done == [] and denial["is_error"] is True and denial["content"].startswith("denied: ")

    asked: list[ToolCall] = []
    llm = ScriptedLLM([reply(tool_use("refund", {"order_id": "A1"}, id="r1")), reply("yes")])
    approver = lambda call: asked.append(call) or True  # noqa: E731
    agent = Agent(llm=llm, tools=[refund], artifacts_dir=None, extensions=[Approval(approver)])
    runner.run(agent, "Refund A1.")
    assert done == ["A1"] and [c.id for c in asked] == ["r1"]


def test_a_reply_cut_off_while_thinking_is_retried_once_with_more_room(runner: Runner) -> None:
    thought = {"type": "thinking", "thinking": "", "signature": "sig"}
    llm = ScriptedLLM([reply(thought, stop_reason="max_tokens"), reply(thought, "the answer")])
    seen: list[Event] = []
    result = runner.run(Agent(llm=llm, max_tokens=1000, on_event=seen.append), "x")
    assert result.text == "the answer" and [r["max_tokens"] for r in llm.requests] == [1000, 2000]
    assert len(result.steps) == 2 and {u.step for u in result.steps} == {1}
    assert [e.kind for e in seen if e.kind == "retry"] == ["retry"]


def test_events_report_steps_and_tools_in_order(runner: Runner) -> None:
    seen: list[Event] = []
    llm = ScriptedLLM([reply(tool_use("record", {"note": "a"})), reply("done")])
    runner.run(Agent(llm=llm, tools=[record], artifacts_dir=None, on_event=seen.append), "go")
    assert [(e.kind, e.step, e.tool) for e in seen] == [
        ("step_start", 1, None),
        ("step_end", 1, None),
        ("tool_call", 1, "record"),
        ("tool_result", 1, "record"),
        ("step_start", 2, None),
        ("step_end", 2, None),
    ]
    call, result = (e for e in seen if e.kind in ("tool_call", "tool_result"))
    assert call.input == {"note": "a"}  # what a progress display shows of a call: its arguments
    assert result.text == "recorded a"  # and of its result: what came back


def refund_answers(request: dict[str, Any]) -> dict[str, Any]:
    turns = sum(m["role"] == "assistant" for m in request["messages"])
    script = [
        reply(tool_use("get_order", {"order_id": "A1"})),
        reply(tool_use("request_refund", {"order_id": "A1"})),
        reply("A1 is refunded."),
    ]
    return script[turns]


def refund_agent(llm: LLM, fault: Callable[[], None], counts: dict[str, int], **options: Any) -> Agent:
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

    options.setdefault("artifacts_dir", None)
    trusted = [Approval(allow=["request_refund"])]
    return Agent(llm=llm, tools=[get_order, request_refund], extensions=trusted, **options)


@pytest.mark.parametrize(
    ("fault", "sdk_error", "billed"),
    [
        ({"status": 429, "retry_after": 0.01}, anthropic.RateLimitError, False),
        ({"delay": 1.0}, anthropic.APITimeoutError, True),
    ],
    ids=["429", "timeout"],
)
def test_a_model_call_that_still_fails_after_retries_ends_typed_and_resumable(
    runner: Runner,
    simulator: Simulator,
    tmp_path: Path,
    fault: dict[str, Any],
    sdk_error: type[Exception],
    billed: bool,
) -> None:
    sim = simulator(refund_answers)
    counts = {"get_order": 0, "request_refund": 0}
    llm = runner.sim_llm(sim, max_retries=1, timeout=0.25)
    agent = refund_agent(llm, lambda: sim.inject(**fault, times=2), counts)
    path = tmp_path / "s.jsonl"
    with pytest.raises(ModelCallFailed) as failure:
        runner.run(agent, "Refund A1.", extensions=[Session(path)])
    assert isinstance(failure.value.__cause__, sdk_error)
    assert len(sim.requests) == 4
    partial = failure.value.result
    assert partial is not None and partial.stop_reason == "error"
    assert [u.purpose for u in partial.steps] == [
        "step",
        "step",
        *(["failed_attempt"] * (2 if billed else 0)),
    ]
    assert last_event(path)["event"] == "stopped" and last_event(path)["error"] == "ModelCallFailed"

    resumed = runner.resume(refund_agent(runner.sim_llm(sim), lambda: None, counts), path)
    assert resumed.text == "A1 is refunded." and counts == {"get_order": 1, "request_refund": 1}
    assert sim.rejected == []


def test_a_429_with_retry_after_is_absorbed_and_streamed_text_is_reported(
    runner: Runner, simulator: Simulator
) -> None:
    sim = simulator(refund_answers)
    counts = {"get_order": 0, "request_refund": 0}
    seen: list[Event] = []
    llm = runner.sim_llm(sim, max_retries=1)
    inject = lambda: sim.inject(status=429, retry_after=0.05)  # noqa: E731
    agent = refund_agent(llm, inject, counts, on_event=seen.append)
    assert runner.run(agent, "Refund A1.").text == "A1 is refunded."
    assert len(sim.requests) == 4 and counts["request_refund"] == 1
    assert "".join(e.text for e in seen if e.kind == "text") == "A1 is refunded."
    assert all(r.get("stream") is True for r in sim.requests)


# -- what only the async side has ----------------------------------------------------------


def test_async_tools_run_concurrently_on_the_event_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    @tool
    async def nap(label: str) -> str:
        """Sleep a little.

        Args:
            label: a name.
        """
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0.3)
        return f"slept {label}"

    llm = ScriptedLLM([reply(tool_use("nap", {"label": "a"}), tool_use("nap", {"label": "b"})), reply("ok")])
    agent = Agent(llm=llm, tools=[nap], artifacts_dir=None)
    seconds: list[float] = []

    async def main() -> RunResult:
        started = time.monotonic()
        result = await agent.arun("nap twice")
        seconds.append(time.monotonic() - started)
        assert loops == [asyncio.get_running_loop()] * 2  # on the caller's loop, not in threads
        return result

    result = asyncio.run(main())
    assert seconds[0] < 0.5
    assert [b["content"] for b in results_of(llm.requests[1])] == ["slept a", "slept b"]
    assert result.text == "ok"


def test_sync_tools_run_in_threads_and_never_block_the_event_loop() -> None:
    threads: list[threading.Thread] = []

    @tool
    def block(label: str) -> str:
        """Block a little.

        Args:
            label: a name.
        """
        threads.append(threading.current_thread())
        time.sleep(0.3)
        return f"blocked {label}"

    llm = ScriptedLLM(
        [reply(tool_use("block", {"label": "a"}), tool_use("block", {"label": "b"})), reply("ok")]
    )
    agent = Agent(llm=llm, tools=[block], artifacts_dir=None)
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.02)

    async def main() -> float:
        tick = asyncio.create_task(ticker())
        started = time.monotonic()
        await agent.arun("block twice")
        took = time.monotonic() - started
        tick.cancel()
        return took

    took = asyncio.run(main())
    assert took < 0.5 and len(threads) == 2
    assert all(t is not threading.main_thread() for t in threads)
    assert len(ticks) >= 5  # the loop kept ticking while the tools blocked


def test_two_runs_share_one_event_loop_without_mixing(simulator: Simulator) -> None:
    sim = simulator(refund_answers)
    llm = AsyncAnthropicLLM(base_url=sim.base_url, api_key="sim", max_retries=0)
    counts = {"get_order": 0, "request_refund": 0}
    agent = refund_agent(llm, lambda: None, counts)

    async def main() -> list[RunResult]:
        return list(await asyncio.gather(*(agent.arun(f"Refund A1, run {i}.") for i in range(5))))

    results = asyncio.run(main())
    assert [r.text for r in results] == ["A1 is refunded."] * 5 and counts["request_refund"] == 5
    for i, result in enumerate(results):
        assert result.messages[0]["content"][0]["text"] == f"Refund A1, run {i}."


@pytest.mark.parametrize("kind", ["async tool", "sync tool in a thread"])
def test_cancelled_mid_tool_the_session_resumes_without_repeating_the_irreversible_call(
    tmp_path: Path, kind: str
) -> None:
    started, release, wired = threading.Event(), threading.Event(), []

    async def wire_async(to: str) -> str:
        """Send money.

        Args:
            to: the account.
        """
        wired.append(to)
        started.set()
        await asyncio.sleep(30)
        return "sent"

    def wire_sync(to: str) -> str:
        """Send money.

        Args:
            to: the account.
        """
        wired.append(to)
        started.set()
        release.wait(30)
        return "sent"

    wire_money = tool(wire_async if kind == "async tool" else wire_sync, name="wire_money", irreversible=True)
    path = tmp_path / "s.jsonl"
    first = ScriptedLLM([reply(tool_use("wire_money", {"to": "X"}, id="w1"))])
    agent = Agent(
        llm=first, tools=[wire_money], extensions=[Approval(allow=["wire_money"])], artifacts_dir=None
    )

    async def main() -> None:
        task = asyncio.create_task(agent.arun("pay X", extensions=[Session(path)]))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
    finally:
        release.set()
    time.sleep(0.05)  # a thread that finishes after the cancellation must not record a result
    assert last_event(path)["event"] == "stopped" and last_event(path)["error"] == "CancelledError"

    second = ScriptedLLM([reply("I will check whether the payment went out.")])
    again = Agent(
        llm=second, tools=[wire_money], extensions=[Approval(allow=["wire_money"])], artifacts_dir=None
    )
    result = asyncio.run(aresume(again, path))
    assert wired == ["X"]  # never repeated
    [unknown] = results_of(second.requests[0])
    assert unknown["is_error"] is True and unknown["content"].startswith("outcome unknown: wire_money")
    assert validate_request(second.requests[0]) == []
    assert result.stop_reason == "end_turn"


def test_cancelled_mid_model_call_the_session_resumes_from_the_last_answer(tmp_path: Path) -> None:
    calls.clear()
    waiting = asyncio.Event()
    scripted = ScriptedLLM([reply(tool_use("record", {"note": "a"})), reply("done")])

    class SlowSecondCall:
        async def acreate(self, request: Mapping[str, Any]) -> Message:
            if len(scripted.requests) == 1:  # the second call hangs until cancelled
                waiting.set()
                await asyncio.sleep(30)
            return scripted.create(request)

    path = tmp_path / "s.jsonl"
    agent = Agent(llm=SlowSecondCall(), tools=[record], artifacts_dir=None)  # type: ignore[arg-type]

    async def main() -> None:
        task = asyncio.create_task(agent.arun("record a", extensions=[Session(path)]))
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert last_event(path)["event"] == "stopped" and last_event(path)["error"] == "CancelledError"
    result = resume(Agent(llm=scripted, tools=[record], artifacts_dir=None), path)
    assert result.text == "done" and calls == ["a"]
    assert validate_request(scripted.requests[-1]) == []
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user", "assistant"]


def test_run_inside_a_running_event_loop_goes_to_a_worker_thread() -> None:
    agent, _ = agent_with([reply("fine")])

    async def main() -> str:
        return agent.run("x").text  # blocks this loop, but works

    assert asyncio.run(main()) == "fine"


def test_plain_method_overrides_of_coroutine_steps_still_work() -> None:
    seen: list[str] = []

    class Overriding(Agent):
        def call_model(self, request: dict[str, Any], state: RunState) -> Any:
            seen.append("call_model")
            return super().call_model(request, state)

        def run_tools(self, calls: Any, state: RunState) -> Any:
            seen.append("run_tools")
            return super().run_tools(calls, state)

    llm = ScriptedLLM([reply(tool_use("record", {"note": "a"})), reply("ok")])
    agent = Overriding(llm=llm, tools=[record], artifacts_dir=None)
    assert agent.run("go").text == "ok"
    assert (
        asyncio.run(
            Overriding(llm=ScriptedLLM(llm.script), tools=[record], artifacts_dir=None).arun("go")
        ).text
        == "ok"
    )
    assert seen == ["call_model", "run_tools", "call_model"] * 2


def test_async_anthropic_llm_serves_run_too_and_drops_its_retries(simulator: Simulator) -> None:
    sim = simulator(refund_answers)
    llm = AsyncAnthropicLLM(base_url=sim.base_url, api_key="sim", max_retries=3)
    counts = {"get_order": 0, "request_refund": 0}
    agent = refund_agent(llm, lambda: None, counts)
    assert agent.model_retries == 3
    assert isinstance(agent.llm, AsyncAnthropicLLM)
    assert agent.llm.client.max_retries == 0 and agent.llm.aclient.max_retries == 0
    assert agent.run("Refund A1.").text == "A1 is refunded."  # the sync side, twice over
    assert agent.run("Refund A1.").text == "A1 is refunded."
    assert agent.llm.refine(MODELS, "claude-opus-5") is not None


def test_what_an_async_tool_raises_is_its_error_result_even_a_cancellation() -> None:
    @tool
    async def odd(kind: str) -> str:
        """Raises.

        Args:
            kind: which error.
        """
        raise asyncio.CancelledError() if kind == "cancel" else SystemExit(3)

    llm = ScriptedLLM(
        [reply(tool_use("odd", {"kind": "cancel"}), tool_use("odd", {"kind": "exit"})), reply("ok")]
    )
    result = asyncio.run(Agent(llm=llm, tools=[odd], artifacts_dir=None).arun("go"))
    assert [b["content"] for b in results_of(llm.requests[1])] == ["CancelledError", "SystemExit: 3"]
    assert result.text == "ok"


def test_compaction_under_arun_calls_the_summarizer_off_the_event_loop() -> None:
    summarized_in: list[int] = []
    steps: list[int] = []

    @tool
    def search(n: int) -> str:
        """Search the records.

        Args:
            n: which page.
        """
        return f"page {n}: " + "r" * 3000

    def answer(request: Mapping[str, Any]) -> Any:
        if "tools" not in request:
            summarized_in.append(threading.get_ident())
            return reply("Summary: searching the records.")
        steps.append(1)
        return reply(tool_use("search", {"n": len(steps)})) if len(steps) < 20 else reply("finished")

    class Both(ScriptedLLM):
        """Steps through the async seam, summaries through the sync one (as AsyncAnthropicLLM)."""

        async def acreate(self, request: Mapping[str, Any]) -> Message:
            return self.create(request)

    llm = Both([answer] * 80)
    options: dict[str, Any] = {"max_context_tokens": 6000, "keep_recent": 100, "cache": False}
    agent = Agent(llm=llm, tools=[search], max_steps=40, artifacts_dir=None, **options)

    async def main() -> tuple[RunResult, int]:
        return await agent.arun("Search everything."), threading.get_ident()

    result, loop_thread = asyncio.run(main())
    assert result.text == "finished"
    assert summarized_in and loop_thread not in summarized_in
    assert [s.purpose for s in result.steps].count("summary") == len(summarized_in)
    assert all(validate_request(r) == [] for r in llm.requests)


def test_ctrl_c_during_run_still_stops_it_at_once_and_records_stopped(tmp_path: Path) -> None:
    release = threading.Event()

    @tool
    def wait() -> str:
        """Waits."""
        release.wait(10)
        return "done"

    main = threading.main_thread().ident
    assert main is not None
    llm = ScriptedLLM([reply(tool_use("wait", {})), reply("ok")])
    path = tmp_path / "s.jsonl"
    threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()  # Ctrl-C, as the OS sends it
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            Agent(llm=llm, tools=[wait], artifacts_dir=None).run("go", extensions=[Session(path)])
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert last_event(path)["event"] == "stopped"
