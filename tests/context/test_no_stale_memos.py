"""No answer outlives an edit: the context functions read the history they are given, as it is now.

Pruning, cache markers and token estimates used to remember their answers by the identity
of the history's dicts, on the promise that nobody edits one in place. When somebody did,
they answered for the dict as it had been (`prune` left a result unpruned after its content
grew). Each property below builds a random history of tool calls and results, asks every
question once (so anything remembered is remembered), edits the history's dicts in place,
and asks again: the answers must be those for a fresh deep copy of the edited history,
byte for byte.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.context.cache import mark_breakpoints, prefix_changes
from agent.context.prune import (
    STUB_PREFIX,
    newest_stubbed_turn,
    prunable_turns,
    prune,
    tool_result_turns,
)
from agent.context.tokens import Calibration, Sizes, estimate_tokens, prompt_estimate, signature_key

PROFILE = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TOOLS = ["search", "fetch", "refund", "spec"]
DEFERRED = ["find_a", "find_b"]
DECLARATIONS = [
    {"name": name, "description": f"{name} things", "input_schema": {"type": "object"}} for name in TOOLS
] + [
    {"name": name, "description": "d" * 40, "input_schema": {"type": "object"}, "defer_loading": True}
    for name in DEFERRED
]
SIGNATURES = [f"sig-{n}" for n in range(4)]


def protected(name: str) -> bool:
    return name in ("refund", "spec")


def wire(value: Any) -> str:
    """The bytes the API would get (key order included)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- random histories -----------------------------------------------------------------------

arguments = st.dictionaries(
    st.sampled_from(["a", "b", "page"]), st.one_of(st.integers(-3, 3), st.booleans(), st.text(max_size=8))
)


@st.composite
def result_content(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["small", "big", "blocks", "stub", "references"]))
    if kind == "small":
        return draw(st.text(max_size=20))
    if kind == "big":
        return "row " * draw(st.integers(30, 300))
    if kind == "blocks":
        return [{"type": "text", "text": draw(st.text(max_size=10)) + "x" * draw(st.integers(0, 400))}]
    if kind == "stub":
        return f"{STUB_PREFIX}search(a=1) returned 900 chars; call again if you need it]"
    names = draw(st.lists(st.sampled_from(DEFERRED), min_size=1, max_size=2))
    return [{"type": "tool_reference", "tool_name": name} for name in names]


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "Audit."}]}]
    for number in range(draw(st.integers(1, 10))):
        content: list[dict[str, Any]] = []
        if draw(st.booleans()):
            content.append(
                {"type": "thinking", "thinking": "", "signature": draw(st.sampled_from(SIGNATURES))}
            )
        calls = draw(st.integers(0, 3))
        if not calls:
            content.append({"type": "text", "text": draw(st.text(min_size=1, max_size=20))})
            history += [{"role": "assistant", "content": content}, {"role": "user", "content": "go on"}]
            continue
        results = []
        for k in range(calls):
            call_id = f"toolu_{number}_{k}"
            name = draw(st.sampled_from(TOOLS))
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": draw(arguments)})
            results.append({"type": "tool_result", "tool_use_id": call_id, "content": draw(result_content())})
        history += [{"role": "assistant", "content": content}, {"role": "user", "content": results}]
    return history


def blocks_of(history: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        b for m in history if isinstance(m["content"], list) for b in m["content"] if b.get("type") == kind
    ]


