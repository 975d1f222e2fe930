"""Idea 1, the loop: call the model, run the tool it asks for, send the result back, repeat.

The model is asked "What is 123456 × 789?". It does not guess: it calls the
`calculator` tool, the loop (`agent/loop.py`) runs the tool and sends the result
back in a `tool_result`, and the model answers from it.

What to look for in the output: two `[step N]` lines (two model calls), `tools=calculator`
on the first, and `sent=` growing because each request resends the whole history.

    python -m examples.e01_loop            # offline on the local simulator (no key needed)
    python -m examples.e01_loop --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.e01_loop   # the same agent, live
"""

from __future__ import annotations

from agent import LLM, Agent
from agent.testing.policies import arithmetic
from examples._runner import Example, main
from tools import calculator

SYSTEM = (
    "You are a careful assistant. Use the calculator for every arithmetic step; never compute in your head."
)


def make_agent(llm: LLM) -> Agent:
    return Agent(system=SYSTEM, tools=[calculator], llm=llm, max_steps=5)


EXAMPLE = Example(name="e01_loop", prompt="What is 123456 × 789?", make_agent=make_agent, policy=arithmetic)

if __name__ == "__main__":
    raise SystemExit(main(EXAMPLE))
