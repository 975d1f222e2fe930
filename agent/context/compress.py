"""The fallback compressor: any tool result in at most `budget` characters, keeping the facts.

A head/tail cut keeps whatever sits at the ends; this one detects what the result is (JSON, an
HTTP response, HTML, a test run, a traceback, a log, a diff, ...) and keeps what that kind is
read for: the one failing test, the root cause, the rate-limit header. Results that fit come
back unchanged; every cut names where the full result is (`pointer`). It never raises, never
exceeds the budget, and gives the same output under any PYTHONHASHSEED.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.context.compressors.common import MIN_BUDGET, fit, where
from agent.context.compressors.detect import (
    is_csv,
    is_diagnostics,
    is_diff,
    is_git_log,
    is_html,
    is_http,
    is_log,
    is_ndjson,
    is_paths,
    is_source,
    is_test_output,
    is_trace,
    is_traceback,
    is_xml,
    table_columns,
)
from agent.context.compressors.jsonish import TooDeep, dump_full, loads_json_text, normalize, safe_str

if TYPE_CHECKING:
    from agent.context.compressors.http import Transcript

__all__ = ["MIN_BUDGET", "compress", "detect"]

TARGET = {"tests": 1.0, "traceback": 1.0, "trace": 1.0, "json": 0.9, "diff": 0.9, "binary": 1.0}
"""Share of the budget a kind aims for (0.8 unless listed): the budget is a cap, not a goal, since
`read_artifact` fetches more when needed and every char is paid on every step."""

_TEXT = {
    "html": "html:compress_html",
    "tests": "testrun:compress_tests",
    "traceback": "pytraceback:compress_traceback",
    "log": "logs:compress_log",
    "diff": "diff:compress_diff",
    "diagnostics": "diagnostics:compress_diagnostics",
    "trace": "traces:compress_trace",
    "ndjson": "records:compress_ndjson",
    "csv": "records:compress_csv",
    "xml": "records:compress_xml",
    "git_log": "text:compress_git_log",
    "source": "text:compress_source",
    "paths": "text:compress_paths",
    "table": "text:compress_table",
    "text": "text:compress_plain",
}
"""Each text kind's `module:function` under `agent.context.compressors`, imported on first use so a
run loads only the kinds its results are."""


def _compress_structured(value: Any, budget: int, pointer: str | None) -> str:
    from agent.context.compressors.structured import compress_structured

    return compress_structured(value, budget, pointer)


def detect(value: Any) -> str:
    """The kind of a tool result: json, http, binary, or one of the text kinds above."""
    value = _as_content(value)
    if isinstance(value, _Binary):
        return "binary"
    if not isinstance(value, str):
        return "http" if is_http(value) else "json"
    if is_ndjson(value):
        return "ndjson"
    if loads_json_text(value)[0]:
        return "json"
    if value.startswith("HTTP/") and _transcript(value) is not None:
        return "http"
    return _text_kind(value)


def _text_kind(text: str) -> str:
    if is_html(text):
        return "html"
    if is_test_output(text):
        return "tests"
    if is_xml(text):
        return "xml"
    if is_ndjson(text):
        return "ndjson"
    lines = text[:200_000].splitlines()
    if is_diff(lines):
        return "diff"
    if is_git_log(lines):
        return "git_log"
    if is_diagnostics(lines):
        return "diagnostics"
    if is_log(lines):
        return "log"
    if is_traceback(text):
        return "traceback"
    if is_trace(lines):
        return "trace"
    if is_csv(lines):
        return "csv"
    if len(text) > 300 * max(len(lines), 1):
        return "text"  # minified code or one long line: cut by characters, not outlined
    if is_source(lines):
        return "source"
    if is_paths(lines):
        return "paths"
    if table_columns(lines):
        return "table"
    return "text"


@dataclass(frozen=True)
class _Binary:
    """Bytes that are not text (a NUL in the first 4 KB): described, never decoded."""

    size: int


def _as_content(value: Any) -> Any:
    """Bytes decoded (binary data flagged), known objects opened into dicts or lists."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if b"\x00" in data[:4096]:
            return _Binary(len(data))
        return data.decode("utf-8", errors="replace")
    return normalize(value)


def compress(
    value: Any, budget: int = 2000, *, pointer: str | None = None, full_text: str | None = None
) -> str:
    """`value` as text of at most `budget` characters (floor `MIN_BUDGET`); `pointer` (the full
    result's artifact name) is named in every cut note, `full_text` saves re-dumping the result."""
    budget = max(int(budget), MIN_BUDGET)
    try:
        out = fit(_compress(value, budget, pointer, full_text), budget, pointer)
        if isinstance(value, (str, bytes, bytearray, memoryview)) or _strict_json(out):
            return out
        return _json_note(value, budget, pointer)  # JSON in, JSON out: whatever went wrong above
    except Exception:  # the promise is: never raise. A bug here degrades to a plain cut.
        try:
            if not isinstance(value, (str, bytes, bytearray, memoryview)):
                return _json_note(value, budget, pointer)
            return fit(full_text if full_text is not None else safe_str(value, budget * 4), budget, pointer)
        except Exception:
            return f"[unprintable {type(value).__name__} result; {where(pointer)}]"[:budget]


def _strict_json(text: str) -> bool:
    """`text` parses as JSON with no NaN or Infinity (what the model is promised for JSON input)."""

    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


def _json_note(value: Any, budget: int, pointer: str | None) -> str:
    """A valid-JSON stand-in for a structured result the compressor could not render."""
    note = f"{type(value).__name__} result too irregular to compress; {where(pointer)}"
    return json.dumps({"_cut": note[: max(budget - 20, 40)]}, ensure_ascii=False)


def _compress(value: Any, budget: int, pointer: str | None, full_text: str | None) -> str:
    content = _as_content(value)
    if isinstance(content, _Binary):
        return f"[binary data, {content.size:,} bytes; {where(pointer)}]"
    if isinstance(content, str):
        if len(content) <= budget:
            return content
        parsed, data = (False, None) if is_ndjson(content) else loads_json_text(content)
        if isinstance(data, TooDeep):
            note = f"JSON nested too deep to parse ({data.size:,} chars, starting {data.head[:40]})"
            note += f"; {where(pointer)}"
            return json.dumps({"_cut": note}, ensure_ascii=False)
        if parsed:
            return _compress_structured(data, _target("json", budget), pointer)
        if content.startswith("HTTP/") and (response := _transcript(content)) is not None:
            return response(budget, pointer, _compress_body)
        kind = _text_kind(content)
        module, function = _TEXT[kind].split(":")
        compressor: Callable[[str, int, str | None], str] = getattr(
            importlib.import_module(f"agent.context.compressors.{module}"), function
        )
        return compressor(content, _target(kind, budget), pointer)
    if full_text is None:
        full_text, _ = dump_full(content)
    if len(full_text) <= budget:
        return full_text
    return _compress_structured(content, _target("json", budget), pointer)


def _transcript(text: str) -> Transcript | None:
    from agent.context.compressors.http import transcript  # loaded by the runs that meet one

    return transcript(text)


def _compress_body(body: str, budget: int, pointer: str | None) -> str:
    return _compress(body, budget, pointer, None)


def _target(kind: str, budget: int) -> int:
    return max(int(budget * TARGET.get(kind, 0.8)), MIN_BUDGET)
