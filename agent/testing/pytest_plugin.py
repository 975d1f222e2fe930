"""The test kit as a pytest plugin, registered by the package's `pytest11` entry point.

Installing agent-from-scratch gives every pytest run in that environment these fixtures,
with nothing to copy into a conftest:

* `simulator(policy=None, summarizer=None, **options)` starts a strict local
  `MessagesSimulator` on loopback and stops it after the test; `sim.llm()` is an
  `AnthropicLLM` pointed at it.
* `recorded_llm(policy=None, summarizer=None, **simulator_options)` is an `LLM` backed by
  the test's cassette, `<rootdir>/cassettes/<test module>/<test name>.yaml` (override the
  `agent_cassette_dir` fixture to put them elsewhere). Replaying (the default) it answers
  from the cassette offline, and a request the cassette does not hold fails at once with
  `CassetteMiss` and a diff. Recording (`--record-mode=rewrite` with pytest-recording
  installed, else `AGENT_RECORD_MODE=rewrite`) it talks to the simulator running `policy`,
  or to the real API when `ANTHROPIC_API_KEY` is set, and writes the cassette.
* `agent_cassette` is that open vcrpy cassette, for a test that wants to look inside.
* `simulated_api` stands a simulator in for the real API, for code written against it
  (`Agent()` with no `llm=`, `anthropic.Anthropic()`, a README block run by
  pytest-markdown-docs with `fixture:simulated_api`): `ANTHROPIC_BASE_URL` points at it,
  `ANTHROPIC_API_KEY` holds a placeholder, and the test runs in a temporary directory, so
  the files the code writes land there. It answers "ok"; set `sim.policy` to script it.

The plugin is loaded by every pytest run where the package is installed, so importing
it costs nothing: the simulator, the SDK and vcrpy are imported only when a fixture is
used. It adds no command-line option (`--record-mode` is pytest-recording's, when that is
installed) and does not touch pytest-recording's own `vcr` fixture or configuration:
its cassettes are opened with vcrpy directly. Cassettes need the `testing` extra
(vcrpy, PyYAML); without it `recorded_llm` says what to install, and `simulator` works.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agent.anthropic_llm import AnthropicLLM
    from agent.testing.simulator import MessagesSimulator, Policy

__all__ = [
    "agent_cassette",
    "agent_cassette_dir",
    "record_mode",
    "recorded_llm",
    "simulated_api",
    "simulator",
]

RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "moves_cache_prefix: the recorded requests may rewrite their cache prefix between steps "
        "(stored in the cassette's metadata when recording)",
    )


def record_mode(config: pytest.Config) -> str:
    """`--record-mode` (pytest-recording's option) if given, else `AGENT_RECORD_MODE`, else none."""
    try:
        mode = config.getoption("--record-mode")
    except ValueError:  # pytest-recording is not installed: no such option
        mode = None
    mode = mode or os.environ.get("AGENT_RECORD_MODE") or "none"
    if mode not in RECORD_MODES:
        raise pytest.UsageError(f"record mode must be one of {', '.join(RECORD_MODES)}, not {mode!r}")
    return str(mode)


@pytest.fixture
def simulator() -> Iterator[Callable[..., MessagesSimulator]]:
    """Factory: `simulator(policy, summarizer=None, clock=..., models=...)` → a running simulator."""
    from agent.testing.simulator import MessagesSimulator

    started: list[MessagesSimulator] = []

    def start(policy: Policy | None = None, **options: Any) -> MessagesSimulator:
        sim = MessagesSimulator(policy, **options).start()
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture
def simulated_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[MessagesSimulator]:
    """The Messages API on loopback in place of the real one (see the module docstring)."""
    from agent.testing.simulator import MessagesSimulator

    with MessagesSimulator() as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-simulated")
        monkeypatch.chdir(tmp_path)
        yield sim


@pytest.fixture
def agent_cassette_dir(request: pytest.FixtureRequest) -> Path:
    """Where this module's cassettes live: `<rootdir>/cassettes/<test module>/`."""
    return request.config.rootpath / "cassettes" / request.path.stem


@pytest.fixture
def agent_cassette(request: pytest.FixtureRequest, agent_cassette_dir: Path) -> Iterator[Any]:
    """This test's vcrpy cassette, open for the whole test (saved after it when recording)."""
    try:
        import vcr  # type: ignore[import-untyped]
    except ImportError:
        pytest.fail(
            "recorded_llm needs vcrpy and PyYAML: pip install vcrpy "
            "(or, from the checkout, pip install -e '.[testing]')",
            pytrace=False,
        )
    from agent.testing import cassettes

    name = request.node.name if request.cls is None else f"{request.cls.__name__}.{request.node.name}"
    path = agent_cassette_dir / f"{name}.yaml"
    mode = record_mode(request.config)
    if mode == "rewrite":
        path.unlink(missing_ok=True)
        mode = "new_episodes"
    if mode == "none" and not path.exists():
        root = request.config.rootpath
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        pytest.fail(
            f"no cassette at {shown}; record it with `pytest {request.node.nodeid} --record-mode=rewrite` "
            "(or AGENT_RECORD_MODE=rewrite without pytest-recording)",
            pytrace=False,
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    recorder = cassettes.configure(vcr.VCR(record_mode=mode))
    with recorder.use_cassette(str(path), **cassettes.vcr_config()) as cassette:
        test = f"{request.path.relative_to(request.config.rootpath).as_posix()}::{request.node.name}"
        moves = request.node.get_closest_marker("moves_cache_prefix") is not None
        cassettes.stamp(cassette, test=test, moves_cache_prefix=moves)
        yield cassette


@pytest.fixture
def recorded_llm(
    request: pytest.FixtureRequest, simulator: Callable[..., MessagesSimulator]
) -> Callable[..., AnthropicLLM]:
    """Factory: `recorded_llm(policy, summarizer=None, **simulator_options)` → a cassette-backed `LLM`."""

    def make(policy: Policy | None = None, summarizer: Policy | None = None, **options: Any) -> AnthropicLLM:
        from agent.testing import cassettes

        cassette = request.getfixturevalue("agent_cassette")
        if cassette.write_protected:
            return cassettes.CassetteLLM(base_url=cassettes.REPLAY_BASE_URL, api_key="replay", max_retries=0)
        key = os.environ.get("ANTHROPIC_API_KEY")
        if key:
            cassettes.stamp(cassette, recorded_on="api")
            return cassettes.CassetteLLM(api_key=key, max_retries=0)
        sim = simulator(policy, summarizer=summarizer, **options)
        cassettes.stamp(cassette, recorded_on="simulator")
        return cassettes.CassetteLLM(base_url=sim.base_url, api_key="sim", max_retries=0)

    return make
