"""What every model call cost, in tokens and dollars, and a readable line about it.

A prompt is billed in three parts, each at its own price: uncached input, cache writes and
cache reads. Judging a change by `input_tokens` alone once caching is on is the classic
mistake, so every record carries all three and their sum. A model without a known price
costs `None`: a guessed dollar figure is worse than none.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from anthropic.types import Message

from agent.models import MODELS, ModelTable, Price

__all__ = ["PRICES", "Price", "RunUsage", "Usage", "cost_of", "price_for"]

log = logging.getLogger("agent")


PRICES: Mapping[str, Price] = MappingProxyType({m.id: m.price for m in MODELS.values() if m.price})
"""Read-only view of the model table's prices (`agent.models.MODELS` is the source)."""


def price_for(model: str, models: ModelTable = MODELS) -> Price | None:
    """The price of `model` (dated ids such as `claude-haiku-4-5-20251001` included), or None."""
    return models.price(model)


def cost_of(usage: Mapping[str, Any], price: Price) -> float:
    """Dollars for one usage record in the API's shape, each part at its own price."""
    write = usage.get("cache_creation_input_tokens") or 0
    write_1h = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
    dollars: float = (
        usage["input_tokens"] * price.input
        + (write - write_1h) * price.cache_write_5m
        + write_1h * price.cache_write_1h
        + (usage.get("cache_read_input_tokens") or 0) * price.cache_read
        + usage["output_tokens"] * price.output
    ) / 1_000_000
    return dollars


@dataclass(frozen=True)
class Usage:
    """One model call: what it read, wrote, produced and cost."""

    step: int
    model: str
    effort: str | None
    uncached: int
    cache_read: int
    cache_write: int
    output: int
    cost_usd: float | None
    latency_s: float = 0.0
    stop_reason: str | None = None
    tools: tuple[str, ...] = ()
    cache_write_1h: int = 0
    """The part of `cache_write` with the 1-hour TTL (priced 2x, not 1.25x)."""
    purpose: str = "step"
    """Why the call was made: "step" (the loop), "summary" (compaction) or "failed_attempt"."""
    thinking_dropped: int = 0
    """Thinking blocks the API dropped (`input_transformations`): reasoning the model never saw."""
    web_searches: int = 0
    web_fetches: int = 0
    server_tool_fees_usd: float = 0.0
    """The part of `cost_usd` that server tools cost beyond tokens."""

    @property
    def prompt(self) -> int:
        return self.uncached + self.cache_read + self.cache_write

    @property
    def hit_ratio(self) -> float:
        return self.cache_read / self.prompt if self.prompt else 0.0

    @classmethod
    def from_message(
        cls,
        step: int,
        message: Message,
        *,
        effort: str | None = None,
        latency_s: float = 0.0,
        models: ModelTable = MODELS,
        model: str | None = None,
    ) -> Usage:
        """The usage of `message`, priced as `model` (the id that was asked for) when given:
        a compatible server may answer with another spelling of the same model."""
        u = message.usage
        write = u.cache_creation_input_tokens or 0
        write_1h = (u.cache_creation.ephemeral_1h_input_tokens or 0) if u.cache_creation else 0
        read = u.cache_read_input_tokens or 0
        price = models.price(model) if model else None
        price = price or models.price(message.model)
        server = u.server_tool_use.model_dump() if u.server_tool_use is not None else {}
        fees = models.fees.cost(server)
        parts = {
            "input_tokens": u.input_tokens,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_1h_input_tokens": write_1h},
            "cache_read_input_tokens": read,
            "output_tokens": u.output_tokens,
        }
        cost = cost_of(parts, price) + fees if price is not None else None
        tools = tuple(b.name for b in message.content if b.type == "tool_use")
        changes = _undeclared(message, "input_transformations") or []
        dropped = sum(1 for c in changes if isinstance(c, dict) and c.get("type") == "thinking_dropped")
        return cls(
            step,
            message.model,
            effort,
            u.input_tokens,
            read,
            write,
            u.output_tokens,
            cost,
            latency_s,
            message.stop_reason,
            tools,
            write_1h,
            thinking_dropped=dropped,
            web_searches=server.get("web_search_requests") or 0,
            web_fetches=server.get("web_fetch_requests") or 0,
            server_tool_fees_usd=fees,
        )

    def line(self, run_hit_ratio: float | None = None) -> str:
        """`[step 2] prompt=3,412 (read=2,980 write=0 uncached=432) out=120 $0.0031 step_hit=87%`,
        then `run_hit=60%` when given: labelled apart, as a run total read as a step's misleads."""
        cost = "$?" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        text = (
            f"[step {self.step}] prompt={self.prompt:,} (read={self.cache_read:,} "
            f"write={self.cache_write:,} uncached={self.uncached:,}) out={self.output:,} {cost}"
        )
        text += f" step_hit={self.hit_ratio:.0%}"
        if run_hit_ratio is not None:
            text += f" run_hit={run_hit_ratio:.0%}"
        if self.tools:
            text += " tools=" + ",".join(self.tools)
        if self.web_searches or self.web_fetches:
            text += f" searches={self.web_searches} fetches={self.web_fetches}"
            text += f" (fees ${self.server_tool_fees_usd:.4f})"
        if self.thinking_dropped:
            text += f" thinking_dropped={self.thinking_dropped}"
        if self.purpose != "step":
            text += f" ({self.purpose})"
        return text

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["prompt"] = self.prompt
        record["tools"] = list(self.tools)
        return record


