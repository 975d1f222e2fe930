"""Sub-agents' economics: one incident review, done by one agent alone and by a lead that hands the
log reading to a sub-agent, dollars side by side.

    .venv/bin/python -m benchmarks.subagents              # 5 services x 4 log pages, Markdown
    .venv/bin/python -m benchmarks.subagents --pages 8 --checks 30

The incident: checkout failed at 03:12. The reviewer reads every service's log (seeded pages of
~16,000 characters, one ERROR line among them), then does the rest of the review: the deploy
history, `--checks` metric readings, a status update, the root cause. Alone, every later step
resends what the log reading left in its history (pages compressed by the diet and pruned to
stubs, or, in the second table, pages read whole, `compress=False`, as when every line may
matter). With `SubAgent`, the lead's history holds one tool call and the reader's findings;
the reader's window held the logs, and it is gone once it answered. The reader's calls are on
the same bill (`result.usage`, purpose `subagent:read_logs`), so each total is the whole cost
of that review.

What it shows (the default run): the lead's largest prompt is a twentieth of the lone agent's
with exact pages, but on the same model the dollars barely move, since the reading costs what
it costs in either window and the core's pruning and cache reads already make the residue
cheap for the lone agent's later steps (it grows with `--checks`: 10% saved at 30). The
dollars drop when the reading runs on a small model, which only a separate agent allows:
half the cost with compressed pages, under a quarter with exact ones.

The scripted models are the same in every configuration (the reader pages through the logs
in order, the lead does the same review), and everything goes through the real SDK to the
strict simulator, whose billed usage (cache reads and writes included) is what is priced.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent import Agent, RunResult, tool
from agent.ext.subagents import SubAgent
from agent.testing.policies import call, step_number
from agent.testing.simulator import MessagesSimulator

MODEL = "claude-opus-5"
SMALL = "claude-haiku-4-5"
SEED = 26
SERVICES = ("auth", "checkout", "gateway", "inventory", "payments")
LEAD = (
    "You run incident reviews. Read the logs of every service, check the deploys and the "
    "metrics, post a status update, then give the root cause in one line."
)
READER = "You read service logs page by page and report only what matters, in a few lines."
INCIDENT = "Checkout failed for 41 orders at 03:12 UTC. Review the incident and give the root cause."
NEEDLE = "03:12:07 ERROR payments gateway timeout after 30000ms (stripe) orders=41"
FINDINGS = f"payments log: {NEEDLE}; every other service logged only INFO lines around 03:12."
METRICS = ("latency_p99", "error_rate", "queue_depth")


def page_text(service: str, page: int, pages: int) -> str:
    """One page of a service's log (seeded: every configuration reads the same bytes)."""
    r = random.Random(f"{SEED}:{service}:{page}")
    lines = [
        f"03:{(page * 200 + i) // 60 % 60:02d}:{i % 60:02d} INFO {service} request ok "
        f"id={r.randrange(16**8):08x} ms={r.randint(3, 90)} route=/{r.choice(['cart', 'pay', 'item'])}"
        for i in range(200)
    ]
    if service == "payments" and page == pages // 2:
        lines[117] = NEEDLE
    return "\n".join(lines)


def world(pages: int, exact: bool) -> list[Any]:
    """The review's tools; `exact`: log pages reach the model whole (`compress=False`), as
    when every line may matter, instead of cut by the diet's compressor."""

    @tool(compress=not exact)
    def read_log(service: str, page: int) -> str:
        """One page of a service's log (`page` from 1).

        Args:
            service: one of auth, checkout, gateway, inventory, payments.
            page: the page, from 1.
        """
        return page_text(service, page, pages)

    @tool
    def deploy_history(service: str) -> list[dict[str, str]]:
        """The last deploys of a service.

        Args:
            service: the service.
        """
        return [{"at": "02:55", "service": service, "version": "v412", "by": "ci"}]

    @tool
    def metric(name: str) -> dict[str, Any]:
        """One metric around the incident.

        Args:
            name: latency_p99, error_rate or queue_depth.
        """
        return {"metric": name, "03:10": 1.0, "03:12": 9.5, "03:14": 1.1}

    @tool
    def post_update(text: str) -> str:
        """Post a status update to the incident channel.

        Args:
            text: the update.
        """
        return "posted"

    return [read_log, deploy_history, metric, post_update]


def calls_so_far(body: Mapping[str, Any]) -> int:
    """The model's own calls in the history (pruning keeps the calls, only results shrink)."""
    return sum(
        1
        for m in body.get("messages") or []
        if m.get("role") == "assistant"
        for b in m.get("content") or []
        if isinstance(b, Mapping) and b.get("type") == "tool_use"
    )


def reader_model(pages: int) -> Callable[[Mapping[str, Any]], Any]:
    """Pages through every service's log in order, then reports."""
    reads = [(s, p) for s in SERVICES for p in range(1, pages + 1)]

    def policy(body: Mapping[str, Any]) -> Any:
        done = calls_so_far(body)
        if done < len(reads):
            service, page = reads[done]
            return call("read_log", service=service, page=page)
        return FINDINGS

    return policy


