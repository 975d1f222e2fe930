"""A turn's only sync call runs on the calling thread, its timeout kept by SIGALRM.

The worker thread it replaces cost two thread wake-ups a step (`agent.alarm`). What the
thread promised must still hold: the timeout (now the call is stopped, not abandoned), a
fresh context for each call, a tool's own KeyboardInterrupt as its failure and the user's
Ctrl-C as the end of the run, and signals left exactly as they were. Where those cannot be
kept (another handler owns SIGALRM or SIGINT, a gated tool, several calls, another thread),
the call goes to a worker thread as before.
"""

from __future__ import annotations

import contextvars
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent import Agent, tool
from agent.registry import ToolCall, ToolRegistry
from agent.testing import ScriptedLLM, reply, tool_use

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timers only")

seen: list[tuple[int, str]] = []
marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="fresh")


@tool
def where(label: str) -> str:
    """Says which thread ran it.

    Args:
        label: a name.
    """
    seen.append((threading.get_ident(), marker.get()))
    marker.set("dirty")
    return label


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    seen.clear()
    yield
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL, "SIGALRM put back"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "SIGINT put back"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), "no timer left running"


def run(tools: list[Any], *turns: list[dict[str, Any]]) -> Any:
    script = [reply(*calls) for calls in turns] + [reply("done")]
    return Agent(llm=ScriptedLLM(script), tools=tools, artifacts_dir=None).run("go")


def test_a_lone_sync_call_runs_here_with_a_fresh_context_each_time() -> None:
    result = run([where], [tool_use("where", {"label": "a"})], [tool_use("where", {"label": "b"})])
    assert result.text == "done"
    assert [ident for ident, _ in seen] == [threading.get_ident()] * 2, "no thread hop"
    assert [value for _, value in seen] == ["fresh", "fresh"], "nothing one call set leaks into the next"


def test_several_calls_in_a_turn_still_run_in_parallel_threads() -> None:
    run([where], [tool_use("where", {"label": "a"}), tool_use("where", {"label": "b"})])
    assert threading.get_ident() not in {ident for ident, _ in seen}


def test_a_hung_call_is_stopped_at_its_timeout_not_left_running() -> None:
    events: list[str] = []
    release = threading.Event()

    @tool(timeout=0.3)
    def hang() -> str:
        """Hangs, and swallows every Exception."""
        try:
            release.wait(10)
            return "late"
        except Exception:  # the point: a timeout is not an Exception to swallow
            return "swallowed"
        finally:
            events.append("stopped")

    started = time.monotonic()
    try:
        result = run([hang], [tool_use("hang", {})])
    finally:
        release.set()
    block = result.messages[2]["content"][0]
    assert block["is_error"] and block["content"] == "timeout: hang did not finish in 0.3s"
    assert events == ["stopped"] and time.monotonic() - started < 3, "interrupted, not abandoned"


def test_a_tools_own_keyboard_interrupt_is_its_failure() -> None:
    """(The user's Ctrl-C during a lone call, which now runs here, still ends the run at once:
    `test_adversarial_tools.test_a_real_interrupt_of_the_main_thread_still_stops_the_run`.)"""

    @tool
    def interrupts() -> str:
        """Raises KeyboardInterrupt itself."""
        raise KeyboardInterrupt("mine")

    outcome = ToolRegistry([interrupts]).run_all([ToolCall("1", "interrupts", {})])[0]
    assert outcome.is_error and outcome.value == "KeyboardInterrupt: mine"


@pytest.mark.parametrize("owned", [signal.SIGALRM, signal.SIGINT])
def test_a_signal_someone_else_handles_sends_the_call_to_a_thread(owned: signal.Signals) -> None:
    calls: list[int] = []

    def theirs(signum: int, frame: Any) -> None:
        calls.append(signum)

    before = signal.signal(owned, theirs)
    try:
        run([where], [tool_use("where", {"label": "a"})])
        assert signal.getsignal(owned) is theirs, "their handler untouched"
    finally:
        signal.signal(owned, before)
    assert seen and seen[0][0] != threading.get_ident()


def test_a_gated_tool_keeps_its_thread() -> None:
    @tool(irreversible=True)
    def refund(order: str) -> str:
        """Refunds an order.

        Args:
            order: the order id.
        """
        seen.append((threading.get_ident(), "refund"))
        return "refunded"

    llm = ScriptedLLM([reply(tool_use("refund", {"order": "A-1"})), reply("done")])
    Agent(llm=llm, tools=[refund], artifacts_dir=None, approver=lambda call: True).run("go")
    assert seen and seen[0][0] != threading.get_ident(), "abandoned at a timeout, never cut halfway"


def test_off_the_main_thread_calls_go_to_threads() -> None:
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(run([where], [tool_use("where", {"label": "a"})])))
    worker.start()
    worker.join(10)
    assert done and seen and seen[0][0] not in (threading.get_ident(), worker.ident)
