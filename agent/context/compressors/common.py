"""Shared pieces of the compressors: cut notes, the hard budget guard, and the line picker, which
decides "keep the facts" and "respect the budget" in one place: each compressor ranks lines, the
picker keeps the best that fit and marks the gaps."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from agent.context.artifacts import marker

__all__ = [
    "IMPORTANT",
    "MIN_BUDGET",
    "Origin",
    "clip",
    "fit",
    "head_tail",
    "important_lines",
    "is_important",
    "pick_lines",
    "where",
]

MIN_BUDGET = 200
"""Smallest budget honoured: room for a cut note and a pointer."""

IMPORTANT = re.compile(
    r"(?i:\b(?:error|errors|exception|failed|failure|fatal|panic|panicked|warning|warn|denied|refused|traceback"
    r"|critical|aborted|aborting|segmentation fault|unresolved|not found|cannot|could not)\b)"
    r"|[A-Za-z]*(?:Error|Exception|Warning)\b|\bE\d{3,4}\b|\bERR!|^\*\*\*"
)
"""A line that reads as an error, a failure or a warning: it survives in every kind."""
_SEVERE = re.compile(r"(?i)error|fatal|panic|exception|fail|traceback|denied|refused|abort|cannot|could not")
_SHAPE = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|0x[0-9a-fA-F]+|\d+")
_PATHISH = re.compile(r"\S*/\S*|\S+\.(?:py|js|ts|c|h|cc|rs|java|go|rb|o|so|txt|json|html)\b")


def is_important(line: str) -> bool:
    """IMPORTANT, not counting words inside paths and file names (`errors.py`, `urllib/error.py`)."""
    return bool(IMPORTANT.search(line)) and bool(IMPORTANT.search(_PATHISH.sub(" ", line)))


def important_lines(lines: Sequence[str], limit: int = 20, base: int = 6) -> list[tuple[int, int]]:
    """(priority, index) for important lines and the two before each (the `File ...` line that says
    where). Errors rank before warnings; a repeat (other numbers or names) after every first
    occurrence, except the last of its kind."""
    found: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if len(line) < 4000 and is_important(line):
            found.setdefault(_SHAPE.sub("#", line), []).append(i)
            if len(found) > 4 * limit:
                break
    out: list[tuple[int, int]] = []
    for shape, where_found in list(found.items())[:limit]:
        rank = base + (0 if _SEVERE.search(shape) else 3)
        for n, i in enumerate(where_found):
            extra = 0 if n == 0 else 1 if n == len(where_found) - 1 else 40 + n
            out += [(rank + extra, i), (rank + extra + 2, i - 1), (rank + extra + 4, i - 2)]
    return [(p, i) for p, i in out if i >= 0]


def where(pointer: str | None) -> str:
    """The second half of every cut note: where the whole result can be read."""
    return f"full: {marker(pointer)}" if pointer else "full result not kept"


def clip(line: str, limit: int) -> str:
    """`line` cut to `limit` characters, saying how much was cut."""
    if len(line) <= limit:
        return line
    keep = max(limit - 12, 1)
    return f"{line[:keep]}...(+{len(line) - keep})"


def fit(text: str, budget: int, pointer: str | None) -> str:
    """Last-resort guard: `text` cut by characters (head and tail) to at most `budget`."""
    if len(text) <= budget:
        return text
    note = f"\n[... {{}} chars cut; {where(pointer)}]\n"
    room = budget - len(note.format(len(text)))
    if room < 2:
        return note.format(len(text)).strip()[:budget]
    head = room * 2 // 3
    tail = room - head
    return text[:head] + note.format(len(text) - room) + text[-tail:]


class Origin(Protocol):
    """Where line i of the lines picked from came from: (first source line, source lines)."""

    def __getitem__(self, index: int, /) -> tuple[int, int]: ...


def pick_lines(
    lines: Sequence[str],
    budget: int,
    priorities: Iterable[tuple[int, int]],
    *,
    numbered: bool = False,
    gaps: bool | str = True,
    max_line: int = 240,
    header: str = "",
    footer: str = "",
    origin: Origin | None = None,
) -> str:
    """The most important lines that fit in `budget`, in their original order.

    `priorities`: (priority, index) pairs, lowest first. Kept lines are prefixed `L<n> ` when
    `numbered`; each run of dropped lines becomes `[... N lines]` (not when numbered or `gaps` is
    False; `gaps="..."` uses that marker, for views too crowded for counts). `origin` maps folded
    lines to their source lines; `header` and `footer` are always kept.
    """
    # not a list: a tuple per line costs ~20x the line on big inputs
    where_of = origin if origin is not None else _Unfolded()
    show_gaps = bool(gaps) and not numbered
    marker = gaps if isinstance(gaps, str) else None
    gap_cost = len(marker) + 1 if marker else 17
    used = len(header) + len(footer) + 2 + (2 * gap_cost if show_gaps else 0)
    rendered: dict[int, str] = {}
    for _, index in sorted(set(priorities)):
        if index in rendered or not 0 <= index < len(lines):
            continue
        text = clip(lines[index], max_line)
        if numbered:
            text = f"L{where_of[index][0]} {text}"
        cost = len(text) + 1
        if show_gaps:
            before, after = index - 1 in rendered, index + 1 in rendered
            cost += gap_cost * (1 if not before and not after else (-1 if before and after else 0))
        if used + cost > budget:
            continue
        used += cost
        rendered[index] = text
    out: list[str | None] = [header] if header else []
    next_index = 0
    for index in sorted(rendered):
        if show_gaps and index > next_index:
            out.append(marker or _gap(lines, where_of, next_index, index))
        out.append(rendered[index])
        next_index = index + 1
    if show_gaps and rendered and next_index < len(lines):
        out.append(marker or _gap(lines, where_of, next_index, len(lines)))
    if footer:
        out.append(footer)
    return "\n".join(line for line in out if line is not None)


class _Unfolded:
    """`origin` of lines that were not folded: line i is source line i + 1, alone."""

    def __getitem__(self, index: int) -> tuple[int, int]:
        return (index + 1, 1)


def _gap(lines: Sequence[str], where_of: Origin, start: int, stop: int) -> str | None:
    """The marker for dropped lines[start:stop]: none for blank lines, `...` for one line."""
    if all(not lines[i].strip() for i in range(start, stop)):
        return None
    count = where_of[stop - 1][0] + where_of[stop - 1][1] - where_of[start][0]
    return "..." if count <= 1 else f"[... {count} lines]"  # 0: lines that stand for no source line


def head_tail(count: int, budget: int, head_weight: int = 2, tail_weight: int = 3) -> list[tuple[int, int]]:
    """(priority, index) of lines by their distance from either end; only the `budget // 2` nearest
    each end, as no more can fit (a line costs 2 chars at least) and listing all would cost memory."""
    reach = min(count, budget // 2 + 1)
    pairs = [(head_weight * i, i) for i in range(reach)]
    pairs += [(tail_weight * (count - 1 - i) + 1, i) for i in range(count - reach, count)]
    return pairs