@st.composite
def edits(draw: st.DrawFn, history: list[dict[str, Any]]) -> None:
    """Edit one dict of `history` in place (the list keeps its very dicts)."""
    kind = draw(st.sampled_from(["result", "result", "append", "input", "number", "stub", "drop", "text"]))
    results, calls = blocks_of(history, "tool_result"), blocks_of(history, "tool_use")
    if kind == "result" and results:
        draw(st.sampled_from(results))["content"] = draw(result_content())
    elif kind == "stub" and results:
        draw(st.sampled_from(results))["content"] = f"{STUB_PREFIX}fetch() returned 5 chars]"
    elif kind == "input" and calls:
        call = draw(st.sampled_from(calls))
        call["input"] = draw(arguments)
        call["name"] = draw(st.sampled_from(TOOLS))
    elif kind == "number" and calls:  # equal in Python, spelt otherwise in JSON: 1, True, 1.0, -0.0
        draw(st.sampled_from(calls))["input"]["a"] = draw(
            st.sampled_from([1, True, 1.0, 0, False, 0.0, -0.0])
        )
    elif kind == "drop":
        message = draw(st.sampled_from(history[1:]))
        if isinstance(message["content"], list) and len(message["content"]) > 1:
            message["content"].pop(draw(st.integers(0, len(message["content"]) - 1)))
    elif kind == "text":
        message = draw(st.sampled_from(history))
        if isinstance(message["content"], str):
            message["content"] = draw(st.text(min_size=1, max_size=30))
        else:
            message["content"][0] = {**message["content"][0], "extra": "y" * draw(st.integers(1, 50))}
    else:  # append a block: a thinking block, a text, a result that loads a deferred tool
        message = draw(st.sampled_from(history))
        block = draw(
            st.sampled_from(
                [
                    {"type": "thinking", "thinking": "", "signature": SIGNATURES[0]},
                    {"type": "text", "text": "z" * 300},
                    {"type": "tool_result", "tool_use_id": "toolu_x", "content": "w" * 600},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_y",
                        "content": [{"type": "tool_reference", "tool_name": DEFERRED[0]}],
                    },
                ]
            )
        )
        if isinstance(message["content"], str):
            message["content"] = [{"type": "text", "text": message["content"]}]
        message["content"].append(copy.deepcopy(block))


# -- what is asked ----------------------------------------------------------------------------


def request_for(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "claude-opus-5",
        "max_tokens": 1000,
        "system": "You audit.",
        "tools": DECLARATIONS,
        "messages": history,
    }


def answers(
    history: list[dict[str, Any]],
    request: dict[str, Any],
    keep_recent: int,
    batch: int,
    ttl: str,
    sizes: Sizes,
) -> dict[str, Any]:
    """Every answer the context functions give about `history` (and `request`, which holds it);
    `sizes` is the run's, kept from one question to the next."""
    calibration = Calibration(ratio=1.3, hidden={signature_key(s): 100 * n for n, s in enumerate(SIGNATURES)})
    marked = mark_breakpoints(request, ttl)
    return {
        "prune": wire(prune(history, keep_recent, batch=batch, protected=protected)),
        "prunable": prunable_turns(history, keep_recent, protected),
        "result_turns": tool_result_turns(history),
        "frontier": newest_stubbed_turn(history),
        "marked": wire(marked),
        "estimate": estimate_tokens(request),
        "history_estimate": estimate_tokens(history),
        "message_estimates": [estimate_tokens(m) for m in history],
        "prompt": prompt_estimate(request),
        "calibrated": calibration.estimate(request),
        "calibrated_marked": calibration.estimate(marked),
        "hidden": calibration.hidden_tokens(history),
        "sizes": [sizes.chars(request), len(wire(request))],
        "sizes_marked": [sizes.chars(marked), len(wire(marked))],
    }


@PROFILE
@given(
    st.data(),
    histories(),
    st.integers(0, 3),
    st.integers(1, 3),
    st.sampled_from(["5m", "1h"]),
    st.integers(1, 3),
)
def test_answers_after_an_edit_in_place_are_those_of_a_fresh_copy(
    data: st.DataObject,
    history: list[dict[str, Any]],
    keep_recent: int,
    batch: int,
    ttl: str,
    rounds: int,
) -> None:
    request, sizes = request_for(history), Sizes()
    for _ in range(rounds):
        answers(history, request, keep_recent, batch, ttl, sizes)  # asked once: anything kept is kept now
        answers(history, request, keep_recent, batch, ttl, sizes)
        sent = copy.deepcopy(mark_breakpoints(request, ttl))  # the request as the last step sent it
        data.draw(edits(history))
        fresh = copy.deepcopy(history)
        fresh_request = request_for(fresh)
        assert answers(history, request, keep_recent, batch, ttl, sizes) == answers(
            fresh, fresh_request, keep_recent, batch, ttl, Sizes()
        )
        assert prefix_changes(sent, mark_breakpoints(request, ttl)) == prefix_changes(
            sent, mark_breakpoints(fresh_request, ttl)
        )
        assert wire(prune(history, keep_recent, batch=batch, protected=protected)) == wire(
            prune(fresh, keep_recent, batch=batch, protected=protected)
        )
        assert wire(history) == wire(fresh)  # nothing asked touched the history


