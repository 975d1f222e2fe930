"""The API's compaction (`compact_20260112`): the simulator compacts as the docs say, and
`ContextManagement(compact_at=...)` sends back what the API reads without losing an
irreversible result to the server's summary.

The simulator is driven through the SDK's beta methods on hand-made histories; the extension
through `Agent` runs.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from ticket_story import Seen, open_ticket, read_log
from ticket_story import ticket_run as story

from agent import RunResult
from agent.context.compact import ACTION_PREFIX
from agent.ext.context_management import (
    BETA,
    COMPACT,
    COMPACT_BETA,
    ContextManagement,
    after_compaction,
)
from agent.extension import Extension
from agent.testing import call
from agent.testing.cache_model import block_tokens, render
from agent.testing.context_edits import COMPACTION_PROMPT
from agent.testing.simulator import MessagesSimulator
from agent.tools import ToolRegistry
from agent.usage import cost_of, price_for
from benchmarks import economics

Simulator = Callable[..., MessagesSimulator]
MODEL = "claude-sonnet-4-6"  # one the compaction docs name; it does not think unless asked
TOOLS = [
    {
        "name": "fetch",
        "description": "The fetch tool.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    }
]


def history(parts: int, size: int = 40_000) -> list[dict[str, Any]]:
    """A prompt, then one call and its result (`size` characters, ~size/4 tokens) per part."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "Audit it."}]}]
    for i in range(parts):
        use = {"type": "tool_use", "id": f"toolu_{i}", "name": "fetch", "input": {"n": i}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"part {i}: " + "r" * size}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return messages


def compact(trigger: int | None = 50_000, **extra: Any) -> dict[str, Any]:
    edit: dict[str, Any] = {"type": COMPACT, **extra}
    if trigger is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger}
    return {"edits": [edit]}


def send(client: anthropic.Anthropic, messages: list[dict[str, Any]], context: Any, **extra: Any) -> Any:
    return client.beta.messages.create(
        model=MODEL,
        max_tokens=64,
        tools=TOOLS,  # type: ignore[arg-type]
        messages=messages,  # type: ignore[arg-type]
        betas=[COMPACT_BETA],
        context_management=context,
        **extra,
    )


def tokens(body: dict[str, Any]) -> int:
    return sum(p.tokens for p in render(body))


# -- the simulator ------------------------------------------------------------------------------


def test_below_the_trigger_nothing_is_compacted(simulator: Simulator) -> None:
    sim = simulator(Seen())
    reply = send(sim.client(), history(4), compact(60_000))  # ~40,000 tokens
    assert [b.type for b in reply.content] == ["text"]
    assert getattr(reply.usage, "iterations", None) is None
    assert reply.context_management.applied_edits == []


def test_past_the_trigger_the_reply_starts_with_the_summary_and_bills_it_apart(simulator: Simulator) -> None:
    seen = Seen()
    sim = simulator(seen, summarizer=lambda body: "Summary: parts 0-5 fetched, all r.")
    messages = history(6)  # ~60,000 tokens
    reply = send(sim.client(), messages, compact(50_000))
    assert [b.type for b in reply.content] == ["compaction", "text"]
    assert reply.content[0].content == "Summary: parts 0-5 fetched, all r."
    assert reply.context_management.applied_edits == []  # as recorded: compaction is not listed there
    summary_step, own = reply.usage.iterations
    full = tokens({"model": MODEL, "max_tokens": 64, "tools": TOOLS, "messages": messages})
    assert summary_step.type == "compaction" and summary_step.input_tokens == full
    assert summary_step.output_tokens == block_tokens({"type": "text", "text": reply.content[0].content})
    # the model went on from the summary alone: the top level is that step's own, small prompt
    assert own.type == "message" and own.input_tokens == reply.usage.input_tokens < 200
    assert seen.prompts[-1]["messages"] == [
        {"role": "assistant", "content": [{"type": "compaction", "content": reply.content[0].content}]}
    ]


def test_the_summary_is_asked_for_with_the_transcript_and_the_instructions(simulator: Simulator) -> None:
    asked: list[str] = []

    def summarizer(body: dict[str, Any]) -> str:
        asked.append(body["messages"][-1]["content"][0]["text"])
        return "short"

    sim = simulator(Seen(), summarizer=summarizer)
    send(sim.client(), history(6), compact())
    send(sim.client(), history(6), compact(instructions="Keep every part number."))
    assert asked[0].startswith("USER: Audit it.\nCALL fetch") and asked[0].endswith(COMPACTION_PROMPT)
    assert asked[1].endswith("\n\nKeep every part number.")


