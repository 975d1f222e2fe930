"""The API's context editing: the simulator applies each documented rule, and `ContextManagement`
asks for it without ever letting an irreversible result be cleared.

The rules are tested through the SDK's beta methods (which declare `context_management` and
read `applied_edits`), on hand-made histories whose sizes come from `count_tokens`; the
extension through an `Agent` run on the simulator.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

import anthropic
import pytest
from ticket_story import Seen, open_ticket, read_log
from ticket_story import ticket_run as story

from agent import Agent, tool
from agent.anthropic_llm import split_betas
from agent.ext.context_management import (
    BETA,
    CLEAR_THINKING,
    CLEAR_TOOL_USES,
    ContextManagement,
    with_edits,
)
from agent.extension import Extension
from agent.testing import call
from agent.testing.cache_model import render
from agent.testing.context_edits import PLACEHOLDER, apply_edits, stream_body
from agent.testing.policies import step_number
from agent.testing.simulator import MessagesSimulator
from agent.tools import ToolRegistry
from benchmarks import economics

Simulator = Callable[..., MessagesSimulator]
MODEL = "claude-opus-5"
MARK = {"type": "ephemeral"}
RULES = "Rule: quote ids exactly, keep totals exact, never guess a value. " * 40  # ~650 tokens
TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    }
    for name in ("fetch", "ticket")
]


def history(*names: str, size: int = 4000) -> list[dict[str, Any]]:
    """A prompt, then one call and its result (`size` characters) per name, oldest first."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "Audit it."}]}]
    for i, name in enumerate(names):
        use = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {"n": i}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"{name} {i}: " + "r" * size}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return messages


def clearing(**options: Any) -> dict[str, Any]:
    """`context_management` with one `clear_tool_uses_20250919` edit; ints become their objects."""
    edit: dict[str, Any] = {"type": CLEAR_TOOL_USES}
    units = {"trigger": "input_tokens", "keep": "tool_uses", "clear_at_least": "input_tokens"}
    for key, value in options.items():
        edit[key] = {"type": units[key], "value": value} if key in units and isinstance(value, int) else value
    return {"edits": [edit]}


def body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 64, "tools": TOOLS, "messages": messages, **extra}


def send(client: anthropic.Anthropic, request: dict[str, Any], context: dict[str, Any]) -> Any:
    return client.beta.messages.create(**request, betas=[BETA], context_management=context)


def counted(client: anthropic.Anthropic, messages: list[dict[str, Any]], context: Any = None) -> Any:
    extra = {} if context is None else {"context_management": context}
    return client.beta.messages.count_tokens(
        model=MODEL, tools=TOOLS, messages=messages, betas=[BETA], **extra
    )


# -- the simulator's rules ----------------------------------------------------------------------


def test_nothing_is_cleared_until_the_prompt_exceeds_the_trigger(simulator: Simulator) -> None:
    seen = Seen()
    client = simulator(seen).client()
    messages = history("fetch", "fetch", "fetch", "fetch", "fetch")
    size = counted(client, messages).input_tokens
    at = send(client, body(messages), clearing(trigger=size, keep=1))  # equal is not past it
    assert at.context_management.applied_edits == []
    assert seen.results() == {f"toolu_{i}": f"fetch {i}: " + "r" * 4000 for i in range(5)}
    past = send(client, body(messages), clearing(trigger=size - 1, keep=1))
    (edit,) = past.context_management.applied_edits
    assert edit.type == CLEAR_TOOL_USES and edit.cleared_tool_uses == 4
    assert edit.cleared_input_tokens == size - past.usage.input_tokens  # billed as the edited prompt


def test_the_default_trigger_is_100000_input_tokens(simulator: Simulator) -> None:
    seen = Seen()
    client = simulator(seen).client()
    under = send(client, body(history(*["fetch"] * 9, size=40_000)), clearing())  # ~90,000 tokens
    assert under.context_management.applied_edits == []
    over = send(client, body(history(*["fetch"] * 11, size=40_000)), clearing())  # ~110,000 tokens
    (edit,) = over.context_management.applied_edits
    assert edit.cleared_tool_uses == 11 - 3  # the default keep: the newest 3
    assert list(seen.results().values()).count(PLACEHOLDER) == 8


