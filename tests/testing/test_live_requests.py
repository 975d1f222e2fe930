"""Recorded live traffic, judged: `validate_request` refuses what the real API refused, and only that.

The recordings are other projects' exchanges with api.anthropic.com, kept outside this
repository in `../shared/realdata/live-traffic/` (see its README; nothing of it is copied
here): `recordings.jsonl.gz` (request, status, `anthropic-version`, betas, response) and
`pydantic-ai-requests.jsonl.gz` (request bodies with the status the API answered). Each
request is judged under its recording's `anthropic-version`; a recording that dropped the
header is judged under 2023-06-01, the version every SDK sent when these were recorded
(the SDK 2.x default, 2026-10-21, is later than all of them). The recorded betas are not
an input: `validate_request` sees no headers and takes beta shapes whether or not their
header was sent (`agent.testing.wire_shapes`), so a beta can only make it accept more.

* Every request the API answered 2xx is accepted (no false rejection), except the
  `EDITED` recordings, changed by hand after they were recorded (each with its evidence).
* Every request answered 400 for its shape is refused with the API's reason: the API's
  message is matched against `API_REASONS`, and the validator must give the same reason.
  A 400 no entry matches fails the test until someone classifies it.
* Answers whose cause is not in the request (`OUT_OF_SCOPE`: auth, unknown model, rate
  limit, billing) are listed with why; the validator's verdict on them proves nothing.

A failure names each recording as `source #index`.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.testing.validate import LEGACY_API_VERSION, OPEN_OBJECT, validate_count_tokens, validate_request

LIVE = Path(__file__).resolve().parents[2].parent / "shared" / "realdata" / "live-traffic"
RECORDINGS = "recordings.jsonl.gz"
PYDANTIC_AI = "pydantic-ai-requests.jsonl.gz"
UNRECORDED_VERSION = LEGACY_API_VERSION
"""The version a recording without its `anthropic-version` header is judged under."""

DD_TRACE = "github:DataDog/dd-trace-py@3bb9ecda2283 (2026-08-21)"
SDK_2_15 = "pypi:anthropic==2.15.0 sdist"
DD_CASSETTES = "DataDog/dd-trace-py:tests/contrib/anthropic/cassettes/"
SDK_RUNNER_SNAPSHOT = (
    "anthropics/anthropic-sdk-python:tests/lib/tools/__inline_snapshot__/test_runners/"
    "TestSyncRunTools/092be1de-d3f8-4c22-a4ea-a7ad54689836.json"
)
DD_EDIT = (
    "request hand-edited after recording (dd-trace-py commit db549c277d, noted in the shared README): "
    "its tool_result answers the id of the call recorded in anthropic_completion_tools.yaml, not the "
    "tool_use of its own assistant turn, a pairing the API refuses (400) but the answer was recorded first"
)
SDK_EDIT = (
    "model edited after recording: this copy (the 2.15.0 sdist) asks for claude-opus-5-5, the copy in "
    "the git history and the 0.100.0/1.0.0 sdists asks for claude-opus-4-5; the two are otherwise "
    "identical, answer included, and the answer says claude-opus-4-5-20251101 (no other recording's "
    "answer names a model other than the one asked for or its dated id)"
)
EDITED: dict[tuple[str, str, int], str] = {
    (DD_CASSETTES + "anthropic_completion_tools_call_with_tool_result_stream.yaml", DD_TRACE, 0): DD_EDIT,
    (
        DD_CASSETTES + "anthropic_completion_tools_call_with_tool_result_stream_helper.yaml",
        DD_TRACE,
        0,
    ): DD_EDIT,
    (SDK_RUNNER_SNAPSHOT, SDK_2_15, 0): SDK_EDIT,
    (SDK_RUNNER_SNAPSHOT, SDK_2_15, 1): SDK_EDIT,
}
"""(source, origin, index) of recordings whose request is not what was sent: no evidence either way."""


@dataclass(frozen=True)
class Reason:
    """One kind of 400 the API gives for a request's shape, and what the validator must say."""

    rule: str
    api: re.Pattern[str]
    ours: Callable[[re.Match[str]], str]
    """The text one of the validator's errors must contain, from the API's message."""