def lead_model(pages: int, delegates: bool, checks: int) -> Callable[[Mapping[str, Any]], Any]:
    """The review: the logs (itself, or by one delegation), then the same steps: the deploys,
    `checks` metric readings, a status update, the answer."""
    read = reader_model(pages)
    rest = [
        call("deploy_history", service="payments"),
        *(call("metric", name=METRICS[i % len(METRICS)]) for i in range(checks)),
        call("post_update", text=f"Investigating: {NEEDLE}"),
    ]

    def policy(body: Mapping[str, Any]) -> Any:
        if delegates:
            done = step_number(body) - 1
            if done == 0:
                return call("read_logs", task="Read every service's log around 03:12 and report errors.")
            done -= 1
        else:
            done = calls_so_far(body) - len(SERVICES) * pages
            if done < 0:
                return read(body)
        return rest[done] if done < len(rest) else f"Root cause: {NEEDLE} (payments, after v412 at 02:55)."

    return policy


@dataclass
class Row:
    name: str
    result: RunResult

    def cost(self, sub: bool) -> float:
        steps = [s for s in self.result.usage.steps if s.purpose.startswith("subagent:") == sub]
        return sum(s.cost_usd or 0.0 for s in steps)

    def calls(self, sub: bool) -> int:
        return sum(1 for s in self.result.usage.steps if s.purpose.startswith("subagent:") == sub)

    def largest(self, sub: bool) -> int:
        steps = [s.prompt for s in self.result.usage.steps if s.purpose.startswith("subagent:") == sub]
        return max(steps, default=0)


def run(
    name: str, pages: int, checks: int, folder: str, *, sub_model: str | None = None, exact: bool = False
) -> Row:
    """One review on its own simulator; `sub_model`: delegate the reading to a sub-agent on it."""
    tools = world(pages, exact)
    delegates = sub_model is not None
    reader_policy, lead_policy = reader_model(pages), lead_model(pages, delegates, checks)

    def policy(body: Mapping[str, Any]) -> Any:
        system = "".join(b.get("text", "") for b in body.get("system") or [])
        return reader_policy(body) if system == READER else lead_policy(body)

    with MessagesSimulator(policy) as sim:
        options: dict[str, Any] = {"llm": sim.llm(), "artifacts_dir": folder, "max_steps": 60}
        if sub_model is None:
            lead = Agent(model=MODEL, system=LEAD, tools=tools, **options)
        else:
            reader = Agent(model=sub_model, system=READER, tools=tools[:1], **options)
            task = SubAgent(reader, name="read_logs", description="Reads service logs and reports findings.")
            lead = Agent(model=MODEL, system=LEAD, tools=tools[1:], extensions=[task], **options)
        return Row(name, lead.run(INCIDENT))


def table(rows: Sequence[Row]) -> str:
    head = (
        "| configuration | lead calls | sub-agent calls | lead's largest prompt | sub-agent's largest "
        "prompt | $ lead | $ sub-agent | $ total | vs alone |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    base = rows[0].result.usage.cost_usd or 0.0
    lines = [head]
    for row in rows:
        total = row.result.usage.cost_usd or 0.0
        lines.append(
            f"| {row.name} | {row.calls(False)} | {row.calls(True)} | {row.largest(False):,} | "
            f"{row.largest(True):,} | ${row.cost(False):.4f} | ${row.cost(True):.4f} | ${total:.4f} | "
            f"{total / base:.0%} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> str:
    flags = argparse.ArgumentParser(prog="python -m benchmarks.subagents")
    flags.add_argument("--pages", type=int, default=4, help="log pages per service (default 4)")
    flags.add_argument("--checks", type=int, default=3, help="metric readings after the logs (default 3)")
    args = flags.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        tables = []
        for exact, how in ((False, "log pages compressed by the diet"), (True, "log pages read exact")):
            rows = [
                run("one agent alone", args.pages, args.checks, folder, exact=exact),
                run(
                    f"lead + log reader on {MODEL}",
                    args.pages,
                    args.checks,
                    folder,
                    sub_model=MODEL,
                    exact=exact,
                ),
                run(
                    f"lead + log reader on {SMALL}",
                    args.pages,
                    args.checks,
                    folder,
                    sub_model=SMALL,
                    exact=exact,
                ),
            ]
            for row in rows:
                assert NEEDLE in row.result.text, f"{row.name}: {row.result.text}"
            tables.append(f"{how}:\n\n{table(rows)}")
    text = "\n\n".join(tables)
    pages = f"{len(SERVICES)} services x {args.pages} log pages (~16,000 chars each)"
    print(f"Incident review on {MODEL}: {pages}, then {args.checks} metric checks\n")
    print(text)
    return text


if __name__ == "__main__":
    main()
