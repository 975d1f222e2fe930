"""The reading half of `read_artifact`: a slice of a stored result by lines, JSON path or
pattern, bounded. Loaded the first time the model reads an artifact (the tool's declaration,
in `agent.context.read_artifact`, is all a run needs before that)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent.context.artifacts import ArtifactStore, read_artifact_text
from agent.context.pattern_search import compile_pattern, search

__all__ = ["read_part", "select_json"]

MAX_JSON_PATH_CHARS = 500
SHOW_LINE = 400
"""A matching line longer than this is shown as a window around the match."""

_SEGMENT = re.compile(r"\[(-?\d+|\*)\]|\[\"([^\"]*)\"\]|\['([^']*)'\]|\.?([^.\[\]]+)")


def _segments(path: str) -> list[str | int]:
    text = path.strip()
    text = text[1:] if text.startswith("$") else text
    parts: list[str | int] = []
    position = 0
    while position < len(text):
        found = _SEGMENT.match(text, position)
        if not found or found.end() == position:
            raise ValueError(f"cannot parse json_path {path!r} at {text[position:]!r}")
        index, double, single, bare = found.groups()
        if index is not None:
            parts.append("*" if index == "*" else int(index))
        else:
            parts.append(double if double is not None else single if single is not None else bare)
        position = found.end()
    return parts


def select_json(data: Any, path: str) -> Any:
    """The value at `path` (`a.b[0].c`, `a.b.0.c`, `items[*].id`, `["key.with.dots"]`)."""
    current: list[Any] = [data]
    spread = False
    walked = "$"
    for part in _segments(path):
        nxt: list[Any] = []
        for node in current:
            if part == "*":
                nxt.extend(
                    node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
                )
                continue
            if isinstance(node, list):
                try:
                    nxt.append(node[int(part)])
                except (ValueError, IndexError):
                    raise ValueError(f"{walked} is a list of {len(node)} items; no index {part!r}") from None
            elif isinstance(node, dict) and str(part) in node:
                nxt.append(node[str(part)])
            elif isinstance(node, dict):
                keys = ", ".join(list(node)[:20])
                raise ValueError(f"no key {part!r} at {walked}; keys there: {keys}")
            else:
                raise ValueError(f"{walked} is a {type(node).__name__}, it has no {part!r}")
        spread = spread or part == "*"
        current = nxt
        walked += f"[{part}]" if isinstance(part, int) or part == "*" else f".{part}"
    return current if spread else current[0]


def _numbered(entries: Iterable[tuple[int, str]], max_chars: int, header: str, more: str) -> str:
    """The `L<n> ...` entries under `header` (which may use {first} and {last}), cut to `max_chars`.
    Entries are consumed lazily: a slice of a huge artifact costs what is shown, not the whole."""
    shown: list[str] = []
    used, first, last = len(header) + 24, 0, 0
    for number, text in entries:
        if shown and used + len(text) + 1 > max_chars - len(more) - 8:
            return "\n".join([header.format(first=first, last=last), *shown, more.format(next=number)])
        room = max_chars - used - len(more) - 8
        if len(text) > room:  # one line longer than the whole answer: say how much is missing
            text = text[: max(room - 32, 0)] + f" …[+{len(text) - max(room - 32, 0):,} chars]"
        shown.append(text)
        used += len(text) + 1
        first, last = first or number, number
    return "\n".join([header.format(first=first, last=last), *shown])


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _around(line: str, start: int, end: int) -> str:
    """A window of `line` around the span `start:end`, at most SHOW_LINE characters."""
    left = max(0, min(start, len(line)) - SHOW_LINE // 3)
    right = min(len(line), max(end, start) + SHOW_LINE // 3, left + SHOW_LINE)
    return ("…" if left else "") + line[left:right] + ("…" if right < len(line) else "")


def _pattern_answer(
    lines: list[str], span: range, total: str, pattern: str, max_chars: int, deadline_s: float
) -> str:
    matcher = compile_pattern(pattern)
    result = search(((n, lines[n - 1]) for n in span), matcher, deadline_s=deadline_s)
    entries: list[tuple[int, str]] = []
    for hit in result.hits:
        line = lines[hit.line - 1]
        if len(line) <= SHOW_LINE:
            if not entries or entries[-1][0] != hit.line:
                entries.append((hit.line, f"L{hit.line} {line}"))
        else:  # a long line (a one-line JSON result): each match with what is around it
            entries.append((hit.line, f"L{hit.line}:{hit.start + 1} {_around(line, hit.start, hit.end)}"))
    count = f"at least {result.lines_matched}" if result.stopped_at else f"{result.lines_matched}"
    header = f"[{count} lines of {total} match {pattern!r}"
    header += f"; {matcher.note}]" if matcher.note else "]"
    if result.stopped_at is not None:
        header += (
            f"\n[search stopped at line {result.stopped_at} after {deadline_s:g} s: "
            f"narrow the pattern, or pass start_line={result.stopped_at} to go on]"
        )
    more = "[... more matches from line {next}: pass start_line={next}]"
    return _numbered(entries, max_chars, _escape(header), more)


def read_part(
    base: Path,
    store: ArtifactStore | None,
    name: str,
    start_line: int,
    end_line: int,
    json_path: str,
    pattern: str,
    *,
    max_chars: int,
    max_read_bytes: int,
    search_seconds: float,
) -> str:
    """What `read_artifact` answers (see `agent.context.read_artifact`); raises ValueError with
    what to do instead when the slice asked for cannot be given. With the run's `store`, its
    own folder is read first (`ArtifactStore.read_sized`), else the store under `base`."""
    if store is not None:
        text, size = store.read_sized(name, max_bytes=max_read_bytes)
    else:
        text, size = read_artifact_text(base, name, max_bytes=max_read_bytes)
    partial = size > max_read_bytes
    if json_path:
        if len(json_path) > MAX_JSON_PATH_CHARS:
            raise ValueError(f"json_path is {len(json_path):,} chars; at most {MAX_JSON_PATH_CHARS}")
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError(f"{name} is nested too deeply to parse; read it by lines or pattern") from None
        except ValueError:
            why = f"only its first {max_read_bytes:,} bytes can be read" if partial else "it is not JSON"
            raise ValueError(
                f"{name} cannot be read by json_path ({why}); read it by lines or pattern"
            ) from None
        selected = json.dumps(select_json(data, json_path), ensure_ascii=False, separators=(",", ":"))
        if len(selected) <= max_chars:
            return selected
        from agent.context.compress import compress

        return compress(json.loads(selected), max_chars, pointer=name)
    lines = text.splitlines()
    first = max(start_line, 1)
    last = min(end_line or len(lines), len(lines))
    if end_line and end_line < first:
        raise ValueError(f"end_line={end_line} is before start_line={first}")
    if first > max(len(lines), 1):
        raise ValueError(f"start_line={start_line} is past the end: {name} has {len(lines)} lines")
    span = range(first, last + 1)
    total = f"{len(lines)}" + (
        f" (only the first {max_read_bytes:,} of {size:,} bytes read)" if partial else ""
    )
    if pattern:
        return _pattern_answer(lines, span, total, pattern, max_chars, search_seconds)
    entries = ((n, f"L{n} {lines[n - 1]}") for n in span)
    header = f"[lines {{first}}-{{last}} of {_escape(total)}]"
    return _numbered(entries, max_chars, header, "[... read on with start_line={next}]")
