"""One redaction pass for every writer (issue 27): the configured `ANTHROPIC_API_KEY`,
printed by a tool or quoted in a 401, reaches neither the model, nor the request log, nor
an error message, nor the `agent` logger."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent import Agent, ModelCallFailed, tool
from agent.ext.request_log import RequestLog
from agent.testing import ScriptedLLM, reply, tool_use
from agent.testing.simulator import MessagesSimulator

KEY = "gw-proxy-key-7f3a9c2e5b1d"  # a gateway key: not shaped like sk-ant-, still the configured one


@tool
def show_env() -> str:
    """Show the environment (a tool that leaks it)."""
    return f"ANTHROPIC_API_KEY={KEY}\nsk-ant-api03-abcdefghijklmnop also here\nPATH=/usr/bin"


@tool
def fail_with_key() -> str:
    """Fail, quoting the key."""
    raise RuntimeError(f"auth failed for key {KEY}")


def test_a_key_a_tool_prints_reaches_neither_the_model_nor_the_request_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    log_path = tmp_path / "requests.jsonl"
    llm = ScriptedLLM([reply(tool_use("show_env"), tool_use("fail_with_key")), reply("done")])
    agent = Agent(
        llm=llm,
        tools=[show_env, fail_with_key],
        artifacts_dir=tmp_path / "a",
        extensions=[RequestLog(log_path)],
    )
    with caplog.at_level("WARNING", logger="agent"):
        agent.run("What is in the environment?")
    sent = json.dumps(llm.requests)
    assert KEY not in sent and "sk-ant-api03-abcdefghijklmnop" not in sent
    assert "[redacted]" in sent and "PATH=/usr/bin" in sent  # the rest of the result is kept
    assert KEY not in log_path.read_text()
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert any("fail_with_key" in record.getMessage() for record in caplog.records)


def test_a_401_that_quotes_the_key_is_an_error_message_without_it(
    simulator: Callable[..., MessagesSimulator],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    sim = simulator()
    sim.inject(status=503, message=f"upstream refused key {KEY}")
    sim.inject(status=401, message=f"invalid x-api-key {KEY}")
    agent = Agent(llm=sim.llm(), model="claude-opus-5", model_retries=1, artifacts_dir=None)
    with caplog.at_level("WARNING", logger="agent"), pytest.raises(ModelCallFailed) as failed:
        agent.run("Hello")
    assert KEY not in str(failed.value) and "[redacted]" in str(failed.value)
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert any("retry" in record.getMessage() for record in caplog.records)
