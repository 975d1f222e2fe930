"""The peers on our own simulator: other loops' best configurations, run on the same scenario.

    python -m benchmarks.peers      # every peer whose packages are installed (extra: peers)

A claim that this project spends fewer tokens needs the other loops measured the way ours is:
the same tools on the same seeded bytes, the same scripted model (it decides by its own call
count, so a loop that rewrites its history cannot change what it asks for), and the same strict
simulator billing every request, cache reads and writes included. Each peer is configured the
way its own users would turn its levers on, and nothing of this project runs inside it: it talks
to the simulator over HTTP through its own client, registers the scenario's plain `FUNCTIONS`
as its own tools and runs to the end.

- **pydantic-ai-harness** (on `pydantic-ai-slim`): `ToolOutputLimits` spills a result over its
  band to a file and leaves a preview and a handle (`read_tool_result` reads it back);
  `ClearToolResults` blanks old results in place past a token estimate. Caching through
  `AnthropicModelSettings`: breakpoints on the instructions and the tool definitions, and the
  API's automatic (top-level) breakpoint on the last block.
- **The SDK's tool runner** (`client.beta.messages.tool_runner`, the `anthropic` package
  alone): plain, and with the API's automatic caching (top-level `cache_control`) and its
  server-side clearing (`clear_tool_uses_20250919`, beta `context-management-2025-06-27`), at
  the documented defaults and at the tuned harness's bound and keep.

The extra is optional: `pydantic_ai` is imported inside its runners, and `available()` names
the peers that can run here.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import itertools
import json
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import anthropic

from agent.testing.simulator import MessagesSimulator
from agent.usage import cost_of, price_for

MAX_TOKENS = 4096
"""`max_tokens` of every peer's requests (the scripted answers are short)."""
SPILL_OVER = 2_000
"""Characters past which the tuned harness spills a result to a file (its default is 10,000)."""
CLEAR_AT = 5_000
"""Estimated tokens past which the tuned harness clears old results (`ClearToolResults.max_tokens`)."""
CLEAR_KEEP = 1
"""Tool-call/result pairs `ClearToolResults` keeps (its default is 3)."""
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
API_CLEARING: dict[str, Any] = {"edits": [{"type": "clear_tool_uses_20250919"}]}
"""The API's clearing as documented, its defaults left to the server (trigger 100,000 input tokens,
keep 3 tool uses): what a user of the tool runner turns on first."""
API_CLEARING_TUNED: dict[str, Any] = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": CLEAR_AT},
            "keep": {"type": "tool_uses", "value": CLEAR_KEEP},
        }
    ]
}
"""The API's clearing at the tuned harness's bound and keep, so the server's lever gets the same
best shot the harness's gets."""


@dataclass
class PeerOutcome:
    """What one peer's run cost, and what it did: the simulator's witness, not the peer's own count."""

    name: str
    usages: list[dict[str, Any]]
    """The usage the simulator billed for each 200 reply (`sim.usages`)."""
    requests: int
    rejected: int
    errors: int
    tool_calls: dict[str, int]
    """How many times each of the scenario's functions actually ran."""
    answer: str
    error: str | None = None
    """Why the run stopped before its answer (the exception, one line), if it did."""
    violations: list[list[str]] = field(default_factory=list)
    """The simulator's reasons for each request it rejected."""
    seconds: float = 0.0

    def total(self, key: str) -> int:
        return sum(int(u.get(key) or 0) for u in self.usages)

    def dollars(self, model: str) -> float:
        price = price_for(model)
        return 0.0 if price is None else sum(cost_of(u, price) for u in self.usages)


Runner = Callable[[ModuleType], PeerOutcome]


# -- shared plumbing ----------------------------------------------------------------------------


