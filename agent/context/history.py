"""The history policy of one step: prune, then compact if still too big, then note memory.

Each piece is a pure function in its own module (`prune`, `compact`, `thinking`,
`memory`); this is where an `Agent`'s options pick their arguments. The summarizer's
call is a real model call, so it is budget-checked first and its usage is recorded
with `purpose="summary"`: compaction is never free, and the run's cost says so. A
summary cut off by `max_tokens` is refused (the compaction falls back to pruning):
half a handover note reads as a whole one.

On models that bind thinking to its prefix, the strategy (`agent.context.thinking`)
decides when pruning may run ("append_only": only with a compaction) and removes
the thinking blocks a rewrite has invalidated, so no request fails its prefix check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agent.budget import check_budgets
from agent.context.compact import SUMMARY_PROMPT, fit_context, summary_request
from agent.context.diet import store_for
from agent.context.prune import artifact_pointers, policies, prune
from agent.context.report import report_compaction, report_prune
from agent.context.thinking import first_rewrite, strip_thinking_from
from agent.context.tokens import request_tokens
from agent.llm import TokenCounter
from agent.memory import with_memory_note
from agent.messages import Msg, text_of
from agent.models import ModelInfo
from agent.usage import Usage

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent.loop import Agent
    from agent.state import RunState

__all__ = ["SummaryCutOff", "shrink_history"]


class SummaryCutOff(RuntimeError):
    """The summarizer stopped on `max_tokens`: its note is incomplete and is not used."""


def _can_turn_thinking_off(info: ModelInfo | None) -> bool:
    """A summary needs no reasoning budget; turn thinking off where the model allows it."""
    return info is not None and info.thinks_by_default and "disabled" in info.thinking_types


def shrink_history(agent: Agent, state: RunState) -> list[Msg]:
    """The history to send this step, as a new list (`state.messages` is not edited)."""
    irreversible, protected = policies(agent.registry)
    pointer = artifact_pointers(store_for(agent, state))
    strategy = agent.history_strategy()
    messages = list(state.messages)
    events, estimate = agent.on_event, state.calibration.estimate
    if strategy != "append_only":  # append-only prunes only when it compacts (in fit_context)
        pruned = prune(
            messages, agent.keep_recent, batch=agent.prune_batch, protected=protected, pointer_for=pointer
        )
        why = f"older than the newest {agent.keep_recent} result turns"
        report_prune(events, state.step, messages, pruned, estimate, why)
        messages = pruned
    if agent.max_context_tokens:
        counter = agent.llm if agent.exact_token_count and isinstance(agent.llm, TokenCounter) else None
        near = int(agent.max_context_tokens * (1 - agent.compact_margin) * 0.8)

        def measure(candidate: Sequence[Msg]) -> int:
            request = agent.build_request(state.with_messages(list(candidate)))
            return request_tokens(request, state.calibration, counter, exact_from=near)

        summaries: list[str] = []
        done = fit_context(
            messages,
            _summarizer(agent, state, summaries),
            limit=agent.max_context_tokens,
            margin=agent.compact_margin,
            measure=measure,
            size=state.calibration.estimate,
            irreversible=irreversible,
            protected=protected,
            keep_recent=agent.keep_recent,
            pointer_for=pointer,
            request=state.prompt or None,
        )
        report_compaction(events, state.step, messages, done, summaries[-1] if summaries else "", estimate)
        messages = done.messages
    if (
        strategy in ("strip", "append_only")
        and (start := first_rewrite(state.messages, messages)) is not None
    ):
        messages = strip_thinking_from(messages, start)
    return with_memory_note(messages, agent.memory) if agent.memory is not None else messages


def _summarizer(agent: Agent, state: RunState, written: list[str]) -> Callable[[str], str]:
    """One tool-less, budget-checked call per summary; its cost lands in the run's usage.
    Each summary used is appended to `written` (for the `compact` event)."""
    log_path = Path(agent.usage_log) if agent.usage_log else None

    def summarize(transcript: str) -> str:
        model = agent.summarizer_model or agent.model
        request = summary_request(
            transcript,
            model=model,
            max_tokens=agent.output_budget(),
            prompt=agent.summary_prompt or SUMMARY_PROMPT,
            thinking_off=_can_turn_thinking_off(agent.models.lookup(model)),
        )
        check_budgets(agent, request, state)
        response = agent.llm.create(request)
        usage = Usage.from_message(state.step, response, models=agent.models, model=request["model"])
        state.usage.add(replace(usage, purpose="summary"), log_path)
        state.session.record_usage(state)  # paid for: durable now, not at the next turn
        if response.stop_reason == "max_tokens":
            raise SummaryCutOff(f"the summary was cut off by max_tokens={request['max_tokens']:,}")
        summary = text_of(response).strip()
        written.append(summary)
        return summary

    return summarize
