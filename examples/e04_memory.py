"""Lesson 4, memory: a fact saved outside the history survives the compaction that loses it.

Builds on e03 (compaction). An analyst reads twelve long interview notes, one per
step, in a small window (`max_context_tokens=4,000`), so the head of the history is
folded into a summary three times. The client's budget is on page 3. The model saves it
with `memory_write` the moment it reads it; the (scripted, deliberately vague)
summarizer leaves it out. At the end the model reads it back with `memory_read`.

The memory lives outside the history (`agent/memory.py`): compaction cannot touch
it, and its key list rides on the newest user turn (`[memory keys: budget]`), never
in the system prompt, so a write does not break the prompt cache.

What to look for in the output:

* `compacted:` (three times) and its summary: no figure in it, and page 3 is folded away;
* in the usage table, `tools=memory_write,fetch_notes` at step 4 (the fact is saved as soon
  as it is read) and `tools=memory_read` near the end (`-v 2` shows what it returned);
* the answer quotes the budget exactly, read back from memory.

    python -m examples.e04_memory            # offline, on the local simulator
    python -m examples.e04_memory --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.e04_memory   # live
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent import Agent, RunResult, tool
from agent.memory import Memory
from agent.testing.policies import call, latest_results
from examples._course import Course
from tools import memory_tools

EXAMPLE = "e04_memory"  # its cassette: cassettes/examples/e04_memory.yaml
PAGES = 12
BUDGET_PAGE = 3
BUDGET = "₩48,500,000 for the pilot, approved by the CFO on 2026-02-03"
PROMPT = f"Read all {PAGES} pages of the Daon Logistics interview notes, then tell me the client's budget."
SYSTEM = (
    "You are a research analyst. Save every figure the user asks about with memory_write as soon as "
    "you see it: earlier pages will be summarized away."
)


@tool(compress=False)  # the notes are read whole, so that the window fills up
def fetch_notes(page: int) -> str:
    """One page of the interview notes.

    Args:
        page: page number, from 1.
    """
    lines = [f"Page {page}. Interviewer: Kim Minji. Client: Daon Logistics."]
    lines += [
        f"Q{i}: How does shift {i} hand over pallets at hub {page}? A: By scanner, then paper."
        for i in range(40)
    ]
    if page == BUDGET_PAGE:
        lines.insert(20, f"BUDGET: {BUDGET}")
    return "\n".join(lines)


def model(body: dict[str, Any]) -> Any:
    """The scripted analyst: reads page after page, saves the budget, reads it back at the end."""
    results = latest_results(body)
    if not results:
        return ["Starting with page 1.", call("fetch_notes", page=1)]
    last = results[-1]
    if last.name == "memory_read":
        return f"The client's budget is {last.text} (read back from memory; the notes were summarized)."
    page = int(last.input["page"])
    found = [line[len("BUDGET: ") :] for line in last.text.splitlines() if line.startswith("BUDGET: ")]
    after = [call("fetch_notes", page=page + 1)] if page < PAGES else [call("memory_read", key="budget")]
    if found:
        return ["The budget is here; saving it.", call("memory_write", key="budget", value=found[0]), *after]
    return [f"Page {page} read.", *after]


def summarizer(body: dict[str, Any]) -> str:
    """The scripted summary call: a vague handover note, as real summaries can be: no figure."""
    return (
        "1. Request: read the notes, report the budget.\n2. Some pages read.\n3. none\n4. none\n5. The rest."
    )


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    memory = Memory()  # outside the history: compaction cannot touch it
    with course.llm(model, summarizer=summarizer, moves_cache_prefix=True) as llm:
        agent = Agent(
            llm=llm,
            system=SYSTEM,
            tools=[fetch_notes, *memory_tools(memory)],  # memory_write, memory_read, ...
            memory=memory,  # its keys ride on the newest user turn
            max_steps=PAGES + 6,
            max_context_tokens=4_000,  # a small window: the head is folded three times
            keep_recent=2,
            prune_batch=4,  # pruning moves slowly here, so the window fills and compaction folds it
            artifacts_dir=None,
            on_event=course.show,
        )
        result = agent.run(PROMPT)
    print(f"answer: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
