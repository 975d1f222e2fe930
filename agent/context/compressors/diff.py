"""Diffs and patches (`git show`, `git diff`, `git log -p`, unified diffs).

A diff is read for which files changed, how much, where, and what the change says:
a head/tail cut keeps the first file's first hunk and the last file's last lines,
and a git-log reading drops the diff altogether. Here every file keeps its
`diff --git` line with its +/- counts, then the changed lines themselves, ranked by
what they say (a version number, a definition, an assignment before an import, a
comment or a closing bracket) and dealt out across files and hunks, so the third
file's new function outranks the first file's tenth changed import. A hunk header
follows its kept changes (it says where they are); then whole hunks from the top
fill what is left. With many files (their headers alone would take half the budget), a file's
first hunk header too waits for its changes, a gap is marked `...` rather than `[... N lines]`
(the file's counts say how much), and a hunk's additions come before its removals of the same
weight (what the code is now): room goes to one changed line of every file. The commit header
(full hash, author, date, subject) comes first, identifiers unshortened, and the footer gives the
totals.
"""

from __future__ import annotations

import heapq
import itertools
import re
from array import array
from bisect import bisect_left

from agent.context.compressors.common import pick_lines, where
from agent.context.compressors.detect import DIFF_FILE as _FILE
from agent.context.compressors.detect import DIFF_HUNK as _HUNK

__all__ = ["compress_diff"]

_COMMIT = re.compile(r"^commit [0-9a-f]{7,64}\b")
_META = re.compile(
    r"^(?:new file mode|deleted file mode|rename from|rename to|similarity index|Binary files)"
)
_DEFINITION = re.compile(
    r"^\s*(?:(?:export|public|private|protected|static|async|pub(?:\([\w:]+\))?|extern|inline|final|abstract)\s+)*"
    r"(?:def|class|function|fn|func|interface|struct|enum|trait|impl|type|module|package|namespace|macro_rules!)\s"
    r"|^\s*(?:const|let|var|val)\s+\w+\s*[:=]"
)
"""A changed line that defines something: what a reader of the diff looks for first."""
_VERSION = re.compile(r"(?i)\bversion\b|\b(?:__version__|VERSION)\b")
_RELEASE = re.compile(r"\bv?\d+\.\d+\.\d+")
"""A version number itself: a line that sets or drops one is the change a release diff is read for."""
_ASSIGN = re.compile(
    r"^\s*[\w.\[\]'\"]+\s*(?::[^=]{1,60})?\s*(?<![=!<>])=(?!=)|^\s*[\w.-]+:\s+\S|^\s*(?:return|raise|throw)\b"
)
_IMPORT = re.compile(r"^\s*(?:import|from \S+ import|use|using|require|#include)\b")
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--|;|\"\"\"|''')")
_HUNK_CONTEXT = 60
"""Chars of a hunk header's trailing context kept (`@@ -5,7 +5,9 @@ def f(...)`): it locates, the
changed lines say."""


def _weight(change: str) -> int:
    """How much a changed line (sign dropped) says: -1 a version number, 0 a definition or a line
    naming a version, 1 an assignment or a return, 2 other code, 3 an import or a comment, 4 almost
    nothing (`)`, a blank line)."""
    body = change.strip()
    if len(body) < 4 or not any(c.isalnum() for c in body):
        return 4
    if _COMMENT.match(body):
        return 3
    if _RELEASE.search(body):
        return -1
    if _DEFINITION.match(change) or _VERSION.search(body):
        return 0
    if _IMPORT.match(body):
        return 3
    if _ASSIGN.match(change):
        return 1
    return 2


def _short_hunk(line: str, context: int) -> str:
    """A hunk header with at most `context` chars of its trailing context, cut at a space."""
    found = _HUNK.match(line)
    if not found or len(line) <= found.end() + context + 1:
        return line
    cut = line.rfind(" ", found.end() + 1, found.end() + context)
    return line[: cut if cut > found.end() else found.end() + context] + " ..."


