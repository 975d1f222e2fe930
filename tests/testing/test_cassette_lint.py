"""Every committed cassette is readable, secret-free, valid, cache-stable and traceable.

The rules, per `cassettes/**/*.yaml`:
1. it parses, and carries the metadata the recorder stamps (`recorded_on`, `test`);
2. no secret-looking string (`sk-ant-…`, `Bearer …`) appears anywhere in it;
3. every recorded request passes `validate_request` (or `validate_count_tokens`);
4. consecutive requests resend byte-for-byte the prefix the previous one marked for
   caching (up to its last breakpoint), unless its metadata says the test was marked
   `@pytest.mark.moves_cache_prefix` (compaction and pruning batches rewrite it);
5. provenance is visible: a cassette recorded on the simulator has the simulator's
   `server` header on every response;
6. the test (or example) that replays it still exists.
The helpers themselves are tested below on in-memory data.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.testing import validate_request
from agent.testing.cassette_lint import prefix_breaks, read_cassette, secrets_in
from agent.testing.cassettes import ReadableYAML, json_body
from agent.testing.simulator import SERVER_NAME
from agent.testing.validate import validate_count_tokens

REPO = Path(__file__).resolve().parents[2]
FILES = sorted((REPO / "cassettes").rglob("*.yaml"))


def test_there_are_cassettes_to_lint() -> None:
    assert FILES, "no cassettes found under cassettes/"


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO / "cassettes")) for p in FILES])
def test_cassette(path: Path) -> None:
    cassette = read_cassette(path)
    meta = cassette.metadata
    assert meta.get("recorded_on") in ("simulator", "api"), f"{path.name}: no recorded_on metadata"
    assert cassette.interactions, f"{path.name}: no interactions"
    assert secrets_in(cassette.text) == []

    for n, interaction in enumerate(cassette.interactions, start=1):
        check = validate_count_tokens if interaction.path.endswith("/count_tokens") else validate_request
        bodies = [interaction.request]
        if interaction.path.startswith("/v1/messages/batches"):  # each request's params: a /v1/messages body
            bodies = [r["params"] for r in (interaction.request or {}).get("requests", [])]
        assert [e for body in bodies for e in check(body)] == [], f"request {n} would be rejected"
        if meta["recorded_on"] == "simulator":
            assert interaction.headers.get("server") == [SERVER_NAME], f"response {n} is not the simulator's"

    messages = [i.request for i in cassette.interactions if i.path == "/v1/messages"]
    if not meta.get("moves_cache_prefix"):
        assert prefix_breaks(messages) == [], "mark the test @pytest.mark.moves_cache_prefix and re-record"

    source = REPO / str(meta.get("test", "")).split("::")[0]
    name = re.sub(r"\[.*\]$", "", str(meta.get("test", "")).split("::")[-1]).split(".")[-1]
    assert source.is_file(), f"{path.name}: the test that recorded it ({meta.get('test')}) is gone"
    assert re.search(rf"\b{re.escape(name)}\b", source.read_text()), f"{name} is no longer in {source.name}"


# -- the lint helpers -----------------------------------------------------------------

MARK = {"type": "ephemeral"}


def body(system: str = "Be exact.", turns: int = 1, **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        if i:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i}"}]})
    messages[-1]["content"][-1]["cache_control"] = MARK
    return {
        "model": "claude-opus-5",
        "max_tokens": 10,
        "system": [{"type": "text", "text": system, "cache_control": MARK}],
        "tools": [{"name": "t", "input_schema": {"type": "object"}}],
        "messages": messages,
        **extra,
    }


def test_growing_history_with_a_moving_breakpoint_is_stable() -> None:
    assert prefix_breaks([body(turns=1), body(turns=2), body(turns=3)]) == []


def test_a_changed_system_prompt_is_reported() -> None:
    (problem,) = prefix_breaks([body(turns=1), body(system="Be exact!", turns=2)])
    assert problem.startswith("request 2: block 1 (system) changed since request 1")


def test_an_effort_change_is_reported() -> None:
    (problem,) = prefix_breaks([body(turns=1), body(turns=2, output_config={"effort": "low"})])
    assert "effort changed" in problem


def test_a_shortened_history_is_reported() -> None:
    assert prefix_breaks([body(turns=3), body(turns=1)])


def test_summary_calls_are_their_own_stream() -> None:
    summary = {
        "model": "claude-opus-5",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "sum up"}],
    }
    assert prefix_breaks([body(turns=1), summary, body(turns=2)]) == []


def test_requests_without_breakpoints_promise_nothing() -> None:
    plain = {
        "model": "claude-opus-5",
        "max_tokens": 10,
        "tools": [],
        "messages": [{"role": "user", "content": "a"}],
    }
    assert prefix_breaks([plain, {**plain, "messages": [{"role": "user", "content": "b"}]}]) == []


def test_secrets_are_found_and_not_echoed() -> None:
    found = secrets_in("key: sk-ant-api03-abcdefghijkl\nauthorization: Bearer abc.def-123456")
    assert len(found) == 2 and all(len(f) <= 13 for f in found)
    assert secrets_in("Bearer of bad news, sk-ant-") == []


def interaction(request_body: Any, headers: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {
        "request": {
            "method": "POST",
            "uri": "http://127.0.0.1:54321/v1/messages",
            "headers": headers or {},
            "body": json.dumps(request_body),
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Server": ["agent-from-scratch-simulator"], "Date": ["now"], "Request-Id": ["r1"]},
            "body": {"string": json.dumps({"ok": True})},
        },
    }


def test_serializer_keeps_meaning_drops_noise_and_secrets() -> None:
    headers = {
        "authorization": ["Bearer sk-ant-secret-123456"],
        "x-api-key": ["sk-ant-secret-123456"],
        "anthropic-version": ["2023-06-01"],
        "user-agent": ["Anthropic/Python"],
    }
    text = ReadableYAML.serialize({"version": 1, "interactions": [interaction({"a": "x\ny"}, headers)]})
    assert "sk-ant" not in text and "user-agent" not in text and "Date" not in text and "54321" not in text
    assert "server:" in text and "anthropic-version" in text and "a: |-" in text  # parsed, block string
    back = ReadableYAML.deserialize(text)["interactions"][0]
    assert json.loads(back["request"]["body"]) == {"a": "x\ny"}
    assert back["request"]["uri"] == "http://127.0.0.1/v1/messages"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSON, max_size=5))
def test_serializer_round_trips_any_json_body_in_key_order(value: dict[str, Any]) -> None:
    text = ReadableYAML.serialize({"version": 1, "interactions": [interaction(value)]})
    back = ReadableYAML.deserialize(text)["interactions"][0]["request"]["body"]
    assert json.dumps(json.loads(back)) == json.dumps(value)


def request(value: Any) -> SimpleNamespace:
    return SimpleNamespace(body=json.dumps(value).encode())


def test_json_body_matcher_explains_the_difference() -> None:
    json_body(request({"a": 1, "b": [1, 2]}), request({"a": 1, "b": [1, 2]}))
    with pytest.raises(AssertionError) as caught:
        json_body(request({"a": 1, "b": [1, 3]}), request({"a": 1, "b": [1, 2]}))
    assert "-$.b[1] = 2" in str(caught.value) and "+$.b[1] = 3" in str(caught.value)
    with pytest.raises(AssertionError, match="different key order"):
        json_body(request({"b": 2, "a": 1}), request({"a": 1, "b": 2}))
