"""Summaries: a small model reads long free text for the agent, before the diet would cut it.

    Agent(..., extensions=[Summaries("claude-haiku-4-5")])

Why: the diet's rules keep what they can recognise (counts, error lines, ids, first and
last rows); a support ticket or a web page has no such anchors, and a head/tail cut keeps
the greeting and loses the request. For such a result, and only such a one
(`summarize.is_free_text`: never code, config, logs, traces, JSON, errors, a
`@tool(compress=False)` result or a whitelisted tool's), `Summaries` keeps the full text as
an artifact and gives the model a small model's summary that names it. Everything else,
and any summary that fails or that a budget refuses, is left to the core's diet.

The call is the run's (`calls.run_call`): budget-checked first against the agent's budgets,
billed with purpose "tool_summary" (usage log included), on the agent's `llm` unless one is
given. Summaries are cached by content within a run (`run.extras`), so the same page read
twice is paid for once. Rendering may now call a model, so the core renders results off
the event loop (`Agent.rendered`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.context.compressors.jsonish import dump_full
from agent.context.diet import store_full
from agent.ext.summaries.calls import run_call
from agent.ext.summaries.summarize import MIN_CHARS, SummaryCache, is_free_text, summarize_prose
from agent.extension import Extension

if TYPE_CHECKING:
    from agent.config import AgentConfig
    from agent.llm import LLM
    from agent.state import RunState
    from agent.tools import ToolOutcome

__all__ = ["Summaries", "SummaryCache", "is_free_text"]

KEY = "summaries"


class Summaries(Extension):
    """Long free-text results read as `model`'s summary, the full text behind its pointer."""

    def __init__(
        self, model: str = "claude-haiku-4-5", *, llm: LLM | None = None, min_chars: int = MIN_CHARS
    ) -> None:
        if not isinstance(model, str) or not model:
            raise TypeError(f"Summaries needs a model id, not {model!r}")
        self.model, self.llm, self.min_chars = model, llm, min_chars

    async def start(self, run: RunState) -> None:
        agent: AgentConfig = run.agent
        if agent.max_cost_usd is not None and agent.models.price(self.model) is None:
            price = f"models=MODELS.with_price({self.model!r}, ...)"
            raise ValueError(f"max_cost_usd needs a price for {self.model!r}: pass {price}")
        run.extras[KEY] = SummaryCache()

    def render(self, outcome: ToolOutcome, run: RunState) -> str | None:
        agent: AgentConfig = run.agent
        policy = agent.diet_policy(outcome)
        if not policy.on or outcome.is_error or not policy.compress or policy.keep is not None:
            return None  # sent whole, bounded, exact or whitelisted: the diet's own rules
        if not isinstance(outcome.value, str | bytes | bytearray | memoryview):
            return None  # structured: dumped as JSON, never free text (and not dumped twice)
        full, is_json = dump_full(outcome.value)
        prose = is_free_text(full, min_chars=self.min_chars) if len(full) > policy.threshold else None
        llm = self.llm or agent.llm  # a built agent always has one
        if prose is None or llm is None:
            return None
        store = agent.artifact_store(run)
        pointer = store_full(outcome, full, is_json, store) if len(full) >= policy.min_chars else None
        found = summarize_prose(
            prose,
            len(full),
            policy.threshold,
            call=run_call(agent, run, llm),
            model=self.model,
            cache=run.extras.setdefault(KEY, SummaryCache()),
            pointer=pointer,
        )
        return found.text if found is not None else None
