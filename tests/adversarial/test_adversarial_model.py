"""Attacks from the model's side and the caller's: malformed replies, odd histories, odd budgets.

Each test sends what a hostile or broken model (or a careless caller) could send, and checks
what must hold: the run goes on or stops with a clear, typed error; every later request stays
valid (`validate_request`); nothing is silently converted into something else.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

from agent import Agent, tool
from agent.ext.sessions import Session
from agent.messages import assistant_message
from agent.testing import ScriptedLLM, reply, tool_use, validate_request

ran: list[dict[str, Any]] = []


@tool
def note(text: str) -> str:
    """Write a note down.

    Args:
        text: what to note.
    """
    ran.append({"text": text})
    return f"noted: {text}"


def raw_reply(*content: Any, stop_reason: str = "tool_use", usage: Usage | None = None) -> Message:
    """A reply built without validation: what a broken server or model could send."""
    return Message.model_construct(
        id="msg_x",
        type="message",
        role="assistant",
        model="claude-opus-5",
        content=list(content),
        stop_reason=stop_reason,
        stop_sequence=None,
        usage=usage if usage is not None else Usage(input_tokens=10, output_tokens=5),
    )


def call(id: str, input: Any, name: str = "note") -> ToolUseBlock:
    return ToolUseBlock.model_construct(type="tool_use", id=id, name=name, input=input)


def valid(messages: list[dict[str, Any]]) -> bool:
    return validate_request({"model": "claude-opus-5", "max_tokens": 10, "messages": messages}) == []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


@pytest.mark.filterwarnings("error")  # nor is it handed to pydantic, whose serializer would warn
@pytest.mark.parametrize("bad_input", ["text", None, 42, [["text", "x"]], 1.5, True])
def test_tool_input_that_is_not_an_object_becomes_an_error_result(bad_input: Any) -> None:
    llm = ScriptedLLM([raw_reply(call("toolu_1", bad_input)), reply("ok")])
    result = Agent(llm=llm, tools=[note], artifacts_dir=None).run("go")
    assert ran == []  # nothing ran, and a list of pairs was not turned into {"text": "x"}
    answer = llm.requests[1]["messages"][-1]["content"][0]
    assert answer["is_error"] is True and "must be a JSON object" in answer["content"]
    assert llm.requests[1]["messages"][1]["content"][0]["input"] == {}  # sent back as a valid object
    assert valid(llm.requests[1]["messages"]) and valid(result.messages)


def test_duplicate_ids_in_one_turn_each_get_their_own_result_and_stay_valid() -> None:
    twice = raw_reply(call("toolu_same", {"text": "a"}), call("toolu_same", {"text": "b"}))
    llm = ScriptedLLM([twice, reply("ok")])
    Agent(llm=llm, tools=[note], artifacts_dir=None).run("go")
    sent = llm.requests[1]["messages"]
    ids = [b["id"] for b in sent[1]["content"]]
    assert len(set(ids)) == 2 and ids[0] == "toolu_same"
    assert [b["tool_use_id"] for b in sent[2]["content"]] == ids
    assert sorted(r["text"] for r in ran) == ["a", "b"] and valid(sent)  # each ran once, in parallel
    assert [b["content"] for b in sent[2]["content"]] == ["noted: a", "noted: b"]  # results in call order


def test_a_response_without_usage_is_estimated_not_a_crash(caplog: pytest.LogCaptureFixture) -> None:
    bare = raw_reply(TextBlock(type="text", text="done"), stop_reason="end_turn")
    object.__setattr__(bare, "usage", None)
    result = Agent(llm=ScriptedLLM([bare]), artifacts_dir=None).run("go")
    assert result.text == "done"
    assert result.steps[0].uncached > 0 and result.steps[0].output > 0
    assert "no usage" in caplog.text


def test_a_final_answer_keeps_a_server_tool_pair_whole_and_a_cut_turn_drops_both() -> None:
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    whole = Message.model_validate(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [search, found, {"type": "text", "text": "answer"}],
        }
    )
    kept = assistant_message(whole, drop_tool_uses=True)
    assert kept is not None and [b["type"] for b in kept["content"]] == [
        "server_tool_use",
        "web_search_tool_result",
        "text",
    ]
    cut = whole.model_copy(
        update={"content": whole.content[:1] + whole.content[2:], "stop_reason": "max_tokens"}
    )
    left = assistant_message(cut, drop_tool_uses=True)
    assert left is not None and [b["type"] for b in left["content"]] == ["text"]  # no orphaned call
    orphan = whole.model_copy(update={"content": whole.content[1:]})
    left = assistant_message(orphan, drop_tool_uses=True)
    assert left is not None and [b["type"] for b in left["content"]] == ["text"]  # no orphaned result


@pytest.mark.parametrize("option", ["max_cost_usd", "max_input_tokens", "tool_timeout"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0])
def test_nan_infinite_or_negative_budgets_are_refused(option: str, value: float) -> None:
    with pytest.raises(ValueError, match=option):
        Agent(llm=ScriptedLLM([]), **{option: value})  # type: ignore[misc]


@pytest.mark.parametrize(("option", "value"), [("max_steps", "5"), ("max_steps", 2.0), ("keep_recent", True)])
def test_option_types_are_checked(option: str, value: Any) -> None:
    with pytest.raises(TypeError, match=option):
        Agent(llm=ScriptedLLM([]), **{option: value})  # type: ignore[misc]


def test_a_history_ending_in_unanswered_calls_gets_error_results_first() -> None:
    history = [
        {"role": "user", "content": "note two things"},
        {"role": "assistant", "content": [tool_use("note", {"text": "a"}, id="toolu_a")]},
    ]
    llm = ScriptedLLM([reply("ok")])
    Agent(llm=llm, tools=[note], artifacts_dir=None).run("and now?", history=history)
    sent = llm.requests[0]["messages"]
    assert sent[-1]["content"][0]["tool_use_id"] == "toolu_a" and sent[-1]["content"][0]["is_error"]
    assert sent[-1]["content"][-1]["text"] == "and now?"
    assert valid(sent) and ran == []


def test_a_prompt_with_a_lone_surrogate_is_refused_before_anything_is_spent(tmp_path: Any) -> None:
    llm = ScriptedLLM([])
    with pytest.raises(ValueError, match="lone surrogate"):
        Agent(llm=llm).run("bad \ud800 text", extensions=[Session(tmp_path / "s.jsonl")])
    assert llm.requests == [] and not (tmp_path / "s.jsonl").exists()


def test_tool_blocks_without_tools_are_refused_with_a_clear_error() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [tool_use("note", {"text": "a"}, id="toolu_a")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "ok"}]},
    ]
    with pytest.raises(ValueError, match="has no tools"):
        Agent(llm=ScriptedLLM([]), artifacts_dir=None).run("more", history=history)