class _Totals:
    """Running sums over a run's records, folding in only those added since the last read. A
    list replaced, shortened or rewritten at its newest counted record is summed again from
    the start, so a total is never stale."""

    def __init__(self) -> None:
        self.reset(None)

    def reset(self, source: list[Usage] | None) -> None:
        self.source = source
        self.counted = 0
        self.last: Usage | None = None
        self.uncached = self.cache_read = self.cache_write = self.output = self.prompt = 0
        self.largest_prompt = 0
        self.cost = 0.0
        self.unpriced = 0

    def sync(self, steps: list[Usage]) -> _Totals:
        if (
            steps is not self.source
            or len(steps) < self.counted
            or (self.counted and steps[self.counted - 1] is not self.last)
        ):
            self.reset(steps)
        for step in steps[self.counted :]:
            self.uncached += step.uncached
            self.cache_read += step.cache_read
            self.cache_write += step.cache_write
            self.output += step.output
            prompt = step.prompt
            self.prompt += prompt
            self.largest_prompt = max(self.largest_prompt, prompt)
            if step.cost_usd is None:
                self.unpriced += 1
            else:
                self.cost += step.cost_usd
        if len(steps) > self.counted:
            self.counted, self.last = len(steps), steps[-1]
        return self


@dataclass
class RunUsage:
    """Per-step records of a run and their totals (kept as running sums: a step's budget check
    and log line cost the same at step 5 as at step 500)."""

    steps: list[Usage] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._totals = _Totals()

    @property
    def totals(self) -> _Totals:
        return self._totals.sync(self.steps)

    def add(self, record: Usage, jsonl: Path | None = None, run_id: str | None = None) -> None:
        """Book `record`; with `jsonl`, also append it there as one JSON line, tagged with
        `run_id` so one log can hold many runs and still be read (and charted) run by run."""
        self.steps.append(record)
        if log.isEnabledFor(logging.INFO):
            log.info(record.line(self.cache_hit_ratio))
        if jsonl is not None:
            try:
                with jsonl.open("a", encoding="utf-8") as out:
                    line = {**record.to_json(), **({"run_id": run_id} if run_id else {})}
                    out.write(json.dumps(line, sort_keys=True) + "\n")
            except OSError as error:  # a log that cannot be written must not end a paid-for run
                log.warning("usage log %s not written: %s", jsonl, error)

    @property
    def uncached(self) -> int:
        return self.totals.uncached

    @property
    def cache_read(self) -> int:
        return self.totals.cache_read

    @property
    def cache_write(self) -> int:
        return self.totals.cache_write

    @property
    def output(self) -> int:
        return self.totals.output

    @property
    def prompt(self) -> int:
        """Cumulative prompt tokens over all calls (what `max_input_tokens` limits)."""
        return self.totals.prompt

    @property
    def cost_usd(self) -> float | None:
        """Total dollars, or None as soon as one step's model had no known price."""
        totals = self.totals
        return None if totals.unpriced else totals.cost

    @property
    def priced_cost_usd(self) -> float:
        """Dollars of the calls with a known price (an unpriced call adds 0): what a budget counts."""
        return self.totals.cost

    @property
    def cache_hit_ratio(self) -> float:
        totals = self.totals
        return totals.cache_read / totals.prompt if totals.prompt else 0.0

    @property
    def largest_prompt(self) -> int:
        return self.totals.largest_prompt

    def summary(self) -> str:
        cost = "?" if self.cost_usd is None else f"{self.cost_usd:.4f}"
        return (
            f"{len(self.steps)} calls, prompt={self.prompt:,} (read={self.cache_read:,} "
            f"write={self.cache_write:,} uncached={self.uncached:,}) out={self.output:,} "
            f"${cost} run_hit={self.cache_hit_ratio:.0%}"
        )


def _undeclared(message: Any, key: str) -> Any:
    """A response field the SDK's types may not declare yet: a declared field, else pydantic's
    extras (read directly: `getattr` misses slowly, through a raised AttributeError)."""
    if not hasattr(message, "__pydantic_extra__"):
        return getattr(message, key, None)
    declared = message.__dict__.get(key)
    extra = message.__pydantic_extra__
    return declared if declared is not None else extra.get(key) if isinstance(extra, dict) else None
