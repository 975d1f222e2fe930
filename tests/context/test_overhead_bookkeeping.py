"""The step's bookkeeping gives exactly the answers of the plain, full computation.

Token estimates, thinking ledgers, prefix-guard reasons, pruning decisions and tool
declarations are asked about at every step. Each property below walks a random run step
by step (appends, pruning batches, compactions, cache markers on copies, messages
replaced by equal-looking ones) and compares every answer with the reference written out
here: the plain computation over the whole history. (Edits in place:
`tests/context/test_no_stale_memos.py`.)
"""

from __future__ import annotations

import copy
import json
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import tool
from agent.context import tokens
from agent.context.artifacts import find_pointer, marker
from agent.context.cache import (
    PrefixGuard,
    mark_breakpoints,
    prefix_changes,
    same_ignoring_cache_control,
    strip_cache_control,
)
from agent.context.compact import compact
from agent.context.history import newly_pruned
from agent.context.prune import (
    _names_by_id,
    _prunable,
    call_signature,
    is_stub,
    newest_stubbed_turn,
    prunable_turns,
    prune,
    stub_for,
    tool_result_turns,
)
from agent.context.tokens import Calibration, estimate_tokens
from agent.ext.sessions import Session, resume
from agent.messages import Msg, blocks, content_text, tool_names_by_id
from agent.schema import json_schema
from agent.usage import RunUsage, Usage

EXAMPLES = int(os.environ.get("AGENT_PROPERTY_EXAMPLES", "150"))
PROFILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="AGENT_PROPERTY_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- the references (the plain, full computation) -----------------------------------


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


@tool
def note(text: str) -> str:
    """Notes.

    Args:
        text: what to note.
    """
    return "noted " + text


def noted_on_even_steps(messages: list[Msg], step: int) -> list[Msg]:
    """The history with a note added to its last message on even steps (after measuring)."""
    if step % 2:
        return messages
    last = messages[-1]
    return [*messages[:-1], {**last, "content": [*blocks(last), {"type": "text", "text": "(note)"}]}]


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
            assert newest_stubbed_turn(messages[:end]) == reference_frontier(messages[:end])
        assert tool_result_turns(messages) == reference_tool_result_turns(messages)
        assert prunable_turns(messages, keep_recent, protected) == reference_prunable_turns(
            messages, keep_recent, protected
        )
        names = tool_names_by_id(messages)
        assert _names_by_id(messages) == names  # grown, rewritten, or ids reused: the full map's answer
        for message in messages:
            for block in blocks(message):
                if block.get("type") == "tool_result" and not is_stub(block.get("content")):
                    name, _ = names.get(block.get("tool_use_id", ""), ("unknown_tool", {}))
                    text = content_text(block.get("content"))
                    inline = find_pointer(text)
                    for pointer in (None, "artifact:x.json", None):  # cached, then asked with another
                        stub = stub_for(block, marker(inline) if inline else pointer)
                        expected = None if protected(name) or len(stub) >= len(text) else stub
                        assert _prunable(block, names, protected, lambda _id, p=pointer: p) == expected


def reference_newly_pruned(before: Sequence[Msg], after: Sequence[Msg]) -> tuple[str, ...]:
    names = tool_names_by_id(after)
    found = []
    for old, new in zip(before, after, strict=False):
        for was, now in zip(blocks(old), blocks(new), strict=False):
            if (
                now.get("type") == "tool_result"
                and is_stub(now.get("content"))
                and not is_stub(was.get("content"))
            ):
                name, arguments = names.get(str(now.get("tool_use_id", "")), ("?", {}))
                found.append(call_signature(name, arguments))
    return tuple(found)


def reference_prune(messages: Sequence[Msg], keep_recent: int) -> list[Msg]:
    targets = set(reference_prunable_turns(messages, keep_recent, protected))
    names = tool_names_by_id(messages)
    pruned: list[Msg] = []
    for index, message in enumerate(messages):
        if index not in targets:
            pruned.append(message)
            continue
        new_blocks = []
        for block in blocks(message):
            stub = _prunable(block, names, protected, lambda _id: None)
            new_blocks.append(block if stub is None else {**block, "content": stub})
        pruned.append({**message, "content": new_blocks})
    return pruned


