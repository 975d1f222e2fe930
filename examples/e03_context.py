"""Lesson 3, context: a long task whose prompt stops growing.

Builds on e02. The agent audits 40 pages of order history (24 orders of nested JSON), a
page a step, refunding the broken ones. Four things keep the prompt from growing a page a
step: a **whitelist** (`@tool(keep=[...])`: three fields per order, not eight); **artifacts**
(what was cut is kept whole; the `_cut` note names the file); **keep-recent pruning** (a
result becomes a stub once `keep_recent=3` newer ones exist, `prune_batch=2` at a time);
**pair-safe compaction** (near `max_context_tokens` a tool-less call folds the head into a
summary, never splitting a call from its result; the request and refund receipts verbatim).

What to look for in the output: `[step 6] pruned 2 result(s): ...` (history tokens before ->
after); `compacted:` and its summary (refunds counted 1, 3, 4); `(summary)` calls in the usage
table, and `prompt=` never past 4,000; an answer naming all four refunds, kept by compaction.

    python -m examples.e03_context            # offline, on the local simulator
    python -m examples.e03_context --replay   # replay the recorded cassette
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agent import Agent, RunResult, tool
from agent.ext.approval import Approval
from agent.testing.policies import call, latest_results
from examples._course import Course
from examples._shop import order_page

EXAMPLE = "e03_context"  # its cassette: cassettes/examples/e03_context.yaml
PAGES, PAGE_ROWS, MAX_CONTEXT_TOKENS = 40, 24, 4_000
PROMPT = (
    f"Audit all {PAGES} pages of customer u_88213's order history. Refund every order whose "
    "status is 'broken' (once per order), then say how many you refunded."
)
SYSTEM = "You audit order histories and issue refunds. Be exact with order ids and amounts."
ARTIFACTS = "artifacts"  # where full results go (tests point this at a temporary folder)
REFUND_ID = re.compile(r"R-\d{2}-\d{3}")  # a refund's id, in its receipt


@tool(keep=["order_id", "price", "status"])  # the whitelist: item and shipping stay in the artifact
def fetch_orders(page: int) -> list[dict[str, Any]]:
    """One page of the customer's order history, as JSON rows.

    Args:
        page: page number, from 1.
    """
    return order_page(page, PAGE_ROWS)  # in _shop.py: 24 rows of nested JSON


@tool(irreversible=True)
def issue_refund(order_id: str, amount: int) -> dict[str, Any]:
    """Refund one order. Irreversible: never refund the same order twice.

    Args:
        order_id: the order to refund.
        amount: the amount in won.
    """
    return {"refund_id": f"R-{order_id}", "order_id": order_id, "amount": amount, "status": "accepted"}


def model(body: dict[str, Any]) -> Any:
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
        refund = call("issue_refund", order_id=broken[0]["order_id"], amount=broken[0]["price"])
        return [f"Order {broken[0]['order_id']} is broken.", refund]
    if page < PAGES:
        return [f"Page {page} is fine.", call("fetch_orders", page=page + 1)]
    refunds = sorted(set(REFUND_ID.findall(json.dumps(body["messages"]))))  # receipts survive compaction
    return f"All {PAGES} pages audited; {len(refunds)} orders refunded: {', '.join(refunds)}."


def summarizer(body: dict[str, Any]) -> str:
    """The scripted summary call: five points; a refund counts once, by its receipt (carried ones too)."""
    transcript = body["messages"][-1]["content"][0]["text"]
    done = max((int(p) for p in re.findall(r'CALL fetch_orders \{"page": (\d+)\}', transcript)), default=0)
    refunds = sorted(set(REFUND_ID.findall(transcript)))
    return (
        f"1. Request: audit u_88213's order history and refund broken orders.\n2. Confirmed: pages up to "
        f"{done} checked; customer u_88213.\n3. Irreversible: {len(refunds)} refund(s) issued: "
        f"{', '.join(refunds) or 'none'} (receipts above).\n4. Failed attempts: none.\n"
        f"5. Remaining: pages after {done}, then the report."
    )


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    with course.llm(model, summarizer=summarizer, moves_cache_prefix=True) as llm:
        agent = Agent(
            llm=llm,
            system=SYSTEM,
            tools=[fetch_orders, issue_refund],
            extensions=[Approval(allow=["issue_refund"])],  # refunds run unattended
            max_steps=PAGES + 10,
            max_context_tokens=MAX_CONTEXT_TOKENS,  # compaction: fold the head near 4,000 tokens
            keep_recent=3,  # pruning: stub all but the newest 3 results, 2 at a time
            prune_batch=2,
            list_top_n=PAGE_ROWS,  # every row of a page is sent (three fields each)
            artifacts_dir=ARTIFACTS,
            on_event=course.show,  # prints each prune and compaction as it happens
        )
        result = agent.run(PROMPT)
    print(f"answer: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
