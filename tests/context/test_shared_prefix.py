"""`shared_length` finds the equal prefix of two lists as a walk item by item would.

It is what the per-step memos and the prefix guard use to skip the part of a history
they have seen (list comparisons in C, then halving), so it must agree with the plain
walk on every shape: equal, grown, cut, changed anywhere, equal-but-not-identical items,
values that compare equal across types, and sequences that are not lists.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.messages import shared_length


def walk(seen: Any, items: Any) -> int:
    n = min(len(seen), len(items))
    return next((i for i in range(n) if not (seen[i] is items[i] or seen[i] == items[i])), n)


messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "n": st.integers(0, 3)}),
    max_size=80,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(messages, st.data())
def test_it_agrees_with_a_walk_whatever_changed(history: list[dict[str, Any]], data: st.DataObject) -> None:
    other = list(history)
    for _ in range(data.draw(st.integers(0, 3))):
        action = data.draw(st.sampled_from(["append", "cut", "replace", "equal_copy"]))
        if action == "append":
            other.append({"role": "user", "n": data.draw(st.integers(0, 3))})
        elif action == "cut" and other:
            del other[data.draw(st.integers(0, len(other) - 1)) :]
        elif other:
            at = data.draw(st.integers(0, len(other) - 1))
            other[at] = copy.deepcopy(other[at]) if action == "equal_copy" else {"role": "system", "n": -1}
    assert shared_length(history, other) == walk(history, other)
    assert shared_length(other, history) == walk(other, history)
    assert shared_length(tuple(history), other) == walk(history, other)  # not two lists: walked


def test_the_first_difference_is_found_anywhere_in_a_long_history() -> None:
    history = [{"role": "user", "n": i} for i in range(1000)]
    for at in (0, 1, 7, 8, 9, 499, 500, 998, 999):
        changed = [*history[:at], {"role": "user", "n": -1}, *history[at + 1 :]]
        assert shared_length(history, changed) == at
    assert shared_length(history, [*history, {"role": "user"}]) == 1000
    assert shared_length(history, history[:10]) == 10
    assert shared_length([], history) == 0


def test_equal_items_count_as_shared_identity_or_not() -> None:
    one, true = {"n": 1}, {"n": True}
    assert shared_length([one, {"n": 2}], [true, {"n": 2}]) == 2  # equal: a by-content memo's reading
    assert shared_length([float("nan")], [float("nan")]) == 0  # two NaNs are not equal
    nan = float("nan")
    assert shared_length([nan], [nan]) == 1  # the very same object is