@pytest.mark.slow
@PROFILE
@given(runs(), st.integers(0, 4))
def test_pruned_histories_and_prune_reports_equal_the_full_scan(
    run: tuple[list[list[Msg]], list[str]], keep_recent: int
) -> None:
    """`prune` rebuilds only its targets and `newly_pruned` looks calls up in pruning's incremental
    map, only once it found a new stub: both must give the whole history's answer, step after step
    (a stale map would name a call by what an earlier history said)."""
    previous: list[Msg] = []
    for messages in steps(*run, keep_recent):
        pruned = prune(messages, keep_recent, protected=protected)
        expected = reference_prune(messages, keep_recent)
        assert pruned == expected
        kept = [i for i, message in enumerate(expected) if message is messages[i]]
        assert [i for i, message in enumerate(pruned) if message is messages[i]] == kept  # untouched: shared
        assert newly_pruned(messages, pruned) == reference_newly_pruned(messages, pruned)
        assert newly_pruned(previous, messages) == reference_newly_pruned(previous, messages)
        previous = messages


def test_a_prune_report_names_calls_as_the_pruned_history_has_them() -> None:
    """The map `newly_pruned` reads was last filled from an older history whose call had other
    arguments under the same id: the report must name the call as the new history has it."""
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * 500}
    older: list[Msg] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"p": 1}}],
        },
        {"role": "user", "content": [result]},
    ]
    assert _names_by_id(older)["toolu_1"] == ("a", {"p": 1})  # the incremental map now holds `older`
    newer = [
        older[0],
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "b", "input": {"p": 2}}],
        },
        older[2],
    ]
    stubbed = [*newer[:2], {"role": "user", "content": [{**result, "content": "[pruned: b(p=2)]"}]}]
    assert newly_pruned(older, stubbed) == ("b(p=2)",)
    assert newly_pruned(newer, stubbed) == ("b(p=2)",)


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


def test_input_schemas_are_handed_out_as_independent_copies() -> None:
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


# -- running totals, dispatch, memos added for the overhead target --------------------------------


def _record(step: int, cost: float | None, prompt: int = 100) -> Usage:
    return Usage(step, "claude-opus-5", None, prompt, prompt // 2, prompt // 3, 7, cost)


def reference_totals(steps: Sequence[Usage]) -> tuple[int, int, int, int, int, float | None, float, int]:
    costs = [s.cost_usd for s in steps]
    return (
        sum(s.uncached for s in steps),
        sum(s.cache_read for s in steps),
        sum(s.cache_write for s in steps),
        sum(s.output for s in steps),
        sum(s.prompt for s in steps),
        None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        sum(s.cost_usd or 0.0 for s in steps),
        max((s.prompt for s in steps), default=0),
    )


def totals_of(usage: RunUsage) -> tuple[int, int, int, int, int, float | None, float, int]:
    return (
        usage.uncached,
        usage.cache_read,
        usage.cache_write,
        usage.output,
        usage.prompt,
        usage.cost_usd,
        usage.priced_cost_usd,
        usage.largest_prompt,
    )


@PROFILE
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "append", "replace_last", "new_list", "pop", "resume"]),
            st.one_of(st.none(), st.floats(0, 3)),
            st.integers(0, 5000),
        ),
        max_size=40,
    )
)
def test_running_usage_totals_equal_the_full_sums_whatever_happens_to_the_list(
    actions: list[tuple[str, float | None, int]],
) -> None:
    usage = RunUsage()
    for step, (action, cost, prompt) in enumerate(actions):
        record = _record(step, cost, prompt)
        if action == "add":
            usage.add(record)
        elif action == "append":  # a caller's own append
            usage.steps.append(record)
        elif action == "replace_last" and usage.steps:
            usage.steps[-1] = record
        elif action == "new_list":
            usage.steps = [*usage.steps, record]
        elif action == "pop" and usage.steps:
            usage.steps.pop()
        elif action == "resume":  # what `aresume` builds from the saved records
            usage = RunUsage(list(usage.steps))
        assert totals_of(usage) == reference_totals(usage.steps)
        assert usage.cache_hit_ratio == (
            reference_totals(usage.steps)[1] / reference_totals(usage.steps)[4]
            if usage.steps and reference_totals(usage.steps)[4]
            else 0.0
        )


