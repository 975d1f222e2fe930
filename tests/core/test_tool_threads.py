"""Every sync tool call runs on a daemon thread of the run (`agent.steps.Workers`), in a fresh context.

The inline path that ran a turn's lone call on the calling thread under SIGALRM is gone
(it saved two thread wake-ups a step and broke timeouts of tools that swallow signals).
What the thread promises: the calling thread is never blocked by a tool, each call sees a
fresh `contextvars` context, a hung call is abandoned at its timeout with an error result,
a tool's own KeyboardInterrupt is its failure, and signals are left as they were.
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
from agent.testing import ScriptedLLM, reply, tool_use
from agent.tool_runs import run_all
from agent.tools import ToolCall, ToolRegistry

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
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "SIGINT untouched"


def run(tools: list[Any], *turns: list[dict[str, Any]]) -> Any:
    script = [reply(*calls) for calls in turns] + [reply("done")]
    return Agent(llm=ScriptedLLM(script), tools=tools, artifacts_dir=None).run("go")


def test_a_lone_sync_call_runs_on_its_own_thread_with_a_fresh_context_each_time() -> None:
    result = run([where], [tool_use("where", {"label": "a"})], [tool_use("where", {"label": "b"})])
    assert result.text == "done"
    assert threading.get_ident() not in {ident for ident, _ in seen}, "never on the calling thread"
    assert [value for _, value in seen] == ["fresh", "fresh"], "nothing one call set leaks into the next"


def test_several_calls_in_a_turn_still_run_in_parallel_threads() -> None:
    run([where], [tool_use("where", {"label": "a"}), tool_use("where", {"label": "b"})])
    assert threading.get_ident() not in {ident for ident, _ in seen}


def test_a_hung_call_is_abandoned_at_its_timeout() -> None:
    release = threading.Event()

    @tool(timeout=0.3)
    def hang() -> str:
        """Hangs, and swallows every Exception."""
        try:
            release.wait(10)
            return "late"
        except Exception:
            return "swallowed"

    started = time.monotonic()
    try:
        result = run([hang], [tool_use("hang", {})])
    finally:
        release.set()
    block = result.messages[2]["content"][0]
    assert block["is_error"] and block["content"] == "timeout: hang did not finish in 0.3s"
    assert time.monotonic() - started < 3, "the run went on at the timeout"


def test_a_tools_own_keyboard_interrupt_is_its_failure() -> None:

    @tool
    def interrupts() -> str:
        """Raises KeyboardInterrupt itself."""
        raise KeyboardInterrupt("mine")

    outcome = run_all(ToolRegistry([interrupts]), [ToolCall("1", "interrupts", {})])[0]
    assert outcome.is_error and outcome.value == "KeyboardInterrupt: mine"


def test_a_runs_calls_reuse_its_idle_threads_and_the_threads_end_with_the_run() -> None:
    threads: list[threading.Thread] = []  # the objects, held: a new thread may get an old one's ident

    @tool
    def which() -> str:
        """Notes the thread it runs on."""
        threads.append(threading.current_thread())
        return marker.get()

    result = run([which], *([tool_use("which", {})] for _ in range(4)))
    assert result.text == "done"
    assert len(set(threads)) == 1, "one call at a time: one thread, reused"
    assert [b["content"] for m in result.messages[2::2] for b in m["content"]] == ["fresh"] * 4
    threads[0].join(5)
    assert not threads[0].is_alive(), "the run's idle thread ended with the run"


def test_a_hung_calls_thread_is_never_handed_the_next_call() -> None:
    release = threading.Event()
    hung: list[int] = []

    @tool(timeout=0.2)
    def hang() -> str:
        """Hangs until released."""
        hung.append(threading.get_ident())
        release.wait(10)
        return "late"

    try:
        result = run([hang, where], [tool_use("hang", {})], [tool_use("where", {"label": "next"})])
    finally:
        release.set()
    assert result.text == "done"
    assert seen and seen[0][0] != hung[0], "the next call ran on another thread"


def test_workers_run_each_job_in_a_fresh_context_and_a_closed_set_still_runs_a_late_job() -> None:
    from agent.steps import Workers

    workers, done = Workers(), threading.Event()
    ran: list[str] = []

    def job(label: str) -> str:
        value = f"{label}:{marker.get()}"
        marker.set("dirty")
        return value

    def then(value: str) -> None:
        ran.append(value)
        done.set()

    for label in ("a", "b"):
        done.clear()
        workers.start(lambda label=label: job(label), then, "tool-test")  # type: ignore[misc]
        assert done.wait(5)
    workers.close()
    done.clear()
    workers.start(lambda: job("late"), then, "tool-test")  # a straggler after the run: runs, then ends
    assert done.wait(5)
    assert ran == ["a:fresh", "b:fresh", "late:fresh"]
