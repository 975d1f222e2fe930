"""Lesson 9, sub-agents: an agent as another agent's tool, so the log reading stays out of the lead's window.

An incident review needs one line out of a 1,500-line log. The lead could read the log itself,
and resend what is left of it on every later step. Instead it gets a tool, `read_logs(task)`,
that is another `Agent` (`agent.ext.subagents.SubAgent`): the reader, with its own system
prompt, tool and context window, reads the log and answers with its findings, which come back
as an ordinary tool result. Its model calls are on the lead's bill, under the lead's budget
(`max_cost_usd` covers both), and its whole conversation is kept as an artifact the lead can
read back. Both models are scripted below, in plain sight; one simulator plays both, telling
them apart by their system prompts.

What to look for in the output: the reader's findings in the lead's answer; the delegation's
last line (`[sub-agent read_logs: 2 model calls, ...; full transcript: artifact:...]`); in the
usage table, the reader's two calls booked between the lead's, marked `(subagent:read_logs)`:
the second reads the whole log (~16,000 tokens), while each of the lead's prompts stays under
500; and the transcript, read back from the artifact store.

    python -m examples.e09_sub_agents            # the local strict simulator (real HTTP)
    python -m examples.e09_sub_agents --replay   # the recorded cassette, no server at all
    ANTHROPIC_API_KEY=... python -m examples.e09_sub_agents   # the real API
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

from agent import Agent, RunResult, tool
from agent.context.artifacts import find_pointer, read_artifact_text
from agent.ext.subagents import SubAgent
from agent.testing import call
from agent.testing.policies import latest_results, step_number
from examples._course import Course

EXAMPLE = "e09_sub_agents"  # its cassette: cassettes/examples/e09_sub_agents.yaml
LEAD = "You run incident reviews. Delegate reading logs; give the root cause in one line."
READER = "You read service logs and report only the lines that matter, in three lines at most."
PROMPT = "Checkout failed for 41 orders at 03:12 UTC. What happened?"
TASK = "Read the checkout log and report any ERROR around 03:12."


@tool(compress=False)  # a log is read whole: any line may be the one that matters
def read_log(service: str) -> str:
    """The whole log of one service, oldest line first.

    Args:
        service: the service, e.g. checkout.
    """
    lines = [f"03:{i // 60 % 60:02d}:{i % 60:02d} INFO {service} request ok id={i}" for i in range(1500)]
    lines[727] = f"03:12:07 ERROR {service} payment gateway timeout after 30000ms (stripe) orders=41"
    return "\n".join(lines)


def model(request: dict[str, Any]) -> Any:
    """Both models, scripted. The reader: read the log, then quote its ERROR line. The lead:
    delegate, then state the root cause from the findings."""
    system = request["system"][0]["text"]
    step, results = step_number(request), latest_results(request)
    if system == READER:
        if step == 1:
            return call("read_log", service="checkout")
        errors = [line for line in results[0].text.splitlines() if " ERROR " in line]
        return "Finding: " + (errors[0] if errors else "no ERROR line in the log.")
    if step == 1:
        return ["I'll have the log reader look.", call("read_logs", task=TASK)]
    return "Root cause: " + results[0].text.splitlines()[0].removeprefix("Finding: ")


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    two = course.llm(model, moves_cache_prefix=True)  # two agents' prefixes, one stream of calls
    with two as llm, tempfile.TemporaryDirectory() as artifacts:
        reader = Agent(system=READER, tools=[read_log], llm=llm, artifacts_dir=artifacts, max_steps=4)
        read_logs = SubAgent(
            reader, name="read_logs", description="Reads a service's logs; reports findings."
        )
        agent = Agent(
            system=LEAD,
            llm=llm,
            extensions=[read_logs],
            max_cost_usd=0.25,  # the lead's budget covers the reader's calls too
            artifacts_dir=artifacts,
            on_event=course.show,
        )
        result = agent.run(PROMPT)
        delegated = result.messages[2]["content"][0]["content"]  # the tool result the lead read
        print("the lead read:\n  " + delegated.replace("\n", "\n  "))
        transcript = find_pointer(delegated.rsplit("full transcript: ", 1)[-1])
        if transcript is not None:
            text, size = read_artifact_text(artifacts, transcript)
            calls = [line for line in text.splitlines() if line.startswith("-> ")]
            print(f"the transcript, read back ({size:,} bytes); its calls: {calls}")
    print(f"answer: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
