"""Attacks on the artifact store itself: hostile names, links, swaps, many runs, a full disk.

Everything a store holds came from a tool, and tools (a shell, a fetcher) can be steered
by a prompt injection; run ids and tool names are strings anyone can choose. Each test
is one attack and the property that must hold against it. Searches and reads are
attacked in `test_adversarial_artifact_reads.py`.
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.artifacts import (
    INDEX_FILE,
    NAME_PATTERN,
    PACK_FILE,
    ArtifactStore,
    Refused,
    artifact_name,
    cleanup_runs,
    find_pointer,
    folder_bytes,
    read_artifact_text,
)
from agent.testing import ScriptedLLM, reply, tool_use

HOSTILE = [
    "../../etc/passwd",
    "..",
    ".",
    "",
    "a/b",
    "a_b",
    "\u202etxt.exe",
    "名前",
    "nul\x00byte",
    "x" * 5000,
]


def put_text(store: ArtifactStore, text: str, tool_use_id: str | None = None) -> str:
    name = artifact_name("t", text, is_json=False)
    assert store.put(name, text, tool_use_id=tool_use_id)
    return name


@pytest.mark.parametrize("tool_name", HOSTILE)
def test_hostile_tool_names_make_plain_names_that_round_trip(tmp_path: Path, tool_name: str) -> None:
    import re

    name = artifact_name(tool_name, "payload " * 50, is_json=False)
    assert re.fullmatch(NAME_PATTERN, name), "ASCII letters, digits, _ and - only: no path, no bidi"
    store = ArtifactStore.for_run(tmp_path, "run")
    assert store.put(name, "payload " * 50) and store.read(name) == "payload " * 50


def test_hostile_run_ids_stay_inside_the_root_and_never_share_a_folder(tmp_path: Path) -> None:
    folders = set()
    for run_id in HOSTILE:
        store = ArtifactStore.for_run(tmp_path, run_id)
        assert store.folder.parent == tmp_path and len(store.folder.name) <= 100
        assert not store.folder.name.startswith("."), "hidden names are the store's own (.trash-*)"
        put_text(store, f"result of {run_id!r}")
        folders.add(store.folder.name)
    assert len(folders) == len(HOSTILE), "'a/b' and 'a_b' must not share a folder"
    assert {p.parent for p in tmp_path.rglob("*")} <= {tmp_path, *(tmp_path / f for f in folders)}


def test_a_symlink_planted_at_an_artifact_name_is_neither_written_through_nor_read(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "victim"
    outside.write_text("original")
    store = ArtifactStore.for_run(tmp_path, "run")
    put_text(store, "first result " * 30)
    text = "second result " * 30
    (tmp_path / "run" / artifact_name("t", text, is_json=False)).symlink_to(outside)
    name = put_text(store, text)
    assert outside.read_text() == "original" and store.read(name) == text


def test_a_hard_link_planted_at_an_artifact_name_is_neither_written_nor_read(tmp_path: Path) -> None:
    outside = tmp_path / "victim"
    outside.write_text("original")
    store = ArtifactStore.for_run(tmp_path / "store", "run")
    put_text(store, "first result " * 30)
    text = "second result " * 30
    os.link(outside, tmp_path / "store" / "run" / artifact_name("t", text, is_json=False))
    assert store.read(put_text(store, text)) == text and outside.read_text() == "original"


def test_an_index_symlinked_out_of_the_store_is_never_written_through(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "authorized_keys"
    outside.write_text("ssh-ed25519 AAAA mine\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / INDEX_FILE).symlink_to(outside)
    with pytest.raises(OSError):
        put_text(ArtifactStore.for_run(tmp_path, "run"), "x" * 300, tool_use_id="toolu_1")
    assert outside.read_text() == "ssh-ed25519 AAAA mine\n"


def test_a_run_folder_swapped_for_a_symlink_is_not_written_through(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (tmp_path / "run").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OSError):
        put_text(ArtifactStore.for_run(tmp_path, "run"), "x" * 300)
    assert list(elsewhere.iterdir()) == []


def _swap_forever(folder: Path, name: str, secret: Path, stop: threading.Event) -> None:
    while not stop.is_set():
        (folder / "fresh").write_text("harmless\n")
        os.replace(folder / "fresh", folder / name)  # a regular file, one link
        (folder / "link").unlink(missing_ok=True)
        os.symlink(secret, folder / "link")
        os.replace(folder / "link", folder / name)  # the same name, now a symlink out


@pytest.mark.slow  # races a swapping thread for a while
def test_a_symlink_swapped_in_while_reading_is_never_followed(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    secret = tmp_path_factory.mktemp("outside") / "secret"
    secret.write_text("TOPSECRET\n")
    put_text(ArtifactStore.for_run(tmp_path, "run"), "y" * 300)
    name, stop = artifact_name("swap", "harmless\n", is_json=False), threading.Event()  # genuine when a file
    swapper = threading.Thread(target=_swap_forever, args=(tmp_path / "run", name, secret, stop))
    swapper.start()
    seen, leaks, until = 0, 0, time.monotonic() + 1.5
    try:
        while time.monotonic() < until:
            try:
                leaks += "TOPSECRET" in read_artifact_text(tmp_path, name)[0]
                seen += 1
            except (ValueError, FileNotFoundError):
                pass
    finally:
        stop.set()
        swapper.join()
    assert leaks == 0 and seen > 0, f"{leaks} reads followed the swapped-in symlink"


def _run_thread(root: Path, i: int, barrier: Any, outcome: dict[int, str], **options: Any) -> None:
    text = f"step-1 result of run {i}\n" * 20
    try:
        with ArtifactStore.for_run(root, f"run-{i:03d}", **options) as store:
            name = put_text(store, text, tool_use_id=f"toolu_{i}")
            barrier.wait(timeout=60)  # every run has written step 1 (and cleaned up) before any reads
            put_text(store, f"step-2 result of run {i}\n" * 20)
            kept = store.read(name) == text and store.name_for(f"toolu_{i}") == name
            outcome[i] = "ok" if kept else "lost"
            barrier.wait(timeout=60)
    except Exception as error:  # a run that broke counts as much as one that lost its result
        barrier.abort()
        outcome.setdefault(i, f"{type(error).__name__}: {error}")


@pytest.mark.slow
@pytest.mark.parametrize("options", [{}, {"keep_runs": 1, "min_age_s": 0}], ids=["defaults", "lease-only"])
def test_200_concurrent_runs_sharing_one_folder_keep_their_own_results(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    barrier, outcome = threading.Barrier(200), {}  # type: ignore[var-annotated]
    threads = [
        threading.Thread(target=_run_thread, args=(tmp_path, i, barrier, outcome), kwargs=options)
        for i in range(200)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = {i: what for i, what in outcome.items() if what != "ok"}
    assert len(outcome) == 200 and not failed, (
        f"{len(failed)} live runs failed, e.g. {list(failed.items())[:3]}"
    )
    if options:  # all ended: now the same cleanup deletes the finished runs beyond keep_runs
        late = ArtifactStore.for_run(tmp_path, "late", **options)
        put_text(late, "late result " * 30)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["late"]


def _run_process(root: Path, i: int, barrier: Any, results: Any) -> None:
    try:
        store = ArtifactStore.for_run(root, f"proc-{i}", keep_runs=1, min_age_s=0)
        name = put_text(store, f"result of process {i}\n" * 30)
        barrier.wait(timeout=60)  # every process has written (and cleaned up) once
        put_text(ArtifactStore.for_run(root, f"proc-{i}-again", keep_runs=1, min_age_s=0), "again " * 50)
        barrier.wait(timeout=60)  # ... and twice, with every other run live
        results.put((i, "ok" if store.read(name) == f"result of process {i}\n" * 30 else "lost"))
    except Exception as error:
        barrier.abort()
        results.put((i, f"{type(error).__name__}: {error}"))


def test_concurrent_runs_in_many_processes_never_delete_a_live_one(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")  # forked: no re-import, each has its own locks
    barrier, results, count = context.Barrier(16), context.Queue(), 16
    workers = [
        context.Process(target=_run_process, args=(tmp_path, i, barrier, results)) for i in range(count)
    ]
    for worker in workers:
        worker.start()
    outcome = dict(results.get(timeout=120) for _ in range(count))
    for worker in workers:
        worker.join(timeout=60)
    assert outcome == dict.fromkeys(range(count), "ok"), "a live run in another process lost its folder"


def test_cleanup_deletes_only_old_free_store_folders(tmp_path: Path) -> None:
    old = time.time() - 10_000
    for i in range(4):
        put_text(ArtifactStore.for_run(tmp_path, f"done-{i}"), f"done {i} " * 40)
        os.utime(tmp_path / f"done-{i}", (old + i, old + i))
    live = ArtifactStore.for_run(tmp_path, "live-but-idle")
    put_text(live, "live " * 60)
    os.utime(tmp_path / "live-but-idle", (old - 5, old - 5))  # idle for hours, but leased
    put_text(ArtifactStore.for_run(tmp_path, "young"), "young " * 60)  # finished a moment ago
    (tmp_path / ".trash-crashed-cleanup" / "x").mkdir(parents=True)  # a cleanup died mid-delete
    (tmp_path / "notes").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "done-3", target_is_directory=True)
    removed = cleanup_runs(tmp_path, keep=1)
    assert sorted(p.name for p in removed) == ["done-0", "done-1", "done-2", "done-3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "live-but-idle", "notes", "young"]
    live.close()


def test_a_run_resuming_into_a_folder_being_deleted_gets_a_fresh_one(tmp_path: Path) -> None:
    import fcntl

    put_text(ArtifactStore.for_run(tmp_path, "old"), "old " * 80)
    held = os.open(tmp_path / "old", os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX)  # a cleanup is deleting it
    resumed: list[str] = []
    thread = threading.Thread(
        target=lambda: resumed.append(put_text(ArtifactStore.for_run(tmp_path, "old"), "new " * 80))
    )
    thread.start()
    time.sleep(0.2)
    os.rename(tmp_path / "old", tmp_path / ".trash-old")
    os.close(held)
    thread.join(timeout=10)
    assert resumed and read_artifact_text(tmp_path, resumed[0])[0] == "new " * 80
    assert (tmp_path / "old" / PACK_FILE).is_file()


def test_concurrent_writers_of_one_folder_leave_one_whole_file_and_every_index_line(tmp_path: Path) -> None:
    text = "the same result\n" * 2000

    def write(i: int) -> None:
        put_text(ArtifactStore.for_run(tmp_path, "shared"), text, tool_use_id=f"toolu_{i}")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    name = artifact_name("t", text, is_json=False)
    assert sorted(p.name for p in (tmp_path / "shared").iterdir()) == sorted([INDEX_FILE, PACK_FILE])
    pack = (tmp_path / "shared" / PACK_FILE).read_bytes()
    lines = [json.loads(line) for line in (tmp_path / "shared" / INDEX_FILE).read_text().splitlines()]
    assert {line["id"] for line in lines} == {f"toolu_{i}" for i in range(32)}
    for line in lines:  # each writer's line points at whole bytes, wherever its append landed
        if "at" in line:
            assert pack[line["at"] : line["at"] + line["size"]] == text.encode()
    reopened = ArtifactStore.for_run(tmp_path, "shared")
    assert reopened.read(name) == text and all(reopened.name_for(f"toolu_{i}") == name for i in range(32))


def _full_disk(fd: int, data: bytes) -> None:
    os.write(fd, data[: len(data) // 2])
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_leaves_no_partial_file_and_no_index_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ArtifactStore.for_run(tmp_path, "run")
    monkeypatch.setattr(ArtifactStore, "_write_file", staticmethod(_full_disk))
    with pytest.raises(OSError, match="No space left"):
        put_text(store, "big result\n" * 500, tool_use_id="toolu_1")
    assert (tmp_path / "run" / INDEX_FILE).read_text() == "", "no index line points at half a result"
    assert store.name_for("toolu_1") is None
    monkeypatch.undo()  # space again: the same store works
    name = put_text(store, "big result\n" * 500, tool_use_id="toolu_1")
    assert store.read(name) == "big result\n" * 500 and store.name_for("toolu_1") == name


def test_an_index_line_torn_by_a_full_disk_does_not_swallow_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ArtifactStore.for_run(tmp_path, "run")
    first = put_text(store, "one " * 100)
    monkeypatch.setattr(ArtifactStore, "_write_file", staticmethod(_full_disk))
    with pytest.raises(OSError):
        store.put(first, "one " * 100, tool_use_id="toolu_1")  # the artifact exists: only the index line
    monkeypatch.undo()
    store.put(first, "one " * 100, tool_use_id="toolu_2")
    assert ArtifactStore.for_run(tmp_path, "run").name_for("toolu_2") == first


@tool
def dump_env() -> str:
    """Print the environment (a leaky tool)."""
    return (
        "\n".join(f"VAR_{i}=value" for i in range(40))
        + "\nANTHROPIC_API_KEY="
        + os.environ["ANTHROPIC_API_KEY"]
    )


def run_dump_env(tmp_path: Path) -> Any:
    llm = ScriptedLLM([reply(tool_use("dump_env", {}, id="toolu_1")), reply("done")])
    return Agent(llm=llm, tools=[dump_env], artifacts_dir=tmp_path, compress_threshold=200).run("go")


def test_the_agent_stores_no_key_a_tool_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-Zz9_live-key-0123456789")
    result = run_dump_env(tmp_path)
    assert find_pointer(result.messages[2]["content"][0]["content"]), "stored, and pointed at"
    assert not any(b"live-key-0123456789" in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_a_full_disk_never_breaks_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k" * 20)
    monkeypatch.setattr(ArtifactStore, "_write_file", staticmethod(_full_disk))
    result = run_dump_env(tmp_path)
    assert result.text == "done" and find_pointer(result.messages[2]["content"][0]["content"]) is None


def test_a_temp_file_renamed_away_during_the_size_scan_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race behind a lost index line: another writer's temp file is listed, then renamed
    away before it is measured. Replayed deterministically: the scan sees a file that is gone."""
    (tmp_path / "kept.txt").write_text("x" * 10)
    real_scandir = os.scandir

    class Vanishing:
        name = ".tmp-gone"

        def is_file(self, follow_symlinks: bool = True) -> bool:
            return True

        def stat(self, follow_symlinks: bool = True) -> os.stat_result:
            raise FileNotFoundError(2, "No such file or directory", self.name)

    class Listing:
        def __init__(self, fd: int) -> None:
            self.inner = real_scandir(fd)

        def __enter__(self) -> list[Any]:
            return [*self.inner, Vanishing()]

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

    monkeypatch.setattr(os, "scandir", Listing)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert folder_bytes(fd) == 10
    finally:
        os.close(fd)


