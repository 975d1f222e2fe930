"""Thinking on Claude Opus 5: the model reasons before it answers, and you can watch it.

Opus 5 and later think unless told not to, and their thinking shares `max_tokens` with
the answer, so the agent's default output budget comes from the model table (32,000
tokens: room to think) and `AnthropicLLM` streams, so a long generation never hits an
HTTP timeout. This example asks for the thinking to be shown (`display: "summarized"`;
by default it comes back empty, with only a signature) and prints it as it streams,
through the `on_event` callback every `Agent` takes.

What to look for in the output:

* `[step N] thinking>` lines: the model's reasoning, streamed before each answer or tool
  call (so before that step's line in the usage table, and at `-v 2` before its tool call);
* the thinking block goes back to the model unchanged at the next step (its signature
  covers its text; on the 5.5 family, also everything before it);
* `out=` counts thinking and answer together: thinking is billed as output.

    python -m examples.thinking            # offline, on the local simulator
    python -m examples.thinking --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.thinking   # live, on claude-opus-5
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent import Agent, Event, RunResult
from agent.testing.policies import call, latest_results
from examples._course import Course
from tools import calculator

EXAMPLE = "thinking"  # its cassette: cassettes/examples/thinking.yaml
PROMPT = "A shop sells 1,296 mugs a month at 8,450 won each. What is a year's revenue?"


class ShowThinking:
    """An `on_event` callback: collects each step's streamed thinking and prints it whole;
    every other event goes on to `then` (the course's printer)."""

    def __init__(self, then: Callable[[Event], None]) -> None:
        self.parts: list[str] = []
        self.then = then

    def __call__(self, event: Event) -> None:
        self.then(event)
        if event.kind == "thinking":
            self.parts.append(event.text)
        elif event.kind == "step_end" and self.parts:
            print(f"[step {event.step}] thinking> {''.join(self.parts).strip()}")
            self.parts.clear()


def model(body: dict[str, Any]) -> Any:
    """The scripted model: thinks, multiplies twice with the calculator, then answers."""
    done = [r.text for r in latest_results(body) if r.name == "calculator"]
    steps = sum(m["role"] == "assistant" for m in body["messages"])
    if steps == 0:
        return [
            {"type": "thinking", "thinking": "Revenue is units x price x 12. Multiply in two steps."},
            "First the monthly revenue.",
            call("calculator", a=1296, op="*", b=8450),
        ]
    if steps == 1:
        return [
            {"type": "thinking", "thinking": f"Monthly revenue is {done[0]}; now times 12 months."},
            call("calculator", a=float(done[0]), op="*", b=12),
        ]
    return [
        {"type": "thinking", "thinking": "Both products are in; state the yearly figure with units."},
        f"A year's revenue is {done[0]} won.",
    ]


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    with course.llm(model) as llm:
        agent = Agent(
            llm=llm,
            model="claude-opus-5",
            system="You are a careful analyst. Use the calculator for every multiplication.",
            tools=[calculator],
            thinking={"type": "adaptive", "display": "summarized"},  # show it (by default: empty)
            on_event=ShowThinking(then=course.show),  # prints each step's thinking as the step ends
            max_steps=6,
        )
        result = agent.run(PROMPT)
    print(f"answer: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
