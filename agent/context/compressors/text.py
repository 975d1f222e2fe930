"""Line-oriented text: plain text, aligned tables, source files, path lists, `git log`.

All of these share one idea: the first lines say what the output is, the last lines
say how it ended, and some lines in between matter more than their neighbours (an
error line, an odd table row, a function definition, a folder). Each compressor
only ranks lines; `pick_lines` keeps what fits and marks every gap, and the footer
states the size of the whole and where it is.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

from agent.context.compressors.common import fit, head_tail, important_lines, pick_lines, where
from agent.context.compressors.detect import TEXT_COMMIT as _COMMIT
from agent.context.compressors.detect import TEXT_DEF as _DEF
from agent.context.compressors.detect import TEXT_PATH as _PATH
from agent.context.compressors.detect import table_columns

__all__ = [
    "compress_git_log",
    "compress_paths",
    "compress_plain",
    "compress_source",
    "compress_table",
    "fold_repeats",
    "squeeze",
]

_TEMPLATE = re.compile(r"https?://\S+|0x[0-9a-fA-F]+|\d+")
_SPACES = re.compile(r"(?<=\S)[ \t]{3,}")
_HEADING = re.compile(
    r"^\s{0,8}(?:#{1,6} \S|\d{1,2}(?:\.\d{1,2})*\.? [A-Z][\w-]*(?: [\w-]+){0,5}[.:]?(?:\s|$)"
    r"|[A-Z][A-Z0-9 ,&/-]{3,60}$)"
)
"""A heading of free text: `# Title`, `4. Redistribution.`, `2.1 Scope`, `TERMS AND CONDITIONS`."""
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


def compress_plain(text: str, budget: int, pointer: str | None) -> str:
    """Head and tail by lines, the first error-looking lines in between, repeats folded."""
    lines, origin = fold_repeats([_squeeze_row(line) for line in text.splitlines()])
    size = sum(map(len, lines)) + len(lines) - 1  # the joined text's length, without joining it
    if size <= budget:
        return "\n".join(lines)
    if len(lines) < 5 or size > 400 * len(lines):
        return fit("\n".join(lines), budget, pointer)  # a few very long lines: cut by characters
    seen: set[int] = set()  # templates by hash: equality only, and an int costs less than a copy
    repeats = bytearray(len(lines))  # a byte a line, not a set entry
    for i, line in enumerate(lines):
        if len(line) < 24:
            continue  # short lines are labels (field names, ids), not boilerplate
        template = hash(_TEMPLATE.sub("#", line))
        if template in seen:
            repeats[i] = 1  # boilerplate that recurs with other numbers or links: shown once
        seen.add(template)
    fields = _fields(lines)
    spread = 8 if fields else 1  # a `Key: value` document is read by its sections, not by its ends
    priorities = [(p * spread, i) for p, i in head_tail(len(lines), budget) if not repeats[i] or p < 2]
    recurring = (i for i in range(len(lines)) if repeats[i])
    priorities += [(100_000 + i, i) for i in itertools.islice(recurring, budget // 2)]  # no more could fit
    priorities += important_lines(lines)
    headings = [i for i, line in enumerate(lines) if len(line) < 200 and _HEADING.match(line)]
    priorities += [(12 + n, i) for n, i in enumerate(headings[:40])]
    priorities += fields
    footer = (
        f"[{origin[-1][0] + origin[-1][1] - 1} lines{_header_rows(lines, origin) or _rows(text)}, "
        f"{len(text):,} chars; {where(pointer)}]"
    )
    return pick_lines(lines, budget, priorities, footer=footer, origin=origin)


_KEY_LINE = re.compile(r"^\s*[A-Z][\w .()/-]{0,40}:[ \t]{3,}\S(?:(?![ \t]{3}).)*$")
"""`Kubelet Version:        v1.31.2`: one key, its padding, one value (no further columns)."""


def _squeeze_row(line: str) -> str:
    """`squeeze`, except a `Key:   value` line, kept verbatim: it is quoted back as it stands, and
    its one run of padding costs little."""
    line = line.rstrip()
    return line if len(line) < 200 and _KEY_LINE.match(line) else squeeze(line)


_HEADER_CELLS = re.compile(r"[A-Z][A-Z0-9_()%/.-]*(?: [A-Z][A-Z0-9_()%/.-]*)?")


def _header_rows(lines: list[str], origin: list[tuple[int, int]]) -> str:
    """` (header + N rows)` when the first line is a column header (`NAMESPACE  NAME  READY`): three
    or more upper-case cells apart by two spaces. A table too ragged to detect as one (a free-text
    last column) still has its row count stated, the fact a cut most hides."""
    cells = lines[0].split("  ") if lines else []
    if len(cells) < 3 or not all(_HEADER_CELLS.fullmatch(cell.strip()) for cell in cells if cell.strip()):
        return ""
    rows = sum(span for (_, span), line in zip(origin[1:], lines[1:], strict=False) if line.strip())
    return f" (header + {rows:,} rows)"


_OPAQUE = re.compile(r":\s+(?:[0-9a-f]{16,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
_FIELD = re.compile(r"^[A-Z][\w .()/-]{0,40}:(?:\s|$)")
_SUBFIELD = re.compile(r"^ {1,4}[A-Z][\w .()/-]{0,40}:\s")
_CONTINUED = re.compile(r"^ {8,}\S")
"""A value continued under its key (`Labels:` and its further `k=v` lines): the first one says it."""


def _fields(lines: list[str]) -> list[tuple[int, int]]:
    """A `Key: value` document (`kubectl describe`, `pip show`, `systemctl status`): every top-level
    field, then the first rows of each section and its sub-fields, ranked over the middle lines.
    Only when such fields start a tenth of the lines at least (not prose with a colon here and there)."""
    top = [i for i, line in enumerate(lines) if len(line) < 300 and _FIELD.match(line)]
    if len(top) < 4 or len(top) * 10 < len(lines):
        return []
    out = [(12 + min(n, 60), i) for n, i in enumerate(top)]
    earlier: set[str] = set()

    def said(i: int) -> int:
        """How much later a line ranks for saying little: again (`cpu: 32` under Capacity, then
        under Allocatable), or only an opaque id (`Machine ID:  18b3f3bf...`)."""
        text = lines[i].strip()
        again = text in earlier
        earlier.add(text)
        return 30 if again or _OPAQUE.search(text) else 0

    for n, start in enumerate(top):
        stop = top[n + 1] if n + 1 < len(top) else len(lines)
        under = [
            i for i in range(start + 1, stop) if lines[i].strip() and not set(lines[i].strip()) <= set("- ")
        ]
        keyed = [i for i in under[:200] if _SUBFIELD.match(lines[i])]
        rows = [i for i in under if not _SUBFIELD.match(lines[i]) and not _CONTINUED.match(lines[i])]
        out += [
            (40 + 3 * k + min(n, 30) + said(i), i) for k, i in enumerate(keyed)
        ]  # `  Kernel Version:  6.10`
        out += [
            (40 + 6 * k + min(n, 30) + said(i), i) for k, i in enumerate(rows[:8])
        ]  # a section's table rows
        if len(rows) > 2:  # and its last: the end of a list is read too (`Ready  True` under three `False`s)
            out.append((46 + min(n, 30), rows[-1]))
        out += [(90 + 6 * k + min(n, 30), i) for k, i in enumerate(under[:5])]  # continuation values
    return out


_LEAD = re.compile(r"^[ \t]*(?:- )?[A-Za-z_][\w.-]*(?: [A-Z]+\b)*", re.MULTILINE)


def _rows(text: str) -> str:
    """The items a cut text lists: the most common line start (`INSERT INTO`, `- name`, `Compiling`)
    with its count, when it starts at least a sixth of the lines."""
    starts = Counter(found.group(0) for found in _LEAD.finditer(text, 0, 2_000_000))
    if not starts:
        return ""
    lead, count = max(starts.items(), key=lambda kv: (kv[1], kv[0]))
    lines = text.count("\n") + 1
    return f" ({count:,} start with `{lead.strip()}`)" if count >= 5 and count * 6 >= lines else ""


_RULE = re.compile(r"[-=+|\s]{3,}")


def _table_header(lines: list[str], fields: int) -> int:
    """How many lines come before the first row: a preamble (`top`'s summary), a header, a
    `+++-===` rule. The first row is the first of three full-width lines that holds a digit
    (rows carry sizes, versions, ids; header lines rarely do)."""
    rule = next((i for i, line in enumerate(lines[:12]) if _RULE.fullmatch(line)), None)
    if rule is not None:
        return rule + 1
    for i in range(min(len(lines), 12)):
        if any(c.isdigit() for c in lines[i]) and all(
            len(line.split()) >= fields for line in lines[i : i + 3]
        ):
            return i
    return 1


def compress_table(text: str, budget: int, pointer: str | None) -> str:
    """A table: preamble and header, head and tail rows, rows of an unusual shape, error rows;
    the footer counts the rows."""
    raw = [line for line in text.splitlines() if line.strip()]
    lines = [line.rstrip() for line in raw]  # rows verbatim: a row is quoted back exactly
    fields = table_columns(raw) or 0
    header_rows = _table_header(lines, fields)
    rows = len(lines) - header_rows
    priorities = [(0 if i >= header_rows - 2 else 1 + i, i) for i in range(header_rows)]
    priorities += [(p, i + header_rows) for p, i in head_tail(rows, budget)]
    odd = [i for i in range(header_rows, len(lines)) if len(raw[i].split()) != fields]
    if len(odd) <= max(3, rows // 10):
        priorities += [(5, i) for i in odd]
    priorities += [(p, i + header_rows) for p, i in important_lines(lines[header_rows:], base=5)]
    footer = f"[table: {rows} rows; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, footer=footer, max_line=160)


def compress_source(text: str, budget: int, pointer: str | None) -> str:
    """A source file as an outline: its first and last lines verbatim, and between them the
    definition lines (numbered; outer ones and the first and last first)."""
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1].strip():
        lines.pop()
    head = min(4, len(lines))
    tail = min(3, len(lines) - head)
    middle = range(head, len(lines) - tail)
    filled = [i for i in middle if lines[i].strip()]
    defs = [i for i in filled if _DEF.match(lines[i]) and not lines[i].lstrip().startswith("@")]
    priorities = []
    for k, i in enumerate(defs):
        depth = (len(lines[i]) - len(lines[i].lstrip())) // 4
        priorities.append((10 + 1000 * depth + min(k, len(defs) - 1 - k), i))  # every outer one first
    priorities += [(200 + n, i) for n, i in enumerate(filled[:40])]
    note = f"[source: {len(lines)} lines; kept head, definitions, tail; {where(pointer)}]"
    ends = "\n".join(lines[len(lines) - tail :]) + "\n" if tail else ""
    return pick_lines(
        lines,
        budget,
        priorities,
        numbered=True,
        header="\n".join(lines[:head]),
        footer=ends + note,
        max_line=160,
    )


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
    priorities += [(fixed + p, fixed + i) for p, i in head_tail(len(shown) - fixed, budget, 3, 2)]
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


_STAT = re.compile(r"^ (\S.*?\S)\s+\|\s+(\d+|Bin\b.*?)(?:\s+[+-]+)?$")
"""A `--stat` line: ` path | 45 ++++` (the bars say again what the number says)."""


_RELEASE = re.compile(
    r"(?i)^(?:(?:release|releasing|bump|prepare|version)\b[\w ]{0,24}?\s)?"
    r"v?\d+\.\d+(?:\.\d+)*\S*(?:\s+\(#\d+\))?$"
)
"""A release's subject: `v2.34.2`, `Release 8.2.0 (#2890)`, `Bump version to 1.4.0`."""


def compress_git_log(text: str, budget: int, pointer: str | None) -> str:
    """`git log` as one line per commit (hash, date, author, subject), the newest and oldest, then the
    releases and merges between them; with `--stat`, the files a commit changed under it
    (`docs/faqs.md | 45`), the newest commits' first. Bodies and diffs cut."""
    lines: list[str] = []
    origin: list[tuple[int, int]] = []  # a gap counts commits: a stat line spans none
    commits: list[int] = []  # the line of each commit
    stats: list[list[int]] = []  # the stat lines of each commit
    merges: list[int] = []
    releases: list[int] = []
    dropped = 0
    authors: set[str] = set()
    current: dict[str, str] = {}

    def close() -> None:
        if current:
            line = " ".join(
                v for v in (current["hash"], current.get("date", ""), current.get("author", "")) if v
            )
            commits.append(len(lines))
            lines.append(f"{line}: {current.get('subject', '')}")
            origin.append((len(commits), 1))
            stats.append([])
            for stat in current.get("stats", "").split("\n") if current.get("stats") else ():
                stats[-1].append(len(lines))
                lines.append(f"  {stat}")
                origin.append((len(commits) + 1, 0))
            if "merge" in current:
                merges.append(len(commits) - 1)
            if _RELEASE.match(current.get("subject", "")):
                releases.append(len(commits) - 1)

    for line in text.splitlines():
        found = _COMMIT.match(line)
        stat = _STAT.match(line) if current and not found else None
        if found:
            close()
            current = {"hash": found.group(1)}  # never shortened: the model quotes it back
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
        elif stat is not None:
            kept = f"{stat.group(1)} | {stat.group(2)}"
            current["stats"] = f"{current['stats']}\n{kept}" if "stats" in current else kept
        elif line.strip():
            dropped += 1
    close()
    priorities = [(p, commits[i]) for p, i in head_tail(len(commits), budget)]
    priorities += [(4, commits[i]) for i in releases[:10]]  # where each version is: read before merges
    priorities += [(5, commits[i]) for i in merges[:10]]
    for n, files in enumerate(stats[: budget // 40]):  # each commit's files after the commits near it
        priorities += [(2 * n + 6 + 4 * k, i) for k, i in enumerate(files[:8])]
    cut = "; bodies and diffs cut" if dropped else ""
    footer = f"[git log: {len(commits)} commits, {len(authors)} authors{cut}; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, footer=footer, max_line=160, origin=origin)


def _short_date(raw: str) -> str:
    found = _GIT_DATE.match(raw)
    if found and found.group(1) in _MONTHS:
        return f"{found.group(3)}-{_MONTHS[found.group(1)]:02d}-{int(found.group(2)):02d}"
    return raw[:10]
