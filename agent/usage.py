"""What every model call cost, in tokens and dollars, and a readable line about it.

A prompt is billed in three parts, each at its own price: uncached input, cache writes and
cache reads. Judging a change by `input_tokens` alone once caching is on is the classic
mistake, so every record carries all three and their sum. A model without a known price
costs `None`: a guessed dollar figure is worse than none.

One call can be several samplings, each billed: server-side compaction summarizes before the
answer, an advisor tool runs a second model mid-answer, a server tool loop samples once per
turn, a server-side fallback answers on another model. The response lists them in
`usage.iterations`, and then the top-level counts are only part of the bill: a step costs the
sum of its iterations, each at its own model's prices (`billed_iterations` states the rule).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from anthropic.types import Message

from agent.models import MODELS, ModelTable, Price

__all__ = [
    "BATCH_PRICE_FACTOR",
    "PRICES",
    "ImpossibleUsage",
    "Price",
    "RunUsage",
    "Usage",
    "billed_iterations",
    "cost_of",
    "price_for",
]

log = logging.getLogger("agent")


PRICES: Mapping[str, Price] = MappingProxyType({m.id: m.price for m in MODELS.values() if m.price})
"""Read-only view of the model table's prices (`agent.models.MODELS` is the source)."""


BATCH_PRICE_FACTOR = 0.5
"""What a call answered through the Message Batches API pays of the standard token prices. "All
usage is charged at 50% of standard API prices", input, output, cache writes and reads alike
(https://platform.claude.com/docs/en/build-with-claude/batch-processing, "Pricing"); such a reply
says so in `usage.service_tier == "batch"`, so the price follows the reply, not how it was asked.
Server-tool fees (a web search's per-use fee) are not token prices and are not discounted here."""


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


_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class ImpossibleUsage(ValueError):
    """A token count no server could mean (negative, fractional, NaN, not a number). Booked as
    it stands, -50M tokens is a $250 refund no dollar budget would stop; so the answer counts
    as unreadable: retried, its cost estimated, never free."""


def billed_iterations(usage: Any) -> list[dict[str, Any]]:
    """The sampling iterations `usage` (a response's) lists, as dicts in the API's shape; []
    when it lists none. `ValueError` for a list no server could mean (an entry that is not
    an object, a count that is not a whole number >= 0).

    How they relate to the top-level counts, from the SDK's documentation of
    `usage.iterations` (anthropic 2.15, `BetaUsage`) and responses recorded from the live API
    (../shared/realdata): the top level counts the response's own model answering (its
    `message` entries, or the `fallback_message` entry of a turn a fallback model served) and
    leaves the rest out. A `compaction` entry's tokens "are not included in the top-level
    `usage` fields"; an `advisor_message` entry is the advisor model's sub-inference, billed at
    that model's prices and outside the top level too (recorded on claude-sonnet-5: top-level
    input 2,390 = its two `message` entries, 1,128 + 1,262; the advisor's 2,518 on
    claude-opus-4-8 in neither). So once iterations are listed, the bill is their sum, each at
    the prices of its own `model` (the response's when it names none), and the top level is a
    part of that sum, never added to it. Should the entries ever sum to less than the top
    level, the difference is billed too, at the response's model: a step never costs less
    than its top-level usage.
    """
    listed = _undeclared(usage, "iterations")
    if listed is None:
        return []
    if not isinstance(listed, Sequence) or isinstance(listed, (str, bytes)):
        raise ValueError(f"usage.iterations is not a list: {listed!r}")
    entries = []
    for number, entry in enumerate(listed):
        plain = entry.model_dump() if hasattr(entry, "model_dump") else entry
        if not isinstance(plain, Mapping):
            raise ValueError(f"usage.iterations[{number}] is not an object: {entry!r}")
        for name in (*_COUNTS, "ephemeral_1h_input_tokens"):
            where = plain.get("cache_creation") if name == "ephemeral_1h_input_tokens" else plain
            value = where.get(name) if isinstance(where, Mapping) else None
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"the answer reports usage.iterations[{number}].{name}={value!r}")
        entries.append(dict(plain))
    return entries


class _Tokens(NamedTuple):
    """One sampling's billed counts."""

    uncached: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    output: int = 0

    @classmethod
    def of(cls, counts: Any) -> _Tokens:
        """From a usage record (the SDK's object or an iteration's dict)."""

        def read(source: Any, key: str) -> int:
            value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
            return value if isinstance(value, int) else 0

        creation = counts.get("cache_creation") if isinstance(counts, Mapping) else counts.cache_creation
        return cls(
            read(counts, "input_tokens"),
            read(counts, "cache_read_input_tokens"),
            read(counts, "cache_creation_input_tokens"),
            read(creation, "ephemeral_1h_input_tokens") if creation is not None else 0,
            read(counts, "output_tokens"),
        )

    def api(self) -> dict[str, Any]:
        """The shape `cost_of` reads."""
        return {
            "input_tokens": self.uncached,
            "cache_creation_input_tokens": self.cache_write,
            "cache_creation": {"ephemeral_1h_input_tokens": self.cache_write_1h},
            "cache_read_input_tokens": self.cache_read,
            "output_tokens": self.output,
        }


