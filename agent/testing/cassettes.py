"""Recorded HTTP sessions (vcrpy cassettes) that stay readable, strict and secret-free.

A cassette is the witness that the framework still sends exactly what it sent
when the test was recorded. So:

* Matching is on method, path, query and the JSON body (`json_body`): any change
  in what the framework sends, a reordered key included (prompt caching sees the
  bytes), fails the replay with a path-by-path diff instead of a silent pass.
* The YAML is readable: JSON bodies are stored parsed, multi-line strings as
  blocks, loopback ports dropped from URIs (and from the simulator's own origin where a
  response body names it: a batch's `results_url`), and only the headers that mean
  something are kept (request: content-type, anthropic-version, anthropic-beta;
  response: content-type, server, retry-after). `authorization` and `x-api-key`
  never reach the file.
* A replay that misses raises `CassetteMiss` (an `AssertionError`, and the run's
  `ModelCallFailed`) whose first lines are the diff against the nearest recorded request,
  not the SDK's bare "Connection error." with vcrpy's and httpx's stack chained before it.
* `metadata` records where the cassette came from (`recorded_on`: simulator or api)
  and whether its test may move the cache prefix (`moves_cache_prefix`), so the
  cassette lint (`agent.testing.cassette_lint`) can judge it without importing the test.

vcrpy and PyYAML are dev dependencies, imported only when a function needs them.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anthropic
from anthropic.types import Message

from agent.anthropic_llm import AnthropicLLM
from agent.errors import ModelCallFailed

__all__ = [
    "REPLAY_BASE_URL",
    "CassetteLLM",
    "CassetteMiss",
    "configure",
    "json_body",
    "stamp",
    "vcr_config",
]

REPLAY_BASE_URL = "http://cassette.invalid"
"""Where a replaying client points: vcrpy answers before any connection is tried."""
REQUEST_HEADERS = ("content-type", "anthropic-version", "anthropic-beta")
RESPONSE_HEADERS = ("content-type", "server", "retry-after")
HEADER_COMMENT = "# Recorded by pytest --record-mode=rewrite (see cassettes/README.md). Never edit by hand.\n"
MAX_DIFF_LINES = 30


def vcr_config() -> dict[str, Any]:
    """The `use_cassette` options every cassette in this project is recorded and replayed with."""
    return {
        "serializer": "yaml",
        "match_on": ["method", "path", "query", "json_body"],
        "decode_compressed_response": True,
        "filter_headers": ["authorization", "x-api-key"],
        "record_on_exception": False,
    }


def configure(vcr: Any) -> Any:
    """Register the readable serializer (as "yaml") and the `json_body` matcher on a `vcr.VCR`.

    It also puts back vcrpy's own filesystem persister: pytest-recording's
    replacement (for extra cassettes, unused here) cannot load cassette metadata.
    """
    from vcr.persisters.filesystem import FilesystemPersister  # type: ignore[import-untyped]

    vcr.register_serializer("yaml", ReadableYAML)
    vcr.register_matcher("json_body", json_body)
    vcr.register_persister(FilesystemPersister)
    return vcr


# -- matching ------------------------------------------------------------------------


def _parse(body: Any) -> Any:
    if body is None or body == b"" or body == "":
        return None
    try:
        return json.loads(body)
    except (TypeError, ValueError):
        return _Raw(body)


@dataclass(frozen=True)
class _Raw:
    body: Any


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _flatten(value: Any, path: str = "$") -> list[str]:
    if isinstance(value, dict) and value:
        return [line for key, item in value.items() for line in _flatten(item, f"{path}.{key}")]
    if isinstance(value, list) and value:
        return [line for i, item in enumerate(value) for line in _flatten(item, f"{path}[{i}]")]
    text = _compact(value)
    return [f"{path} = {text if len(text) <= 160 else text[:160] + '…'}"]


def json_body(r1: Any, r2: Any) -> None:
    """vcrpy matcher: JSON bodies equal byte-for-byte in meaning *and* key order.

    vcrpy passes the request being made first and the recorded one second; on a
    difference this raises `AssertionError` with a path-by-path diff.
    """
    new, recorded = _parse(r1.body), _parse(r2.body)
    if isinstance(new, _Raw) or isinstance(recorded, _Raw):
        if r1.body != r2.body:
            raise AssertionError("the bodies differ (not JSON)")
        return
    if _compact(new) == _compact(recorded):
        return
    diff = list(
        difflib.unified_diff(_flatten(recorded), _flatten(new), "recorded", "this request", n=0, lineterm="")
    )
    head = "same JSON, different key order (the cache sees different bytes)\n" if new == recorded else ""
    more = [f"… ({len(diff) - MAX_DIFF_LINES} more diff lines)"] if len(diff) > MAX_DIFF_LINES else []
    raise AssertionError(head + "\n".join(diff[:MAX_DIFF_LINES] + more))


# -- the readable serializer ----------------------------------------------------------


def _yaml() -> Any:
    import yaml  # type: ignore[import-untyped]

    return yaml


_AWKWARD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


def _dumper() -> Any:
    yaml = _yaml()

    class Dumper(yaml.SafeDumper):  # type: ignore[misc, name-defined]
        pass

    def string(dumper: Any, value: str) -> Any:
        style = None
        if _AWKWARD.search(value):
            style = '"'  # line breaks YAML folds (\r, NEL, LS, PS) and control characters: escaped
        elif "\n" in value:
            style = "|"
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, string)
    return Dumper


def _body_out(body: Any) -> dict[str, Any]:
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    parsed = _parse(body)
    if parsed is None:
        return {"string": ""}
    return {"string": body} if isinstance(parsed, _Raw) else {"json": parsed}


def _body_in(body: Mapping[str, Any] | None) -> str:
    if not body:
        return ""
    return _compact(body["json"]) if "json" in body else str(body.get("string") or "")


def _headers(headers: Mapping[str, Any], keep: Sequence[str]) -> dict[str, list[str]]:
    kept = {}
    for name, value in headers.items():
        if name.lower() in keep:
            kept[name.lower()] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return dict(sorted(kept.items()))


def _stable_uri(uri: str) -> str:
    """Loopback URIs lose their ephemeral port, so re-recording does not churn the file."""
    parts = urlsplit(uri)
    if parts.hostname in ("127.0.0.1", "localhost", "::1"):
        return urlunsplit((parts.scheme, parts.hostname, parts.path, parts.query, ""))
    return uri


def _stable_body(body: Any, uri: str) -> Any:
    """`body` with the loopback origin of `uri` (`http://127.0.0.1:54321`) written without its
    port, as `_stable_uri` writes the URI: a simulator's reply may name its own address (a
    message batch's absolute `results_url`, as the API sends it), and the ephemeral port would
    make every re-recording differ. A replay can still ask for such a URL: vcrpy answers it
    before any connection, matching method, path and query, not the port."""
    parts = urlsplit(uri)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1") or parts.port is None:
        return body
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if not isinstance(body, str):
        return body
    origin = f"{parts.scheme}://{parts.netloc}"
    return re.sub(re.escape(origin) + "(?![0-9])", origin.rsplit(":", 1)[0], body)


class ReadableYAML:
    """A vcrpy serializer: JSON bodies parsed, volatile headers dropped, a warning on top."""

    @staticmethod
    def serialize(cassette: Mapping[str, Any]) -> str:
        out: dict[str, Any] = {"version": cassette.get("version", 1)}
        if cassette.get("metadata"):
            out["metadata"] = dict(cassette["metadata"])
        out["interactions"] = [
            {
                "request": {
                    "method": i["request"]["method"],
                    "uri": _stable_uri(i["request"]["uri"]),
                    "headers": _headers(i["request"].get("headers") or {}, REQUEST_HEADERS),
                    "body": _body_out(i["request"].get("body")),
                },
                "response": {
                    "status": i["response"]["status"],
                    "headers": _headers(i["response"].get("headers") or {}, RESPONSE_HEADERS),
                    "body": _body_out(
                        _stable_body((i["response"].get("body") or {}).get("string"), i["request"]["uri"])
                    ),
                },
            }
            for i in cassette.get("interactions", [])
        ]
        text = _yaml().dump(out, Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=110)
        return HEADER_COMMENT + str(text)

    @staticmethod
    def deserialize(text: str) -> dict[str, Any]:
        data = _yaml().safe_load(text) or {}
        for interaction in data.get("interactions") or []:
            interaction["request"]["body"] = _body_in(interaction["request"].get("body"))
            interaction["response"]["body"] = {"string": _body_in(interaction["response"].get("body"))}
        return dict(data)


# -- replay and metadata --------------------------------------------------------------


class CassetteMiss(ModelCallFailed, AssertionError):
    """The framework sent a request the cassette does not hold (or the cassette is missing).

    A `ModelCallFailed` so that a run raises it as itself (with the run so far), its first
    lines the diff against the nearest recorded request; an `AssertionError` because it is
    a test's failure, not the model's."""


class CassetteLLM(AnthropicLLM):
    """`AnthropicLLM` that turns a vcrpy miss into `CassetteMiss` with the diff.

    The miss is raised with nothing chained: the SDK's "Connection error." and vcrpy's
    stack below it only push the diff down the failure."""

    def create(self, request: Mapping[str, Any]) -> Message:
        try:
            return super().create(request)
        except anthropic.APIConnectionError as error:
            miss = _miss(error)
            if miss is None:
                raise
            raise miss from None

    def count_tokens(self, request: Mapping[str, Any]) -> int:
        try:
            return super().count_tokens(request)
        except anthropic.APIConnectionError as error:
            miss = _miss(error)
            if miss is None:
                raise
            raise miss from None


RERECORD = (
    "If the change is intended, re-record with `pytest <test> --record-mode=rewrite` (cassettes/README.md)."
)


def _miss(error: BaseException) -> CassetteMiss | None:
    from vcr.errors import CannotOverwriteExistingCassetteException  # type: ignore[import-untyped]

    cause = error.__cause__
    if not isinstance(cause, CannotOverwriteExistingCassetteException):
        return None
    cassette = cause.cassette
    where = f"Cassette: {getattr(cassette, '_path', '?')}"
    nearest = _nearest(cassette, cause.failed_request)
    if nearest is None:  # missing, played out, or nothing alike: vcrpy's account says it best
        head = "the request is not in the cassette (or the cassette is missing). " + RERECORD
        return CassetteMiss(f"{head}\n\n{cause}")
    number, lines = nearest
    of = f"request {number} of {len(cassette.requests)}; - recorded, + sent"
    head = f"the request is not in the cassette; against the nearest recorded one ({of}):"
    return CassetteMiss("\n".join([head, *lines, RERECORD, where]))


def _nearest(cassette: Any, request: Any) -> tuple[int, list[str]] | None:
    """The recorded request that differs least from `request` (its 1-based number) and how it
    differs, one line per changed JSON path (`-` recorded, `+` this request); None when no
    recorded request is alike (vcrpy found none sharing a matcher) or one matches in full."""
    similar = cassette.find_requests_with_most_matches(request)
    if not similar or not all(failed for _, _, failed in similar):
        return None

    def differences(failed: Sequence[tuple[str, Any]]) -> list[str]:
        lines = []
        for name, message in failed:
            said = [
                line for line in str(message or "").splitlines() if not line.startswith(("---", "+++", "@@"))
            ]
            lines += (
                [f"  {line}" for line in said] if name == "json_body" else [f"  {name}: {' '.join(said)}"]
            )
        return lines

    shown = [(recorded, differences(failed)) for recorded, _, failed in similar]
    recorded, lines = min(shown, key=lambda pair: len(pair[1]))
    number = next(i for i, r in enumerate(cassette.requests, start=1) if r is recorded)
    return number, lines


def stamp(cassette: Any, **metadata: Any) -> None:
    """Store `metadata` in a cassette being recorded (a replayed one is left alone)."""
    if cassette is None or cassette.write_protected:
        return
    for key, value in metadata.items():
        cassette.get_metadata(key, value)
