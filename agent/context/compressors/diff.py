"""Diffs and patches (`git show`, `git diff`, `git log -p`, unified diffs).

A diff is read for which files changed, how much, and where: a head/tail cut keeps
the first file's first hunk and the last file's last lines, and a git-log reading
drops the diff altogether. Here every file keeps its `diff --git` line with its
+/- counts, then hunk headers (`@@ -a,b +c,d @@`) and the first changed line of each
hunk are kept while they fit, then whole hunks from the top. The commit header
(full hash, author, date, subject) comes first, identifiers unshortened, and the
footer gives the totals (files, hunks, added and removed lines).
"""

from __future__ import annotations

import re

from agent.context.compressors.common import pick_lines, where
from agent.context.compressors.detect import DIFF_FILE as _FILE
from agent.context.compressors.detect import DIFF_HUNK as _HUNK

__all__ = ["compress_diff"]

_COMMIT = re.compile(r"^commit [0-9a-f]{7,64}\b")
_META = re.compile(
    r"^(?:new file mode|deleted file mode|rename from|rename to|similarity index|Binary files)"
)


def compress_diff(text: str, budget: int, pointer: str | None) -> str:
    """Headers, per-file counts, hunk headers and first changed lines first; then whole hunks."""
    lines = [line.rstrip() for line in text.splitlines()]
    files: list[int] = []
    hunks: list[int] = []
    counts: dict[int, list[int]] = {}
    current = -1
    in_header = True
    priorities: list[tuple[int, int]] = []
    first_change = True
    for i, line in enumerate(lines):
        if _FILE.match(line) or (
            line.startswith("--- ")
            and i + 1 < len(lines)
            and lines[i + 1].startswith("+++ ")
            and (not files or files[-1] < i - 3)
        ):
            current = i
            files.append(i)
            counts[i] = [0, 0]
            in_header = False
        elif _COMMIT.match(line):
            priorities.append((1, i))
            in_header = True
        elif in_header:
            priorities.append((1 if i < 8 else 30 + i, i))  # Author, Date, subject and the message
        elif _HUNK.match(line):
            hunks.append(i)
            first_change = True
        elif _META.match(line):
            priorities.append((6, i))
        elif current >= 0 and hunks and hunks[-1] > current and line.startswith(("+", "-")):
            counts[current][0 if line[0] == "+" else 1] += 1
            if first_change:
                priorities.append((12 if hunks[-1] != _first_hunk(hunks, current) else 9, i))
                first_change = False
    for n, i in enumerate(files):
        priorities.append((2 if n in (0, len(files) - 1) else 3, i))
    for n, i in enumerate(hunks):
        first_of_file = n == 0 or any(hunks[n - 1] < f < i for f in files)
        priorities.append((2 if n == len(hunks) - 1 else 5 if first_of_file else 8, i))
    kept = {i for _, i in priorities}
    priorities += [(200 + i // 4, i) for i in range(len(lines)) if i not in kept and not _noise(lines[i])]
    shown = list(lines)
    for i in files:
        added, removed = counts[i]
        shown[i] = f"{lines[i]}  (+{added} -{removed})"
    keep = [
        i for i in range(len(lines)) if not _noise(lines[i]) or i in kept
    ]  # `index`, `---`, `+++`: said above
    position = {i: n for n, i in enumerate(keep)}
    spans = [(i + 1, (keep[n + 1] if n + 1 < len(keep) else len(lines)) - i) for n, i in enumerate(keep)]
    added = sum(c[0] for c in counts.values())
    removed = sum(c[1] for c in counts.values())
    footer = (
        f"[diff: {len(files)} files changed, {len(hunks)} hunks, +{added} -{removed} lines; "
        f"{len(lines)} lines in all; {where(pointer)}]"
    )
    ranked = [(p, position[i]) for p, i in priorities if i in position]
    return pick_lines([shown[i] for i in keep], budget, ranked, footer=footer, max_line=200, origin=spans)


def _first_hunk(hunks: list[int], file_start: int) -> int:
    return next((h for h in hunks if h > file_start), -1)


def _noise(line: str) -> bool:
    """Lines that repeat what the `diff --git` line says."""
    return line.startswith(("index ", "--- a/", "+++ b/", "--- /dev/null", "+++ /dev/null"))
