"""Typed results: `Output(Model)` sends a schema the API accepts, validates the final answer
into `result.output`, sends an invalid one back once, and raises `OutputInvalid` on the second.

Every run goes through the official SDK to the strict simulator, which refuses a request the
API would refuse (`check_structured_outputs`, the rules of the live recordings).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pydantic
import pytest
from anthropic.types import Message
from pydantic import BaseModel, Field

from agent import Agent, AgentError, StepBudgetExceeded, tool
from agent.errors import ModelCallFailed
from agent.ext.output import Output, OutputInvalid, api_schema
from agent.extension import Extension
from agent.messages import text_of
from agent.testing import call
from agent.testing.policies import latest_results, reply, scripted
from agent.testing.simulator import MessagesSimulator
from agent.testing.validate import check_structured_outputs

Simulator = Callable[..., MessagesSimulator]


class Line(BaseModel):
    item: str = Field(min_length=1)
    hours: float = Field(gt=0, le=24)


class Invoice(BaseModel):
    customer: str
    lines: list[Line] = Field(min_length=1, max_length=20)
    note: str | None = None


GOOD = {"customer": "ACME", "lines": [{"item": "support", "hours": 2}]}


@tool
def rate_card(customer: str) -> str:
    """The hours of work billable to a customer.

    Args:
        customer: the customer's name.
    """
    return json.dumps({"customer": customer, "lines": [{"item": "on-call", "hours": 3.5}]})


def objects(schema: Any) -> Iterator[Mapping[str, Any]]:
    """Every object sub-schema of `schema`, nested ones included."""
    if isinstance(schema, Mapping):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from objects(value)


def user_text(message: Mapping[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def test_the_schema_sent_is_one_the_api_accepts_and_the_answer_is_the_object(simulator: Simulator) -> None:
    sim = simulator(lambda body: json.dumps(GOOD))
    agent = Agent(llm=sim.llm(), effort="low", extensions=[Output(Invoice)])
    result = agent.run("Bill ACME for two hours of support.")
    assert result.output == Invoice.model_validate(GOOD) and isinstance(result.output, Invoice)
    assert Output(Invoice).of(result).lines[0].hours == 2
    sent = sim.requests[0]
    assert sent["output_config"]["effort"] == "low"  # kept beside the format
    fmt = sent["output_config"]["format"]
    assert fmt["type"] == "json_schema" and check_structured_outputs(sent) == [] and not sim.rejected
    assert list(objects(fmt["schema"])) and all(o["additionalProperties"] is False for o in objects(fmt))
    # what the API does not take is moved into the description (the SDK's transform), not lost:
    line = fmt["schema"]["$defs"]["Line"]["properties"]
    assert "maxLength" not in json.dumps(fmt) and "exclusiveMinimum" not in line["hours"]
    assert "exclusiveMinimum: 0" in line["hours"]["description"]


def test_pydantics_own_schema_is_refused_as_the_api_refuses_it(simulator: Simulator) -> None:
    """The witness that the transform matters: the untransformed schema is a 400."""

    class Raw(Extension):
        def request(self, request: dict[str, Any], run: Any) -> dict[str, Any]:
            schema = Invoice.model_json_schema()
            return {**request, "output_config": {"format": {"type": "json_schema", "schema": schema}}}

    sim = simulator(lambda body: json.dumps(GOOD))
    with pytest.raises(ModelCallFailed, match="additionalProperties"):
        Agent(llm=sim.llm(), extensions=[Raw()]).run("Bill ACME.")


def test_tools_run_first_then_the_final_answer_is_typed(simulator: Simulator) -> None:
    def model(body: Mapping[str, Any]) -> Any:
        results = latest_results(body)
        if not results:
            return ["Looking up the rate card.", call("rate_card", customer="ACME")]
        return results[-1].text  # the rate card is already an invoice's JSON

    sim = simulator(model)
    agent = Agent(tools=[rate_card], llm=sim.llm(), extensions=[Output(Invoice)])
    result = agent.run("Bill ACME for what the rate card says.")
    assert result.output == Invoice(customer="ACME", lines=[Line(item="on-call", hours=3.5)])
    assert len(result.steps) == 2 and all("format" in r["output_config"] for r in sim.requests)
    assert "rate_card" in [t["name"] for t in sim.requests[0]["tools"]] and not sim.rejected


def test_an_invalid_answer_is_sent_back_once_saying_what_failed(simulator: Simulator) -> None:
    bad = {"customer": "ACME", "lines": [{"item": "support", "hours": 30}]}  # le=24: in the description only
    sim = simulator(scripted(json.dumps(bad), json.dumps(GOOD)))
    result = Agent(llm=sim.llm(), extensions=[Output(Invoice)]).run("Bill ACME.")
    assert result.output == Invoice.model_validate(GOOD) and len(result.steps) == 2
    sent_back = sim.requests[1]["messages"][-1]
    assert sent_back["role"] == "user" and "lines.0.hours" in user_text(sent_back)
    assert "less than or equal to 24" in user_text(sent_back)
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user", "assistant"]


def test_a_second_invalid_answer_raises_with_the_partial_result(simulator: Simulator) -> None:
    sim = simulator(lambda body: "Here is your invoice: ACME, 2 hours.")
    with pytest.raises(OutputInvalid) as raised:
        Agent(llm=sim.llm(), extensions=[Output(Invoice)]).run("Bill ACME.")
    error = raised.value
    assert isinstance(error, AgentError) and isinstance(error.__cause__, pydantic.ValidationError)
    assert "not a valid Invoice" in str(error) and "Invalid JSON" in str(error) and error.errors
    assert error.result is not None and error.result.stop_reason == "invalid_output"
    assert len(sim.requests) == 2 and len(error.result.steps) == 2  # sent back once, not twice
    assert [m["role"] for m in error.result.messages] == ["user", "assistant", "user", "assistant"]
    assert error.result.output is None


def test_retries_zero_raises_on_the_first_invalid_answer(simulator: Simulator) -> None:
    sim = simulator(lambda body: "{}")
    with pytest.raises(OutputInvalid, match="customer: Field required"):
        Agent(llm=sim.llm(), extensions=[Output(Invoice, retries=0)]).run("Bill ACME.")
    assert len(sim.requests) == 1


def test_the_retry_is_a_step_under_the_budgets(simulator: Simulator) -> None:
    sim = simulator(scripted("{}", json.dumps(GOOD)))
    with pytest.raises(StepBudgetExceeded) as raised:
        Agent(llm=sim.llm(), max_steps=1, extensions=[Output(Invoice)]).run("Bill ACME.")
    assert raised.value.result is not None and len(raised.value.result.steps) == 1
    assert len(sim.requests) == 1


def test_an_answer_cut_off_at_max_tokens_is_sent_back_saying_so(simulator: Simulator) -> None:
    cut = reply('{"customer": "ACME", "lines": [{"item": "sup', stop_reason="max_tokens")
    sim = simulator(scripted(cut, json.dumps(GOOD)))
    result = Agent(llm=sim.llm(), extensions=[Output(Invoice)]).run("Bill ACME.")
    assert result.output == Invoice.model_validate(GOOD) and len(sim.requests) == 2
    assert "cut off at max_tokens" in user_text(sim.requests[1]["messages"][-1])


def test_a_refusal_is_not_sent_back(simulator: Simulator) -> None:
    sim = simulator(lambda body: reply("I can't help with that.", stop_reason="refusal"))
    with pytest.raises(OutputInvalid, match="'refusal'") as raised:
        Agent(llm=sim.llm(), extensions=[Output(Invoice)]).run("Bill ACME.")
    assert len(sim.requests) == 1 and raised.value.result is not None


def test_the_callers_history_is_left_as_it_was(simulator: Simulator) -> None:
    history = [
        {"role": "user", "content": "Who is the customer?"},
        {"role": "assistant", "content": "ACME."},
    ]
    before = json.dumps(history)
    sim = simulator(scripted("{}", json.dumps(GOOD)))
    Agent(llm=sim.llm(), extensions=[Output(Invoice)]).run("Bill them.", history=history)
    assert json.dumps(history) == before


class Free(BaseModel):
    totals: dict[str, float]


class Open(BaseModel, extra="allow"):
    name: str


class Untyped(BaseModel):
    anything: Any


@pytest.mark.parametrize(
    "bad", [dict, int, "Invoice", Invoice(customer="x", lines=[Line(item="a", hours=1)])]
)
def test_anything_but_a_pydantic_model_class_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="pydantic model class"):
        Output(bad)


@pytest.mark.parametrize(
    ("model", "match"),
    [(Free, r"Free\.totals is an object with free-form keys"), (Open, "free-form"), (Untyped, "Untyped")],
)
def test_a_model_structured_outputs_cannot_express_is_refused(model: type[BaseModel], match: str) -> None:
    with pytest.raises(TypeError, match=match):
        api_schema(model)


def test_retries_must_be_a_count() -> None:
    with pytest.raises(ValueError, match="retries"):
        Output(Invoice, retries=-1)


def test_a_plain_run_does_not_import_the_extension() -> None:
    code = (
        "import sys; from agent import Agent; from agent.testing import ScriptedLLM; "
        "Agent(llm=ScriptedLLM(['hi'])).run('x'); "
        "assert 'agent.ext.output' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the live recordings ----------------------------------------------------------------------

LIVE = Path(__file__).resolve().parents[2].parent / "shared/realdata/live-traffic/recordings.jsonl.gz"


def test_every_recorded_structured_answer_is_read_whole_as_the_json_the_schema_asked_for() -> None:
    """What `Output` assumes of a final answer, on the replies the live API gave to
    `output_config.format` requests (25 final answers in the shared recordings): the reply's
    text, all its text blocks joined, is one JSON document with the keys the schema requires."""
    if not LIVE.exists():
        pytest.skip(f"no live recordings at {LIVE} (the shared realdata folder is not here)")
    answered = 0
    with gzip.open(LIVE, "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            request = row["request"] or {}
            form = (request.get("output_config") or {}).get("format") or request.get("output_format")
            response = row["response"]
            if row["status"] != 200 or not form or not isinstance(response, dict):
                continue
            if response.get("type") != "message" or response.get("stop_reason") != "end_turn":
                continue
            value = json.loads(text_of(Message.model_validate(response)))
            required = form.get("schema", {}).get("required", [])
            assert isinstance(value, dict) and set(required) <= set(value), row["source"]
            answered += 1
    assert answered >= 20