def test_the_oldest_results_go_first_and_the_newest_keep_stay_whole(simulator: Simulator) -> None:
    seen = Seen()
    client = simulator(seen).client()
    send(client, body(history("fetch", "fetch", "fetch", "fetch", "fetch")), clearing(trigger=100, keep=2))
    results = seen.results()
    assert [results[f"toolu_{i}"] for i in range(3)] == [PLACEHOLDER] * 3
    assert results["toolu_3"].startswith("fetch 3: ") and results["toolu_4"].startswith("fetch 4: ")
    calls = [b for m in seen.prompts[-1]["messages"] for b in m["content"] if b.get("type") == "tool_use"]
    assert [c["input"] for c in calls] == [{"n": i} for i in range(5)]  # inputs kept by default


def test_a_trigger_in_tool_uses_counts_the_calls(simulator: Simulator) -> None:
    client = simulator(Seen()).client()
    messages = history("fetch", "fetch", "fetch", "fetch")
    by_uses = {"type": "tool_uses", "value": 4}
    assert (
        send(client, body(messages), clearing(trigger=by_uses, keep=1)).context_management.applied_edits == []
    )
    by_uses["value"] = 3
    (edit,) = send(client, body(messages), clearing(trigger=by_uses, keep=1)).context_management.applied_edits
    assert edit.cleared_tool_uses == 3


def test_excluded_tools_are_never_cleared_however_old(simulator: Simulator) -> None:
    seen = Seen()
    client = simulator(seen).client()
    messages = history("ticket", "fetch", "fetch", "fetch", "fetch")
    (edit,) = send(
        client, body(messages), clearing(trigger=100, keep=1, exclude_tools=["ticket"])
    ).context_management.applied_edits
    assert edit.cleared_tool_uses == 3
    results = seen.results()
    assert results["toolu_0"].startswith("ticket 0: ")  # the oldest, and kept
    assert [results[f"toolu_{i}"] for i in (1, 2, 3)] == [PLACEHOLDER] * 3
    assert results["toolu_4"].startswith("fetch 4: ")


def test_clear_at_least_applies_the_edit_only_when_that_much_goes(simulator: Simulator) -> None:
    seen = Seen()
    client = simulator(seen).client()
    messages = history("fetch", "fetch", "fetch")
    whole = counted(client, messages).input_tokens
    cleared = whole - counted(client, messages, clearing(trigger=100, keep=1)).input_tokens
    assert cleared > 1500  # two results of ~1,000 tokens each
    too_much = send(client, body(messages), clearing(trigger=100, keep=1, clear_at_least=cleared + 1))
    assert too_much.context_management.applied_edits == [] and too_much.usage.input_tokens == whole
    assert PLACEHOLDER not in seen.results().values()
    enough = send(client, body(messages), clearing(trigger=100, keep=1, clear_at_least=cleared))
    assert enough.context_management.applied_edits[0].cleared_input_tokens == cleared


@pytest.mark.parametrize("inputs", [True, ["ticket"]])
def test_clear_tool_inputs_empties_the_cleared_calls_inputs_too(simulator: Simulator, inputs: Any) -> None:
    seen = Seen()
    client = simulator(seen).client()
    send(
        client,
        body(history("ticket", "fetch", "fetch")),
        clearing(trigger=100, keep=1, clear_tool_inputs=inputs),
    )
    calls = [b for m in seen.prompts[-1]["messages"] for b in m["content"] if b.get("type") == "tool_use"]
    cleared_fetch = {} if inputs is True else {"n": 1}
    assert [c["input"] for c in calls] == [{}, cleared_fetch, {"n": 2}]  # the kept call keeps its input


def test_applied_edits_and_count_tokens_agree_with_the_bill(simulator: Simulator) -> None:
    client = simulator(Seen()).client()
    messages = history("fetch", "fetch", "fetch", "fetch")
    context = clearing(trigger=100, keep=1)
    tokens = counted(client, messages, context)
    assert tokens.context_management.original_input_tokens == counted(client, messages).input_tokens
    reply = send(client, body(messages), context)
    (edit,) = reply.context_management.applied_edits
    assert reply.usage.input_tokens == tokens.input_tokens  # nothing cached: all of it uncached
    assert edit.cleared_input_tokens == tokens.context_management.original_input_tokens - tokens.input_tokens
    assert edit.cleared_tool_uses == 3
    plain = client.beta.messages.create(**body(messages), betas=[BETA])
    assert plain.context_management is None  # not asked, not reported


