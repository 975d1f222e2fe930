"""General rules of the JSON shrinker, on inputs written here.

Each test fails when its rule is taken out: records briefed by the kinds they show rather
than in document order (records of containers only by the kinds inside them), a record
known only by its id briefed with whom it is about, a
level refined between two ladder steps so the budget is spent, and a nested list out of the
brief's reach still briefed rather than shown whole, a wide object's small containers kept
before its large ones, and its links and URL templates after its own data, and a budget the
ladder's richest level leaves half unspent spent on more records.
"""

from __future__ import annotations

import json
from typing import Any

from agent.context.compress import compress


def _lint_report() -> list[dict[str, Any]]:
    """A linter's JSON: one common code many times over, and a few codes seen once, late."""
    rows: list[dict[str, Any]] = []
    for n in range(240):
        code = "E501" if n % 3 else "W291"
        rows.append(
            {
                "code": code,
                "filename": f"/src/app/module_{n // 40}.py",
                "location": {"row": n + 1, "column": 1},
                "message": "Line too long" if code == "E501" else "Trailing whitespace",
                "severity": "error",
            }
        )
    for n, code in enumerate(("B006", "PLR0913", "SIM910")):
        rows.insert(150 + 30 * n, {**rows[150], "code": code, "message": f"rare finding {code}"})
    return rows


def test_records_are_briefed_rarest_kind_first_not_in_document_order() -> None:
    out = compress(json.dumps(_lint_report()), 2_000, pointer="x")
    assert len(out) <= 2_000
    parsed = json.loads(out)
    codes = {row.get("code") for row in parsed["items"] if isinstance(row, dict)}
    assert {"B006", "PLR0913", "SIM910"} <= codes  # each seen once, past the 150th record
    assert parsed["total"] == 243


def _trace_batches() -> list[dict[str, Any]]:
    """An OpenTelemetry trace's batches: records made only of containers. As in real traces, the
    service is named only in the resource's `[{key, value}]` attributes, the scope is the
    instrumentation library and the spans say `HTTP GET`; one service appears once, late."""
    batches = []
    for n in range(40):
        service = "fraud-service" if n == 31 else ("checkout-service" if n % 2 else "backend-service")
        attributes = [
            {"key": "service.name", "value": {"stringValue": service}},
            {"key": "telemetry.sdk.name", "value": {"stringValue": "opentelemetry"}},
        ]
        span = {"traceId": f"trace-{n:04d}", "name": "HTTP GET", "kind": "SPAN_KIND_SERVER"}
        scope = {"scope": {"name": "io.opentelemetry.http"}, "spans": [span]}
        batches.append({"resource": {"attributes": attributes}, "scopeSpans": [scope]})
    return batches


def test_records_of_containers_only_are_briefed_by_the_kinds_inside_them() -> None:
    out = compress(json.dumps({"batches": _trace_batches()}), 2_000, pointer="x")
    assert len(out) <= 2_000
    assert "fraud-service" in out  # the one batch of its service, the 32nd of 40


def test_records_of_containers_with_keys_json_cannot_spell_are_still_summarised() -> None:
    """A tool's Python value may key a nested map by ints (`{200: 5}`): read for the records'
    identity, such a key is skipped, not a reason to give the list up."""
    out = compress([{"a": {i: f"x{i}", "b": "y"}} for i in range(300)], 600, pointer="x")
    assert json.loads(out)["total"] == 300


def test_a_record_known_by_its_id_alone_is_briefed_with_whom_it_is_about() -> None:
    comments = [
        {
            "id": 1000 + n,
            "url": f"https://api.example.com/comments/{1000 + n}",
            "user": {"login": f"author{n:02d}", "id": 77 + n, "type": "User"},
            "created_at": f"2024-01-{n % 28 + 1:02d}T10:00:00Z",
            "body": "A comment that goes on for a while. " * 6,
        }
        for n in range(30)
    ]
    out = compress(json.dumps(comments), 2_000, pointer="x")
    briefs = [row for row in json.loads(out)["items"][1:] if isinstance(row, dict)]
    assert len(briefs) >= 5
    assert all(row.get("user", {}).get("login", "").startswith("author") for row in briefs)


def test_a_level_between_two_ladder_steps_is_used_when_it_fits() -> None:
    rows = [
        {"name": f"service-{n:03d}", "status": "ok" if n % 7 else "degraded", "detail": "x" * 90}
        for n in range(60)
    ]
    out = compress(json.dumps(rows), 2_000, pointer="x")
    assert len(out) <= 2_000
    assert len(out) > 0.8 * 2_000  # the ladder alone stops well short: 6 rows, then 12 too many


