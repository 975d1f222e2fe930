"""What each Claude model can do and costs: the one table everything reads, so a new model is one entry.

Lookup is strict: a dated id maps to its family, nothing across versions (`claude-opus-5-5` costs
$4, `claude-opus-5` $5); an unknown model gets no guess. Server-tool fees are booked from each
response's `usage.server_tool_use` (a budget blind to them under-counts a search-heavy run); code
execution, billed by container time that no response reports, is left out.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "EFFORTS",
    "MODELS",
    "SERVER_TOOL_FEES",
    "THINKING_TYPES",
    "ModelInfo",
    "ModelTable",
    "Price",
    "ServerToolFees",
    "base_model",
    "check_effort",
    "check_thinking",
    "refine_from_capabilities",
]


@dataclass(frozen=True)
class ServerToolFees:
    """Dollars per use of the API's server tools (platform pricing page, late 2026)."""

    web_search_per_1k: float = 10.0
    """A search that fails is not billed (and not counted)."""
    web_fetch_per_1k: float = 0.0
    """No fee: the fetched content is billed as input tokens."""
    code_execution_per_hour: float = 0.05
    """Beyond the free allowance; for estimates only, as no response reports container time."""

    def cost(self, server_tool_use: Mapping[str, Any] | None) -> float:
        """Dollars for one response's `usage.server_tool_use` counts."""
        if not server_tool_use:
            return 0.0
        searches = server_tool_use.get("web_search_requests") or 0
        fetches = server_tool_use.get("web_fetch_requests") or 0
        return (searches * self.web_search_per_1k + fetches * self.web_fetch_per_1k) / 1000

    def most(self, request: Mapping[str, Any]) -> float:
        """The most `request` can spend on fees, each declared search or fetch used `max_uses`
        times. One without `max_uses` adds nothing: the budget sees it after the call."""
        per_use = {"web_search": self.web_search_per_1k, "web_fetch": self.web_fetch_per_1k}
        dollars = 0.0
        for declared in request.get("tools") or []:
            uses = declared.get("max_uses") if isinstance(declared, Mapping) else None
            if isinstance(uses, int) and declared.get("type") not in (None, "custom"):
                dollars += uses * per_use.get(str(declared.get("name")), 0.0) / 1000
        return dollars


SERVER_TOOL_FEES = ServerToolFees()


log = logging.getLogger("agent")

EFFORTS: tuple[str, ...] = ("low", "medium", "high", "xhigh", "max")
THINKING_TYPES = ("adaptive", "enabled", "disabled", "between_tools")
_DATED = re.compile(r"-\d{8}$")


