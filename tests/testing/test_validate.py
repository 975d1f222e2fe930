"""Each rejection `validate_request` knows fires on a minimal bad request, and a rich valid one passes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.testing import validate_request
from agent.testing.validate import count_breakpoints, validate_count_tokens

MARK = {"type": "ephemeral"}


def use(id: str, name: str = "calc", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": {"a": 1}, **extra}


def result(id: str, content: Any = "1", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id, "content": content, **extra}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-opus-5",
        "max_tokens": 100,
        "messages": list(messages) or [{"role": "user", "content": "hi"}],
        **extra,
    }


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def assistant(*content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content)}


TOOLS = [
    {"name": "calc", "description": "math", "input_schema": {"type": "object"}, "cache_control": MARK},
    {"name": "lookup-2", "input_schema": {"type": "object", "properties": {}}, "strict": True},
]


def rich() -> dict[str, Any]:
    """Parallel tool uses, an error result, list-shaped result content, cache markers, effort."""
    return body(
        user(text("Compute and look up.")),
        assistant(text("On it."), use("t1"), use("t2", "lookup-2")),
        user(
            result("t1", "2"),
            result("t2", [text("not found")], is_error=True),
            text("Also, be brief.", cache_control={"type": "ephemeral", "ttl": "1h"}),
        ),
        assistant(use("t3")),
        user(result("t3", "3", cache_control=MARK)),
        assistant(text("Done: 2 and 3.")),
        {"role": "user", "content": "thanks"},
        {"role": "user", "content": "one more thing"},  # merged with the previous user message
        system=[text("You are exact.", cache_control=MARK)],
        tools=TOOLS,
        tool_choice={"type": "auto"},
        output_config={"effort": "high"},
        metadata={"user_id": "u1"},
    )


def test_rich_valid_request_passes() -> None:
    assert validate_request(rich()) == []


def test_validation_does_not_mutate_its_input() -> None:
    request = rich()
    before = copy.deepcopy(request)
    validate_request(request)
    assert request == before


def fires(request: dict[str, Any], *fragments: str) -> None:
    errors = validate_request(request)
    for fragment in fragments:
        assert any(fragment in e for e in errors), f"{fragment!r} not in {errors}"


@pytest.mark.parametrize(
    ("request_body", "fragment"),
    [
        (body(speed_mode="fast"), "speed_mode: Extra inputs are not permitted"),
        ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model: Field required"),
        (body(max_tokens=-1), "max_tokens: Input should be greater than or equal to 0"),
        (body(max_tokens=True), "max_tokens: Input should be a valid integer"),
        (body(output_config={"effort": "extreme"}), "output_config.effort: Input should be"),
        (body(output_config={"budget": 1}), "output_config.budget: Extra inputs are not permitted"),
        (body(output_config="high"), "output_config: Input should be a valid dictionary"),
        (body(model="claude-haiku-4-5", output_config={"effort": "low"}), "does not support the effort"),
        (
            body(model="claude-haiku-4-5-20251001", output_config={"effort": "low"}),
            "does not support the effort",
        ),
        (body(tools={"name": "x"}), "tools: Input should be a valid list"),
        (
            body(tools=[{"name": "bad name", "input_schema": {"type": "object"}}]),
            "String should match pattern",
        ),
        (
            body(tools=[{"name": "x" * 129, "input_schema": {"type": "object"}}]),
            "String should match pattern",
        ),
        (body(tools=[TOOLS[0], TOOLS[0]]), "Tool names must be unique"),
        (
            body(tools=[{"name": "x", "input_schema": {"type": "array"}}]),
            "input_schema.type: Input should be 'object'",
        ),
        (body(tools=[{"name": "x", "input_schema": {"type": "object"}, "_keep": 1}]), "tools.0._keep: Extra"),
        (body(tools=[{**TOOLS[1], "cache_control": {"type": "persistent"}}]), "Input should be 'ephemeral'"),
        (body(system=[text("x", cache_control={"type": "ephemeral", "ttl": "1d"})]), "Input should be '5m'"),
        (body(system=[{"type": "image"}]), "system.0.type: Input should be 'text'"),
        (body(system=7), "system: Input should be a list or a string"),
        ({"model": "claude-opus-5", "max_tokens": 5, "messages": []}, "at least one message is required"),
        (body({"role": "system", "content": "x"}, user(text("y"))), "a system message cannot be the first"),
        (body({"role": "developer", "content": "x"}), "Input tag 'developer' found using 'role'"),
        (body({"role": "user", "content": "x", "name": "bob"}), "messages.0.name: Extra inputs"),
        (body(user(), assistant(text("x"))), "all messages must have non-empty content"),
        (body({"role": "user", "content": 5}), "messages.0.content: Input should be a list or a string"),
        (body(user(text(""))), "text content blocks must be non-empty"),
        (body(user(text("x", _tool_name="calc"))), "_tool_name: Extra inputs are not permitted"),
        (body(user({"type": "video"})), "Input tag 'video' found using 'type'"),
        (
            body(user(text("x")), assistant(use("t1")), user(text("y"))),
            "ids were found without `tool_result`",
        ),
        (body(user(text("x")), assistant(use("t1"))), "ids were found without `tool_result`"),
        (body(user(result("t9"))), "unexpected `tool_use_id` found in `tool_result` blocks: t9"),
        (body(user(text("x")), assistant(use("t1")), user(text("y"), result("t1"))), "must come first"),
        (
            body(user(text("x")), assistant({"type": "tool_use", "id": "t1", "name": "c", "input": 3})),
            "input: Input should be a valid dictionary",
        ),
        (
            body(user(text("x")), assistant(use("t1")), user(result("t1", 5))),
            "content: Input should be a list",
        ),
        (
            body(user(text("x")), assistant(use("t1")), user(result("t1", [{"type": "tool_use"}]))),
            "Input tag 'tool_use' found using 'type'",
        ),
        (body(user(text("x")), assistant(use("t1")), user(result("t1", is_error="yes"))), "valid boolean"),
        (body(user(text("x")), assistant(use("t1")), user(result("t1", _name="calc"))), "_name: Extra"),
        (
            body(user(text("x")), assistant(use("t1"), use("t1")), user(result("t1"))),
            "`tool_use` ids must be unique",
        ),
        (body(user(*[text(str(i), cache_control=MARK) for i in range(5)])), "A maximum of 4 blocks"),
        (body(user(*[text(str(i), cache_control=MARK) for i in range(4)]), cache_control=MARK), "Found 5"),
    ],
)
def test_each_rule_fires(request_body: dict[str, Any], fragment: str) -> None:
    fires(request_body, fragment)


def test_same_role_messages_are_merged_before_pairing() -> None:
    split_results = body(
        user(text("x")), assistant(use("t1"), use("t2")), user(result("t1")), user(result("t2"))
    )
    assert validate_request(split_results) == []
    text_then_result = body(user(text("x")), assistant(use("t1")), user(text("y")), user(result("t1")))
    fires(text_then_result, "tool_result blocks must come first")


def test_what_live_traffic_shows_the_api_accepts() -> None:
    """Both were refused here once; recordings of the real API answered them 200 (WIRE-RULES)."""
    assert validate_request(body(assistant(text("Earlier answer.")), user(text("go on")))) == []
    reused = body(
        user(text("x")), assistant(use("t1")), user(result("t1")), assistant(use("t1")), user(result("t1"))
    )
    assert validate_request(reused) == []


def test_an_empty_final_assistant_message_is_a_prefill_not_an_error() -> None:
    assert validate_request(body(user(text("x")), assistant())) == []


def test_breakpoints_count_everywhere() -> None:
    assert count_breakpoints(rich()) == 4
    assert (
        count_breakpoints(body(user(result("t", [text("x", cache_control=MARK)])), cache_control=MARK)) == 2
    )


def test_count_tokens_bodies_need_no_max_tokens_but_keep_every_other_rule() -> None:
    counted = {k: v for k, v in rich().items() if k not in ("max_tokens", "metadata")}
    assert validate_count_tokens(counted) == []
    assert any("Extra inputs" in e for e in validate_count_tokens({**counted, "max_tokens": 5}))
    assert any(
        "must be non-empty" in e for e in validate_count_tokens({**counted, "messages": [user(text(""))]})
    )
