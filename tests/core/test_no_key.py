"""Without a key the first call says so, naming ANTHROPIC_API_KEY and the offline way, before any request."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from agent import Agent, AnthropicLLM, AsyncAnthropicLLM, MissingAPIKey, ModelCallFailed, tool

README = Path(__file__).resolve().parents[2] / "README.md"
REQUEST = {"model": "claude-opus-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@tool
def echo(text: str) -> str:
    """Echo.

    Args:
        text: what to echo.
    """
    return text


def test_every_way_into_the_sdk_refuses_before_sending() -> None:
    llm = AnthropicLLM()
    for attempt in (
        lambda: llm.create(REQUEST),
        lambda: llm.stream(REQUEST),
        lambda: llm.count_tokens(REQUEST),
    ):
        with pytest.raises(MissingAPIKey, match="set ANTHROPIC_API_KEY") as caught:
            attempt()
        assert "Offline" in str(caught.value) and "python -m examples.e01_loop" in str(caught.value)
    with pytest.raises(MissingAPIKey):
        asyncio.run(AsyncAnthropicLLM().acreate(REQUEST))
    assert AnthropicLLM(api_key="k").client.api_key == "k"  # a key given as an argument is enough


@pytest.mark.parametrize("how", ["run", "arun"])
def test_an_agent_without_a_key_stops_at_its_first_call_with_the_reason(how: str) -> None:
    agent = Agent(tools=[echo]) if how == "run" else Agent(tools=[echo], llm=AsyncAnthropicLLM())
    with pytest.raises(MissingAPIKey, match="ANTHROPIC_API_KEY") as caught:
        agent.run("hi") if how == "run" else asyncio.run(agent.arun("hi"))
    assert not isinstance(caught.value, ModelCallFailed) and caught.value.__cause__ is None
    assert caught.value.result is not None and len(caught.value.result.steps) == 0  # nothing sent or billed


def test_without_a_key_run_raises_a_short_traceback_naming_the_variable() -> None:
    import subprocess
    import sys

    code = "from agent import Agent\nAgent().run('hi')\n"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ANTHROPIC_")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) <= 8, done.stderr
    assert lines[-1].startswith("agent.errors.MissingAPIKey: no Anthropic API key: set ANTHROPIC_API_KEY")
    assert "event loop" not in done.stderr and "During handling" not in done.stderr


def test_the_offline_line_the_missing_key_message_suggests_runs_as_pasted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(MissingAPIKey) as caught:
        Agent().run("hi")
    suggested = re.findall(r"`([^`]+)`", str(caught.value))
    assert len(suggested) == 1
    exec(suggested[0], {})
    assert capsys.readouterr().out == "Hello!\n"


def test_the_readme_hello_agent_says_why_offline_and_its_twin_runs_as_written() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Hello, agent") : text.index("## How one step works")]
    live, twin = re.findall(r"```python[^\n]*\n(.*?)```", section, re.S)[:2]
    namespace: dict[str, object] = {}
    with pytest.raises(MissingAPIKey, match="set ANTHROPIC_API_KEY"):
        exec(live, namespace)
    exec(twin, namespace)
    result = namespace["result"]
    assert result.text == "0.1 + 0.2 = 0.30000000000000004"  # type: ignore[attr-defined]
    sent = result.messages[2]["content"][0]  # type: ignore[attr-defined]
    assert sent["type"] == "tool_result" and sent["content"] == "0.30000000000000004"  # add really ran
