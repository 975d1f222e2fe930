"""Shapes real API traffic shows, produced by the simulator on a policy's word, each checked
against the structure of a real recording of it (../shared/realdata, where present) and round-
tripped through `AnthropicLLM` into the history the next request sends."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent.messages import reply_turn
from agent.testing import MessagesSimulator
from agent.testing.mcp_blocks import mcp_call, mcp_result
from agent.testing.policies import reply, server_call
from agent.testing.shapes import (
    char_location,
    cited,
    code_call,
    compaction,
    iteration,
    search_result_location,
    with_iterations,
)
from agent.usage import billed_iterations

MODEL = "claude-opus-5"
HEADERS = {"x-api-key": "sim", "anthropic-version": "2023-06-01", "content-type": "application/json"}
RECORDINGS = Path(__file__).resolve().parents[2] / "../shared/realdata/live-traffic/recordings.jsonl.gz"
Event = dict[str, Any]


# -- the recordings -------------------------------------------------------------------------


def _rows() -> Iterator[dict[str, Any]]:
    if not RECORDINGS.exists():
        pytest.skip(f"no real recordings at {RECORDINGS} (a user's clone has none)")
    with gzip.open(RECORDINGS, "rt") as lines:
        for line in lines:
            yield json.loads(line)


def parse_sse(text: str) -> list[Event]:
    events = []
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                events.append(json.loads(line[5:]))
            except ValueError:
                continue
    return events


def recorded_stream(test: Callable[[list[Event]], bool], what: str) -> list[Event]:
    """The events of the first recorded stream `test` accepts; skipped (saying why) when none is."""
    for row in _rows():
        if row["kind"] == "sse" and isinstance(row["response"], str):
            events = parse_sse(row["response"])
            if test(events):
                return events
    pytest.skip(f"no real stream recorded with {what}")


def recorded_json(test: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    for row in _rows():
        if row["kind"] == "json" and isinstance(row["response"], dict) and test(row["response"]):
            return row["response"]
    pytest.skip(f"no real JSON reply recorded with {what}")


def block_events(events: list[Event], index: int) -> list[str]:
    """The shape of one block's events: `start`, each delta's type, `stop`."""
    shape = []
    for e in events:
        if e.get("index") != index:
            continue
        kind = e["type"]
        shape.append(
            e["delta"]["type"] if kind == "content_block_delta" else kind.removeprefix("content_block_")
        )
    return shape


def squeezed(shape: list[str]) -> list[str]:
    """Repeated deltas as one (chunking differs), and an empty first JSON delta the API sends."""
    out: list[str] = []
    for s in shape:
        if not out or out[-1] != s:
            out.append(s)
    return out


def first_index(events: list[Event], test: Callable[[Mapping[str, Any]], bool]) -> int:
    return next(e["index"] for e in events if e["type"] == "content_block_start" and test(e["content_block"]))


# -- the simulator ----------------------------------------------------------------------------


def sim_of(policy: Callable[[Any], Any]) -> MessagesSimulator:
    """A simulator whose model answers without thinking first (the blocks under test come first)."""
    return MessagesSimulator(policy, thinking=lambda body: 0)


def request(*content: Any, **extra: Any) -> dict[str, Any]:
    user = list(content) or [{"type": "text", "text": "Go."}]
    return {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": user}], **extra}


def raw(sim: MessagesSimulator, body: Mapping[str, Any], *, stream: bool) -> Any:
    """The simulator's answer to `body`: the JSON body, or the list of its events."""
    answer = sim.handle("POST", "/v1/messages", HEADERS, json.dumps({**body, "stream": stream}).encode())
    assert answer.status == 200, answer.body
    return parse_sse(answer.body.decode()) if stream else json.loads(answer.body)


def round_trip(sim: MessagesSimulator, body: dict[str, Any], streamed: bool) -> dict[str, Any]:
    """The reply through `AnthropicLLM` as the history's assistant turn; the next request (the
    history sent back) must pass the simulator's validator."""
    llm = sim.llm()
    message = llm.stream(body) if streamed else llm.create(body)
    turn, calls = reply_turn(message, body["messages"])
    assert turn is not None
    results = [{"type": "tool_result", "tool_use_id": c.id, "content": "4"} for c in calls]
    follow = [
        *body["messages"],
        turn,
        {"role": "user", "content": results or [{"type": "text", "text": "Thanks."}]},
    ]
    rejected = len(sim.rejected)
    llm.create({**body, "messages": follow})
    assert sim.rejected[rejected:] == []
    return turn


STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])

# -- 1. citations ----------------------------------------------------------------------------