def test_the_cache_is_invalidated_from_the_first_cleared_result_on(simulator: Simulator) -> None:
    client = simulator(Seen()).client()
    messages = history("fetch", "fetch", "fetch", "fetch", "fetch")
    messages[0]["content"][0]["cache_control"] = MARK  # a breakpoint before every result
    messages[-1]["content"][0]["cache_control"] = MARK  # and one at the end
    request = body(messages, system=[{"type": "text", "text": RULES, "cache_control": MARK}])
    first = send(client, request, clearing(trigger=10**6))  # not triggered: the whole prompt is written
    assert first.usage.cache_read_input_tokens == 0 and first.usage.input_tokens == 0
    edited = apply_edits({**request, "context_management": clearing(trigger=100, keep=2)}).body
    positions = render(edited)
    totals = list(accumulate(p.tokens for p in positions))
    breakpoints = [i for i, p in enumerate(positions) if p.ttl is not None]
    before_edit = totals[breakpoints[1]]  # the prompt's text: the last breakpoint before any result
    second = send(client, request, clearing(trigger=100, keep=2))
    assert second.usage.cache_read_input_tokens == before_edit  # read up to the edit point, no further
    assert second.usage.cache_creation_input_tokens == totals[-1] - before_edit  # the rest written again
    assert second.usage.input_tokens == 0
    third = send(client, request, clearing(trigger=100, keep=2))  # the same edit: the new prefix is read
    assert third.usage.cache_read_input_tokens == totals[-1]
    assert third.usage.cache_creation_input_tokens == 0


def test_a_cleared_result_keeps_its_cache_breakpoint(simulator: Simulator) -> None:
    client = simulator(Seen()).client()
    messages = history("fetch", "fetch")
    messages[2]["content"][0]["cache_control"] = MARK
    edited = apply_edits(body(messages, context_management=clearing(trigger=100, keep=1))).body
    assert edited["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_0",
        "content": PLACEHOLDER,
        "cache_control": MARK,
    }
    assert messages[2]["content"][0]["content"] != PLACEHOLDER  # the client's history is left as it was
    reply = send(client, body(messages), clearing(trigger=100, keep=1))
    assert reply.context_management.applied_edits[0].cleared_tool_uses == 1


def test_streamed_the_applied_edits_come_in_the_final_message_delta(simulator: Simulator) -> None:
    client = simulator(Seen()).client()
    context = clearing(trigger=100, keep=1)
    whole = send(client, body(history("fetch", "fetch")), context)
    with client.beta.messages.stream(
        **body(history("fetch", "fetch")), betas=[BETA], context_management=context
    ) as events:
        streamed = events.get_final_message()
    assert streamed.context_management == whole.context_management
    raw = stream_body({**whole.model_dump(exclude_none=True), "context_management": {"applied_edits": []}})
    kinds = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert [e.get("context_management") for e in kinds if e["type"] == "message_delta"] == [
        {"applied_edits": []}
    ]
    assert "context_management" not in kinds[0]["message"]


def test_the_simulator_refuses_what_the_api_refuses(simulator: Simulator) -> None:
    sim = simulator(Seen())
    client = sim.client()
    request = body(history("fetch"))
    with pytest.raises(anthropic.BadRequestError, match="context_management: Extra inputs"):
        client.beta.messages.create(**request, context_management=clearing())  # no beta header
    thinking_second = {"edits": [{"type": CLEAR_TOOL_USES}, {"type": CLEAR_THINKING}]}
    with pytest.raises(anthropic.BadRequestError, match="must be listed first"):
        send(client, request, thinking_second)
    with pytest.raises(anthropic.BadRequestError, match="needs the beta header compact-2026-01-12"):
        send(client, request, {"edits": [{"type": "compact_20260112"}]})  # the clearing beta is not its
    with pytest.raises(anthropic.BadRequestError, match="keep"):
        send(client, request, {"edits": [{"type": CLEAR_TOOL_USES, "keep": 3}]})  # the SDK's shapes
    assert len(sim.rejected) == 4


@tool
def look(n: int) -> str:
    """Look at item n.

    Args:
        n: the item.
    """
    return f"item {n}"


