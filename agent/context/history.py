"""The history policy of one step: prune, then compact if still too big, then note memory.

Each piece is a pure function in its own module (`prune`, `compact`, `memory`);
this is where an `Agent`'s options pick their arguments. The summarizer's call is
a real model call, so it is budget-checked first and its usage is recorded with
`purpose="summary"`: compaction is never free, and the run's cost says so.
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
from agent.context.tokens import request_tokens
from agent.llm import TokenCounter
from agent.memory import with_memory_note
from agent.messages import Msg, text_of
from agent.usage import Usage

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent.loop import Agent
    from agent.state import RunState

__all__ = ["shrink_history"]


def shrink_history(agent: Agent, state: RunState) -> list[Msg]:
    """The history to send this step, as a new list (`state.messages` is not edited)."""
    irreversible, protected = policies(agent.registry)
    pointer = artifact_pointers(store_for(agent, state))
    messages = prune(
        state.messages, agent.keep_recent, batch=agent.prune_batch, protected=protected, pointer_for=pointer
    )
    if agent.max_context_tokens:
        counter = agent.llm if agent.exact_token_count and isinstance(agent.llm, TokenCounter) else None
        near = int(agent.max_context_tokens * (1 - agent.compact_margin) * 0.8)

        def measure(candidate: Sequence[Msg]) -> int:
            request = agent.build_request(replace(state, messages=list(candidate)))
            return request_tokens(request, state.calibration, counter, exact_from=near)

        messages = fit_context(
            messages,
            _summarizer(agent, state),
            limit=agent.max_context_tokens,
            margin=agent.compact_margin,
            measure=measure,
            size=state.calibration.estimate,
            irreversible=irreversible,
            protected=protected,
            keep_recent=agent.keep_recent,
            pointer_for=pointer,
            request=state.prompt or None,
        ).messages
    return with_memory_note(messages, agent.memory) if agent.memory is not None else messages


def _summarizer(agent: Agent, state: RunState) -> Callable[[str], str]:
    """One tool-less, budget-checked call per summary; its cost lands in the run's usage."""
    log_path = Path(agent.usage_log) if agent.usage_log else None

    def summarize(transcript: str) -> str:
        request = summary_request(
            transcript,
            model=agent.summarizer_model or agent.model,
            max_tokens=agent.max_tokens,
            prompt=agent.summary_prompt or SUMMARY_PROMPT,
        )
        check_budgets(agent, request, state)
        response = agent.llm.create(request)
        usage = Usage.from_message(state.step, response, prices=agent.prices, model=request["model"])
        state.usage.add(replace(usage, purpose="summary"), log_path)
        state.session.record_usage(state)  # paid for: durable now, not at the next turn
        return text_of(response).strip()

    return summarize