def test_a_newer_run_folder_cannot_map_this_run_s_artifact_to_other_bytes(tmp_path: Path) -> None:
    """Issue 27: run folders are searched newest first, so a folder planted later under the same
    `artifacts_dir`, holding the same name with other bytes, must be passed over: a name is
    checked against the hash it carries."""
    genuine_text = "refund policy: orders over $500 need a manager\n" * 20
    ours = ArtifactStore.for_run(tmp_path, "run-ours")
    name = artifact_name("policy", genuine_text, is_json=False)
    assert ours.put(name, genuine_text)
    ours.close()
    time.sleep(0.05)
    planted = ArtifactStore.for_run(tmp_path, "run-planted")
    forged = "refund policy: refund everything, no questions asked\n" * 20
    planted_name = artifact_name("policy", forged, is_json=False)
    assert planted.put(planted_name, forged)
    planted.close()
    pack = tmp_path / "run-planted" / PACK_FILE
    index = tmp_path / "run-planted" / INDEX_FILE
    index.write_text(index.read_text().replace(planted_name, name))  # the forged bytes under our name
    os.utime(tmp_path / "run-planted")  # and the newest folder
    assert forged in pack.read_text()
    assert read_artifact_text(tmp_path, name)[0] == genuine_text
    (tmp_path / "run-ours" / PACK_FILE).write_text("x" * len(genuine_text.encode()))  # ours damaged too
    with pytest.raises(Refused, match="do not match its name"):
        read_artifact_text(tmp_path, name)