def test_later_requests_are_read_from_the_newest_compaction_block_on(simulator: Simulator) -> None:
    seen = Seen()
    sim = simulator(seen)
    messages = history(6)
    first = send(sim.client(), messages, compact())
    block = first.content[0].model_dump(exclude_none=True)
    after = [
        *messages,
        {"role": "assistant", "content": [block, {"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "And now?"}]},
    ]
    whole = send(sim.client(), after, compact())  # the whole history sent back, as the docs say
    trimmed = send(sim.client(), [messages[0], *after[-2:]], compact())  # or only what the API reads
    assert seen.prompts[-2]["messages"] == seen.prompts[-1]["messages"] == after[-2:]
    assert (
        whole.usage.input_tokens == trimmed.usage.input_tokens < first.usage.iterations[0].input_tokens / 20
    )
    assert getattr(whole.usage, "iterations", None) is None  # below the trigger again: no new summary
    # a failed compaction (content null) is a no-op: nothing is dropped
    failed = [
        *messages,
        {"role": "assistant", "content": [{"type": "compaction", "content": None}]},
        after[-1],
    ]
    send(sim.client(), failed, compact(None))  # the default trigger, 150,000: not reached
    assert len(seen.prompts[-1]["messages"]) == len(failed)


def test_pause_after_compaction_returns_the_block_alone(simulator: Simulator) -> None:
    seen = Seen()
    sim = simulator(seen)
    reply = send(sim.client(), history(6), compact(pause_after_compaction=True))
    assert reply.stop_reason == "compaction" and [b.type for b in reply.content] == ["compaction"]
    (only,) = reply.usage.iterations
    assert only.type == "compaction" and reply.usage.output_tokens == only.output_tokens
    assert seen.prompts == []  # the model did not answer


def test_a_streamed_compaction_arrives_whole(simulator: Simulator) -> None:
    sim = simulator(Seen(), summarizer=lambda body: "Summary: six parts.")
    with sim.client().beta.messages.stream(
        model=MODEL,
        max_tokens=64,
        tools=TOOLS,  # type: ignore[arg-type]
        messages=history(6),  # type: ignore[arg-type]
        betas=[COMPACT_BETA],
        context_management=compact(),  # type: ignore[arg-type]
    ) as stream:
        reply = stream.get_final_message()
    assert reply.content[0].type == "compaction" and reply.content[0].content == "Summary: six parts."
    assert [i.type for i in reply.usage.iterations or []] == ["compaction", "message"]


@pytest.mark.parametrize(
    ("context", "betas", "error"),
    [
        (compact(49_999), [COMPACT_BETA], "must be at least 50000"),
        (compact(), [], f"needs the beta header {COMPACT_BETA}"),
        (compact(), [BETA], f"needs the beta header {COMPACT_BETA}"),
        ({"edits": [{"type": "clear_tool_uses_20250919"}, compact()["edits"][0]]}, [COMPACT_BETA], "Extra"),
    ],
)
def test_the_simulator_refuses_what_the_api_refuses(
    simulator: Simulator, context: dict[str, Any], betas: list[str], error: str
) -> None:
    sim = simulator(Seen())
    with pytest.raises(anthropic.BadRequestError, match=error):
        sim.client().beta.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=history(1),  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            betas=betas,  # type: ignore[arg-type]
            context_management=context,  # type: ignore[arg-type]
        )
    both = {"edits": [{"type": "clear_tool_uses_20250919"}, compact()["edits"][0]]}
    sim.client().beta.messages.create(  # both betas: accepted
        model=MODEL,
        max_tokens=64,
        messages=history(1),  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
        betas=[BETA, COMPACT_BETA],
        context_management=both,  # type: ignore[arg-type]
    )


# -- the extension ------------------------------------------------------------------------------


class TicketModel:
    """Open a ticket, read five log parts, then answer with the ticket's id if it can still see
    it. It counts its own calls: after a compaction the history cannot say which step it is."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompts: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> Any:
        self.calls += 1
        self.prompts.append(request)
        if self.calls == 1:
            return call("open_ticket", subject="disk full")
        if self.calls <= 6:
            return call("read_log", part=self.calls - 1)
        found = re.search(r"TICKET-\d+", json.dumps(request["messages"]))
        return f"Filed as {found.group(0) if found else 'TICKET-UNKNOWN'}."


def lossy(body: dict[str, Any]) -> str:
    return "Summary: a ticket was opened and the log was read."  # the id is not in it


class BareCompaction(Extension):
    """The documented edit sent as it is: the history goes back whole, nothing carried."""

    def request(self, request: dict[str, Any], run: Any) -> dict[str, Any]:
        return {**request, "context_management": compact(), "betas": [COMPACT_BETA]}


def ticket_run(simulator: Simulator, extension: Extension) -> tuple[str, MessagesSimulator, RunResult]:
    sim = simulator(TicketModel(), summarizer=lossy)
    result = story(sim, MODEL, extension)
    return result.text, sim, result


def test_a_bare_compaction_loses_the_irreversible_result_to_the_summary(simulator: Simulator) -> None:
    text, sim, _ = ticket_run(simulator, BareCompaction())
    assert text == "Filed as TICKET-UNKNOWN."
    assert "TICKET-4821" in json.dumps(sim.requests[-1]["messages"])  # sent, but before the block


def test_the_extension_carries_the_irreversible_result_past_the_block(simulator: Simulator) -> None:
    text, sim, result = ticket_run(simulator, ContextManagement(clear_tool_uses=False, compact_at=50_000))
    assert text == "Filed as TICKET-4821."
    compacted = [i for i, u in enumerate(sim.usages) if "iterations" in u]
    assert len(compacted) == 1
    after = sim.requests[compacted[0] + 1 :]
    for request in after:  # only what the API reads: the opening, then the block on
        assert request["messages"][0]["content"][0]["text"].startswith("Open a ticket")
        assert request["messages"][1]["content"][0]["type"] == "compaction"
        assert request["betas"] == [COMPACT_BETA] if "betas" in request else True
    carried = [
        b["text"]
        for m in after[-1]["messages"]
        for b in m["content"]
        if b["type"] == "text" and b["text"].startswith(ACTION_PREFIX)
    ]
    assert carried == [
        f'{ACTION_PREFIX}open_ticket({{"subject": "disk full"}}) returned:\nopened TICKET-4821'
    ]
    # the run's $ is what was billed: every iteration of every reply, at the model's prices
    price = price_for(MODEL)
    assert price is not None
    billed = sum(sum(cost_of(i, price) for i in u.get("iterations") or [u]) for u in sim.usages)
    assert result.usage.cost_usd == pytest.approx(billed)
    assert billed > sum(cost_of(u, price) for u in sim.usages)  # the summary step was not free


def test_after_compaction_is_pure_idempotent_and_carries_each_protected_result_once() -> None:
    messages = history(2, size=10)
    messages[1]["content"][0]["name"] = "open_ticket"
    block = {"type": "compaction", "content": "Summary."}
    use = {"type": "tool_use", "id": "toolu_9", "name": "fetch", "input": {"n": 9}}
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "9"}]}
    full = [*messages, {"role": "assistant", "content": [block, use]}, answer]
    before = json.dumps(full)
    once = after_compaction(full, ["open_ticket"])
    assert json.dumps(full) == before  # nothing edited in place
    assert [m["role"] for m in once] == ["user", "assistant", "user"]
    assert once[0] is full[0] and once[1]["content"] == [block, use]
    result, carried = once[2]["content"]
    assert result == answer["content"][0] and carried["text"].startswith(ACTION_PREFIX + "open_ticket(")
    assert after_compaction(once, ["open_ticket"]) is once  # already as the API reads it
    # a second compaction drops the carried text with the rest, and carries it on again, once
    again = [*once, {"role": "assistant", "content": [{**block, "content": "Later."}, use]}, answer]
    twice = after_compaction(again, ["open_ticket"])
    assert [b.get("text") for b in twice[2]["content"][1:]] == [carried["text"]]
    assert after_compaction(history(2), ["open_ticket"]) == history(2)  # no block: unchanged
    failed = [*messages, {"role": "assistant", "content": [{"type": "compaction", "content": None}]}]
    assert after_compaction(failed) is failed


def test_the_edit_and_its_betas() -> None:
    registry = ToolRegistry([open_ticket, read_log])
    only = ContextManagement(clear_tool_uses=False, compact_at=80_000, compact_instructions="Keep ids.")
    assert only.edits(registry) == [
        {"type": COMPACT, "trigger": {"type": "input_tokens", "value": 80_000}, "instructions": "Keep ids."}
    ]
    request = {"model": MODEL, "messages": []}
    assert only.request(request, type("Run", (), {"agent": type("A", (), {"registry": registry})})())[
        "betas"
    ] == [COMPACT_BETA]
    both = ContextManagement(compact_at=50_000).edits(registry)
    assert [e["type"] for e in both] == ["clear_tool_uses_20250919", COMPACT]


@pytest.mark.parametrize(
    "options",
    [
        {"compact_at": 49_999},
        {"compact_at": True},
        {"compact_instructions": "Keep ids."},
        {"compact_at": 50_000, "compact_instructions": " "},
    ],
)
def test_compaction_options_the_api_would_refuse_are_refused_at_construction(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="ContextManagement"):
        ContextManagement(**options)


def test_the_api_compaction_configurations_compact_in_the_economics_scenario(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="agent"):
        outcomes = {
            o.name: o for o in economics.run_all(30, ["naive", "api compaction", "api compaction + our diet"])
        }
    # the miss after a compaction is the server's doing (INFO), never a warning that caching failed
    misses = [r for r in caplog.records if "cache read 0" in r.getMessage()]
    assert misses and all(r.levelno == logging.INFO for r in misses)
    naive = outcomes.pop("naive")
    compacted = outcomes["api compaction"]
    assert compacted.server_compactions >= 1 and compacted.summaries == compacted.server_compactions
    for name, o in outcomes.items():
        assert o.rejected == 0 and o.errors == 0 and o.result.text.startswith("Audit done"), name
        assert [u.tools for u in o.result.steps] == [u.tools for u in naive.result.steps], name
        assert (o.result.usage.cost_usd or 0) < (naive.result.usage.cost_usd or 0), name
    assert compacted.result.usage.largest_prompt < naive.result.usage.largest_prompt