def base_model(model: str) -> str:
    """`claude-haiku-4-5-20251001` → `claude-haiku-4-5`; any other id unchanged."""
    return _DATED.sub("", model)


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens."""

    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float

    @classmethod
    def from_base(cls, input: float, output: float) -> Price:
        """The standard multipliers: 5m write 1.25x, 1h write 2x, read 0.1x of input."""
        return cls(input, input * 1.25, input * 2, input * 0.1, output)


@dataclass(frozen=True)
class ModelInfo:
    """What one model family can do and costs (from the platform docs; see WIRE-RULES)."""

    id: str
    context_window: int
    max_output: int
    min_cacheable: int
    """Shortest prompt prefix the model caches; shorter ones are silently not cached."""
    price: Price | None
    efforts: tuple[str, ...] = ()
    """`output_config.effort` values accepted; empty means the parameter is refused."""
    default_effort: str | None = None
    thinking_types: tuple[str, ...] = ("enabled", "disabled")
    thinks_by_default: bool = False
    """A request without `thinking` thinks (adaptively), and thinking shares `max_tokens`."""
    thinking_display: str | None = None
    """The default `thinking.display` ("omitted": blocks come back empty, with a signature)."""
    preserved_thinking: bool = False
    """Each thinking block is bound to its prefix: rewriting it invalidates that block and all later ones."""
    forced_tool_use: bool = True
    """Whether `tool_choice` of type `any` or `tool` is accepted."""

    @property
    def adaptive_only(self) -> bool:
        return self.thinking_types == ("adaptive",)

    def default_max_tokens(self) -> int:
        """Room for thinking plus the answer, at most 32,000 (streaming makes that safe)."""
        return min(self.max_output, 32_000)


_OPUS_PRICE = Price.from_base(5.0, 25.0)
_SONNET_PRICE = Price.from_base(3.0, 15.0)
_UP_TO_MAX = ("low", "medium", "high", "max")
_UP_TO_HIGH = ("low", "medium", "high")
_ADAPTIVE_ONLY = ("adaptive",)
_ADAPTIVE_OR_OFF = ("adaptive", "disabled")
_ANY_THINKING = ("adaptive", "enabled", "disabled")


def _five(
    model_id: str,
    price: Price | None,
    *,
    min_cacheable: int = 512,
    thinking: tuple[str, ...] = _ADAPTIVE_ONLY,
    effort: str = "high",
    display: str | None = "omitted",
) -> ModelInfo:
    """The 5 generation: 1M context, every effort, thinking unless told not to."""
    return ModelInfo(
        model_id, 1_000_000, 128_000, min_cacheable, price, EFFORTS, effort, thinking, True, display
    )


def _bound(
    model_id: str,
    price: Price | None,
    *,
    thinking: tuple[str, ...] = _ADAPTIVE_ONLY,
    effort: str = "high",
    forced_tool_use: bool = False,
) -> ModelInfo:
    """The 5.5 family and Fable/Mythos 5.1+ also bind thinking to its prefix; some refuse forced tool use."""
    info = _five(model_id, price, thinking=thinking, effort=effort)
    return replace(info, preserved_thinking=True, forced_tool_use=forced_tool_use)


# From the platform docs (late 2026, see shared/WIRE-RULES.md; prices from .../about-claude/pricing);
# where they are silent, the permissive value and no price. tests/core/test_today_models.py checks
# every model the SDK names has an entry, and says why the unpriced ones are unpriced.
_FABLE_5_1_PRICE = Price(10.0, 12.5, 20.0, 0.25, 50.0)  # reads 0.025x input, not 0.1x
_FABLE_5_2_PRICE = Price(8.0, 10.0, 16.0, 0.20, 40.0)  # reads 0.025x input, not 0.1x

_DEFAULT_MODELS = (
    _bound("claude-opus-5-5", Price(4.0, 5.0, 8.0, 0.20, 20.0), effort="medium"),
    _bound("claude-sonnet-5-5", Price(2.0, 2.5, 4.0, 0.20, 10.0), thinking=("adaptive", "between_tools")),
    # Haiku 5.5: tiered prices by prompt size (not one Price); thinking and tool_choice rules unconfirmed
    _bound("claude-haiku-5-5", None, thinking=THINKING_TYPES, effort="medium", forced_tool_use=True),
    _bound("claude-fable-5-1", _FABLE_5_1_PRICE),
    _bound("claude-fable-5-2", _FABLE_5_2_PRICE),
    _bound("claude-mythos-5-1", _FABLE_5_1_PRICE),  # limited availability; Fable 5.1's prices
    _bound("claude-mythos-5-2", None),  # limited availability; the pricing page gives it no price
    # Fable 5 = Mythos 5 (two safeguard sets): adaptive thinking only, thinking not yet bound, forced
    # tool use accepted (both changed in 5.1). platform.claude.com/docs/en/models/fable-5/overview
    _five("claude-fable-5", Price.from_base(10.0, 50.0)),
    _five("claude-mythos-5", Price.from_base(10.0, 50.0)),
    # Mythos Preview (invitation only, succeeded by Mythos 5): cache minimum 2,048, no listed price.
    _five("claude-mythos-preview", None, min_cacheable=2048, display=None),
    _five("claude-opus-5", _OPUS_PRICE, thinking=_ADAPTIVE_OR_OFF),
    _five("claude-sonnet-5", Price.from_base(2.0, 10.0), min_cacheable=1024, thinking=_ADAPTIVE_OR_OFF),
    # Opus 4.7, and 4.8 that "builds on" it: adaptive thinking, off when `thinking` is absent (`enabled`
    # is a 400). platform.claude.com/docs/en/build-with-claude/adaptive-thinking
    ModelInfo("claude-opus-4-8", 1_000_000, 128_000, 1024, _OPUS_PRICE, EFFORTS, "high", _ADAPTIVE_OR_OFF),
    ModelInfo("claude-opus-4-7", 1_000_000, 128_000, 2048, _OPUS_PRICE, EFFORTS, "high", _ADAPTIVE_OR_OFF),
    ModelInfo("claude-opus-4-6", 1_000_000, 128_000, 4096, _OPUS_PRICE, _UP_TO_MAX, "high", _ANY_THINKING),
    ModelInfo("claude-opus-4-5", 200_000, 64_000, 4096, _OPUS_PRICE, _UP_TO_HIGH, "high"),
    ModelInfo("claude-sonnet-4-6", 1_000_000, 64_000, 1024, _SONNET_PRICE, _UP_TO_MAX, "high", _ANY_THINKING),
    ModelInfo("claude-sonnet-4-5", 200_000, 64_000, 1024, _SONNET_PRICE),
    ModelInfo("claude-haiku-4-5", 200_000, 64_000, 4096, Price.from_base(1.0, 5.0)),
)


@dataclass(frozen=True)
class ModelTable(Mapping[str, ModelInfo]):
    """Model facts by family id; `lookup` also takes dated ids. Immutable: `register` copies."""

    models: Mapping[str, ModelInfo]
    fees: ServerToolFees = SERVER_TOOL_FEES
    _warned: set[str] = field(default_factory=set, compare=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    @classmethod
    def of(cls, infos: Iterable[ModelInfo]) -> ModelTable:
        return cls({info.id: info for info in infos})

    def __getitem__(self, model: str) -> ModelInfo:
        return self.models[model]

    def __iter__(self) -> Iterator[str]:
        return iter(self.models)

    def __len__(self) -> int:
        return len(self.models)

    def lookup(self, model: str) -> ModelInfo | None:
        """Exact id first, then the id without its `-YYYYMMDD` date; never a neighbour by prefix."""
        return self.models.get(model) or self.models.get(base_model(model))

    def register(self, *infos: ModelInfo) -> ModelTable:
        """A new table with `infos` added (or replacing entries of the same id)."""
        return ModelTable({**self.models, **{info.id: info for info in infos}}, self.fees)

    def with_fees(self, fees: ServerToolFees) -> ModelTable:
        return ModelTable(dict(self.models), fees)

    def with_price(self, model: str, price: Price) -> ModelTable:
        """A new table where `model` costs `price` (a table entry is created if unknown)."""
        known = self.lookup(model)
        info = replace(known, price=price) if known else ModelInfo(model, 200_000, 64_000, 4096, price)
        return self.register(info)

    def price(self, model: str) -> Price | None:
        info = self.lookup(model)
        return info.price if info else None

    def warn_unknown(self, model: str) -> ModelInfo | None:
        """`lookup`, logging once per table and model id what an unknown model leaves unknown."""
        info = self.lookup(model)
        with self._lock:
            if info is None and model not in self._warned:
                self._warned.add(model)
                log.warning(
                    "model %r is not in the model table: its cost, cache minimum, efforts and thinking "
                    "rules are unknown (costs are reported as None). Register it with "
                    "MODELS.register(ModelInfo(...)) and pass models= to the Agent.",
                    model,
                )
        return info


MODELS: ModelTable = ModelTable.of(_DEFAULT_MODELS)


def refine_from_capabilities(models: ModelTable, model: str, capabilities: Any) -> ModelTable:
    """`models` with `model`'s efforts and thinking types as the API's `ModelCapabilities`
    reports them; unchanged for an unknown model or missing capabilities."""
    info = models.lookup(model)
    if info is None or capabilities is None:
        return models

    def supported(group: Any, name: str) -> bool:
        entry = getattr(group, name, None)
        return bool(entry is not None and getattr(entry, "supported", False))

    effort = getattr(capabilities, "effort", None)
    thinking = getattr(getattr(capabilities, "thinking", None), "types", None)
    efforts = tuple(e for e in EFFORTS if effort is not None and effort.supported and supported(effort, e))
    kinds = tuple(k for k in THINKING_TYPES if thinking is not None and supported(thinking, k))
    return models.register(replace(info, efforts=efforts, thinking_types=kinds or info.thinking_types))


def check_effort(effort: str | None, info: ModelInfo | None = None) -> None:
    """An effort the API takes for this model (any known level when the model is unknown)."""
    if effort is None:
        return
    if effort not in EFFORTS:
        raise ValueError(f"effort must be one of {', '.join(EFFORTS)} or None, not {effort!r}")
    if info is not None and effort not in info.efforts:
        allowed = ", ".join(info.efforts) if info.efforts else "none: leave effort=None"
        raise ValueError(f"{info.id} does not take effort={effort!r} (it takes {allowed})")


def check_thinking(thinking: Mapping[str, Any] | None, info: ModelInfo | None = None) -> None:
    """A `thinking` setting this model accepts; None (the model's default) always is."""
    if thinking is None:
        return
    kind = thinking.get("type") if isinstance(thinking, Mapping) else None
    if kind not in THINKING_TYPES:
        raise ValueError(f"thinking must be None or have type {' | '.join(THINKING_TYPES)}, not {thinking!r}")
    display = thinking.get("display")
    if display is not None and display not in ("summarized", "omitted"):
        raise ValueError(f'thinking.display must be "summarized" or "omitted", not {display!r}')
    if kind == "enabled" and not isinstance(thinking.get("budget_tokens"), int):
        raise ValueError('thinking {"type": "enabled"} needs an integer budget_tokens')
    if info is not None and kind not in info.thinking_types:
        allowed = ", ".join(info.thinking_types)
        raise ValueError(f"{info.id} does not accept thinking type {kind!r} (it takes {allowed})")
