"""Which kind a tool result is: apart from the compressors, so a run imports only the kinds it
meets. Each detector reads a bounded sample, so detection is cheap on a huge result."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = [
    "is_csv",
    "is_diagnostics",
    "is_diff",
    "is_git_log",
    "is_html",
    "is_http",
    "is_log",
    "is_ndjson",
    "is_paths",
    "is_source",
    "is_test_output",
    "is_trace",
    "is_traceback",
    "is_xml",
    "table_columns",
]

DIAG_SITE = re.compile(r"^\S+?:\d+(?::\d+)?: (error|warning|note|fatal error|remark)(?:\[[\w-]+\])?: ")
DIAG_ARROW = re.compile(r"^\s*--> \S+:\d+(?::\d+)?\s*$")
DIFF_FILE = re.compile(r"^diff --git |^diff -\S* |^Index: ")
DIFF_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
HTML_HEAD_START = re.compile(r"^\s*(?:<!doctype html|<html\b|<\?xml[^>]*>\s*<html\b)", re.IGNORECASE)
HTML_TAGS = re.compile(
    r"<(?:div|span|p|a|body|table|tr|td|li|ul|h[1-6]|meta|link|script|br)\b", re.IGNORECASE
)
LOG_STAMP = re.compile(
    r"^[ \t]*\[?(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}"
    r"|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? \d{4}\]"
    r"|\d{1,2}/[A-Z][a-z]{2}/\d{4})[^ \n]*\]?[ \t]*",
    re.MULTILINE,
)
LOG_LEVEL = re.compile(
    r"\b(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL|SEVERE|PANIC)\b"
    r"|\[(error|warn|notice|info|debug|crit|alert|emerg)\]"  # Apache's error_log: `[error]`
)
PYTB_START = "Traceback (most recent call last):"
RECORDS_XML_START = re.compile(r"^\s*(?:<\?xml\b|<!DOCTYPE\s+\w+|<[A-Za-z_][\w.:-]*[\s>/])")
TESTS_PYTEST = re.compile(
    r"^=+ (?:test session starts|FAILURES|ERRORS|short test summary info)\b"
    r"|^=+ .*\b(?:passed|failed|errors?|skipped|no tests ran)\b.* in [\d.]+s",
    re.MULTILINE,
)
TESTS_UNITTEST = re.compile(r"^Ran \d+ tests? in [\d.]+s$", re.MULTILINE)
TESTS_OTHER = re.compile(
    r"^TAP version \d+$"  # node --test, tap, prove
    r"|^(?:\[\w+\] )?Tests run: \d+, Failures: \d+, Errors: \d+"  # Maven surefire, Gradle, JUnit console
    r"|^\s*<testsuites?\b[^>]*\btests=\"\d+\"",  # JUnit XML (surefire reports, pytest --junitxml, jest-junit)
    re.MULTILINE,
)
TEXT_DEF = re.compile(
    r"^\s*(?:@|(?:async\s+)?def\s|class\s|function\s|func\s|(?:pub(?:\([^)]*\))?\s+)?(?:fn|struct|enum|trait|impl)\s"
    r"|interface\s|export\s|module\s|package\s)"
)
TEXT_IMPORT = re.compile(
    r"^\s*(?:import\s|from\s+\S+\s+import\s|#include\s|use\s|require\(|const\s+\w+\s*=\s*require)"
)
TEXT_PATH = re.compile(r"^\s*(?:\.{1,2}/|/|~/)?[\w.@+-]+(?:/[\w.@+, -]*[\w.@+-])+/?\s*$")
TEXT_COMMIT = re.compile(r"^commit ([0-9a-f]{7,64})\b")
TEXT_COLUMNS = re.compile(r"\s{2,}")
TRACE_FRAME = re.compile(
    r"^\s*(?:at [\w$.<>\[\]/ -]+(?:\(.*\))?$|at \S+:\d+:\d+\)?$|\d+: (?:0x[0-9a-f]+ - )?\S+$|\S+\.go:\d+\b"
    r"|\d+: +0x[0-9a-f]+ - \S.*$)"  # RUST_BACKTRACE=full: `36:  0x5617 - <&dyn core[..]::Fn<()> + Sync>`
)
TRACE_HEAD = re.compile(
    r"^(?:Exception in thread|Caused by:|Suppressed:|thread '.*' (?:\(\d+\) )?panicked at|panic: "
    r"|fatal error: |goroutine \d+ (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[|"
    r"[\w.$]*(?:Error|Exception)(?::|$))"
)


def is_diff(lines: list[str]) -> bool:
    """A `diff --git` line, or a `---`/`+++` pair followed by a hunk header, near the top."""
    sample = lines[:2000]
    if any(DIFF_FILE.match(line) for line in sample):
        return any(DIFF_HUNK.match(line) or line.startswith("Binary files") for line in sample)
    return any(
        a.startswith("--- ") and b.startswith("+++ ") and DIFF_HUNK.match(c)
        for a, b, c in zip(sample, sample[1:], sample[2:], strict=False)
    )


def is_diagnostics(lines: list[str]) -> bool:
    """`path:line: error: ...` on a fifth of the lines, or ruff's `--> path:line:col` on a twenty-fifth
    (source panes between them)."""
    rows = [line for line in lines[:400] if line.strip()]
    if len(rows) < 3:
        return False
    sites = sum(1 for line in rows if DIAG_SITE.match(line))
    arrows = sum(1 for line in rows if DIAG_ARROW.match(line))
    return sites * 5 >= len(rows) or (arrows >= 2 and arrows * 25 >= len(rows))


def is_html(text: str) -> bool:
    head = text[:2000]
    return bool(HTML_HEAD_START.match(head)) or len(HTML_TAGS.findall(head)) >= 8


def is_log(lines: list[str]) -> bool:
    rows = [line for line in lines[:200] if line.strip()]
    if len(rows) < 10:
        return False
    stamped = sum(1 for line in rows if LOG_STAMP.match(line))
    leveled = sum(1 for line in rows if LOG_LEVEL.search(line[:80]))
    return max(stamped, leveled) * 2 >= len(rows)


def is_traceback(text: str) -> bool:
    return PYTB_START in text


def is_ndjson(text: str) -> bool:
    """One JSON object per line (JSON Lines), three lines or more."""
    if not text.lstrip().startswith("{"):
        return False
    rows = [line.strip() for line in text[:100_000].splitlines()[:200] if line.strip()]
    if len(rows) < 3 or not all(r.startswith("{") and r.endswith("}") for r in rows):
        return False
    try:
        json.loads(rows[0])
        json.loads(rows[-1])
    except ValueError:
        return False
    return True


def is_csv(lines: list[str]) -> bool:
    sample = [line for line in lines[:100] if line.strip()]
    if len(sample) < 5 or "," not in sample[0]:
        return False
    try:
        widths = Counter(len(row) for row in csv.reader(sample))
    except csv.Error:
        return False
    width, seen = widths.most_common(1)[0]
    header = next(csv.reader(sample[:1]), [])
    names = all(len(cell) <= 40 and len(cell.split()) <= 4 for cell in header)  # not sentences with commas
    return names and width >= 2 and seen * 10 >= len(sample) * 9


def is_xml(text: str) -> bool:
    return bool(RECORDS_XML_START.match(text[:500])) and text.count("<") >= 8


def is_http(value: Any) -> bool:
    """A dict shaped like an HTTP response: an int status, a headers mapping, and a body."""
    if not isinstance(value, Mapping):
        return False
    status = next((value[k] for k in ("status", "status_code", "statusCode") if k in value), None)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        return False
    return isinstance(value.get("headers"), Mapping) and any(
        k in value for k in ("body", "json", "data", "text")
    )


def is_test_output(text: str) -> bool:
    head = text[:200_000]
    return bool(TESTS_PYTEST.search(head) or TESTS_UNITTEST.search(head) or TESTS_OTHER.search(head))


def table_columns(lines: list[str]) -> int | None:
    """The usual number of whitespace-separated fields when `lines` look like a table:
    column-aligned, or the same number of fields on nine rows in ten."""
    rows = [line for line in lines[:200] if line.strip()]
    if len(rows) < 8:
        return None
    aligned = sum(1 for line in rows if "  " in line.strip()) * 2 >= len(rows)
    counts = Counter(len(line.split()) for line in rows)
    fields, seen = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    if aligned and seen * 10 < len(rows) * 6:  # columns are what 2+ spaces separate: free text last
        counts = Counter(len(TEXT_COLUMNS.split(line.strip())) for line in rows)
        fields, seen = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    if fields < 2 or seen * 10 < len(rows) * (6 if aligned else 8) or (not aligned and not 3 <= fields <= 8):
        return None  # unaligned: a few fields (`apt list`), not repeated sentences
    return fields


def is_source(lines: list[str]) -> bool:
    sample = lines[:400]
    defs = sum(1 for line in sample if TEXT_DEF.match(line))
    imports = sum(1 for line in sample if TEXT_IMPORT.match(line))
    return defs >= 3 and (defs + imports) * 40 >= len(sample)


def is_paths(lines: list[str]) -> bool:
    rows = [line for line in lines[:400] if line.strip()]
    paths = sum(1 for line in rows if TEXT_PATH.match(line))
    return paths >= 20 and paths * 10 >= len(rows) * 6


def is_git_log(lines: list[str]) -> bool:
    return bool(lines) and TEXT_COMMIT.match(lines[0]) is not None


def is_trace(lines: list[str]) -> bool:
    sample = lines[:3000]
    heads = sum(1 for line in sample if TRACE_HEAD.match(line))
    frames = sum(1 for line in sample if TRACE_FRAME.match(line))
    return heads >= 1 and frames >= 3
