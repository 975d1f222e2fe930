"""Nothing fails silently: each mistake that the loop survives (or that would do nothing)
is a WARNING on the `agent` logger, or an error at construction, naming what to fix."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TypedDict

import pytest

from agent import Agent, tool
from agent.ext.approval import Approval
from agent.models import MODELS
from agent.testing import ScriptedLLM, reply, tool_use


class Hit(TypedDict):
    title: str
    year: int


@dataclasses.dataclass
class Customer:
    name: str
    email: str


@dataclasses.dataclass
class Order:
    order_id: str
    customer: Customer


class Book:  # no __str__, no fields a renderer can see: it is sent as its repr
    def __init__(self, title: str) -> None:
        self.title = title


@tool
def find(query: str) -> list[Hit]:
    """Find books.

    Args:
        query: Words to look for.
    """
    return [{"title": query, "year": 2020}]


@tool
def lookup(title: str) -> Book:
    """Look a book up."""
    return Book(title)


@tool
def boom(x: int) -> str:
    """Fails."""
    raise ValueError("the index is corrupt")


@tool(timeout=0.1)
def slow(x: int) -> str:
    """Too slow."""
    time.sleep(1.0)
    return "late"


@tool(irreversible=True)
def refund(order_id: str) -> str:
    """Refund an order."""
    return "refunded"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agent" and r.levelno == logging.WARNING]


def run_one_call(caplog: pytest.LogCaptureFixture, name: str, arguments: dict[str, object]) -> list[str]:
    first = reply("looking", tool_use("find", {"query": "x"}))
    llm = ScriptedLLM([first, reply(tool_use(name, arguments)), reply("ok")])
    agent = Agent(tools=[find, lookup, boom, slow, refund], llm=llm, artifacts_dir=None)
    with caplog.at_level(logging.WARNING, logger="agent"):
        assert agent.run("go").text == "ok"
    return warnings_of(caplog)


def test_a_denied_gated_call_warns_with_tool_and_step(caplog: pytest.LogCaptureFixture) -> None:
    (line,) = run_one_call(caplog, "refund", {"order_id": "A-1"})
    assert line.startswith(
        "[step 2] tool refund was denied: denied: no approval extension decides gated tools"
    )


def test_a_tool_exception_warns(caplog: pytest.LogCaptureFixture) -> None:
    (line,) = run_one_call(caplog, "boom", {"x": 1})
    assert line == "[step 2] tool boom failed: ValueError: the index is corrupt"


def test_invalid_input_warns(caplog: pytest.LogCaptureFixture) -> None:
    (line,) = run_one_call(caplog, "boom", {"x": "one"})
    assert line.startswith("[step 2] tool boom got invalid input: invalid input for boom: x:")


def test_a_timeout_warns(caplog: pytest.LogCaptureFixture) -> None:
    (line,) = run_one_call(caplog, "slow", {"x": 1})
    assert line == "[step 2] tool slow timed out: timeout: slow did not finish in 0.1s"


def test_a_result_sent_as_its_repr_warns(caplog: pytest.LogCaptureFixture) -> None:
    (line,) = run_one_call(caplog, "lookup", {"title": "Dune"})
    assert line.startswith("[step 2] tool lookup returned <test_warnings.Book object at 0x")
    assert "return a dict, a dataclass, a pydantic model or a str instead" in line


def test_plain_results_warn_nothing(caplog: pytest.LogCaptureFixture) -> None:
    assert run_one_call(caplog, "find", {"query": "y"}) == []


# -- at construction ----------------------------------------------------------------------


def test_a_keep_path_no_result_can_have_warns_with_did_you_mean(caplog: pytest.LogCaptureFixture) -> None:
    @tool(keep=["titel", "year"])
    def search(query: str) -> list[Hit]:
        """Search."""
        return []

    @tool(keep=["order_id", "customer.nmae"])
    def order(order_id: str) -> Order | None:
        """One order."""
        return None

    @tool(keep=["anything.at.all"])
    def raw(order_id: str) -> dict[str, object]:
        """Untyped: cannot be checked."""
        return {}

    with caplog.at_level(logging.WARNING, logger="agent"):
        Agent(tools=[search, order, raw], llm=ScriptedLLM([]), artifacts_dir=None)
    assert warnings_of(caplog) == [
        "@tool(keep=...) for tool order: 'customer.nmae' can never match: its result has no field 'nmae' "
        '(did you mean "name"?) (fields: name, email)',
        "@tool(keep=...) for tool search: 'titel' can never match: its result has no field 'titel' "
        '(did you mean "title"?) (fields: title, year)',
    ]


def test_keep_fields_are_checked_too(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent"):
        Agent(tools=[find], llm=ScriptedLLM([]), artifacts_dir=None, keep_fields={"find": ["yaer"]})
    assert warnings_of(caplog) == [
        "keep_fields for tool find: 'yaer' can never match: its result has no field 'yaer' "
        '(did you mean "year"?) (fields: title, year)'
    ]


def test_keep_fields_for_an_unknown_tool_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent"):
        Agent(tools=[find, lookup], llm=ScriptedLLM([]), artifacts_dir=None, keep_fields={"fnd": ["title"]})
    assert warnings_of(caplog) == [
        "keep_fields names 'fnd', not one of this agent's tools (did you mean \"find\"?): it is never read "
        "(tools: find, lookup)"
    ]


def test_misspelt_subclass_attributes_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent"):

        class Librarian(Agent):
            systme = "You find books."
            max_step = 4
            shelf = "A"  # an attribute of its own: nothing like an option

            def helper(self) -> str:
                return self.shelf

    assert warnings_of(caplog) == [
        'Librarian.systme is not an Agent option, so nothing reads it (did you mean "system"?)',
        'Librarian.max_step is not an Agent option, so nothing reads it (did you mean "max_steps"?)',
    ]


def test_option_types_are_errors_that_say_what_to_pass() -> None:
    with pytest.raises(TypeError, match=r"tools must be a list of tools, e.g. tools=\[find\]"):
        Agent(tools=find, llm=ScriptedLLM([]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_steps must be an int, not str '5'"):
        Agent(max_steps="5", llm=ScriptedLLM([]))  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match=r"allow must be a list of tool names, e.g. allow=\['refund'\]"):
        Approval(allow="refund")
    with pytest.raises(TypeError, match=r"keep_fields\['find'\] must be a list of field paths"):
        Agent(tools=[find], keep_fields={"find": "title"}, llm=ScriptedLLM([]))
    with pytest.raises(TypeError, match=r'unknown Agent option.s.: systme .did you mean "system"'):
        Agent(systme="x", llm=ScriptedLLM([]))  # type: ignore[call-arg]


def test_an_unknown_model_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent"):
        for _ in range(3):
            Agent(model="claude-test-warning-9", llm=ScriptedLLM([]), artifacts_dir=None)
    (line,) = warnings_of(caplog)
    assert line.startswith("model 'claude-test-warning-9' is not in the model table: its cost, cache minimum")
    assert MODELS.lookup("claude-test-warning-9") is None


def test_a_docstring_args_entry_naming_no_parameter_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent"):

        @tool
        def fetch(order_id: str) -> str:
            """Fetch an order.

            Args:
                oder_id: The order's id.
            """
            return order_id

    assert warnings_of(caplog) == [
        "tool fetch: its docstring's Args names 'oder_id', which is not a parameter "
        '(did you mean "order_id"?); the model never sees that description'
    ]
