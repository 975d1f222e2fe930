"""The history policy of one step: prune, then compact if still too big, then note memory.

`shrink` strings the pure pieces together from a `HistoryPolicy` and the caller's functions
(measure a request, summarise a transcript); it never sees the `Agent`. Nothing changes
silently (a developer who cannot see pruning cannot tell a cheap run from a forgetful one):
each change is one `on_event` event with the history's estimated tokens before and after.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agent.context.prune import _names_by_id, artifact_pointers, call_signature, is_stub, prune
from agent.context.thinking import first_rewrite, strip_thinking_from
from agent.errors import AgentError
from agent.events import Event, emit
from agent.messages import Msg, blocks, shared_length
from agent.models import ModelTable

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore
    from agent.context.compact import Compaction
    from agent.context.tokens import Calibration
    from agent.memory import Memory


__all__ = ["HistoryPolicy", "SummaryCutOff", "newly_pruned", "report_compaction", "report_prune", "shrink"]


Estimate = Callable[[Sequence[Msg]], int]


def newly_pruned(before: Sequence[Msg], after: Sequence[Msg]) -> tuple[str, ...]:
    """Each result stubbed in `after` but not in `before`, as its call (`fetch_orders(page=3)`).
    Pruning keeps positions and untouched messages, so they are compared by identity."""
    if type(before) is list and type(after) is list and shared_length(before, after) == len(before):
        return ()  # the common step: nothing changed (list comparisons, in C)
    found: list[str] = []
    changed = itertools.compress(range(len(after)), map(operator.is_not, before, after))  # skipped in C
    for i in changed:
        new_stubs = [
            now
            for was, now in zip(blocks(before[i]), blocks(after[i]), strict=False)
            if now.get("type") == "tool_result"
            and is_stub(now.get("content"))
            and not is_stub(was.get("content"))
        ]
        if not new_stubs:
            continue
        names = _names_by_id(after[i - 1 : i])  # a result's call is the turn before it
        if not all(str(b.get("tool_use_id", "")) in names for b in new_stubs):
            names = _names_by_id(after)  # a history that breaks the pairing rule: every turn is read
        for block in new_stubs:
            name, arguments = names.get(str(block.get("tool_use_id", "")), ("?", {}))
            found.append(call_signature(name, arguments))
    return tuple(found)


def report_prune(
    callback: Callable[[Event], None] | None,
    step: int,
    before: Sequence[Msg],
    after: Sequence[Msg],
    estimate: Estimate,
    why: str,
    size: Estimate | None = None,
) -> None:
    """One `prune` event when `after` stubbed results `before` had whole. `size` sizes all of
    `after` (a step that measures its request anyway passes that measure)."""
    if callback is None or before is after:
        return
    pruned = newly_pruned(before, after)
    if pruned:
        tokens = (size or estimate)(after)
        old, new = _changed(before, after)  # pruning keeps positions: only these were rewritten
        event = Event("prune", step, why, pruned=pruned, tokens_before=tokens - estimate(new) + estimate(old))
        emit(callback, _with_after(event, tokens))


def _changed(before: Sequence[Msg], after: Sequence[Msg]) -> tuple[list[Msg], list[Msg]]:
    """The messages at the positions where `after` holds a different message than `before`."""
    pairs = [(b, a) for b, a in zip(before, after, strict=True) if b is not a]
    return [b for b, _ in pairs], [a for _, a in pairs]


def report_compaction(
    callback: Callable[[Event], None] | None,
    step: int,
    before: Sequence[Msg],
    done: Compaction,
    summary: str,
    estimate: Estimate,
) -> None:
    """A `compact` event for a summary; a `prune` event for a compaction that pruned instead."""
    if callback is None or done.outcome == "skipped":
        return
    if done.outcome == "compacted":
        event = Event("compact", step, summary, folded=done.folded, tokens_before=estimate(before))
        emit(callback, _with_after(event, estimate(done.messages)))
        return
    report_prune(callback, step, before, done.messages, estimate, f"{done.outcome}: {done.detail}")


def _with_after(event: Event, tokens_after: int) -> Event:
    return replace(event, tokens_after=tokens_after)


class SummaryCutOff(AgentError):
    """The summarizer stopped on `max_tokens`: its note is incomplete and is not used."""


@dataclass(frozen=True)
class HistoryPolicy:
    """What `shrink` needs of the agent's options and tools."""

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
    cacheable: Callable[[Sequence[Msg]], bool] | None = None
    """With caching on: whether a request with this history is long enough to cache (`worth_pruning`)."""


ESTIMATE_MARGIN = 1.1
"""A prefix counts as cacheable from 10% over the minimum: estimates are off by a few percent,
and one just under the minimum is not cached at all."""


def worth_pruning(
    before: Sequence[Msg],
    after: Sequence[Msg],
    cacheable: Callable[[Sequence[Msg]], bool],
    measure: Callable[[Sequence[Msg]], int],
) -> bool:
    """Whether to send `after`, a pruning of `before`, when the prompt is cached.

    A batch that rewrites from below the model's cache minimum leaves nothing to read back: the
    whole prompt is written again. So it goes only when it is the last such (what it leaves, up to
    its last rewrite, is cacheable) or frees at least what it rewrites; past the minimum, always.
    """
    first = shared_length(before, after)
    if first >= len(before) or cacheable(before[:first]):
        return True
    last = max(i for i in range(first, len(after)) if after[i] is not before[i])
    if cacheable(after[: last + 1]):
        return True
    rewritten = measure(after)
    return measure(before) - rewritten >= rewritten


def _measured_once(measure: Callable[[Sequence[Msg]], int]) -> Callable[[Sequence[Msg]], int]:
    """`measure`, asked once per candidate in one step (pruning, its event and compaction read the
    same ones): keyed by identity, held for the step only, so nothing can edit them in between."""
    known: dict[int, tuple[Sequence[Msg], int]] = {}

    def once(candidate: Sequence[Msg]) -> int:
        if id(candidate) not in known:
            known[id(candidate)] = (candidate, measure(candidate))
        return known[id(candidate)][1]

    return once


def _history_size(measure: Callable[[Sequence[Msg]], int]) -> Estimate:
    """A history's tokens as `measure` counts them, less the request's fixed part (measured first,
    so the last request measured is the step's own)."""

    def size(history: Sequence[Msg]) -> int:
        fixed = measure(())
        return measure(history) - fixed

    return size


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
    """The history to send at `step`, a new list. `measure` sizes the request a candidate history
    would make; `prompt` is the run's request, quoted by a summary."""
    pointer = artifact_pointers(store)
    protected = policy.protected.__contains__
    messages = list(sent)
    events, estimate = policy.on_event, calibration.estimate
    measure = _measured_once(measure)
    if policy.strategy != "append_only":  # append-only prunes only when it compacts (in fit_context)
        pruned = prune(
            messages, policy.keep_recent, batch=policy.prune_batch, protected=protected, pointer_for=pointer
        )
        if policy.cacheable is not None and not worth_pruning(messages, pruned, policy.cacheable, measure):
            pruned = messages
        why = f"older than the newest {policy.keep_recent} result turns"
        size = _history_size(measure) if policy.max_context_tokens else None  # compaction measures it anyway
        report_prune(events, step, messages, pruned, estimate, why, size)
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
