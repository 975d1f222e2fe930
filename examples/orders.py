"""The refund agent: thirty fields per order, five of them worth sending.

A customer's broken earphones are somewhere in their twelve orders. The order API,
like real ones, returns about thirty fields per order; deciding a refund needs five.
Each tool says which with `keep=[...]` (dotted paths reach into nested objects), so
the model reads a few hundred tokens instead of thousands, on this step and on
every later step that resends the history:

    search_orders   keep order_id, item.name, price, status, ordered_at; top 5 of 12 + total
    get_order       keep the fields a refund decision needs
    request_refund  irreversible=True: its result is never pruned

What was cut is not lost: the full result is stored as an artifact, and the cut
note says `artifact:<name>`. The earphones order is not among the five shown, so the
(scripted) model reads the order ids and item names back with two parallel
`read_artifact(json_path=...)` calls, then gets the order and requests the refund.
Each tool result prints its raw and its sent size (tokens estimated as chars / 4).

    python -m examples.orders            # offline, on the local simulator
    ANTHROPIC_API_KEY=... python -m examples.orders   # live

`request_refund` is irreversible, so it goes through the approval gate
(`agent/approval.py`): run at a terminal, the refund and its arguments are put to you
first (y/N); unattended (tests, CI, a pipe) the allow list lets it through, so the
run completes. Answer n and the model reads "denied: ..." and tells the customer.
"""

from __future__ import annotations

import json
import math
import random
import sys
from typing import Any

from agent import LLM, Agent, RunState, tool
from agent.approval import TerminalApprover
from agent.context.artifacts import find_pointer
from agent.context.compressors.jsonish import dump_full
from agent.registry import ToolOutcome
from agent.testing.policies import call, latest_results
from examples._runner import Example, main

CUSTOMER = "u_88213"
PROMPT = (
    f"I'm customer {CUSTOMER}. The wireless earphones I ordered in July arrived broken. Please refund them."
)
SYSTEM = (
    "You are a refund assistant for an online shop. Find the order the customer means, check it, "
    "and request the refund. Tool results may be cut; read the rest with read_artifact when needed."
)
ARTIFACTS = "artifacts"
"""Where full results go (tests point this at a temporary folder)."""

_ITEMS = [
    ("KB-120", "mechanical keyboard", 129_000),
    ("MS-220", "wireless mouse", 39_000),
    ("HUB-7", "USB-C hub", 45_000),
    ("CBL-1", "braided USB-C cable", 12_000),
    ("EAR-9921", "wireless earphones", 89_000),
]


def _order(n: int) -> dict[str, Any]:
    rng = random.Random(n)
    sku, name, price = _ITEMS[4] if n == 7 else _ITEMS[n % 4]
    month, day = (7, 12) if n == 7 else (8 if n < 7 else 6, 28 - 2 * n % 27)
    ordered = f"2026-{month:02d}-{day:02d}"
    return {
        "order_id": f"{ordered.replace('-', '')}-{n:04d}",
        "status": "delivered" if n > 1 else "shipped",
        "ordered_at": f"{ordered}T13:58:12+09:00",
        "delivered_at": f"{ordered[:8]}{day + 2:02d}T18:20:00+09:00" if n > 1 else None,
        "refundable_until": f"2026-{month + 1:02d}-{day:02d}",
        "item": {"sku": sku, "name": name, "option": "black", "category_path": ["electronics", "audio"]},
        "price": price,
        "qty": 1,
        "currency": "KRW",
        "customer": {"id": CUSTOMER, "name": "Lee Sujin", "grade": "GOLD", "joined_at": "2024-03-11"},
        "payment": {
            "method": "CARD",
            "issuer": "Shinhan",
            "installment": 0,
            "approved": f"{ordered}T13:58:40",
        },
        "shipping": {"carrier": "CJ", "tracking_no": f"6{rng.randrange(10**11):011d}", "zip": "18450"},
        "shipping_history": [
            {"at": f"{ordered}T21:00:00", "code": "PICKED", "hub": "Dongtan1"},
            {"at": f"{ordered[:8]}{day + 1:02d}T07:40:00", "code": "IN_TRANSIT", "hub": "Okcheon"},
        ],
        "coupon": None,
        "points_used": rng.randrange(0, 3000, 100),
        "points_earned": price // 100,
        "gift_wrap": False,
        "gift_message": "",
        "channel": rng.choice(["app", "web"]),
        "warehouse": "ICN-2",
        "seller": {"id": "s_100", "name": "Gadget Corner"},
        "return_window_days": 30,
        "invoice_no": f"INV-{rng.randrange(10**8):08d}",
        "tax": price // 11,
        "memo": "Leave it at the door, please.",
        "device": "iOS 19",
        "utm_source": "newsletter",
        "risk_score": round(rng.random(), 3),
        "created_at": f"{ordered}T13:58:12+09:00",
        "updated_at": f"{ordered[:8]}{day + 2:02d}T18:20:00+09:00",
    }


ORDERS = [_order(n) for n in range(12)]


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
    return {
        "refund_id": f"RF-{order_id[-4:]}",
        "order_id": order_id,
        "status": "requested",
        "amount": order["price"],
        "reason": reason,
        "method": order["payment"],
        "expected_days": 3,
        "ledger": [
            {"account": "sales", "debit": order["price"]},
            {"account": "cash", "credit": order["price"]},
        ][:2],
    }


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class RefundAgent(Agent):
    system = SYSTEM
    tools = (search_orders, get_order, request_refund)
    allow = ("request_refund",)
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
        return RefundAgent(llm=llm, artifacts_dir=ARTIFACTS, allow=(), approver=TerminalApprover())
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


EXAMPLE = Example(name="orders", prompt=PROMPT, make_agent=make_agent, policy=policy)

if __name__ == "__main__":
    raise SystemExit(main(EXAMPLE))
