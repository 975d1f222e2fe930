"""Live shapes: does `validate_request` accept what the real Messages API accepted?

The strict simulator answers 400 whenever `validate_request` objects, so a rule the
real API does not have is a test that fails for no reason (or, worse, a framework
bent to please a fake). The witness is live traffic: cassettes that other open-source
projects recorded against api.anthropic.com. This script walks a directory of them
(vcrpy / pytest-recording YAML or JSON), takes every `POST /v1/messages` and
`/v1/messages/count_tokens` request body, and runs the validator on it.

    .venv/bin/python -m benchmarks.live_shapes                    # /tmp/live_recordings
    .venv/bin/python -m benchmarks.live_shapes DIR --verbose

One table per source (the first directory level: `<owner>__<repo>`): requests,
accepted, refused; then each refusal with its reason. A request the real API
answered 2xx and we refuse is a *false rejection* (the number that must be 0). A
request the API answered 4xx is an expected refusal: counted apart, with whether we
refuse it too (agreement). The last line is JSON:
`{"requests": N, "false_rejections": M, ...}`.

The recordings are third-party data: keep them outside the repository (they are
fetched into /tmp, never committed).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import gzip
import json
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from agent.testing.validate import LEGACY_API_VERSION, validate_count_tokens, validate_request

DEFAULT_ROOT = Path("/tmp/live_recordings")
API_HOST = "api.anthropic.com"
PATHS = ("/v1/messages", "/v1/messages/count_tokens")


@dataclass
class Recorded:
    """One recorded request: where it is, its parsed body, the status the API answered."""

    source: str
    file: str
    index: int
    path: str
    body: dict[str, Any]
    status: int | None
    error: str | None
    """The API's error message when it refused the request."""
    api_version: str
    """The recorded `anthropic-version` header; LEGACY_API_VERSION when the cassette dropped it."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps `!!binary` (bytes) and turns any other unknown tag into plain data."""


def _unknown_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_Loader.add_multi_constructor("!", _unknown_tag)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _unknown_tag)


def decode_body(raw: Any) -> Any:
    """A vcrpy body in any of its encodings → parsed JSON (None if it is not JSON).

    Handles: an already-parsed mapping (custom serializers), `{"string": ...}`
    wrappers, `bytes` from `!!binary` (gzip / zlib compressed or not), plain JSON
    strings and base64-encoded ones.
    """
    if raw is None:
        return None
    if isinstance(raw, dict):
        if set(raw) <= {"string", "encoding"} and "string" in raw:
            return decode_body(raw["string"])
        return raw
    if isinstance(raw, list):
        return raw
    if isinstance(raw, bytes):
        data = raw
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        elif data[:1] == b"\x78":
            with contextlib.suppress(zlib.error):
                data = zlib.decompress(data)
        try:
            return decode_body(data.decode("utf-8"))
        except UnicodeDecodeError:
            return None
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
        try:
            decoded = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None
        return decode_body(decoded) if decoded[:1] in (b"{", b"[", b"\x1f", b"\x78") else None
    return None


def _status(response: Any) -> int | None:
    if not isinstance(response, dict):
        return None
    status = response.get("status")
    if isinstance(status, dict):
        status = status.get("code")
    status = status if status is not None else response.get("status_code")
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def _error_message(response: Any) -> str | None:
    if not isinstance(response, dict):
        return None
    body = decode_body(response["parsed_body"] if "parsed_body" in response else response.get("body"))
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("message")) if isinstance(error, dict) else None


def _header(headers: Any, name: str) -> str | None:
    if not isinstance(headers, dict):
        return None
    for key, value in headers.items():
        if str(key).lower() == name:
            value = value[0] if isinstance(value, list) and value else value
            return str(value) if value else None
    return None


def _interactions(document: Any) -> list[Any]:
    if isinstance(document, dict):
        for key in ("interactions", "requests", "entries"):
            if isinstance(document.get(key), list):
                return list(document[key])
        if "request" in document:
            return [document]
        return []
    return list(document) if isinstance(document, list) else []


def _load(path: Path) -> Any:
    raw = path.read_bytes()
    if path.suffix == ".gz" or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8", errors="replace")
    if path.name.endswith((".json", ".json.gz")):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return None
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError:
        return None


