"""Hostile tools and hostile calls: each attack names what must still hold.

Decided here (and in agent/registry.py): a tool's own SystemExit or KeyboardInterrupt is
that call's error result (in a worker thread neither can be the user's Ctrl-C); a real
interrupt of the main thread still propagates out of the run. A tool that returns a
generator did nothing (its body never ran), so that is an error; any other value, however
odd, is a successful result made renderable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import functools
import json
import math
import signal
import threading
import time
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypeAliasType

from agent import Agent, ToolCall, tool
from agent.ext.sessions import Session
from agent.render import MAX_VALUES, renderable, safe_text
from agent.testing import ScriptedLLM, reply, tool_use
from agent.tool_runs import run_all
from agent.tools import MAX_OUTPUT_CHARS, Tool, ToolRegistry


def run(fn: Tool, arguments: Any = None, **registry: Any) -> tuple[Any, bool]:
    [outcome] = run_all(ToolRegistry([fn], **registry), [ToolCall("1", fn.name, arguments or {})])
    return outcome.value, outcome.is_error


def sendable(value: Any) -> bool:
    """What the session file and the request encoder need of a result."""
    if isinstance(value, bytes):
        return True
    json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    return True


# --- names, docstrings, options: refused when decorated, with the reason


def _doc(x: int) -> int:
    """Doc."""
    return x


@pytest.mark.parametrize(
    ("make", "error", "says"),
    [
        (lambda: tool(name="ok\n")(_doc), ValueError, "must match"),  # `$` used to accept this
        (lambda: tool(name="")(_doc), ValueError, "must match"),
        (lambda: tool(name="tööl")(_doc), ValueError, "must match"),
        (lambda: tool(name="x" * 129)(_doc), ValueError, "must match"),
        (lambda: tool(name=7)(_doc), TypeError, "name must be a str"),  # type: ignore[call-overload]
        (lambda: tool(lambda x: x), ValueError, "a lambda has no name"),
        (lambda: tool(int), TypeError, "is a class"),
        (lambda: tool(42), TypeError, "not callable"),  # type: ignore[call-overload]
        (lambda: tool(keep="id")(_doc), TypeError, "list of field paths"),
        (lambda: tool(timeout=0)(_doc), ValueError, "timeout"),
        (lambda: tool(timeout=math.nan)(_doc), ValueError, "timeout"),
        (lambda: tool(timeout="5")(_doc), ValueError, "timeout"),  # type: ignore[call-overload]
        (lambda: tool(description="   ")(_doc), TypeError, "docstring"),
        (lambda: tool(description="bad \udc80 text")(_doc), TypeError, "cannot be sent"),
    ],
)
def test_bad_tool_definitions_fail_at_decoration(make: Any, error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        make()


def test_the_longest_name_is_accepted_and_a_named_lambda_is_refused_for_its_missing_hints() -> None:
    assert tool(name="x" * 128)(_doc).name == "x" * 128
    with pytest.raises(TypeError, match="parameter 'x' needs a type hint"):
        tool(name="double", description="Double it.")(lambda x: x * 2)


def _args_only() -> int:
    """
    Args:
        x: nothing above this section.
    """
    return 1


def _generator(n: int) -> Any:
    """Yields."""
    yield n


async def _async_generator(n: int) -> Any:
    """Yields."""
    yield n


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (_args_only, "needs a docstring"),
        (_generator, "generator function cannot be a tool"),
        (_async_generator, "generator function cannot be a tool"),
    ],
)
def test_functions_that_cannot_be_tools_are_refused(fn: Any, says: str) -> None:
    with pytest.raises(TypeError, match=says):
        tool(fn)


# --- annotations


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    """A point."""

    x: int
    y: int = 0


class TreeNode(BaseModel):
    """A tree."""

    title: str
    children: list[TreeNode] = []


def test_rich_annotations_become_schemas_and_arrive_typed() -> None:
    seen: dict[str, Any] = {}

    @tool
    def rich(
        count: Annotated[int, Field(ge=0, description="how many")],
        mode: Literal["a", "b"],
        colour: Colour,
        where: Point,
        tree: TreeNode,
        limit: int = Field(5, le=10),
        note: Optional[str] = None,  # noqa: UP045  (the old spelling is the attack)
    ) -> str:
        """Uses everything."""
        seen.update(locals())
        return "ok"

    schema = rich.declaration()["input_schema"]
    text = json.dumps(schema)
    assert schema["properties"]["count"] == {"description": "how many", "minimum": 0, "type": "integer"}
    assert '"title"' in text and '"title": "' not in text  # TreeNode's field stays; no titles
    assert schema["required"] == ["count", "mode", "colour", "where", "tree"]
    tree = {"title": "root", "children": [{"title": "leaf"}]}
    args = {"count": 1, "mode": "a", "colour": "red", "where": {"x": 1}, "tree": tree}
    assert run(rich, args) == ("ok", False)
    assert seen["colour"] is Colour.RED and seen["where"] == Point(x=1) and seen["limit"] == 5
    assert seen["tree"].children[0].title == "leaf" and seen["note"] is None
    value, failed = run(rich, {**args, "count": -1, "limit": 11})
    assert failed and "count:" in value and "limit:" in value


def test_forward_references_resolve_from_the_decorating_scope_or_are_refused() -> None:
    class Local(BaseModel):
        """Local."""

        a: int

    def uses_local(item: Local) -> int:
        """Uses a class local to this test."""
        return item.a

    assert run(tool(uses_local), {"item": {"a": 3}}) == (3, False)

    def uses_missing(item: Missing) -> int:  # type: ignore[name-defined]  # noqa: F821
        """Names a type that does not exist."""
        return 0

    with pytest.raises(TypeError, match=r"type hints cannot be resolved \(NameError: name 'Missing'"):
        tool(uses_missing)


def test_parameter_names_pydantic_reserves_are_still_the_models_names() -> None:
    @tool
    def reserved(json: int, model_config: str, schema: bool = False, _private: int = 0) -> list[Any]:
        """Parameter names that clash with BaseModel."""
        return [json, model_config, schema, _private]

    props = reserved.declaration()["input_schema"]["properties"]
    assert list(props) == ["json", "model_config", "schema", "_private"]  # model_config used to vanish
    arguments = {"json": 1, "model_config": "c", "schema": True, "_private": 2}
    assert run(reserved, arguments) == ([1, "c", True, 2], False)


Json = TypeAliasType("Json", "dict[str, Json] | list[Json] | str | int | float | bool | None")
NaiveJson = Union[dict[str, "NaiveJson"], list["NaiveJson"], str, int, None]  # noqa: UP007


def test_a_recursive_type_alias_works_and_a_naive_one_is_refused_by_name() -> None:
    def takes(data: Json) -> Any:
        """Echoes JSON."""
        return data

    def naive(data: NaiveJson) -> Any:
        """Echoes JSON."""
        return data

    nested = {"a": [1, {"b": None}]}
    assert run(tool(takes), {"data": nested}) == (nested, False)
    with pytest.raises(TypeError, match=r"parameter 'data' .* you should define `NaiveJson`"):
        tool(naive)


class Socket:
    pass


def _nan_default(x: float = math.nan) -> float:
    """A default JSON cannot hold."""
    return x


def _cafe(café: int) -> int:
    """A name the API refuses."""
    return café


def _arbitrary(sock: Socket) -> str:
    """Takes something no JSON can be."""
    return ""


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (_nan_default, "cannot be sent to the API"),
        (_cafe, "parameter 'café' is not a name the API accepts"),
        (_arbitrary, "parameter 'sock' .*cannot be described in JSON Schema"),
    ],
)
def test_parameters_no_model_could_send_are_refused(fn: Any, says: str) -> None:
    with pytest.raises(TypeError, match=says):
        tool(fn)


# --- what the model sends


@pytest.mark.parametrize("name", ["", "x" * 100_000, None, ["a", "list"], "bad\udc80name", "say\nhi"])
def test_any_tool_name_from_the_model_is_an_unknown_tool_result(name: Any) -> None:
    [outcome] = run_all(ToolRegistry([tool(_doc)]), [ToolCall("1", name, {})])
    assert outcome.is_error and outcome.value.startswith("unknown tool: ")
    assert len(outcome.value) < 200 and sendable(outcome.value)


def test_deep_or_odd_input_is_an_error_result_and_the_tool_cannot_change_the_call() -> None:
    @tool
    def grow(data: dict[str, Any], items: list[int] = []) -> int:  # noqa: B006
        """Mutates everything it is given."""
        data["added"] = True
        data["nested"]["list"].append(99)
        items.append(1)
        return len(items)

    given = {"data": {"nested": {"list": [1]}}}
    registry = ToolRegistry([grow])
    first, second = run_all(registry, [ToolCall("1", "grow", given), ToolCall("2", "grow", given)])
    assert (first.value, second.value) == (1, 1)  # the mutable default is fresh each call
    assert given == {"data": {"nested": {"list": [1]}}}  # the history's tool_use input is untouched
    deep: Any = {}
    for _ in range(10_000):
        deep = {"k": deep}
    [outcome] = run_all(registry, [ToolCall("3", "grow", {"data": deep})])
    assert outcome.is_error and outcome.value.startswith("invalid input for grow")


# --- what a tool returns


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("not today")


class _ExitingStr(Exception):
    def __str__(self) -> str:
        raise SystemExit("from __str__")


@dataclasses.dataclass
class Row:
    id: int
    when: datetime.date


class Order(BaseModel):
    id: str
    total: float


class Shared:
    """A list of lists that shares itself: tiny in memory, 2**60 values as text."""

    @staticmethod
    def make() -> list[Any]:
        node: list[Any] = [0]
        for _ in range(60):
            node = [node, node]
        return node


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Order(id="A", total=1.5), {"id": "A", "total": 1.5}),
        (Row(1, datetime.date(2026, 1, 2)), {"id": 1, "when": "2026-01-02"}),
        ({3, 1, 2}, [1, 2, 3]),
        (Colour.BLUE, "blue"),
        (map(str, [1]), lambda v: v.startswith("<map object")),
        ({"n": float("nan"), "big": -(10**4400)}, lambda v: math.isnan(v["n"]) and len(v["big"]) == 4402),
        ({"blob": b"\xff\xfe raw"}, {"blob": "\ufffd\ufffd raw"}),
        (b"\xff raw bytes", b"\xff raw bytes"),
        (_ExitingStr(), "<unrenderable result: SystemExit: from __str__>"),  # ran: not an error
    ],
)
def test_odd_return_values_are_plain_results(value: Any, expected: Any) -> None:
    result, failed = run(tool(name="odd", description="Odd.")(lambda: value))
    assert not failed and sendable(result)
    assert expected(result) if callable(expected) else result == expected


any_text = st.text(st.characters(blacklist_categories=()), max_size=8)  # surrogates included
huge = st.integers(-3, 3).map(lambda n: n * 10**4400)
scalars = st.none() | st.booleans() | st.integers() | huge | st.floats() | any_text | st.binary()
keys = any_text | st.integers() | st.floats() | st.none() | st.tuples(st.integers(), any_text)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(keys, inner, max_size=4)
        | st.frozensets(scalars.filter(lambda v: not isinstance(v, float)), max_size=3)
    ),
    max_leaves=20,
)


@pytest.mark.slow
@given(values)
@settings(max_examples=300, deadline=None)
def test_renderable_and_safe_text_hold_for_any_value(value: Any) -> None:
    plain = renderable(value)
    if not isinstance(plain, bytes):
        json.dumps(plain, ensure_ascii=False).encode("utf-8")
        assert json.dumps(renderable(plain), default=repr) == json.dumps(plain, default=repr)  # idempotent
    text = safe_text(value)
    assert isinstance(text, str) and text.encode("utf-8").decode("utf-8") == text


@pytest.mark.slow
def test_a_self_sharing_result_is_cut_not_expanded() -> None:
    started = time.monotonic()
    value, failed = run(tool(name="bomb", description="Bomb.")(Shared.make))
    assert not failed and f"cut: over {MAX_VALUES:,} values" in json.dumps(value)
    assert time.monotonic() - started < 30 and len(json.dumps(value)) < 40 * MAX_VALUES


def test_huge_outputs_are_bounded_wherever_they_are() -> None:
    big = "x" * (3 * MAX_OUTPUT_CHARS)

    @tool
    def flood(where: Literal["top", "nested", "wide"]) -> Any:
        """Returns too much."""
        return {"top": big, "nested": {"log": [big]}, "wide": list(range(2 * MAX_VALUES))}[where]

    top, _ = run(flood, {"where": "top"})
    nested, _ = run(flood, {"where": "nested"})
    wide, _ = run(flood, {"where": "wide"})
    assert len(top) < MAX_OUTPUT_CHARS + 200 and "chars cut" in top
    assert len(nested["log"][0]) < MAX_OUTPUT_CHARS + 200 and "chars cut" in nested["log"][0]
    assert len(wide) <= MAX_VALUES + 1 and wide[-1] == f"[... cut: over {MAX_VALUES:,} values ...]"


def test_a_returned_generator_is_an_error_and_its_body_never_ran() -> None:
    ran: list[int] = []

    def lazy() -> Any:
        ran.append(1)
        yield 1

    value, failed = run(tool(name="gen", description="Gen.")(lambda: lazy()))
    assert failed and value == "gen returned a generator, not a value (its body never ran)" and ran == []


def test_a_coroutine_from_a_sync_callable_is_awaited() -> None:
    class Fetch:
        """Fetch asynchronously."""

        async def __call__(self, key: str) -> str:
            await asyncio.sleep(0)
            return key.upper()

    async def _slow(key: str) -> str:
        """Slow."""
        await asyncio.sleep(10)
        return key

    assert run(tool(Fetch()), {"key": "a"}) == ("A", False)
    value, failed = run(tool(timeout=0.2)(functools.partial(_slow)), {"key": "a"})
    assert failed and value == "timeout: _slow did not finish in 0.2s"


# --- what a tool raises, and tools that never finish


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (SystemExit(3), "SystemExit: 3"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
        (GeneratorExit(), "GeneratorExit"),
        (asyncio.CancelledError(), "CancelledError"),
        (_Unprintable(), "_Unprintable"),  # was reported as the RuntimeError its __str__ raised
        (_ExitingStr(), "_ExitingStr"),  # used to escape twice, and hang the run until its timeout
        (ValueError("bad \udc80 byte"), "ValueError: bad \ufffd byte"),
        (TimeoutError("connect timed out"), "TimeoutError: connect timed out"),  # its own, not ours
        (ValueError("x" * (3 * MAX_OUTPUT_CHARS)), lambda v: len(v) < MAX_OUTPUT_CHARS + 200),
    ],
)
def test_whatever_a_tool_raises_is_its_error_result(error: BaseException, expected: Any) -> None:
    def raiser() -> None:
        raise error

    started = time.monotonic()
    value, failed = run(tool(name="raiser", description="Raises.", timeout=5)(raiser))
    assert failed and sendable(value) and time.monotonic() - started < 4
    assert expected(value) if callable(expected) else value == expected


def test_a_real_interrupt_of_the_main_thread_still_stops_the_run() -> None:
    release = threading.Event()

    @tool
    def wait() -> str:
        """Waits."""
        release.wait(10)
        return "done"

    main = threading.main_thread().ident
    assert main is not None
    threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()  # Ctrl-C, as the OS sends it
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_all(ToolRegistry([wait]), [ToolCall("1", "wait", {})])
    finally:
        release.set()
    assert time.monotonic() - started < 5  # at once, not when the tool is done


def test_tools_that_never_finish_time_out_and_the_rest_still_answer() -> None:
    stop = threading.Event()

    @tool(timeout=0.3)
    async def stubborn() -> str:
        """Swallows its cancellation and carries on."""
        while not stop.is_set():
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                continue
        return "late"

    @tool(timeout=0.3)
    async def blocks_the_loop() -> str:
        """Sleeps without awaiting: cancellation cannot reach it."""
        time.sleep(3)
        return "late"

    @tool
    def fine() -> str:
        """Answers."""
        return "fine"

    started = time.monotonic()
    calls = [ToolCall(str(i), name, {}) for i, name in enumerate(["stubborn", "blocks_the_loop", "fine"])]
    try:
        outcomes = run_all(ToolRegistry([stubborn, blocks_the_loop, fine]), calls)
    finally:
        stop.set()
    assert time.monotonic() - started < 2
    assert [o.value for o in outcomes] == [
        "timeout: stubborn did not finish in 0.3s",
        "timeout: blocks_the_loop did not finish in 0.3s",
        "fine",
    ]


# --- the whole run: each hostile return and raise, through the loop, the session and the request


def _returns(value: Any) -> Any:
    return lambda: value


def _raises(error: BaseException) -> Any:
    def fail() -> None:
        raise error

    return fail


cyclic: list[Any] = []
cyclic.append(cyclic)
LOOP_ATTACKS = {
    "tuple key": _returns({(1, 2): "a"}),
    "10**5000": _returns(10**5000),
    "cyclic": _returns(cyclic),
    "deep": _returns(functools.reduce(lambda inner, _: {"k": inner}, range(10_000), {})),
    "__str__ raises": _returns(_Unprintable()),
    "surrogate": _returns("a\udc80b"),
    "bomb": Shared.make,
    "SystemExit": _raises(SystemExit(1)),
    "unprintable error": _raises(_Unprintable()),
}


@pytest.mark.parametrize("label", LOOP_ATTACKS)
def test_the_run_survives_every_attack_and_its_requests_stay_encodable(label: str, tmp_path: Path) -> None:
    hostile = tool(name="hostile", description="Hostile.")(LOOP_ATTACKS[label])
    llm = ScriptedLLM([reply(tool_use("hostile", {}, id="h1")), reply("done")])
    result = Agent(llm=llm, tools=[hostile], artifacts_dir=tmp_path / "a").run(
        "go", extensions=[Session(tmp_path / "s")]
    )
    assert result.text == "done"
    json.dumps(llm.requests[-1], ensure_ascii=False, allow_nan=False).encode("utf-8")
    assert safe_text(llm.requests[-1]).encode("utf-8")