def _sum(parts: Sequence[_Tokens]) -> _Tokens:
    return _Tokens(*(sum(column) for column in zip(*parts, strict=True))) if parts else _Tokens()


def _unlisted(top: _Tokens, listed: Sequence[_Tokens]) -> _Tokens | None:
    """What the top level counts beyond the listed iterations' sum (None: nothing)."""
    rest = _Tokens(*(max(0, t - s) for t, s in zip(top, _sum(listed), strict=True)))
    if not any(rest):
        return None
    return rest._replace(cache_write=max(rest.cache_write, rest.cache_write_1h))


def _label(entry: Mapping[str, Any], model: str) -> str:
    kind = str(entry.get("type") or "iteration")
    named = entry.get("model")
    return f"{kind}@{named}" if named and named != model else kind


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
    iterations: tuple[str, ...] = ()
    """The samplings billed, as the response's `usage.iterations` listed them (`compaction`,
    `message`, `advisor_message@claude-opus-4-8`: the model where it is not the step's); empty
    when it listed none. The token counts above are their sums: what was billed."""
    request_prompt: int | None = None
    """The prompt of the request as sent, what the token calibration learns from: the first
    iteration's when that is the model reading the request (`message`), 0 when a compaction
    came first (the response gives no count of the request as sent); None when the response
    listed no iterations, as then it is `prompt`."""

    def __post_init__(self) -> None:
        if not isinstance(self.iterations, tuple):  # a record read back from JSON
            object.__setattr__(self, "iterations", tuple(self.iterations))

    @property
    def prompt(self) -> int:
        return self.uncached + self.cache_read + self.cache_write

    @property
    def hit_ratio(self) -> float:
        return self.cache_read / self.prompt if self.prompt else 0.0

    def prompt_sent(self) -> int:
        """`request_prompt` where the response told it apart from what was billed, else `prompt`."""
        return self.prompt if self.request_prompt is None else self.request_prompt

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
        a compatible server may answer with another spelling of the same model. With
        `usage.iterations`, the counts and the cost are the iterations' (`billed_iterations`);
        a step with an iteration on a model of unknown price costs None."""
        u = message.usage
        own = (models.price(model) if model else None) or models.price(message.model)
        top = _Tokens.of(u)
        entries = billed_iterations(u)
        bills: list[tuple[_Tokens, Price | None]] = [(top, own)]
        request_prompt = None
        if entries:
            bills = []
            for entry in entries:
                named = entry.get("model")
                price = own if not named or named == message.model else models.price(str(named))
                bills.append((_Tokens.of(entry), price))
            rest = _unlisted(top, [tokens for tokens, _ in bills])
            if rest is not None:
                bills.append((rest, own))
            first = bills[0][0]
            sent = first.uncached + first.cache_read + first.cache_write
            request_prompt = sent if entries[0].get("type") == "message" else 0
        billed = _sum([tokens for tokens, _ in bills])
        server = u.server_tool_use.model_dump() if u.server_tool_use is not None else {}
        fees = models.fees.cost(server)
        cost = None
        if all(price is not None for _, price in bills):
            tokens_cost = sum(cost_of(tokens.api(), price) for tokens, price in bills if price is not None)
            batch = getattr(u, "service_tier", None) == "batch"
            cost = tokens_cost * (BATCH_PRICE_FACTOR if batch else 1.0) + fees
        tools = tuple(b.name for b in message.content if b.type == "tool_use")
        changes = _undeclared(message, "input_transformations") or []
        dropped = sum(1 for c in changes if isinstance(c, dict) and c.get("type") == "thinking_dropped")
        return cls(
            step,
            message.model,
            effort,
            billed.uncached,
            billed.cache_read,
            billed.cache_write,
            billed.output,
            cost,
            latency_s,
            message.stop_reason,
            tools,
            billed.cache_write_1h,
            thinking_dropped=dropped,
            web_searches=server.get("web_search_requests") or 0,
            web_fetches=server.get("web_fetch_requests") or 0,
            server_tool_fees_usd=fees,
            iterations=tuple(_label(entry, message.model) for entry in entries),
            request_prompt=request_prompt,
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
        if self.iterations and self.iterations != ("message",):
            text += " billed=" + "+".join(self.iterations)
        if self.purpose != "step":
            text += f" ({self.purpose})"
        return text

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["prompt"] = self.prompt
        record["tools"] = list(self.tools)
        record["iterations"] = list(self.iterations)
        for name in ("iterations", "request_prompt"):  # a call sampled once logs as it always did
            if record[name] in ((), [], None):
                del record[name]
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
