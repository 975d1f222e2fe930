"""Logs: every distinct error and warning with its line number, repeats folded, level counts.

Masking timestamps, numbers and hex ids gives each line a template, shown once (first occurrence)
with its recurrence count: errors, exception lines, warnings, the first and last lines, then one
line of each other kind, rarest first, and nothing more, since more lines of a shown kind say
nothing new. Lines keep their numbers (`L123`) for `read_artifact(start_line=...)`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from agent.context.compressors.common import pick_lines, where
from agent.context.compressors.detect import LOG_LEVEL as _LEVEL
from agent.context.compressors.detect import LOG_STAMP as _STAMP

__all__ = ["compress_log"]

_NORMAL = {
    **{"WARN": "WARNING", "ERR": "ERROR", "SEVERE": "ERROR", "PANIC": "FATAL"},
    **{"CRIT": "CRITICAL", "ALERT": "CRITICAL", "EMERG": "FATAL"},
}
_MESSAGE = re.compile(r"^.{0,60}?\]?: ")
_SOURCE = re.compile(r"^.{0,160}?\] - ")
"""A `- INFO [thread:Class@line] - ` source (log4j, ZooKeeper): what follows it is the message."""
_LEVELS = {"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "ERR", "CRITICAL", "FATAL", "-"}
_CHUNK = 500
"""Lines masked per pass: a pass over the whole text would hold three copies of it at once."""
_ORDER = ("FATAL", "CRITICAL", "ERROR", "WARNING", "NOTICE", "INFO", "DEBUG", "TRACE")
_MASK = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]{8,}\b|\d+")
_EXCEPTION = re.compile(r"^\s*(?:Traceback \(most recent|[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b)")


def _level(line: str) -> str | None:
    found = _LEVEL.search(line[:80])
    if not found:
        return None
    name = found.group(1) or found.group(2).upper()
    return _NORMAL.get(name, name)


def _coarse(template: str) -> str:
    """A template's first two words after its source (`sshd[#]: `, `[thread:Class@#] - `) and level:
    `Accepted password` and `Failed password` are two kinds, whatever user name follows."""
    message = _SOURCE.sub("", _MESSAGE.sub("", template, count=1), count=1)
    words = [
        w for w in message.split() if w.upper().strip("[]:") not in _LEVELS and any(c.isalpha() for c in w)
    ]
    return " ".join(words[:2])


_RARE = 3
"""A template seen at most this often is a rare line: its first and last occurrence are facts."""
_RARE_LISTED = 2000
"""Rare templates ranked at most: more can never fit a budget."""


def _rare_templates(
    groups: dict[str, list[int]], kind_of: Mapping[str, str], ranks: dict[str, int], base: int
) -> list[tuple[int, int]]:
    """(priority, index) of every rare template's first and last line, right after its kind's
    first line (`ranks`: a kind's rank, rarest first): one line per kind would hide `ELECTION TOOK - 238`
    behind `ELECTION TOOK - 49`, and the one line among thousands is what a log is read for."""
    rare = sorted(
        (ranks.get(kind_of[template], 0), count, first, last)
        for template, (first, last, count) in groups.items()
        if count <= _RARE
    )
    out: list[tuple[int, int]] = []
    shown: Counter[int] = Counter()
    for kind, _, first, last in rare[:_RARE_LISTED]:
        rank = base + kind + 2 * shown[kind]
        shown[kind] += 1
        out += [(rank, first), (rank + 1, last)]
    return out


def coarse_kinds(templates: Sequence[str]) -> dict[str, str]:
    """Each template's kind, by `_coarse`: the default of `compress_log`'s `kinds`."""
    return {template: _coarse(template) for template in templates}


def compress_log(
    text: str,
    budget: int,
    pointer: str | None,
    kinds: Callable[[Sequence[str]], Mapping[str, str]] = coarse_kinds,
) -> str:
    """`kinds` maps each distinct template to its kind (a template miner may stand in for
    `coarse_kinds`: `benchmarks/log_templates.py` measures Drain3 there)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and not lines[-1]:
        lines.pop()
    templates: list[str] = []
    for start in range(0, len(lines), _CHUNK):  # whole-chunk passes: C speed, a chunk's copies at a time
        chunk = "\n".join(lines[start : start + _CHUNK])
        templates += _MASK.sub("#", _STAMP.sub("", chunk)).split("\n")
    levels: Counter[str] = Counter()
    groups: dict[str, list[int]] = {}
    severity: dict[int, int] = {}
    for i, line in enumerate(lines):
        template = templates[i].strip()
        level = _level(template)
        if level:
            levels[level] += 1
        if not template:
            continue
        group = groups.get(template)
        if group is None:
            groups[template] = [i, i, 1]
            if level in ("FATAL", "CRITICAL", "ERROR"):
                severity[i] = 0
            elif _EXCEPTION.match(line):
                severity[i] = 1
            elif level == "WARNING":
                severity[i] = 3
        else:
            group[1] = i
            group[2] += 1
    shown = list(lines)
    for first, last, count in groups.values():
        if count > 1:
            shown[first] = f"{lines[first]} [x{count} similar, last L{last + 1}]"
    common = max(_RARE, len(lines) // 100)
    priorities = [
        (p, i) for i, p in severity.items() if p < 3 or groups[templates[i].strip()][2] <= common
    ]  # a warning repeated hundreds of times ranks as its kind (below): it says less than a rare line
    priorities += [(2, i) for i in (0, 1, len(lines) - 2, len(lines) - 1) if 0 <= i < len(lines)]
    kind_of = kinds(list(groups))
    coarse: dict[str, list[int]] = {}  # coarse kind -> [lines of that kind, first template's line]
    for template, (first, _, count) in groups.items():
        kind = coarse.setdefault(kind_of[template], [0, first])
        kind[0] += count
    order = sorted(coarse.values(), key=lambda kind: (kind[0], kind[1]))
    rare = {first: 10 + n for n, (_, first) in enumerate(order)}  # one line of each kind, rarest first
    priorities += [(rank, first) for first, rank in rare.items()]
    ranks = {kind: rare[first] - 10 for kind, (_, first) in coarse.items()}
    priorities += _rare_templates(groups, kind_of, ranks, 11)
    counts = ", ".join(f"{name} {levels[name]}" for name in _ORDER if levels[name]) or "no levels"
    header = f"[log: {len(lines)} lines; {counts}; distinct lines, repeats folded; {where(pointer)}]"
    return pick_lines(shown, budget, priorities, numbered=True, header=header, max_line=200)
