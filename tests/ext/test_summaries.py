"""`agent.ext.summaries`: long free text read as a small model's summary, the full text behind
its pointer; everything else (code, diffs, config, traces, JSON, logs) left to the rules.
(Moved here from tests/context/test_compress.py.)"""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.artifacts import find_pointer
from agent.ext.summaries import Summaries
from agent.testing import ScriptedLLM, reply, tool_use

NAME = "tool-0123456789ab.txt"
BUDGET = 1000

PROSE = "\n\n".join(
    f"Paragraph {i}. The customer wrote again about the delayed shipment of order 4411, asking whether "
    f"the refund could be issued to the original card instead of store credit, and when it would arrive."
    for i in range(80)
)
SUMMARY = "Customer asks: refund order 4411 to the original card; when?"


def _chained_traceback() -> str:
    def load_settings(raw: str) -> object:
        try:
            return json.loads(raw)
        except ValueError as error:
            raise RuntimeError("cannot load settings") from error

    try:
        load_settings("{bad json")
    except RuntimeError:
        return traceback.format_exc()
    raise AssertionError("no exception")


def _diff(files: int) -> str:
    parts = [f"commit {'c0ffee' * 6}abcd\nAuthor: A <a@example.com>\nDate:   Mon Jun 1 2026\n\n    Subject\n"]
    for f in range(files):
        name = f"pkg/mod_{f}.py"
        parts.append(f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n")
        for h in range(3):
            parts.append(
                f"@@ -{10 * h + 1},6 +{10 * h + 1},7 @@ def f_{h}():\n"
                + "     context\n" * 3
                + f"-    old_{f}_{h}\n+    new_{f}_{h}\n+    added\n"
                + "     context\n" * 3
            )
    return "".join(parts)


def test_the_summary_is_for_long_free_text_only_cached_and_billed(simulator: object) -> None:
    from agent.ext.summaries.summarize import SummaryCache, llm_call, summarize_free_text

    sim = simulator(summarizer=lambda body: SUMMARY)  # type: ignore[operator]
    call = llm_call(sim.llm(), step=2)
    cache = SummaryCache()
    first = summarize_free_text(PROSE, BUDGET, call=call, model="claude-haiku-4-5", cache=cache, pointer=NAME)
    assert first is not None and not first.cached and len(first.text) <= BUDGET
    assert first.text.startswith("[summary by claude-haiku-4-5 of") and find_pointer(first.text) == NAME
    assert "refund order 4411" in first.text
    assert first.usage.purpose == "tool_summary" and first.usage.output > 0 and first.usage.cost_usd > 0
    assert len(sim.requests) == 1 and "tools" not in sim.requests[0]
    again = summarize_free_text(PROSE, BUDGET, call=call, model="claude-haiku-4-5", cache=cache, pointer=NAME)
    assert again is not None and again.cached and again.usage is None and len(sim.requests) == 1
    never = [
        _diff(40),
        _chained_traceback() * 30,
        "\n".join(f"key_{i} = value_{i}" for i in range(900)),
        "\n".join(f"def f_{i}(x):\n    return x + {i}\n" for i in range(400)),
        json.dumps({f"k{i}": "v" * 20 for i in range(500)}),
        "\n".join(f"2026-06-01 10:00:{i % 60:02d} ERROR E{i:04d} request failed" for i in range(400)),
    ]
    for text in never:
        assert summarize_free_text(text, BUDGET, call=call, model="claude-haiku-4-5", cache=cache) is None
    assert len(sim.requests) == 1, "no model call for code, diffs, config, traces, JSON or error logs"


def test_a_failed_summary_falls_back_to_the_rules() -> None:
    from agent.ext.summaries.summarize import summarize_free_text

    def broken(model: str, prompt: str) -> tuple[str, object]:
        raise RuntimeError("budget exhausted")

    assert summarize_free_text(PROSE, BUDGET, call=broken, model="claude-haiku-4-5") is None


def test_summaries_run_through_the_agent_budgeted_logged_and_cached(
    simulator: object, tmp_path: Path
) -> None:
    """`Summaries` on a live run (the simulator over HTTP): long prose from a tool is read as a
    small model's summary, with the full text behind its pointer; the call is billed as
    "tool_summary" in the usage log, the same text again costs nothing, and code is never sent."""
    from agent.testing.policies import call, latest_results, scripted

    @tool
    def ticket(id: str) -> str:
        """The support ticket with this id, verbatim."""
        return PROSE

    @tool
    def source(path: str) -> str:
        """A source file."""
        return "\n".join(f"def f_{i}(x):\n    return x + {i}\n" for i in range(400))

    def reading(body: dict[str, Any]) -> list[str]:
        return [r.text for r in latest_results(body)]

    seen: list[list[str]] = []

    def second(body: dict[str, Any]) -> list[dict[str, Any]]:
        seen.append(reading(body))
        return [call("ticket", id="T-2"), call("source", path="a.py")]

    def answer(body: dict[str, Any]) -> str:
        seen.append(reading(body))
        return "done"

    sim = simulator(scripted([call("ticket", id="T-1")], second, answer), summarizer=lambda body: SUMMARY)  # type: ignore[operator]
    log = tmp_path / "usage.jsonl"
    agent = Agent(
        llm=sim.llm(),
        tools=[ticket, source],
        extensions=[Summaries("claude-haiku-4-5")],
        artifacts_dir=tmp_path / "artifacts",
        usage_log=log,
        max_cost_usd=5.0,
    )
    result = agent.run("What does the customer want?")
    assert result.text == "done"
    summaries = [r for r in sim.requests if "tools" not in r]
    assert len(summaries) == 1 and summaries[0]["model"] == "claude-haiku-4-5"
    [first_ticket], [second_ticket, code] = seen
    assert first_ticket == second_ticket, "the same text again: the cached summary, no second call"
    assert second_ticket.startswith("[summary by claude-haiku-4-5") and "refund order 4411" in second_ticket
    assert find_pointer(second_ticket) and len(second_ticket) <= agent.compress_threshold
    assert code.startswith("def f_0") and "summary by" not in code  # code goes to the rules
    billed = [json.loads(line) for line in log.read_text().splitlines()]
    assert [b["purpose"] for b in billed].count("tool_summary") == 1
    assert any(u.purpose == "tool_summary" and u.cost_usd for u in result.usage.steps)


@tool
def ticket(id: str) -> str:
    """The support ticket with this id, verbatim."""
    return PROSE


def test_a_summary_the_budget_would_not_allow_is_not_sent_the_rules_cut_instead(tmp_path: Path) -> None:
    llm = ScriptedLLM([reply(tool_use("ticket", {"id": "T-1"})), reply("done")])
    agent = Agent(
        llm=llm, tools=[ticket], extensions=[Summaries()], artifacts_dir=tmp_path, max_input_tokens=3_000
    )
    result = agent.run("What does the customer want?")
    assert result.text == "done" and len(llm.requests) == 2, "no summary call: ~4,000 tokens of prose"
    [read] = [b["content"] for b in llm.requests[1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert "summary by" not in read and len(read) <= agent.compress_threshold and find_pointer(read)
    assert all(u.purpose == "step" for u in result.usage.steps)


def test_a_summary_model_without_a_price_is_refused_under_a_dollar_budget() -> None:
    unpriced = Summaries("my-small-model")
    agent = Agent(llm=ScriptedLLM([reply("done")]), extensions=[unpriced], max_cost_usd=1.0)
    with pytest.raises(ValueError, match="max_cost_usd needs a price for 'my-small-model'"):
        agent.run("hi")


def test_the_extension_leaves_errors_exact_tools_and_short_text_to_the_diet(tmp_path: Path) -> None:
    @tool(compress=False)
    def read_file(path: str) -> str:
        """A file about to be edited: exact."""
        return PROSE

    script = [reply(tool_use("read_file", {"path": "a.txt"})), reply("done")]
    llm = ScriptedLLM(script)
    agent = Agent(llm=llm, tools=[read_file], extensions=[Summaries()], artifacts_dir=tmp_path)
    assert agent.run("Read a.txt").text == "done" and len(llm.requests) == 2
    [read] = [b["content"] for b in llm.requests[1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert read == PROSE
