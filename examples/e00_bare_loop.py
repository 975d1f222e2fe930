"""Lesson 0, an agent is a while loop: call the model, run the tools it asks for, repeat.

No framework: the official `anthropic` SDK and a `while` loop. The tool is a plain
function plus the JSON schema the model reads. Each turn: send the whole conversation;
if the model asked for tools, run them, append its turn as it came and then ONE user
turn holding every `tool_result` (in call order); stop when it says `end_turn`.

What to look for in the output: two `[step N]` lines, the first with `stop=tool_use`
and the second with `stop=end_turn`, and `in=` growing because each call resends
everything so far; with `-v 2`, the call and its result. e01 is this loop, in `Agent.run`.

    python -m examples.e00_bare_loop            # offline, on the local simulator
    python -m examples.e00_bare_loop --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.e00_bare_loop   # live
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from anthropic.types import ToolParam

from agent.testing.policies import call, latest_results, prompt_text, step_number
from examples._course import Course

EXAMPLE = "e00_bare_loop"  # its cassette: cassettes/examples/e00_bare_loop.yaml
PROMPT = "What is 123456 × 789?"
SYSTEM = (
    "You are a careful assistant. Use the calculator for every arithmetic step; never compute in your head."
)
CALCULATOR: ToolParam = {  # the tool as the model reads it: name, description, JSON schema
    "name": "calculator",
    "description": "Exact arithmetic on two numbers; use it instead of computing in your head.",
    "input_schema": {
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "op": {"enum": ["+", "-", "*", "/"]},
            "b": {"type": "number"},
        },
        "required": ["a", "op", "b"],
    },
}


def calculator(a: float, op: str, b: float) -> str:
    """The tool itself: what runs when the model asks for `calculator`."""
    return str(a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a / b)


def model(body: dict[str, Any]) -> Any:
    """The scripted model (offline only): ask the calculator, then state what it returned."""
    if step_number(body) == 1:
        a, b = re.findall(r"\d+", prompt_text(body))
        ask = call("calculator", a=int(a), op="*", b=int(b))
        return [f"I'll compute {a} × {b} with the calculator.", ask]
    result = latest_results(body)[0]
    return f"{result.input['a']} {result.input['op']} {result.input['b']} = {int(result.text):,}"


def main(argv: Sequence[str] | None = None) -> str:
    course = Course(EXAMPLE, argv)
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    step = tokens_in = tokens_out = 0
    with course.client(model) as client:
        while True:
            step += 1
            reply = client.messages.create(
                model="claude-opus-5", max_tokens=4096, system=SYSTEM, tools=[CALCULATOR], messages=messages
            )
            tokens_in += reply.usage.input_tokens
            tokens_out += reply.usage.output_tokens
            course.say(
                f"[step {step}] in={reply.usage.input_tokens:,} out={reply.usage.output_tokens:,} "
                f"stop={reply.stop_reason}",
                1,
            )
            messages.append({"role": "assistant", "content": reply.content})  # as it came
            if reply.stop_reason != "tool_use":
                break
            results = []
            for block in reply.content:
                if block.type == "tool_use":
                    output = calculator(**block.input)  # type: ignore[arg-type]
                    course.say(f"  [step {step}] -> {block.name} {json.dumps(block.input)}", 2)
                    course.say(f"  [step {step}] <- {block.name}: {output}", 2)
                    results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
            messages.append({"role": "user", "content": results})  # ONE turn, every result
    answer = "".join(block.text for block in reply.content if block.type == "text")
    print(f"answer: {answer}")
    print(f"total: {step} calls, in={tokens_in:,} out={tokens_out:,} tokens")
    return answer


if __name__ == "__main__":
    main()
