"""What the history policy changed this step, as `on_event` events: nothing silent.

Pruning and compaction rewrite the history the model reads; a developer who cannot
see them cannot tell a cheap run from a forgetful one. So each change becomes one
event: which results became stubs (newly, this step: the history kept in the run
state is already the pruned one), the summary a compaction wrote, how many messages
it folded, and the history's estimated tokens before and after. The estimates use
the run's calibration, as the budgets do. Nothing here runs without a callback.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.context.prune import _names_by_id, call_signature, is_stub
from agent.events import Event, emit
from agent.messages import Msg, blocks, shared_length

if TYPE_CHECKING:
    from agent.context.compact import Compaction

__all__ = ["newly_pruned", "report_compaction", "report_prune"]

Estimate = Callable[[Sequence[Msg]], int]


def newly_pruned(before: Sequence[Msg], after: Sequence[Msg]) -> tuple[str, ...]:
    """Each tool result that is a stub in `after` but was not in `before`, as its call
    (`fetch_orders(page=3)`, as the stub names it).

    Pruning keeps message positions and returns untouched messages as they were, so a
    message compared by identity first costs nothing when nothing changed; the calls' names
    are looked up only once a new stub is found, in pruning's incremental map (each message
    read once per run), not by reading the whole history every step."""
    if type(before) is list and type(after) is list and shared_length(before, after) == len(before):
        return ()  # the common step: nothing changed (list comparisons, in C)
    names: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None
    found: list[str] = []
    pairs = zip(before, after, strict=False)
    for old, new in itertools.compress(pairs, map(operator.is_not, before, after)):  # skipped in C
        for was, now in zip(blocks(old), blocks(new), strict=False):
            if (
                now.get("type") == "tool_result"
                and is_stub(now.get("content"))
                and not is_stub(was.get("content"))
            ):
                names = _names_by_id(after) if names is None else names
                name, arguments = names.get(str(now.get("tool_use_id", "")), ("?", {}))
                found.append(call_signature(name, arguments))
    return tuple(found)


def report_prune(
    callback: Callable[[Event], None] | None,
    step: int,
    before: Sequence[Msg],
    after: Sequence[Msg],
    estimate: Estimate,
    why: str,
) -> None:
    """One `prune` event when `after` stubbed results that `before` still had whole."""
    if callback is None or before is after:
        return
    pruned = newly_pruned(before, after)
    if pruned:
        event = Event("prune", step, why, pruned=pruned, tokens_before=estimate(before))
        emit(callback, _with_after(event, estimate(after)))


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
