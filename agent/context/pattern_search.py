"""Pattern search the model may drive without being able to freeze the process.

`read_artifact(pattern=...)` takes its pattern from the model, and a prompt injection
can choose it. Python's `re` backtracks: `(a+)+$` over a 2,000-character line ran for
more than 30 s, holding the GIL, so no thread-based timeout could stop it. So `re`
never runs a model's pattern. The search is safe by construction instead:

- with google-re2 installed (the `re2` extra), the pattern is RE2 syntax: linear in
  the text (no backreferences, no lookaround). Linear is not yet cheap: RE2's cost per
  byte grows with the compiled program (`.{0,1000}a.{0,1000}b` takes ~0.7 s per
  10 kB), so a program over `MAX_PROGRAM` steps is refused; the worst measured under
  it is ~0.2 s per 10 kB. A pattern RE2 cannot compile is searched as literal text,
  and the answer says so;
- without it, a glob subset that is linear by construction (`str.find` of literal
  pieces, left to right): `*` stands for any run of characters, `|` separates
  alternatives, everything else is literal; the worst measured is ~1.5 ms per 4 kB.

Both are case-insensitive, patterns are at most `MAX_PATTERN_CHARS` long, and each
line is searched in windows of at most `WINDOW` characters (bytes for RE2),
overlapping by `OVERLAP` (a match shorter than that is found across a window edge;
in RE2 `^`, `$` and `\\b` still see the whole line). One window is a bounded amount
of work, so the deadline checked between windows does stop a search (no subprocess
is needed: nothing unbounded ever runs); the answer then says where to go on.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

try:  # the optional `re2` extra (google-re2)
    import re2 as _re2  # type: ignore[import-untyped,import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - depends on the install
    _re2 = None

__all__ = [
    "MAX_PATTERN_CHARS",
    "Hit",
    "Matcher",
    "Search",
    "compile_pattern",
    "engine",
    "search",
]

MAX_PATTERN_CHARS = 500
MAX_PROGRAM = 2000
"""Largest compiled RE2 program (instructions): bounds the work per byte."""
WINDOW = 4000
OVERLAP = 400
RE2_MAX_MEM = 8 << 20
_REGEX_SIGNS = set("^$\\[](){}+?.")


def engine() -> str:
    """`re2` when google-re2 is importable, else `glob`."""
    return "re2" if _re2 is not None else "glob"


@dataclass(frozen=True)
class Hit:
    """A match: its line number, and its span in that line (characters)."""

    line: int
    start: int
    end: int


class Matcher:
    """A compiled pattern: `spans(line)` yields, window by window, its first match or None."""

    note = ""
    """Said in the result's header when the pattern was not searched the way it was written."""

    def spans(self, line: str) -> Iterator[tuple[int, int] | None]:
        raise NotImplementedError


def _windows(size: int) -> Iterator[tuple[int, int]]:
    start = 0
    while True:
        yield start, min(start + WINDOW, size)
        if start + WINDOW >= size:
            return
        start += WINDOW - OVERLAP


class _Re2(Matcher):
    def __init__(self, pattern: str, *, literal: bool = False, note: str = "") -> None:
        assert _re2 is not None
        options = _re2.Options()
        options.case_sensitive = False
        options.log_errors = False
        options.max_mem = RE2_MAX_MEM
        options.literal = literal
        self.regex: Any = _re2.compile(pattern, options)
        size = max(self.regex.programsize, self.regex.reverseprogramsize)
        if size > MAX_PROGRAM:
            raise ValueError(
                f"pattern is too costly to search ({size:,} steps compiled; at most {MAX_PROGRAM:,}): "
                "use * or + instead of large {m,n} counts, or search for a shorter part"
            )
        self.note = note

    def spans(self, line: str) -> Iterator[tuple[int, int] | None]:
        data = line.encode("utf-8", errors="replace")  # bytes: windows by position, no re-encoding
        ascii_only = len(data) == len(line)
        for start, end in _windows(len(data)):
            found = self.regex.search(data, start, end)  # context is the whole line: ^ $ \b stay true
            if found is None:
                yield None
                continue
            a, b = found.span()
            if not ascii_only:  # byte offsets to character offsets
                a, b = len(data[:a].decode("utf-8", "ignore")), len(data[:b].decode("utf-8", "ignore"))
            yield a, b


class _Glob(Matcher):
    def __init__(self, pattern: str, note: str = "") -> None:
        if "" in pattern.split("|"):
            raise ValueError(f"pattern {pattern!r} has an empty alternative (it would match every line)")
        self.alternatives = [[p for p in alt.split("*") if p] for alt in pattern.lower().split("|")]
        self.note = note

    def spans(self, line: str) -> Iterator[tuple[int, int] | None]:
        low = line.lower()  # may differ in length for a few letters: spans are then approximate
        for start, end in _windows(len(low)):
            best = None
            for pieces in self.alternatives:
                found = _find_pieces(low, pieces, start, end)
                if found is not None and (best is None or found[0] < best[0]):
                    best = found
            yield best


def _find_pieces(text: str, pieces: list[str], start: int, end: int) -> tuple[int, int] | None:
    """Leftmost span holding each piece in order (str.find: linear, no backtracking)."""
    position, first = start, None
    for piece in pieces:
        at = text.find(piece, position, end)
        if at < 0:
            return None
        first = at if first is None else first
        position = at + len(piece)
    return (start, start) if first is None else (first, position)


def compile_pattern(pattern: str) -> Matcher:
    """A `Matcher` for `pattern` with the installed engine; ValueError saying what to change."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"pattern is {len(pattern):,} chars; at most {MAX_PATTERN_CHARS}: search for a shorter, "
            "distinctive part"
        )
    if _re2 is not None:
        try:
            return _Re2(pattern)
        except _re2.error as error:
            reason = str(error.args[0] if error.args else error)
            reason = reason.removeprefix("b'").removesuffix("'")
            note = f"searched as literal text: not valid RE2 ({reason})"
            return _Re2(pattern, literal=True, note=note)
    note = ""
    if _REGEX_SIGNS & set(pattern):
        note = "searched as glob: * is any text, | is or, everything else literal (no regex here)"
    return _Glob(pattern, note)


@dataclass
class Search:
    """The outcome of `search`: the hits, and where it stopped if the deadline cut it short."""

    hits: list[Hit]
    lines_matched: int
    stopped_at: int | None = None


def search(lines: Iterable[tuple[int, str]], matcher: Matcher, *, deadline_s: float = 3.0) -> Search:
    """Every window match in `lines` ((number, text) pairs), stopping at the deadline."""
    hits: list[Hit] = []
    matched = 0
    give_up = time.monotonic() + deadline_s
    for number, line in lines:
        before = len(hits)
        for span in matcher.spans(line):
            if span is not None and (not hits or hits[-1].line != number or span[0] >= hits[-1].end):
                hits.append(Hit(number, *span))
            if time.monotonic() > give_up:
                return Search(hits, matched + (len(hits) > before), stopped_at=number)
        matched += len(hits) > before
        if time.monotonic() > give_up:
            return Search(hits, matched, stopped_at=number + 1)
    return Search(hits, matched)