def _counted(fn: Callable[..., Any], calls: Counter[str]) -> Callable[..., Any]:
    """`fn` with the same name, signature and docstring (what a peer reads its schema from),
    counting its runs."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        calls[fn.__name__] += 1
        return fn(*args, **kwargs)

    return run


def _as_text(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` returning JSON text for a structured result: the SDK's tool runner sends a tool's
    return value as the result's content, which must be a string or a list of content blocks."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        return result if isinstance(result, str) else json.dumps(result)

    return run


@contextmanager
def _simulated(scenario: ModuleType) -> Iterator[MessagesSimulator]:
    """The scenario's scripted model on a fresh simulator, on the clock `benchmarks.economics`
    uses (six seconds a call: deterministic cache TTLs)."""
    clock = itertools.count(0.0, 6.0)
    with MessagesSimulator(scenario.model(), clock=lambda: next(clock)) as sim:
        yield sim


def _outcome(
    name: str,
    sim: MessagesSimulator,
    calls: Counter[str],
    answer: str,
    error: str | None,
    started: float,
) -> PeerOutcome:
    return PeerOutcome(
        name=name,
        usages=[dict(u) for u in sim.usages],
        requests=len(sim.requests),
        rejected=len(sim.rejected),
        errors=len(sim.errors),
        tool_calls=dict(calls),
        answer=answer,
        error=error,
        violations=[list(v) for _, v in sim.rejected],
        seconds=time.monotonic() - started,
    )


def _one_line(error: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()[0]


# -- pydantic-ai-harness ------------------------------------------------------------------------


def _harness(name: str, *, spill_over: int | None, clear: bool) -> Runner:
    """A pydantic-ai agent with the harness's `ToolOutputLimits` (spilling past `spill_over`
    characters, or at its default band when None) and, with `clear`, `ClearToolResults`."""

    def run(scenario: ModuleType) -> PeerOutcome:
        # the `peers` extra; where it is missing, `available()` leaves these runners out
        from pydantic_ai import Agent  # type: ignore[import-not-found, unused-ignore]
        from pydantic_ai.capabilities import AbstractCapability  # type: ignore[import-not-found, unused-ignore]
        from pydantic_ai.models.anthropic import (  # type: ignore[import-not-found, unused-ignore]
            AnthropicModel,
            AnthropicModelSettings,
        )
        from pydantic_ai.providers.anthropic import AnthropicProvider  # type: ignore[import-not-found, unused-ignore]
        from pydantic_ai.usage import UsageLimits  # type: ignore[import-not-found, unused-ignore]
        from pydantic_ai_harness.compaction import ClearToolResults  # type: ignore[import-not-found, unused-ignore]
        from pydantic_ai_harness.tool_output_limits import (  # type: ignore[import-not-found, unused-ignore]
            Band,
            LocalFileStore,
            Spill,
            ToolOutputLimits,
            Truncate,
        )

        calls: Counter[str] = Counter()
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp, _simulated(scenario) as sim:
            client = anthropic.AsyncAnthropic(base_url=sim.base_url, api_key="sim", max_retries=0)
            model = AnthropicModel(scenario.MODEL, provider=AnthropicProvider(anthropic_client=client))
            store = LocalFileStore(base_dir=Path(tmp))  # the run has no workspace: spills go here
            limits = (
                ToolOutputLimits(store=store)
                if spill_over is None
                else ToolOutputLimits(
                    bands=[Band(over=spill_over, action=Spill(then=Truncate()))], store=store
                )
            )
            capabilities: list[AbstractCapability[None]] = [limits]
            if clear:
                capabilities.append(ClearToolResults(max_tokens=CLEAR_AT, keep_pairs=CLEAR_KEEP))
            settings = AnthropicModelSettings(
                max_tokens=MAX_TOKENS,
                anthropic_cache_instructions=True,
                anthropic_cache_tool_definitions=True,
                anthropic_cache=True,
            )
            agent = Agent(
                model,
                instructions=scenario.SYSTEM,
                tools=[_counted(f, calls) for f in scenario.FUNCTIONS],
                capabilities=capabilities,
                model_settings=settings,
            )
            limit = UsageLimits(request_limit=scenario.STEPS + 10)

            async def run_closed() -> Any:
                """The run on its own event loop, its client closed with it (no socket left open)."""
                async with client:
                    return await agent.run(scenario.REQUEST, usage_limits=limit)

            answer, error = "", None
            try:
                answer = str(asyncio.run(run_closed()).output)
            except Exception as exc:  # a rejected request, a limit: recorded, the table goes on
                error = _one_line(exc)
            return _outcome(name, sim, calls, answer, error, started)

    return run


# -- the SDK's tool runner ----------------------------------------------------------------------


def _tool_runner(name: str, *, cache: bool, clearing: dict[str, Any] | None) -> Runner:
    """`client.beta.messages.tool_runner` over the scenario's functions, with the API's automatic
    caching and, given `clearing` (a `context_management` config), its server-side clearing.

    The runner threads as it does by default (beta `message-threads-2026-08-12`): after the first
    turn it sends only the new messages, and the simulator rebuilds the conversation, as the API
    does (`agent.testing.threads`), so each turn is billed for the whole of it."""

    def run(scenario: ModuleType) -> PeerOutcome:
        calls: Counter[str] = Counter()
        started = time.monotonic()
        with _simulated(scenario) as sim:
            client = anthropic.Anthropic(base_url=sim.base_url, api_key="sim", max_retries=0)
            tools = [anthropic.beta_tool(_as_text(_counted(f, calls))) for f in scenario.FUNCTIONS]
            options: dict[str, Any] = {}
            if cache:
                options["cache_control"] = {"type": "ephemeral"}
            if clearing is not None:
                options["context_management"] = clearing
                options["betas"] = [CONTEXT_MANAGEMENT_BETA]
            runner = client.beta.messages.tool_runner(
                model=scenario.MODEL,
                max_tokens=MAX_TOKENS,
                system=scenario.SYSTEM,
                messages=[{"role": "user", "content": scenario.REQUEST}],
                tools=tools,
                max_iterations=scenario.STEPS + 10,
                **options,
            )
            answer, error = "", None
            try:
                with client:
                    message = runner.until_done()
                answer = "".join(b.text for b in message.content if b.type == "text")
            except Exception as exc:  # a prompt past the window, a rejected request: recorded
                error = _one_line(exc)
            return _outcome(name, sim, calls, answer, error, started)

    return run


# -- the registry -------------------------------------------------------------------------------

HARNESS_TUNED = (
    f"pydantic-ai-harness: spill {SPILL_OVER // 1000}K + clear (keep {CLEAR_KEEP} at {CLEAR_AT // 1000}K)"
)
HARNESS_DEFAULTS = "pydantic-ai-harness, defaults (spill)"
RUNNER_MANAGED = "SDK tool runner + cache + API clearing"
RUNNER_TUNED = f"SDK tool runner + cache + API clearing (keep {CLEAR_KEEP} at {CLEAR_AT // 1000}K)"
RUNNER_PLAIN = "SDK tool runner, plain"

PEERS: dict[str, Runner] = {
    HARNESS_TUNED: _harness(HARNESS_TUNED, spill_over=SPILL_OVER, clear=True),
    HARNESS_DEFAULTS: _harness(HARNESS_DEFAULTS, spill_over=None, clear=False),
    RUNNER_MANAGED: _tool_runner(RUNNER_MANAGED, cache=True, clearing=API_CLEARING),
    RUNNER_TUNED: _tool_runner(RUNNER_TUNED, cache=True, clearing=API_CLEARING_TUNED),
    RUNNER_PLAIN: _tool_runner(RUNNER_PLAIN, cache=False, clearing=None),
}
NEEDS: dict[str, tuple[str, ...]] = {
    HARNESS_TUNED: ("pydantic_ai", "pydantic_ai_harness"),
    HARNESS_DEFAULTS: ("pydantic_ai", "pydantic_ai_harness"),
}
"""The modules a peer needs beyond `anthropic` (from the `peers` extra)."""


def available() -> list[str]:
    """The peers whose packages are importable here, in `PEERS` order."""
    return [
        name
        for name in PEERS
        if all(importlib.util.find_spec(module) is not None for module in NEEDS.get(name, ()))
    ]


def run_all(scenario: ModuleType, names: Sequence[str] | None = None) -> list[PeerOutcome]:
    return [PEERS[name](scenario) for name in (available() if names is None else names)]


def table(outcomes: Sequence[PeerOutcome], model: str) -> str:
    lines = [
        "| peer | requests | uncached | cache write | cache read | output | $ | tool calls | rollbacks |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.name} | {o.requests} | {o.total('input_tokens'):,} | "
            f"{o.total('cache_creation_input_tokens'):,} | {o.total('cache_read_input_tokens'):,} | "
            f"{o.total('output_tokens'):,} | {o.dollars(model):.2f} | {sum(o.tool_calls.values())} | "
            f"{o.tool_calls.get('rollback', 0)} |"
        )
    for o in outcomes:
        if o.error is not None or o.rejected or o.errors:
            lines.append(
                f"\n{o.name}: stopped by {o.error or 'nothing'}; {o.rejected} rejected "
                f"({'; '.join(v for vs in o.violations for v in vs)[:300]}), {o.errors} policy errors"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    from benchmarks import incident

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(PEERS), help="run only these peers")
    args = parser.parse_args(argv)
    names = args.only or available()
    missing = [n for n in PEERS if n not in available()]
    outcomes = run_all(incident, names)
    print(f"### Peers on the incident run: {incident.STEPS} steps, {incident.MODEL}\n")
    print(table(outcomes, incident.MODEL))
    if missing:
        print(f"\nNot installed (pip install -e '.[peers]'): {', '.join(missing)}")
    print(f"time {sum(o.seconds for o in outcomes):.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