DOCUMENT = {
    "type": "document",
    "source": {"type": "text", "media_type": "text/plain", "data": "The capital of Quackiland is Quack. "},
    "citations": {"enabled": True},
}
CITED = cited("Quack is the capital.", char_location("The capital of Quackiland is Quack. ", 0, 36))
SEARCH_RESULT = {
    "type": "search_result",
    "source": "https://docs.example/quack",
    "title": "Quack",
    "content": [{"type": "text", "text": "Quack is a city."}],
    "citations": {"enabled": True},
}


def test_citations_come_in_json_with_their_nulls_and_as_citations_deltas() -> None:
    with sim_of(lambda body: reply(CITED)) as sim:
        body = raw(sim, request(DOCUMENT, {"type": "text", "text": "Capital?"}), stream=False)
        events = raw(sim, request(DOCUMENT, {"type": "text", "text": "Capital?"}), stream=True)
    (block,) = body["content"]
    assert set(block) == {"type", "text", "citations"}
    assert block["citations"][0]["document_title"] is None  # the key there, null, as the API sends it
    start = events[1]["content_block"]
    assert start == {"citations": [], "type": "text", "text": ""}
    assert block_events(events, 0) == [
        "start",
        "citations_delta",
        "text_delta",
        "text_delta",
        "text_delta",
        "stop",
    ]

    real = recorded_stream(
        lambda es: any(e.get("delta", {}).get("type") == "citations_delta" for e in es), "citations"
    )
    index = first_index(real, lambda b: "citations" in b)
    assert next(e["content_block"] for e in real if e.get("index") == index) == start
    assert squeezed(block_events(real, index)) == squeezed(block_events(events, 0))
    real_json = recorded_json(
        lambda r: any(
            c.get("type") == "char_location" for b in r.get("content") or [] for c in b.get("citations") or []
        ),
        "a char_location citation",
    )
    real_block = next(b for b in real_json["content"] if b.get("citations"))
    assert set(real_block) == set(block)
    assert set(real_block["citations"][0]) == set(block["citations"][0])


def test_a_search_result_citation_has_the_fields_the_api_sends() -> None:
    citation = search_result_location("Quack is a city.", "https://docs.example/quack", 0)
    with sim_of(lambda body: reply(cited("Quack is a city.", citation))) as sim:
        (block,) = raw(sim, request(SEARCH_RESULT, {"type": "text", "text": "Quack?"}), stream=False)[
            "content"
        ]
    # hand-known (no live recording of search_result_location in ../shared/realdata)
    assert set(block["citations"][0]) == {
        "type",
        "cited_text",
        "source",
        "title",
        "search_result_index",
        "start_block_index",
        "end_block_index",
    }


@STREAMED
def test_a_cited_reply_goes_back_with_its_null_document_title(streamed: bool) -> None:
    # old bug: the null `document_title` was dropped from the history, a 400 on the next request
    with sim_of(lambda body: reply(CITED)) as sim:
        turn = round_trip(sim, request(DOCUMENT, {"type": "text", "text": "Capital?"}), streamed)
    assert turn["content"] == [CITED]
    assert "document_title" in turn["content"][0]["citations"][0]


# -- 2. usage.iterations -----------------------------------------------------------------------


def compacted(body: Any) -> dict[str, Any]:
    return with_iterations(
        reply(compaction("Summary: the user said hello."), "Hello!"),
        iteration("compaction", input_tokens=900, output_tokens=80, cache_read_input_tokens=50),
    )


def test_iterations_sum_to_the_top_level_as_the_api_bills_them() -> None:
    with sim_of(compacted) as sim:
        body = raw(sim, request(), stream=False)
        events = raw(sim, request(), stream=True)
    usage = body["usage"]
    first, own = usage["iterations"]
    assert (first["type"], own["type"]) == ("compaction", "message")
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        assert own[key] == usage[key]  # the top level is the response's own sampling, no more
    assert sum(e["input_tokens"] for e in usage["iterations"]) == usage["input_tokens"] + 900
    start, delta = events[0], next(e for e in events if e["type"] == "message_delta")
    assert "iterations" not in start["message"]["usage"]
    assert delta["usage"]["iterations"] == usage["iterations"]

    real = recorded_stream(
        lambda es: any(e["type"] == "message_delta" and "iterations" in e.get("usage", {}) for e in es),
        "usage.iterations",
    )
    real_delta = next(e for e in real if e["type"] == "message_delta")
    assert "iterations" not in next(e for e in real if e["type"] == "message_start")["message"]["usage"]
    real_own = next(i for i in real_delta["usage"]["iterations"] if i["type"] == "message")
    assert set(real_own) - {"model"} == set(own)