def test_a_list_nested_past_the_brief_s_reach_is_briefed_not_shown_whole() -> None:
    def batch(n: int) -> dict[str, Any]:
        span = {
            "spanId": f"span{n:04d}",
            "name": f"operation_{n}",
            "kind": "SPAN_KIND_INTERNAL",
            "startTimeUnixNano": str(1741946418852000000 + n),
            "endTimeUnixNano": str(1741946419154156283 + n),
            "attributes": [{"key": "url", "value": {"stringValue": f"http://service-{n}:3000/api"}}],
        }
        return {
            "resource": {"service": {"name": f"svc-{n}"}},
            "scopes": [{"scope": {"name": "s"}, "spans": [span]}],
        }

    out = compress(json.dumps({"batches": [batch(n) for n in range(12)]}), 4_000, pointer="x")
    assert len(out) <= 4_000
    assert "operation_1" in out and "operation_11" in out
    assert out.count("startTimeUnixNano") <= 1  # a brief names the span; only the first is whole


def _package() -> dict[str, Any]:
    """A package registry's answer: a wide `info` of many nulls, a long readme, the requirements
    as a list of strings, and a map of every release (PyPI's shape, in words written here)."""
    info: dict[str, Any] = {f"unused_field_{n:02d}": None for n in range(90)}
    info.update(
        {
            "description": "A library for talking to services. " * 60,
            "name": "talker",
            "requires_dist": [f"dependency-{n}>={n}.0" for n in range(12)],
            "requires_python": ">=3.10",
            "summary": "Talk to services.",
            "version": "4.2.0",
        }
    )
    tarball = "https://files.example.org/packages/ab/cd/0123456789abcdef0123456789abcdef/talker-4.2.0.tar.gz"
    releases = {f"{major}.{minor}.0": [{"size": 1000 + minor}] for major in range(5) for minor in range(30)}
    return {"info": info, "releases": releases, "urls": [{"url": tarball, "size": 1}], "serial": 9}


def test_empty_values_give_their_places_to_values_that_say_something() -> None:
    out = compress(json.dumps(_package()), 2_000, pointer="x")
    assert len(out) <= 2_000
    assert '"requires_python":">=3.10"' in out and '"summary":"Talk to services."' in out
    assert out.count(":null") < 90


def test_identifiers_are_never_cut_and_a_list_at_the_depth_limit_keeps_its_ends() -> None:
    out = compress(json.dumps(_package()), 2_000, pointer="x")
    assert "talker-4.2.0.tar.gz" in out  # the whole URL, where a long string is clipped
    assert "dependency-0>=0.0" in out and "dependency-11>=11.0" in out


def test_a_list_of_words_past_the_depth_shown_keeps_its_first_and_last() -> None:
    package = _package()
    package["releases"] = {
        version: [
            {"size": 1, "digests": {"sha256": "ab" * 32, "md5": "cd" * 16}, "url": f"https://x/{version}"}
        ]
        for version in package["releases"]
    }
    out = compress(json.dumps(package), 1_500, pointer="x")
    assert len(out) <= 1_500 and "[12 items]" not in out  # deep files make the view shallow
    assert "dependency-0>=0.0" in out and "dependency-11>=11.0" in out


def test_a_wide_object_keeps_its_small_containers_before_its_large_ones() -> None:
    """A package document: a large `scripts` map early, the small maps an agent reads
    (`dependencies`, `engines`) late. Past the keys a level shows, the smaller go in first."""
    package: dict[str, Any] = {"name": "pkg", "version": "1.2.3"}
    package["scripts"] = {f"build:step{n}": f"node scripts/build.js --step {n} --verbose" for n in range(60)}
    package |= {f"field{n}": f"value number {n}" for n in range(30)}
    package["dependencies"] = {"left-pad": "^1.3.0", "ms": "^2.1.3"}
    package["engines"] = {"node": ">=18"}
    package["dist"] = {"tarball": "https://registry.example.org/pkg/-/pkg-1.2.3.tgz"}
    out = compress(json.dumps(package, indent=2), 2_000, pointer="x")
    assert len(out) <= 2_000
    parsed = json.loads(out)
    assert parsed["dependencies"] == {"left-pad": "^1.3.0", "ms": "^2.1.3"}
    assert parsed["engines"] == {"node": ">=18"}


