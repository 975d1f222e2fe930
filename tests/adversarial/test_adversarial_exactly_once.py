"""Exactly once where the tool allows it (issue 27). A tool that takes an `idempotency_key`
(hidden from the model; the run's id and the call's) is run again after a crash left its
outcome unknown, and its backend acts once per key; a tool that takes none stays at most
once, and the run's result names the call whose outcome is unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent import Agent, tool
from agent.ext.approval import Approval
from agent.ext.sessions import Session, resume
from agent.testing import ScriptedLLM, reply, tool_use

BACKEND: dict[str, str] = {}
"""A payment service that takes an Idempotency-Key: one charge per key, whatever the retries."""
CHARGES: list[str] = []


@tool(irreversible=True)
def charge(invoice: str, idempotency_key: str) -> str:
    """Charge an invoice.

    Args:
        invoice: the invoice id.
    """
    if idempotency_key not in BACKEND:
        CHARGES.append(invoice)
        BACKEND[idempotency_key] = f"charged {invoice} (receipt R-{len(CHARGES)})"
    return BACKEND[idempotency_key]


@tool(irreversible=True)
def wire(invoice: str) -> str:
    """Wire money for an invoice (no idempotency key: at most once).

    Args:
        invoice: the invoice id.
    """
    CHARGES.append(invoice)
    return f"wired {invoice}"


def agent_for(name: str) -> Agent:
    def policy(request: dict[str, Any]) -> Any:
        if sum(m["role"] == "assistant" for m in request["messages"]) == 0:
            return reply(tool_use(name, {"invoice": "INV-1"}, id="toolu_pay"))
        return reply("Paid.")

    return Agent(
        llm=ScriptedLLM([policy] * 5),
        tools=[charge, wire],
        artifacts_dir=None,
        extensions=[Approval(allow=[name])],
    )


def died_inside_the_call(path: Path, name: str) -> None:
    """A session of `name` cut where the worker died: after `started`, before the result."""
    agent_for(name).run("Pay invoice INV-1.", extensions=[Session(path)])
    lines = path.read_bytes().splitlines(keepends=True)
    started = next(i for i, line in enumerate(lines) if b'"event":"started"' in line)
    path.write_bytes(b"".join(lines[: started + 1]))


def test_the_key_is_the_framework_s_never_the_model_s() -> None:
    declared = agent_for("charge").registry.get("charge")
    assert declared is not None and declared.idempotent
    assert "idempotency_key" not in declared.declaration()["input_schema"]["properties"]


def test_an_idempotent_call_cut_off_by_a_crash_is_run_again_with_its_key_and_charged_once(
    tmp_path: Path,
) -> None:
    BACKEND.clear()
    CHARGES.clear()
    path = tmp_path / "s.jsonl"
    died_inside_the_call(path, "charge")
    assert CHARGES == ["INV-1"]  # the first life charged, then died before its result was kept
    agent = agent_for("charge")
    result = resume(agent, path)
    assert CHARGES == ["INV-1"]  # run again with the same key: the backend charged once
    assert result.uncertain == () and result.detail is None and result.text == "Paid."
    answer = agent.llm.requests[-1]["messages"][-1]["content"][0]  # type: ignore[union-attr]
    assert answer["content"] == "charged INV-1 (receipt R-1)" and not answer.get("is_error")


def test_a_call_without_a_key_stays_at_most_once_and_the_result_says_so(tmp_path: Path) -> None:
    CHARGES.clear()
    path = tmp_path / "s.jsonl"
    died_inside_the_call(path, "wire")
    result = resume(agent_for("wire"), path)
    assert CHARGES == ["INV-1"]  # not wired twice
    assert result.uncertain == ("wire (toolu_pay)",)
    assert result.detail is not None and "outcome unknown" in result.detail