def compress_diff(text: str, budget: int, pointer: str | None) -> str:
    """Headers, per-file counts, then changed lines by weight across files and hunks; then whole hunks."""
    lines = [line.rstrip() for line in text.splitlines()]
    files: list[int] = []
    hunks: list[int] = []
    counts: dict[int, list[int]] = {}
    changes: dict[int, list[tuple[int, int, int]]] = {}  # file -> (weight, hunk, line) of its changes
    current = -1
    in_header = True
    priorities: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        if _FILE.match(line) or (
            line.startswith("--- ")
            and i + 1 < len(lines)
            and lines[i + 1].startswith("+++ ")
            and (not files or files[-1] < i - 3)
        ):
            _trim(changes, budget, len(files))
            current = i
            files.append(i)
            counts[i] = [0, 0]
            changes[i] = []
            in_header = False
        elif _COMMIT.match(line):
            priorities.append((1, i))
            in_header = True
        elif in_header:
            priorities.append((1 if i < 8 else 30 + i, i))  # Author, Date, subject and the message
        elif _HUNK.match(line):
            hunks.append(i)
        elif _META.match(line):
            priorities.append((6, i))
        elif current >= 0 and hunks and hunks[-1] > current and line.startswith(("+", "-")):
            counts[current][0 if line[0] == "+" else 1] += 1
            changes[current].append((_weight(line[1:]), hunks[-1], i))
            if len(changes[current]) > budget:
                _trim(changes, budget, len(files), current)
    _trim(changes, budget, len(files), *changes)
    for n, i in enumerate(files):
        priorities.append((2 if n in (0, len(files) - 1) else 3, i))
    crowded = sum(len(lines[i]) + 12 for i in files) * 2 > budget  # then a file's changes say more
    for n, i in enumerate(hunks):  # each file's first (where its changes start) and the last hunk
        if n == len(hunks) - 1 or n == 0 or any(hunks[n - 1] < f < i for f in files):
            first = 20 if crowded and n else 5  # crowded: after each file's best change, not the diff's start
            priorities.append((2 if n == len(hunks) - 1 else first, i))  # others follow their changes
    priorities += _ranked_changes(lines, changes)
    kept = {i for _, i in priorities}
    rest = (i for i in range(len(lines)) if i not in kept and not _noise(lines[i]))
    priorities += [(200 + i // 4, i) for i in itertools.islice(rest, budget // 2)]  # no more could fit
    shown = list(lines)
    for i in files:
        added, removed = counts[i]
        shown[i] = f"{_same_path(lines[i]) if crowded else lines[i]}  (+{added} -{removed})"
    for i in hunks:
        shown[i] = _short_hunk(lines[i], 0 if crowded else _HUNK_CONTEXT)
    keep = array(
        "l", (i for i in range(len(lines)) if not _noise(lines[i]) or i in kept)
    )  # `index`, `---`, `+++`: said above. An array: a list of ints costs 36 bytes a line
    added = sum(c[0] for c in counts.values())
    removed = sum(c[1] for c in counts.values())
    footer = (
        f"[diff: {len(files)} files changed, {len(hunks)} hunks, +{added} -{removed} lines; "
        f"{len(lines)} lines in all; {where(pointer)}]"
    )
    ranked = [(p, n) for p, i in priorities if (n := bisect_left(keep, i)) < len(keep) and keep[n] == i]
    spans = _Spans(keep, len(lines))
    return pick_lines(
        [shown[i] for i in keep],
        budget,
        ranked,
        gaps="..." if crowded else True,
        footer=footer,
        max_line=200,
        origin=spans,
    )


class _Spans:
    """`origin` for the lines kept: (first source line, source lines up to the next kept one), made
    when asked (the picker asks for the lines it shows and the ends of each gap)."""

    def __init__(self, keep: array[int], total: int) -> None:
        self.keep, self.total = keep, total

    def __getitem__(self, n: int) -> tuple[int, int]:
        start = self.keep[n]
        return start + 1, (self.keep[n + 1] if n + 1 < len(self.keep) else self.total) - start


def _trim(changes: dict[int, list[tuple[int, int, int]]], budget: int, files: int, *which: int) -> None:
    """Keep each named file's best changes (by weight, then place), as many as could be shown when
    `files` files share the budget (the last file, if none is named). Dealt across files, the r-th
    change of each ranks together, so a change ranked past `budget / files` can never fit; trimming
    as the diff is read keeps a megabyte diff from holding a tuple for every changed line."""
    cap = max(4, min(budget // 8, budget // max(2 * files, 1)))
    for file in which or list(changes)[-1:]:
        found = changes[file]
        if len(found) > cap:
            changes[file] = sorted(
                heapq.nsmallest(cap, found, key=lambda c: (c[0], c[2])), key=lambda c: c[2]
            )


def _ranked_changes(
    lines: list[str], changes: dict[int, list[tuple[int, int, int]]]
) -> list[tuple[int, int]]:
    """(priority, index) of changed lines and of the hunk headers above them. Each file's changes
    are ordered by weight, a hunk's best before any hunk's second best; a line repeating an earlier
    change counts as saying nothing. A rank is worth more than any difference of weight short of
    "almost nothing" (13 against 4 a weight), so every file shows its best change before any file
    shows its second: the second definition of a big file does not take the place of a small
    file's only assignment."""
    seen: set[int] = set()
    located: set[int] = set()
    out: list[tuple[int, int]] = []
    for found in changes.values():
        ordered: list[tuple[int, bool, int, int, int]] = []
        per_hunk: dict[tuple[int, int], int] = {}
        for weight, hunk, i in found:
            body = hash(lines[i].strip())  # an int, not a copy of the line; equality only, any seed
            if body in seen:
                weight = 4
            seen.add(body)
            nth = per_hunk.get((hunk, weight), 0)
            per_hunk[(hunk, weight)] = nth + 1
            ordered.append((weight, lines[i][0] == "-", nth, i, hunk))  # what it is now, then what it was
        ordered.sort()
        for rank, (weight, _, _, i, hunk) in enumerate(ordered):
            priority = 8 + 13 * min(rank, 60) + 4 * max(weight, 0)  # a version number: first, as a rank
            out.append((priority, i))
            if hunk not in located:  # one header a hunk, ranked after its best change
                located.add(hunk)
                out.append((priority + 40, hunk))
    return out


_GIT_PATHS = re.compile(r"^diff --git a/(\S+) b/(\S+)$")


def _same_path(line: str) -> str:
    """`diff --git a/p b/p` as `diff --git a/p`: with many files, the second copy of each path
    would take the room of the changed lines."""
    found = _GIT_PATHS.match(line)
    return f"diff --git a/{found.group(1)}" if found and found.group(1) == found.group(2) else line


def _noise(line: str) -> bool:
    """Lines that repeat what the `diff --git` line says."""
    return line.startswith(("index ", "--- a/", "+++ b/", "--- /dev/null", "+++ /dev/null"))
