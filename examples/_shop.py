"""The shops behind e03 (pages of order rows) and e07 (twelve orders of about thirty fields each,
as order APIs return them, and the three tools e07's agent calls)."""

from __future__ import annotations

import random
from typing import Any

from agent import tool

CUSTOMER = "u_88213"

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


@tool
def search_orders(customer_id: str) -> list[dict[str, Any]]:
    """List a customer's orders, newest first.

    Args:
        customer_id: the customer's id, e.g. u_88213.
    """
    return [o for o in ORDERS if o["customer"]["id"] == customer_id]


@tool
def get_order(order_id: str) -> dict[str, Any]:
    """One order in full.

    Args:
        order_id: the order's id.
    """
    for order in ORDERS:
        if order["order_id"] == order_id:
            return order
    raise KeyError(f"no order {order_id}")


@tool(irreversible=True)  # approval: y/N at a terminal, else the allow list
def request_refund(order_id: str, reason: str) -> dict[str, Any]:
    """Request a refund for a delivered order. Cannot be undone.

    Args:
        order_id: the order to refund.
        reason: why, in the customer's words.
    """
    order = get_order.fn(order_id)
    refund = {"refund_id": f"RF-{order_id[-4:]}", "order_id": order_id, "status": "requested"}
    return {**refund, "amount": order["price"], "reason": reason, "method": order["payment"], "days": 3}


def order_page(page: int, rows: int) -> list[dict[str, Any]]:
    """Page `page` of e03's order history: `rows` orders of nested JSON; pages 3, 13, 23 and 33
    each hold one broken order (the eighth row)."""
    return [
        {
            "order_id": f"{page:02d}-{i:03d}",
            "item": f"item {i} of page {page}",
            "price": 1000 * (i + page),
            "status": "broken" if page % 10 == 3 and i == 7 else "delivered",
            "shipping": {"carrier": "CJ", "hub": "Dongtan-1", "events": ["PICKED", "MOVING", "DELIVERED"]},
        }
        for i in range(rows)
    ]
