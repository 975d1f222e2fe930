"""Server tools without a network: declaring them, keeping their pairs whole, pricing them,
and the validator's rules for them (each checked against what the API is known to do)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest
from anthropic.types import Message

from agent import MODELS, Agent, CostBudgetExceeded, RunState, Usage, tool
from agent.context.cache import strip_cache_control
from agent.context.compact import choose_boundary, transcript
from agent.context.prune import prune
from agent.ext.server_tools import (
    Containers,
    ServerTool,
    code_execution,
    container_of,
    server_tool,
    web_fetch,
    web_search,
)
from agent.messages import assistant_message, opening_messages
from agent.models import ServerToolFees
from agent.server_blocks import closing_results, unanswered_calls
from agent.testing import ScriptedLLM, reply, server_call, tool_use, validate_request
from agent.testing.wire_shapes import check_shape


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first.
        b: second.
    """
    return a + b


HITS = [{"type": "web_search_result", "url": "https://x.test", "title": "X", "encrypted_content": "enc"}]
CODE_OUT = {"type": "code_execution_result", "stdout": "4\n", "stderr": "", "return_code": 0, "content": []}


def body(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    declared = tools if tools is not None else [web_search().declaration(), code_execution().declaration()]
    return {"model": "claude-opus-5", "max_tokens": 100, "tools": declared, "messages": messages}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(id: str, name: str = "web_search") -> dict[str, Any]:
    return {"type": "server_tool_use", "id": id, "name": name, "input": {"query": "q"}}


def result(id: str, kind: str = "web_search_tool_result", content: Any = None) -> dict[str, Any]:
    return {"type": kind, "tool_use_id": id, "content": HITS if content is None else content}


def message(*content: Any, stop_reason: str = "end_turn", **usage: Any) -> Message:
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-5",
            "content": list(content),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, **usage},
        }
    )


# -- declaring ---------------------------------------------------------------------------


def test_helpers_build_definitions_the_sdk_types_accept() -> None:
    tools = [
        web_search(max_uses=3, allowed_domains=["docs.python.org"], user_location={"country": "US"}),
        web_fetch(max_uses=2, max_content_tokens=5000, citations=True),
        code_execution(),
    ]
    request = body([user("hi")], [t.declaration() for t in tools])
    assert check_shape(request) == [] and validate_request(request) == []
    assert tools[0].declaration() == {
        "type": "web_search_20260318",
        "name": "web_search",
        "max_uses": 3,
        "allowed_domains": ["docs.python.org"],
        "user_location": {"type": "approximate", "country": "US"},
    }


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: web_search(allowed_domains=["a.test"], blocked_domains=["b.test"]), "cannot both"),
        (lambda: web_search(max_uses=0), "positive integer"),
        (lambda: web_fetch(allowed_domains="a.test"), "a list"),
        (lambda: ServerTool({"name": "x", "input_schema": {"type": "object"}}), "@tool"),
        (lambda: ServerTool({"type": "web_search_20260318"}), "name"),
        (
            lambda: server_tool({"type": "code_execution_20250825", "name": "code_execution"}, betas="b"),
            "list",
        ),
    ],
)
def test_bad_definitions_get_a_clear_error(make: Any, words: str) -> None:
    with pytest.raises((ValueError, TypeError), match=words):
        make()


def test_agent_declares_server_tools_as_given_beside_functions_in_name_order() -> None:
    given = {"type": "code_execution_20250825", "name": "code_execution"}
    llm = ScriptedLLM([reply("done")])
    agent = Agent(llm=llm, tools=[add, web_search(max_uses=3), given], artifacts_dir=None)
    agent.run("hi")
    tools = strip_cache_control(llm.requests[0]["tools"])
    assert [t["name"] for t in tools] == ["add", "code_execution", "web_search"]
    assert tools[1] == given and tools[2] == {
        "type": "web_search_20260318",
        "name": "web_search",
        "max_uses": 3,
    }
    given["name"] = "changed"  # the registry holds its own copy
    assert agent.registry.declarations()[1]["name"] == "code_execution"
    with pytest.raises(ValueError, match="duplicate tool name: web_search"):
        Agent(llm=llm, tools=[web_search(), web_search()])