@STREAMED
def test_iterations_reach_the_bill(streamed: bool) -> None:
    # old bug: a streamed reply's `usage.iterations` was dropped with the rest of message_delta
    with sim_of(compacted) as sim:
        llm = sim.llm()
        message = llm.stream(request()) if streamed else llm.create(request())
    kinds = [e["type"] for e in billed_iterations(message.usage)]
    assert kinds == ["compaction", "message"]


# -- 3. context_management ---------------------------------------------------------------------

EDITING = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 1},
            "keep": {"type": "tool_uses", "value": 1},
        }
    ]
}
TOOLS = [{"name": "lookup", "input_schema": {"type": "object"}}]


def edited_history() -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Look twice."}]
    for i in (1, 2):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_0{i}", "name": "lookup", "input": {}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_0{i}", "content": "x" * 400}],
            }
        )
    return {
        "model": MODEL,
        "max_tokens": 1024,
        "tools": TOOLS,
        "messages": messages,
        "context_management": EDITING,
    }


def test_context_management_is_top_level_in_json_and_in_the_final_message_delta() -> None:
    headers = {**HEADERS, "anthropic-beta": "context-management-2025-06-27"}
    with sim_of(lambda body: "Done.") as sim:
        body = edited_history()
        answer = sim.handle("POST", "/v1/messages", headers, json.dumps(body).encode())
        streamed = sim.handle("POST", "/v1/messages", headers, json.dumps({**body, "stream": True}).encode())
    assert answer.status == 200, answer.body
    managed = json.loads(answer.body)["context_management"]
    assert managed["applied_edits"][0]["type"] == "clear_tool_uses_20250919"
    events = parse_sse(streamed.body.decode())
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["context_management"] == managed
    assert "context_management" not in events[0]["message"]

    real = recorded_stream(
        lambda es: any("context_management" in e for e in es if e["type"] == "message_delta"),
        "context_management",
    )
    real_delta = next(e for e in real if e["type"] == "message_delta")
    assert set(real_delta) == set(delta) and "applied_edits" in real_delta["context_management"]


def test_context_management_reaches_the_message_streamed() -> None:
    # old bug: the SDK's accumulator dropped message_delta's `context_management`
    with sim_of(lambda body: "Done.") as sim:
        message = sim.llm().stream({**edited_history(), "betas": ["context-management-2025-06-27"]})
    managed = getattr(message, "context_management", None) or (message.model_extra or {}).get(
        "context_management"
    )
    assert managed is not None
    edits = managed["applied_edits"] if isinstance(managed, dict) else managed.applied_edits
    assert len(edits) == 1


# -- 4. caller (programmatic tool calling) ---------------------------------------------------

PTC_TOOLS = [
    {"type": "code_execution_20250825", "name": "code_execution"},
    {"name": "roll", "input_schema": {"type": "object"}, "allowed_callers": ["code_execution_20250825"]},
]


def rolling(body: Any) -> Any:
    code = {"type": "server_tool_use", "name": "code_execution", "input": {"code": "await roll()"}}
    return reply("Rolling.", code, code_call("roll", {"die": 1}))


def test_a_code_called_tool_use_names_its_caller() -> None:
    with sim_of(rolling) as sim:
        body = raw(sim, request(tools=PTC_TOOLS), stream=False)
        events = raw(sim, request(tools=PTC_TOOLS), stream=True)
    _text, code, roll = body["content"]
    assert roll["caller"] == {"type": "code_execution_20250825", "tool_id": code["id"]}
    assert body["stop_reason"] == "tool_use" and "container" in body
    index = first_index(events, lambda b: b["type"] == "tool_use")
    assert block_events(events, index) == ["start", "stop"]  # the whole call in its start, as recorded
    assert next(e["content_block"] for e in events if e.get("index") == index)["input"] == {"die": 1}

    real = recorded_stream(
        lambda es: any(
            e["type"] == "content_block_start"
            and e["content_block"]["type"] == "tool_use"
            and e["content_block"].get("caller", {}).get("type", "direct") != "direct"
            for e in es
        ),
        "a code-called tool_use",
    )
    real_index = first_index(
        real, lambda b: b["type"] == "tool_use" and b.get("caller", {}).get("type") != "direct"
    )
    real_start = next(e["content_block"] for e in real if e.get("index") == real_index)
    assert set(real_start) == set(roll) and set(real_start["caller"]) == set(roll["caller"])
    assert block_events(real, real_index) == ["start", "stop"]


@STREAMED
def test_a_code_called_tool_use_keeps_its_caller_in_the_history(streamed: bool) -> None:
    with sim_of(rolling) as sim:
        turn = round_trip(sim, request(tools=PTC_TOOLS), streamed)
    roll = turn["content"][-1]
    assert roll["caller"]["tool_id"] == turn["content"][1]["id"]


