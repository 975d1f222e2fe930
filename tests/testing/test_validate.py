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


TOOLS: list[dict[str, Any]] = [
    {"name": "calc", "description": "math", "input_schema": {"type": "object"}, "cache_control": MARK},
    {
        "name": "lookup-2",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        "strict": True,
    },
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


# --- Structured outputs: output_config.format, output_format (legacy), strict tools ------------
# The schemas below are written for these tests. The first rule is the API's own 400 (live
# recordings); the others are the "JSON Schema limitations", "Schema complexity limits" and
# "Feature compatibility" of https://platform.claude.com/docs/en/build-with-claude/structured-outputs.

OPEN = "For 'object' type, 'additionalProperties' must be explicitly set to false"
CLOSED: dict[str, Any] = {"type": "object", "additionalProperties": False}


def closed(**properties: Any) -> dict[str, Any]:
    return {**CLOSED, "properties": properties, "required": list(properties)}


def formatted(schema: Any, **extra: Any) -> dict[str, Any]:
    return body(output_config={"format": {"type": "json_schema", "schema": schema}}, **extra)


def strict_tool(schema: Any, name: str = "fill") -> dict[str, Any]:
    return {"name": name, "input_schema": schema, "strict": True}


def errors_of(request: dict[str, Any], **kwargs: Any) -> list[str]:
    return validate_request(request, **kwargs)


ADDRESS = closed(street={"type": "string"}, city={"type": "string"})
EVERY_PLACE = {
    **CLOSED,
    "properties": {
        "address": ADDRESS,
        "history": {"type": "array", "items": ADDRESS},
        "pair": {"type": "array", "items": [ADDRESS, {"type": "string"}], "minItems": 1},
        "either": {"anyOf": [ADDRESS, {"type": "null"}]},
        "both": {"allOf": [ADDRESS]},
        "one": {"oneOf": [ADDRESS, {"type": "integer"}]},
        "kind": {"type": "string", "enum": ["home", "work", 3, None, True], "pattern": "^[a-z]+\\d*$"},
        "nullable": {"type": ["object", "null"], "properties": {}, "additionalProperties": False},
        "ref": {"$ref": "#/$defs/Person"},
        "old_ref": {"$ref": "#/definitions/Pet"},
        "again": {"$ref": "#/$defs/Person"},
    },
    "$defs": {"Person": closed(name={"type": "string"}, home={"$ref": "#/$defs/Place"}), "Place": ADDRESS},
    "definitions": {"Pet": closed(name={"type": "string", "default": "Rex"})},
    "required": ["address"],
}


def test_a_schema_closed_everywhere_is_accepted() -> None:
    assert errors_of(formatted(EVERY_PLACE)) == []
    assert errors_of(formatted({"type": "array", "items": {"type": "integer"}})) == []  # not an object
    assert errors_of(body(tools=[strict_tool(EVERY_PLACE)])) == []


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object"}, ""),
        ({"type": "object", "additionalProperties": True}, ""),
        ({"type": "object", "additionalProperties": {"type": "string"}}, ""),
        (closed(address={"type": "object", "properties": {}}), ".properties.address"),
        (closed(history={"type": "array", "items": {"type": "object"}}), ".properties.history.items"),
        (closed(pair={"type": "array", "items": [{"type": "object"}]}), ".properties.pair.items.0"),
        (closed(either={"anyOf": [{"type": "string"}, {"type": "object"}]}), ".properties.either.anyOf.1"),
        (closed(both={"allOf": [{"type": "object"}]}), ".properties.both.allOf.0"),
        (closed(one={"oneOf": [{"type": "object"}]}), ".properties.one.oneOf.0"),
        ({**CLOSED, "$defs": {"Person": {"type": "object"}}}, ".$defs.Person"),
        ({**CLOSED, "definitions": {"Pet": {"type": "object"}}}, ".definitions.Pet"),
        ({"type": "object", "additionalProperties": {"type": "object"}}, ".additionalProperties"),
        (closed(maybe={"type": ["object", "null"]}), ".properties.maybe"),
        (
            closed(deep=closed(deeper=closed(deepest={"type": "object", "additionalProperties": True}))),
            ".properties.deep.properties.deeper.properties.deepest",
        ),
    ],
)
def test_every_object_must_set_additional_properties_false(schema: dict[str, Any], where: str) -> None:
    assert f"output_config.format.schema{where}: {OPEN}" in errors_of(formatted(schema))
    assert f"tools.0.input_schema{where}: {OPEN}" in errors_of(body(tools=[strict_tool(schema)]))


