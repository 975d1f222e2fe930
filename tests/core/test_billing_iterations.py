"""A step costs what was billed: every sampling `usage.iterations` lists (compaction, an advisor
on another model, a fallback), each at its own model's prices, and its token counts are theirs.

The hand-written responses below are ours. The recorded ones are read from
../shared/realdata/ (never copied here); those tests skip where that folder is absent. The
expected dollars are computed here, independently of agent.usage, from the pricing page:
https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing").
"""

from __future__ import annotations

import gzip
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message

from agent import Agent, CostBudgetExceeded, TokenBudgetExceeded, tool
from agent.accounting import ImpossibleUsage, check_usage
from agent.models import MODELS
from agent.testing import ScriptedLLM, reply, tool_use
from agent.usage import RunUsage, Usage, billed_iterations

# $ per million tokens: input, 5-minute write, 1-hour write, cache read, output (the pricing page)
DOC_PRICES = {
    "claude-sonnet-4-6": (3.0, 3.75, 6.0, 0.30, 15.0),
    "claude-sonnet-5": (2.0, 2.50, 4.0, 0.20, 10.0),
    "claude-opus-4-8": (5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-opus-4-6": (5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-opus-5": (5.0, 6.25, 10.0, 0.50, 25.0),
}

RECORDINGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "realdata" / "live-traffic"


def dollars(counts: dict[str, Any], model: str) -> float:
    """One usage record's dollars, at `model`'s documented prices."""
    fresh, write_5m, write_1h, read, out = DOC_PRICES[model]
    written = counts.get("cache_creation_input_tokens") or 0
    hour = (counts.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
    return (
        counts["input_tokens"] * fresh
        + (written - hour) * write_5m
        + hour * write_1h
        + (counts.get("cache_read_input_tokens") or 0) * read
        + counts["output_tokens"] * out
    ) / 1e6


def billed(response: dict[str, Any]) -> float:
    """What the response was billed: each iteration at its own model (the response's if none)."""
    return sum(dollars(i, i.get("model") or response["model"]) for i in response["usage"]["iterations"])


def message(model: str, usage: dict[str, Any], *content: dict[str, Any]) -> Message:
    return Message.model_validate(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": list(content) or [{"type": "text", "text": "done"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
    )


def entry(
    kind: str, fresh: int, out: int, *, read: int = 0, write: int = 0, hour: int = 0, **more: Any
) -> Any:
    return {
        "type": kind,
        "input_tokens": fresh,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "cache_creation": {"ephemeral_5m_input_tokens": write - hour, "ephemeral_1h_input_tokens": hour},
        **more,
    }


# A server-side compaction on claude-opus-5: the summary read the long context (part of it from
# the cache, part written to it for an hour), then the answer read the compacted one.
COMPACTION = {
    "input_tokens": 900,
    "output_tokens": 40,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "iterations": [
        entry("compaction", 20_000, 700, read=30_000, write=4_000, hour=1_000),
        entry("message", 900, 40),
    ],
}

# An advisor: the executor (claude-sonnet-5) asks claude-opus-4-8 mid-answer, then goes on.
ADVISOR = {
    "input_tokens": 1_100 + 1_400,
    "output_tokens": 60 + 15,
    "iterations": [
        entry("message", 1_100, 60),
        entry("advisor_message", 2_600, 30, model="claude-opus-4-8"),
        entry("message", 1_400, 15),
    ],
}


# -- one response -------------------------------------------------------------------------


def test_a_compaction_step_costs_both_samplings_and_counts_their_tokens() -> None:
    usage = Usage.from_message(1, message("claude-opus-5", COMPACTION))
    response = {"model": "claude-opus-5", "usage": COMPACTION}
    assert usage.cost_usd == pytest.approx(billed(response))
    assert usage.cost_usd > 10 * dollars(COMPACTION, "claude-opus-5")  # the top level alone: far less
    assert (usage.uncached, usage.cache_read, usage.cache_write, usage.cache_write_1h, usage.output) == (
        20_900,
        30_000,
        4_000,
        1_000,
        740,
    )
    assert usage.prompt == 54_900
    assert usage.iterations == ("compaction", "message")
    assert "billed=compaction+message" in usage.line() and "prompt=54,900" in usage.line()
    assert usage.request_prompt == 0 and usage.prompt_sent() == 0  # the request's size went unreported


def test_an_advisor_is_priced_at_its_own_model() -> None:
    usage = Usage.from_message(1, message("claude-sonnet-5", ADVISOR))
    assert usage.cost_usd == pytest.approx(billed({"model": "claude-sonnet-5", "usage": ADVISOR}))
    executor_only = dollars({**ADVISOR, "iterations": None}, "claude-sonnet-5")
    opus = dollars(ADVISOR["iterations"][1], "claude-opus-4-8")
    assert usage.cost_usd == pytest.approx(executor_only + opus)  # the top level is a part, not added
    assert usage.iterations == ("message", "advisor_message@claude-opus-4-8", "message")
    assert usage.request_prompt == 1_100  # the first sampling read the request as sent


def test_an_iteration_without_a_model_is_priced_as_the_model_asked_for() -> None:
    served = message("anthropic/claude-opus-5@2026", COMPACTION)  # a compatible server's spelling
    assert Usage.from_message(1, served).cost_usd is None
    priced = Usage.from_message(1, served, model="claude-opus-5")
    assert priced.cost_usd == pytest.approx(billed({"model": "claude-opus-5", "usage": COMPACTION}))


def test_an_iteration_on_a_model_of_unknown_price_leaves_the_step_unpriced() -> None:
    unknown = {
        **ADVISOR,
        "iterations": [*ADVISOR["iterations"][:1], entry("advisor_message", 9, 9, model="x")],
    }
    usage = Usage.from_message(1, message("claude-sonnet-5", unknown))
    assert usage.cost_usd is None and "$?" in usage.line()
    run = RunUsage()
    run.add(usage)
    assert run.cost_usd is None and run.priced_cost_usd == 0.0


def test_a_response_without_iterations_costs_what_it_always_did() -> None:
    plain = {"input_tokens": 1_000, "output_tokens": 100, "cache_read_input_tokens": 5_000}
    usage = Usage.from_message(1, message("claude-opus-5", plain))
    assert usage.cost_usd == pytest.approx(dollars(plain, "claude-opus-5"))
    assert usage.iterations == () and usage.request_prompt is None and usage.prompt_sent() == 6_000
    assert "iterations" not in usage.to_json() and "request_prompt" not in usage.to_json()
    assert "billed=" not in usage.line()
    single = Usage.from_message(
        1, message("claude-opus-5", {**plain, "iterations": [entry("message", 1_000, 100)]})
    )
    assert "billed=" not in single.line()  # one plain sampling: nothing to say


def test_iterations_that_sum_to_less_than_the_top_level_never_lower_the_cost() -> None:
    short = {"input_tokens": 5_000, "output_tokens": 200, "iterations": [entry("message", 3_000, 200)]}
    usage = Usage.from_message(1, message("claude-opus-5", short))
    assert usage.cost_usd == pytest.approx(dollars(short, "claude-opus-5"))
    assert usage.uncached == 5_000


def test_impossible_iteration_counts_are_an_unreadable_answer() -> None:
    negative = {**COMPACTION, "iterations": [entry("compaction", -50_000_000, 1)]}
    with pytest.raises(ImpossibleUsage, match=r"iterations\[0\]\.input_tokens"):
        check_usage(message("claude-opus-5", negative))
    with pytest.raises(ImpossibleUsage, match="not a list"):
        check_usage(message("claude-opus-5", {**COMPACTION, "iterations": "compaction"}))
    with pytest.raises(ImpossibleUsage, match="not an object"):
        check_usage(message("claude-opus-5", {**COMPACTION, "iterations": [7]}))
    check_usage(message("claude-opus-5", COMPACTION))
    assert billed_iterations(message("claude-opus-5", {"input_tokens": 1, "output_tokens": 1}).usage) == []


def test_a_record_read_back_from_its_json_is_the_same_record() -> None:
    usage = Usage.from_message(3, message("claude-sonnet-5", ADVISOR))
    saved = json.loads(json.dumps(usage.to_json()))
    known = {f.name for f in fields(Usage)}
    again = Usage(**{**{k: v for k, v in saved.items() if k in known}, "tools": tuple(saved["tools"])})
    assert again == usage and saved["prompt"] == usage.prompt


# -- a run -------------------------------------------------------------------------------


@tool
def note(text: str) -> str:
    """Note something.

    Args:
        text: what to note.
    """
    return "noted"


def compacting_turn() -> dict[str, Any]:
    turn = reply(tool_use("note", {"text": "a"}))
    turn["usage"] = COMPACTION
    return turn


def test_the_runs_dollars_and_the_usage_log_are_what_was_billed(tmp_path: Path) -> None:
    log = tmp_path / "usage.jsonl"
    llm = ScriptedLLM([compacting_turn(), reply("done", input_tokens=900, output_tokens=10)])
    result = Agent(llm=llm, tools=[note], artifacts_dir=None, usage_log=log).run("go")
    first = billed({"model": "claude-opus-5", "usage": COMPACTION})
    assert result.usage.cost_usd == pytest.approx(first + (900 * 5 + 10 * 25) / 1e6)
    assert result.usage.prompt == 54_900 + 900
    line = json.loads(log.read_text().splitlines()[0])
    assert line["cost_usd"] == pytest.approx(first) and line["prompt"] == 54_900
    assert line["iterations"] == ["compaction", "message"]


def test_the_token_budget_counts_the_billed_prompt() -> None:
    llm = ScriptedLLM([compacting_turn(), reply("done")])
    with pytest.raises(TokenBudgetExceeded, match="54,900 used"):
        Agent(llm=llm, tools=[note], artifacts_dir=None, max_input_tokens=20_000).run("go")


def test_the_dollar_budget_counts_the_billed_cost() -> None:
    llm = ScriptedLLM([compacting_turn(), reply("done")])
    with pytest.raises(CostBudgetExceeded, match=r"\$0\.1"):
        Agent(llm=llm, tools=[note], artifacts_dir=None, max_cost_usd=0.05).run("go")


# -- recorded from the live API ----------------------------------------------------------


def recorded(source_end: str, index: int = 0) -> dict[str, Any]:
    path = RECORDINGS / "recordings.jsonl.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent (a clone outside the workplace has no shared/realdata)")
    with gzip.open(path, "rt", encoding="utf-8") as rows:
        for row in map(json.loads, rows):
            if row["source"].endswith(source_end) and row["index"] == index:
                return dict(row["response"])
    pytest.fail(f"no recording {source_end} #{index}")


def as_the_sdk_reads_it(response: dict[str, Any]) -> Message:
    """The SDK's own lenient reading of an HTTP body (recorded blocks such as `advisor_tool_result`
    and older `server_tool_use` counts are not in the 2.15 types, which `model_validate` enforces)."""
    from anthropic._models import construct_type

    built: Message = construct_type(type_=Message, value=response)
    return built


CASES = [
    # (recording, $ its top-level usage alone comes to (what was booked before), $ billed)
    (
        "pydantic-ai:tests/models/cassettes/test_anthropic/test_anthropic_compaction_end_to_end.yaml",
        0.00078,
        0.1682,
    ),
    ("pydantic-ai:tests/models/cassettes/test_anthropic/test_anthropic_advisor_tool.yaml", 0.0060, 0.0191),
    ("vercel/ai:packages/anthropic/src/__fixtures__/anthropic-compaction.1.json", 0.0364, 0.3531),
]


@pytest.mark.parametrize(("source", "top_level", "bill"), CASES, ids=["compaction", "advisor", "opus-4-6"])
def test_recorded_responses_cost_the_sum_of_their_iterations(
    source: str, top_level: float, bill: float
) -> None:
    response = recorded(source)
    model = response["model"]
    step = Usage.from_message(1, as_the_sdk_reads_it(response))
    assert step.cost_usd == pytest.approx(billed(response))
    assert round(step.cost_usd, 4) == bill
    assert dollars(response["usage"], model) == pytest.approx(top_level, abs=5e-5)  # what was booked before
    llm = ScriptedLLM([as_the_sdk_reads_it(response)])
    run = Agent(llm=llm, model=model, artifacts_dir=None).run("x")
    assert run.usage.cost_usd == pytest.approx(billed(response))
    assert run.usage.prompt == sum(
        i["input_tokens"] + i["cache_read_input_tokens"] + i["cache_creation_input_tokens"]
        for i in response["usage"]["iterations"]
    )


def test_every_model_the_recorded_iterations_name_is_priced() -> None:
    response = recorded("test_anthropic_advisor_tool_redacted.yaml")
    assert {i.get("model") for i in response["usage"]["iterations"]} == {None, "claude-fable-5"}
    assert MODELS.price("claude-fable-5") is not None
    assert Usage.from_message(1, as_the_sdk_reads_it(response)).cost_usd is not None
