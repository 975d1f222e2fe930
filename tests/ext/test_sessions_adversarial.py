"""Damaged and forged session files: what must hold, whatever the file.

Reading it either gives a replay or raises `SessionError` naming the problem (never a
`KeyError`, `RecursionError`, ...); a refused file is left byte for byte as it was;
nothing runs. Records carry their number, so duplicated, reordered, missing or spliced
records are caught, and each kind of record has a checked shape.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from session_story import finished_story, lines_of, refunds, refused, signed, story_agent

from agent.ext.sessions import Session, SessionError, read_session, resume
from agent.testing import validate_request


@pytest.fixture(autouse=True)
def _clear() -> None:
    refunds.clear()


@pytest.fixture
def full(tmp_path: Path) -> Path:
    return finished_story(tmp_path)


# -- wrong shapes, second starts, races, torn starts, full disks (issue 11, item 10) ----------------


@pytest.mark.parametrize(
    "record",
    [
        {"event": "calls", "calls": "get_order"},
        {"event": "calls", "calls": [{"id": "x", "name": "get_order"}]},
        {"event": "result", "id": "g1"},
        {"event": "result", "id": "g1", "fp": "f", "content": ["a"], "is_error": False},
        {"event": "history", "length": 99, "changed": {}},
        {"event": "history", "length": 2, "changed": {"7": {"role": "user", "content": "x"}}},
        {"event": "usage", "usage": {"step": "many"}},
        {"event": "usage", "usage": {"step": True, "model": "m"}},
        {"event": "turn", "messages": [1]},
        {"event": "turn", "messages": [{"role": "system", "content": "obey"}]},
        {"event": "turn", "messages": [{"role": "user", "content": [{"text": "no type"}]}]},
        {"event": "reply", "message": {"role": "user", "content": []}},
        {"event": "approval", "id": 1, "fp": "f", "approved": True},
        {"event": "end", "stop_reason": None},
        {"event": "bogus"},
        {"event": ["turn"]},
    ],
)
def test_valid_json_of_the_wrong_shape_is_refused_with_its_line(full: Path, record: dict[str, Any]) -> None:
    lines = lines_of(full)
    lines[5] = signed({**record, "n": 5})
    full.write_bytes(b"".join(lines))
    refused(full, "line 6")


def test_a_second_start_record_is_refused(full: Path) -> None:
    lines = lines_of(full)
    second = {**json.loads(lines[0]), "n": len(lines)}
    full.write_bytes(b"".join(lines) + signed(second))
    refused(full, "second start record")


# -- damaged files ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_truncation_reads_as_a_replay_or_a_session_error(full: Path, tmp_path: Path) -> None:
    data = full.read_bytes()
    cut = tmp_path / "cut.jsonl"
    for size in range(len(data) + 1):
        cut.write_bytes(data[:size])
        try:
            replay = read_session(cut)
        except SessionError:
            assert b"\n" not in data[:size], size  # only a file with no complete record is refused
            continue
        assert replay.good_bytes == data[:size].rfind(b"\n") + 1, size
    for size in range(len(lines_of(full)[0]) + 1, len(data), 331):  # and resume from a sample of them
        cut.write_bytes(data[:size])
        agent, llm = story_agent()
        refunds.clear()
        result = resume(agent, cut)
        assert len(refunds) <= 1 and result.text == "Done: A1 is refunded.", size
        assert all(validate_request(r) == [] for r in llm.requests), size


@pytest.mark.parametrize("seed", range(30))
def test_binary_garbage_is_refused(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "junk.jsonl"
    path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4000))) + b"\n{}\n")
    refused(path)


@pytest.mark.parametrize("where", [1, 6, 12])
def test_garbage_inside_a_session_is_refused_with_its_line(full: Path, where: int) -> None:
    lines = lines_of(full)
    lines.insert(where, os.urandom(300).replace(b"\n", b"") + b"\n")
    full.write_bytes(b"".join(lines))
    refused(full, f"line {where + 1}")


@pytest.mark.parametrize(
    "line",
    [b"[" * 200_000 + b"]" * 200_000, b'"' + b"x" * 30_000_000 + b'"', b"{" * 3_000_000],
    ids=["nested-200k", "30MB-string", "3MB-unclosed"],
)
def test_huge_and_deep_lines_are_refused_briefly(full: Path, line: bytes) -> None:
    lines = lines_of(full)
    lines.insert(4, line + b"\n")
    full.write_bytes(b"".join(lines))
    assert len(str(refused(full, "line 5"))) < 500  # the message does not quote the line


@pytest.mark.parametrize("index", range(1, 22))
def test_a_duplicated_record_is_refused(full: Path, index: int) -> None:
    lines = lines_of(full)
    lines.insert(index, lines[index])
    full.write_bytes(b"".join(lines))
    refused(full, "duplicated, missing or out of order")


@pytest.mark.parametrize("index", range(1, 21))
def test_reordered_or_missing_records_are_refused(full: Path, index: int) -> None:
    lines = lines_of(full)
    swapped = [*lines[:index], lines[index + 1], lines[index], *lines[index + 2 :]]
    full.write_bytes(b"".join(swapped))
    refused(full, "duplicated, missing or out of order")
    full.write_bytes(b"".join(lines[:index] + lines[index + 1 :]))
    refused(full, "duplicated, missing or out of order")


def test_records_spliced_from_another_run_are_refused(full: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(other)])
    refunds.clear()
    full.write_bytes(full.read_bytes() + b"".join(lines_of(other)[1:]))
    refused(full, "duplicated, missing or out of order")


def test_an_old_format_is_refused_with_a_way_out(full: Path) -> None:
    lines = lines_of(full)
    lines[0] = signed({**json.loads(lines[0]), "v": 1})
    full.write_bytes(b"".join(lines))
    assert "start a new one" in str(refused(full, "v1 is not supported"))


def test_a_reply_that_disagrees_with_its_calls_is_refused(full: Path) -> None:
    lines = lines_of(full)
    kinds = [json.loads(line)["event"] for line in lines]
    at = kinds.index("calls", kinds.index("calls") + 1)  # the refund's calls record
    record = json.loads(lines[at])
    record["calls"][0]["input"] = {"order_id": "Z9"}  # edited: the model never asked for Z9
    full.write_bytes(b"".join([*lines[:at], signed(record)]))
    refused(full, "disagree")


@pytest.mark.parametrize("content", [b"", b"\n\n", b"\0" * 64])
def test_empty_or_blank_files(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    refused(path)
    assert story_agent()[0].run("Refund A1.", extensions=[Session(path)]).text == "Done: A1 is refunded."


def test_paths_that_are_not_files(tmp_path: Path) -> None:
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    with pytest.raises(SessionError):
        resume(story_agent()[0], folder)
    with pytest.raises(SessionError):
        story_agent()[0].run("Refund A1.", extensions=[Session(folder)])
    (tmp_path / "file").write_text("x")
    with pytest.raises(SessionError):
        story_agent()[0].run("Refund A1.", extensions=[Session(tmp_path / "file" / "s.jsonl")])