def test_the_open_object_rule_applies_only_to_structured_outputs() -> None:
    open_schema = {"type": "object", "properties": {"q": {"type": "object"}}}
    assert errors_of(body(tools=[{"name": "search", "input_schema": open_schema}])) == []
    assert errors_of(body(tools=[{**strict_tool(open_schema), "strict": False}])) == []
    counted = {k: v for k, v in formatted(open_schema).items() if k != "max_tokens"}
    assert validate_count_tokens(counted) == []  # token counting compiles no grammar


def test_the_legacy_output_format_parameter_has_the_same_rules() -> None:
    legacy = body(output_format={"type": "json_schema", "schema": {"type": "object"}})
    assert f"output_format.schema: {OPEN}" in errors_of(legacy, api_version="2023-06-01")
    closed_legacy = body(output_format={"type": "json_schema", "schema": CLOSED})
    assert errors_of(closed_legacy, api_version="2023-06-01") == []
    assert errors_of(closed_legacy) == ["output_format: Extra inputs are not permitted"]  # gone in 2026-10-21


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("minimum", 0),
        ("maximum", 10),
        ("exclusiveMinimum", 0),
        ("exclusiveMaximum", 10),
        ("multipleOf", 2),
        ("minLength", 1),
        ("maxLength", 5),
        ("maxItems", 3),
        ("uniqueItems", True),
        ("minContains", 1),
        ("maxContains", 2),
    ],
)
def test_unsupported_keywords_are_refused_wherever_they_are(keyword: str, value: Any) -> None:
    nested = closed(items={"type": "array", "items": closed(n={"type": "number", keyword: value})})
    where = "output_config.format.schema.properties.items.items.properties.n"
    assert f"{where}.{keyword}: not supported" in "\n".join(errors_of(formatted(nested)))
    assert errors_of(formatted(closed(items={"type": "array", "items": closed(n={"type": "number"})}))) == []


def test_unique_items_false_asks_nothing_and_is_not_refused() -> None:
    """No recording or doc says the API refuses a constraint that constrains nothing: never stricter."""
    tags = {"type": "array", "items": {"type": "string"}, "uniqueItems": False}
    assert errors_of(formatted(closed(tags=tags))) == []


def test_min_items_only_zero_or_one() -> None:
    for count in (0, 1):
        tags = {"type": "array", "items": {"type": "string"}, "minItems": count}
        assert errors_of(formatted(closed(tags=tags))) == []
    refused = errors_of(formatted(closed(tags={"type": "array", "minItems": 2})))
    assert refused == [
        "output_config.format.schema.properties.tags.minItems: only 0 and 1 are supported in "
        "structured outputs"
    ]


def test_enum_values_must_be_primitives() -> None:
    assert errors_of(formatted(closed(v={"enum": ["a", 1, 2.5, True, None]}))) == []
    refused = errors_of(formatted(closed(v={"enum": ["a", {"b": 1}, [2]]})))
    assert [e.split(":")[0] for e in refused] == [
        "output_config.format.schema.properties.v.enum.1",
        "output_config.format.schema.properties.v.enum.2",
    ]


def test_external_refs_and_all_of_with_ref_are_refused() -> None:
    defs = {"$defs": {"A": closed(a={"type": "string"})}}
    assert errors_of(formatted({**closed(x={"$ref": "#/$defs/A"}), **defs})) == []
    external = errors_of(formatted(closed(x={"$ref": "https://example.com/a.json"})))
    assert external == [
        "output_config.format.schema.properties.x.$ref: external $ref is not supported "
        "('https://example.com/a.json')"
    ]
    all_of = errors_of(formatted({**closed(x={"allOf": [{"$ref": "#/$defs/A"}]}), **defs}))
    assert all_of == ["output_config.format.schema.properties.x.allOf.0: allOf with $ref is not supported"]
    assert errors_of(formatted(closed(x={"allOf": [closed(a={"type": "string"})]}))) == []


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (  # a tree: a node whose children are nodes
            {
                **closed(root={"$ref": "#/$defs/Node"}),
                "$defs": {"Node": closed(children={"type": "array", "items": {"$ref": "#/$defs/Node"}})},
            },
            "$defs.Node.properties.children.items",
        ),
        ({**closed(self={"anyOf": [{"$ref": "#"}, {"type": "null"}]})}, "properties.self.anyOf.0"),
        (  # A -> B -> A
            {
                **closed(a={"$ref": "#/$defs/A"}),
                "$defs": {"A": closed(b={"$ref": "#/$defs/B"}), "B": closed(a={"$ref": "#/$defs/A"})},
            },
            "$defs.B.properties.a",
        ),
    ],
)
def test_recursive_schemas_are_refused(schema: dict[str, Any], where: str) -> None:
    found = errors_of(formatted(schema))
    assert any(
        e.startswith(f"output_config.format.schema.{where}.$ref: Too many recursive definitions in schema")
        for e in found
    ), found


