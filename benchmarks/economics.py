"""Token economics: one long tool-heavy run, priced under each context lever, against the naive loop.

    .venv/bin/python -m benchmarks.economics            # 80 steps, eleven configurations, Markdown
    .venv/bin/python -m benchmarks.economics --steps 40
    .venv/bin/python -m benchmarks.economics --chart economics.png   # + one chart of all (extra: plot)

The naive loop resends the whole history, raw, at full price, every step, so its
cost grows with the square of the steps. Each lever attacks one factor of that:

    diet        what a result costs when it enters the history (whitelist, compressor, artifacts)
    pruning     what an old result costs on every later step (one-line stubs)
    compaction  how long the history can get (the head folds into a summary)
    caching     the price of what must be resent (reads at 0.1x)

and, side by side on the same run, the API's own lever (`agent.ext.context_management`):

    api clearing    the server clears old tool results past a trigger (docs/context-management.md)
    api compaction  the server summarizes the prompt past a trigger and goes on from the summary

The scenario is scripted and seeded, so every configuration sees the same tool calls
with the same data, in the same order: an order-audit agent that pages through big
JSON order lists, nested HTTP API responses, HTML help pages and pytest runs, looks
orders up, and makes one irreversible refund. The model's side picks the next tool
by its own call count (compaction rewrites the history, so the history cannot say
which step it is). Everything goes through the real SDK to the strict simulator,
whose billed usage (cache reads and writes included) is what is priced here; the
summarizer calls of compaction are billed and counted like every other call, and so are the
server's compactions (their `usage.iterations`).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent import Agent, RunResult, Usage, tool
from agent.config import AgentConfig
from agent.ext.approval import Approval
from agent.ext.context_management import ContextManagement
from agent.messages import blocks, tool_names_by_id
from agent.testing.cache_model import block_tokens, render
from agent.testing.policies import call, echo_summarizer
from agent.testing.simulator import MessagesSimulator
from agent.usage import cost_of, price_for
from benchmarks import incident

MODEL = "claude-opus-5"
SEED = 6
CHECKPOINTS = (10, 20, 40, 80)
SYSTEM = (
    "You audit a shop's orders and its order API. Page through the order lists, check the API, "
    "the help pages and the test suite, and refund an order only when it is broken and unrefunded. "
    "Quote ids and amounts exactly; never guess a value you have not read."
)
REQUEST = "Audit customer C-1042's orders and the order API; refund the broken order; report."
CONTEXT_LIMIT = 20_000
"""`max_context_tokens` of the compaction configurations."""
NO_DIET = {"diet": False}
API_CLEARING = ContextManagement(trigger=CONTEXT_LIMIT, keep=AgentConfig.keep_recent)
"""The API's tool-result clearing at the bound our compaction keeps, keeping as many tool uses
as our pruning keeps results (no state: one instance serves every run)."""
API_COMPACTION = ContextManagement(clear_tool_uses=False, compact_at=50_000)
"""The API's compaction at the lowest trigger it takes (our compaction's bound is below it)."""
KEEP_FIELDS = {
    "search_orders": ["order_id", "status", "total", "placed_at"],
    "get_order": ["order_id", "status", "total", "customer.name", "items.sku", "items.qty", "refund"],
}


# -- the world the tools read (seeded, so every configuration sees the same bytes) ---------


def _rng(*key: Any) -> random.Random:
    return random.Random(f"{SEED}:{key}")


def _order(order_id: str) -> dict[str, Any]:
    r = _rng("order", order_id)
    n = r.randint(1, 4)
    status = "broken" if order_id == "O-3107" else r.choice(["delivered"] * 6 + ["shipped", "returned"])
    return {
        "order_id": order_id,
        "status": status,
        "total": sum(r.randint(5, 200) * 100 for _ in range(n)),
        "currency": "KRW",
        "placed_at": f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:14:00Z",
        "customer": {"id": "C-1042", "name": "Min-ji Park", "tier": r.choice(["gold", "silver"])},
        "items": [
            {"sku": f"SKU-{r.randint(1000, 9999)}", "qty": r.randint(1, 3), "price": r.randint(5, 200) * 100}
            for _ in range(n)
        ],
        "shipping": {
            "carrier": r.choice(["CJ", "Hanjin", "Lotte"]),
            "tracking": f"{r.randint(10**11, 10**12 - 1)}",
            "events": ["PICKED", "IN_TRANSIT", "OUT_FOR_DELIVERY", "DELIVERED"][: r.randint(1, 4)],
        },
        "payment": {"method": r.choice(["card", "transfer"]), "last4": f"{r.randint(0, 9999):04d}"},
        "refund": None,
        "gift_wrap": r.random() < 0.1,
        "notes": "",
    }


@tool
def search_orders(customer_id: str, page: int) -> list[dict[str, Any]]:
    """One page (40 orders) of a customer's order history.

    Args:
        customer_id: the customer, e.g. C-1042.
        page: page number, from 1.
    """
    return [_order(f"O-{page:02d}{i:02d}") for i in range(40)]


@tool
def get_order(order_id: str) -> dict[str, Any]:
    """Everything about one order.

    Args:
        order_id: the order id, e.g. O-3107.
    """
    return {**_order(order_id), "audit": [{"at": f"2026-0{i + 1}-01", "by": "system"} for i in range(8)]}


@tool
def http_get(path: str) -> dict[str, Any]:
    """GET a path of the shop's order API; returns status, headers and the parsed body.

    Args:
        path: the API path, e.g. /v2/returns?page=3.
    """
    r = _rng("http", path)
    headers = {f"X-Trace-{i}": f"{r.getrandbits(64):016x}" for i in range(12)}
    headers.update({"Link": f'<https://api.shop.example{path}&cursor=n{r.randint(1, 99)}>; rel="next"'})
    headers.update({"X-RateLimit-Remaining": str(r.randint(0, 500)), "Content-Type": "application/json"})
    data = [
        {
            "id": f"RT-{r.randint(10000, 99999)}",
            "order": {
                "id": f"O-{r.randint(100, 9999):04d}",
                "lines": [{"sku": f"SKU-{r.randint(1000, 9999)}"}],
            },
            "state": r.choice(["open", "closed", "pending"]),
            "meta": {"created": f"2026-0{r.randint(1, 9)}-1{r.randint(0, 9)}", "source": "web", "v": 3},
        }
        for _ in range(24)
    ]
    return {"status": 200, "headers": headers, "body": {"data": data, "meta": {"total": 480, "path": path}}}


@tool
def fetch_page(url: str) -> str:
    """Fetch an HTML page of the shop's help centre.

    Args:
        url: the page's address.
    """
    r = _rng("html", url)
    nav = "".join(f'<li><a href="/help/{i}">Help topic {i}</a></li>' for i in range(40))
    sections = "".join(
        f"<h2>Section {s}: refunds rule {r.randint(1, 99)}</h2>"
        + "".join(
            f"<p>Paragraph {p}: refunds within {r.randint(7, 30)} days of delivery. </p>" for p in range(6)
        )
        for s in range(8)
    )
    return (
        f"<!DOCTYPE html><html><head><title>Help: {url}</title><style>{'.x{color:red}' * 60}</style>"
        f"<script>{'var a=1;' * 80}</script></head><body><nav><ul>{nav}</ul></nav>"
        f"<main><h1>{url}</h1>{sections}</main><footer>{nav}</footer></body></html>"
    )


@tool
def run_tests(path: str) -> str:
    """Run the order service's pytest suite under `path` and return its output.

    Args:
        path: a test folder or file.
    """
    r = _rng("tests", path)
    names = [f"{path}/test_orders.py::test_case_{i:03d}" for i in range(120)]
    failing = sorted(r.sample(range(120), 3))
    lines = [
        f"{n} {'FAILED' if i in failing else 'PASSED'} [{(i + 1) * 100 // 120:3d}%]"
        for i, n in enumerate(names)
    ]
    failures = "".join(
        f"\n____ test_case_{i:03d} ____\n    def test_case_{i:03d}():\n>       assert refund(order) == {i}\n"
        f"E       AssertionError: assert {i + 1} == {i}\n{path}/test_orders.py:{40 + i}: AssertionError\n"
        for i in failing
    )
    summary = f"\n===== 3 failed, 117 passed in {r.randint(2, 9)}.{r.randint(10, 99)}s ====="
    return (
        "===== test session starts =====\n" + "\n".join(lines) + "\n===== FAILURES =====" + failures + summary
    )


@tool(irreversible=True)
def issue_refund(order_id: str, amount: int) -> dict[str, Any]:
    """Refund one order. Irreversible: it moves money.

    Args:
        order_id: the order to refund.
        amount: the amount, in won.
    """
    return {"refund_id": f"R-{order_id}", "order_id": order_id, "amount": amount, "status": "accepted"}


TOOLS = [search_orders, get_order, http_get, fetch_page, run_tests, issue_refund]


# -- the model's side -------------------------------------------------------------------------


def plan(step: int, steps: int) -> list[dict[str, Any]]:
    """The tool calls of step `step` (empty at the last step: the final answer)."""
    if step >= steps:
        return []
    if step == max(2, steps * 2 // 5):
        return [call("issue_refund", order_id="O-3107", amount=_order("O-3107")["total"])]
    kind = step % 5
    calls = [
        call("search_orders", customer_id="C-1042", page=step),
        call("http_get", path=f"/v2/returns?page={step}"),
        call("fetch_page", url=f"https://help.shop.example/refunds/{step}"),
        call("run_tests", path=f"tests/suite_{step}"),
        call("get_order", order_id=f"O-{step:02d}{step % 40:02d}"),
    ][kind : kind + 1]
    if step % 7 == 0:  # a parallel turn
        calls.append(call("get_order", order_id=f"O-{step:02d}07"))
    return calls


def model(steps: int) -> Callable[[dict[str, Any]], Any]:
    """The scripted model: decides by its own call count, so compaction cannot confuse it."""
    count = itertools.count(1)

    def policy(body: dict[str, Any]) -> Any:
        step = next(count)
        calls = plan(step, steps)
        if not calls:
            return "Audit done: O-3107 was broken and is refunded; 3 tests fail in every suite; API healthy."
        names = ", ".join(c["name"] for c in calls)
        return [f"Step {step}: next I check {names}.", *calls]

    return policy


def summarizer(body: dict[str, Any]) -> str:
    """A handover note of about 600 tokens, drawn from the transcript it is given."""
    return echo_summarizer(body, limit=2400)


# -- the runs -----------------------------------------------------------------------------------

CONFIGS: dict[str, dict[str, Any]] = {
    "naive": {**NO_DIET, "keep_recent": 0, "max_context_tokens": 0, "cache": False},
    "+diet": {"keep_fields": KEEP_FIELDS, "keep_recent": 0, "max_context_tokens": 0, "cache": False},
    "+pruning": {**NO_DIET, "max_context_tokens": 0, "cache": False},
    "+compaction": {**NO_DIET, "keep_recent": 0, "max_context_tokens": CONTEXT_LIMIT, "cache": False},
    "+caching": {**NO_DIET, "keep_recent": 0, "max_context_tokens": 0, "cache": True},
    "all": {"keep_fields": KEEP_FIELDS, "max_context_tokens": CONTEXT_LIMIT, "cache": True},
}
"""Our levers, one at a time and all together (the cheapest of them); pruning as by default."""

API_CONFIGS: dict[str, dict[str, Any]] = {
    "api clearing": {
        **NO_DIET,
        "keep_recent": 0,
        "max_context_tokens": 0,
        "cache": True,
        "ext": [API_CLEARING],
    },
    "api clearing, no cache": {
        **NO_DIET,
        "keep_recent": 0,
        "max_context_tokens": 0,
        "cache": False,
        "ext": [API_CLEARING],
    },
    "api clearing + our diet": {
        "keep_fields": KEEP_FIELDS,
        "keep_recent": 0,
        "max_context_tokens": 0,
        "cache": True,
        "ext": [API_CLEARING],
    },
    "api compaction": {
        **NO_DIET,
        "keep_recent": 0,
        "max_context_tokens": 0,
        "cache": True,
        "ext": [API_COMPACTION],
    },
    "api compaction + our diet": {
        "keep_fields": KEEP_FIELDS,
        "keep_recent": 0,
        "max_context_tokens": 0,
        "cache": True,
        "ext": [API_COMPACTION],
    },
}
"""The API's own clearing, side by side on the same run: `ext` lists the extensions added after
the approval gate. Not our levers, so apart from `CONFIGS`."""
EVERY_CONFIG = {**CONFIGS, **API_CONFIGS}


@dataclass
class Outcome:
    name: str
    result: RunResult
    requests: int
    rejected: int
    errors: int
    seconds: float
    server_compactions: int = 0
    """Replies that began with the server's `compaction` block (`ContextManagement(compact_at=)`)."""

    def cost_at(self, step: int) -> float:
        return sum(u.cost_usd or 0.0 for u in self.result.steps if u.step <= step)

    @property
    def summaries(self) -> int:
        """Our compaction's summary calls, and the server's compactions."""
        return sum(1 for u in self.result.steps if u.purpose == "summary") + self.server_compactions


