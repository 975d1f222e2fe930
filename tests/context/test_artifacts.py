"""The artifact store and `read_artifact`: full results on disk, safely read back in slices."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

import pytest

from agent.context.artifact_reader import select_json
from agent.context.artifacts import (
    INDEX_FILE,
    PACK_FILE,
    ArtifactStore,
    artifact_name,
    cleanup_runs,
    find_pointer,
    marker,
    read_artifact_text,
    resolve_artifact,
)
from agent.context.read_artifact import make_read_artifact
from agent.tool_runs import run_one
from agent.tools import ToolCall, ToolRegistry

ORDERS = [{"order_id": f"A-{i}", "customer": {"name": f"C{i}"}, "status": "ok"} for i in range(30)]


def test_names_are_the_sanitized_tool_name_plus_a_content_hash() -> None:
    name = artifact_name("search orders/v2!", "hello", is_json=False)
    assert name.startswith("search_orders_v2_-") and name.endswith(".txt")
    assert name == artifact_name("search orders/v2!", "hello", is_json=False), "deterministic"
    assert name != artifact_name("search orders/v2!", "hello!", is_json=False), "content decides"
    assert artifact_name("t" * 200, "x", is_json=True).endswith(".json")
    assert len(artifact_name("t" * 200, "x", is_json=True)) == 40 + 1 + 12 + 5


def test_pointers_are_greppable_markers() -> None:
    name = artifact_name("get_order", "{}", is_json=True)
    text = f'{{"order_id":"A-1","_cut":"cut 25 other fields; full: {marker(name)}"}}'
    assert find_pointer(text) == name
    assert find_pointer("no pointer here; artifact:../etc/passwd") is None
    assert find_pointer(f"[... 3 lines; full: {marker(name)}]\n") == name


def test_put_packs_once_and_indexes_by_tool_use_id(tmp_path: Path) -> None:
    store = ArtifactStore.for_run(tmp_path, "run-1")
    text = json.dumps(ORDERS)
    name = artifact_name("search_orders", text, is_json=True)
    assert store.put(name, text, tool_use_id="toolu_1")
    assert store.put(name, text, tool_use_id="toolu_2"), "same content, second call: stored once"
    folder = tmp_path / "run-1"
    assert sorted(p.name for p in folder.iterdir()) == sorted([INDEX_FILE, PACK_FILE]), "no file per result"
    assert (folder / PACK_FILE).read_bytes() == text.encode(), "the bytes once, whole"
    assert store.read(name) == text
    assert store.name_for("toolu_1") == name == store.name_for("toolu_2")
    assert store.name_for("toolu_404") is None


def test_the_index_survives_a_new_process_and_a_torn_last_line(tmp_path: Path) -> None:
    store = ArtifactStore.for_run(tmp_path, "run-1")
    name = artifact_name("t", "x" * 500, is_json=False)
    store.put(name, "x" * 500, tool_use_id="toolu_1")
    with open(tmp_path / "run-1" / INDEX_FILE, "a") as handle:
        handle.write('{"id": "toolu_2", "na')  # a crash mid-append
    reopened = ArtifactStore.for_run(tmp_path, "run-1")
    assert reopened.name_for("toolu_1") == name and reopened.name_for("toolu_2") is None


def test_an_artifact_over_the_size_cap_is_stored_truncated_and_says_so(tmp_path: Path) -> None:
    store = ArtifactStore.for_run(tmp_path, "run", max_bytes=1000)
    text = "line\n" * 1000
    kept = store.fit(text)
    assert store.fit(kept) == kept  # what is kept fits as it is: name an artifact after it
    name = artifact_name("t", kept, is_json=False)
    assert store.put(name, text)
    stored = store.read(name)
    assert stored == kept and len(stored.encode()) <= 1000
    assert re.search(r"artifact truncated: first 9\d\d of 5,000 bytes kept", stored)
    assert read_artifact_text(tmp_path, name)[0] == kept  # and the model's reader vouches for it


def test_the_folder_total_cap_refuses_new_artifacts(tmp_path: Path) -> None:
    store = ArtifactStore.for_run(tmp_path, "run", max_total_bytes=1500)
    first, second = "a" * 1000, "b" * 1000
    assert store.put(artifact_name("t", first, is_json=False), first)
    assert not store.put(artifact_name("t", second, is_json=False), second)


def test_cleanup_keeps_the_newest_runs_and_touches_nothing_else(tmp_path: Path) -> None:
    for i in range(5):
        store = ArtifactStore.for_run(tmp_path, f"run-{i}")
        store.put(artifact_name("t", str(i) * 300, is_json=False), str(i) * 300)
        del store  # the run ended: its lease is released
        os.utime(tmp_path / f"run-{i}", (time.time() - 10_000 + i, time.time() - 10_000 + i))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    removed = cleanup_runs(tmp_path, keep=2)
    assert sorted(p.name for p in removed) == ["run-0", "run-1", "run-2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "run-3", "run-4"]


def test_a_new_run_folder_cleans_up_old_ones_but_never_itself(tmp_path: Path) -> None:
    for i in range(3):
        ArtifactStore.for_run(tmp_path, f"old-{i}", keep_runs=2).put(
            artifact_name("t", "z" * 300, is_json=False), "z" * 300
        )
        os.utime(tmp_path / f"old-{i}", (1000 + i, 1000 + i))
    ArtifactStore.for_run(tmp_path, "new", keep_runs=2).put(
        artifact_name("t", "y" * 300, is_json=False), "y" * 300
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "old-2"]


# -- read_artifact ----------------------------------------------------------------------


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str, str]:
    store = ArtifactStore.for_run(tmp_path, "run")
    text_body = "\n".join(f"{i:04d} {'ERROR boom' if i % 100 == 7 else 'ok'}" for i in range(1, 501))
    data = json.dumps(ORDERS)
    names = (
        artifact_name("run_command", text_body, is_json=False),
        artifact_name("search", data, is_json=True),
    )
    store.put(names[0], text_body)
    store.put(names[1], data)
    return tmp_path, *names


def call(root: Path, max_chars: int = 6000, **arguments: object) -> tuple[str, bool]:
    registry = ToolRegistry([make_read_artifact(root, max_chars=max_chars)])
    outcome = run_one(registry, ToolCall("toolu_x", "read_artifact", arguments))
    return str(outcome.value), outcome.is_error


def test_read_by_lines(stored: tuple[Path, str, str]) -> None:
    root, text_name, _ = stored
    out, failed = call(root, name=text_name, start_line=10, end_line=12)
    assert not failed
    assert out.splitlines() == ["[lines 10-12 of 500]", "L10 0010 ok", "L11 0011 ok", "L12 0012 ok"]


def test_read_by_pattern(stored: tuple[Path, str, str]) -> None:
    root, text_name, _ = stored
    out, _ = call(root, name=text_name, pattern="error")
    assert out.splitlines()[0] == "[5 lines of 500 match 'error']"
    assert "L7 0007 ERROR boom" in out and "L407 0407 ERROR boom" in out and " ok" not in out


def test_read_by_json_path(stored: tuple[Path, str, str]) -> None:
    root, _, json_name = stored
    assert call(root, name=json_name, json_path="[3].customer.name")[0] == '"C3"'
    assert json.loads(call(root, name=json_name, json_path="[*].order_id")[0])[-1] == "A-29"
    out, failed = call(root, name=json_name, json_path="[0].nope")
    assert failed and "no key 'nope'" in out and "keys there: order_id, customer, status" in out


def test_slices_are_bounded_and_say_how_to_read_on(stored: tuple[Path, str, str]) -> None:
    root, text_name, json_name = stored
    out, _ = call(root, max_chars=300, name=text_name)
    shown = re.match(r"\[lines 1-(\d+) of 500\]\nL1 0001 ok", out)
    assert len(out) <= 300 and shown is not None
    last = int(shown.group(1))
    assert f"\nL{last} " in out and f"\nL{last + 1} " not in out
    assert out.endswith(f"[... read on with start_line={last + 1}]")
    out, _ = call(root, max_chars=300, name=json_name, json_path="[*]")
    assert len(out) <= 300 and find_pointer(out) == json_name


@pytest.mark.parametrize(
    "name",
    [
        "../secret.txt",
        "/etc/passwd",
        "run/../../x-0123456789ab.txt",
        "x-0123456789ab.txt/..",
        "",
        "a/b-0123456789ab.txt",
    ],
)
def test_anything_but_a_plain_artifact_name_is_refused(stored: tuple[Path, str, str], name: str) -> None:
    root, _, _ = stored
    out, failed = call(root, name=name)
    assert failed and "not an artifact name" in out


def test_a_symlink_in_the_store_is_refused(
    stored: tuple[Path, str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, _, _ = stored
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("password=hunter2")
    (root / "run" / "leak-0123456789ab.txt").symlink_to(outside)
    out, failed = call(root, name="leak-0123456789ab.txt")
    assert failed and "refused" in out and "hunter2" not in out
    with pytest.raises(ValueError, match="refused"):
        resolve_artifact(root, "leak-0123456789ab.txt")


def test_a_symlink_to_another_artifact_is_refused_too(stored: tuple[Path, str, str]) -> None:
    root, text_name, _ = stored
    (root / "run" / "alias-0123456789ab.txt").symlink_to(root / "run" / text_name)
    out, failed = call(root, name="alias-0123456789ab.txt")
    assert failed and "not a regular file" in out


def test_a_run_folder_symlinked_out_of_the_store_is_not_searched(
    stored: tuple[Path, str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, _, _ = stored
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / INDEX_FILE).touch()
    (elsewhere / "other-0123456789ab.txt").write_text("not yours")
    (root / "linked-run").symlink_to(elsewhere, target_is_directory=True)
    out, failed = call(root, name="other-0123456789ab.txt")
    assert failed and "no artifact named" in out


def test_an_unknown_name_or_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    out, failed = call(tmp_path / "nowhere", name="x-0123456789ab.txt")
    assert failed and "no artifact store" in out


def test_select_json_paths() -> None:
    data = {"a": {"b.c": [1, {"d": 2}]}, "xs": [{"id": 1}, {"id": 2}]}
    assert select_json(data, '$.a["b.c"][1].d') == 2
    assert select_json(data, "a['b.c'].0") == 1
    assert select_json(data, "xs[*].id") == [1, 2]
    assert select_json(data, "xs[-1]") == {"id": 2}
    with pytest.raises(ValueError, match="list of 2 items"):
        select_json(data, "xs[5]")


# -- issue 11: regressions ---------------------------------------------------------------


def test_keys_a_tool_returned_are_not_stored_in_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "gw-proxy-key-0123456789")
    leaked = "env: ANTHROPIC_API_KEY=sk-ant-api03-AbC_dEf-0123456789xyz\nproxy=gw-proxy-key-0123456789\n" * 20
    store = ArtifactStore.for_run(tmp_path, "run")
    name = artifact_name("run_command", leaked, is_json=False)
    assert store.put(name, leaked)
    on_disk = b"".join(p.read_bytes() for p in (tmp_path / "run").iterdir())
    assert b"AbC_dEf-0123456789xyz" not in on_disk and b"gw-proxy-key-0123456789" not in on_disk
    assert "sk-ant-[redacted]" in store.read(name) and "proxy=[redacted]" in store.read(name)


def test_a_hard_link_from_outside_the_store_is_refused(
    stored: tuple[Path, str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, _, _ = stored
    outside = tmp_path_factory.mktemp("outside") / "id_rsa"
    outside.write_text("-----BEGIN PRIVATE KEY-----\nhunter2\n")
    os.link(outside, root / "run" / "leak-0123456789ab.txt")
    out, failed = call(root, name="leak-0123456789ab.txt")
    assert failed and "refused" in out and "2 hard links" in out and "hunter2" not in out


def test_a_fifo_in_the_store_is_refused_without_blocking(stored: tuple[Path, str, str]) -> None:
    root, _, _ = stored
    os.mkfifo(root / "run" / "pipe-0123456789ab.txt")
    out, failed = call(root, name="pipe-0123456789ab.txt")
    assert failed and "not a regular file" in out


def test_the_pattern_syntax_is_in_the_tool_schema(tmp_path: Path) -> None:
    schema = make_read_artifact(tmp_path).input_model.model_json_schema()
    said = schema["properties"]["pattern"]["description"]
    assert ("RE2" in said and "no backreferences" in said) or ("glob" in said and "no regex" in said)


def test_reads_are_capped_in_bytes_and_say_so(stored: tuple[Path, str, str]) -> None:
    root, _, _ = stored
    digest = hashlib.sha256(bytes(64 << 20)).hexdigest()[:12]  # named by its bytes, as the store names
    with open(root / "run" / f"huge-{digest}.txt", "wb") as handle:
        handle.truncate(64 << 20)  # 64 MiB in the store (sparse: costs no disk)
    out, _ = call(root, name=f"huge-{digest}.txt")
    assert "only the first 16,777,216 of 67,108,864 bytes read" in out and len(out) <= 6000


def test_a_line_longer_than_the_answer_says_how_much_was_cut(tmp_path: Path) -> None:
    text = "x" * 50_000
    name = artifact_name("t", text, is_json=False)
    ArtifactStore.for_run(tmp_path, "run").put(name, text)
    out, _ = call(tmp_path, max_chars=1000, name=name)
    assert len(out) <= 1000 and re.search(r"…\[\+4\d,\d{3} chars\]$", out)


def test_a_match_deep_in_a_one_line_json_result_is_found_and_shown_in_context(tmp_path: Path) -> None:
    data = json.dumps([{"id": i, "note": "refund due" if i == 4000 else "fine"} for i in range(5000)])
    name = artifact_name("search", data, is_json=True)
    ArtifactStore.for_run(tmp_path, "run").put(name, data)
    out, failed = call(tmp_path, name=name, pattern="refund")
    assert not failed and out.startswith("[1 lines of 1 match 'refund']")
    assert '{"id": 4000, "note": "refund due"}' in out and len(out.splitlines()[1]) < 500