API_REASONS = (
    Reason(
        "structured outputs: every object sets additionalProperties: false",
        re.compile(rf"^(?P<where>[\w.$]+): {re.escape(OPEN_OBJECT)}$"),
        lambda m: f"{m['where']}: {OPEN_OBJECT}",
    ),
    Reason(
        "a tool_result needs its tool_use in the previous message",
        re.compile(r"unexpected `tool_use_id` found in `tool_result` blocks: (?P<id>[\w-]+)\."),
        lambda m: f"unexpected `tool_use_id` found in `tool_result` blocks: {m['id']}.",
    ),
    Reason(
        "an effort level the model does not take",
        re.compile(
            r"does not support effort level '(?P<level>\w+)'\. Supported levels: (?P<levels>[\w, ]+)\."
        ),
        lambda m: f"does not support effort level '{m['level']}'. Supported levels: {m['levels']}.",
    ),
    Reason(
        "a message that is not a message object",
        re.compile(r"^(?P<where>messages\.\d+): Input does not match the expected shape\.$"),
        lambda m: f"{m['where']}: Input should be",
    ),
)

OUT_OF_SCOPE: dict[int, str] = {
    401: "authentication (invalid x-api-key): refused before the body is read",
    403: "permission: the key's rights, not the request",
    404: "not_found: an unknown model id; the validator keeps no model list (an unknown model gets no rule)",
    413: "request too large: the byte size limit, not its shape",
    429: "rate limit: the organisation's quota, not the request",
    500: "server error",
    529: "overloaded",
}
OUT_OF_SCOPE_400 = ((re.compile(r"credit balance is too low"), "billing: the account, not the request"),)


@dataclass(frozen=True)
class Recorded:
    source: str
    origin: str
    index: int
    status: int
    api_version: str
    count_tokens: bool
    body: dict[str, Any]
    api_message: str | None
    real: str

    @property
    def key(self) -> tuple[str, str, int]:
        return self.source, self.origin, self.index

    @property
    def edited(self) -> bool:
        return self.key in EDITED

    @property
    def name(self) -> str:
        return f"{self.source} #{self.index} [{self.real}, {self.api_version}]"

    def judge(self) -> list[str]:
        check = validate_count_tokens if self.count_tokens else validate_request
        return check(self.body, api_version=self.api_version)


def _message(response: Any) -> str | None:
    error = response.get("error") if isinstance(response, dict) else None
    return str(error["message"]) if isinstance(error, dict) and "message" in error else None


def _rows(name: str) -> list[dict[str, Any]]:
    path = LIVE / name
    if not path.is_file():
        pytest.skip(f"{path} is absent: the shared real data is not in a plain clone of the repository")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@functools.cache
def recorded(corpus: str) -> tuple[Recorded, ...]:
    """The corpus's requests (responses-only rows left out); pydantic-ai rows indexed by line."""
    if corpus == RECORDINGS:
        return tuple(
            Recorded(
                r["source"],
                r["origin"],
                r["index"],
                r["status"],
                r["api_version"] or UNRECORDED_VERSION,
                r["endpoint"] == "/v1/messages/count_tokens",
                r["request"],
                _message(r["response"]),
                r["real"],
            )
            for r in _rows(RECORDINGS)
            if r["request"] is not None
        )
    # The extract kept no response: a refusal's message comes from the same cassette's row in
    # recordings.jsonl.gz (same source, same body), where the project's cassettes are too.
    messages = {(r.source, json.dumps(r.body, sort_keys=True)): r.api_message for r in recorded(RECORDINGS)}
    return tuple(
        Recorded(
            r["source"],
            PYDANTIC_AI,
            line,
            r["status"],
            UNRECORDED_VERSION,
            False,
            r["body"],
            messages.get((r["source"], json.dumps(r["body"], sort_keys=True))),
            "likely",
        )
        for line, r in enumerate(_rows(PYDANTIC_AI))
    )


