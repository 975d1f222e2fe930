"""The incremental bookkeeping gives exactly the answers of the full computation.

Token estimates, thinking ledgers, prefix-guard reasons, pruning decisions and tool
declarations are now remembered between steps (by object identity, by the prefix a
history shares with the last one, per registry, per input model). Each property below
walks a random run step by step (appends, pruning batches, compactions, cache markers
on copies, messages replaced by equal-looking ones) and compares every answer with the
uncached reference written out here: the code as it was before the caches.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import tool
from agent.context import tokens
from agent.context.cache import _pruning_frontier, mark_breakpoints, strip_cache_control
from agent.context.compact import compact
from agent.context.guard import PrefixGuard, prefix_changes, same_ignoring_cache_control
from agent.context.prune import _prunable, is_stub, prunable_turns, prune, tool_result_turns
from agent.context.tokens import Calibration, IdentityCache, PrefixMemo, estimate_tokens, memoized
from agent.messages import Msg, blocks, tool_names_by_id
from agent.registry import ToolRegistry
from agent.schema import json_schema
from agent.usage import Usage

EXAMPLES = int(os.environ.get("AGENT_PROPERTY_EXAMPLES", "150"))
PROFILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="AGENT_PROPERTY_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- the uncached references (the code before the caches) ----------------------------


def reference_estimate(value: Any) -> int:
    return math.ceil(len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)) / 4)


def reference_signatures(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        if "messages" in value:
            return reference_signatures(value["messages"])
        if "role" in value:
            content = value.get("content")
            return reference_signatures(content) if isinstance(content, list) else []
        kind = value.get("type")
        signature = value.get("signature") if kind == "thinking" else value.get("data")
        return [signature] if kind in ("thinking", "redacted_thinking") and isinstance(signature, str) else []
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [found for item in value for found in reference_signatures(item)]
    return []


def reference_hidden(calibration: Calibration, value: Any) -> int:
    if not calibration.hidden:
        return 0
    return sum(calibration.hidden.get(tokens.signature_key(s), 0) for s in reference_signatures(value))


def reference_prefix_changes(previous: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    reasons = []
    if strip_cache_control(previous.get("tools")) != strip_cache_control(current.get("tools")):
        reasons.append("tools changed")
    if strip_cache_control(previous.get("system")) != strip_cache_control(current.get("system")):
        reasons.append("system changed")
    for key in ("output_config", "tool_choice", "thinking"):
        if previous.get(key) != current.get(key):
            reasons.append(f"{'effort' if key == 'output_config' else key} changed")
    before = strip_cache_control(previous.get("messages", []))
    after = strip_cache_control(current.get("messages", []))
    for index, message in enumerate(before):
        if index >= len(after) or after[index] != message:
            reasons.append(f"history rewritten from message {index}")
            break
    return reasons


def reference_tool_result_turns(messages: Sequence[Msg]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "user" and any(b.get("type") == "tool_result" for b in blocks(m))
    ]


def reference_prunable_turns(messages: Sequence[Msg], keep_recent: int, protected: Any) -> list[int]:
    if keep_recent <= 0:
        return []
    turns = reference_tool_result_turns(messages)
    old = [i for i in turns[: max(0, len(turns) - keep_recent)] if i > 0]
    names = tool_names_by_id(messages)
    return [
        i for i in old if any(_prunable(b, names, protected, lambda _id: None) for b in blocks(messages[i]))
    ]


def reference_frontier(messages: Sequence[Msg]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content")
        if messages[index].get("role") != "user" or not isinstance(content, list):
            continue
        if any(b.get("type") == "tool_result" and is_stub(b.get("content")) for b in content):
            return index
    return None


# -- random runs -------------------------------------------------------------------------

TOOLS = ["search", "fetch", "refund", "spec"]


def protected(name: str) -> bool:
    return name in ("refund", "spec")


odd_values = st.one_of(
    st.integers(-5, 5),
    st.booleans(),  # True == 1 and 1.0: equal values, different JSON
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.text(max_size=12),
    st.tuples(st.integers(0, 3), st.text(max_size=3)),
)


@st.composite
def result_content(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["small", "big", "list", "unicode"]))
    if kind == "small":
        return draw(st.text(max_size=30))
    if kind == "big":
        return json.dumps([{"id": i, "status": "ok"} for i in range(draw(st.integers(5, 60)))])
    if kind == "unicode":
        return "결과 " * draw(st.integers(1, 200)) + '\u2028 "quoted" \\ \x00'
    return [{"type": "text", "text": draw(st.text(max_size=200))}]


@st.composite
def turn(draw: st.DrawFn, number: int) -> list[Msg]:
    calls = draw(st.integers(0, 3))
    content: list[dict[str, Any]] = []
    if draw(st.booleans()):
        signature = f"sig-{number}-{draw(st.integers(0, 2))}"  # repeated signatures too
        content.append({"type": "thinking", "thinking": "", "signature": signature})
    if draw(st.booleans()) or not calls:
        content.append({"type": "text", "text": draw(st.text(max_size=40))})
    results = []
    for k in range(calls):
        call_id = f"toolu_{number}_{k}"
        arguments = draw(st.dictionaries(st.sampled_from(["a", "b", "page"]), odd_values, max_size=3))
        content.append(
            {"type": "tool_use", "id": call_id, "name": draw(st.sampled_from(TOOLS)), "input": arguments}
        )
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": draw(result_content()),
        }
        if draw(st.integers(0, 5)) == 0:
            block["is_error"] = True
        results.append(block)
    assistant: Msg = {"role": "assistant", "content": content}
    if not results:
        return [assistant, {"role": "user", "content": draw(st.text(min_size=1, max_size=20))}]
    return [assistant, {"role": "user", "content": results}]


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[list[Msg]], list[str]]:
    """Turns to append one per step, and what happens at each step."""
    count = draw(st.integers(1, 30))
    turns = [draw(turn(n)) for n in range(count)]
    actions = draw(
        st.lists(
            st.sampled_from(["append", "append", "append", "prune", "compact", "replace", "rewrite_value"]),
            min_size=count,
            max_size=count,
        )
    )
    return turns, actions


def steps(turns: list[list[Msg]], actions: list[str], keep_recent: int) -> list[list[Msg]]:
    """The history as sent at each step: grown by appends, rewritten by pruning and compaction,
    a message replaced by an equal copy, or one value swapped for an equal one (1 for True)."""
    history: list[Msg] = [{"role": "user", "content": [{"type": "text", "text": "Audit the orders."}]}]
    sent = []
    for new, action in zip(turns, actions, strict=True):
        history = [*history, *new]
        if action == "prune":
            history = prune(history, keep_recent, batch=1, protected=protected)
        elif action == "compact":
            history = compact(
                history,
                lambda text: "summary",
                tail_budget=400,
                size=estimate_tokens,
                irreversible=lambda name: name == "refund",
                protected=protected,
            ).messages
        elif action == "replace" and len(history) > 2:
            history = [*history[:1], copy.deepcopy(history[1]), *history[2:]]
        elif action == "rewrite_value" and len(history) > 2:
            history = [*history[:1], _flip(history[1]), *history[2:]]
        sent.append(history)
    return sent


def _flip(message: Msg) -> Msg:
    """An equal-comparing message whose JSON differs (True for 1, 1.0 for 1)."""
    swapped = json.loads(json.dumps(message))
    for block in blocks(swapped):
        if block.get("type") == "tool_use":
            block["input"] = {**block["input"], "flag": True}
    swapped["content"] = [*blocks(swapped), {"type": "text", "text": "1"}]
    return swapped


def request_for(messages: list[Msg], tools: list[dict[str, Any]], ttl: str = "5m") -> dict[str, Any]:
    body = {"model": "claude-opus-5", "max_tokens": 1000, "tools": tools, "messages": messages}
    return mark_breakpoints({**body, "system": [{"type": "text", "text": "You audit."}]}, ttl)


TOOL_DECLARATIONS = [
    {"name": name, "description": f"{name} things", "input_schema": {"type": "object"}} for name in TOOLS
]


# -- the properties ----------------------------------------------------------------------


@pytest.mark.slow
@PROFILE
@given(runs(), st.integers(0, 3))
def test_token_estimates_equal_the_full_serialisation_at_every_step(
    run: tuple[list[list[Msg]], list[str]], keep_recent: int
) -> None:
    calibration = Calibration(ratio=1.3)
    for number, messages in enumerate(steps(*run, keep_recent)):
        request = request_for(messages, TOOL_DECLARATIONS)
        for _ in range(2):  # the second time from the caches
            assert estimate_tokens(request) == reference_estimate(request)
            assert estimate_tokens(messages) == reference_estimate(messages)
        for message in messages[-3:]:
            assert estimate_tokens(message) == reference_estimate(message)
        calibration.hidden[tokens.signature_key(f"sig-{number}-0")] = 100 + number
        assert calibration.hidden_tokens(request) == reference_hidden(calibration, request)
        assert calibration.hidden_tokens(messages) == reference_hidden(calibration, messages)
        expected = math.ceil(reference_estimate(request) * 1.3) + reference_hidden(calibration, request)
        assert calibration.estimate(request) == expected


@pytest.mark.slow
@PROFILE
@given(runs(), st.integers(0, 3), st.sampled_from(["5m", "1h"]))
def test_prefix_guard_gives_the_reasons_of_the_full_comparison(
    run: tuple[list[list[Msg]], list[str]], keep_recent: int, ttl: str
) -> None:
    previous: dict[str, Any] | None = None
    for messages in steps(*run, keep_recent):
        tools = TOOL_DECLARATIONS if len(messages) % 5 else [*TOOL_DECLARATIONS[1:], TOOL_DECLARATIONS[0]]
        request = request_for(messages, copy.deepcopy(tools), ttl)
        if len(messages) % 7 == 0:
            request["output_config"] = {"effort": "low"}
        if previous is not None:
            assert prefix_changes(previous, request) == reference_prefix_changes(previous, request)
            assert prefix_changes(request, previous) == reference_prefix_changes(request, previous)
        previous = request


@pytest.mark.slow
@PROFILE
@given(runs(), st.integers(0, 4))
def test_pruning_decisions_equal_the_full_scan_at_every_step(
    run: tuple[list[list[Msg]], list[str]], keep_recent: int
) -> None:
    for messages in steps(*run, keep_recent):
        for end in (len(messages), len(messages) - 1, len(messages) // 2):
            assert _pruning_frontier(messages[:end]) == reference_frontier(messages[:end])
        assert tool_result_turns(messages) == reference_tool_result_turns(messages)
        assert prunable_turns(messages, keep_recent, protected) == reference_prunable_turns(
            messages, keep_recent, protected
        )


def test_values_that_compare_equal_but_serialise_differently_are_not_confused() -> None:
    one = {"role": "user", "content": [{"type": "text", "text": "x", "n": 1}]}
    true = {"role": "user", "content": [{"type": "text", "text": "x", "n": True}]}
    assert one == true
    history = [{"role": "user", "content": "go"}] + [one] * 20
    assert estimate_tokens(history) == reference_estimate(history)
    swapped = [*history[:-1], true]
    assert estimate_tokens(swapped) == reference_estimate(swapped) != reference_estimate(history)
    previous = request_for(history, TOOL_DECLARATIONS)
    assert prefix_changes(previous, request_for(swapped, TOOL_DECLARATIONS)) == []  # equal, as before


def test_odd_shapes_are_compared_and_measured_as_before() -> None:
    odd: list[Any] = [
        {1: "int key", 2.5: "float key", None: "none key", False: "bool key"},
        ("a", "tuple", {"cache_control": {"type": "ephemeral"}}),
        {"set": {1, 2}, "bytes": b"raw", "nan": float("nan"), "inf": float("inf")},
        [],
        {},
        "",
        [[[]]],
    ]
    for value in odd:
        assert estimate_tokens(value) == reference_estimate(value)
        assert estimate_tokens({"messages": [value] * 20}) == reference_estimate({"messages": [value] * 20})
    marked = {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}
    plain = {"type": "text", "text": "a"}
    assert same_ignoring_cache_control([marked], [plain])
    assert same_ignoring_cache_control((marked,), (plain,)) is (strip_cache_control((marked,)) == (plain,))
    as_tuple = {"messages": ({"role": "user", "content": [marked]},)}
    as_list = {"messages": [{"role": "user", "content": [plain]}]}
    assert prefix_changes(as_tuple, as_list) == reference_prefix_changes(as_tuple, as_list)


def test_the_guard_still_warns_on_a_history_rewritten_every_step() -> None:
    guard = PrefixGuard()
    messages: list[Msg] = [{"role": "user", "content": "go"}]
    for step in range(1, 5):
        messages = [{"role": "user", "content": f"go {step}"}, *messages[1:]]  # rebuilt each step
        messages = [
            *messages,
            {"role": "assistant", "content": "x" * 9000},
            {"role": "user", "content": "more"},
        ]
        usage = Usage(step, "claude-opus-5", None, 9000, 0, 0, 10, None)
        guard.observe(request_for(messages, TOOL_DECLARATIONS), usage)
    assert [reasons for _, reasons in guard.changes] == [["history rewritten from message 0"]] * 3
    assert guard.warnings


# -- invalidation ------------------------------------------------------------------------


def test_declarations_are_built_once_and_again_when_the_tools_change() -> None:
    @tool
    def search(query: str) -> str:
        """Search.

        Args:
            query: what to look for.
        """
        return query

    @tool
    def fetch(page: int = 1) -> str:
        """Fetch a page."""
        return str(page)

    registry = ToolRegistry([search])
    first = registry.declarations()
    assert first == [t.declaration() for t in registry]
    assert registry.declarations() == first and registry.declarations() is not first
    assert registry.declarations()[0] is first[0]  # not built again
    registry.add(fetch)
    assert [d["name"] for d in registry.declarations()] == ["fetch", "search"]
    assert registry.declarations() == [t.declaration() for t in registry]


def test_input_schemas_are_built_once_and_handed_out_as_copies() -> None:
    @tool
    def lookup(customer_id: str, limit: int = 5) -> str:
        """Look a customer up.

        Args:
            customer_id: the id.
            limit: how many.
        """
        return customer_id

    expected = json_schema(lookup.input_model)
    handed = json_schema(lookup.input_model)
    handed["properties"]["customer_id"]["description"] = "edited by a caller"
    handed["additionalProperties"] = True
    assert json_schema(lookup.input_model) == expected
    assert expected["additionalProperties"] is False and "title" not in expected


def test_caches_answer_the_same_after_they_roll_over() -> None:
    cache = IdentityCache(size=3)
    objects = [{"n": i} for i in range(10)]
    for obj in objects:
        cache.put(obj, obj["n"])
    found = [hit[1] if hit is not None else None for hit in cache.lookup(objects)]
    assert found[-3:] == [7, 8, 9] and all(v in (None, i) for i, v in enumerate(found))
    memo = PrefixMemo(keep=2)
    calls: list[Any] = []

    def value(item: Any) -> Any:
        calls.append(item)
        return item["n"] * 2

    assert memoized(memo, objects, value) == [2 * i for i in range(10)]
    assert memoized(memo, objects[:5], value) == [0, 2, 4, 6, 8] and len(calls) == 10  # all remembered
    changed = [*objects[:4], {"n": 100}, *objects[5:]]
    assert memoized(memo, changed, value) == [0, 2, 4, 6, 200, 10, 12, 14, 16, 18]
    assert calls[10:] == changed[4:]  # from the first replaced item on


@pytest.mark.parametrize("size", [1, 2, 5])
def test_estimates_stay_exact_with_tiny_caches(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    monkeypatch.setattr(tokens, "_CHARS", IdentityCache(size=size))
    monkeypatch.setattr(tokens, "_LISTS", PrefixMemo(keep=1))
    history: list[Msg] = [{"role": "user", "content": "go"}]
    for n in range(40):
        history = [*history, {"role": "assistant", "content": f"step {n}"}, {"role": "user", "content": "ok"}]
        if n % 9 == 0:
            history = [{"role": "user", "content": f"summary {n}"}, *history[1:]]
        request = request_for(history, TOOL_DECLARATIONS)
        assert estimate_tokens(request) == reference_estimate(request)


def test_a_stub_left_by_pruning_settles_its_turn() -> None:
    messages: list[Msg] = [{"role": "user", "content": "go"}]
    for n in range(8):
        messages += [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "fetch", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "x" * 500}],
            },
        ]
    assert prunable_turns(messages, 2) == reference_prunable_turns(messages, 2, lambda name: False)
    pruned = prune(messages, 2)
    assert prunable_turns(pruned, 2) == [] == reference_prunable_turns(pruned, 2, lambda name: False)
    assert all(is_stub(blocks(pruned[i])[0]["content"]) for i in (2, 4, 6, 8, 10, 12))
