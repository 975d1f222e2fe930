"""Compiler and linter diagnostics (mypy, gcc/clang, javac, ruff `--output-format=full`, ...).

Such output is read for its error sites: `path:line[:col]: error: message [code]`, or
ruff's `CODE message` with its `--> path:line:col` line under it. It is a list of
the same few complaints, so the rare ones are the news: each code (or, without one,
each message shape) is shown once, rarest first, with the summary line (`Found 28
errors in 9 files`, `[*] 31 fixable`); repeats of a code fill what room is left,
and source excerpts (ruff's `|` panes, gcc's caret lines) go first when cutting.
"""

from __future__ import annotations

import re
from collections import Counter

from agent.context.compressors.common import pick_lines, where
from agent.context.compressors.detect import DIAG_ARROW as _ARROW
from agent.context.compressors.detect import DIAG_SITE as _SITE

__all__ = ["compress_diagnostics"]

_HEADER = re.compile(r"^([A-Z]{1,6}\d{2,5})\b")
_CODE = re.compile(r"\[([\w-]+)\]\s*$|\[-W([\w-]+)\]")
_SUMMARY = re.compile(
    r"^(?:Found \d+ errors?\b|Success: no issues|\[\*\] \d+ fixable|\d+ (?:errors?|warnings?)\b"
    r"|All checks passed|make(?:\[\d+\])?: \*\*\*|error: could not compile|compilation terminated)"
)
_MASK = re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`|\d+")


def _severity(code: str) -> int:
    level = code.split(":", 1)[0]
    return (
        0
        if level in ("error", "fatal error")
        else 1
        if level == "warning"
        else 2
        if level in ("note", "remark")
        else 0
    )


def compress_diagnostics(text: str, budget: int, pointer: str | None) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1].strip():
        lines.pop()
    sites: list[tuple[str, tuple[int, ...]]] = []  # (code, the lines that say it: message, then site)
    codes: dict[str, str] = {}
    priorities: list[tuple[int, int]] = [(1, 0), (1, len(lines) - 1)]
    for i, line in enumerate(lines):
        if _SUMMARY.match(line):
            priorities.append((0, i))
        site = _SITE.match(line)
        if site:
            found = _CODE.search(line)
            level = site.group(1)
            code = (found.group(1) or found.group(2)) if found else _MASK.sub("#", line[site.end() :])[:60]
            key = f"{level}:{code}"
            sites.append((codes.setdefault(key, key), (i,)))  # one string a code, not one a site
        elif _ARROW.match(line) and i > 0:
            header = _HEADER.match(lines[i - 1])
            code = header.group(1) if header else _MASK.sub("#", lines[i - 1])[:60]
            sites.append((codes.setdefault(code, code), (i - 1, i)))
    counts = Counter(code for code, _ in sites)
    first: dict[str, int] = {}
    for n, (code, _) in enumerate(sites):
        first.setdefault(code, n)
    rank = {  # errors before warnings before notes (a note says more about the error above it), rarest first
        code: r for r, code in enumerate(sorted(counts, key=lambda c: (_severity(c), counts[c], first[c])))
    }
    seen: set[str] = set()
    repeated = 0
    for n, (code, where_said) in enumerate(sites):
        priority = 10 + rank[code] if code not in seen else 5 if n == len(sites) - 1 else 10_000 + n
        seen.add(code)
        if priority >= 10_000:
            repeated += 1
            if repeated > budget // 2:
                continue  # repeats past what could ever be shown
        priorities += [(priority, i) for i in where_said]
    priorities += [
        (20_000 + i, i) for i in range(min(len(lines), budget // 2))
    ]  # the rest, in order: no more fit
    by_code = ", ".join(f"{code[:30]} {n}" for code, n in counts.most_common(4))
    footer = (
        f"[diagnostics: {len(sites)} sites, {len(counts)} distinct codes ({by_code}); rarest first; "
        f"{where(pointer)}]"
    )
    return pick_lines(lines, budget, priorities, footer=footer, max_line=400)
