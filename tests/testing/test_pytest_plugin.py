"""The test kit is a pytest plugin: a project of the user's own, outside this repository's
`tests/`, with no conftest, records a cassette on the simulator and then replays it."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

USER_TEST = '''
from agent import Agent, tool
from agent.testing.policies import call, latest_results, scripted


@tool
def shelf(title: str) -> str:
    """Where a book is shelved.

    Args:
        title: The book's title.
    """
    return {"Dune": "B-12"}.get(title, "not held")


def answer(body):
    return f"It is on shelf {latest_results(body)[0].text}."


def test_where_is_dune(recorded_llm):
    llm = recorded_llm(scripted(call("shelf", title="Dune"), answer))
    agent = Agent(system="You are a librarian.", tools=[shelf], llm=llm, artifacts_dir=None)
    assert agent.run("Where is Dune?").text == "It is on shelf B-12."


def test_the_simulator_rejects_what_the_api_rejects(simulator):
    import anthropic
    import pytest

    sim = simulator(scripted("hello"))
    client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim", max_retries=0)
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="claude-opus-5", max_tokens=10, messages=[])
'''


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANTHROPIC_API_KEY")}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    (plugin,) = [e for e in entry_points(group="pytest11") if e.name == "agent-from-scratch"]
    assert plugin.value == "agent.testing.pytest_plugin"


@pytest.mark.slow  # four pytest runs in subprocesses
def test_a_project_of_its_own_records_then_replays_with_no_conftest(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_library.py").write_text(USER_TEST)
    cassette = tmp_path / "cassettes" / "test_library" / "test_where_is_dune.yaml"

    missing = run_pytest(tmp_path)
    assert missing.returncode == 1 and "no cassette at cassettes/test_library/test_where_is_dune.yaml" in (
        missing.stdout
    )

    recording = run_pytest(tmp_path, "--record-mode=rewrite")
    assert recording.returncode == 0, recording.stdout + recording.stderr
    recorded = cassette.read_text()
    assert "recorded_on: simulator" in recorded and "test: test_library.py::test_where_is_dune" in recorded
    assert "B-12" in recorded  # the tool's result, in the second request

    replaying = run_pytest(tmp_path, "-p", "no:recording")  # offline, and pytest-recording not needed
    assert replaying.returncode == 0, replaying.stdout + replaying.stderr
    assert "2 passed" in replaying.stdout
    assert cassette.read_text() == recorded

    cassette.write_text(recorded.replace("You are a librarian.", "You are a clerk."))
    changed = run_pytest(tmp_path)  # what the agent sends no longer matches: a miss, with the diff
    assert changed.returncode == 1 and "CassetteMiss" in changed.stdout
