"""Record formats read line by line: NDJSON, CSV, XML.

These are lists of records, and what a reader needs is how many there are, the
first and the last, and the odd ones (an ERROR event among INFO, a failed row).
Records are kept verbatim, never re-encoded, so an id or a whole record can be
quoted back exactly; the footer counts records (and, for XML, elements by tag),
not only lines.
"""

from __future__ import annotations

import csv
import re
from collections import Counter

from agent.context.compressors.common import IMPORTANT, fit, head_tail, pick_lines, where

__all__ = ["compress_csv", "compress_ndjson", "compress_xml"]

_ELEMENT = re.compile(r"<([A-Za-z_][\w.:-]*)[\s>/]")
_XML_TAG = re.compile(r"<(/?)([A-Za-z_][\w.:-]*)(?:[^>\"']|\"[^\"]*\"|'[^']*')*?(/?)>")
_COMMENTS = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>", re.DOTALL)


def compress_ndjson(text: str, budget: int, pointer: str | None) -> str:
    """First and last records, records that read as errors or warnings, the record count."""
    lines = [line for line in text.splitlines() if line.strip()]
    priorities = head_tail(len(lines), budget)
    priorities += [(3, i) for i, line in enumerate(lines) if IMPORTANT.search(line)][:30]
    footer = f"[ndjson: {len(lines)} records; kept first, last and error records; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, footer=footer, max_line=600)


def compress_csv(text: str, budget: int, pointer: str | None) -> str:
    """The header row, first and last rows, rows that read as errors; rows x columns counted."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        rows = (m.group(0) for m in re.finditer(r"[^\n]*\n|[^\n]+$", text))  # not a StringIO: 4 bytes a char
        records = sum(1 for _ in csv.reader(rows)) - 1
        columns = len(next(csv.reader([lines[0]])))
    except (csv.Error, StopIteration):
        records, columns = len(lines) - 1, 0
    priorities = [(0, 0)] + [(p, i + 1) for p, i in head_tail(len(lines) - 1, budget)]
    priorities += [(5, i) for i, line in enumerate(lines) if i and IMPORTANT.search(line)][:20]
    footer = f"[csv: {records} rows x {columns} columns; kept header, first and last rows; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, footer=footer, max_line=300)


def _xml_items(text: str) -> tuple[str, int]:
    """(root tag, number of its child elements): the items an XML document lists."""
    depth = 0
    root = ""
    items = 0
    for found in _XML_TAG.finditer(text, 0, 2_000_000):
        closing, name, selfclosing = found.group(1), found.group(2), found.group(3)
        if closing:
            depth -= 1
            continue
        if depth == 0 and not root:
            root = name
        elif depth == 1:
            items += 1
        if not selfclosing:
            depth += 1
    return root, items


def compress_xml(text: str, budget: int, pointer: str | None) -> str:
    """Head and tail by lines (by characters when on one line), comments last, items counted:
    the children of the root element, and elements by tag."""
    markup = _COMMENTS.sub("", text[:2_000_000])
    tags = Counter(_ELEMENT.findall(markup))
    common = ", ".join(f"<{tag}> x{n}" for tag, n in sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    root, items = _xml_items(markup)
    footer = (
        f"[xml: {items} items under <{root}>, {text.count(chr(10)) + 1} lines, {len(text):,} chars; "
        f"elements: {common}; {where(pointer)}]"
    )
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if len(lines) < 5:
        return fit(text, max(budget - len(footer) - 1, 60), None) + "\n" + footer
    comment = set()
    inside = False
    for i, line in enumerate(lines):
        if "<!--" in line:
            inside = True
        if inside:
            comment.add(i)
        if "-->" in line:
            inside = False
    priorities = [(p + (10_000 if i in comment else 0), i) for p, i in head_tail(len(lines), budget)]
    priorities += [(4, i) for i, line in enumerate(lines) if IMPORTANT.search(line) and i not in comment][:20]
    return pick_lines(lines, budget, priorities, footer=footer, max_line=300)
