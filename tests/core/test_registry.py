"""The tool registry: schemas from signatures, validation, parallel dispatch, failures as results."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections.abc import Callable
from typing import Literal

import pytest

from agent import Tool, ToolCall, tool
from agent.render import safe_text
from agent.schema import parse_docstring
from agent.tool_runs import run_all
from agent.tools import ToolRegistry


@tool(keep=["id", "customer.name"], never_prune=True, compress=False, timeout=5)
def lookup(order_id: str, limit: int = 5, mode: Literal["fast", "full"] = "fast") -> dict[str, object]:
    """Look an order up.

    Args:
        order_id: the order's id, e.g. "A-1".
        limit: how many lines to return;
            continued on a second line.
        mode: fast or full.
    """
    return {"id": order_id, "limit": limit, "mode": mode}


def test_schema_from_type_hints_and_docstring() -> None:
    schema = lookup.declaration()["input_schema"]
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["order_id"]
    props = schema["properties"]
    assert props["order_id"] == {"type": "string", "description": 'the order\'s id, e.g. "A-1".'}
    assert props["limit"]["default"] == 5
    assert props["limit"]["description"] == "how many lines to return; continued on a second line."
    assert props["mode"]["enum"] == ["fast", "full"]
    assert "title" not in json.dumps(schema)
    assert lookup.description == "Look an order up."


def test_options_are_stored_on_the_tool() -> None:
    assert lookup.keep == ("id", "customer.name")
    assert lookup.never_prune and not lookup.compress and lookup.timeout == 5
    refund = tool(irreversible=True)(_refund)
    assert refund.irreversible and refund.gated


def _refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def test_bad_definitions_are_rejected_clearly() -> None:
    def no_doc(x: int) -> int:
        return x

    def no_hint(x):  # type: ignore[no-untyped-def]
        """Doc."""

    with pytest.raises(TypeError, match="docstring"):
        tool(no_doc)
    with pytest.raises(TypeError, match="type hint"):
        tool(no_hint)
    with pytest.raises(ValueError, match="must match"):
        tool(name="bad name!")(_refund)
    with pytest.raises(ValueError, match="duplicate"):
        ToolRegistry([_refund, _refund])


def test_declarations_are_sorted_and_byte_stable() -> None:
    def make() -> str:
        def zeta(a: int) -> int:
            """Z."""
            return a

        def alpha(b: str, c: float = 1.0) -> str:
            """A."""
            return b

        registry = ToolRegistry([zeta, lookup, alpha])
        return json.dumps(registry.declarations())

    outputs = {make() for _ in range(30)}
    assert len(outputs) == 1
    assert [d["name"] for d in json.loads(outputs.pop())] == ["alpha", "lookup", "zeta"]


def test_unknown_tool_invalid_input_and_exception_become_error_results() -> None:
    def explode(x: int) -> int:
        """Always fails."""
        raise RuntimeError(f"boom {x}")

    registry = ToolRegistry([lookup, explode])
    unknown, invalid, failed, ok = run_all(
        registry,
        [
            ToolCall("1", "nope", {}),
            ToolCall("2", "lookup", {"limit": "many", "mode": "slow", "extra": 1}),
            ToolCall("3", "explode", {"x": 7}),
            ToolCall("4", "lookup", {"order_id": "A-1", "limit": "3"}),
        ],
    )
    assert unknown.is_error and unknown.value == "unknown tool: nope"
    assert invalid.is_error
    for field in ("order_id", "limit", "mode", "extra"):
        assert f"{field}:" in invalid.value
    assert failed.is_error and failed.value == "RuntimeError: boom 7"
    assert not ok.is_error and ok.value == {"id": "A-1", "limit": 3, "mode": "fast"}


def test_calls_run_in_parallel_and_come_back_in_call_order() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def wait(tag: str, delay: float) -> str:
        """Waits for the other calls, then returns its tag."""
        barrier.wait()  # deadlocks (then times out) unless all three run at once
        time.sleep(delay)
        return tag

    registry = ToolRegistry([wait])
    outcomes = run_all(
        registry,
        [
            ToolCall(str(i), "wait", {"tag": tag, "delay": d})
            for i, (tag, d) in enumerate([("a", 0.2), ("b", 0.0), ("c", 0.1)])
        ],
    )
    assert [o.value for o in outcomes] == ["a", "b", "c"]
    assert not any(o.is_error for o in outcomes)


def test_timeouts_become_error_results_for_sync_and_async_tools() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def hang() -> str:
        """Never returns in time."""
        release.wait(10)
        return "late"

    @tool(timeout=0.2)
    async def slow_async() -> str:
        """An async tool that is too slow."""
        await asyncio.sleep(10)
        return "late"

    @tool
    async def quick_async(n: int) -> int:
        """An async tool that is fine."""
        await asyncio.sleep(0)
        return n * 2

    started = time.monotonic()
    outcomes = run_all(
        ToolRegistry([hang, slow_async, quick_async]),
        [ToolCall("1", "hang", {}), ToolCall("2", "slow_async", {}), ToolCall("3", "quick_async", {"n": 21})],
    )
    release.set()
    assert time.monotonic() - started < 5
    assert outcomes[0].is_error and outcomes[0].value.startswith("timeout: hang")
    assert outcomes[1].is_error and outcomes[1].value.startswith("timeout: slow_async")
    assert outcomes[2].value == 42


def test_google_docstring_parser() -> None:
    summary, args = parse_docstring(
        """Do a thing.

        More detail.

        Args:
            a (int): first.
            b: second,
                wrapped.

        Returns:
            nothing.
        """
    )
    assert summary == "Do a thing.\n\nMore detail."
    assert args == {"a": "first.", "b": "second, wrapped."}


def test_tool_stays_callable_as_a_function() -> None:
    assert isinstance(lookup, Tool)
    assert lookup("X")["id"] == "X"


# --- issue 11: what a tool returns (item 4), what a tool's signature may be (11), what input is (12)


class _StrRaises:
    def __str__(self) -> str:
        raise ValueError("no text")


class _StrIsInt:
    def __str__(self) -> str:
        return 5  # type: ignore[return-value]


def _cyclic() -> list[object]:
    items: list[object] = [1]
    items.append(items)
    return items


def _deep(levels: int) -> dict[str, object]:
    root: dict[str, object] = {}
    node = root
    for _ in range(levels):
        node["k"] = node = {}
    return root


HOSTILE_RETURNS = {
    "tuple key": ({(1, 2): "a"}, lambda v: v == {"(1, 2)": "a"}),
    "10**5000": (10**5000, lambda v: v == "1" + "0" * 5000),
    "cyclic list": (_cyclic(), lambda v: v == [1, "<cycle>"]),
    "10,000-deep dict": (_deep(10_000), lambda v: "nested deeper than 100 levels" in json.dumps(v)),
    "__str__ raises": (_StrRaises(), lambda v: v == "<unprintable _StrRaises: __str__ raised ValueError>"),
    "__str__ returns int": (_StrIsInt(), lambda v: v == "<unprintable _StrIsInt: __str__ raised TypeError>"),
    "lone surrogate": ({"k\udc80": "a\udc80b"}, lambda v: v == {"k\ufffd": "a\ufffdb"}),
}


@pytest.mark.parametrize("label", HOSTILE_RETURNS)
def test_any_return_value_becomes_a_renderable_result(label: str) -> None:
    value, expected = HOSTILE_RETURNS[label]

    @tool
    def hostile() -> object:
        """Returns something awkward."""
        return value

    [outcome] = run_all(ToolRegistry([hostile]), [ToolCall("1", "hostile", {})])
    assert not outcome.is_error  # it ran: for an irreversible tool, an error would invite a repeat
    assert expected(outcome.value), outcome.value
    # what the session and the request encoder do with it must work (they crashed on all of these)
    json.dumps(outcome.value, ensure_ascii=False).encode("utf-8")
    json.dumps(outcome.value, ensure_ascii=False, default=str).encode("utf-8")
    assert safe_text(value).encode("utf-8") == safe_text(outcome.value).encode("utf-8")


def test_plain_results_come_back_as_the_very_object() -> None:
    rows = [{"id": i, "tags": ("a", "b"), "score": 1.5, "ok": None} for i in range(1000)]

    @tool
    def listing() -> object:
        """Returns rows."""
        return rows

    [outcome] = run_all(ToolRegistry([listing]), [ToolCall("1", "listing", {})])
    assert outcome.value is rows


def test_positional_only_parameters_are_passed_by_position() -> None:
    @tool
    def power(base: int, exponent: int = 2, /, *, label: str = "") -> str:
        """Raise base to exponent."""
        return f"{label}{base**exponent}"

    call = ToolCall("1", "power", {"base": 3, "exponent": 3, "label": "="})
    [outcome] = run_all(ToolRegistry([power]), [call])
    assert (outcome.value, outcome.is_error) == ("=27", False)


def test_callable_parameters_are_refused_when_decorated() -> None:
    def apply(fn: Callable[[int], int], x: int) -> int:
        """Apply fn."""
        return fn(x)

    with pytest.raises(TypeError, match=r"parameter 'fn' .* cannot be described in JSON Schema"):
        tool(apply)


class _Counter:
    """Count words in a text."""

    def __call__(self, text: str, /) -> int:
        return len(text.split())


def _greet(greeting: str, name: str, punctuation: str = "!") -> str:
    """Greet someone.

    Args:
        name: who to greet.
    """
    return f"{greeting}, {name}{punctuation}"


def test_partial_and_callable_objects_are_tools_named_after_what_they_wrap() -> None:
    hello = tool(functools.partial(_greet, "Hello", punctuation="."))
    counter = tool(_Counter())
    renamed = tool(name="count_words")(_Counter())
    assert (hello.name, counter.name, renamed.name) == ("_greet", "_Counter", "count_words")
    assert hello.description == "Greet someone." and counter.description == "Count words in a text."
    # the partial's bound arguments are not the model's to set (or even see)
    assert list(hello.declaration()["input_schema"]["properties"]) == ["name"]
    registry = ToolRegistry([hello, counter, renamed])
    outcomes = run_all(
        registry,
        [
            ToolCall("1", "_greet", {"name": "Ada"}),
            ToolCall("2", "_Counter", {"text": "one two three"}),
            ToolCall("3", "_greet", {"name": "Ada", "punctuation": "?"}),
        ],
    )
    assert [o.value for o in outcomes[:2]] == ["Hello, Ada.", 3]
    assert outcomes[2].is_error and "punctuation: Extra inputs are not permitted" in outcomes[2].value


def test_a_default_holding_a_title_key_is_declared_as_it_is() -> None:
    @tool
    def style(options: dict[str, str] = {"title": "Report", "font": "serif"}) -> str:  # noqa: B006
        """Style a document."""
        return str(options)

    props = style.declaration()["input_schema"]["properties"]
    assert props["options"]["default"] == {"title": "Report", "font": "serif"}


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("not an object", "a string"),
        (None, "null"),
        (42, "a number"),
        (1.5, "a number"),
        ([["order_id", "A-1"]], "an array"),
        (True, "a boolean"),
    ],
)
def test_input_that_is_not_an_object_is_an_error_result(given: object, named: str) -> None:
    [outcome] = run_all(ToolRegistry([lookup]), [ToolCall("1", "lookup", given)])  # type: ignore[arg-type]
    assert outcome.is_error
    expected = f"invalid input for lookup: the input must be a JSON object of named arguments, not {named}"
    assert outcome.value == expected


def test_a_declaration_is_a_fresh_copy_so_marking_one_never_changes_the_next() -> None:
    @tool
    def lookup(order: str) -> str:
        """Look an order up.

        Args:
            order: the order id.
        """
        return order

    first = lookup.declaration()
    first["input_schema"]["properties"]["order"]["type"] = "integer"
    first["cache_control"] = {"type": "ephemeral"}
    again = lookup.declaration()
    assert again["input_schema"]["properties"]["order"]["type"] == "string"
    assert "cache_control" not in again