def out_of_scope(r: Recorded) -> str | None:
    """Why the answer says nothing of the request's shape (None: it does)."""
    if 200 <= r.status < 300:
        return None
    if r.status == 400:
        return next((why for pattern, why in OUT_OF_SCOPE_400 if pattern.search(r.api_message or "")), None)
    return OUT_OF_SCOPE.get(r.status, f"unclassified status {r.status}: classify it in OUT_OF_SCOPE")


def summary(corpus: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for r in recorded(corpus):
        errors = r.judge()
        if r.edited:
            counts["edited"] += 1
        elif 200 <= r.status < 300:
            counts["2xx accepted" if not errors else "2xx FALSE REJECTION"] += 1
        elif out_of_scope(r) is None:
            counts["400 refused" if errors else "400 MISSED"] += 1
        else:
            counts[f"{r.status} out of scope"] += 1
    return counts


EXPECTED = {
    RECORDINGS: {
        "2xx accepted": 785,
        "400 refused": 13,
        "edited": 4,
        "401 out of scope": 3,
        "404 out of scope": 4,
        "429 out of scope": 8,
    },
    PYDANTIC_AI: {"2xx accepted": 273, "400 refused": 1, "404 out of scope": 1},
}
"""What each corpus holds, judged: a loader that drops rows, or a rule that refuses live traffic, shows."""

CORPORA = pytest.mark.parametrize("corpus", [RECORDINGS, PYDANTIC_AI])


@CORPORA
def test_every_request_the_api_accepted_is_accepted(corpus: str) -> None:
    false_rejections = [
        f"{r.name}: {errors}"
        for r in recorded(corpus)
        if 200 <= r.status < 300 and not r.edited and (errors := r.judge())
    ]
    assert not false_rejections, f"{len(false_rejections)} false rejections:\n" + "\n".join(false_rejections)


@CORPORA
def test_every_request_shape_400_is_refused_with_the_apis_reason(corpus: str) -> None:
    missed = []
    for r in recorded(corpus):
        if r.status != 400 or out_of_scope(r) is not None or r.edited:
            continue
        errors = r.judge()
        found = [
            (reason, m) for reason in API_REASONS if r.api_message and (m := reason.api.search(r.api_message))
        ]
        if not found:
            missed.append(f"{r.name}: no API_REASONS entry matches the API's message {r.api_message!r}")
        elif not any(reason.ours(m) in e for reason, m in found for e in errors):
            missed.append(f"{r.name}: the API said {r.api_message!r}; the validator said {errors}")
    assert not missed, f"{len(missed)} refusals missed:\n" + "\n".join(missed)


@CORPORA
def test_answers_not_about_the_request_are_listed_with_why(corpus: str) -> None:
    unlisted = [
        f"{r.name}: {why}" for r in recorded(corpus) if (why := out_of_scope(r)) and "unclassified" in why
    ]
    assert not unlisted, "\n".join(unlisted)


@CORPORA
def test_the_counts(corpus: str) -> None:
    counts = summary(corpus)
    print(f"{corpus}: {dict(sorted(counts.items()))}")  # shown with -s, and in the failure below
    assert dict(counts) == EXPECTED[corpus]


def test_each_edited_recording_is_in_the_data_and_why_it_is_set_apart() -> None:
    by_key = {r.key: r for r in recorded(RECORDINGS)}
    assert set(EDITED) <= set(by_key), set(EDITED) - set(by_key)
    for key in EDITED:
        r = by_key[key]
        assert 200 <= r.status < 300
        if key[0].startswith("DataDog/"):  # refused for the very pairing the edit broke
            assert any("unexpected `tool_use_id`" in e for e in r.judge()), r.name
