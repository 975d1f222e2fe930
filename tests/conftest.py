"""Shared fixtures. The simulator and cassette fixtures (`simulator`, `recorded_llm`,
`agent_cassette`) come from the package's own pytest plugin, `agent.testing.pytest_plugin`,
registered by its `pytest11` entry point: this project's tests use them exactly as a user's
project does.

* Mark a recorded test `@pytest.mark.moves_cache_prefix` when it may rewrite its
  cached prefix between steps (compaction, pruning batches); the mark is stored in
  the cassette's metadata when recording, and the cassette lint reads it there.
"""

from __future__ import annotations

import pytest

LOOPBACK = r"127\.0\.0\.1$"


@pytest.fixture
def allowed_hosts(request: pytest.FixtureRequest) -> list[str]:
    """Hosts reachable under `--block-network`: loopback (the simulator) plus any asked for."""
    marker = request.node.get_closest_marker("block_network")
    extra = (marker.kwargs.get("allowed_hosts") if marker else None) or request.config.getoption(
        "--allowed-hosts"
    )
    if isinstance(extra, str):
        extra = extra.split(",")
    return [*(extra or []), LOOPBACK]
