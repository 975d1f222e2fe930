"""The tool registry: schemas from signatures, validation, parallel dispatch, failures as results."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Literal

import pytest

from agent import Tool, ToolCall, ToolRegistry, tool
from agent.schema import parse_docstring


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
    unknown, invalid, failed, ok = registry.run_all(
        [
            ToolCall("1", "nope", {}),
            ToolCall("2", "lookup", {"limit": "many", "mode": "slow", "extra": 1}),
            ToolCall("3", "explode", {"x": 7}),
            ToolCall("4", "lookup", {"order_id": "A-1", "limit": "3"}),
        ]
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
    outcomes = registry.run_all(
        [
            ToolCall(str(i), "wait", {"tag": tag, "delay": d})
            for i, (tag, d) in enumerate([("a", 0.2), ("b", 0.0), ("c", 0.1)])
        ]
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
    outcomes = ToolRegistry([hang, slow_async, quick_async]).run_all(
        [ToolCall("1", "hang", {}), ToolCall("2", "slow_async", {}), ToolCall("3", "quick_async", {"n": 21})]
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
