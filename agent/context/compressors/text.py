"""Line-oriented text: plain text, aligned tables, source files, path lists, `git log`.

All of these share one idea: the first lines say what the output is, the last lines
say how it ended, and some lines in between matter more than their neighbours (an
error line, an odd table row, a function definition, a folder). Each compressor
only ranks lines; `pick_lines` keeps what fits and marks every gap, and the footer
states the size of the whole and where it is.
"""

from __future__ import annotations

import re
from collections import Counter

from agent.context.compressors.common import fit, pick_lines, where

__all__ = [
    "compress_git_log",
    "compress_paths",
    "compress_plain",
    "compress_source",
    "compress_table",
    "fold_repeats",
    "is_git_log",
    "is_paths",
    "is_source",
    "squeeze",
    "table_columns",
]

IMPORTANT = re.compile(
    r"\b(?:error|errors|exception|failed|failure|fatal|panic|warning|denied|refused|traceback)\b",
    re.IGNORECASE,
)
_TEMPLATE = re.compile(r"https?://\S+|0x[0-9a-fA-F]+|\d+")
_SPACES = re.compile(r"(?<=\S)[ \t]{3,}")
_DEF = re.compile(
    r"^\s*(?:@|(?:async\s+)?def\s|class\s|function\s|func\s|(?:pub(?:\([^)]*\))?\s+)?(?:fn|struct|enum|trait|impl)\s"
    r"|interface\s|export\s|module\s|package\s)"
)
_IMPORT = re.compile(
    r"^\s*(?:import\s|from\s+\S+\s+import\s|#include\s|use\s|require\(|const\s+\w+\s*=\s*require)"
)
_PATH = re.compile(r"^\s*(?:\.{1,2}/|/|~/)?[\w.@+-]+(?:/[\w.@+, -]*[\w.@+-])+/?\s*$")
_COMMIT = re.compile(r"^commit ([0-9a-f]{7,64})\b")
_GIT_DATE = re.compile(r"\w{3} (\w{3}) (\d{1,2}) [\d:]+ (\d{4})")
_MONTHS = {
    m: i + 1 for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct"))
}
_MONTHS.update(Nov=11, Dec=12)


def squeeze(line: str) -> str:
    """Trailing spaces dropped and runs of 3+ inner spaces made 2 (column padding, not content)."""
    return _SPACES.sub("  ", line.rstrip())


def fold_repeats(lines: list[str]) -> tuple[list[str], list[tuple[int, int]]]:
    """Consecutive identical lines as one line with ` [xN]`; origin = (first line, span) of each."""
    out: list[str] = []
    origin: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        j = i + 1
        while j < len(lines) and lines[j] == lines[i]:
            j += 1
        out.append(lines[i] if j - i == 1 else f"{lines[i]} [x{j - i}]")
        origin.append((i + 1, j - i))
        i = j
    return out, origin


def _head_tail(count: int, head_weight: int = 2, tail_weight: int = 3) -> list[tuple[int, int]]:
    pairs = [(head_weight * i, i) for i in range(count)]
    pairs += [(tail_weight * (count - 1 - i) + 1, i) for i in range(count)]
    return pairs


def compress_plain(text: str, budget: int, pointer: str | None) -> str:
    """Head and tail by lines, the first error-looking lines in between, repeats folded."""
    lines, origin = fold_repeats([squeeze(line) for line in text.splitlines()])
    squeezed = "\n".join(lines)
    if len(squeezed) <= budget:
        return squeezed
    if len(lines) < 5 or len(squeezed) > 400 * len(lines):
        return fit(squeezed, budget, pointer)  # a few very long lines: cut by characters
    seen: dict[str, int] = {}
    repeats: set[int] = set()
    for i, line in enumerate(lines):
        if len(line) < 24:
            continue  # short lines are labels (field names, ids), not boilerplate
        template = _TEMPLATE.sub("#", line)
        seen[template] = seen.get(template, 0) + 1
        if seen[template] > 1:
            repeats.add(i)  # boilerplate that recurs with other numbers or links: shown once
    priorities = [(p, i) for p, i in _head_tail(len(lines)) if i not in repeats or p < 2]
    priorities += [(100_000 + i, i) for i in repeats]
    important = [i for i, line in enumerate(lines) if i not in repeats and IMPORTANT.search(line)][:20]
    priorities += [(6, i) for i in important]
    footer = f"[{origin[-1][0] + origin[-1][1] - 1} lines, {len(text):,} chars; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, footer=footer, origin=origin)


