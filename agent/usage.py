"""What every model call cost, in tokens and dollars, and a readable line about it.

Every record carries uncached input, cache writes and cache reads, each at its own price: judging
by `input_tokens` alone once caching is on is the classic mistake. One call can be several billed
samplings (`billed_iterations`). An unknown price is `None`: a guessed dollar figure is worse.
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
    "TOKEN_COUNTS",
    "ImpossibleUsage",
    "Price",
    "RunUsage",
    "Usage",
    "billed_iterations",
    "cost_of",
    "price_for",
    "undeclared",
]

log = logging.getLogger("agent")


PRICES: Mapping[str, Price] = MappingProxyType({m.id: m.price for m in MODELS.values() if m.price})
"""Read-only view of the model table's prices (`agent.models.MODELS` is the source)."""


BATCH_PRICE_FACTOR = 0.5
"""The share of token prices a batch answer pays (`usage.service_tier == "batch"`: the reply decides);
server-tool fees are not discounted. platform.claude.com/docs/en/build-with-claude/batch-processing"""


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


TOKEN_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class ImpossibleUsage(ValueError):
    """A token count no server could mean (negative, fractional, NaN): -50M tokens booked is a
    $250 refund no budget would stop, so the answer is unreadable: retried, estimated, never free."""


def billed_iterations(usage: Any) -> list[dict[str, Any]]:
    """The sampling iterations a response's `usage` lists, as API-shaped dicts ([] for none);
    `ValueError` for an entry that is not an object or a count not a whole number >= 0.

    The top level counts only the response's own model answering (`message`, `fallback_message`),
    not `compaction` or `advisor_message` entries (SDK docs of `BetaUsage.iterations`; live replies
    in ../shared/realdata). So the bill is the entries' sum, each at its `model`'s prices, plus
    whatever the top level counts beyond them: a step never costs less than its top-level usage.
    """
    listed = undeclared(usage, "iterations")
    if listed is None:
        return []
    if not isinstance(listed, Sequence) or isinstance(listed, (str, bytes)):
        raise ValueError(f"usage.iterations is not a list: {listed!r}")
    entries = []
    for number, entry in enumerate(listed):
        plain = entry.model_dump() if hasattr(entry, "model_dump") else entry
        if not isinstance(plain, Mapping):
            raise ValueError(f"usage.iterations[{number}] is not an object: {entry!r}")
        for name in (*TOKEN_COUNTS, "ephemeral_1h_input_tokens"):
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
    """The samplings billed as `usage.iterations` listed them (`compaction`, `message`,
    `advisor_message@claude-opus-4-8`); empty for none. The counts above are their sums."""
    request_prompt: int | None = None
    """The request's prompt as sent, for the token calibration: the first iteration's when it is
    a `message`, 0 after a compaction (unreported), None without iterations (then `prompt`)."""

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
        """The usage of `message`, priced as `model` (the id asked for: a compatible server may
        spell it otherwise); with iterations, theirs, None if one's model has no known price."""
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
        changes = undeclared(message, "input_transformations") or []
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
            tuple(b.name for b in message.content if b.type == "tool_use"),
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
        then `run_hit=60%` if given: labelled apart, as a run total read as a step's misleads."""
        cost = "$?" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        text = (
            f"[step {self.step}] prompt={self.prompt:,} (read={self.cache_read:,} "
            f"write={self.cache_write:,} uncached={self.uncached:,}) out={self.output:,} {cost}"
            f" step_hit={self.hit_ratio:.0%}"
        )
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


@dataclass
class RunUsage:
    """Per-step records of a run and their totals, summed when asked: a list a caller replaced,
    shortened or edited is counted as it now is."""

    steps: list[Usage] = field(default_factory=list)

    def add(self, record: Usage, jsonl: Path | None = None, run_id: str | None = None) -> None:
        """Book `record`; with `jsonl`, also append it there tagged with `run_id` (a log of many runs)."""
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
        return sum(s.uncached for s in self.steps)

    @property
    def cache_read(self) -> int:
        return sum(s.cache_read for s in self.steps)

    @property
    def cache_write(self) -> int:
        return sum(s.cache_write for s in self.steps)

    @property
    def output(self) -> int:
        return sum(s.output for s in self.steps)

    @property
    def prompt(self) -> int:
        """Cumulative prompt tokens over all calls (what `max_input_tokens` limits)."""
        return sum(s.prompt for s in self.steps)

    @property
    def cost_usd(self) -> float | None:
        """Total dollars, or None as soon as one step's model had no known price."""
        return None if any(s.cost_usd is None for s in self.steps) else self.priced_cost_usd

    @property
    def priced_cost_usd(self) -> float:
        """Dollars of the calls with a known price (an unpriced call adds 0): what a budget counts."""
        return sum((s.cost_usd or 0.0 for s in self.steps), 0.0)

    @property
    def cache_hit_ratio(self) -> float:
        prompt = self.prompt
        return self.cache_read / prompt if prompt else 0.0

    @property
    def largest_prompt(self) -> int:
        return max((s.prompt for s in self.steps), default=0)

    def summary(self) -> str:
        cost = "?" if self.cost_usd is None else f"{self.cost_usd:.4f}"
        return (
            f"{len(self.steps)} calls, prompt={self.prompt:,} (read={self.cache_read:,} "
            f"write={self.cache_write:,} uncached={self.uncached:,}) out={self.output:,} "
            f"${cost} run_hit={self.cache_hit_ratio:.0%}"
        )


def undeclared(message: Any, key: str) -> Any:
    """A field the SDK may not declare yet, else pydantic's extras (a `getattr` miss raises: slow)."""
    if not hasattr(message, "__pydantic_extra__"):
        return getattr(message, key, None)
    declared = message.__dict__.get(key)
    extra = message.__pydantic_extra__
    return declared if declared is not None else extra.get(key) if isinstance(extra, dict) else None
