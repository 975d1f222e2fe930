"""Lesson 7, the capstone: a refund agent that puts the whole course to work.

A customer's broken earphones are somewhere in twelve orders of about thirty fields each.
The loop (e01) with parallel calls (e02); whitelists (`keep_fields`; dotted paths reach into
nested objects) and artifacts that keep the rest (e03); an irreversible refund behind the
approval gate (`agent/ext/approval/`): y/N at a terminal, the allow list when unattended.
`RefundAgent` sets its options as class attributes and overrides one step, `render_result`.

What to look for in the output: per result, `raw ~N tokens -> sent ~M tokens` and what was
cut; the earphones are not among the five orders search_orders shows, so the model reads ids
and names back from its artifact (two parallel `read_artifact`), then get_order, the refund.

    python -m examples.e07_refund            # offline, on the local simulator
    python -m examples.e07_refund --replay   # replay the recorded cassette
    ANTHROPIC_API_KEY=... python -m examples.e07_refund   # live
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from agent import Agent, RunResult, RunState, ToolOutcome
from agent.context.artifacts import find_pointer
from agent.context.compressors.jsonish import dump_full
from agent.ext.approval import Approval, TerminalApprover
from agent.testing.policies import call, latest_results
from examples._course import Course
from examples._shop import CUSTOMER, get_order, request_refund, search_orders

EXAMPLE = "e07_refund"  # its cassette: cassettes/examples/e07_refund.yaml
PROMPT = (
    f"I'm customer {CUSTOMER}. The wireless earphones I ordered in July arrived broken. Please refund them."
)
SYSTEM = (
    "You are a refund assistant for an online shop. Find the order the customer means, check it, "
    "and request the refund. Tool results may be cut; read the rest with read_artifact when needed."
)
ONE_ORDER = ["order_id", "customer.name", "item.name", "price", "status", "delivered_at", "refundable_until"]
WHITELISTS = {  # what the model reads of each result; dotted paths reach into nested objects
    "search_orders": ["order_id", "item.name", "price", "status", "ordered_at"],
    "get_order": ONE_ORDER,
    "request_refund": ["refund_id", "order_id", "status", "amount"],
}
ARTIFACTS = "artifacts"  # where full results go (tests point this at a temporary folder)


def what_was_cut(raw: Any, sent: str) -> str:
    """The diet's own note on what it cut (`_cut`), naming the top-level fields it dropped."""
    shown = json.loads(sent) if sent.startswith("{") else {}
    if "_cut" not in shown:
        return "cut; full result in the artifact" if find_pointer(sent) else "whole"
    gone = [key for key in raw if key not in shown] if isinstance(raw, dict) else []
    head, _, tail = shown["_cut"].partition("; ")  # "cut 3 other fields", "full result not kept"
    names = f": {', '.join(gone[:4])}{', ...' if len(gone) > 4 else ''}" if gone else ""
    return f"{head}{names}; {tail}"


class RefundAgent(Agent):
    system = SYSTEM
    tools = (search_orders, get_order, request_refund)  # in _shop.py; request_refund is irreversible
    keep_fields = WHITELISTS
    max_steps = 8

    def render_result(self, outcome: ToolOutcome, state: RunState) -> str | list[dict[str, Any]]:
        """The diet as usual, plus one line: what the tool returned vs what the model reads."""
        sent = super().render_result(outcome, state)
        if isinstance(sent, str):  # tokens estimated as characters / 4, rounded up
            raw, read = ((len(text) + 3) // 4 for text in (dump_full(outcome.value)[0], sent))
            cut = what_was_cut(outcome.value, sent)
            print(f"  {outcome.call.name:<15} raw ~{raw:>5,} tokens -> sent ~{read:>4,} tokens ({cut})")
        return sent


def model(body: dict[str, Any]) -> Any:
    """The scripted refund clerk: search, read back what was cut, check, refund, confirm."""
    results = latest_results(body)
    if not results:
        return ["Let me look up your orders.", call("search_orders", customer_id=CUSTOMER)]
    last = results[-1]
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
        o = json.loads(last.text)
        checked = f"Order {o['order_id']} was delivered and is refundable until {o['refundable_until']}."
        return [checked, call("request_refund", order_id=o["order_id"], reason="arrived broken")]
    r = json.loads(last.text)
    return f"Refund {r['refund_id']} of {r['amount']:,} KRW requested for order {r['order_id']}."


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    approval = Approval(TerminalApprover()) if sys.stdin.isatty() else Approval(allow=["request_refund"])
    with course.llm(model) as llm:
        agent = RefundAgent(llm=llm, artifacts_dir=ARTIFACTS, extensions=[approval], on_event=course.show)
        result = agent.run(PROMPT)
    print(f"answer: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