def test_a_definition_used_twice_is_not_recursion() -> None:
    shared = {
        **closed(home={"$ref": "#/$defs/Place"}, work={"$ref": "#/$defs/Place"}),
        "$defs": {"Place": closed(city={"$ref": "#/$defs/City"}), "City": {"type": "string"}},
    }
    assert errors_of(formatted(shared)) == []


@pytest.mark.parametrize(
    ("pattern", "issue"),
    [
        ("^(?!admin).*$", "lookahead/lookbehind assertions"),
        ("(?<=\\$)\\d+", "lookahead/lookbehind assertions"),
        ("^(a)\\1$", "backreferences"),
        ("^(?<w>a)\\k<w>$", "backreferences"),
        ("\\bword\\b", "word boundaries"),
        ("\\Bx", "word boundaries"),
    ],
)
def test_regex_features_the_docs_rule_out(pattern: str, issue: str) -> None:
    found = errors_of(formatted(closed(code={"type": "string", "pattern": pattern})))
    assert any(
        e.startswith("output_config.format.schema.properties.code.pattern: " + issue) for e in found
    ), found


@pytest.mark.parametrize(
    "pattern",
    ["^[A-Z]{2}-\\d{3,5}$", "^\\\\b$", "[\\b]x", "[(?=]", "^(\\d+)(\\.\\d+)?$", "[]\\1]", "a\\(?=b"],
)
def test_simple_patterns_pass(pattern: str) -> None:
    assert errors_of(formatted(closed(code={"type": "string", "pattern": pattern}))) == []


def test_at_most_twenty_strict_tools() -> None:
    tools = [strict_tool(CLOSED, f"t{i}") for i in range(21)]
    assert errors_of(body(tools=[*tools[:20], {"name": "loose", "input_schema": {"type": "object"}}])) == []
    assert errors_of(body(tools=tools)) == ["tools: at most 20 tools may set `strict: true` (found 21)"]


def optional(count: int, prefix: str = "p") -> dict[str, Any]:
    return {**CLOSED, "properties": {f"{prefix}{i}": {"type": "string"} for i in range(count)}}


def test_at_most_24_optional_parameters_across_strict_schemas() -> None:
    assert errors_of(formatted(optional(12), tools=[strict_tool(optional(12))])) == []
    required_too = {**optional(30), "required": [f"p{i}" for i in range(30)]}
    assert errors_of(formatted(required_too)) == []
    found = errors_of(formatted(optional(12), tools=[strict_tool(closed(nested=optional(13)))]))
    assert len(found) == 1 and "at most 24 optional parameters" in found[0] and "(found 25)" in found[0]
    assert errors_of(formatted(closed(), tools=[{"name": "loose", "input_schema": optional(30)}])) == []


def unions(count: int) -> dict[str, Any]:
    either = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    return closed(**{f"u{i}": either if i % 2 else {"type": ["string", "null"]} for i in range(count)})


def test_at_most_16_union_parameters_across_strict_schemas() -> None:
    assert errors_of(formatted(unions(8), tools=[strict_tool(unions(8))])) == []
    found = errors_of(formatted(unions(8), tools=[strict_tool(unions(9))]))
    assert (
        len(found) == 1 and "at most 16 parameters with union types" in found[0] and "(found 17)" in found[0]
    )


def test_citations_cannot_be_enabled_beside_a_format() -> None:
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "Oslo is in Norway."},
        "citations": {"enabled": True},
    }
    asked = user(document, text("Where is Oslo?"))
    assert errors_of(body(asked)) == []
    assert errors_of(formatted(CLOSED, messages=[user({**document, "citations": {"enabled": False}})])) == []
    assert errors_of(formatted(CLOSED, messages=[asked])) == [
        "messages.0.content.0.citations: citations cannot be enabled together with `output_config.format`"
    ]
    found = {"type": "search_result", "source": "s", "title": "t", "content": [text("b")]}
    history = [
        user(text("x")),
        assistant(use("t1")),
        user(result("t1", [{**found, "citations": {"enabled": True}}])),
    ]
    assert errors_of(formatted(CLOSED, messages=history)) == [
        "messages.2.content.0.content.0.citations: citations cannot be enabled together with "
        "`output_config.format`"
    ]


def test_an_effort_the_model_lacks_is_named_in_the_api_words() -> None:
    found = errors_of(body(model="claude-opus-4-6", output_config={"effort": "xhigh"}))
    assert found == [
        "output_config.effort: claude-opus-4-6 does not support effort level 'xhigh'. "
        "Supported levels: high, low, max, medium."
    ]
