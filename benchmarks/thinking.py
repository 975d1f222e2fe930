"""Today's models: a 40-step tool-heavy run under thinking, and the history strategies side by side.

    .venv/bin/python -m benchmarks.thinking

The scenario is the audit of `benchmarks.economics` (big JSON pages, HTTP API responses,
HTML pages, pytest runs, one irreversible refund) in an 8,000-token window, run through
the real SDK, streaming, against the strict simulator, which now thinks the way today's
models do: Opus 5 and later think unless told not to, thinking shares `max_tokens`, each
block comes back empty with a signature (display omitted) and is billed at its hidden
length whenever it is sent back, and on the 5.5 family every block is bound to its prefix.

Table 1 is the done-when of the today's-models work, on three models: claude-sonnet-4-6
(no thinking), claude-opus-5 with three steps thinking four times longer than usual, and
claude-opus-5-5 with its default strategy. Table 2 runs claude-opus-5-5 under each
thinking-history strategy (`agent.context.thinking`) and reports what each costs and how
much earlier reasoning still reaches the model. The last line is one JSON object.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agent import Agent, AgentError, RunResult
from agent.context.cache import strip_cache_control
from agent.context.thinking import first_rewrite, thinking_blocks
from agent.ext.approval import Approval
from agent.models import MODELS
from agent.testing.simulator import MessagesSimulator
from agent.usage import cost_of
from benchmarks.economics import KEEP_FIELDS, REQUEST, SYSTEM, TOOLS, model, summarizer

STEPS = 40
WINDOW = 8_000
USUAL_THINKING = 1_200
"""Tokens a step thinks; the long steps think four times as much."""
LONG_STEPS = (9, 21, 33)
IRREVERSIBLE = "issue_refund"


def thinker(long_steps: Sequence[int] = LONG_STEPS) -> Callable[[dict[str, Any]], int]:
    """How long the simulated model thinks at each of its steps (summaries think little)."""
    steps = itertools.count(1)

    def tokens(body: dict[str, Any]) -> int:
        if "tools" not in body:
            return 100
        step = next(steps)
        return USUAL_THINKING * (4 if step in long_steps else 1)

    return tokens


@dataclass
class Triage:
    """One run of the scenario and what the simulator saw."""

    name: str
    model: str
    result: RunResult | None
    error: str
    sim: MessagesSimulator

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [r for r in self.sim.requests if "tools" in r]

    @property
    def completed(self) -> bool:
        return self.result is not None and self.result.stop_reason == "end_turn"

    @property
    def rejected(self) -> int:
        return len(self.sim.rejected)

    @property
    def largest_prompt(self) -> int:
        return max(
            (
                u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
                for u in self.sim.usages
            ),
            default=0,
        )

    @property
    def irreversible_runs(self) -> int:
        """How many times the irreversible tool was called in answered turns."""
        ids = {
            b["id"]
            for r in self.steps
            for m in r["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if isinstance(b, dict) and b.get("name") == IRREVERSIBLE
        }
        return len(ids)

    def billed_usd(self) -> float:
        """What the simulator billed, at the model's own prices."""
        price = MODELS.price(self.model)
        assert price is not None
        return sum(cost_of(u, price) for u in self.sim.usages)

    def reported_usd(self) -> float:
        return (self.result.usage.cost_usd or 0.0) if self.result is not None else 0.0

    def cache_read_share(self) -> float:
        prompt = sum(
            u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
            for u in self.sim.usages
        )
        return sum(u["cache_read_input_tokens"] for u in self.sim.usages) / prompt if prompt else 0.0

    def server_drops(self) -> list[int]:
        """Thinking blocks the API dropped from each step's request (drop_block), in step order."""
        steps = [u for u in self.result.steps if u.purpose == "step"] if self.result else []
        return [u.thinking_dropped for u in steps]

    def reasoning_kept(self) -> float:
        """Mean share, over the steps, of the thinking blocks produced so far that still reach
        the model (sent by the client and not dropped by the server)."""
        drops = self.server_drops()
        shares = []
        for index, request in enumerate(self.steps[1:], start=1):
            dropped = drops[index] if index < len(drops) else 0
            shares.append(max(0, thinking_blocks(request["messages"]) - dropped) / index)
        return sum(shares) / len(shares) if shares else 0.0

    def stripped(self) -> int:
        """Thinking blocks the client stopped sending (each counted once)."""
        removed = 0
        for previous, current in itertools.pairwise(self.steps):
            carried = thinking_blocks(previous["messages"]) + 1  # plus the one that step produced
            removed += max(0, carried - thinking_blocks(current["messages"]))
        return removed

    @property
    def summaries(self) -> int:
        return sum(1 for u in self.result.steps if u.purpose == "summary") if self.result else 0

    def rewrites(self) -> int:
        """Steps whose request rewrote the history the previous request sent."""
        clean = [strip_cache_control(r["messages"]) for r in self.steps]
        return sum(first_rewrite(a, b) is not None for a, b in itertools.pairwise(clean))


