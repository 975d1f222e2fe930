"""Test-runner output (pytest, unittest, TAP, Maven, JUnit XML): the counts, every failure,
its first error line.

What the next step needs from a test run is short: did it pass, how many failed,
which tests, and why (the first `E` line of each failure and where it happened).
Passing tests, progress dots and the source listings inside failure sections are
what makes the output long, and they are what gets cut.
"""

from __future__ import annotations

import re

from agent.context.compressors.common import pick_lines, where

__all__ = ["compress_tests"]

_SUMMARY = re.compile(
    r"^=+ .*\b(?:passed|failed|errors?|skipped|xfailed|xpassed|no tests ran)\b.*=+$"
    r"|^(?:Ran \d+ tests?|FAILED \(|OK\b|collected \d+ items?|collecting \.\.\. collected)"
    r"|^\d+ (?:failed|passed|errors?)\b.*\bin [\d.]+s"  # `pytest -q`: the count line has no rule
    r"|^# (?:tests|pass|fail|cancelled|skipped|todo) \d+$|^1\.\.\d+$"  # TAP's plan and counts
    r"|^(?:\[\w+\] )?(?:Tests run: \d+, Failures: \d+|BUILD (?:SUCCESS|FAILURE))"  # Maven
    r"|^\s*<testsuites?\b"  # JUnit XML
)
_ERROR_KIND = re.compile(r"^(?:E\s+)?(\S+)")
_SHORT = re.compile(
    r"^(?:FAILED|ERROR|XPASS)\s+\S|^not ok \d+"  # pytest's short summary, TAP
    r"|^\[ERROR\]   \S+[.:]\S"  # Maven's list under `Failures:`/`Errors:` (`CalcTest.case17:22 expected...`)
    r"|^\s*<testcase\b.*[^/]>$"  # a JUnit testcase with something inside: a failure, an error
)
_TAP_ERROR = re.compile(r"^\s+(?:error|message):")
"""A failing TAP test's YAML block: `error: |-` and the message under it."""
_XML_FAILURE = re.compile(r"^\s*<(?:failure|error)\b")
_SECTION = re.compile(r"^_{2,} (.+?) _{2,}$|^(?:FAIL|ERROR): \S")
_ERROR_LINE = re.compile(r"^E\s+\S")
_LOCATION = re.compile(r"^[\w./\\-]+\.py:\d+: \S|^  File \"[^\"]+\", line \d+")  # pytest's, unittest's
_VERBOSE_FAIL = re.compile(r"::\S+ (?:FAILED|ERROR)\b")
_UNITTEST_EXC = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception)\b")


_SUITE = re.compile(r"^(\s*<testsuites?)\b")
_COUNT_ATTRIBUTE = re.compile(r'\b(?:name|tests|failures|errors|skipped|time)="[^"]*"')


def _suite(line: str) -> str:
    """A JUnit `<testsuite ...>` line with only its name and counts: its schema attributes come
    first and would push the counts past the line's cut."""
    found = _SUITE.match(line)
    if not found:
        return line
    return " ".join([found.group(1), *_COUNT_ATTRIBUTE.findall(line)]) + (">" if line.endswith(">") else "")


def compress_tests(text: str, budget: int, pointer: str | None) -> str:
    lines = [_suite(line.rstrip()) for line in text.splitlines()]
    priorities: list[tuple[int, int]] = []
    in_section = False
    opened = -2  # the line of the latest section header
    first_error_taken = False
    located = False
    shapes: set[str] = set()  # an error line seen before (other numbers) ranks with the rest
    short = [i for i, line in enumerate(lines) if _SHORT.match(line)]
    ends = {short[0], short[-1]} if len(short) > 8 else set(short)
    for i, line in enumerate(lines):
        if _TAP_ERROR.match(line) or _XML_FAILURE.match(line):  # why a TAP or JUnit test failed
            message = [j for j in range(i, min(i + 6, len(lines))) if lines[j].strip() not in ("", "|-", "|")]
            priorities += [(1 if j == message[0] else 3, j) for j in message[:4]]
            continue
        if _SUMMARY.search(line):
            priorities.append((0, i))
        elif _SHORT.match(line):
            priorities.append((1 if i in ends else 4, i))  # a long FAILED list: its ends, then the rest
        elif _SECTION.match(line):
            priorities.append((2, i))
            in_section, first_error_taken, opened = True, False, i
        elif line.startswith("=") or (line.startswith("-" * 10) and i != opened + 1):
            in_section = (
                False  # (unittest rules off its `FAIL:` header with dashes: the section starts there)
            )
        elif in_section and not first_error_taken and (_ERROR_LINE.match(line) or _UNITTEST_EXC.match(line)):
            shape = _ERROR_KIND.match(line).group(1)  # type: ignore[union-attr]
            priorities.append((1 if shape not in shapes else 3, i))
            shapes.add(shape)
            first_error_taken = True
        elif in_section and _LOCATION.match(line):
            priorities.append((2 if not located else 3, i))
            located = True
        elif _VERBOSE_FAIL.search(line):
            priorities.append((4, i))
    priorities += [(5, i) for i in (0, len(lines) - 1) if i >= 0]
    footer = f"[test output: {len(lines)} lines; kept counts, failures, first error lines; {where(pointer)}]"
    return pick_lines(lines, budget, priorities, gaps=False, footer=footer, max_line=200)
