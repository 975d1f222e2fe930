"""What the real Messages API takes, the validator takes; what it refuses, the validator refuses.

Every example here is hand-written from the platform docs and the `anthropic` SDK's param
types (none is copied from a recording). The first half is one accepted request per shape
category that the validator used to refuse; the second half is one test per refusal rule,
each next to a valid twin so the test shows *that rule* is what refuses.
`benchmarks/live_shapes.py` checks the same against other projects' live recordings.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.models import MODELS, ModelInfo
from agent.testing.validate import (
    API_VERSION,
    LEGACY_API_VERSION,
    validate_count_tokens,
    validate_request,
)

MODEL = "claude-opus-4-8"  # takes every effort, adaptive thinking (or none) and forced tool use
BUDGET_MODEL = "claude-opus-4-6"  # still takes extended thinking with a budget (`enabled`)
MARK = {"type": "ephemeral"}
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
CODE_EXECUTION = {"type": "code_execution_20250825", "name": "code_execution"}
TOOL_SEARCH = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
WEATHER = {"name": "get_weather", "description": "Weather by city.", "input_schema": {"type": "object"}}


def body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1024, "messages": list(messages), **extra}


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def assistant(*content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content)}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def use(id: str, name: str = "get_weather", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": {"city": "Oslo"}, **extra}


def result(id: str, content: Any = "4°C", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id, "content": content, **extra}


def server_use(id: str, name: str, **input: Any) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": id, "name": name, "input": input}


def accepted(request: dict[str, Any], **kwargs: Any) -> None:
    assert validate_request(request, **kwargs) == []


def refused(request: dict[str, Any], fragment: str, **kwargs: Any) -> None:
    errors = validate_request(request, **kwargs)
    assert any(fragment in e for e in errors), f"{fragment!r} not in {errors}"


# --- Shapes the API accepts ---------------------------------------------------------------

SERVER_RESULTS = {
    "web_search_tool_result": (
        "web_search",
        [{"type": "web_search_result", "url": "https://a.example", "title": "A", "encrypted_content": "e1"}],
    ),
    "web_fetch_tool_result": (
        "web_fetch",
        {
            "type": "web_fetch_result",
            "url": "https://a.example",
            "content": {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "hi"},
            },
        },
    ),
    "code_execution_tool_result": (
        "code_execution",
        {"type": "code_execution_result", "stdout": "2\n", "stderr": "", "return_code": 0, "content": []},
    ),
    "bash_code_execution_tool_result": (
        "bash_code_execution",
        {"type": "bash_code_execution_result", "stdout": "ok", "stderr": "", "return_code": 0, "content": []},
    ),
    "text_editor_code_execution_tool_result": (
        "text_editor_code_execution",
        {"type": "text_editor_code_execution_view_result", "file_type": "text", "content": "x = 1"},
    ),
    "tool_search_tool_result": (
        "tool_search_tool_bm25",
        {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "x"}],
        },
    ),
}


@pytest.mark.parametrize("kind", sorted(SERVER_RESULTS))
def test_server_tool_blocks_in_history(kind: str) -> None:
    """A server tool's call and result both sit in the assistant turn: no tool_result pairing."""
    name, content = SERVER_RESULTS[kind]
    call = server_use("srvtoolu_01", name, query="oslo weather")
    answer = {"type": kind, "tool_use_id": "srvtoolu_01", "content": content}
    accepted(body(user(text("Look it up.")), assistant(call, answer, text("Done.")), user(text("Thanks."))))


def test_server_tools_are_declared_by_type_without_an_input_schema() -> None:
    accepted(body(user(text("Search.")), tools=[WEB_SEARCH, CODE_EXECUTION, TOOL_SEARCH, WEATHER]))


def test_tool_reference_inside_a_tool_result_and_deferred_tools() -> None:
    deferred = {
        **WEATHER,
        "defer_loading": True,
        "input_examples": [{"city": "Oslo"}],
        "allowed_callers": ["direct"],
    }
    found = result("toolu_01", [{"type": "tool_reference", "tool_name": "get_weather"}])
    request = body(
        user(text("Weather?")),
        assistant(use("toolu_01", "find_tools")),
        user(found),
        tools=[{"name": "find_tools", "input_schema": {"type": "object"}}, deferred],
    )
    accepted(request)


