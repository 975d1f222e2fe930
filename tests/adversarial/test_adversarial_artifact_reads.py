"""Attacks on `read_artifact`: every argument comes from the model, so an injection chooses it.

Each test is one attack and what must hold: the answer comes back at once, is at most
`max_chars`, and a refusal is an error that says what to do instead. Pattern attacks
run under both engines: RE2 (when google-re2 is installed) and the glob fallback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agent.context.pattern_search as pattern_search
from agent.context.artifacts import ArtifactStore, artifact_name
from agent.context.read_artifact import make_read_artifact
from agent.tool_runs import run_one
from agent.tools import ToolCall, ToolRegistry

REPO = Path(__file__).resolve().parents[2]
EVIL = [
    r"(a+)+$",
    r"^(\w+\s?)+:",
    r"(a|a)*b",
    r"(a*)*b",
    r"(x+x+)+y",
    r"(.*a){20}",
    r"(?:a|b){0,1000}c",
    r".{0,1000}a.{0,1000}b.{0,1000}c",
    r"[ab]{0,490}[ab]{0,490}c",
    r"((a{0,30}){0,30}){0,30}c",
    r"(a)\1",
    r"(?=a)a",
    "[",
    "\\",
    ".*.*.*.*.*.*.*.*=",
    "a" * 500,
    "a\x00b",
    "\u202eevil",
]
HAYSTACK = "\n".join(["a" * 2000] * 200 + ["a" * 60_000, "one two three four five six seven eight nine ten"])


@pytest.fixture(params=["re2", "glob"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "re2" and pattern_search._re2 is None:
        pytest.skip("google-re2 not installed (the re2 extra)")
    if request.param == "glob":
        monkeypatch.setattr(pattern_search, "_re2", None)
    return str(request.param)


def store_text(root: Path, text: str, *, is_json: bool = False) -> str:
    name = artifact_name("t", text, is_json=is_json)
    assert ArtifactStore.for_run(root, "run").put(name, text)
    return name


def call(root: Path, max_chars: int = 6000, seconds: float = 3.0, **arguments: object) -> tuple[str, bool]:
    registry = ToolRegistry([make_read_artifact(root, max_chars=max_chars, search_seconds=seconds)])
    outcome = run_one(registry, ToolCall("toolu_x", "read_artifact", arguments))
    return str(outcome.value), outcome.is_error


ISSUE_REPRO = """
import sys, time
from pathlib import Path
import agent.context.pattern_search as engines
from agent.context.artifacts import ArtifactStore, artifact_name
from agent.tools import ToolCall, ToolRegistry
from agent.tool_runs import run_one
from agent.context.read_artifact import make_read_artifact
root = Path(sys.argv[1])
words = "one two three four five six seven eight nine ten"
cases = [(r"^(\\w+\\s?)+:", words), (r"(a+)+$", "a" * 2000 + "!")]
for use_re2 in ([True] if engines._re2 is not None else []) + [False]:
    if not use_re2:
        engines._re2 = None
    for pattern, line in cases:
        name = artifact_name("t", line, is_json=False)
        ArtifactStore.for_run(root, "run").put(name, line)
        registry = ToolRegistry([make_read_artifact(root)])
        started = time.monotonic()
        run_one(registry, ToolCall("t", "read_artifact", {"name": name, "pattern": pattern}))
        print(f"{time.monotonic() - started:.3f}")
