"""Values remembered between steps, for the dicts of a history and the lists they make.

A history is never edited in place: the loop makes a new dict for every change and a new
list for every step, and a step's list shares nearly all its items with the last one. So
what is computed from one message (its JSON length, its pruning facts, the calls it makes)
can be kept by the message's identity (`IdentityCache`), and what is computed per item of
a long list can be kept for the prefix the next list shares with it (`PrefixMemo`): each
message is then read once however long the run. The token estimate, pruning and the cache
markers keep their memos here; `tests/test_overhead_bookkeeping.py` checks every answer
against the code without them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from agent.messages import shared_length

__all__ = ["IdentityCache", "PrefixMemo", "memoized"]


class IdentityCache:
    """object -> value, by identity, for the dicts of a history, which are never edited in place
    (the loop makes a new dict for every change; `Msg` says so).

    Each entry holds its object, so its id cannot be reused while the entry lives: a live
    object whose id is in the cache is the cached object, and lookups need no other check
    (which is what lets `lookup` stay in C: one `dict.get` per object). Two generations
    bound the size. Every operation is a single dict operation, so runs on several threads
    may share a cache (a lost entry is only computed again)."""

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self.new: dict[int, tuple[Any, Any]] = {}
        self.old: dict[int, tuple[Any, Any]] = {}

    def lookup(self, objects: Sequence[Any]) -> list[tuple[Any, Any] | None]:
        """(object, value) for each of `objects` that is cached, else None."""
        hits: list[tuple[Any, Any] | None] = list(map(self.new.get, map(id, objects)))
        if None in hits and self.old:
            for index, hit in enumerate(hits):
                if hit is None and (hit := self.old.get(id(objects[index]))) is not None:
                    self.put(hit[0], hit[1])
                    hits[index] = hit
        return hits

    def get(self, obj: Any) -> Any:
        """The value cached for `obj`, or None (`lookup` for one object, without its lists)."""
        hit = self.new.get(id(obj))
        if hit is None and self.old and (hit := self.old.get(id(obj))) is not None:
            self.put(hit[0], hit[1])
        return None if hit is None else hit[1]

    def put(self, obj: Any, value: Any) -> None:
        if len(self.new) >= self.size:
            self.old, self.new = self.new, {}
        self.new[id(obj)] = (obj, value)

    def clear(self) -> None:
        self.new, self.old = {}, {}


_GOOD_ENOUGH = 64
"""A shared prefix that leaves at most this many items to compute ends the search."""


class PrefixMemo:
    """Per-item values of the last few lists seen, reused for the part of a new list that
    holds the same items in the same places (a history grows at its end; a step's request
    differs from the last one only from the first marked or rewritten message on).

    Same means the very same objects, found by identity (`operator.is_` over both lists, in
    C). With `by_content=True`, for values that equal items always share (a turn's facts,
    the names its blocks carry), equal items count as the same: `shared_length`'s list comparisons
    find that prefix some 20 times faster. (A JSON length is not such a value: 1 and True
    compare equal and serialise differently.) Only the items after the shared prefix are
    looked at. Each entry holds its list, so its items stay alive."""

    def __init__(self, keep: int = 8, *, by_content: bool = False) -> None:
        self.keep = keep
        self.by_content = by_content
        self.entries: list[tuple[list[Any], list[Any]]] = []

    def known(self, items: Sequence[Any]) -> list[Any]:
        """The remembered values of the longest prefix `items` shares with a list seen lately."""
        best: list[Any] = []
        for seen, values in self.entries:
            if not seen or not items or seen[0] is not items[0] or len(best) >= min(len(seen), len(items)):
                continue
            length = shared_length(seen, items) if self.by_content else _same_objects(seen, items)
            if length > len(best):
                best = values[:length]
            if len(best) + _GOOD_ENOUGH >= len(items):
                break  # the newest entries come first; older ones would rarely share more
        return best

    def remember(self, items: Sequence[Any], values: list[Any]) -> None:
        self.entries = [(list(items), values), *self.entries[: self.keep - 1]]

    def clear(self) -> None:
        self.entries = []


def _same_objects(seen: Sequence[Any], items: Sequence[Any]) -> int:
    """How many leading items of `seen` and `items` are the very same objects."""
    shared = list(map(operator.is_, seen, items))
    try:
        return shared.index(False)
    except ValueError:
        return len(shared)


def memoized(
    memo: PrefixMemo,
    items: Sequence[Any],
    value: Callable[[Any], Any],
    many: Callable[[Sequence[Any]], list[Any]] | None = None,
) -> list[Any]:
    """`[value(item) for item in items]`, with the values of a shared prefix taken from `memo`
    (`value` must depend on the item alone, which must not be edited in place). `many`, when
    given, computes the values of the items after the prefix in one call."""
    values = memo.known(items)
    if len(values) < len(items):
        rest = items[len(values) :]
        values = values + (many(rest) if many is not None else [value(item) for item in rest])
        memo.remember(items, values)
    return values