def test_mcp_blocks_and_mcp_servers() -> None:
    request = body(
        user(text("Ask the wiki.")),
        assistant(
            {
                "type": "mcp_tool_use",
                "id": "mcptoolu_01",
                "name": "ask",
                "server_name": "wiki",
                "input": {"q": "x"},
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_01",
                "content": [text("answer")],
                "is_error": False,
            },
            text("The wiki says: answer."),
        ),
        user(text("Thanks.")),
        mcp_servers=[{"type": "url", "url": "https://mcp.example/mcp", "name": "wiki"}],
    )
    accepted(request)


def test_container_upload_compaction_and_search_result() -> None:
    request = body(
        user({"type": "container_upload", "file_id": "file_01"}, text("Analyse the file.")),
        assistant({"type": "compaction", "content": "Summary of the earlier turns."}),
        user(
            {
                "type": "search_result",
                "source": "https://docs.example/a",
                "title": "A",
                "content": [text("Body of A.")],
                "citations": {"enabled": True},
            },
            text("Use this."),
        ),
        container={"id": "container_01"},
        tools=[CODE_EXECUTION],
    )
    accepted(request)


def test_top_level_context_management_and_task_budget() -> None:
    edits = [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100_000}}]
    request = body(
        user(text("Go.")),
        context_management={"edits": edits},
        output_config={"effort": "high", "task_budget": {"type": "tokens", "total": 50_000}},
    )
    accepted(request)


def test_mid_conversation_system_message() -> None:
    request = body(
        user(text("Plan it.")),
        assistant(text("Here is a plan.")),
        user(text("Now do it.")),
        {"role": "system", "content": "Auto-approve mode is now enabled."},
    )
    accepted(request)


def test_a_history_may_start_with_an_assistant_turn() -> None:
    accepted(body(assistant(text("Welcome back.")), user(text("Continue."))))


def test_a_tool_use_id_may_be_reused_in_a_later_turn() -> None:
    request = body(
        user(text("Twice.")),
        assistant(use("toolu_01")),
        user(result("toolu_01")),
        assistant(use("toolu_01")),
        user(result("toolu_01")),
    )
    accepted(request)


def test_thinking_and_redacted_thinking_blocks() -> None:
    thought = {"type": "thinking", "thinking": "", "signature": "c2ln"}
    hidden = {"type": "redacted_thinking", "data": "ZW5j"}
    accepted(
        body(user(text("Hard one.")), assistant(thought, hidden, use("toolu_01")), user(result("toolu_01")))
    )


@pytest.mark.parametrize(
    "thinking",
    [
        {"type": "adaptive"},
        {"type": "adaptive", "display": "summarized"},
        {
            "type": "adaptive",
            "display": "omitted",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        },
        {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "error"}},
        {"type": "enabled", "budget_tokens": 2048, "display": "summarized"},
        {"type": "disabled"},
    ],
)
def test_thinking_parameter_shapes(thinking: dict[str, Any]) -> None:
    model = BUDGET_MODEL if thinking["type"] == "enabled" else MODEL
    accepted(body(user(text("Think.")), model=model, thinking=thinking))


def test_whitespace_text_beside_other_content_and_a_cache_warming_max_tokens() -> None:
    accepted(body(user(text("Go.")), assistant(text(" "), use("toolu_01")), user(result("toolu_01"))))
    accepted(body(user(text("Warm the cache.", cache_control=MARK)), max_tokens=0))


def test_sampling_parameters_only_under_the_legacy_api_version() -> None:
    sampled = body(user(text("Hi.")), temperature=0.2, top_p=0.9, top_k=40)
    accepted(sampled, api_version=LEGACY_API_VERSION)
    refused(sampled, "temperature: Extra inputs are not permitted", api_version=API_VERSION)


def test_count_tokens_takes_the_same_shapes() -> None:
    counted = {k: v for k, v in body(user(text("Hi."))).items() if k != "max_tokens"}
    assert validate_count_tokens({**counted, "tools": [WEB_SEARCH], "thinking": {"type": "adaptive"}}) == []


# --- Refusals that stay ------------------------------------------------------------------


def test_tool_use_needs_its_result_in_the_next_user_message() -> None:
    accepted(body(user(text("x")), assistant(use("toolu_01")), user(result("toolu_01"))))
    refused(body(user(text("x")), assistant(use("toolu_01")), user(text("y"))), "ids were found without")


def test_tool_result_needs_a_tool_use_in_the_previous_assistant_message() -> None:
    refused(
        body(user(text("x")), assistant(text("no call")), user(result("toolu_01"))),
        "unexpected `tool_use_id`",
    )


def test_tool_results_come_first_in_their_message() -> None:
    history = (user(text("x")), assistant(use("toolu_01")))
    accepted(body(*history, user(result("toolu_01"), text("and more"))))
    refused(body(*history, user(text("first"), result("toolu_01"))), "tool_result blocks must come first")