def run_config(name: str, steps: int) -> Outcome:
    options = dict(EVERY_CONFIG[name])
    extensions = [Approval(allow=["issue_refund"]), *options.pop("ext", ())]  # the gate is not measured
    clock = itertools.count(0.0, 6.0)  # six seconds per call: deterministic, well inside the 5m TTL
    with (
        tempfile.TemporaryDirectory() as tmp,
        MessagesSimulator(model(steps), summarizer=summarizer, clock=lambda: next(clock)) as sim,
    ):
        agent = Agent(
            llm=sim.llm(),
            model=MODEL,
            system=SYSTEM,
            tools=TOOLS,
            max_steps=steps,
            extensions=extensions,
            **{"artifacts_dir": tmp, **options},
        )
        started = time.monotonic()
        result = agent.run(REQUEST)
        elapsed = time.monotonic() - started
        compactions = sum(any(i["type"] == "compaction" for i in u.get("iterations", ())) for u in sim.usages)
        return Outcome(
            name, result, len(sim.requests), len(sim.rejected), len(sim.errors), elapsed, compactions
        )


def run_all(steps: int = 80, names: Sequence[str] = tuple(CONFIGS)) -> list[Outcome]:
    return [run_config(name, steps) for name in names]


# -- the tables -------------------------------------------------------------------------------