def _repository() -> dict[str, Any]:
    """A hosting API's repository: dozens of links (some of them templates) among its data."""
    base = "https://api.example.com/repos/acme/widget"
    repo: dict[str, Any] = {"id": 4242, "name": "widget", "full_name": "acme/widget"}
    for n in range(30):
        repo[f"part{n}_url"] = f"{base}/part{n}{{/item_id}}"  # a template: filled in by the caller
    for n in range(12):
        repo[f"list{n}_url"] = f"{base}/list{n}"
    repo |= {f"count{n}": n * 7 for n in range(30)}
    repo["license"] = {"key": "mit", "name": "MIT License", "spdx_id": "MIT"}
    repo["topics"] = ["widgets", "acme", "tools"]
    repo["default_branch"] = "main"
    return repo


def test_url_templates_and_links_come_after_the_objects_own_data() -> None:
    out = compress(json.dumps(_repository(), indent=2), 2_000, pointer="x")
    assert len(out) <= 2_000
    parsed = json.loads(out)
    assert parsed["license"]["spdx_id"] == "MIT"
    assert parsed["topics"] == ["widgets", "acme", "tools"]
    assert not any("{/item_id}" in str(value) for value in parsed.values())


def test_a_budget_the_richest_level_leaves_unspent_shows_more_records() -> None:
    # twenty codes, three findings each: the ladder's richest level briefs twelve records in
    # ~1,200 chars; the rest of the budget goes to the records of the other codes
    rows = [
        {"code": f"R{n % 20:03d}", "filename": f"/src/m{n % 5}.py", "message": f"finding {n}", "row": n}
        for n in range(60)
    ]
    out = compress(json.dumps(rows), 4_000, pointer="x")
    assert len(out) <= 4_000
    parsed = json.loads(out)
    assert {row.get("code") for row in parsed["items"] if isinstance(row, dict)} == {
        f"R{n:03d}" for n in range(20)
    }
    assert parsed["total"] == 60


def test_past_the_ladder_only_records_that_show_something_new() -> None:
    # sixty records alike but for their ids: the richest level's twelve say it all, at any budget
    rows = [
        {
            "order_id": f"o-{n:03d}",
            "status": "delivered",
            "item": f"item {n}",
            "note": "left at the door " * 4,
        }
        for n in range(60)
    ]
    rows[30]["status"] = "broken"
    briefs = [row for row in json.loads(compress(json.dumps(rows), 4_000, pointer="x"))["items"]]
    assert len([row for row in briefs if isinstance(row, dict)]) <= 13  # the richest level's: 12 and the last
    assert any(isinstance(row, dict) and row.get("status") == "broken" for row in briefs)


def _jobs() -> list[dict[str, Any]]:
    """A scheduler's job list: every job the same `kind`, its `status` what tells them apart
    (two of sixty failed), written here in the shape such APIs answer with."""
    return [
        {
            "jobId": f"job-{n:03d}",
            "name": f"nightly-export-{n:03d}",
            "kind": "BATCH",
            "queue": "default",
            "submitted": f"2026-11-{1 + n % 28:02d}T02:00:00Z",
            "status": "FAILED" if n in (23, 59) else "SUCCEEDED",
            "log": "export finished; rows written to the warehouse " * 3,
        }
        for n in range(60)
    ]


def test_a_brief_row_names_a_record_s_state_beside_its_kind() -> None:
    """A kind shared by every row said nothing; the status beside it is what the row is read for."""
    out = compress(json.dumps({"jobs": _jobs()}), 2_000, pointer="x")
    assert len(out) <= 2_000
    rows = json.loads(out)["jobs"]["items"]
    last = rows[-1]
    assert last["jobId"] == "job-059" and last["status"] == "FAILED"


def test_a_value_wrapped_in_a_one_key_object_is_shown_at_the_depth_limit() -> None:
    """`{"stringValue": "http://..."}` (OpenTelemetry's AnyValue, DynamoDB's `{"S": ...}`) is one
    typed value, not a level of nesting: its key names alone would hide the value itself."""
    deep: Any = {"value": {"stringValue": "http://auth-service:3006/auth/api/login"}}
    for n in range(8):  # the wrapper lands where the richest level stops
        deep = {f"level{n}": deep, "note": f"layer {n}"}
    out = compress(json.dumps({"wrapped": deep, "padding": ["x" * 50] * 200}), 2_000, pointer="x")
    assert len(out) <= 2_000
    assert "http://auth-service:3006/auth/api/login" in out