def test_empty_text_blocks_and_whitespace_only_messages() -> None:
    refused(body(user(text(""))), "text content blocks must be non-empty")
    refused(
        body(user(text("x")), assistant(text("  \n")), user(text("y"))), "must contain non-whitespace text"
    )
    refused(body(user(text("x")), system=[text("\n")]), "must contain non-whitespace text")


def test_at_most_four_cache_breakpoints_nested_ones_included() -> None:
    nested = {
        "type": "search_result",
        "source": "s",
        "title": "t",
        "content": [text("b", cache_control=MARK)],
    }
    four = body(user(*[text(str(i), cache_control=MARK) for i in range(3)], nested))
    accepted(four)
    refused(
        {**four, "cache_control": MARK}, "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )


def test_tool_name_pattern_uniqueness_and_object_schema() -> None:
    refused(body(user(text("x")), tools=[{**WEATHER, "name": "get weather"}]), "String should match pattern")
    refused(body(user(text("x")), tools=[WEATHER, WEATHER]), "Tool names must be unique")
    refused(body(user(text("x")), tools=[WEB_SEARCH, WEB_SEARCH]), "Tool names must be unique")
    array_schema = {**WEATHER, "input_schema": {"type": "array"}}
    refused(body(user(text("x")), tools=[array_schema]), "input_schema.type: Input should be 'object'")


@pytest.mark.parametrize(
    ("request_body", "fragment"),
    [
        (body(user(text("x", _tool_name="calc"))), "messages.0.content.0._tool_name: Extra inputs"),
        (
            body(user(text("x")), assistant(use("toolu_01")), user(result("toolu_01", _name="x"))),
            "_name: Extra",
        ),
        (body(user(text("x")), tools=[{**WEATHER, "_internal": 1}]), "tools.0._internal: Extra inputs"),
        (
            body(user(text("x")), tools=[{**WEB_SEARCH, "input_schema": {"type": "object"}}]),
            "input_schema: Extra",
        ),
        (body(user(text("x")), thinking={"type": "adaptive", "budget_tokens": 1}), "budget_tokens: Extra"),
        (body(user(text("x")), betas=["x"]), "betas: Extra inputs"),
        (body(user(text("x")), context_managment={}), "context_managment: Extra inputs"),
    ],
)
def test_unknown_keys_are_extra_inputs(request_body: dict[str, Any], fragment: str) -> None:
    refused(request_body, fragment)


@pytest.mark.parametrize(
    ("request_body", "fragment"),
    [
        (body(user({"type": "video", "url": "v"})), "Input tag 'video' found using 'type'"),
        (body(user(text("x")), tools=[{"type": "web_search_29990101", "name": "web_search"}]), "Input tag"),
        (body({"role": "developer", "content": "x"}), "Input tag 'developer' found using 'role'"),
        (
            body(user(text("x")), thinking={"type": "adaptive", "display": "verbose"}),
            "display: Input should be",
        ),
        (
            body(
                user(text("x")),
                thinking={"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "skip"}},
            ),
            "prefix_mismatch_behavior: Input should be",
        ),
        (body(user(text("x")), thinking={"type": "enabled"}), "budget_tokens: Field required"),
        (
            body(user(text("x")), assistant({"type": "thinking", "thinking": "t"})),
            "signature: Field required",
        ),
    ],
)
def test_types_and_literals_the_sdk_does_not_declare(request_body: dict[str, Any], fragment: str) -> None:
    refused(request_body, fragment)


def test_tool_use_ids_unique_within_a_turn_and_well_formed() -> None:
    refused(
        body(user(text("x")), assistant(use("toolu_01"), use("toolu_01")), user(result("toolu_01"))),
        "`tool_use` ids must be unique",
    )
    refused(
        body(user(text("x")), assistant(use("toolu 01")), user(result("toolu 01"))), "tool_use.id: String"
    )


def test_a_system_message_cannot_open_the_messages() -> None:
    refused(body({"role": "system", "content": "Be terse."}, user(text("x"))), "cannot be the first message")


# --- Per-model refusals, from agent.models ------------------------------------------------


@pytest.mark.parametrize(
    ("model", "effort", "fragment"),
    [
        ("claude-haiku-4-5-20251001", "low", "does not support the effort parameter"),
        ("claude-sonnet-4-5", "high", "does not support the effort parameter"),
        ("claude-opus-4-6", "xhigh", "does not support effort level 'xhigh'. Supported levels: high, low,"),
        ("claude-sonnet-4-6", "xhigh", "does not support effort level 'xhigh'"),
    ],
)
def test_effort_the_model_does_not_take(model: str, effort: str, fragment: str) -> None:
    refused(body(user(text("x")), model=model, output_config={"effort": effort}), fragment)
    accepted(body(user(text("x")), model=model))


@pytest.mark.parametrize("thinking", [{"type": "disabled"}, {"type": "enabled", "budget_tokens": 2048}])
def test_the_5_5_family_thinks_adaptively_only(thinking: dict[str, Any]) -> None:
    refused(
        body(user(text("x")), model="claude-opus-5-5", thinking=thinking), "does not support thinking type"
    )
    accepted(body(user(text("x")), model="claude-opus-5-5", thinking={"type": "adaptive"}))
    accepted(body(user(text("x")), model=BUDGET_MODEL, thinking=thinking))


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}])
def test_the_5_5_family_refuses_forced_tool_use(choice: dict[str, Any]) -> None:
    refused(
        body(user(text("x")), model="claude-sonnet-5-5", tools=[WEATHER], tool_choice=choice),
        "forced tool use",
    )
    accepted(body(user(text("x")), model="claude-sonnet-5-5", tools=[WEATHER], tool_choice={"type": "auto"}))
    accepted(body(user(text("x")), model="claude-opus-4-8", tools=[WEATHER], tool_choice=choice))


