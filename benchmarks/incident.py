"""The incident run: the held-out-style scenario `benchmarks.economics` and its peers are priced on.

A 40-step on-call investigation on claude-sonnet-4-6: the agent pages through 32K-token log
pages, reads metric series, traces, deploy lists and runbooks, and rolls one deploy back (the
irreversible call, made once). Forty-one tool calls in all (step 13 calls two tools at once), then
the final answer. The world is seeded, so every loop, ours and the peers', reads the same bytes
in the same order, and the scripted model decides by its own call count, so a loop that rewrites
its history cannot change what the model asks for.

This scenario was written before any lever was tuned on it, and is kept apart from the order
audit in `benchmarks.economics` (where the levers were developed) so the two can disagree.
The tools are plain typed functions: `FUNCTIONS` is what a peer framework registers, `TOOLS`
the same functions as this project's tools.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

from agent import tool
from agent.testing.policies import call

MODEL = "claude-sonnet-4-6"
STEPS = 40
"""Model steps that call tools; the answer comes at step 41."""
SEED = 11
SYSTEM = (
    "You are the on-call engineer for the checkout platform. Investigate the incident from the logs, "
    "metrics, traces, deploys and runbooks; roll back a deploy only when the evidence shows it caused "
    "the incident. Quote ids, versions and numbers exactly; never guess a value you have not read."
)
REQUEST = (
    "Checkout p99 latency tripled at 14:02 UTC. Find the cause, mitigate, and write the incident summary."
)
SERVICES = ("checkout", "payments", "inventory", "cart", "gateway")
BAD = {"service": "payments", "version": "v2.41.0", "trace": "tr-5f1c0a", "error": "PoolTimeoutError"}


def _rng(*key: Any) -> random.Random:
    return random.Random(f"{SEED}:{key}")


def search_logs(service: str, page: int) -> str:
    """One page (about 125,000 characters) of a service's logs around the incident, newest first.

    Args:
        service: the service, e.g. payments.
        page: page number, from 1.
    """
    r = _rng("logs", service, page)
    lines = []
    for i in range(920):
        second = (page * 920 + i) % 3600
        stamp = f"2026-11-30T14:{second // 60:02d}:{second % 60:02d}.{r.randint(0, 999):03d}Z"
        request = f"req-{r.getrandbits(48):012x}"
        if service == BAD["service"] and i % 97 == 13:
            lines.append(
                f"{stamp} ERROR {service}-{r.randint(1, 6)} {request} {BAD['error']}: pool exhausted "
                f"(size=20, waiting={r.randint(40, 90)}) after deploy {BAD['version']} trace={BAD['trace']}"
            )
        else:
            lines.append(
                f"{stamp} INFO  {service}-{r.randint(1, 6)} {request} "
                f"POST /v1/{service}/{r.choice(['pay', 'hold', 'quote'])}"
                f" status=200 duration_ms={r.randint(8, 240)} user=u{r.randint(10000, 99999)} "
                f"region={r.choice(['eu-west-1', 'us-east-1', 'ap-northeast-2'])}"
            )
    return "\n".join(lines)


def get_metrics(service: str, metric: str) -> dict[str, Any]:
    """A metric's per-minute series for the last six hours, with its summary.

    Args:
        service: the service, e.g. checkout.
        metric: latency_p99_ms, error_rate or rps.
    """
    r = _rng("metrics", service, metric)
    base = {"latency_p99_ms": 180.0, "error_rate": 0.002, "rps": 850.0}.get(metric, 1.0)
    values = [
        round(
            base
            * (3.1 if minute >= 302 and service in ("checkout", BAD["service"]) else 1.0)
            * r.uniform(0.9, 1.1),
            4,
        )
        for minute in range(360)
    ]
    points = [
        {"t": f"2026-11-30T{9 + minute // 60:02d}:{minute % 60:02d}:00Z", "value": value}
        for minute, value in enumerate(values)
    ]
    return {
        "service": service,
        "metric": metric,
        "unit": "ms" if metric.endswith("_ms") else "ratio" if metric == "error_rate" else "per_s",
        "summary": {"min": min(values), "max": max(values), "last": values[-1], "changed_at": "14:02"},
        "points": points,
    }


def get_trace(trace_id: str) -> dict[str, Any]:
    """A distributed trace: every span, with its timings and attributes.

    Args:
        trace_id: the trace id, e.g. tr-5f1c0a.
    """
    r = _rng("trace", trace_id)
    spans = []
    for i in range(48):
        service = r.choice(SERVICES)
        slow = trace_id == BAD["trace"] and service == BAD["service"]
        spans.append(
            {
                "span_id": f"sp-{r.getrandbits(32):08x}",
                "parent": f"sp-{r.getrandbits(32):08x}" if i else None,
                "service": service,
                "name": f"{service}.{r.choice(['handle', 'query', 'publish', 'acquire_conn'])}",
                "duration_ms": r.randint(2000, 2600) if slow else r.randint(1, 60),
                "attributes": {
                    "http.status_code": 200,
                    "db.pool.wait_ms": r.randint(1900, 2500) if slow else 0,
                    "host": f"ip-10-0-{r.randint(0, 255)}-{r.randint(0, 255)}",
                    "version": BAD["version"] if service == BAD["service"] else f"v1.{r.randint(0, 30)}.0",
                },
            }
        )
    return {"trace_id": trace_id, "root": "checkout.handle", "duration_ms": 2712, "spans": spans}


def list_deploys(service: str) -> list[dict[str, Any]]:
    """The service's last 30 deploys, newest first.

    Args:
        service: the service, e.g. payments.
    """
    r = _rng("deploys", service)
    deploys = []
    for i in range(30):
        version = (
            BAD["version"] if service == BAD["service"] and i == 0 else f"v2.{40 - i - 1}.{r.randint(0, 3)}"
        )
        deploys.append(
            {
                "version": version,
                "at": f"2026-11-{30 - i // 3:02d}T{13 - i % 3:02d}:{r.randint(0, 59):02d}:00Z",
                "by": r.choice(["ci-bot", "jkim", "asato", "mlopez"]),
                "commit": f"{r.getrandbits(160):040x}",
                "change": r.choice(["bump deps", "pool settings", "retry policy", "logging", "feature flag"]),
                "canary": {"passed": True, "minutes": r.randint(10, 30)},
            }
        )
    return deploys


def read_runbook(name: str) -> str:
    """A runbook of the platform team, as Markdown.

    Args:
        name: the runbook, e.g. db-pool-exhaustion.
    """
    r = _rng("runbook", name)
    steps = "\n".join(
        f"{i}. Check {r.choice(['the dashboard', 'the pool gauge', 'recent deploys', 'the error budget'])}; "
        f"if it is over {r.randint(50, 95)}% for {r.randint(2, 10)} minutes, "
        "page the owner and note the time."
        for i in range(1, 40)
    )
    symptoms = "Latency rises; pools fill. " * 20
    return f"# Runbook: {name}\n\nOwner: platform-team\n\n## Symptoms\n\n{symptoms}\n\n## Steps\n\n{steps}\n"


def rollback(service: str, version: str) -> dict[str, Any]:
    """Roll a service back to the deploy before `version`. Irreversible: it redeploys production.

    Args:
        service: the service to roll back.
        version: the deploy to undo, e.g. v2.41.0.
    """
    return {"service": service, "undone": version, "now": "v2.40.2", "status": "rolled_back"}


FUNCTIONS: list[Callable[..., Any]] = [
    search_logs,
    get_metrics,
    get_trace,
    list_deploys,
    read_runbook,
    rollback,
]
TOOLS = [tool(f) for f in FUNCTIONS[:-1]] + [tool(irreversible=True)(rollback)]


def plan(step: int) -> list[dict[str, Any]]:
    """The tool calls of step `step` (none after `STEPS`: the final answer)."""
    if step > STEPS:
        return []
    if step == 16:
        return [call("rollback", service=BAD["service"], version=BAD["version"])]
    service = SERVICES[step % len(SERVICES)]
    kind = step % 4
    calls = [
        call("search_logs", service=service, page=step),
        call("get_metrics", service=service, metric=("latency_p99_ms", "error_rate", "rps")[step % 3]),
        call("get_trace", trace_id=BAD["trace"] if step % 8 == 2 else f"tr-{step:06x}"),
        call("list_deploys", service=service) if step % 3 else call("read_runbook", name=f"rb-{step}"),
    ][kind : kind + 1]
    if step == 13:
        calls.append(call("get_trace", trace_id=BAD["trace"]))
    return calls


ANSWER = (
    f"Cause: {BAD['service']} {BAD['version']} shrank its DB pool; {BAD['error']} in its logs and "
    f"trace {BAD['trace']}. Rolled back to v2.40.2; p99 back to baseline."
)


def model() -> Callable[[dict[str, Any]], Any]:
    """The scripted model (a simulator policy): a short thought, then the step's calls."""
    count = itertools.count(1)

    def policy(body: dict[str, Any]) -> Any:
        step = next(count)
        calls = plan(step)
        if not calls:
            return ANSWER
        names = ", ".join(c["name"] for c in calls)
        return [f"Step {step}: next I check {names}.", *calls]

    return policy
