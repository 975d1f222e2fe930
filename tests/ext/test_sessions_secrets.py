"""What a session keeps of secrets and of odd values, and that a resume replays it exactly.

The policy (`agent.ext.sessions.session_format`): what a resume sends back or runs is written verbatim
(the file is 0600), the configured API key is masked and put back on reading, free text
is redacted, and calls are identified by a keyed fingerprint that holds no secret.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, ToolCall, ToolOutcome, tool
from agent.ext.approval import Approval
from agent.ext.sessions import Session, read_session, resume
from agent.ext.sessions.session import SessionLog
from agent.testing import ScriptedLLM, reply, tool_use


def by_turn(*answers: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Answers from the history's length, so a resumed run picks up where it was."""
    return lambda request: answers[sum(m["role"] == "assistant" for m in request["messages"])]


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def cut_after(path: Path, keep: int) -> None:
    """Simulate a crash: keep only the first `keep` records."""
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:keep]))


def test_the_api_key_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The configured key is masked everywhere (and put back on reading); another key-shaped
    string is kept only where a resume needs it byte for byte, in a file only its owner reads."""
    secret = "sk-ant-api03-" + "Zq9" * 20
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    other = "sk-ant-admin01-" + "Xy7" * 12

    @tool
    def leaky() -> str:
        """Returns what it should not."""
        return f"env: {os.environ['ANTHROPIC_API_KEY']} and {other}"

    llm = ScriptedLLM([reply(tool_use("leaky", id="l1")), reply(f"The key is {secret} and {other}")])
    path = tmp_path / "s.jsonl"
    prompt = f"Here is my key {secret}, keep it safe."
    result = Agent(llm=llm, tools=[leaky]).run(prompt, extensions=[Session(path)])
    written = path.read_text()
    assert secret not in written and secret[:20] not in written and "Zq9Zq9" not in written
    assert "[redacted ANTHROPIC_API_KEY " in written
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    recorded = events(path)
    end = recorded[-1]
    assert end["event"] == "end" and other not in end["text"] and "[redacted]" in end["text"]
    assert read_session(path).messages == result.messages  # exact again, key included


def test_a_key_of_any_shape_from_the_environment_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "proxy-token-" + "Kw4" * 10  # not shaped like an Anthropic key
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    llm = ScriptedLLM([reply(f"echo {secret}")])
    path = tmp_path / "s.jsonl"
    Agent(llm=llm, artifacts_dir=None).run(f"my token is {secret}", extensions=[Session(path)])
    written = path.read_text()
    assert secret not in written and "[redacted]" in written


# -- secrets and replay (issue 11, item 2) -------------------------------------------------------

LEAKED = "sk-ant-api03-" + "Rv7" * 20
revoked: list[str] = []


@tool(irreversible=True)
def revoke_key(key: str) -> str:
    """Revoke an API key (irreversible).

    Args:
        key: the key.
    """
    revoked.append(key)
    return f"revoked {key[:12]}..."


def revoke_agent(**options: Any) -> tuple[Agent, ScriptedLLM]:
    story = (
        reply(tool_use("revoke_key", {"key": LEAKED}, id="k1")),
        reply(tool_use("revoke_key", {"key": LEAKED}, id="k2")),  # forgot it was done
        reply("Revoked."),
    )
    llm = ScriptedLLM([by_turn(*story)] * 5)
    trusted = [Approval(allow=["revoke_key"])]
    return Agent(llm=llm, tools=[revoke_key], extensions=trusted, artifacts_dir=None, **options), llm


def test_a_key_in_an_irreversible_calls_input_never_makes_it_run_twice(tmp_path: Path) -> None:
    full = tmp_path / "full.jsonl"
    revoke_agent()[0].run("Revoke the leaked key.", extensions=[Session(full)])
    kinds = [e["event"] for e in events(full)]
    for cut in (kinds.index("turn") + 1, kinds.index("calls") + 1):  # after the call's turn; after its calls
        path = tmp_path / f"cut{cut}.jsonl"
        path.write_bytes(full.read_bytes())
        cut_after(path, cut)
        revoked.clear()
        agent, llm = revoke_agent()
        resume(agent, path)
        ran_before = "started" in kinds[:cut]
        assert revoked == ([] if ran_before else [LEAKED]), cut  # exactly the key, and only once
        last = llm.requests[-1]["messages"][-1]["content"][0]
        assert last["content"].startswith("already done: revoke_key"), cut


def test_a_resume_sends_the_recorded_history_back_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "Cf5" * 20)
    prompt = f"Revoke {LEAKED}; my own key is {os.environ['ANTHROPIC_API_KEY']}."
    full = tmp_path / "full.jsonl"
    _, first = revoke_agent()
    trusted = [Approval(allow=["revoke_key"])]
    agent = Agent(llm=first, tools=[revoke_key], extensions=trusted, artifacts_dir=None)
    agent.run(prompt, extensions=[Session(full)])
    kinds = [e["event"] for e in events(full)]
    cut_after(full, len(kinds) - 1 - kinds[::-1].index("turn") - 3)  # into the last tool turn
    agent, again = revoke_agent()
    resume(agent, full)
    sent = json.dumps(again.requests[0]["messages"], sort_keys=True)
    original = json.dumps(
        first.requests[len(first.requests) - len(again.requests)]["messages"], sort_keys=True
    )
    assert sent == original


# -- any value a tool returns (issue 11, item 4) -------------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    __repr__ = __str__


def _cyclic() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


def _deep() -> dict[str, Any]:
    top: dict[str, Any] = {}
    node = top
    for _ in range(10_000):
        node["a"] = {}
        node = node["a"]
    return top


@pytest.mark.parametrize(
    "make",
    [
        lambda: {(1, 2): "a"},
        lambda: 10**5000,
        _cyclic,
        _deep,
        Unprintable,
        lambda: "lone \ud800 surrogate",
        lambda: {"k\udc80": ["\udfff"]},
        lambda: {1: "int key", None: "none key"},
        lambda: float("nan"),
        lambda: b"\xff\xfe raw bytes",
    ],
    ids=[
        "tuple-key",
        "huge-int",
        "cycle",
        "deep",
        "bad-str",
        "surrogate",
        "surrogate-key",
        "odd-keys",
        "nan",
        "bytes",
    ],
)
def test_any_tool_value_is_recorded_and_the_run_goes_on(tmp_path: Path, make: Callable[[], Any]) -> None:
    path = tmp_path / "s.jsonl"
    session = SessionLog.create(path, run_id="r", model="m", messages=[{"role": "user", "content": "go"}])
    call = ToolCall("o1", "odd", {})
    session.record_calls([call])
    session.record_result(
        ToolOutcome(call, make())
    )  # the registry renders values; a session never relies on it
    session.close()
    recorded = [e for e in events(path) if e["event"] == "result"]
    assert len(recorded) == 1 and isinstance(recorded[0]["content"], str)
    assert read_session(path).pending == [call]

    @tool
    def odd() -> Any:
        """Returns something odd."""
        return make()

    path = tmp_path / "run.jsonl"
    llm = ScriptedLLM([reply(tool_use("odd", id="o1")), reply("seen")])
    result = Agent(llm=llm, tools=[odd], artifacts_dir=None).run("call odd", extensions=[Session(path)])
    assert result.text == "seen" and read_session(path).messages == result.messages
