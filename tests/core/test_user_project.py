"""A user project with its own `tools` module: the core must not import the top-level `tools`
package, or `Agent()` fails there (`No module named 'tools.read_artifact'`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MAIN = """
from tools import lookup
from agent import Agent
from agent.testing import ScriptedLLM, reply, tool_use

llm = ScriptedLLM([reply(tool_use("lookup", {"key": "pi"})), reply("pi is 3.14")])
agent = Agent(tools=[lookup], llm=llm, artifacts_dir="artifacts")
result = agent.run("What is pi?")
names = [t["name"] for t in llm.requests[0]["tools"]]
print(result.text, "|", ",".join(names), "|", llm.requests[1]["messages"][-1]["content"][0]["content"])
"""

TOOLS = '''
from agent import tool

@tool
def lookup(key: str) -> str:
    """Look a constant up by name.

    Args:
        key: The constant's name.
    """
    return {"pi": "3.14159"}[key]
'''


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["module", "package"])
def test_a_project_with_its_own_tools_runs_an_agent(tmp_path: Path, layout: str) -> None:
    if layout == "module":
        (tmp_path / "tools.py").write_text(TOOLS)
    else:
        (tmp_path / "tools").mkdir()
        (tmp_path / "tools" / "__init__.py").write_text(TOOLS)
    (tmp_path / "main.py").write_text(MAIN)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "main.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pi is 3.14 | lookup,read_artifact | 3.14159"
