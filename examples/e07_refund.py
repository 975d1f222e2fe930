"""Idea 7, the capstone: a refund agent that puts the whole series to work.

A customer's broken earphones are somewhere in twelve orders of about thirty fields
each. The loop (e01) with parallel calls (e02); whitelists that send five fields
(`keep=[...]`, dotted paths reach into nested objects) and artifacts that keep the
rest (e03); an irreversible refund behind the approval gate (`agent/approval.py`):
at a terminal you are asked y/N first, unattended the allow list lets it through.

What to look for in the output: each tool result's `raw ~N tokens -> sent ~M tokens`
(search_orders: thousands -> a few hundred); the earphones are not among the five
orders shown, so the model reads ids and names back from the artifact with two
parallel `read_artifact(json_path=...)` calls; then get_order, then the refund.

    python -m examples.e07_refund            # offline, on the local simulator
    python -m examples.e07_refund --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.e07_refund   # live
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from agent import LLM, Agent, RunState, tool
from agent.context.artifacts import find_pointer
from agent.context.compressors.jsonish import dump_full
from agent.ext.approval import Approval, TerminalApprover
from agent.testing.policies import call, latest_results
from agent.tools import ToolOutcome
from examples._runner import Example, main
from examples._shop import CUSTOMER, ORDERS

PROMPT = (
    f"I'm customer {CUSTOMER}. The wireless earphones I ordered in July arrived broken. Please refund them."
)
SYSTEM = (
    "You are a refund assistant for an online shop. Find the order the customer means, check it, "
    "and request the refund. Tool results may be cut; read the rest with read_artifact when needed."
)
ARTIFACTS = "artifacts"
"""Where full results go (tests point this at a temporary folder)."""


@tool(keep=["order_id", "item.name", "price", "status", "ordered_at"])
def search_orders(customer_id: str) -> list[dict[str, Any]]:
    """List a customer's orders, newest first.

    Args:
        customer_id: the customer's id, e.g. u_88213.
    """
    return [o for o in ORDERS if o["customer"]["id"] == customer_id]


@tool(keep=["order_id", "customer.name", "item.name", "price", "status", "delivered_at", "refundable_until"])
def get_order(order_id: str) -> dict[str, Any]:
    """One order in full.

    Args:
        order_id: the order's id.
    """
    for order in ORDERS:
        if order["order_id"] == order_id:
            return order
    raise KeyError(f"no order {order_id}")


@tool(irreversible=True, keep=["refund_id", "order_id", "status", "amount"])
def request_refund(order_id: str, reason: str) -> dict[str, Any]:
    """Request a refund for a delivered order. Cannot be undone.

    Args:
        order_id: the order to refund.
        reason: why, in the customer's words.
    """
    order = get_order.fn(order_id)
    refund = {"refund_id": f"RF-{order_id[-4:]}", "order_id": order_id, "status": "requested"}
    return {**refund, "amount": order["price"], "reason": reason, "method": order["payment"], "days": 3}


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class RefundAgent(Agent):
    system = SYSTEM
    tools = (search_orders, get_order, request_refund)
    extensions = (Approval(allow=["request_refund"]),)  # unattended, the refund is trusted
    max_steps = 8

    def render_result(self, outcome: ToolOutcome, state: RunState) -> str:
        """The diet as usual, plus one line: what the tool returned vs what the model reads."""
        sent = super().render_result(outcome, state)
        raw = tokens(dump_full(outcome.value)[0])
        note = "cut; full result in the artifact" if find_pointer(sent) else "whole"
        print(f"  {outcome.call.name:<15} raw ~{raw:>5,} tokens -> sent ~{tokens(sent):>4,} tokens ({note})")
        return sent


def make_agent(llm: LLM) -> Agent:
    if sys.stdin.isatty():  # a person is there: ask them before any refund
        return RefundAgent(llm=llm, artifacts_dir=ARTIFACTS, extensions=[Approval(TerminalApprover())])
    return RefundAgent(llm=llm, artifacts_dir=ARTIFACTS)


def policy(body: dict[str, Any]) -> Any:
    """A scripted refund clerk: search, read back what was cut, check, refund, confirm."""
    results = latest_results(body)
    if not results:
        return ["Let me look up your orders.", call("search_orders", customer_id=CUSTOMER)]
    last = results[-1]
    if last.is_error:
        return f"Sorry, something went wrong: {last.text}"
    if last.name == "search_orders":
        found = json.loads(last.text)
        shown = [o for o in found["items"] if "earphones" in o["item"]["name"]]
        if shown:
            return ["Found it; checking the order.", call("get_order", order_id=shown[0]["order_id"])]
        name = find_pointer(last.text)
        return [
            f"Only {len(found['items'])} of {found['total']} orders are shown; reading the rest.",
            call("read_artifact", name=name, json_path="[*].order_id"),
            call("read_artifact", name=name, json_path="[*].item.name"),
        ]
    if last.name == "read_artifact":
        ids, names = (json.loads(r.text) for r in results)
        order_id = next(i for i, n in zip(ids, names, strict=True) if "earphones" in n)
        return ["That's the July earphones order; checking it.", call("get_order", order_id=order_id)]
    if last.name == "get_order":
        order = json.loads(last.text)
        return [
            f"Order {order['order_id']} was delivered and is refundable until {order['refundable_until']}.",
            call("request_refund", order_id=order["order_id"], reason="arrived broken"),
        ]
    refund = json.loads(last.text)
    return (
        f"Refund {refund['refund_id']} of {refund['amount']:,} KRW requested for order {refund['order_id']}."
    )


EXAMPLE = Example(name="e07_refund", prompt=PROMPT, make_agent=make_agent, policy=policy)

if __name__ == "__main__":
    raise SystemExit(main(EXAMPLE))
