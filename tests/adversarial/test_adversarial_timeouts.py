"""Timeouts that hold in every path (issue 27): a sync tool that swallows everything, a
result whose `__str__` hangs, an async tool that blocks the event loop, and an MCP server
that never answers `initialize`."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.testing import ScriptedLLM, reply, tool_use

HERE = Path(__file__).resolve().parents[1] / "ext"


@tool(timeout=1)
def stubborn() -> str:
    """Retries forever, swallowing every exception."""
    while True:
        try:
            time.sleep(0.05)
        except BaseException:
            continue


class Hangs:
    def __str__(self) -> str:
        time.sleep(20)
        return "finally"


@tool(timeout=1)
def hangs_when_shown() -> Hangs:
    """Returns a value whose text takes 20 s to make."""
    return Hangs()


@tool(timeout=1)
async def blocks_the_loop() -> str:
    """An async tool that calls blocking code."""
    time.sleep(2.5)
    return "slept"


def one_call(name: str) -> tuple[float, dict[str, Any]]:
    llm = ScriptedLLM([reply(tool_use(name)), reply("done")])
    started = time.monotonic()
    Agent(llm=llm, tools=[stubborn, hangs_when_shown, blocks_the_loop], artifacts_dir=None).run("Go.")
    return time.monotonic() - started, llm.requests[1]["messages"][-1]["content"][0]


@pytest.mark.parametrize("name", ["stubborn", "hangs_when_shown"])
def test_a_sync_tool_is_abandoned_at_its_timeout_whatever_it_does(name: str) -> None:
    seconds, answer = one_call(name)
    assert seconds < 3 and answer["is_error"] is True and answer["content"].startswith("timeout:")


def test_an_async_tool_that_blocks_the_loop_is_reported_and_its_late_result_discarded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="agent"):
        _, answer = one_call("blocks_the_loop")
    assert answer["is_error"] is True and answer["content"].startswith("timeout:")
    assert any("blocked the event loop" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_an_mcp_server_that_never_answers_is_given_up_on_time_and_stopped(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from agent.ext.mcp import McpUnavailable, StdioServer, mcp_tools

    pidfile = tmp_path / "pid"
    server = StdioServer(sys.executable, [str(HERE / "mcp_silent_server.py")], env={"PIDFILE": str(pidfile)})
    started = time.monotonic()
    with (
        pytest.raises(McpUnavailable, match="did not answer within 2s"),
        mcp_tools(server, startup_timeout=2),
    ):
        pass
    assert time.monotonic() - started < 8  # the timeout, then a bounded stop (close stdin, terminate)
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
