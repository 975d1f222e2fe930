"""A free-text summary as a model call of the run: budget-checked, billed, logged.

`agent.ext.summaries.summarize` decides what is free text and caches summaries; it takes
the model call as an argument so it stays pure. This module supplies that call for a live
run: each summary is budget-checked before it is sent (a budget that would break means no
summary, and the rule compressor takes over), billed in the run's usage with purpose
"tool_summary" and written to the usage log as soon as it is paid for, like compaction's
summaries.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.messages import text_of
from agent.state import check_budgets
from agent.usage import Usage

if TYPE_CHECKING:
    from agent.config import AgentConfig
    from agent.ext.summaries.summarize import Call
    from agent.llm import LLM
    from agent.state import RunState

__all__ = ["SUMMARY_MAX_TOKENS", "run_call"]

SUMMARY_MAX_TOKENS = 1024
"""Room for a summary of a 2,000-char budget with margin; a longer answer is cut by rules."""


def run_call(agent: AgentConfig, run: RunState, llm: LLM) -> Call:
    """The summary call for `run`: under the agent's budgets, billed to the run (and its usage log)."""
    log_path = Path(agent.usage_log) if agent.usage_log else None
    budgets = agent.budget_policy()

    def call(model: str, prompt: str) -> tuple[str, Usage]:
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": SUMMARY_MAX_TOKENS,
            "messages": [{"role": "user", "content": prompt}],
        }
        info = agent.models.lookup(model)
        if info is not None and info.thinks_by_default and "disabled" in info.thinking_types:
            request["thinking"] = {"type": "disabled"}  # a summary needs no reasoning budget
        check_budgets(request, run, budgets)  # raises: no summary, the rules take over
        response = llm.create(request)
        usage = Usage.from_message(run.step, response, models=agent.models, model=model)
        usage = replace(usage, purpose="tool_summary")
        run.usage.add(usage, log_path)
        if response.stop_reason == "max_tokens":
            return "", usage  # a cut-off summary would read as complete: the rules do better
        return text_of(response), usage

    return call