def _checkpoints(steps: int) -> list[int]:
    return [n for n in CHECKPOINTS if n <= steps] or [steps]


def _write_cost(step: Usage) -> float:
    price = price_for(step.model)
    if price is None:
        return 0.0
    write_5m = step.cache_write - step.cache_write_1h
    return (write_5m * price.cache_write_5m + step.cache_write_1h * price.cache_write_1h) / 1e6


def tables(outcomes: Sequence[Outcome], steps: int) -> str:
    naive = next(o for o in outcomes if o.name == "naive")
    marks = _checkpoints(steps)
    pivot = 40 if steps >= 40 else marks[-1]
    d = AgentConfig
    lines = [
        f"### Token economics: {steps} steps, {MODEL}, seed {SEED}",
        "",
        f"Levers as configured: diet = keep_fields on {len(KEEP_FIELDS)} of {len(TOOLS)} tools, "
        f"compress_threshold={d.compress_threshold:,}, list_top_n={d.list_top_n}, artifacts; "
        f"pruning = keep_recent={d.keep_recent}, prune_batch={d.prune_batch}; "
        f"compaction = max_context_tokens={CONTEXT_LIMIT:,}; caching = cache_ttl={d.cache_ttl}; "
        f"api clearing = ContextManagement(trigger={API_CLEARING.trigger:,}, keep={API_CLEARING.keep}); "
        f"api compaction = ContextManagement(compact_at={API_COMPACTION.compact_at:,}).",
        "",
        "| config | uncached | cache write | cache read | output | $ total | writes % of $ | largest request"
        f" | summaries (ours + the server's) | $ at {pivot} vs naive |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for o in outcomes:
        u = o.result.usage
        share = o.cost_at(pivot) / naive.cost_at(pivot)
        writes = sum(_write_cost(step) for step in u.steps) / (u.cost_usd or 1.0)
        lines.append(
            f"| {o.name} | {u.uncached:,} | {u.cache_write:,} | {u.cache_read:,} | {u.output:,} | "
            f"{u.cost_usd or 0:.2f} | {writes:.0%} | {u.largest_prompt:,} | {o.summaries} | {share:.1%} |"
        )
    lines += ["", "Cumulative $ after N steps (summaries included), and the growth of the cost:", ""]
    head = " | ".join(f"$ at {n}" for n in marks)
    per = " | ".join(f"$/step {n // 2 + 1}–{n}" for n in marks)
    lines.append(f"| config | {head} | {per} | $@{marks[-1]} / $@{marks[-1] // 2} |")
    lines.append("|---|" + "--:|" * (2 * len(marks) + 1))
    for o in outcomes:
        costs = " | ".join(f"{o.cost_at(n):.3f}" for n in marks)
        marginal = " | ".join(f"{(o.cost_at(n) - o.cost_at(n // 2)) / (n - n // 2):.4f}" for n in marks)
        growth = o.cost_at(marks[-1]) / o.cost_at(marks[-1] // 2)
        lines.append(f"| {o.name} | {costs} | {marginal} | {growth:.2f} |")
    total = sum(o.requests for o in outcomes)
    rejected = sum(o.rejected for o in outcomes)
    errors = sum(o.errors for o in outcomes)
    lines += [
        "",
        "Growth: doubling the steps doubles a linear cost (ratio 2) and quadruples a quadratic one (4).",
        f"Rejected requests: {rejected} of {total} (simulator policy errors: {errors}).",
    ]
    return "\n".join(lines)


def headline(outcomes: Sequence[Outcome], steps: int) -> str:
    """The one sentence the README quotes (through `benchmarks.figures`, never by hand)."""
    pivot = steps // 2
    naive, every = outcomes[0], next(o for o in outcomes if o.name == "all")

    def growth(o: Outcome) -> float:
        return o.cost_at(steps) / o.cost_at(pivot)

    return (
        f"With every lever on, the {steps}-step audit of `python -m benchmarks.economics` costs "
        f"{every.cost_at(pivot) / naive.cost_at(pivot):.1%} of the naive loop at {pivot} steps, and its "
        f"cost grows close to linearly (×{growth(every):.2f} from {pivot} to {steps} steps; the naive "
        f"loop's ×{growth(naive):.2f} is quadratic)."
    )


def api_clearing(outcomes: Sequence[Outcome], steps: int) -> str:
    """The API's clearing and compaction next to our levers, in two sentences (docs/context-management.md)."""
    by = {o.name: o for o in outcomes}
    pivot = steps // 2

    def cost(name: str, at: int = steps) -> str:
        return f"${by[name].cost_at(at):.2f}"

    def share(name: str) -> str:
        return f"{by[name].cost_at(pivot) / by['naive'].cost_at(pivot):.1%}"

    return (
        f"At {steps} steps the API's clearing costs {cost('api clearing')} with caching on and "
        f"{cost('api clearing, no cache')} without (caching alone {cost('+caching')}, our pruning "
        f"{cost('+pruning')}, our compaction {cost('+compaction')}); on our diet it costs "
        f"{cost('api clearing + our diet')} ({share('api clearing + our diet')} of the naive loop at "
        f"{pivot} steps), and every lever of ours together {cost('all')} ({share('all')} at {pivot}). "
        f"The API's compaction at its lowest trigger costs {cost('api compaction')} "
        f"({by['api compaction'].server_compactions} compactions), and {cost('api compaction + our diet')} "
        f"on our diet ({by['api compaction + our diet'].server_compactions} compactions; "
        f"{share('api compaction + our diet')} at {pivot})."
    )


# -- the incident run: our defaults against the peers and the floor -----------------------------

INCIDENT_CONFIGS: dict[str, dict[str, Any]] = {
    "naive": CONFIGS["naive"],
    "defaults": {},
    "defaults, but the newest turn always cached": {"newest_cached": True},
    "defaults, but keep_recent=3, prune_batch=4": {"keep_recent": 3, "prune_batch": 4},
    "defaults, but prune_batch=4": {"prune_batch": 4},
}
"""Ours on `benchmarks.incident`: the defaults, then the defaults less one lever each."""


@dataclass
class Bill:
    """What one loop paid on the incident run, in the simulator's billed usage."""

    name: str
    usages: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    rejected: int
    tool_calls: dict[str, int]

    @property
    def dollars(self) -> float:
        price = price_for(incident.MODEL)
        assert price is not None
        return sum(cost_of(u, price) for u in self.usages)

    def part(self, key: str) -> int:
        return sum(u.get(key) or 0 for u in self.usages)


class _OldBreakpoints(Agent):
    """The newest turn cached even when the next step stubs it (the placement before)."""

    def newest_pruned(self, state: Any, request: Any) -> bool:
        return False


def run_incident(name: str) -> Bill:
    """One of `INCIDENT_CONFIGS` on the incident run, through the simulator."""
    options = dict(INCIDENT_CONFIGS[name])
    cls = _OldBreakpoints if options.pop("newest_cached", False) else Agent
    clock = itertools.count(0.0, 6.0)
    with (
        tempfile.TemporaryDirectory() as tmp,
        MessagesSimulator(incident.model(), summarizer=summarizer, clock=lambda: next(clock)) as sim,
    ):
        agent = cls(
            llm=sim.llm(),
            model=incident.MODEL,
            system=incident.SYSTEM,
            tools=incident.TOOLS,
            max_steps=incident.STEPS + 1,
            extensions=[Approval(allow=["rollback"])],
            **{"artifacts_dir": tmp, **options},
        )
        result = agent.run(incident.REQUEST)
        assert result.stop_reason == "end_turn", result.stop_reason
        names = tool_names_by_id(result.messages)
        calls: dict[str, int] = {}  # the calls that ran: each answered by a result that is no error
        for message in result.messages:
            for block in blocks(message) if message["role"] == "user" else ():
                if block.get("type") == "tool_result" and not block.get("is_error"):
                    tool_name = names[block["tool_use_id"]][0]
                    calls[tool_name] = calls.get(tool_name, 0) + 1
        return Bill(name, list(sim.usages), list(sim.requests), len(sim.rejected), calls)


@dataclass
class Floor:
    """The cheapest bill any loop could have on a run: every new token (the opening, each
    assistant turn, each result as the diet shows it) written to the cache once, the stable
    prefix (the opening and the assistant turns so far, which the API needs to pair each call)
    read at every later step, nothing sent uncached, and the same output."""

    opening: int
    turns: list[int]
    results: list[int]
    output: int

    @classmethod
    def of(cls, bill: Bill) -> Floor:
        """The floor of the run `bill` made, with the results as it showed them first."""
        first = bill.requests[0]
        opening = sum(p.tokens for p in render({**first, "messages": first["messages"][:1]}))
        turns, results = [], []
        for body in bill.requests[1:]:
            *_, turn, newest = body["messages"]
            turns.append(sum(block_tokens(b) for b in turn["content"]))
            results.append(sum(block_tokens(b) for b in newest["content"]))
        return cls(opening, turns, results, bill.part("output_tokens"))

    @property
    def dollars(self) -> float:
        price = price_for(incident.MODEL)
        assert price is not None
        written = self.opening + sum(self.turns) + sum(self.results)
        read = sum(self.opening + sum(self.turns[:k]) for k in range(len(self.turns)))
        return (
            written * price.cache_write_5m + read * price.cache_read + self.output * price.output
        ) / 1_000_000


def run_incident_all(peers: bool = True) -> tuple[list[Bill], list[Bill], Floor]:
    """Ours, the peers that are installed (the `peers` extra), and the floor, on the incident run."""
    ours = [run_incident(name) for name in INCIDENT_CONFIGS]
    others: list[Bill] = []
    if peers:
        from benchmarks import peers as peer_loops

        others = [Bill(o.name, o.usages, [], o.rejected, o.tool_calls) for o in peer_loops.run_all(incident)]
    return ours, others, Floor.of(next(b for b in ours if b.name == "defaults"))


def incident_table(ours: Sequence[Bill], others: Sequence[Bill], floor: Floor, short: bool = False) -> str:
    """The incident run's bills next to the naive loop, the floor and the best peer; `short`: only
    the naive loop, the defaults and each peer's best configuration (the README's)."""
    by = {b.name: b for b in ours}
    naive = by["naive"].dollars
    best = min(others, key=lambda b: b.dollars, default=None)
    rows = [*ours, *others]
    if short:
        kept = {
            "naive",
            "defaults",
            peers_best(others, "pydantic-ai"),
            peers_best(others, "SDK tool runner +"),
        }
        rows = [b for b in rows if b.name in kept]
    lines = [
        f"Incident run ({incident.STEPS} steps, {incident.MODEL}, {sum(by['defaults'].tool_calls.values())} "
        f"tool calls, the rollback once in every loop). Floor ${floor.dollars:.4f}: the opening, each "
        f"assistant turn and each result as the defaults show it ({sum(floor.results):,} tokens) written "
        "once; the opening and the turns so far read at each later step; the same output.",
        "",
        "| loop | $ | % of naive | × floor |" + (" % of best peer |" if best else ""),
        "|---|--:|--:|--:|" + ("--:|" if best else ""),
    ]
    for bill in rows:
        dollars = bill.dollars
        row = f"| {bill.name} | {dollars:.4f} | {dollars / naive:.2%} | {dollars / floor.dollars:.2f} |"
        if best:
            row += f" {bill.dollars / best.dollars:.0%} |"
        lines.append(row)
    if not short:
        rollbacks = sorted({b.tool_calls.get("rollback", 0) for b in rows})
        rejected = sum(b.rejected for b in rows)
        lines += ["", f"Rollbacks run per loop: {rollbacks}; rejected requests: {rejected}."]
    return "\n".join(lines)


def peers_best(others: Sequence[Bill], prefix: str) -> str:
    """The name of the cheapest peer configuration whose name starts with `prefix` ("" if none)."""
    found = [b for b in others if b.name.startswith(prefix)]
    return min(found, key=lambda b: b.dollars).name if found else ""


def figures() -> dict[str, str]:
    """The parts of this benchmark's output that the docs quote (`benchmarks.figures`)."""
    outcomes = run_all(80, list(EVERY_CONFIG))
    incident_run = run_incident_all()
    return {
        "incident": incident_table(*incident_run),
        "incident_short": incident_table(*incident_run, short=True),
        "tables": tables(outcomes, 80),
        "headline": headline(outcomes, 80),
        "api_clearing": api_clearing(outcomes, 80),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=80, help="model steps per run (default 80)")
    parser.add_argument(
        "--only", nargs="*", choices=list(EVERY_CONFIG), help="run only these (naive always runs)"
    )
    parser.add_argument("--chart", help="also write one PNG comparing the configurations (extra: plot)")
    parser.add_argument(
        "--incident", action="store_true", help="only the incident run: ours, the peers, the floor"
    )
    args = parser.parse_args(argv)
    if args.incident:
        print(incident_table(*run_incident_all()))
        return
    names = ["naive", *[n for n in args.only if n != "naive"]] if args.only else list(EVERY_CONFIG)
    outcomes = run_all(args.steps, names)
    print(tables(outcomes, args.steps))
    if "all" in names:
        print("\n" + headline(outcomes, args.steps))
    if set(names) == set(EVERY_CONFIG):
        print("\n" + api_clearing(outcomes, args.steps))
    print(f"time {sum(o.seconds for o in outcomes):.1f} s", file=sys.stderr)
    if args.chart:
        print(f"chart: {write_chart(outcomes, args.chart)}")


def write_chart(outcomes: Sequence[Outcome], path: str) -> str:
    """One PNG, one panel per configuration: prompt tokens per call (uncached, read, write) and $."""
    from agent.ext.charts.chart import compare_png, series  # the optional `plot` extra

    runs = {o.name: series([u.to_json() for u in o.result.steps]) for o in outcomes}
    return str(compare_png(runs, path))


if __name__ == "__main__":
    main()
