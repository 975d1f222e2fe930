"""Lesson 6, prompt caching and effort: from step 2 on, the prompt is mostly read back from the cache.

A support agent with a long house handbook as its system prompt looks up four
policy sections, one per step, then answers. Every request resends the tools, the
handbook and the whole history; caching makes that resend cheap:

* a breakpoint at the end of the system prompt caches tools + handbook (step 1 writes it);
* a breakpoint on the newest message caches the history as it grows, and one on the
  end of the previous request reads back what the last step wrote;
* so at step N the prompt is `read` (billed 0.1x) up to the end of step N-1, plus a
  small `write` (billed 1.25x) for what is new. `uncached` stays near 0.

Effort (`effort="low"`, sent as `output_config.effort`) says how hard the model
should work: low for these lookups. It is part of the cached prefix's key: change it
between steps (override `choose_effort(state)`) and the cached *messages* are lost
(tools and system stay cached), so pick one per task, not per step.

What to look for in the output (the usage table): `read=` is 0 at step 1 and then covers
the previous step's whole prompt; `step_hit=` is this call's share of prompt tokens read from the
cache, `run_hit=` the share over the run so far; `effort=low` on every line.
Nothing volatile (a date, a request id) may go into the system prompt: one changed
byte there and every read drops to 0 (the prefix guard in `agent/context/cache.py`
logs why).

    python -m examples.e06_caching            # offline, on the local simulator
    python -m examples.e06_caching --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.e06_caching   # live
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent import Agent, RunResult, tool
from agent.testing.policies import call, step_number
from examples._course import Course
from examples._handbook import SECTIONS, SYSTEM

EXAMPLE = "e06_caching"  # its cassette: cassettes/examples/e06_caching.yaml
TOPICS = ("refunds", "shipping", "warranty", "privacy")
PROMPT = "A customer's blender broke after 40 days. What are their options, and what do we need from them?"


@tool
def lookup_policy(topic: str) -> str:
    """The current text of one policy section.

    Args:
        topic: one of refunds, shipping, warranty, privacy.
    """
    if topic not in SECTIONS:
        raise ValueError(f"unknown topic {topic!r}; known: {', '.join(SECTIONS)}")
    return f"[{topic}] {SECTIONS[topic]}"


def model(body: dict[str, Any]) -> Any:
    """The scripted model: looks the sections up in order, one per step, then answers from them."""
    step = step_number(body)
    if step <= len(TOPICS):
        topic = TOPICS[step - 1]
        return [f"Checking the {topic} policy.", call("lookup_policy", topic=topic)]
    return (
        "At 40 days the refund window (30 days) has passed, "
        "so the blender is repaired under the two-year motor warranty, or exchanged if the defect "
        "returns within 90 days of the repair. Next step: please send the order id, a photo of the "
        "defect and the serial number."
    )


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    with course.llm(model) as llm:
        agent = Agent(
            llm=llm,
            system=SYSTEM,  # the long handbook: cached once, read back on every later step
            tools=[lookup_policy],
            effort="low",  # the same on every step: a change of effort would miss the cached messages
            max_steps=len(TOPICS) + 2,
            keep_recent=0,  # no pruning here: every step is a plain step, the prefix never moves
            artifacts_dir=None,
            on_event=course.show,
        )
        result = agent.run(PROMPT)
    print(f"answer: {result.text}")
    course.usage(result.usage)  # read= / write= / uncached= per step, and the hit rates
    return result


if __name__ == "__main__":
    main()
