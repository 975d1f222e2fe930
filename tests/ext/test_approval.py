"""The approval gate: who may say yes, what a no looks like, and "never twice"."""

from __future__ import annotations

import asyncio
import io
import threading
from typing import Any

import pytest

from agent import Agent, AgentError, ToolCall, tool
from agent.ext.approval import Approval, Approver, TerminalApprover, deny_by_default
from agent.ext.sessions import Session, resume
from agent.testing import ScriptedLLM, reply, tool_use, validate_request

refunds: list[str] = []
lookups: list[str] = []
tickets: list[str] = []


@tool(irreversible=True)
def request_refund(order_id: str, reason: str) -> dict[str, str]:
    """Refund an order. Money leaves the company: irreversible.

    Args:
        order_id: the order to refund.
        reason: why.
    """
    refunds.append(order_id)
    return {"refund_id": f"R-{order_id}", "status": "refunded"}


@tool(requires_approval=True)
def open_ticket(title: str) -> str:
    """Open a support ticket (reversible, but a person should agree).

    Args:
        title: the ticket title.
    """
    tickets.append(title)
    return "T-1"


@tool
def get_order(order_id: str) -> dict[str, str]:
    """Look an order up.

    Args:
        order_id: the order.
    """
    lookups.append(order_id)
    return {"order_id": order_id, "status": "delivered"}


@pytest.fixture(autouse=True)
def _clear() -> None:
    refunds.clear()
    lookups.clear()
    tickets.clear()
    paid.clear()


def refund_call(order_id: str = "A1", id: str = "r1") -> dict[str, Any]:
    return tool_use("request_refund", {"order_id": order_id, "reason": "broken"}, id=id)


def agent_with(
    script: list[Any], approver: Approver | None = None, allow: Any = (), **options: Any
) -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM(script)
    options.setdefault("artifacts_dir", None)
    approval = Approval(approver, allow=allow)
    tools = [request_refund, open_ticket, get_order]
    return Agent(llm=llm, tools=tools, extensions=[approval], **options), llm


def results_in(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """tool_use id → tool_result block (without cache markers), over the whole request."""
    found = {}
    for message in request["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                found[block["tool_use_id"]] = {k: v for k, v in block.items() if k != "cache_control"}
    return found


def test_default_denies_an_irreversible_tool_and_the_model_can_adapt() -> None:
    agent, llm = agent_with([reply(refund_call()), reply("I could not refund it; a person must approve.")])
    result = agent.run("Refund A1.")
    assert refunds == []
    denial = results_in(llm.requests[1])["r1"]
    assert denial["is_error"] is True
    assert denial["content"].startswith("denied: ")
    assert "request_refund needs a person's approval" in denial["content"]
    assert all(validate_request(r) == [] for r in llm.requests)
    assert result.stop_reason == "end_turn"


def test_without_an_approval_extension_the_core_denies_every_gated_call() -> None:
    llm = ScriptedLLM([reply(refund_call(), tool_use("open_ticket", {"title": "t"}, id="t1")), reply("ok")])
    Agent(llm=llm, tools=[request_refund, open_ticket], artifacts_dir=None).run("Refund A1.")
    assert refunds == [] and tickets == []
    for denial in results_in(llm.requests[1]).values():
        assert denial["is_error"] is True and "agent.ext.approval.Approval" in denial["content"]


@pytest.mark.parametrize("allow", ["request_refund", b"request_refund", 3])
def test_allow_must_be_a_list_of_names(allow: Any) -> None:
    with pytest.raises(TypeError, match=r"allow must be a list of tool names, e.g. allow=\["):
        Approval(allow=allow)


def test_approver_must_be_callable() -> None:
    with pytest.raises(TypeError, match="approver must be a callable"):
        Approval("yes")  # type: ignore[arg-type]


def test_the_approver_is_asked_off_the_event_loop() -> None:
    """A person may take minutes to answer: other runs on the loop must go on meanwhile."""
    asked_on: list[threading.Thread] = []

    def approve(call: ToolCall) -> bool:
        asked_on.append(threading.current_thread())
        return True

    agent, _ = agent_with([reply(refund_call()), reply("ok")], approver=approve)

    async def main() -> threading.Thread:
        await agent.arun("Refund A1.")
        return threading.current_thread()

    loop_thread = asyncio.run(main())
    assert refunds == ["A1"] and asked_on and asked_on[0] is not loop_thread


def test_approved_call_runs_once_and_the_approver_sees_name_and_arguments() -> None:
    seen: list[ToolCall] = []

    def approve(call: ToolCall) -> bool:
        seen.append(call)
        return True

    agent, llm = agent_with([reply(refund_call()), reply("Refunded.")], approver=approve)
    agent.run("Refund A1.")
    assert refunds == ["A1"]
    assert [(c.id, c.name, dict(c.input)) for c in seen] == [
        ("r1", "request_refund", {"order_id": "A1", "reason": "broken"})
    ]
    result = results_in(llm.requests[1])["r1"]
    assert "is_error" not in result and "R-A1" in result["content"]


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        ("over the limit; ask a manager", "denied: over the limit; ask a manager"),
        (False, "denied: the user declined request_refund"),
        ("   ", "denied: the user declined request_refund"),
        (None, "denied: the user declined request_refund"),  # only True approves
        (1, "denied: the user declined request_refund"),
    ],
)
def test_anything_but_true_denies_with_a_reason(verdict: Any, expected: str) -> None:
    agent, llm = agent_with([reply(refund_call()), reply("ok")], approver=lambda call: verdict)
    agent.run("Refund A1.")
    assert refunds == []
    assert results_in(llm.requests[1])["r1"] == {
        "type": "tool_result",
        "tool_use_id": "r1",
        "content": expected,
        "is_error": True,
    }