def test_a_code_called_tool_use_without_its_code_is_refused() -> None:
    with sim_of(lambda body: reply(code_call("roll", {}))) as sim:
        answer = sim.handle("POST", "/v1/messages", HEADERS, json.dumps(request(tools=PTC_TOOLS)).encode())
    assert answer.status == 500 and "no code_execution call before it" in sim.errors[-1]


# -- 5. MCP input streamed --------------------------------------------------------------------

MCP = {
    "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "wiki"}],
    "tools": [{"type": "mcp_toolset", "mcp_server_name": "wiki"}],
}


def asking(body: Any) -> Any:
    return reply(mcp_call("wiki", "ask", question="birds?"), mcp_result("Birds fly."), "They fly.")


def test_an_mcp_call_streams_its_input_as_json_deltas() -> None:
    with sim_of(asking) as sim:
        events = raw(sim, request(**MCP), stream=True)
    start = events[1]["content_block"]
    assert start["type"] == "mcp_tool_use" and start["input"] == {}
    assert squeezed(block_events(events, 0)) == ["start", "input_json_delta", "stop"]
    sent = "".join(e["delta"]["partial_json"] for e in events if e.get("index") == 0 and "delta" in e)
    assert json.loads(sent) == {"question": "birds?"}

    real = recorded_stream(
        lambda es: any(
            e["type"] == "content_block_start" and e["content_block"]["type"] == "mcp_tool_use" for e in es
        ),
        "an mcp_tool_use",
    )
    index = first_index(real, lambda b: b["type"] == "mcp_tool_use")
    real_start = next(e["content_block"] for e in real if e.get("index") == index)
    assert set(real_start) == set(start) and real_start["input"] == {}
    assert squeezed(block_events(real, index)) == squeezed(block_events(events, 0))


def test_a_streamed_mcp_call_keeps_its_input_in_the_history() -> None:
    # old bug: the SDK's accumulator kept `input: {}` for an mcp_tool_use
    with sim_of(asking) as sim:
        message = sim.llm().stream(request(**MCP))
    turn, _ = reply_turn(message)
    assert turn is not None and turn["content"][0]["input"] == {"question": "birds?"}


# -- 6. compaction ----------------------------------------------------------------------------


def test_a_compaction_block_streams_as_a_compaction_delta() -> None:
    with sim_of(compacted) as sim:
        body = raw(sim, request(), stream=False)
        events = raw(sim, request(), stream=True)
    assert body["content"][0] == {"type": "compaction", "content": "Summary: the user said hello."}
    assert body["context_management"] == {"applied_edits": []}
    assert events[1]["content_block"] == {"type": "compaction", "content": None}
    assert block_events(events, 0) == ["start", "compaction_delta", "stop"]

    real = recorded_stream(
        lambda es: any(e.get("delta", {}).get("type") == "compaction_delta" for e in es), "compaction"
    )
    index = first_index(real, lambda b: b["type"] == "compaction")
    assert next(e["content_block"] for e in real if e.get("index") == index) == {
        "type": "compaction",
        "content": None,
    }
    assert squeezed(block_events(real, index)) == block_events(events, 0)


def test_a_streamed_compaction_keeps_its_content() -> None:
    # old bug: the SDK's accumulator ignored compaction_delta (content stayed null)
    with sim_of(compacted) as sim:
        message = sim.llm().stream(request())
    turn, _ = reply_turn(message)
    assert turn is not None and turn["content"][0] == {
        "type": "compaction",
        "content": "Summary: the user said hello.",
    }


# -- 7. ping ----------------------------------------------------------------------------------


def test_the_ping_comes_after_the_first_block_starts() -> None:
    with sim_of(lambda body: "Hello.") as sim:
        events = raw(sim, request(), stream=True)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"] and kinds.count("ping") == 1

    real = recorded_stream(lambda es: any(e["type"] == "ping" for e in es), "a ping")
    real_kinds = [e["type"] for e in real]
    assert real_kinds[:2] == kinds[:2] and "ping" in real_kinds[2:4]


def test_a_stream_with_a_ping_still_reads_as_the_json_reply() -> None:
    def policy(body: Any) -> Any:
        return reply("Hello.", *server_call("web_search", {"query": "q"}, []))

    tools = [{"type": "web_search_20250305", "name": "web_search"}]
    replies = []
    for streamed in (False, True):
        with sim_of(policy) as sim:
            llm = sim.llm()
            replies.append((llm.stream if streamed else llm.create)(request(tools=tools)).content)
    assert replies[0] == replies[1]