def test_adaptive_thinking_is_refused_where_the_table_says_so() -> None:
    refused(
        body(user(text("x")), model="claude-haiku-4-5", thinking={"type": "adaptive"}),
        "thinking type 'adaptive'",
    )


def test_an_unknown_model_gets_no_per_model_rule() -> None:
    request = body(
        user(text("x")),
        model="claude-imaginary-9",
        output_config={"effort": "xhigh"},
        thinking={"type": "disabled"},
        tools=[WEATHER],
        tool_choice={"type": "any"},
    )
    accepted(request)


def test_the_rules_follow_the_model_table_passed_in() -> None:
    cautious = MODELS.register(
        ModelInfo("claude-imaginary-9", 200_000, 8_000, 1024, None, forced_tool_use=False)
    )
    forced = body(user(text("x")), model="claude-imaginary-9", tools=[WEATHER], tool_choice={"type": "any"})
    refused(forced, "forced tool use", models=cautious)


# --- Refusals added by API version 2026-10-21 (what SDK 2.x sends) --------------------------


def test_documents_in_assistant_messages_only_before_2026_10_21() -> None:
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}
    request = body(user(text("x")), assistant(document), user(text("y")))
    accepted(request, api_version=LEGACY_API_VERSION)
    refused(request, "document blocks are not allowed in assistant messages")


def test_citations_on_user_text_only_before_2026_10_21() -> None:
    cited = {
        "type": "char_location",
        "cited_text": "a",
        "document_index": 0,
        "document_title": "notes",
        "start_char_index": 0,
        "end_char_index": 1,
    }
    request = body(user(text("x", citations=[cited])))
    accepted(request, api_version=LEGACY_API_VERSION)
    refused(request, "citations: not allowed on text blocks in user messages")


# --- Robustness: a validator answers, it never raises ---------------------------------------

KEYS = ["type", "role", "content", "text", "id", "tool_use_id", "name", "input", "cache_control", "citations"]
KEYS += [
    "properties",
    "items",
    "anyOf",
    "$ref",
    "$defs",
    "additionalProperties",
    "required",
    "pattern",
    "enum",
]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.sampled_from(["", " ", "text", "object", "#", "#/$defs/a", "(?=x)\\1"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=16,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_malformed_json_anywhere_is_reported_not_raised(value: Any) -> None:
    tool_use = {"type": "tool_use", "id": value, "name": "get_weather", "input": {}}
    for request in (
        value,
        {"model": MODEL, "max_tokens": 5, "messages": value},
        body(user(value)),
        body({"role": "user", "content": value}),
        body(user(text("x")), assistant(tool_use), user({"type": "tool_result", "tool_use_id": value})),
        body(user(text("x")), tools=[value], thinking=value, tool_choice=value, output_config=value),
        body(user(text("x")), output_config={"format": {"type": "json_schema", "schema": value}}),
        body(user(text("x")), tools=[{"name": "f", "input_schema": value, "strict": True}]),
        body(
            user(text("x")),
            tools=[{"name": "f", "input_schema": {"type": "object", "$defs": value}, "strict": True}],
        ),
    ):
        assert isinstance(validate_request(request), list)
