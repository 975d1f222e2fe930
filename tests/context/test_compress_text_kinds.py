"""General rules of the diff, log and plain-text compressors, on inputs written here.

Each test fails when its rule is taken out: changed lines ranked and dealt across files (a
crowded diff's files each get one), rare log lines kept beside their common kind, `Key:  value`
lines kept verbatim and a section's sub-fields before its continued values, a ragged
table's rows counted, and an HTTP transcript's body compressed as what it is.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Sequence

from agent.context.compress import compress, detect
from agent.context.compressors.logs import compress_log

NAME = "tool-0123456789ab.txt"


def _diff() -> str:
    parts = []
    for f in range(6):
        parts.append(f"diff --git a/lib/part_{f}.py b/lib/part_{f}.py\nindex 1..2 100644\n")
        parts.append(f"--- a/lib/part_{f}.py\n+++ b/lib/part_{f}.py\n")
        for h in range(4):
            parts.append(f"@@ -{40 * h + 1},9 +{40 * h + 1},9 @@ class Holder_{f}:\n")
            parts.append("     pass\n" * 3)
            parts.append(
                "-    # old comment line that says little\n+    # new comment line that says little\n"
            )
            parts.append(f"-    )\n+    )\n+import helper_{f}_{h}\n")
            parts.append("     pass\n" * 3)
        parts.append(f"@@ -300,3 +300,4 @@\n+def handle_request_{f}(payload: dict) -> bool:\n     pass\n")
    parts.append('@@ -1,2 +1,2 @@\n-__version__ = "2.4.1"\n+__version__ = "2.5.0"\n')
    return "".join(parts)


def test_a_diff_keeps_the_definitions_and_versions_it_changes_in_every_file() -> None:
    text = _diff()
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "diff" and len(out) <= 2000
    assert all(f"+def handle_request_{f}(payload: dict) -> bool:" in out for f in range(6)), out
    assert '+__version__ = "2.5.0"' in out and '-__version__ = "2.4.1"' in out
    assert "# new comment line" not in out, "comments rank below definitions"


def test_a_diff_shows_a_version_number_it_drops_before_the_definitions_it_adds() -> None:
    """A line that sets or drops a version number is what a release diff is read for: it outranks
    new definitions, even as a removal among many additions."""
    added = "".join(f"+def handler_number_{n}(request: dict, settings: dict) -> dict:\n" for n in range(40))
    text = (
        "diff --git a/pkg/__init__.py b/pkg/__init__.py\nindex 1..2 100644\n--- a/pkg/__init__.py\n"
        f'+++ b/pkg/__init__.py\n@@ -1,3 +1,42 @@\n import os\n{added}-__version__ = "8.1.8"\n'
    )
    out = compress(text, 1200, pointer=NAME)
    assert len(out) <= 1200 and "handler_number_39" not in out
    assert '-__version__ = "8.1.8"' in out, out


def _crowded_diff() -> str:
    """Sixteen files: the first with three new definitions, each other with one assignment."""

    def header(path: str) -> str:
        return f"diff --git a/{path} b/{path}\nindex 1..2 100644\n--- a/{path}\n+++ b/{path}\n"

    parts = [header("src/project/subpackage/big.py"), "@@ -1,9 +1,12 @@ import os\n" + "     pass\n" * 3]
    parts += [f"+def added_helper_{n}(value: int) -> int:\n" for n in range(3)]
    parts.append("-ANSWER = 41\n" + "     pass\n" * 3)
    for f in range(15):
        parts.append(header(f"src/project/subpackage/module_{f}.py"))
        parts.append(f"@@ -{10 + f},7 +{10 + f},7 @@ def run():\n" + "     pass\n" * 3)
        parts.append(f"-    limit_{f} = {f}\n+    limit_{f} = {f + 1}\n" + "     pass\n" * 3)
    return "".join(parts)


def test_a_crowded_diff_shows_every_files_best_change_before_any_files_second() -> None:
    out = compress(_crowded_diff(), 2000, pointer=NAME)
    assert len(out) <= 2000
    assert all(f"+    limit_{f} = {f + 1}" in out for f in range(15)), out
    assert "+def added_helper_0(value: int) -> int:" in out
    assert "added_helper_2" not in out, "a big file's third definition waits for the small files' changes"
    assert "[... " not in out and "\n...\n" in out, "a gap is marked, briefly: the counts say how much"
    assert "@@ -1,9 +1,12 @@" in out, "the diff's first hunk keeps its place"


def test_a_roomy_diff_keeps_its_gap_counts() -> None:
    out = compress(_crowded_diff(), 8000, pointer=NAME)
    assert "[... " in out or len(out) == len(_crowded_diff()), out


def test_a_log_keeps_the_rare_variant_of_a_common_kind_and_the_last_of_a_rare_one() -> None:
    lines = []
    for i in range(1500):
        lines.append(
            f"Dec 10 07:{i % 60:02d}:00 host sshd[{1000 + i}]: Failed password for root from 10.0.{i % 250}.1"
        )
        if i == 700:
            lines.append("Dec 10 08:00:00 host sshd[9]: Failed password for operator from 10.9.9.9")
        if i in (100, 1200):
            lines.append(f"Dec 10 09:00:00 host kernel: election took {10 + i} ms")
    text = "\n".join(lines)
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "log" and len(out) <= 2000
    assert "Failed password for operator from 10.9.9.9" in out, "a template seen once"
    assert "election took 1210 ms" in out, "the last of a rare template, not only its first"


def test_a_log_s_kinds_decide_which_lines_stand_for_others() -> None:
    """`compress_log` ranks one line of each kind: the one `Failed password` among five hundred
    `Accepted password` lines (each its own template: the user names differ) is kept as its own
    kind, and lost when the kinds function lumps every line into one kind."""
    names = [f"user{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676)}" for i in range(500)]
    lines = [f"Dec 10 07:00:00 host sshd[42]: Accepted password for {name} from gateway" for name in names]
    lines.insert(260, "Dec 10 07:00:00 host sshd[42]: Failed password for mallory from gateway")
    text = "\n".join(lines)
    seen: list[str] = []

    def one_kind(templates: Sequence[str]) -> dict[str, str]:
        seen.extend(templates)
        return dict.fromkeys(templates, "all")

    assert "Failed password for mallory" in compress_log(text, 1600, NAME)
    assert "Failed password for mallory" not in compress_log(text, 1600, NAME, kinds=one_kind)
    assert len(seen) == len(set(seen)) == 501, "each distinct template asked once"


def _describe(
    conditions: int = 3, middle: tuple[str, ...] = (), system: tuple[str, ...] = (), field_tail: str = ""
) -> str:
    """A `kubectl describe`-shaped document: `conditions` rows then Ready, `middle` sections,
    System Info (`system`, else six details and a Runtime Version), fields, a pod table."""
    out = ["Name:               node-a", "Roles:              <none>"]
    out += ["Labels:             a=1"] + [f"                    label-{i}=value-{i}" for i in range(30)]
    out += ["Conditions:", "  Type    Status  Reason", "  ----    ------  ------"]
    out += [f"  Cond{i}   False   Reason{i}" for i in range(conditions)] + [
        "  Ready   True    KubeletIsReady"
    ]
    out += [*middle, "System Info:"]
    out += list(system) or [f"  Detail Number {i}:   value-{i}" for i in range(6)] + [
        "  Runtime Version:    v9.8.7"
    ]
    out += [f"Field{i}:             value {i}{field_tail}" for i in range(10)]
    out += ["Pods:               (60 in total)"] + [
        f"  ns  pod-{i:03d}  1 (0%)  2 (0%)  40d" for i in range(60)
    ]
    return "\n".join(out)


def test_a_key_value_document_keeps_each_sections_fields_verbatim() -> None:
    text = _describe()
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "text" and len(text) > 3900 and len(out) <= 2000
    assert "  Runtime Version:    v9.8.7" in out, "a sub-field, verbatim"
    assert "KubeletIsReady" in out, "a section's table rows"
    assert "label-25=value-25" not in out, "continued values rank after sub-fields and rows"


def test_a_ragged_table_states_its_row_count() -> None:
    rows = [
        f"ns-{i % 4}  pod-{i:03d}  1/1  Running  {i % 3} ({i}m ago)  2d  app=x{'  tier=web' * (i % 7)}"
        for i in range(90)
    ]
    text = "\n".join(["NAMESPACE  NAME  READY  STATUS  RESTARTS  AGE  LABELS", *rows])
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "text" and len(out) <= 2000
    assert "90 rows" in out, out[-200:]


def test_a_megabyte_diff_is_ranked_without_a_tuple_for_every_line() -> None:
    files = []
    for f in range(500):
        hunk = "".join(
            f"-    value_{f}_{n} = compute({n})\n+    value_{f}_{n} = compute({n} + 1)\n" for n in range(30)
        )
        files.append(
            f"diff --git a/src/mod_{f}.py b/src/mod_{f}.py\nindex 1..2 100644\n"
            f"--- a/src/mod_{f}.py\n+++ b/src/mod_{f}.py\n@@ -1,60 +1,60 @@ def run():\n{hunk}"
        )
    text = "".join(files)
    assert detect(text) == "diff" and len(text) > 1_000_000
    compress(text, 2000, pointer=NAME)  # compiled patterns and the like, once
    tracemalloc.start()
    try:
        out = compress(text, 2000, pointer=NAME)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(out) <= 2000
    assert peak < 5 * len(text), f"{peak / len(text):.1f}x the input"  # 15x when every line was ranked


def test_git_log_stat_keeps_the_files_of_the_newest_commits() -> None:
    parts = []
    for n in range(80):
        parts.append(
            f"commit {n:040x}\nAuthor: Dev {n % 3} <dev{n % 3}@example.org>\n"
            "Date:   Mon Mar 3 10:00:00 2025 +0100\n\n"
            f"    Change number {n}\n\n"
            f" src/module_{n}.py   | {n + 3} +++++++++--\n tests/test_{n}.py | 2 ++\n"
            f" 2 files changed, {n + 4} insertions(+), 1 deletion(-)\n\n"
        )
    text = "".join(parts)
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "git_log" and len(out) <= 2000
    assert "src/module_0.py | 3" in out and "tests/test_0.py | 2" in out  # the bars dropped
    assert f"{0:040x}" in out and f"{79:040x}" in out and "80 commits" in out


def test_git_log_shows_where_each_release_is_before_its_merges() -> None:
    parts = []
    for n in range(150):
        merge = "Merge: 1a2b3c4 5d6e7f8\n" if n % 9 == 4 else ""
        usual = f"Merge pull request #{n} from dev/feature-{n}" if merge else f"Fix {n}"
        subject = {40: "v2.34.2", 75: "Release 2.33.0 (#7120)", 110: "Bump version to 2.32.0"}.get(n, usual)
        parts.append(
            f"commit {n:040x}\n{merge}Author: Dev {n % 4} <dev{n % 4}@example.org>\n"
            f"Date:   Mon Mar 3 10:00:00 2025 +0100\n\n    {subject}\n\n"
        )
    out = compress("".join(parts), 2000, pointer=NAME)
    assert len(out) <= 2000
    assert ": v2.34.2" in out and ": Release 2.33.0 (#7120)" in out and ": Bump version to 2.32.0" in out


def test_tap_maven_and_junit_runs_keep_counts_failures_and_why() -> None:
    tap = ["TAP version 13"]
    for n in range(1, 301):
        tap += [f"# Subtest: record {n}", f"{'not ok' if n == 151 else 'ok'} {n} - record {n}", "  ---"]
        tap += [
            "  duration_ms: 0.5",
            "  error: |-",
            "    Expected values to be strictly equal:",
            "",
            "    NaN !== 60",
        ] * (n == 151)
        tap += ["  duration_ms: 0.4", "  ..."] * (n != 151)
    tap += ["1..300", "# tests 300", "# pass 299", "# fail 1"]
    maven = [f"[INFO] Downloading artifact {n} of the build" for n in range(200)]
    maven += ["[ERROR] Failures: ", "[ERROR]   ParserTest.record151:42 expected: <60> but was: <NaN>"]
    maven += ["[ERROR] Tests run: 300, Failures: 1, Errors: 0, Skipped: 0", "[INFO] BUILD FAILURE"]
    junit = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation='
        '"https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report-3.0.xsd" '
        'version="3.0" name="demo.ParserTest" time="1.2" tests="300" errors="0" skipped="0" failures="1">',
    ]
    for n in range(300):
        if n == 151:
            junit += [f'  <testcase name="record{n}" classname="demo.ParserTest" time="0.02">']
            junit += ['    <failure message="expected: &lt;60&gt; but was: &lt;NaN&gt;" type="Failed">']
            junit += ["    </failure>", "  </testcase>"]
        else:
            junit += [f'  <testcase name="record{n}" classname="demo.ParserTest" time="0.001"/>']
    junit += ["</testsuite>"]
    for lines, facts in (
        (tap, ["not ok 151 - record 151", "NaN !== 60", "# pass 299", "# fail 1"]),
        (
            maven,
            [
                "ParserTest.record151:42 expected: <60> but was: <NaN>",
                "Tests run: 300, Failures: 1",
                "BUILD FAILURE",
            ],
        ),
        (junit, ['tests="300"', 'failures="1"', 'name="record151"', "but was: &lt;NaN&gt;"]),
    ):
        text = "\n".join(lines)
        out = compress(text, 2000, pointer=NAME)
        assert detect(text) == "tests" and len(text) > 4000 and len(out) <= 2000
        assert all(fact in out for fact in facts), [fact for fact in facts if fact not in out]


def test_a_full_rust_backtrace_keeps_the_program_s_frames_before_the_runtime_s() -> None:
    rustc = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library"
    lines = [
        "",
        "thread 'main' (29284) panicked at src/main.rs:1:65:",
        "record id must be a number",
        "stack backtrace:",
    ]
    for n in range(60):
        if n in (30, 31, 32):
            name, at = f"importer::step_{n}::h411486dda8f0df22", f"/home/dev/importer/src/main.rs:{n}:9"
        else:
            name = f"<std[e28293b1aa0f68bd]::sys::Frame{n} as core[c1f1a4ba060b9bfa]::fmt::Display>::fmt"
            at = f"{rustc}/std/src/sys/backtrace.rs:{n}:26"
        lines += [f"  {n:2d}:     0x56171db4958a - {name}", f"                               at {at}"]
    text = "\n".join(lines)
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "trace" and len(out) <= 2000
    for n in (30, 31, 32):
        assert f"importer::step_{n}" in out and f"src/main.rs:{n}:9" in out
    assert "(3 outside the runtime)" in out


def test_a_unittest_failure_keeps_its_exception_line_under_the_dashes() -> None:
    lines = [f"test_{n} (suite.T.test_{n}) ... ok" for n in range(150)]
    lines += ["", "=" * 70, "FAIL: test_77 (suite.T.test_77)", "-" * 70, "Traceback (most recent call last):"]
    lines += ['  File "/src/suite.py", line 158, in test_77', "    self.assertEqual({'a': 1}, {'a': 2})"]
    lines += [
        "AssertionError: {'a': 1} != {'a': 2}",
        "",
        "-" * 70,
        "Ran 150 tests in 0.006s",
        "",
        "FAILED (failures=1)",
    ]
    text = "\n".join(lines)
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "tests" and len(out) <= 2000
    assert "AssertionError: {'a': 1} != {'a': 2}" in out and 'File "/src/suite.py", line 158' in out
    assert "Ran 150 tests" in out and "FAILED (failures=1)" in out


def test_compiler_errors_come_before_the_notes_under_them() -> None:
    lines = ["src/app.cpp: In function 'int main()':"]
    for n in range(12):
        what = ("declared in this scope", "a member of the class", "convertible to int")[n % 3]
        lines.append(f"src/app.cpp:{40 + n}:9: error: value_{'abcdefghijkl'[n]} was not {what}")
        for k in range(6):  # gcc's candidates, each its own shape (words, not numbers): as rare as an error
            word = "".join(chr(97 + (n * 6 + k) // 26**p % 26) for p in range(3))
            lines.append(
                f"/usr/include/c++/12/bits/stl_map.h:{900 + n}:7: note: candidate insert_{word}(K&&)"
            )
    text = "\n".join(lines)
    out = compress(text, 2000, pointer=NAME)
    assert detect(text) == "diagnostics" and len(out) <= 2000
    assert all(f"src/app.cpp:{40 + n}:9: error:" in out for n in range(12)), out  # 12 codes, 72 notes


def test_a_section_keeps_its_last_row_and_ranks_ids_and_repeats_after_news() -> None:
    resources = [f"  resource-{i}:  {i * 1000}" for i in range(6)]
    text = _describe(
        conditions=12,
        middle=("Capacity:", *resources, "Allocatable:", *resources),
        system=(
            "  Machine ID:         18b3f3bfe5aa48e593425a4af64b880c",
            "  System UUID:        18b3f3bfe5aa48e593425a4af64b880d",
            "  Boot ID:            9493e363-4d8a-4773-a4c1-94346d417c97",
            *(f"  Detail {i}:           value-{i}" for i in range(3)),
            "  Kubelet Version:    v1.31.2",
        ),
        field_tail=" " + "w" * 25,
    )
    got = compress(text, 2000, pointer=NAME)
    assert detect(text) == "text" and len(got) <= 2000
    assert "KubeletIsReady" in got, "a section's last row"
    assert "Kubelet Version:    v1.31.2" in got, "a version before opaque ids and repeated rows"


def _transcript() -> str:
    """A response as `curl -i` prints it: a status line, many headers, a JSON list of records."""
    headers = [
        "date: Fri, 04 Dec 2026 10:00:00 GMT",
        "content-type: application/json; charset=utf-8",
        "server: github.com",
        'etag: W/"0f8e6b1d4c"',
        "x-github-request-id: C0DE:1234:ABCD:5678",
        *[f"x-trace-{n}: {'0123456789abcdef' * 4}" for n in range(12)],
        'link: <https://api.example.com/repos?page=4>; rel="next", '
        '<https://api.example.com/repos?page=9>; rel="last"',
        "x-ratelimit-remaining: 17",
    ]
    rows = [{"id": n, "name": f"repo-{n}", "archived": n == 77, "stars": n * 3} for n in range(120)]
    body = json.dumps(rows, indent=2)
    return "HTTP/2 200 \r\n" + "\r\n".join(headers) + "\r\n\r\n" + body


def test_an_http_transcript_keeps_its_status_actionable_headers_and_a_json_body() -> None:
    text = _transcript()
    out = compress(text, 2_000, pointer=NAME)
    assert len(out) <= 2_000 and detect(text) == "http"
    head, _, body = out.partition("\n\n")
    assert head.splitlines()[0] == "HTTP/2 200"
    assert 'rel="next"' in head and "x-ratelimit-remaining: 17" in head
    assert "x-trace-3" not in head and "[17 more headers]" in head
    summary = json.loads(body)  # the body compressed as JSON, not cut as text
    assert summary["total"] == 120
