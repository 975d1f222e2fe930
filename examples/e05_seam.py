"""Idea 5, the LLM seam (build vs buy): one agent, three models behind it, no change to the agent.

The loop knows one thing about the model: `LLM.create(request) -> Message`
(`agent/llm.py`). So the agent of e01, built by the very same `make_agent(llm)`,
runs here against:

1. `ScriptedLLM` (`agent/testing/scripted.py`): an in-process fake that answers from a
   two-entry script. No HTTP, no server: the fastest test of your own loop logic.
2. The real SDK (`AnthropicLLM`, the official `anthropic` client, HTTP and all)
   pointed at the local strict simulator (`agent/testing/simulator.py`), which
   rejects exactly what the API rejects; or, with `--replay`, at a recorded cassette.
3. The real SDK against the real API, when `ANTHROPIC_API_KEY` is set.

Building your own transport means writing one method; buying means `AnthropicLLM()`.
Either way the agent does not know which it got.

What to look for in the output: the `1/2 scripted` line gives the same answer as
the run that follows it, and both took two model calls and one tool call.

    python -m examples.e05_seam            # scripted fake, then the SDK on the simulator
    python -m examples.e05_seam --replay   # scripted fake, then the SDK on the cassette
    ANTHROPIC_API_KEY=... python -m examples.e05_seam   # scripted fake, then the real API
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent import RunResult
from agent.testing.policies import arithmetic, latest_results
from agent.testing.scripted import ScriptedLLM, reply, tool_use
from examples._runner import Example, main
from examples.e01_loop import make_agent  # the agent of e01, unchanged

PROMPT = "What is 123456 × 789?"


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


def run_scripted() -> tuple[RunResult, ScriptedLLM]:
    llm = scripted_model()
    return make_agent(llm).run(PROMPT), llm


def prelude(say: Callable[[str], None]) -> None:
    result, llm = run_scripted()
    say(f"1/2 scripted: ScriptedLLM, in-process, no HTTP: {len(llm.requests)} calls, answer: {result.text}")
    say("2/2 the same make_agent(llm), now with the official SDK underneath:")


def policy(body: dict[str, Any]) -> Any:
    """What the simulator answers with: the same two steps, decided from the request."""
    return arithmetic(body)


EXAMPLE = Example(name="e05_seam", prompt=PROMPT, make_agent=make_agent, policy=policy, prelude=prelude)

if __name__ == "__main__":
    raise SystemExit(main(EXAMPLE))