def test_a_store_moved_and_swapped_for_a_link_mid_run_still_reads_what_the_run_wrote(
    tmp_path: Path,
) -> None:
    """Between two steps the artifacts folder is renamed away and a symlink to an empty
    folder put in its place. The run's own artifacts are read through its open folder."""
    store, decoy = tmp_path / "artifacts", tmp_path / "decoy"
    decoy.mkdir()
    secret_line = "line 7 holds the refund reference RF-5521"

    @tool
    def export() -> str:
        """A long export."""
        return "\n".join(secret_line if i == 7 else f"row {i} " + "x" * 60 for i in range(400))

    def swap_then_read(request: dict[str, Any]) -> dict[str, Any]:
        pointer = find_pointer(json.dumps(request["messages"][-1]))
        assert pointer, "the cut result points at its artifact"
        store.rename(tmp_path / "moved")
        store.symlink_to(decoy, target_is_directory=True)
        return reply(tool_use("read_artifact", {"name": pointer, "pattern": "RF-5521"}))

    llm = ScriptedLLM([reply(tool_use("export", {})), swap_then_read, reply("done")])  # type: ignore[list-item]
    result = Agent(llm=llm, tools=[export], artifacts_dir=store, compress_threshold=500).run("export")
    answer = result.messages[-2]["content"][0]
    assert not answer.get("is_error"), answer["content"]
    assert "RF-5521" in answer["content"]
    assert not any(decoy.iterdir()), "nothing was written through the link"
