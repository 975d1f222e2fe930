"""Lesson 5, the LLM seam (build vs buy): one agent, three models behind it, no change to the agent.

The loop knows one thing about the model: `LLM.create(request) -> Message` (`agent/llm.py`).
So the agent of e01, built here by one function, `make_agent(llm)`, runs against:

1. `ScriptedLLM` (`agent/testing/scripted.py`): an in-process fake that answers from a
   two-entry script. No HTTP, no server: the fastest test of your own loop logic.
2. The real SDK (`AnthropicLLM`, the official `anthropic` client, HTTP and all) pointed at
   the local strict simulator (`agent/testing/simulator.py`), which rejects exactly what
   the API rejects, answering with e01's scripted model; or, with `--replay`, at a cassette.
3. The real SDK against the real API, when `ANTHROPIC_API_KEY` is set.

Building your own transport means writing one method; buying means `AnthropicLLM()`.
Either way the agent does not know which it got.

What to look for in the output: the `1/2 ScriptedLLM` line gives the same answer as the
`2/2` run after it, and both took two model calls and one tool call.

    python -m examples.e05_seam            # scripted fake, then the SDK on the simulator
    python -m examples.e05_seam --replay   # scripted fake, then the SDK on the cassette
    ANTHROPIC_API_KEY=... python -m examples.e05_seam   # scripted fake, then the real API
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent import LLM, Agent, RunResult
from agent.testing import ScriptedLLM, reply, tool_use
from agent.testing.policies import latest_results
from examples._course import Course
from examples.e01_loop import PROMPT, SYSTEM, model
from tools import calculator

EXAMPLE = "e05_seam"  # its cassette: cassettes/examples/e05_seam.yaml


def make_agent(llm: LLM, **printing: Any) -> Agent:
    """The agent of e01 around whichever `LLM` it is given."""
    return Agent(system=SYSTEM, tools=[calculator], llm=llm, max_steps=5, **printing)


def scripted_model() -> ScriptedLLM:
    """The whole model, as a script: call the calculator, then state what it returned."""
    return ScriptedLLM(
        [
            reply(
                "I'll multiply with the calculator.",
                tool_use("calculator", {"a": 123456, "op": "*", "b": 789}),
            ),
            lambda request: reply(f"123456 * 789 = {int(latest_results(request)[-1].text):,}"),
        ]
    )


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    fake = scripted_model()
    scripted = make_agent(fake).run(PROMPT)
    print(f"1/2 ScriptedLLM, in-process, no HTTP: {len(fake.requests)} calls, answer: {scripted.text}")
    with course.llm(model) as llm:  # e01's scripted model, behind the simulator's HTTP
        print(f"2/2 the same make_agent(llm), now on {type(llm).__name__} (the official SDK):")
        agent = make_agent(llm, on_event=course.show)
        result = agent.run(PROMPT)
    print(f"answer: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