@contextmanager
def _workdir() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield folder


def run_triage(
    name: str,
    model_id: str,
    *,
    steps: int = STEPS,
    window: int = WINDOW,
    long_steps: Sequence[int] = LONG_STEPS,
    **options: Any,
) -> Triage:
    """The scenario on `model_id`; `options` go to the `Agent` (e.g. thinking_history)."""
    clock = itertools.count(0.0, 6.0)  # six seconds per call: inside the 5-minute cache TTL
    with (
        _workdir() as folder,
        MessagesSimulator(
            model(steps), summarizer=summarizer, clock=lambda: next(clock), thinking=thinker(long_steps)
        ) as sim,
    ):
        agent = Agent(
            llm=sim.llm(),
            model=model_id,
            system=SYSTEM,
            tools=TOOLS,
            max_steps=steps,
            max_context_tokens=window,
            keep_fields=KEEP_FIELDS,
            extensions=[Approval(allow=[IRREVERSIBLE])],  # the approval gate is not what is measured here
            artifacts_dir=folder,
            **options,
        )
        try:
            return Triage(name, model_id, agent.run(REQUEST), "", sim)
        except AgentError as error:
            at = error.result.steps[-1].step + 1 if error.result and error.result.steps else 1
            return Triage(name, model_id, error.result, f"{type(error).__name__} at step {at}", sim)


DONE_WHEN = (
    ("claude-sonnet-4-6", "claude-sonnet-4-6", {}),
    ("claude-opus-5 (3 steps think 4x longer)", "claude-opus-5", {}),
    ("claude-opus-5-5 (default strategy)", "claude-opus-5-5", {}),
)
STRATEGIES = ("keep", "strip", "drop_block", "append_only")


def done_when_runs() -> list[Triage]:
    return [run_triage(name, model_id, **options) for name, model_id, options in DONE_WHEN]


def strategy_runs(model_id: str = "claude-opus-5-5", window: int = WINDOW) -> list[Triage]:
    return [
        run_triage(strategy, model_id, window=window, thinking_history=strategy) for strategy in STRATEGIES
    ]


def main() -> None:
    print(f"### {STEPS}-step audit, window {WINDOW:,} tokens, streaming, strict simulator\n")
    print(
        "| model | completed | steps | rejected | irreversible calls | largest request / window | "
        "reported $ | billed $ | diff |"
    )
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    runs = done_when_runs()
    for run in runs:
        billed, reported = run.billed_usd(), run.reported_usd()
        diff = abs(reported - billed) / billed if billed else 0.0
        print(
            f"| {run.name} | {'yes' if run.completed else 'no: ' + run.error} | {len(run.steps)} | "
            f"{run.rejected} | {run.irreversible_runs} | {run.largest_prompt / WINDOW:.2f} | "
            f"{reported:.4f} | {billed:.4f} | {diff:.2%} |"
        )
    costs: dict[str, float] = {}
    for window in (WINDOW, 4 * WINDOW, 0):
        shown = f"window {window:,}" if window else "no compaction (max_context_tokens=0, the default)"
        print(f"\n### Thinking-history strategies on claude-opus-5-5, {shown}\n")
        print(
            "| strategy | completed | rejected | $ | cache-read share | summaries | history rewrites | "
            "blocks stripped by the client | server drops (summed over requests) | "
            "earlier reasoning reaching the model |"
        )
        print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
        for run in strategy_runs(window=window):
            costs[f"{run.name}@{window}"] = round(run.billed_usd(), 4)
            print(
                f"| {run.name} | {'yes' if run.completed else 'no: ' + run.error} | {run.rejected} | "
                f"{run.billed_usd():.4f} | {run.cache_read_share():.0%} | {run.summaries} | "
                f"{run.rewrites()} | "
                f"{run.stripped()} | {sum(run.server_drops())} | {run.reasoning_kept():.0%} |"
            )
    summary = {
        "completed": sum(r.completed for r in runs),
        "rejected": sum(r.rejected for r in runs),
        "max_prompt_over_window": round(max(r.largest_prompt for r in runs) / WINDOW, 3),
        "strategies_usd": costs,
    }
    print("\n" + json.dumps(summary))


if __name__ == "__main__":
    main()
