"""Results are keyed by the call, not by the id alone (issue 27): a model that reuses a
tool_use id, or sends one the API would refuse, must never make a stub, an artifact or
a summary speak of the wrong call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, tool
from agent.context.read_artifact import make_read_artifact
from agent.ext.approval import Approval
from agent.messages import blocks, content_text
from agent.testing import ScriptedLLM, reply, tool_use, validate_request

refunds: list[int] = []


@tool(irreversible=True)
def refund(order_id: int) -> str:
    """Refund an order (irreversible).

    Args:
        order_id: the order.
    """
    refunds.append(order_id)
    return f"refund for order {order_id} issued"


@tool
def lookup(page: int) -> str:
    """One page of the order book.

    Args:
        page: which page, from 1.
    """
    return f"PAGE {page}\n" + "\n".join(
        f"page {page} row {i}: order {page * 1000 + i} delivered" for i in range(80)
    )


def pairs(messages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(tool_use, its tool_result) for every client call of a history."""
    calls = {
        b["id"]: b for m in messages if m["role"] == "assistant" for b in blocks(m) if b["type"] == "tool_use"
    }
    results = [
        b for m in messages if m["role"] == "user" for b in blocks(m) if b.get("type") == "tool_result"
    ]
    return [(calls[r["tool_use_id"]], r) for r in results]


def test_an_id_reused_by_later_lookups_never_turns_the_refund_into_a_lookup(tmp_path: Path) -> None:
    refunds.clear()
    script = [reply(tool_use("refund", {"order_id": 42}, id="toolu_same"))]
    script += [reply(tool_use("lookup", {"page": p}, id="toolu_same")) for p in range(1, 7)]
    llm = ScriptedLLM([*script, reply("done")])
    agent = Agent(
        llm=llm,
        tools=[refund, lookup],
        artifacts_dir=tmp_path,
        keep_recent=1,
        prune_batch=1,
        extensions=[Approval(allow=["refund"])],
    )
    result = agent.run("Refund order 42, then read the order book.")
    assert refunds == [42]
    for request in llm.requests:
        assert validate_request(request) == []
    last = llm.requests[-1]["messages"]
    ids = [call["id"] for call, _ in pairs(last)]
    pointed = 0
    assert len(ids) == len(set(ids)) == 7
    for call, result_block in pairs(last):
        text = content_text(result_block["content"])
        if call["name"] == "refund":
            assert text == "refund for order 42 issued"  # irreversible: never pruned, never another's
            continue
        page = call["input"]["page"]
        if text.startswith("[pruned"):
            pointer = re.search(r"artifact:(\S+?\.txt)", text)
            assert pointer is not None  # the stub points at its own call's page
            stored = make_read_artifact(tmp_path).fn(name=pointer.group(1), start_line=1, end_line=1)
            assert stored.endswith(f"L1 PAGE {page}")
            pointed += 1
        else:
            assert f"PAGE {page}" in text
    assert pointed >= 3 and result.text == "done"


@pytest.mark.parametrize("bad", ["", "a b", "../x", "é", "x" * 300 + " "])
def test_an_id_the_api_would_refuse_is_rewritten_before_it_is_sent(bad: str) -> None:
    llm = ScriptedLLM([reply(tool_use("lookup", {"page": 1}, id=bad)), reply("done")])
    Agent(llm=llm, tools=[lookup], artifacts_dir=None).run("Read page 1.")
    second = llm.requests[1]
    assert validate_request(second) == []
    ((call, answer),) = pairs(second["messages"])
    assert call["id"] == answer["tool_use_id"] and re.fullmatch(r"[a-zA-Z0-9_-]+", call["id"])


def test_ids_repeated_and_already_suffixed_in_one_turn_stay_distinct() -> None:
    calls = [tool_use("lookup", {"page": p}, id=i) for p, i in ((1, "X"), (2, "X"), (3, "X_dup1"))]
    llm = ScriptedLLM([reply(*calls), reply("done")])
    Agent(llm=llm, tools=[lookup], artifacts_dir=None).run("Read three pages.")
    second = llm.requests[1]
    assert validate_request(second) == []
    found = [
        (call["input"]["page"], content_text(answer["content"]).split("\n", 1)[0])
        for call, answer in pairs(second["messages"])
    ]
    assert found == [(1, "PAGE 1"), (2, "PAGE 2"), (3, "PAGE 3")]
    assert json.dumps(second).count('"tool_use_id"') == 3
