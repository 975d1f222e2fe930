"""Idea 2, tools and a step budget: parallel calls, and a budget that stops a model that will not stop.

Builds on e01 (the loop).
The agent has three tools: `calculator`, `word_count` and `current_time` (on an
injected, fixed clock, so every run and its cassette are reproducible). The
scripted model calls `word_count` and `current_time` in ONE turn (the loop runs
them in parallel and returns both results, in call order, in one user turn), then
the calculator, and then keeps "double-checking the time" forever. `max_steps=4`
is what ends it: the loop raises `StepBudgetExceeded` before a fifth call, and the
partial result (every step, its usage and the history) comes with the exception.

What to look for in the output: `tools=word_count,current_time` on step 1 (two calls,
one turn), then `stopped: max_steps=4` and the last text, with exit code 0.

    python -m examples.e02_tools            # offline on the local simulator
    python -m examples.e02_tools --replay   # replay the recorded cassette
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from agent import LLM, Agent
from agent.testing.policies import call, latest_results, step_number
from examples._runner import Example, main
from tools import calculator, make_current_time, word_count

SENTENCE = "The quick brown fox jumps over the lazy dog"
PROMPT = (
    f"How many words are in '{SENTENCE}', what time is it, "
    "and how many seconds does reading it take at 3 words per second?"
)
SYSTEM = "You are a precise assistant. Use the tools for counting, time and arithmetic."
CLOCK = datetime(2026, 1, 15, 9, 30, tzinfo=timezone.utc)
MAX_STEPS = 4


def make_agent(llm: LLM) -> Agent:
    current_time = make_current_time(lambda: CLOCK)
    return Agent(system=SYSTEM, tools=[calculator, word_count, current_time], llm=llm, max_steps=MAX_STEPS)


def policy(body: dict[str, Any]) -> Any:
    """Count and check the clock at once, then divide, then never settle."""
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


EXAMPLE = Example(name="e02_tools", prompt=PROMPT, make_agent=make_agent, policy=policy)

if __name__ == "__main__":
    raise SystemExit(main(EXAMPLE))