def table_columns(lines: list[str]) -> int | None:
    """The usual number of whitespace-separated fields when `lines` look like a table."""
    rows = [line for line in lines[:200] if line.strip()]
    if len(rows) < 8:
        return None
    counts = Counter(len(line.split()) for line in rows)
    fields, seen = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    aligned = sum(1 for line in rows if "  " in line.strip())
    return fields if fields >= 2 and seen * 10 >= len(rows) * 6 and aligned * 2 >= len(rows) else None


def compress_table(text: str, budget: int, pointer: str | None) -> str:
    """A column-aligned table: header, head and tail rows, and rows of an unusual shape."""
    raw = [line for line in text.splitlines() if line.strip()]
    lines = [squeeze(line) for line in raw]
    squeezed = "\n".join(lines)
    if len(squeezed) <= budget:
        return squeezed
    fields = table_columns(raw) or 0
    header_rows = 1 + (1 if len(lines) > 1 and re.fullmatch(r"[-=+|\s]+", lines[1]) else 0)
    rows = len(lines) - header_rows
    priorities = [(0, i) for i in range(header_rows)]
    priorities += [(p, i + header_rows) for p, i in _head_tail(rows)]
    odd = [i for i in range(header_rows, len(lines)) if len(raw[i].split()) != fields]
    if len(odd) <= max(3, rows // 10):
        priorities += [(5, i) for i in odd]
    footer = f"[table: {rows} rows; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, footer=footer, max_line=160)


def is_source(lines: list[str]) -> bool:
    sample = lines[:400]
    defs = sum(1 for line in sample if _DEF.match(line))
    imports = sum(1 for line in sample if _IMPORT.match(line))
    return defs >= 3 and (defs + imports) * 40 >= len(sample)


def compress_source(text: str, budget: int, pointer: str | None) -> str:
    """A source file as an outline: the head, definition lines (numbered, outer ones and the
    first and last first), the tail."""
    lines = [line.rstrip() for line in text.splitlines()]
    filled = [i for i, line in enumerate(lines) if line.strip()]
    defs = [i for i in filled if _DEF.match(lines[i]) and not lines[i].lstrip().startswith("@")]
    priorities = [(n, i) for n, i in enumerate(filled[:3])]
    for k, i in enumerate(defs):
        depth = (len(lines[i]) - len(lines[i].lstrip())) // 4
        priorities.append((10 + 20 * depth + min(k, len(defs) - 1 - k), i))
    priorities += [(200 + n, i) for n, i in enumerate(filled[3:40])]
    priorities += [(201 + 3 * n, i) for n, i in enumerate(reversed(filled[-5:]))]
    footer = f"[source: {len(lines)} lines; kept head, definitions, tail; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, numbered=True, footer=footer, max_line=160)


def is_paths(lines: list[str]) -> bool:
    rows = [line for line in lines[:400] if line.strip()]
    paths = sum(1 for line in rows if _PATH.match(line))
    return paths >= 20 and paths * 10 >= len(rows) * 6


def compress_paths(text: str, budget: int, pointer: str | None) -> str:
    """A listing of paths as a folder tree with file counts, as deep as fits; other lines kept."""
    lines = text.splitlines()
    paths = [(i, line.strip()) for i, line in enumerate(lines) if _PATH.match(line)]
    others = [i for i, line in enumerate(lines) if line.strip() and not _PATH.match(line)]
    tree = _folder_tree([path.rstrip("/").split("/")[:-1] for _, path in paths], budget // 2)
    first = paths[0][0] if paths else len(lines)
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())] if paths else ""
    shown = [lines[i].rstrip() for i in others if i < first]
    fixed = len(shown)
    if paths:
        shown += [indent + p for _, p in paths[:2]] + tree + [indent + paths[-1][1]]
    shown += [lines[i].rstrip() for i in others if i > first]
    priorities = [(i, i) for i in range(fixed)]
    priorities += [(fixed + p, fixed + i) for p, i in _head_tail(len(shown) - fixed, 3, 2)]
    footer = f"[{len(paths)} paths; folder tree with file counts; {where(pointer)}]"
    return pick_lines(shown, budget, priorities, footer=footer, max_line=160)


