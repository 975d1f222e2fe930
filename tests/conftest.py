"""Shared fixtures. `allowed_hosts` (loopback under `--block-network`) is in
`tests/pytest_fixtures.py`, loaded by pyproject's addopts for the README's and docs/' blocks
too. The simulator and cassette fixtures (`simulator`, `recorded_llm`,
`agent_cassette`) come from the package's own pytest plugin, `agent.testing.pytest_plugin`,
registered by its `pytest11` entry point: this project's tests use them exactly as a user's
project does.

* Mark a recorded test `@pytest.mark.moves_cache_prefix` when it may rewrite its
  cached prefix between steps (compaction, pruning batches); the mark is stored in
  the cassette's metadata when recording, and the cassette lint reads it there.
* A run whose tests leave files in the repository fails, naming them (`pytest_sessionfinish`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.testing.pytest_plugin import record_mode

ROOT = Path(__file__).resolve().parent.parent
TOOL_FOLDERS = frozenset(
    {".git", ".venv", ".ci-venv", "build", "__pycache__", ".pytest_cache", ".hypothesis"}
    | {".mypy_cache", ".ruff_cache", ".grimp_cache", ".import_linter_cache"}
)
"""Folders the tools keep (the test runner's and Hypothesis's caches among them): not a test's doing."""
BEFORE = pytest.StashKey[set[str]]()


def repo_files() -> set[str]:
    """Every file in the repository outside the tools' folders, relative to it."""
    found: set[str] = set()
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in TOOL_FOLDERS and not d.endswith(".egg-info")]
        where = Path(folder).relative_to(ROOT)
        found.update((where / name).as_posix() for name in names)
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    session.stash[BEFORE] = repo_files()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail a run whose tests left files in the repository. An `Agent`'s default `artifacts_dir`
    (and any relative path) is under the working directory, the repository when testing: a
    test that writes passes a `tmp_path` instead. A recording run writes its cassettes."""
    if BEFORE not in session.stash:
        return
    recording = record_mode(session.config) != "none"
    left = sorted(
        p for p in repo_files() - session.stash[BEFORE] if not (recording and p.startswith("cassettes/"))
    )
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")  # after the progress line
        reporter.write_sep("=", f"the tests left {len(left)} file(s) in the repository", red=True)
        for path in left[:20]:
            reporter.write_line(f"  {path}")
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
