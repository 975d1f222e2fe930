"""Lesson 2, tools and a step budget: parallel calls, and a budget that stops a model that will not stop.

Builds on e01 (the loop). The agent has three tools: `calculator`, `word_count` and
`current_time` (on an injected, fixed clock, so every run and its cassette are
reproducible). The scripted model calls `word_count` and `current_time` in ONE turn (the
loop runs them in parallel and returns both results, in call order, in one user turn),
then the calculator, and then keeps "double-checking the time" forever. `max_steps=4` is
what ends it: the loop raises `StepBudgetExceeded` before a fifth call, and the partial
result (every step, its usage and the history) comes with the exception: the example
catches it and prints `stop.result` like any result.

What to look for in the output: `tools=word_count,current_time` on step 1 (two calls,
one turn; `-v 2` shows both results), then `stopped: max_steps=4`, the last text, and
the usage of all four steps, with exit code 0.

    python -m examples.e02_tools            # offline on the local simulator
    python -m examples.e02_tools --replay   # replay the recorded cassette
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from agent import Agent, RunResult, StepBudgetExceeded
from agent.testing.policies import call, latest_results, step_number
from examples._course import Course
from tools import calculator, make_current_time, word_count

EXAMPLE = "e02_tools"  # its cassette: cassettes/examples/e02_tools.yaml
SENTENCE = "The quick brown fox jumps over the lazy dog"
PROMPT = (
    f"How many words are in '{SENTENCE}', what time is it, "
    "and how many seconds does reading it take at 3 words per second?"
)
SYSTEM = "You are a precise assistant. Use the tools for counting, time and arithmetic."
CLOCK = datetime(2026, 1, 15, 9, 30, tzinfo=timezone.utc)
MAX_STEPS = 4


def model(body: dict[str, Any]) -> Any:
    """The scripted model: count and check the clock at once, then divide, then never settle."""
    step = step_number(body)
    if step == 1:
        return [
            "I'll count the words and check the clock at the same time.",
            call("word_count", text=SENTENCE),
            call("current_time"),
        ]
    if step == 2:
        counted = next(r for r in latest_results(body) if r.name == "word_count")
        return ["Now the reading time.", call("calculator", a=json.loads(counted.text)["words"], op="/", b=3)]
    return ["Let me double-check the time before answering.", call("current_time")]


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    current_time = make_current_time(lambda: CLOCK)  # the tool, on a fixed clock
    with course.llm(model) as llm:
        agent = Agent(
            system=SYSTEM,
            tools=[calculator, word_count, current_time],
            llm=llm,
            max_steps=MAX_STEPS,  # the budget: at most four model calls
            on_event=course.show,
        )
        try:
            result = agent.run(PROMPT)
            print(f"answer: {result.text}")
        except StepBudgetExceeded as stop:  # the budget ended the run; the work so far comes with it
            assert stop.result is not None
            result = stop.result
            print(f"stopped: {stop}\nlast text: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
