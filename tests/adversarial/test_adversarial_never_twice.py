"""Never twice, by meaning: the attacks of issue 27 on the irreversible-call guarantees.

A model that respells a call (`42`, `42.0`, `"42"`, the default filled in) must not get a
second refund, and a session file damaged by a single flipped bit must be refused, never
resumed into a repeat.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.ext.approval import Approval
from agent.ext.sessions import Session, SessionError, read_session, resume
from agent.testing import ScriptedLLM, reply, tool_use

paid: list[tuple[int, str]] = []


@tool(irreversible=True)
def refund(order_id: int, note: str = "") -> str:
    """Refund an order (money leaves: irreversible).

    Args:
        order_id: the order.
        note: a note for the ledger.
    """
    paid.append((order_id, note))
    return f"refunded order {order_id}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    paid.clear()


def test_one_refund_respelled_four_ways_is_paid_once() -> None:
    spellings: list[dict[str, Any]] = [
        {"order_id": 42},
        {"order_id": 42.0},
        {"order_id": "42"},
        {"order_id": 42, "note": ""},
    ]
    script = [reply(tool_use("refund", args, id=f"toolu_r{i}")) for i, args in enumerate(spellings)]
    agent = Agent(
        llm=ScriptedLLM([*script, reply("done")]),
        tools=[refund],
        artifacts_dir=None,
        extensions=[Approval(allow=["refund"])],
    )
    result = agent.run("Refund order 42.")
    assert paid == [(42, "")]
    refusals = [
        b["content"]
        for m in result.messages
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "tool_result" and b.get("is_error")
    ]
    assert len(refusals) == 3


def test_a_different_order_is_a_different_refund() -> None:
    script = [
        reply(tool_use("refund", {"order_id": 42}, id="toolu_a")),
        reply(tool_use("refund", {"order_id": "43"}, id="toolu_b")),
    ]
    agent = Agent(
        llm=ScriptedLLM([*script, reply("done")]),
        tools=[refund],
        artifacts_dir=None,
        extensions=[Approval(allow=["refund"])],
    )
    agent.run("Refund orders 42 and 43.")
    assert paid == [(42, ""), (43, "")]


def _interrupted_session(path: Path) -> tuple[Agent, bytes]:
    """A session whose run died after the refund's `started` record (the refund ran)."""

    def policy(request: dict[str, Any]) -> Any:
        if sum(m["role"] == "assistant" for m in request["messages"]) == 0:
            return reply(tool_use("refund", {"order_id": 1}, id="toolu_pay"))
        return reply("done")

    def agent() -> Agent:
        return Agent(
            llm=ScriptedLLM([policy] * 5),
            tools=[refund],
            artifacts_dir=None,
            extensions=[Approval(allow=["refund"])],
        )

    agent().run("Pay invoice 1.", extensions=[Session(path)])
    lines = path.read_bytes().splitlines(keepends=True)
    kinds = [line.split(b'"event":"', 1)[1].split(b'"', 1)[0] for line in lines]
    cut = b"".join(lines[: kinds.index(b"started") + 1])  # died inside the call
    return agent(), cut


def test_every_single_bit_flip_of_a_session_is_refused_or_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _, data = _interrupted_session(path)
    path.write_bytes(data)
    original = read_session(path)
    rng = random.Random(27)
    accepted_different = 0
    positions = [rng.randrange(len(data)) for _ in range(199)] + [len(data) - 1]  # the last newline too
    for at in positions:
        flipped = bytearray(data)
        flipped[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(flipped))
        try:
            replay = read_session(path)
        except SessionError:
            continue
        same = replay.messages == original.messages and replay.ledger.started == original.ledger.started
        accepted_different += not same
    assert accepted_different == 0


def test_a_flipped_bit_in_the_started_record_never_pays_twice(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    agent, data = _interrupted_session(path)
    paid.clear()
    started = data.rindex(b'"event":"started"')
    flipped = bytearray(data)
    flipped[started + data[started:].index(b"toolu_pay") + 6] ^= 0x01  # the call id, one bit
    path.write_bytes(bytes(flipped))
    with pytest.raises(SessionError, match="damaged"):
        resume(agent, path)
    assert paid == []
    path.write_bytes(data)  # the undamaged file resumes, and the refund is not paid again
    resume(agent, path)
    assert paid == []