def test_a_server_tools_beta_goes_out_as_a_header_not_in_the_body() -> None:
    llm = ScriptedLLM([reply("done")])
    toolset = server_tool({"type": "mcp_toolset", "name": "wiki", "mcp_server_name": "wiki"}, betas=["b-1"])
    Agent(llm=llm, tools=[add, toolset], artifacts_dir=None).run("hi")
    assert llm.requests[0]["betas"] == ["b-1"]


def test_only_server_tools_still_declare_tools() -> None:
    llm = ScriptedLLM([reply("done")])
    Agent(llm=llm, tools=[web_search()], artifacts_dir=None).run("hi")
    assert strip_cache_control(llm.requests[0]["tools"]) == [web_search().declaration()]


# -- the validator's rules ----------------------------------------------------------------


def test_validator_accepts_pairs_and_a_paused_turn_left_open_last() -> None:
    paired = {
        "role": "assistant",
        "content": [call("srvtoolu_1"), result("srvtoolu_1"), {"type": "text", "text": "ok"}],
    }
    assert validate_request(body([user("q"), paired, user("more")])) == []
    paused = {"role": "assistant", "content": [{"type": "text", "text": "searching"}, call("srvtoolu_2")]}
    assert validate_request(body([user("q"), paused])) == []  # sent back to be continued


def test_validator_accepts_a_call_in_flight_while_client_tools_answer() -> None:
    # live traffic (pydantic-ai's recordings) shows this answered 200: the API runs it next
    turn = {
        "role": "assistant",
        "content": [call("srvtoolu_3"), tool_use("add", {"a": 1, "b": 2}, id="toolu_1")],
    }
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"}]}
    request = body([user("q"), turn, answer], [add.declaration(), web_search().declaration()])
    assert validate_request(request) == []


def test_validator_keeps_a_code_call_open_while_its_code_calls_tools() -> None:
    # programmatic tool calling (an SDK snapshot recorded live): the code's second tool call
    # comes in a reply of its own, so the code execution call is still open two turns later
    code = call("srvtoolu_7", name="code_execution")
    version = "code_execution_20260120"  # a caller type the SDK's request types name
    by_code = {"type": version, "tool_id": "srvtoolu_7"}
    first = {
        "role": "assistant",
        "content": [code, {**tool_use("add", {"a": 1, "b": 2}, id="toolu_1"), "caller": by_code}],
    }

    def answer(id: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "3"}]}

    second = {
        "role": "assistant",
        "content": [{**tool_use("add", {"a": 3, "b": 4}, id="toolu_2"), "caller": by_code}],
    }
    history = [user("q"), first, answer("toolu_1"), second, answer("toolu_2")]
    tools = [
        {**add.declaration(), "allowed_callers": [version]},
        code_execution(version=version).declaration(),
    ]
    assert validate_request(body(history, tools)) == []
    # the model itself going on (not the code) leaves the call unanswered: refused
    direct = {"role": "assistant", "content": [tool_use("add", {"a": 3, "b": 4}, id="toolu_2")]}
    errors = validate_request(body([*history[:3], direct, answer("toolu_2")], tools))
    assert any("srvtoolu_7" in e and "code_execution_tool_result" in e for e in errors)


def test_validator_refuses_a_call_never_answered_and_a_result_without_its_call() -> None:
    paused = {"role": "assistant", "content": [{"type": "text", "text": "searching"}, call("srvtoolu_4")]}
    errors = validate_request(body([user("q"), paused, user("and now?")]))
    assert any("srvtoolu_4" in e and "web_search_tool_result" in e for e in errors)
    orphan = {"role": "assistant", "content": [result("srvtoolu_5"), {"type": "text", "text": "ok"}]}
    errors = validate_request(body([user("q"), orphan, user("more")]))
    assert any("srvtoolu_5" in e and "without a corresponding server tool use" in e for e in errors)


