"""Lesson 8, typed results: the final answer as a validated pydantic object, not text to parse.

`Output(Invoice)` (`agent/ext/output/`) is an extension on the seam of e05's lesson: its
`request` hook sends `output_config.format` with Invoice's JSON schema (made acceptable to
the API by the SDK's own transform: `additionalProperties: false` on every object, the
keywords the API does not take moved into the descriptions), and its `final_answer` hook
validates the model's last reply into `result.output`. Tools run first, as in any run.

The scripted model calls the calculator for the total, then slips: it writes the currency as
"euros", which the schema cannot stop (the pattern `^[A-Z]{3}$` is only in the description),
but pydantic does. The answer is sent back once, as a user turn that says what failed, and
the model fixes it in a third step, a step like any other under `max_steps` and the budgets.
A second failure would raise `OutputInvalid` with the partial result.

What to look for in the output: `sent back:` naming `currency` and the pattern, then
`answer:` with `currency='EUR'` and `total=300.0` as a typed `Invoice`, and three model calls
in the usage table (the tool call, the slip, the fix).

    python -m examples.e08_typed_output            # offline on the local simulator
    python -m examples.e08_typed_output --replay   # replay the recorded cassette
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from agent import Agent, RunResult
from agent.ext.output import Output
from agent.testing.policies import call, latest_results, step_number
from examples._course import Course
from tools import calculator

EXAMPLE = "e08_typed_output"  # its cassette: cassettes/examples/e08_typed_output.yaml
PROMPT = "Bill ACME for 2.5 hours of support at 120 EUR an hour."
SYSTEM = "You write invoices. Use the calculator for every total."


class Invoice(BaseModel):
    """What the program wants back: fields, not prose."""

    customer: str
    hours: float = Field(gt=0)
    rate: float = Field(gt=0, description="price of one hour")
    currency: str = Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code")
    total: float


def model(body: dict[str, Any]) -> Any:
    """The scripted model: the calculator for the total, an invoice with a slip, then the fix."""
    step = step_number(body)
    if step == 1:
        return ["I'll compute the total first.", call("calculator", a=2.5, op="*", b=120)]
    if step == 2:
        total = float(latest_results(body)[0].text)
        invoice = {"customer": "ACME", "hours": 2.5, "rate": 120, "currency": "euros", "total": total}
        return json.dumps(invoice)  # "euros": the pattern is in the description, not enforced
    return json.dumps({"customer": "ACME", "hours": 2.5, "rate": 120, "currency": "EUR", "total": 300})


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    with course.llm(model) as llm:
        agent = Agent(
            system=SYSTEM,
            tools=[calculator],
            llm=llm,
            max_steps=5,  # the retry is a step: it counts here too
            extensions=[Output(Invoice)],
            on_event=course.show,
        )
        result = agent.run(PROMPT)
    added = [m for m in result.messages[1:] if m["role"] == "user"]  # tool results, and what was sent back
    for text in (b["text"] for m in added for b in m["content"] if b["type"] == "text"):
        print(f"sent back: {text}")
    invoice = Output(Invoice).of(result)  # result.output, typed as an Invoice
    print(f"answer: {invoice!r}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
