"""A run's artifacts in one append-only pack: as safe and as readable as a file each.

The pack replaced a file per result (a create and a rename per step). These check what
that must not have cost: a planted link at the pack is never written through, runs that
stored a file per result are still read, a damaged index never reads outside the pack or
crashes, and a result stored once is stored once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.context.artifacts import (
    INDEX_FILE,
    PACK_FILE,
    ArtifactStore,
    Refused,
    artifact_name,
    read_artifact_text,
    resolve_artifact,
)
from agent.context.packs import Packed, parse_index


def put(store: ArtifactStore, text: str, tool_use_id: str | None = None) -> str:
    name = artifact_name("t", text, is_json=False)
    assert store.put(name, text, tool_use_id=tool_use_id)
    return name


def test_results_are_appended_whole_and_read_back_from_any_store(tmp_path: Path) -> None:
    store = ArtifactStore.for_run(tmp_path, "run")
    texts = [f"result {i}\n" * (50 + i) for i in range(5)]
    names = [put(store, text, f"toolu_{i}") for i, text in enumerate(texts)]
    assert put(store, texts[0], "toolu_again") == names[0]
    pack = (tmp_path / "run" / PACK_FILE).read_bytes()
    assert pack == "".join(texts).encode(), "each once, whole, in order"
    reopened = ArtifactStore.for_run(tmp_path, "run")  # a resumed run: from the index on disk
    for i, (name, text) in enumerate(zip(names, texts, strict=True)):
        assert reopened.read(name) == text == read_artifact_text(tmp_path, name)[0]
        assert reopened.name_for(f"toolu_{i}") == name
    assert reopened.name_for("toolu_again") == names[0]
    assert read_artifact_text(tmp_path, names[2], max_bytes=7) == (texts[2][:7], len(texts[2]))
    assert resolve_artifact(tmp_path, names[1]) == tmp_path / "run" / PACK_FILE


def test_a_symlink_planted_at_the_pack_is_never_written_through(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "authorized_keys"
    outside.write_text("ssh-ed25519 AAAA mine\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / PACK_FILE).symlink_to(outside)
    store = ArtifactStore.for_run(tmp_path, "run")
    with pytest.raises(OSError):
        put(store, "x" * 300, "toolu_1")
    assert outside.read_text() == "ssh-ed25519 AAAA mine\n" and store.name_for("toolu_1") is None


def test_a_hard_link_planted_at_the_pack_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "victim"
    outside.write_text("original")
    (tmp_path / "store" / "run").mkdir(parents=True)
    os.link(outside, tmp_path / "store" / "run" / PACK_FILE)
    with pytest.raises(OSError, match="not a regular file of this store"):
        put(ArtifactStore.for_run(tmp_path / "store", "run"), "y" * 300)
    assert outside.read_text() == "original"


def test_a_run_that_stored_a_file_per_result_is_still_read(tmp_path: Path) -> None:
    text = "an older run's result\n" * 40
    name = artifact_name("t", text, is_json=False)
    folder = tmp_path / "old-run"
    folder.mkdir()
    (folder / name).write_text(text)
    (folder / INDEX_FILE).write_text(json.dumps({"id": "toolu_old", "name": name}) + "\n")
    assert read_artifact_text(tmp_path, name) == (text, len(text))
    old = ArtifactStore.for_run(tmp_path, "old-run")
    assert old.name_for("toolu_old") == name and old.read(name) == text
    assert resolve_artifact(tmp_path, name) == folder / name


def test_a_damaged_index_reads_only_inside_the_pack_and_never_crashes(tmp_path: Path) -> None:
    store = ArtifactStore.for_run(tmp_path, "run")
    name = put(store, "kept whole " * 30, "toolu_1")
    store.close()
    other = artifact_name("t", "never stored", is_json=False)
    with open(tmp_path / "run" / INDEX_FILE, "a") as index:
        index.write('{"id": "toolu_torn", "name": "t-0123456789ab.txt", "at"')  # a crash mid-line
        index.write("\n" + json.dumps({"id": "toolu_2", "name": other, "at": 10**9, "size": 50}) + "\n")
        index.write(json.dumps({"id": "toolu_3", "name": "x", "at": -5, "size": 3}) + "\n")
    reopened = ArtifactStore.for_run(tmp_path, "run")
    assert reopened.read(name) == "kept whole " * 30
    assert reopened.name_for("toolu_torn") is None and reopened.name_for("toolu_2") == other
    with pytest.raises(Refused, match="do not match its name"):  # past the pack's end: refused, no crash
        read_artifact_text(tmp_path, other)


def test_parse_index_keeps_the_first_place_of_a_name_and_skips_what_it_cannot_read() -> None:
    lines = [
        json.dumps({"id": "a", "name": "n1", "at": 0, "size": 4}),
        json.dumps({"id": "b", "name": "n1", "at": 4, "size": 4}),  # a second writer's copy
        json.dumps({"id": "c", "name": "n2"}),  # an older run's line: a name, no place
        json.dumps({"id": None, "name": "n3", "at": 8, "size": 2}),  # stored without a call id
        json.dumps({"id": "d", "name": "n4", "at": True, "size": 2}),  # not an offset
        "[1, 2]",
        "not json",
    ]
    names, packed = parse_index("\n".join(lines))
    assert names == {"a": "n1", "b": "n1", "c": "n2", "d": "n4"}
    assert packed == {"n1": Packed(0, 4), "n3": Packed(8, 2)}