def test_validator_still_refuses_an_unknown_tool_type() -> None:
    errors = validate_request(body([user("q")], [{"type": "web_search_19990101", "name": "web_search"}]))
    assert errors and "tools.0" in errors[0]


@pytest.mark.parametrize(
    "name",
    ["web_search", "web_fetch", "code_execution", "bash_code_execution", "text_editor_code_execution"],
)
def test_closing_results_are_shapes_the_api_takes(name: str) -> None:
    open_call = {"type": "server_tool_use", "id": "srvtoolu_9", "name": name, "input": {}}
    closed = {"role": "assistant", "content": [open_call, *closing_results([open_call])]}
    tools = [web_search().declaration(), web_fetch().declaration(), code_execution().declaration()]
    assert validate_request(body([user("q"), closed, user("next")], tools)) == []


# -- pairs on the loop's turns -------------------------------------------------------------


def test_a_final_turn_keeps_a_result_whose_call_was_in_the_paused_turn() -> None:
    history = [user("q"), {"role": "assistant", "content": [call("srvtoolu_1")]}]
    final = message(result("srvtoolu_1"), {"type": "text", "text": "found"})
    turn = assistant_message(final, drop_tool_uses=True, after=history)
    assert turn is not None and turn["content"][0] == result("srvtoolu_1")
    assert validate_request(body([*history, turn, user("thanks")])) == []


def test_a_cut_off_turn_closes_a_paused_call_it_never_answered() -> None:
    history = [user("q"), {"role": "assistant", "content": [call("srvtoolu_1")]}]
    cut = message({"type": "text", "text": "I was reading"}, call("srvtoolu_2"), stop_reason="max_tokens")
    turn = assistant_message(cut, drop_tool_uses=True, after=history)
    assert turn is not None
    kinds = [b["type"] for b in turn["content"]]
    assert kinds == ["text", "web_search_tool_result"]  # its own open call dropped, the paused one closed
    assert turn["content"][1]["content"] == {
        "type": "web_search_tool_result_error",
        "error_code": "unavailable",
    }
    assert unanswered_calls([*history, turn]) == []
    assert validate_request(body([*history, turn, user("go on")])) == []


def test_a_handed_over_paused_history_is_closed_before_the_new_prompt() -> None:
    history = [
        user("q"),
        {"role": "assistant", "content": [{"type": "text", "text": "on it"}, call("srvtoolu_1")]},
    ]
    messages = opening_messages(history, "never mind", tools_declared=True)
    assert history[1]["content"][-1] == call("srvtoolu_1")  # the caller's list untouched
    assert validate_request(body(messages)) == []


def test_pruning_leaves_server_pairs_whole() -> None:
    turns: list[dict[str, Any]] = [user("q")]
    for i in range(6):
        turns.append(
            {
                "role": "assistant",
                "content": [
                    call(f"srvtoolu_{i}"),
                    result(f"srvtoolu_{i}"),
                    tool_use("add", {"a": i, "b": 1}, id=f"toolu_{i}"),
                ],
            }
        )
        turns.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "x" * 500}],
            }
        )
    pruned = prune(turns, keep_recent=2)
    assert pruned != turns  # old client results became stubs
    assert [m for m in pruned if m["role"] == "assistant"] == [m for m in turns if m["role"] == "assistant"]
    assert validate_request(body(pruned, [add.declaration(), web_search().declaration()])) == []


def test_compaction_never_cuts_between_a_call_in_flight_and_its_result() -> None:
    in_flight = {
        "role": "assistant",
        "content": [call("srvtoolu_1"), tool_use("add", {"a": 1, "b": 1}, id="t1")],
    }
    answers = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "2"}]}
    resumed = {"role": "assistant", "content": [result("srvtoolu_1"), {"type": "text", "text": "done"}]}
    history = [
        user("q"),
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        user("next"),
        in_flight,
        answers,
        resumed,
        user("more"),
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
    ]
    cut = choose_boundary(history, tail_budget=1, size=lambda m: 1)
    assert cut == 7  # not 5: that tail would hold the result without its call
    assert choose_boundary(history[:6], tail_budget=2, size=lambda m: 1) == 3
    assert "CALL web_search" in transcript(history) and "SERVER RESULT web_search_tool_result" in transcript(
        history
    )


