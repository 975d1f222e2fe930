"""The history policy of one step: prune, then compact if still too big, then note memory.

Each piece is a pure function in its own module (`prune`, `compact`, `thinking`,
`memory`); `shrink` strings them together from a `HistoryPolicy` and three functions
the caller hands in (how to measure a request, how to size one message, how to
summarise a transcript). It never sees the `Agent`.

The summarizer's call is a real model call (`agent.accounting.summarizer`): budget-checked
first, its usage recorded with `purpose="summary"`. A summary cut off by `max_tokens` is
refused (`SummaryCutOff`: the compaction falls back to pruning): half a handover note
reads as a whole one.

On models that bind thinking to its prefix, the strategy (`agent.context.thinking`)
decides when pruning may run ("append_only": only with a compaction) and removes the
thinking blocks a rewrite has invalidated, so no request fails its prefix check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.context.prune import artifact_pointers, prune
from agent.context.report import report_compaction, report_prune
from agent.context.thinking import first_rewrite, strip_thinking_from
from agent.errors import AgentError
from agent.messages import Msg
from agent.models import ModelTable

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore
    from agent.context.tokens import Calibration
    from agent.events import Event
    from agent.memory import Memory

__all__ = ["HistoryPolicy", "SummaryCutOff", "shrink"]


class SummaryCutOff(AgentError):
    """The summarizer stopped on `max_tokens`: its note is incomplete and is not used."""


@dataclass(frozen=True)
class HistoryPolicy:
    """What `shrink` needs to know of the agent's options and tools."""

    model: str
    models: ModelTable
    strategy: str
    keep_recent: int
    prune_batch: int
    max_context_tokens: int
    compact_margin: float
    summarizer_model: str
    summary_prompt: str | None
    max_tokens: int
    memory: Memory | None
    on_event: Callable[[Event], None] | None
    irreversible: frozenset[str]
    protected: frozenset[str]
    """Never pruned: `never_prune` or `irreversible` tools."""
    artifacts: bool


def shrink(
    sent: Sequence[Msg],
    step: int,
    policy: HistoryPolicy,
    *,
    calibration: Calibration,
    measure: Callable[[Sequence[Msg]], int],
    summarize: Callable[[str], str],
    store: ArtifactStore | None,
    prompt: str = "",
) -> list[Msg]:
    """The history to send at `step`, as a new list (`sent`, the history so far, is not
    edited). `measure` sizes the request a candidate history would make; `summarize` writes
    a compaction summary of a transcript; `prompt` is the run's request, quoted by it."""
    pointer = artifact_pointers(store)
    protected = policy.protected.__contains__
    messages = list(sent)
    events, estimate = policy.on_event, calibration.estimate
    if policy.strategy != "append_only":  # append-only prunes only when it compacts (in fit_context)
        pruned = prune(
            messages, policy.keep_recent, batch=policy.prune_batch, protected=protected, pointer_for=pointer
        )
        why = f"older than the newest {policy.keep_recent} result turns"
        report_prune(events, step, messages, pruned, estimate, why)
        messages = pruned
    if policy.max_context_tokens:
        from agent.context.compact import fit_context  # compaction is loaded by the runs that use it

        summaries: list[str] = []

        def summarize_noted(transcript: str) -> str:
            summaries.append(summarize(transcript))
            return summaries[-1]

        done = fit_context(
            messages,
            summarize_noted,
            limit=policy.max_context_tokens,
            margin=policy.compact_margin,
            measure=measure,
            size=calibration.estimate,
            irreversible=policy.irreversible.__contains__,
            protected=protected,
            keep_recent=policy.keep_recent,
            pointer_for=pointer,
            request=prompt or None,
        )
        report_compaction(events, step, messages, done, summaries[-1] if summaries else "", estimate)
        messages = done.messages
    if policy.strategy in ("strip", "append_only") and (start := first_rewrite(sent, messages)) is not None:
        messages = strip_thinking_from(messages, start)
    if policy.memory is not None:
        from agent.memory import with_memory_note

        messages = with_memory_note(messages, policy.memory)
    return messages