"""


@pytest.mark.slow
def test_the_catastrophic_patterns_of_issue_11_finish_at_once(tmp_path: Path) -> None:
    try:  # in a child process: before the fix this froze the whole interpreter
        done = subprocess.run(
            [sys.executable, "-c", ISSUE_REPRO, str(tmp_path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a catastrophic pattern froze read_artifact for 60 s")
    times = [float(t) for t in done.stdout.split()]
    assert done.returncode == 0 and len(times) >= 2 and max(times) < 2.0, done.stderr[-2000:]


@pytest.mark.parametrize("pattern", EVIL, ids=range(len(EVIL)))
def test_evil_patterns_answer_fast_and_bounded(tmp_path: Path, engine: str, pattern: str) -> None:
    name = store_text(tmp_path, HAYSTACK)
    started = time.monotonic()
    out, failed = call(tmp_path, max_chars=2000, name=name, pattern=pattern)
    assert time.monotonic() - started < 5.0 and len(out) <= 2000
    assert not failed or "pattern" in out, out[:300]


def test_a_pattern_over_the_length_cap_is_refused_with_what_to_do(tmp_path: Path, engine: str) -> None:
    out, failed = call(tmp_path, name=store_text(tmp_path, HAYSTACK), pattern="a" * 501)
    assert failed and "at most 500" in out and "shorter" in out


def test_the_glob_subset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pattern_search, "_re2", None)
    name = store_text(tmp_path, "ERROR: refund failed\nrefund ok ERROR\nwarning\n^x marks\nx")
    assert call(tmp_path, name=name, pattern="error*REFUND")[0].splitlines()[1:] == [
        "L1 ERROR: refund failed"
    ]
    assert len(call(tmp_path, name=name, pattern="warning|marks")[0].splitlines()) == 3
    out, _ = call(tmp_path, name=name, pattern="^x")
    assert "L4 ^x marks" in out and "searched as glob" in out and "L5" not in out, "literal, and it says so"
    out, failed = call(tmp_path, name=name, pattern="refund|")
    assert failed and "empty alternative" in out


def test_re2_anchors_see_the_whole_line_not_a_window(tmp_path: Path, engine: str) -> None:
    if engine != "re2":
        pytest.skip("RE2 syntax")
    name = store_text(tmp_path, "x" * 25_000 + "abc\nabc first\n0007 ERROR boom")
    assert call(tmp_path, name=name, pattern="^abc")[0].startswith("[1 lines of 3 match")
    assert call(tmp_path, name=name, pattern=r"abc$")[0].startswith("[1 lines of 3 match")
    assert "L3 0007 ERROR boom" in call(tmp_path, name=name, pattern=r"^\d{4} error")[0]
    out, failed = call(tmp_path, name=name, pattern=r"(a)\1")
    assert not failed and "searched as literal text: not valid RE2" in out
    out, failed = call(tmp_path, name=name, pattern=r".{0,1000}a.{0,1000}b")
    assert failed and "too costly" in out and "instead of large {m,n}" in out


def test_matches_across_a_window_edge_and_after_multibyte_text_are_found(tmp_path: Path, engine: str) -> None:
    edge = pattern_search.WINDOW - 3
    name = store_text(
        tmp_path, "x" * edge + "needle" + "x" * 9000 + "\n" + "é" * 9000 + "needle" + "é" * 9000
    )
    out, _ = call(tmp_path, name=name, pattern="needle")
    assert out.startswith("[2 lines of 2 match") and f"L1:{edge + 1} " in out and "L2:9001 " in out
    assert out.count("needle") == 3, "the header, then each match once (not again from the overlap)"


def test_a_search_past_its_deadline_stops_and_says_where_to_go_on(tmp_path: Path, engine: str) -> None:
    name = store_text(tmp_path, "\n".join(f"{i} ok" for i in range(50_000)))
    out, failed = call(tmp_path, seconds=0.0, name=name, pattern="ok")
    assert not failed and "[search stopped at line" in out and "pass start_line=" in out


@pytest.mark.parametrize(
    "bad",
    [
        "x-0123456789ab.txt\n",
        "x-0123456789AB.txt",
        "x-０１２３４５６７８９ab.txt",
        "x-0123456789ab.txt\x00",
        "\u202ex-0123456789ab.txt",
        "index.jsonl",
        ".lease",
        "x" * 100_000,
    ],
    ids=range(8),
)
def test_hostile_names_are_refused_in_a_short_actionable_error(tmp_path: Path, bad: str) -> None:
    store_text(tmp_path, "anything " * 40)
    out, failed = call(tmp_path, name=bad)
    assert failed and "not an artifact name" in out and "artifact:" in out and len(out) < 400


def test_json_path_attacks_get_clear_errors(tmp_path: Path) -> None:
    deep = store_text(tmp_path, "[" * 100_000 + "]" * 100_000, is_json=True)
    out, failed = call(tmp_path, name=deep, json_path="[0]")
    assert failed and "nested too deeply" in out
    text = store_text(tmp_path, "plain text " * 50)
    out, failed = call(tmp_path, name=text, json_path="a")
    assert failed and "not JSON" in out and "lines or pattern" in out
    many = store_text(tmp_path, json.dumps([{"id": i} for i in range(100_000)]), is_json=True)
    out, failed = call(tmp_path, name=many, json_path="x" * 600)
    assert failed and "at most 500" in out
    out, failed = call(tmp_path, max_chars=1000, name=many, json_path="[*].id")
    assert not failed and len(out) <= 1000 and "artifact:" in out
    out, failed = call(tmp_path, name=many, json_path="[99999999999999999999]")
    assert failed and "list of 100000 items" in out


def test_line_range_attacks(tmp_path: Path) -> None:
    name = store_text(tmp_path, "\n".join(f"line {i}" for i in range(1, 101)))
    assert call(tmp_path, name=name, start_line=-5, end_line=2)[0].splitlines()[1] == "L1 line 1"
    out, failed = call(tmp_path, name=name, start_line=10**12)
    assert failed and "past the end" in out and "100 lines" in out
    out, failed = call(tmp_path, name=name, start_line=50, end_line=10)
    assert failed and "before start_line" in out


def test_binary_and_bidi_content_reads_back_as_clean_text(tmp_path: Path, engine: str) -> None:
    raw = b"\x00\x01\xff\xfe PK\x03\x04 \xe2\x80\xae gnp.exe \xed\xa0\x80 lone surrogate\n" * 40
    name = store_text(tmp_path, raw.decode("utf-8", errors="replace") + "\udcff")
    for arguments in ({}, {"pattern": "exe"}, {"pattern": "\u202e"}):
        out, failed = call(tmp_path, max_chars=1500, name=name, **arguments)
        assert not failed and len(out) <= 1500
        out.encode("utf-8")  # strict: nothing the API would choke on
