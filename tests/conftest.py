"""Shared fixtures: the local simulator, and cassette plumbing for recorded tests.

* `simulator(policy, summarizer=None, **options)` starts a `MessagesSimulator` on
  loopback (allowed despite `--block-network`) and stops it after the test;
  `sim.llm()` is an `AnthropicLLM` pointed at it.
* `recorded_llm(policy, summarizer=None)` is the `LLM` for a test marked
  `@pytest.mark.vcr`. Replaying (the default), it points at a fixed fake URL with a
  dummy key, and vcrpy answers from `cassettes/<test module>/<test name>.yaml`;
  a request the cassette does not hold fails at once with `CassetteMiss` and a
  diff. With `--record-mode=rewrite` it records: on the simulator running
  `policy` when `ANTHROPIC_API_KEY` is unset, against the real API when it is set.
* Mark a recorded test `@pytest.mark.moves_cache_prefix` when it may rewrite its
  cached prefix between steps (compaction, pruning batches); the mark is stored in
  the cassette's metadata when recording, and the cassette lint reads it there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.llm import AnthropicLLM
from agent.testing import cassettes
from agent.testing.simulator import MessagesSimulator, Policy

REPO = Path(__file__).resolve().parents[1]
CASSETTES = REPO / "cassettes"
LOOPBACK = r"127\.0\.0\.1$"


def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
    cassettes.configure(vcr)


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    """Top-level `cassettes/<test module>/`."""
    return str(CASSETTES / request.path.stem)


@pytest.fixture
def vcr_config() -> dict[str, Any]:
    return cassettes.vcr_config()


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


@pytest.fixture(autouse=True)
def _cassette_metadata(request: pytest.FixtureRequest) -> None:
    """While recording, store the test's id and its `moves_cache_prefix` mark in its cassette."""
    if request.node.get_closest_marker("vcr") is None:
        return
    cassettes.stamp(
        request.getfixturevalue("vcr"),
        test=f"tests/{request.path.name}::{request.node.name}",
        moves_cache_prefix=request.node.get_closest_marker("moves_cache_prefix") is not None,
    )


@pytest.fixture
def simulator() -> Iterator[Callable[..., MessagesSimulator]]:
    """Factory: `simulator(policy, summarizer=None, clock=..., models=...)` → a running simulator."""
    started: list[MessagesSimulator] = []

    def start(policy: Policy | None = None, **options: Any) -> MessagesSimulator:
        sim = MessagesSimulator(policy, **options).start()
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture
def recorded_llm(
    request: pytest.FixtureRequest, simulator: Callable[..., MessagesSimulator]
) -> Callable[..., AnthropicLLM]:
    """Factory: `recorded_llm(policy, summarizer=None, **simulator_options)` → an `LLM` (see module doc)."""

    def make(policy: Policy | None = None, summarizer: Policy | None = None, **options: Any) -> AnthropicLLM:
        if request.node.get_closest_marker("vcr") is None:
            pytest.fail("recorded_llm needs the test to be marked @pytest.mark.vcr", pytrace=False)
        cassette = request.getfixturevalue("vcr")
        if cassette.write_protected:
            path = Path(cassette._path)
            if not path.exists():
                pytest.fail(
                    f"no cassette at {path.relative_to(REPO)}; record it with "
                    f"`pytest {request.node.nodeid} --record-mode=rewrite`",
                    pytrace=False,
                )
            return cassettes.CassetteLLM(base_url=cassettes.REPLAY_BASE_URL, api_key="replay", max_retries=0)
        key = os.environ.get("ANTHROPIC_API_KEY")
        if key:
            cassettes.stamp(cassette, recorded_on="api")
            return cassettes.CassetteLLM(api_key=key, max_retries=0)
        sim = simulator(policy, summarizer=summarizer, **options)
        cassettes.stamp(cassette, recorded_on="simulator")
        return cassettes.CassetteLLM(base_url=sim.base_url, api_key="sim", max_retries=0)

    return make
