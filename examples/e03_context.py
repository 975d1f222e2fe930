"""Idea 3, context: a long task whose prompt stops growing.

Builds on e02. The agent audits 40 pages (24 orders of nested JSON each) of a
customer's order history, one per step, and refunds the broken orders (an allow-listed
irreversible tool). The prompt would grow by a page every step; four mechanisms keep it level:

* **whitelist**: `@tool(keep=[...])` sends three fields per order, not eight;
* **artifacts**: what was cut is stored whole, and the `_cut` note names the file
  (`read_artifact` can read it back; e07 does);
* **keep-recent pruning**: a page becomes a one-line stub once `keep_recent=3` newer
  ones exist, in batches of `prune_batch=2` (so the cached prefix moves every other
  step, not every step); the stub names the artifact too;
* **pair-safe compaction**: near `max_context_tokens` the head is folded into a
  summary by a tool-less call, cut where no `tool_use` loses its `tool_result`; the
  request and every refund receipt are copied into it verbatim.

What to look for in the output: `pruned 2 result(s): fetch_orders(page=1), ...` with
the history's tokens before -> after; `[step N summary call]`, then `compacted:`
with the messages folded and the summary itself; and the `prompt=` column, which
climbs, drops, and never passes the budget.

    python -m examples.e03_context            # offline, on the local simulator
    python -m examples.e03_context --replay   # replay the recorded cassette
"""

from __future__ import annotations

import json
import re
from typing import Any

from agent import LLM, Agent, tool
from agent.ext.approval import Approval
from agent.testing.policies import call, latest_results
from examples._runner import Example, main

PAGES = 40
MAX_CONTEXT_TOKENS = 4_000
PROMPT = (
    f"Audit all {PAGES} pages of customer u_88213's order history. Refund every order whose "
    "status is 'broken' (once per order), then say how many you refunded."
)
PAGE_ROWS = 24
ARTIFACTS = "artifacts"
"""Where full results go (tests point this at a temporary folder)."""
SYSTEM = "You audit order histories and issue refunds. Be exact with order ids and amounts."


@tool(keep=["order_id", "price", "status"])  # the whitelist: item and shipping stay in the artifact
def fetch_orders(page: int) -> list[dict[str, Any]]:
    """One page of the customer's order history, as JSON rows.

    Args:
        page: page number, from 1.
    """
    return [
        {
            "order_id": f"{page:02d}-{i:03d}",
            "item": f"item {i} of page {page}",
            "price": 1000 * (i + page),
            "status": "broken" if page % 10 == 3 and i == 7 else "delivered",
            "shipping": {"carrier": "CJ", "hub": "Dongtan-1", "events": ["PICKED", "MOVING", "DELIVERED"]},
        }
        for i in range(PAGE_ROWS)
    ]


@tool(irreversible=True)
def issue_refund(order_id: str, amount: int) -> dict[str, Any]:
    """Refund one order. Irreversible: never refund the same order twice.

    Args:
        order_id: the order to refund.
        amount: the amount in won.
    """
    return {"refund_id": f"R-{order_id}", "order_id": order_id, "amount": amount, "status": "accepted"}


def make_agent(llm: LLM) -> Agent:
    return Agent(
        llm=llm,
        system=SYSTEM,
        tools=[fetch_orders, issue_refund],
        extensions=[Approval(allow=["issue_refund"])],
        max_steps=PAGES + 10,
        max_context_tokens=MAX_CONTEXT_TOKENS,
        keep_recent=3,
        prune_batch=2,
        list_top_n=PAGE_ROWS,  # every row of a page is sent (three fields each)
        artifacts_dir=ARTIFACTS,
    )


def policy(body: dict[str, Any]) -> Any:
    """The scripted auditor: decides from the newest results alone, so compaction cannot confuse it."""
    results = latest_results(body)
    if not results:
        return ["I'll start with page 1.", call("fetch_orders", page=1)]
    last = results[-1]
    if last.name == "issue_refund":
        page = int(json.loads(last.text)["order_id"][:2])
        return [f"Refunded. On to page {page + 1}.", call("fetch_orders", page=page + 1)]
    page = int(last.input.get("page", 0))
    broken = [row for row in json.loads(last.text)["items"] if row["status"] == "broken"]
    if broken:
        order = broken[0]
        return [
            f"Order {order['order_id']} is broken.",
            call("issue_refund", order_id=order["order_id"], amount=order["price"]),
        ]
    if page < PAGES:
        return [f"Page {page} is fine.", call("fetch_orders", page=page + 1)]
    return f"All {PAGES} pages audited; the refunds are listed in the context above."


def summarizer(body: dict[str, Any]) -> str:
    """A tool-less summary call's answer: the five points, from the transcript it was given."""
    transcript = body["messages"][-1]["content"][0]["text"]
    pages = [int(p) for p in re.findall(r'CALL fetch_orders \{"page": (\d+)\}', transcript)]
    refunds = re.findall(r"CALL issue_refund (\{[^\n]*\})", transcript)
    checked = f"pages up to {max(pages)}" if pages else "no pages yet"
    return (
        "1. Request: audit u_88213's order history and refund broken orders.\n"
        f"2. Confirmed: {checked} checked; customer u_88213.\n"
        f"3. Irreversible: {len(refunds)} refund(s) issued (receipts above).\n"
        "4. Failed attempts: none.\n"
        f"5. Remaining: pages after {max(pages, default=0)}, then the report."
    )


EXAMPLE = Example("e03_context", PROMPT, make_agent, policy, summarizer=summarizer, moves_cache_prefix=True)

if __name__ == "__main__":
    raise SystemExit(main(EXAMPLE))