def _folder_tree(folders: list[list[str]], limit: int) -> list[str]:
    """Folders with their path counts, the biggest expanded into subfolders while it fits `limit`."""
    groups: dict[tuple[str, ...], list[int]] = {(): list(range(len(folders)))}

    def render(found: dict[tuple[str, ...], list[int]]) -> list[str]:
        ordered = sorted(found.items(), key=lambda kv: kv[1][0])
        return [f"  {'/'.join(prefix) or '.'}/ ({len(members)})" for prefix, members in ordered if members]

    for _ in range(300):
        deeper = [g for g, members in groups.items() if any(len(folders[i]) > len(g) for i in members)]
        if not deeper:
            break
        parent = max(deeper, key=lambda g: (len(groups[g]), -groups[g][0]))
        split: dict[tuple[str, ...], list[int]] = {}
        for i in groups[parent]:
            key = tuple(folders[i][: len(parent) + 1])
            split.setdefault(key, []).append(i)
        candidate = {g: m for g, m in groups.items() if g != parent}
        candidate.update(split)
        if sum(len(line) + 1 for line in render(candidate)) > limit:
            break
        groups = candidate
    return render(groups)


def is_git_log(lines: list[str]) -> bool:
    return bool(lines) and _COMMIT.match(lines[0]) is not None


def compress_git_log(text: str, budget: int, pointer: str | None) -> str:
    """`git log` as one line per commit (hash, date, author, subject); bodies and diffs cut."""
    commits: list[str] = []
    merges: list[int] = []
    dropped = 0
    authors: set[str] = set()
    current: dict[str, str] = {}

    def close() -> None:
        if current:
            line = " ".join(
                v for v in (current["hash"], current.get("date", ""), current.get("author", "")) if v
            )
            commits.append(f"{line}: {current.get('subject', '')}")
            if "merge" in current:
                merges.append(len(commits) - 1)

    for line in text.splitlines():
        found = _COMMIT.match(line)
        if found:
            close()
            current = {"hash": found.group(1)[:10]}
        elif not current:
            continue
        elif line.startswith("Merge:"):
            current["merge"] = "1"
        elif line.startswith("Author:"):
            current["author"] = line[7:].split("<")[0].strip()
            authors.add(current["author"])
        elif line.startswith(("Date:", "AuthorDate:")):
            current["date"] = _short_date(line.split(":", 1)[1].strip())
        elif line.startswith("    ") and line.strip() and "subject" not in current:
            current["subject"] = line.strip()
        elif line.strip():
            dropped += 1
    close()
    priorities = _head_tail(len(commits))
    priorities += [(5, i) for i in merges[:10]]
    cut = "; bodies and diffs cut" if dropped else ""
    footer = f"[git log: {len(commits)} commits, {len(authors)} authors{cut}; {where(pointer)}]"
    return pick_lines(commits, budget, priorities, footer=footer, max_line=160)


def _short_date(raw: str) -> str:
    found = _GIT_DATE.match(raw)
    if found and found.group(1) in _MONTHS:
        return f"{found.group(3)}-{_MONTHS[found.group(1)]:02d}-{int(found.group(2)):02d}"
    return raw[:10]