def iter_requests(root: Path) -> Iterator[Recorded]:
    """Every recorded POST to the Messages API (or count_tokens) under `root`."""
    suffixes = (".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz", ".json.gz")
    for file in sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(suffixes)):
        relative = file.relative_to(root)
        source = relative.parts[0] if len(relative.parts) > 1 else "."
        for index, interaction in enumerate(_interactions(_load(file))):
            if not isinstance(interaction, dict):
                continue
            request = interaction.get("request")
            if not isinstance(request, dict) or str(request.get("method", "")).upper() != "POST":
                continue
            url = urlsplit(str(request.get("uri") or request.get("url") or ""))
            path = url.path.rstrip("/")
            if url.hostname != API_HOST or path not in PATHS:
                continue
            body = decode_body(request["parsed_body"] if "parsed_body" in request else request.get("body"))
            if not isinstance(body, dict):
                continue
            response = interaction.get("response")
            status = _status(response)
            error = _error_message(response) if status and status >= 400 else None
            version = _header(request.get("headers"), "anthropic-version") or LEGACY_API_VERSION
            yield Recorded(
                source, str(relative.relative_to(source)), index, path, body, status, error, version
            )


@dataclass
class SourceStats:
    requests: int = 0
    accepted: int = 0
    refused: int = 0
    api_refused: int = 0
    api_refused_agreed: int = 0
    false_rejections: list[tuple[Recorded, list[str]]] = field(default_factory=list)
    api_refusals: list[tuple[Recorded, list[str]]] = field(default_factory=list)


def census(body: dict[str, Any], into: Counter[str]) -> None:
    """Count the shapes a body exercises: top-level keys, roles, block types, tool types, thinking."""
    into.update(f"key {k}" for k in body)
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            into[f"tool {tool.get('type', 'custom')}"] += 1
    thinking = body.get("thinking")
    if isinstance(thinking, dict):
        into[f"thinking {thinking.get('type')}"] += 1

    def blocks(items: Any) -> None:
        for block in items if isinstance(items, list) else []:
            if isinstance(block, dict) and "type" in block:
                into[f"block {block['type']}"] += 1
                into.update(f"cache_control {block['type']}" for _ in [0] if block.get("cache_control"))
                blocks(block.get("content"))

    for message in body.get("messages") or []:
        if isinstance(message, dict):
            into[f"role {message.get('role')}"] += 1
            blocks(message.get("content"))


def check(recorded: Recorded) -> list[str]:
    counting = recorded.path.endswith("/count_tokens")
    return (validate_count_tokens if counting else validate_request)(
        recorded.body, api_version=recorded.api_version
    )


def run(root: Path, *, verbose: bool = False, out: Any = sys.stdout) -> dict[str, Any]:
    stats: dict[str, SourceStats] = {}
    shapes: Counter[str] = Counter()
    for recorded in iter_requests(root):
        census(recorded.body, shapes)
        s = stats.setdefault(recorded.source, SourceStats())
        errors = check(recorded)
        s.requests += 1
        if errors:
            s.refused += 1
        else:
            s.accepted += 1
        api_refused = recorded.status is not None and 400 <= recorded.status < 500
        if api_refused:
            s.api_refused += 1
            s.api_refused_agreed += bool(errors)
            s.api_refusals.append((recorded, errors))
        elif errors:
            s.false_rejections.append((recorded, errors))
    print(f"Live request shapes under {root}\n", file=out)
    print("| source | requests | accepted | refused | false rejections | API 4xx | we refuse too |", file=out)
    print("|---|--:|--:|--:|--:|--:|--:|", file=out)
    for source, s in sorted(stats.items()):
        print(
            f"| {source} | {s.requests} | {s.accepted} | {s.refused} | {len(s.false_rejections)} "
            f"| {s.api_refused} | {s.api_refused_agreed} |",
            file=out,
        )
    for source, s in sorted(stats.items()):
        for title, rows in (("false rejection", s.false_rejections), ("API 4xx", s.api_refusals)):
            for recorded, errors in rows:
                reasons = "; ".join(errors) if errors else "(we accept it)"
                if not verbose:
                    reasons = reasons[:400]
                print(f"\n{title}: {source} {recorded.file} #{recorded.index} [{recorded.status}]", file=out)
                if recorded.error:
                    print(f"  API said: {recorded.error}", file=out)
                print(f"  we say: {reasons}", file=out)
    print("\nShapes exercised (occurrences):", file=out)
    for prefix in ("key", "role", "block", "cache_control", "tool", "thinking"):
        found = sorted((k.split(" ", 1)[1], n) for k, n in shapes.items() if k.split(" ", 1)[0] == prefix)
        print(f"  {prefix}: " + ", ".join(f"{name} {n}" for name, n in found), file=out)
    totals = {
        "requests": sum(s.requests for s in stats.values()),
        "accepted": sum(s.accepted for s in stats.values()),
        "false_rejections": sum(len(s.false_rejections) for s in stats.values()),
        "api_refused": sum(s.api_refused for s in stats.values()),
        "api_refused_agreed": sum(s.api_refused_agreed for s in stats.values()),
        "sources": len(stats),
    }
    print("\n" + json.dumps(totals), file=out)
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--verbose", action="store_true", help="print refusal reasons in full")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        print(f"no recordings at {args.root}", file=sys.stderr)
        return 2
    run(args.root, verbose=args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