# -- fees and the container ------------------------------------------------------------------


def test_web_searches_are_priced_from_the_usage_the_api_reports() -> None:
    reply_ = message(
        {"type": "text", "text": "ok"}, server_tool_use={"web_search_requests": 3, "web_fetch_requests": 2}
    )
    record = Usage.from_message(1, reply_, models=MODELS)
    tokens_only = Usage.from_message(1, message({"type": "text", "text": "ok"}), models=MODELS)
    assert record.web_searches == 3 and record.web_fetches == 2
    assert record.server_tool_fees_usd == pytest.approx(0.03)
    assert record.cost_usd is not None and tokens_only.cost_usd is not None
    assert record.cost_usd - tokens_only.cost_usd == pytest.approx(0.03)
    assert "searches=3" in record.line()
    dearer = MODELS.with_fees(ServerToolFees(web_search_per_1k=20.0, web_fetch_per_1k=1.0))
    assert Usage.from_message(1, reply_, models=dearer).server_tool_fees_usd == pytest.approx(0.062)
    assert dearer.register(MODELS["claude-opus-5"]).fees is dearer.fees


def test_the_dollar_budget_counts_search_fees() -> None:
    searching = reply(
        *server_call("web_search", {"query": "q"}, HITS),
        "more?",
        stop_reason="pause_turn",
        server_tool_use={"web_search_requests": 50, "web_fetch_requests": 0},
    )
    llm = ScriptedLLM([searching, searching, searching])
    agent = Agent(llm=llm, tools=[web_search()], max_cost_usd=0.9, artifacts_dir=None)
    with pytest.raises(CostBudgetExceeded) as stopped:
        agent.run("search a lot")
    assert len(llm.requests) == 2  # $0.50 of searches per call: the third would pass $0.90
    assert sum(s.server_tool_fees_usd for s in stopped.value.result.steps) == pytest.approx(1.0)


def test_container_of_reads_the_id_until_it_expires() -> None:
    now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    live = SimpleNamespace(
        container=SimpleNamespace(id="container_1", expires_at=now + dt.timedelta(hours=1))
    )
    gone = SimpleNamespace(
        container=SimpleNamespace(id="container_1", expires_at=now - dt.timedelta(seconds=1))
    )
    assert container_of(live, now) == "container_1"
    assert container_of(gone, now) is None
    assert container_of(SimpleNamespace(container=None), now) is None


def test_containers_sends_back_the_last_live_container_of_this_run() -> None:
    def ran_in(container: str | None) -> Any:
        expires = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
        return SimpleNamespace(container=container and SimpleNamespace(id=container, expires_at=expires))

    containers, run, other = Containers(), RunState(messages=[]), RunState(messages=[])
    body = {"model": "m", "max_tokens": 1, "messages": []}
    assert containers.request(body, run) is body  # no code run yet: no container
    containers.response(ran_in("container_1"), run)
    containers.response(ran_in(None), run)  # a reply that ran no code keeps the sandbox
    assert containers.request(body, run) == {**body, "container": "container_1"}
    assert list(containers.request(body, run)) == ["model", "max_tokens", "messages", "container"]
    assert "container" not in containers.request(body, other)  # per run, not per extension
    containers.response(ran_in("container_2"), run)
    assert containers.request(body, run)["container"] == "container_2"


def test_the_dollar_budget_refuses_a_call_whose_searches_could_pass_it() -> None:
    llm = ScriptedLLM([reply("done")])
    capped = Agent(llm=llm, tools=[web_search(max_uses=50)], max_cost_usd=0.3, artifacts_dir=None)
    with pytest.raises(CostBudgetExceeded, match="next call"):
        capped.run("search")  # 50 searches could cost $0.50
    assert llm.requests == []
    assert (
        Agent(llm=llm, tools=[web_search(max_uses=5)], max_cost_usd=0.3, artifacts_dir=None).run("go").text
        == "done"
    )
