"""The diet's free-text summaries (`summarize_with=`) as model calls of the run.

`agent.context.summarize` decides what is free text and caches summaries; it takes the
model call as an argument so it stays pure. This module supplies that call for a live
run: each summary is budget-checked before it is sent (a budget that would break means
no summary, and the rule compressor takes over), billed in the run's usage with purpose
"tool_summary", written to the usage log and recorded in the session as soon as it is
paid for, like compaction's summaries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.budget import check_budgets
from agent.context.summarize import summarize_free_text
from agent.messages import text_of
from agent.usage import Usage

if TYPE_CHECKING:
    from agent.loop import Agent
    from agent.state import RunState

__all__ = ["SUMMARY_MAX_TOKENS", "Summarize", "free_text_summarizer"]

SUMMARY_MAX_TOKENS = 1024
"""Room for a summary of a 2,000-char budget with margin; a longer answer is cut by rules."""

Summarize = Callable[[str, int, "str | None"], "str | None"]
"""`summarize(full text, budget, pointer)`: the text the model reads, or None for the rules."""


def free_text_summarizer(agent: Agent, state: RunState) -> Summarize | None:
    """The run's summarizer, or None when `summarize_with` is not set."""
    model = agent.summarize_with
    if model is None:
        return None
    log_path = Path(agent.usage_log) if agent.usage_log else None
    info = agent.models.lookup(model)

    def call(model: str, prompt: str) -> tuple[str, Any]:
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": SUMMARY_MAX_TOKENS,
            "messages": [{"role": "user", "content": prompt}],
        }
        if info is not None and info.thinks_by_default and "disabled" in info.thinking_types:
            request["thinking"] = {"type": "disabled"}  # a summary needs no reasoning budget
        check_budgets(agent, request, state)
        response = agent.llm.create(request)
        usage = Usage.from_message(state.step, response, models=agent.models, model=model)
        state.usage.add(replace(usage, purpose="tool_summary"), log_path)
        state.session.record_usage(state)
        if response.stop_reason == "max_tokens":
            return "", usage  # a cut-off summary would read as complete: the rules do better
        return text_of(response), usage

    def summarize(text: str, budget: int, pointer: str | None) -> str | None:
        found = summarize_free_text(
            text, budget, call=call, model=model, cache=agent.summaries, pointer=pointer
        )
        return found.text if found is not None else None

    return summarize
