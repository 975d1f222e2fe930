"""Fixtures for every test, the README's and docs/' Python blocks included (pytest-markdown-docs).

Loaded by `-p tests.pytest_fixtures` (pyproject's addopts), since no conftest.py sits beside
the README. A block that needs a key asks for `fixture:simulated_api` (the test kit's
stand-in for the API); the rest run as they are, each in a scratch working directory.
Two fixtures here replace pytest-recording's, so they are registered after the plugins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

LOOPBACK = r"127\.0\.0\.1$"


class _Fixtures:
    @pytest.fixture
    def allowed_hosts(self, request: pytest.FixtureRequest) -> list[str]:
        """Hosts reachable under `--block-network`: loopback (the simulator) plus any asked for."""
        marker = request.node.get_closest_marker("block_network")
        extra = (marker.kwargs.get("allowed_hosts") if marker else None) or request.config.getoption(
            "--allowed-hosts"
        )
        if isinstance(extra, str):
            extra = extra.split(",")
        return [*(extra or []), LOOPBACK]

    @pytest.fixture(autouse=True)
    def _markdown_blocks_run_in_a_scratch_directory(
        self, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A README or docs block writes its files (a session, a request log) where a reader's
        script would, in the working directory; under test that is a fresh one, not the repo."""
        if type(request.node).__name__ == "MarkdownInlinePythonItem":
            monkeypatch.chdir(tmp_path)

    @pytest.fixture
    def vcr_cassette_dir(self, request: pytest.FixtureRequest) -> str:
        """pytest-recording's own, function-scoped: its autouse `vcr` fixture asks for a
        module-scoped one, and a Markdown block has no module to scope it to."""
        path = Path(request.node.path)
        return str(path.parent / "cassettes" / path.stem)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Fixtures(), "project-fixtures")


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Any:
    """Markdown files only: pytest-markdown-docs would also import every test module a second
    time, under another name, to look for fences in its docstrings (there are none), and that
    second import breaks the tests that import a sibling module (`from test_loop import ...`)."""
    collected = yield
    return [node for node in collected if type(node).__name__ != "MarkdownDocstringCodeModule"]
