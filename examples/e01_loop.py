"""Lesson 1, the loop as a library: e00's while loop, collapsed into `agent.run()`.

The same prompt, system prompt and calculator as e00, now an `Agent`. `agent.run(PROMPT)`
is e00's `while` loop (`Agent.loop` in `agent/loop.py`): call the model, run the tools it
asks for, send ONE user turn of results back, stop on `end_turn`. The tool's schema comes
from the function's signature and docstring (`@tool`, in `tools/basic.py`), and the run
comes back as a `RunResult`: `result.text` is the answer, `result.usage` one `Usage` per
model call (tokens: uncached, cache read, cache write, output; dollars).

What to look for in the output: the same two steps as e00, now as `result.usage` lines,
`tools=calculator` on the first; `prompt=` grows because each request resends the whole
history; with `-v 2`, the call's arguments and its result.

    python -m examples.e01_loop            # offline on the local simulator (no key needed)
    python -m examples.e01_loop --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.e01_loop   # the same agent, live
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agent import Agent, RunResult
from agent.testing.policies import call, latest_results, prompt_text, step_number
from examples._course import Course
from tools import calculator

EXAMPLE = "e01_loop"  # its cassette: cassettes/examples/e01_loop.yaml
PROMPT = "What is 123456 × 789?"
SYSTEM = (
    "You are a careful assistant. Use the calculator for every arithmetic step; never compute in your head."
)


def model(body: dict[str, Any]) -> Any:
    """The scripted model (offline only): ask the calculator, then state what it returned."""
    if step_number(body) == 1:
        a, b = re.findall(r"\d+", prompt_text(body))
        return [
            f"I'll compute {a} × {b} with the calculator.",
            call("calculator", a=int(a), op="*", b=int(b)),
        ]
    result = latest_results(body)[0]
    return f"{result.input['a']} {result.input['op']} {result.input['b']} = {int(result.text):,}"


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    with course.llm(model) as llm:
        agent = Agent(
            system=SYSTEM,
            tools=[calculator],
            llm=llm,
            max_steps=5,
            on_event=course.show,  # a callback for what happens during the run (prunes, ...)
        )
        result = agent.run(PROMPT)  # the whole loop of e00
    print(f"answer: {result.text}")
    course.usage(result.usage)  # one line per model call, then the totals
    return result


if __name__ == "__main__":
    main()