def test_an_approver_that_raises_denies() -> None:
    def broken(call: ToolCall) -> bool:
        raise RuntimeError("approval service down")

    agent, llm = agent_with([reply(refund_call()), reply("ok")], approver=broken)
    agent.run("Refund A1.")
    assert refunds == []
    content = results_in(llm.requests[1])["r1"]["content"]
    assert content == "denied: the approver failed (RuntimeError: approval service down)"


def test_allow_list_runs_without_asking() -> None:
    def never(call: ToolCall) -> bool:
        raise AssertionError("an allow-listed tool must not ask")

    agent, _ = agent_with([reply(refund_call()), reply("ok")], approver=never, allow=["request_refund"])
    agent.run("Refund A1.")
    assert refunds == ["A1"]


def test_requires_approval_is_gated_and_plain_tools_never_ask() -> None:
    asked: list[str] = []

    def approve(call: ToolCall) -> bool | str:
        asked.append(call.name)
        return "not today"

    script = [
        reply(
            tool_use("open_ticket", {"title": "broken"}, id="t1"),
            tool_use("get_order", {"order_id": "A1"}, id="g1"),
        ),
        reply("ok"),
    ]
    agent, llm = agent_with(script, approver=approve)
    agent.run("Open a ticket.")
    assert asked == ["open_ticket"]
    assert tickets == [] and lookups == ["A1"]
    results = llm.requests[1]["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in results] == ["t1", "g1"]  # call order kept around a denial
    assert results[0]["content"] == "denied: not today" and "is_error" not in results[1]


def test_invalid_arguments_are_not_put_to_the_approver() -> None:
    def never(call: ToolCall) -> bool:
        raise AssertionError("nobody approves arguments that cannot run")

    agent, llm = agent_with(
        [reply(tool_use("request_refund", {"order_id": "A1"}, id="r1")), reply("ok")], approver=never
    )
    agent.run("Refund A1.")
    content = results_in(llm.requests[1])["r1"]["content"]
    assert content.startswith("invalid input for request_refund") and "reason" in content


def test_an_identical_irreversible_call_later_in_the_run_is_refused() -> None:
    asked: list[str] = []

    def approve(call: ToolCall) -> bool:
        asked.append(call.id)
        return True

    script = [
        reply(refund_call(id="r1")),
        reply(refund_call(id="r2")),  # e.g. after a compaction made the model forget
        reply(refund_call("B2", id="r3")),  # a different order is a different action
        reply("done"),
    ]
    agent, llm = agent_with(script, approver=approve)
    agent.run("Refund A1 and B2.")
    assert refunds == ["A1", "B2"]
    assert asked == ["r1", "r3"]  # the repeat is refused before anyone is bothered
    repeat = results_in(llm.requests[2])["r2"]
    assert repeat["is_error"] is True
    assert repeat["content"].startswith("already done: request_refund") and "R-A1" in repeat["content"]


def test_a_failed_irreversible_call_may_be_retried() -> None:
    attempts: list[int] = []

    @tool(irreversible=True)
    def charge(amount: int) -> str:
        """Charge a card.

        Args:
            amount: cents.
        """
        attempts.append(amount)
        if len(attempts) == 1:
            raise ConnectionError("card network unreachable")
        return "charged"

    llm = ScriptedLLM(
        [
            reply(tool_use("charge", {"amount": 5}, id="c1")),
            reply(tool_use("charge", {"amount": 5}, id="c2")),
            reply("ok"),
        ]
    )
    agent = Agent(llm=llm, tools=[charge], extensions=[Approval(allow=["charge"])], artifacts_dir=None)
    agent.run("Charge 5.")
    assert attempts == [5, 5]
    assert results_in(llm.requests[2])["c2"]["content"] == "charged"


# -- the terminal approver -------------------------------------------------------------


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class NoTTY(io.StringIO):
    def readline(self, size: int | None = -1) -> str:
        raise AssertionError("must not wait for input without a terminal")


CALL = ToolCall("r1", "request_refund", {"order_id": "A1", "reason": "broken"})


def test_terminal_approver_denies_at_once_without_a_tty() -> None:
    out = io.StringIO()
    verdict = TerminalApprover(stdin=NoTTY(), stdout=out)(CALL)
    assert isinstance(verdict, str) and "no terminal" in verdict
    assert out.getvalue() == ""


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("y\n", True),
        ("YES\n", True),
        ("n\n", "the user declined request_refund"),
        ("\n", "the user declined request_refund"),
        ("n too expensive, check first\n", "too expensive, check first"),
        ("call the customer\n", "call the customer"),
        ("", "no answer about request_refund (end of input)"),
    ],
)
def test_terminal_approver_asks_and_reads_the_answer(answer: str, expected: bool | str) -> None:
    out = io.StringIO()
    assert TerminalApprover(stdin=FakeTTY(answer), stdout=out)(CALL) == expected
    shown = out.getvalue()
    assert "request_refund" in shown and '"order_id": "A1"' in shown and "[y/N]" in shown


