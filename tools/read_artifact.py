"""`read_artifact`: read back part of a full tool result that was cut from the context.

When a result is slimmed or compressed, its cut note ends with `artifact:<name>`.
This tool returns a bounded slice of that stored result, chosen one of three ways:

    read_artifact(name, start_line=120, end_line=160)   lines a-b (1-based, inclusive)
    read_artifact(name, json_path="orders[3].customer")  one value of a JSON result
    read_artifact(name, pattern="ERROR|refund")          the lines that match (numbered)

Only plain artifact names are accepted (no folders, no `..`), and the file must be
a regular file inside the store: a symlink, or anything resolving outside the
store's root, is refused. A slice too long for `max_chars` is cut and says how to
read on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent.context.artifacts import resolve_artifact
from agent.context.compress import compress
from agent.registry import Tool, tool

__all__ = ["make_read_artifact", "read_artifact", "select_json"]

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


def _numbered(lines: list[tuple[int, str]], max_chars: int, header: str, more: str) -> str:
    """`L<n> text` lines under `header` (which may use {first} and {last}), cut to `max_chars`."""
    shown: list[str] = []
    used = len(header) + 24
    for position, (number, line) in enumerate(lines):
        text = f"L{number} {line}"
        if used + len(text) + 1 > max_chars - len(more) - 8 and position:
            last = lines[position - 1][0]
            return "\n".join([header.format(first=lines[0][0], last=last), *shown, more.format(next=number)])
        shown.append(text[: max_chars - used - len(more) - 8])
        used += len(text) + 1
    first, last = (lines[0][0], lines[-1][0]) if lines else (0, 0)
    return "\n".join([header.format(first=first, last=last), *shown])


def make_read_artifact(root: str | Path, *, max_chars: int = 6000) -> Tool:
    """A `read_artifact` tool reading the store under `root`, answering at most `max_chars`."""
    base = Path(root)

    def read_artifact(
        name: str, start_line: int = 0, end_line: int = 0, json_path: str = "", pattern: str = ""
    ) -> str:
        """Read part of a full tool result that was cut: by line range, JSON path, or pattern.

        Args:
            name: what follows `artifact:` in the cut note.
            start_line: first line (1-based).
            end_line: last line (inclusive).
            json_path: e.g. items[3].customer or items[*].id (JSON results).
            pattern: regex; returns the matching lines.
        """
        text = resolve_artifact(base, name).read_text(encoding="utf-8", errors="replace")
        if json_path:
            try:
                data = json.loads(text)
            except ValueError:
                raise ValueError(f"{name} is not JSON; read it by lines or pattern") from None
            selected = json.dumps(select_json(data, json_path), ensure_ascii=False, separators=(",", ":"))
            if len(selected) <= max_chars:
                return selected
            return compress(json.loads(selected), max_chars, pointer=name)
        lines = text.splitlines()
        first = max(start_line or 1, 1)
        last = min(end_line or len(lines), len(lines))
        numbered = [(n, lines[n - 1]) for n in range(first, last + 1)]
        if pattern:
            try:
                regex = re.compile(pattern, re.IGNORECASE)
            except re.error:
                regex = re.compile(re.escape(pattern), re.IGNORECASE)
            numbered = [(n, line) for n, line in numbered if regex.search(line[:2000])]
            header = f"[{len(numbered)} lines of {len(lines)} match {pattern!r}]".replace("{", "{{").replace(
                "}", "}}"
            )
            return _numbered(
                numbered, max_chars, header, "[... more matches from line {next}: pass start_line]"
            )
        header = f"[lines {{first}}-{{last}} of {len(lines)}]"
        return _numbered(numbered, max_chars, header, "[... read on with start_line={next}]")

    return tool(compress=False)(read_artifact)  # already bounded: compressing it again would defeat it


read_artifact = make_read_artifact("artifacts")
"""`read_artifact` over the default store (`./artifacts`)."""