def test_thinking_is_cleared_from_all_but_the_newest_turns(simulator: Simulator) -> None:
    seen: list[dict[str, Any]] = []

    def policy(request: dict[str, Any]) -> Any:
        seen.append(request)
        step = step_number(request)
        return call("look", n=step) if step <= 3 else "Looked at three."

    sim = simulator(policy)
    agent = Agent(
        llm=sim.llm(),
        model=MODEL,
        tools=[look],
        extensions=[ContextManagement(clear_tool_uses=False, clear_thinking=1)],
        artifacts_dir=None,
    )
    assert agent.run("Look at three items.").text == "Looked at three."
    assert sim.rejected == [] and sim.errors == []

    def thinking(request: dict[str, Any]) -> list[int]:
        turns = [m["content"] for m in request["messages"] if m["role"] == "assistant"]
        return [sum(b["type"] == "thinking" for b in content) for content in turns]

    assert thinking(sim.requests[-1]) == [1, 1, 1]  # the client sends its whole history
    assert thinking(seen[-1]) == [0, 0, 1]  # the model reads the newest turn's thinking only
    last = {**{k: v for k, v in sim.requests[-1].items() if k != "stream"}, "max_tokens": 1024}
    reply = sim.client().beta.messages.create(**last, betas=[BETA])
    (edit,) = reply.context_management.applied_edits
    assert edit.type == CLEAR_THINKING and edit.cleared_thinking_turns == 2
    assert edit.cleared_input_tokens == 2 * 16  # the hidden length of each block sent back
    keep_all = {**last, "context_management": {"edits": [{"type": CLEAR_THINKING, "keep": "all"}]}}
    assert sim.client().beta.messages.create(**keep_all, betas=[BETA]).context_management.applied_edits == []


# -- the extension ------------------------------------------------------------------------------


@tool(never_prune=True)
def customer_note(customer: str) -> str:
    """The account's standing note.

    Args:
        customer: the customer id.
    """
    return "note: always quote the ticket number"


