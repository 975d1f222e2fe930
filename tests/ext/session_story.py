"""A small refund story and the helpers the adversarial session tests share.

`story_agent()` runs a look-up, an irreversible refund and two parallel look-ups, then
answers; the scripted model decides from the history's length, so a resumed run goes
on where the history says it is. `refused(path)` is the property every damaged file
must have: reading and resuming both raise `SessionError`, and the file stays as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.ext.approval import Approval
from agent.ext.sessions import Session, SessionError, read_session, resume
from agent.ext.sessions.session_format import with_checksum
from agent.testing import ScriptedLLM, reply, tool_use

refunds: list[str] = []
"""Every refund that happened, in order (the side effect the tests count)."""
lookups: list[str] = []
"""Every look-up that ran, in order."""


@tool(irreversible=True)
def request_refund(order_id: str) -> str:
    """Refund an order (irreversible).

    Args:
        order_id: the order.
    """
    refunds.append(order_id)
    return f"refund R-{order_id} issued"


@tool
def get_order(order_id: str) -> dict[str, str]:
    """Look an order up.

    Args:
        order_id: the order.
    """
    lookups.append(order_id)
    return {"order_id": order_id, "status": "delivered"}


STORY = (
    reply(tool_use("get_order", {"order_id": "A1"}, id="g1")),
    reply("Refunding.", tool_use("request_refund", {"order_id": "A1"}, id="r1")),
    reply(
        tool_use("get_order", {"order_id": "A1"}, id="g2"), tool_use("get_order", {"order_id": "B2"}, id="g3")
    ),
    reply("Done: A1 is refunded."),
)


def policy(request: dict[str, Any]) -> dict[str, Any]:
    return STORY[sum(m["role"] == "assistant" for m in request["messages"])]


def story_agent(
    tools: list[Any] | None = None, allow: Any = ("request_refund",), approver: Any = None, **options: Any
) -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM([policy] * 10)
    tools = [request_refund, get_order] if tools is None else tools
    approval = Approval(approver, allow=allow)
    return Agent(llm=llm, tools=tools, artifacts_dir=None, extensions=[approval], **options), llm


def finished_story(tmp_path: Path) -> Path:
    """A finished session of the story (the refund done once)."""
    path = tmp_path / "full.jsonl"
    story_agent()[0].run("Refund A1.", extensions=[Session(path)])
    refunds.clear()
    return path


def kinds_of(path: Path) -> list[str]:
    return [json.loads(line)["event"] for line in lines_of(path)]


def signed(record: dict[str, Any]) -> bytes:
    """`record` as a line the writer would have written (its checksum included): an edit a
    buggy writer could make, so the tests reach the checks behind the checksum."""
    body = json.dumps({k: v for k, v in record.items() if k != "ck"}, separators=(",", ":"))
    return with_checksum(body.encode()) + b"\n"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def refused(path: Path, match: str | None = None) -> SessionError:
    """Reading and resuming both refuse `path` with a SessionError, and leave it as it was."""
    before = path.read_bytes()
    with pytest.raises(SessionError, match=match) as error:
        read_session(path)
    with pytest.raises(SessionError, match=match):
        resume(story_agent()[0], path)
    assert path.read_bytes() == before and refunds == []
    return error.value