def test_a_result_grown_in_place_is_pruned() -> None:
    """The issue's case: a result too small to prune grows in place; `prune` must see it."""
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "fetch", "input": {}}],
        },
        {"role": "user", "content": [result]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_2", "name": "fetch", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok"}]},
    ]
    assert prune(history, 1) == history  # too small to be worth a stub
    result["content"] = "x" * 5000  # edited in place
    pruned = prune(history, 1)
    assert pruned[2]["content"][0]["content"].startswith(STUB_PREFIX)
    assert wire(pruned) == wire(prune(copy.deepcopy(history), 1))


def test_a_message_measured_once_is_measured_again_when_its_value_changes_spelling() -> None:
    """`1`, `True`, `1.0` and `-0.0`/`0.0` are equal in Python but not in JSON: the run's sizes must
    not take one for the other (nor a message for an equal one at another place)."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "fetch", "input": {"a": 1}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call]},
    ]
    request, sizes = request_for(history), Sizes()
    for value in [1, True, 1.0, 0, False, -0.0, 0.0, 10**16, 1e16, "1", None, [1], {"b": 1}]:
        call["input"]["a"] = value
        assert sizes.chars(request) == len(wire(request)), value
    history.append({"role": "user", "content": "go"})  # the same words, a new place
    history[0]["content"] = "went"
    assert sizes.chars(request) == len(wire(request))


class _Agreeable:
    """A value whose `__eq__` answers yes to anything (as `unittest.mock.ANY` does)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.text


class _Refusing(_Agreeable):
    """A value that cannot be compared (as a numpy array in a truth test)."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("the truth value is ambiguous")

    __hash__ = object.__hash__


def test_a_message_holding_objects_is_measured_afresh_and_never_raises() -> None:
    """The run's sizes only keep copies of plain JSON data: an object in a message is encoded as the
    request is (`str`), each time, whatever its `__eq__` says or raises."""
    holder: dict[str, Any] = {"type": "text", "text": "go"}
    history: list[dict[str, Any]] = [{"role": "user", "content": [holder]}]
    request, sizes = request_for(history), Sizes()
    for value in [
        _Agreeable("a"),
        _Agreeable("a much longer text"),
        "plain",
        _Refusing("b"),
        _Refusing("bb"),
        "x",
    ]:
        holder["text"] = value
        assert sizes.chars(request) == len(
            json.dumps(request, ensure_ascii=False, separators=(",", ":"), default=str)
        )


def test_a_message_nested_deeper_than_python_recurses_is_measured() -> None:
    nested: Any = "leaf"
    for _ in range(400):  # 800 levels: JSON's encoder manages, a recursion in Python would not
        nested = {"n": [nested]}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "go", "extra": nested}]}
    ]
    request, sizes = request_for(history), Sizes()
    assert sizes.chars(request) == len(wire(request))
    assert sizes.chars(request) == len(wire(request))  # the second time through the copy


def test_a_message_edited_while_it_is_encoded_is_measured_as_it_now_is() -> None:
    """An object's `__str__` (the encoder calls it) may edit the message it is in: the copy is taken
    before encoding, so the length of what was encoded is never filed beside what it became."""
    holder: dict[str, Any] = {"type": "text", "text": "go"}

    class Rewriting:
        def __str__(self) -> str:
            holder["text"] = "x"
            return "a long text that is gone once it has been read"

    history: list[dict[str, Any]] = [{"role": "user", "content": [holder]}]
    request, sizes = request_for(history), Sizes()
    holder["text"] = Rewriting()
    sizes.chars(request)
    assert holder["text"] == "x"
    assert sizes.chars(request) == len(wire(request))


def test_a_message_that_holds_itself_raises_as_encoding_it_does() -> None:
    looped: dict[str, Any] = {"type": "text", "text": "go"}
    looped["again"] = [looped]
    request = request_for([{"role": "user", "content": [looped]}])
    with pytest.raises(RecursionError):
        Sizes().chars(request)
