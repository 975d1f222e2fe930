"""Reading committed cassettes back, and the checks the cassette lint runs over them.

Kept apart from the recording side (`agent.testing.cassettes`) because it needs no
vcrpy: a cassette is plain YAML, and judging it is pure. `prefix_breaks` is the
rule that matters most for the economics: a request must resend, unchanged, the
prefix the previous request marked for caching, or the cache reads it paid for
silently stop.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent.testing.cache_model import Position, render

__all__ = ["Interaction", "RecordedCassette", "prefix_breaks", "read_cassette", "secrets_in"]


def _yaml() -> Any:
    import yaml  # type: ignore[import-untyped]

    return yaml


@dataclass(frozen=True)
class Interaction:
    method: str
    path: str
    request: Any
    status: int
    response: Any
    headers: Mapping[str, list[str]]


@dataclass(frozen=True)
class RecordedCassette:
    path: Path
    text: str
    metadata: Mapping[str, Any]
    interactions: list[Interaction] = field(default_factory=list)


def read_cassette(path: str | Path) -> RecordedCassette:
    """A cassette file with its bodies parsed (raises on a file that does not parse)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    data = _yaml().safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise ValueError(f"{path}: not a cassette (no interactions list)")
    interactions = []
    for i in data["interactions"]:
        request, response = i["request"], i["response"]
        interactions.append(
            Interaction(
                request["method"],
                urlsplit(request["uri"]).path,
                (request.get("body") or {}).get("json"),
                int(response["status"]["code"]),
                (response.get("body") or {}).get("json"),
                response.get("headers") or {},
            )
        )
    return RecordedCassette(path, text, data.get("metadata") or {}, interactions)


_SECRETS = (re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}"), re.compile(r"Bearer\s+[A-Za-z0-9._\-]{6,}", re.I))


def secrets_in(text: str) -> list[str]:
    """Secret-looking strings in `text` (shown cut, so the report does not leak them)."""
    return [m.group(0)[:12] + "…" for pattern in _SECRETS for m in pattern.finditer(text)]


def prefix_breaks(bodies: Iterable[Mapping[str, Any]]) -> list[str]:
    """Where a request's cache prefix differs from the previous request's, up to its last breakpoint.

    Requests with tools (the agent loop) and without (summaries) are compared
    within their own stream. Empty list: every prefix that was marked for caching
    was sent again byte-for-byte (same model and messages-level settings too).
    """
    problems: list[str] = []
    previous: dict[bool, tuple[int, list[Position]]] = {}
    for n, body in enumerate(bodies, start=1):
        stream = "tools" in body
        positions = render(body)
        if stream in previous:
            k, before = previous[stream]
            marked = [i for i, p in enumerate(before) if p.ttl is not None]
            if marked and (
                len(positions) <= marked[-1] or positions[marked[-1]].digest != before[marked[-1]].digest
            ):
                problems.append(f"request {n}: " + _first_change(before, positions, marked[-1], k))
        previous[stream] = (n, positions)
    return problems


def _first_change(before: Sequence[Position], after: Sequence[Position], last: int, k: int) -> str:
    for i in range(last + 1):
        if i >= len(after):
            return f"has {len(after)} blocks; request {k} cached {last + 1}"
        if before[i].digest != after[i].digest:
            if before[i].text == after[i].text and before[i].level == after[i].level:
                return (
                    f"block {i} ({after[i].level}) is the same; model or tool_choice/thinking/effort changed"
                )
            old, new = before[i].text[:120], after[i].text[:120]
            return f"block {i} ({after[i].level}) changed since request {k}: {old!r} → {new!r}"
    return "prefix changed"