def test_deny_by_default_says_how_to_allow() -> None:
    assert "allow=['request_refund']" in deny_by_default(CALL)


def test_results_keep_call_order_when_a_denied_call_sits_between_calls_that_run() -> None:
    agent, llm = agent_with(
        [
            reply(
                tool_use("get_order", {"order_id": "A1"}, id="g1"),
                refund_call(id="r1"),
                tool_use("get_order", {"order_id": "B2"}, id="g2"),
            ),
            reply("ok"),
        ]
    )
    agent.run("look and refund")
    newest = llm.requests[1]["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in newest] == ["g1", "r1", "g2"]
    assert newest[1]["content"].startswith("denied:") and refunds == []


# -- calls are matched on id + tool + input (issue 11, item 6) -----------------------------------

paid: list[str] = []


@tool(irreversible=True)
def pay(name: str) -> str:
    """Pay someone (irreversible).

    Args:
        name: who.
    """
    paid.append(name)
    return f"paid {name}"


def test_an_id_reused_for_another_call_runs_that_call_under_a_fresh_id() -> None:
    script = [
        reply(tool_use("get_order", {"order_id": "A1"}, id="x1")),
        reply(tool_use("request_refund", {"order_id": "A1", "reason": "broken"}, id="x1")),  # id reused
        reply("ok"),
    ]
    agent, llm = agent_with(script, allow=["request_refund"])
    agent.run("Refund A1.")
    assert refunds == ["A1"]  # the refund ran...
    answer = llm.requests[2]["messages"][-1]["content"][0]
    assert answer["content"] == '{"refund_id":"R-A1","status":"refunded"}'  # ...and its own result came back
    assert answer["tool_use_id"] == "x1_dup1"  # under an id no other call of the history has


def test_ids_restarted_after_a_resume_do_not_skip_a_different_payment(tmp_path: Any) -> None:
    path = tmp_path / "s.jsonl"
    first = ScriptedLLM([reply(tool_use("pay", {"name": "alice"}, id="p1"))])  # then the model is gone
    with pytest.raises(AgentError):
        Agent(llm=first, tools=[pay], extensions=[Approval(allow=["pay"])], artifacts_dir=None).run(
            "Pay alice, then bob.", extensions=[Session(path)]
        )
    paid.clear()
    restarted = ScriptedLLM([reply(tool_use("pay", {"name": "bob"}, id="p1")), reply("done")])  # ids restart
    resume(Agent(llm=restarted, tools=[pay], extensions=[Approval(allow=["pay"])], artifacts_dir=None), path)
    assert paid == ["bob"]
    assert restarted.requests[1]["messages"][-1]["content"][0]["content"] == "paid bob"


def test_an_approval_holds_for_its_own_call_only() -> None:
    asked: list[str] = []

    def approve(call: ToolCall) -> bool:
        asked.append(call.input["name"])
        return call.input["name"] == "alice"

    script = [
        reply(tool_use("pay", {"name": "alice"}, id="p1")),
        reply(tool_use("pay", {"name": "mallory"}, id="p1")),  # the same id, another payee
        reply("ok"),
    ]
    llm = ScriptedLLM(script)
    Agent(llm=llm, tools=[pay], extensions=[Approval(approve)], artifacts_dir=None).run("Pay alice.")
    assert asked == ["alice", "mallory"] and paid == ["alice"]


def test_an_irreversible_call_asked_twice_in_one_turn_runs_once() -> None:
    script = [reply(refund_call(id="r1"), refund_call(id="r2")), reply("ok")]
    agent, llm = agent_with(script, allow=["request_refund"])
    agent.run("Refund A1.")
    assert refunds == ["A1"]
    results = llm.requests[1]["messages"][-1]["content"]
    assert "is_error" not in results[0] and results[1]["content"].startswith("already done: request_refund")


# -- what the person is shown (issue 11, item 8) -------------------------------------------------


@pytest.mark.parametrize(
    ("hidden", "name"),
    [
        ("\u202e", "RIGHT-TO-LEFT OVERRIDE"),
        ("\u2067", "RIGHT-TO-LEFT ISOLATE"),
        ("\u200b", "ZERO WIDTH SPACE"),
        ("\u200d", "ZERO WIDTH JOINER"),
        ("\ufeff", "ZERO WIDTH NO-BREAK SPACE"),
        ("\x1b", "U+001B CONTROL"),  # ANSI escapes could repaint the screen
        ("\u00a0", "NO-BREAK SPACE"),
        ("\u2028", "LINE SEPARATOR"),
        ("\u3164", "HANGUL FILLER"),
        ("\U000e0041", "TAG LATIN CAPITAL LETTER A"),
        ("\u00ad", "SOFT HYPHEN"),
    ],
)
def test_terminal_approver_shows_hidden_characters(hidden: str, name: str) -> None:
    iban = f"DE89 3704 0044 {hidden}0532 0130 00"
    call = ToolCall("p1", "pay", {"iban": iban, "amount": "9,500.00"})
    out = io.StringIO()
    TerminalApprover(stdin=FakeTTY("n\n"), stdout=out)(call)
    shown = out.getvalue()
    assert hidden not in shown
    escape = f"\\u{ord(hidden):04x}" if ord(hidden) <= 0xFFFF else f"\\U{ord(hidden):08x}"
    assert escape in shown and name in shown and "WARNING" in shown


def test_terminal_approver_shows_a_plain_call_plainly() -> None:
    out = io.StringIO()
    TerminalApprover(stdin=FakeTTY("y\n"), stdout=out)(
        ToolCall("p1", "pay", {"iban": "DE89 3704 0044 0532 0130 00", "to": "Jürgen Müller"})
    )
    assert "WARNING" not in out.getvalue() and "Jürgen Müller" in out.getvalue()