def ticket_policy(request: dict[str, Any]) -> Any:
    """Open a ticket, read eight log parts, then answer with the ticket's id, if it can still see it."""
    step = step_number(request)
    if step == 1:
        return call("open_ticket", subject="disk full")
    if step <= 9:
        return call("read_log", part=step - 1)
    results = [
        b
        for m in request["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b["type"] == "tool_result"
    ]
    found = re.search(r"TICKET-\d+", json.dumps(results))
    return f"Filed as {found.group(0) if found else 'TICKET-UNKNOWN'}."


class DocumentedDefaults(Extension):
    """The raw documented edit, nothing excluded: what a bare `{"type": ...}` asks for."""

    def request(self, request: dict[str, Any], run: Any) -> dict[str, Any]:
        return with_edits(request, [{"type": CLEAR_TOOL_USES}])


def ticket_run(simulator: Simulator, extension: Extension) -> tuple[str, MessagesSimulator]:
    sim = simulator(ticket_policy)
    return story(sim, MODEL, extension).text, sim


def test_with_the_documented_defaults_the_ticket_id_is_cleared(simulator: Simulator) -> None:
    text, sim = ticket_run(simulator, DocumentedDefaults())
    assert text == "Filed as TICKET-UNKNOWN."
    assert sim.requests[-1]["context_management"] == {"edits": [{"type": CLEAR_TOOL_USES}]}


def test_with_the_extensions_defaults_an_irreversible_result_is_never_cleared(simulator: Simulator) -> None:
    text, sim = ticket_run(simulator, ContextManagement())
    assert text == "Filed as TICKET-4821."
    (edit,) = sim.requests[-1]["context_management"]["edits"]
    assert edit == {
        "type": CLEAR_TOOL_USES,
        "trigger": {"type": "input_tokens", "value": 100_000},
        "keep": {"type": "tool_uses", "value": 3},
        "exclude_tools": ["open_ticket"],
    }
    # the same prompt under the documented defaults does clear it (the edit did run here)
    last = {k: v for k, v in sim.requests[-1].items() if k != "stream"}
    assert apply_edits(last).applied[0]["cleared_tool_uses"] == 5  # type: ignore[index]
    raw = apply_edits({**last, "context_management": {"edits": [{"type": CLEAR_TOOL_USES}]}})
    assert raw.applied[0]["cleared_tool_uses"] == 6  # type: ignore[index]


def test_protected_tools_are_excluded_whatever_the_options() -> None:
    registry = ToolRegistry([open_ticket, customer_note, read_log, look])
    (edit,) = ContextManagement(exclude_tools=["look"]).edits(registry)
    assert edit["exclude_tools"] == ["customer_note", "look", "open_ticket"]
    thinking, tools = ContextManagement(
        trigger=30_000, keep=5, clear_at_least=5_000, clear_tool_inputs=["read_log"], clear_thinking="all"
    ).edits(registry)
    assert thinking == {"type": CLEAR_THINKING, "keep": "all"}  # first, as the API requires
    assert tools == {
        "type": CLEAR_TOOL_USES,
        "trigger": {"type": "input_tokens", "value": 30_000},
        "keep": {"type": "tool_uses", "value": 5},
        "clear_at_least": {"type": "input_tokens", "value": 5_000},
        "exclude_tools": ["customer_note", "open_ticket"],
        "clear_tool_inputs": ["read_log"],
    }
    (only,) = ContextManagement(clear_tool_uses=False, clear_thinking=2).edits(registry)
    assert only == {"type": CLEAR_THINKING, "keep": {"type": "thinking_turns", "value": 2}}
    (by_uses,) = ContextManagement(trigger=10, trigger_on="tool_uses").edits(ToolRegistry([look]))
    assert by_uses["trigger"] == {"type": "tool_uses", "value": 10} and "exclude_tools" not in by_uses


def test_the_request_hook_adds_the_body_and_the_beta_once_and_changes_nothing_else() -> None:
    request = {"model": MODEL, "messages": [], "betas": ["other-beta"]}
    edits = [{"type": CLEAR_TOOL_USES}]
    sent = with_edits(with_edits(request, edits), edits)
    assert request == {"model": MODEL, "messages": [], "betas": ["other-beta"]}
    assert sent == {**request, "betas": ["other-beta", BETA], "context_management": {"edits": edits}}
    body, headers = split_betas(sent)  # what AnthropicLLM hands the SDK's stable method
    assert body["extra_body"] == {"context_management": {"edits": edits}} and "context_management" not in body
    assert headers == {"anthropic-beta": f"other-beta,{BETA}"}


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"trigger": 0}, ValueError),
        ({"keep": -1}, ValueError),
        ({"keep": True}, ValueError),
        ({"clear_at_least": 0}, ValueError),
        ({"exclude_tools": "open_ticket"}, TypeError),
        ({"clear_tool_inputs": "read_log"}, TypeError),
        ({"clear_thinking": 0}, ValueError),
        ({"trigger_on": "messages"}, ValueError),
        ({"clear_tool_uses": False}, ValueError),
    ],
)
def test_options_the_api_would_refuse_are_refused_at_construction(
    options: dict[str, Any], error: type
) -> None:
    with pytest.raises(error, match="ContextManagement"):
        ContextManagement(**options)


def test_the_api_clearing_configurations_run_the_economics_scenario_cleanly() -> None:
    outcomes = {o.name: o for o in economics.run_all(14, ["naive", *economics.API_CONFIGS])}
    calls = {name: [u.tools for u in o.result.steps] for name, o in outcomes.items()}
    naive = outcomes.pop("naive")
    for name, o in outcomes.items():
        assert o.rejected == 0 and o.errors == 0 and o.result.text.startswith("Audit done"), name
        assert calls[name] == calls["naive"]
        assert (o.result.usage.cost_usd or 0) < (naive.result.usage.cost_usd or 0), name
    uncached = outcomes["api clearing, no cache"].result.usage
    assert uncached.cache_read == uncached.cache_write == 0
    assert outcomes["api clearing"].result.usage.largest_prompt < naive.result.usage.largest_prompt


def test_a_miss_the_servers_edits_explain_is_not_a_cache_warning(
    simulator: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the trigger the server rewrites the cached prompt itself: the guard says so (INFO),
    instead of warning that the server may not be caching."""
    with caplog.at_level(logging.INFO, logger="agent"):
        ticket_run(simulator, ContextManagement())
    misses = [r for r in caplog.records if "cache read 0" in r.getMessage()]
    assert misses and all(r.levelno == logging.INFO for r in misses)
    assert all("the server's context management applied clear_tool_uses" in r.getMessage() for r in misses)