def test_a_run_with_no_answer_booked_costs_a_float_zero() -> None:
    """A tracer exports `cost_usd` as a double: an int 0 for a run that failed at its first call
    would change the attribute's type."""
    usage = RunUsage()
    assert type(usage.cost_usd) is float and type(usage.priced_cost_usd) is float


def test_a_resumed_run_checks_its_cost_budget_against_the_whole_run(tmp_path: Any) -> None:
    from agent import Agent
    from agent.errors import CostBudgetExceeded, StepBudgetExceeded
    from agent.ext.sessions import read_session
    from agent.testing import ScriptedLLM, reply, tool_use

    big = {"input_tokens": 150_000, "output_tokens": 10}
    script = [reply(tool_use("note", {"text": str(i)}), **big) for i in range(6)] + [reply("done")]
    path = tmp_path / "s.jsonl"
    with pytest.raises(StepBudgetExceeded):
        Agent(llm=ScriptedLLM(script[:2]), tools=[note], max_steps=2, artifacts_dir=None).run(
            "go", extensions=[Session(path)]
        )
    spent_before = sum(u.cost_usd or 0 for u in read_session(path).usage)
    assert spent_before > 0
    budget = spent_before + 0.5  # the next call's worst case passes this only if the earlier spend counts
    agent = Agent(llm=ScriptedLLM(script[2:]), tools=[note], max_cost_usd=budget, artifacts_dir=None)
    with pytest.raises(CostBudgetExceeded) as stopped:
        resume(agent, path)
    assert stopped.value.result.usage.priced_cost_usd == pytest.approx(
        sum(u.cost_usd or 0 for u in stopped.value.result.usage.steps)
    )
    assert stopped.value.result.usage.priced_cost_usd >= spent_before


def _agent_running(tools: list[Any], calls: list[dict[str, Any]], **options: Any) -> Any:
    from agent import Agent
    from agent.testing import ScriptedLLM, reply

    return Agent(llm=ScriptedLLM([reply(*calls), reply("done")]), tools=tools, artifacts_dir=None, **options)


def test_run_keeps_call_order_and_runs_slow_sync_tools_in_parallel() -> None:
    from agent.testing import tool_use

    @tool
    def wait(seconds: float, label: str) -> str:
        """Waits.

        Args:
            seconds: how long.
            label: a name.
        """
        time.sleep(seconds)
        return f"{label} after {seconds}"

    calls = [tool_use("wait", {"seconds": s, "label": n}) for n, s in (("a", 0.4), ("b", 0.01), ("c", 0.4))]
    agent = _agent_running([wait], calls)
    started = time.monotonic()
    result = agent.run("go")
    took = time.monotonic() - started
    results = [b["content"] for b in result.messages[-2]["content"]]
    assert results == ["a after 0.4", "b after 0.01", "c after 0.4"]  # call order, not finishing order
    assert took < 0.75  # the two slow ones overlapped


def test_run_times_out_a_hung_sync_tool_and_the_others_still_answer() -> None:
    from agent.testing import tool_use

    release = threading.Event()

    @tool(timeout=0.3)
    def hang() -> str:
        """Hangs."""
        release.wait(5)
        return "late"

    @tool
    def quick() -> str:
        """Quick."""
        return "quick"

    agent = _agent_running([hang, quick], [tool_use("hang", {}), tool_use("quick", {})])
    started = time.monotonic()
    try:
        result = agent.run("go")
    finally:
        release.set()
    assert time.monotonic() - started < 2
    blocks_ = result.messages[-2]["content"]
    assert blocks_[0]["is_error"] and "timeout" in blocks_[0]["content"]
    assert blocks_[1]["content"] == "quick"


def test_ctrl_c_inside_a_blocking_model_call_stops_run_at_once(tmp_path: Any) -> None:
    """`run` calls a sync model in place; a KeyboardInterrupt there ends the task itself, and
    waiting on such a task again never returns (the run used to hang here)."""
    import signal

    from agent import Agent

    class SlowLLM:
        def create(self, request: Mapping[str, Any]) -> Any:
            time.sleep(3)
            raise AssertionError("not interrupted")

    main = threading.main_thread().ident
    assert main is not None
    path = tmp_path / "s.jsonl"
    threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        Agent(llm=SlowLLM(), artifacts_dir=None).run("go", extensions=[Session(path)])
    assert time.monotonic() - started < 2.5
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[-1]["event"] == "stopped"


