"""The reusable basic tools and the SDK adapter's configuration."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from agent import AnthropicLLM, ToolCall
from agent.tool_runs import run_all
from agent.tools import ToolRegistry
from tools import calculator, make_current_time, word_count


def run(registry: ToolRegistry, name: str, **args: object) -> tuple[object, bool]:
    [outcome] = run_all(registry, [ToolCall("1", name, args)])
    return outcome.value, outcome.is_error


def test_calculator() -> None:
    registry = ToolRegistry([calculator])
    assert run(registry, "calculator", a=123456, op="*", b=789) == (97406784, False)
    assert run(registry, "calculator", a=7, op="/", b=2) == (3.5, False)
    assert run(registry, "calculator", a=1, op="-", b=3) == (-2, False)
    assert run(registry, "calculator", a=1, op="/", b=0) == ("ZeroDivisionError: division by zero", True)
    value, failed = run(registry, "calculator", a=1, op="^", b=0)
    assert failed and "op:" in str(value)


def test_word_count() -> None:
    assert word_count("two words\nand more") == {"words": 4, "lines": 2, "characters": 18}


def test_current_time_uses_the_injected_clock_and_has_an_empty_strict_schema() -> None:
    fixed = datetime(2026, 11, 29, 8, 30, 5, tzinfo=timezone(timedelta(hours=9)))
    clock_tool = make_current_time(lambda: fixed)
    assert clock_tool() == "2026-11-29T08:30:05+09:00"
    naive = make_current_time(lambda: datetime(2026, 1, 2, 3, 4, 5))
    assert naive() == "2026-01-02T03:04:05+00:00"
    assert clock_tool.declaration()["input_schema"] == {
        "additionalProperties": False,
        "properties": {},
        "type": "object",
    }
    value, failed = run(ToolRegistry([clock_tool]), "current_time", surprise=1)
    assert failed and "surprise" in str(value)


def test_anthropic_llm_honours_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    llm = AnthropicLLM(max_retries=0, timeout=3)
    assert str(llm.client.base_url).startswith("http://127.0.0.1:9")
    assert llm.client.api_key == "sk-test-not-real"
    assert llm.client.max_retries == 0 and llm.client.timeout == 3
    explicit = AnthropicLLM(api_key="k", base_url="http://localhost:1")
    assert str(explicit.client.base_url).startswith("http://localhost:1")