def test_a_message_marked_twice_is_marked_alike_and_the_original_stays_unmarked() -> None:
    first = {"role": "user", "content": [{"type": "text", "text": "a"}]}
    second = {"role": "assistant", "content": "b"}
    history = [first, second]
    a = mark_breakpoints({"system": "s", "messages": history}, "5m")
    b = mark_breakpoints({"system": "s", "messages": history}, "5m")
    c = mark_breakpoints({"system": "s", "messages": history}, "1h")
    assert json.dumps(a) == json.dumps(b)
    assert c["messages"][1]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert a["messages"][1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(history)
    one = mark_breakpoints({"system": [{"type": "text", "text": "s", "n": 1}], "messages": []})
    true = mark_breakpoints({"system": [{"type": "text", "text": "s", "n": True}], "messages": []})
    assert json.dumps(one["system"]) != json.dumps(true["system"])  # equal keys, different JSON


def test_fingerprints_are_remembered_per_call_only() -> None:
    from agent.ext.approval.ledger import Ledger, fingerprint
    from agent.tools import ToolCall

    ledger = Ledger()
    call = ToolCall("t1", "refund", {"order": "A1"})
    assert ledger.fingerprint(call) == ledger.fingerprint(call) == fingerprint(call, ledger.key)
    other = ToolCall("t1", "refund", {"order": "A2"})  # the same id, another action
    assert ledger.fingerprint(other) == fingerprint(other, ledger.key) != ledger.fingerprint(call)


def test_the_request_estimate_follows_a_request_changed_in_place() -> None:
    history: list[Msg] = [{"role": "user", "content": "go"}]
    request = {"model": "claude-opus-5", "max_tokens": 100, "messages": history}
    assert estimate_tokens(request) == reference_estimate(request)
    history.append({"role": "assistant", "content": "x" * 400})  # the very list, grown
    assert estimate_tokens(request) == reference_estimate(request)
    request["max_tokens"] = 100_000_000
    assert estimate_tokens(request) == reference_estimate(request)
    request["system"] = "y" * 50
    assert estimate_tokens(request) == reference_estimate(request)


def test_each_step_sends_the_request_its_final_history_makes() -> None:
    """The history policy measures a request, then the history changes (a note added after
    measuring): what is sent must be built from the final history, never the measured one."""
    from agent import Agent
    from agent.state import RunState
    from agent.testing import ScriptedLLM, reply, tool_use

    measured: list[dict[str, Any]] = []

    class Noting(Agent):
        def prepare_context(self, state: RunState) -> list[Msg]:
            return noted_on_even_steps(super().prepare_context(state), state.step)

        def build_request(self, state: RunState) -> dict[str, Any]:
            request = super().build_request(state)
            measured.append(request)
            return request

    script = [reply(tool_use("note", {"text": str(i)})) for i in range(5)] + [reply("done")]
    llm = ScriptedLLM(script)
    agent = Noting(llm=llm, tools=[note], max_context_tokens=500_000, artifacts_dir=None)
    agent.run("go")
    assert len(llm.requests) == 6 and len(measured) == 12  # measured, then sent, each step
    for step, sent in enumerate(llm.requests, start=1):
        measured_body, sent_body = measured[2 * step - 2], measured[2 * step - 1]
        assert sent == sent_body and json.dumps(sent).count("(note)") == step // 2
        assert (json.dumps(sent_body) == json.dumps(measured_body)) == (step % 2 == 1)


def test_a_step_encodes_its_request_once_for_compaction_and_budgets_and_follows_a_late_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `max_context_tokens` and a dollar budget, the compaction check measures the
    request and the call's budget check reuses that estimate when it sends an equal request;
    a history changed after measuring (every other step here) is estimated afresh."""
    from agent import Agent, accounting
    from agent.state import RunState
    from agent.testing import ScriptedLLM, reply, tool_use

    encoded: list[int] = []
    measured = tokens.Sizes.chars

    def counting(self: tokens.Sizes, value: Any) -> int:
        if isinstance(value, Mapping) and "messages" in value:
            encoded.append(len(value["messages"]))
        return measured(self, value)

    budgets: list[tuple[int | None, int]] = []

    class Noting(Agent):
        def prepare_context(self, state: RunState) -> list[Msg]:
            return noted_on_even_steps(super().prepare_context(state), state.step)

    from agent.state import check_budgets as check

    def checking(request: Mapping[str, Any], state: RunState, policy: Any, raw: int | None = None) -> None:
        budgets.append((raw, reference_prompt_estimate(request)))
        check(request, state, policy, raw)

    monkeypatch.setattr(tokens.Sizes, "chars", counting)
    monkeypatch.setattr(accounting, "check_budgets", checking)
    script = [reply(tool_use("note", {"text": str(i)})) for i in range(5)] + [reply("done")]
    agent = Noting(llm=ScriptedLLM(script), tools=[note], max_context_tokens=500_000, max_cost_usd=10.0)
    agent.run("go")
    assert len(budgets) == 6 and all(mine == full for mine, full in budgets), "each is the full estimate"
    assert len(encoded) == 6 + 3, "once per step, twice on the steps whose history changed after"


# -- deferred tools left out of the estimate until a tool_reference loads them --------------


def reference_unloaded(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    deferred = [t for t in request["tools"] if t.get("defer_loading") is True]
    loaded = set()
    for message in request["messages"]:
        for block in blocks(message):
            if block.get("type") in ("tool_result", "tool_search_tool_result"):
                inner = block.get("content")
                refs = inner.get("tool_references") if isinstance(inner, Mapping) else inner
                if isinstance(refs, list):
                    loaded.update(r.get("tool_name") for r in refs if isinstance(r, Mapping))
    return [t for t in deferred if t.get("name") not in loaded]


DEFERRED = [
    {"name": f"tool_{i}", "description": "d", "input_schema": {"type": "object"}, "defer_loading": True}
    for i in range(8)
]


def _loading_turn(number: int, names: list[int]) -> Msg:
    refs = [{"type": "tool_reference", "tool_name": f"tool_{n}"} for n in names]
    if number % 3 == 2:  # the server's own search: its result holds the references under a key
        found = {"type": "tool_search_tool_search_result", "tool_references": refs}
        return {
            "role": "assistant",
            "content": [
                {"type": "tool_search_tool_result", "tool_use_id": f"srvtoolu_{number}", "content": found}
            ],
        }
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": refs}],
    }


def reference_prompt_estimate(request: Mapping[str, Any]) -> int:
    unloaded = reference_unloaded(request)
    raw = reference_estimate(request)
    return raw - reference_estimate(unloaded) if unloaded else raw


@PROFILE
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["append", "append", "replace", "drop_head", "new_list"]),
            st.lists(st.integers(0, 7), max_size=3),
            st.integers(0, 100),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_deferred_tools_loaded_are_found_as_a_full_scan_finds_them(
    actions: list[tuple[str, list[int], int]],
) -> None:
    """A history that grows, has a message replaced by one that loads other tools, loses its
    head to a compaction or is rebuilt: the deferred declarations no reference loads are left
    out of the prompt estimate, and only those."""
    from agent.context.tokens import prompt_estimate

    history: list[Msg] = [{"role": "user", "content": "find tools"}] * 1
    for number, (action, names, where) in enumerate(actions):
        if action == "append" or len(history) < 3:
            history = [*history, {"role": "assistant", "content": "ok"}, _loading_turn(number, names)]
        elif action == "replace":
            index = where % len(history)
            history = [*history[:index], _loading_turn(number, names), *history[index + 1 :]]
        elif action == "drop_head":
            history = history[2:]
        else:
            history = copy.deepcopy(history)
        padded = [*([{"role": "user", "content": "x"}] * 16), *history]  # a longer history
        for messages in (history, padded):
            request = {"tools": [*TOOL_DECLARATIONS, *DEFERRED], "messages": messages}
            assert prompt_estimate(request) == reference_prompt_estimate(request)
            assert prompt_estimate(request) == prompt_estimate(copy.deepcopy(request))
