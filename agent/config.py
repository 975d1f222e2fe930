"""Every knob of an `Agent`, with its default and the reason it exists.

Each field is a class attribute, so a domain agent is a subclass that sets some of
them (`system = "..."`, `tools = [...]`), and each can also be passed to the
constructor, which wins over the class. `AgentOptions` is the same list for type
checkers, so `Agent(max_step=3)` is caught before it runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypedDict

from agent.context.thinking import STRATEGIES, default_strategy
from agent.mcp.connector import RemoteMcp
from agent.models import EFFORTS, MODELS, THINKING_TYPES, ModelInfo, ModelTable
from agent.setup_checks import check_option_types, check_subclass, did_you_mean
from agent.tool_search.deferral import SearchMode

if TYPE_CHECKING:
    from agent.approval import Approver
    from agent.events import Event
    from agent.llm import LLM
    from agent.memory import Memory
    from agent.registry import Tool
    from agent.server_tools import ServerTool

__all__ = ["EFFORTS", "AgentConfig", "AgentOptions", "check_effort", "check_thinking"]


class AgentOptions(TypedDict, total=False):
    model: str
    system: str
    tools: Sequence[Tool | ServerTool | Mapping[str, Any] | Callable[..., Any]]
    llm: LLM | None
    model_retries: int | None
    max_steps: int
    max_tokens: int | None
    thinking: Mapping[str, Any] | None
    thinking_history: str | None
    effort: str | None
    max_cost_usd: float | None
    max_input_tokens: int | None
    models: ModelTable
    on_event: Callable[[Event], None] | None
    tool_timeout: float | None
    defer_tools_above: int | None
    tool_search: SearchMode
    usage_log: str | Path | None
    request_log: str | Path | None
    max_context_tokens: int
    keep_recent: int
    prune_batch: int
    diet: bool
    keep_fields: Mapping[str, Sequence[str]]
    list_top_n: int
    compress_threshold: int
    summarize_with: str | None
    artifacts_dir: str | Path | None
    artifact_min_chars: int
    artifact_max_bytes: int
    artifact_keep_runs: int
    cache: bool
    cache_ttl: str
    summarizer_model: str | None
    summary_prompt: str | None
    compact_margin: float
    exact_token_count: bool
    memory: Memory | None
    approver: Approver | None
    allow: Sequence[str]
    mcp_servers: Sequence[RemoteMcp]


class AgentConfig:
    """Defaults for every option; see `AgentOptions` for the constructor's keywords."""

    model: str = "claude-opus-5"
    """Model id sent with every request (and used to look up its price)."""
    system: str = ""
    """System prompt. Keep it free of timestamps: a changing system prompt kills the cache."""
    tools: Sequence[Tool | ServerTool | Mapping[str, Any] | Callable[..., Any]] = ()
    """Tools (or plain typed functions) the model may call."""
    llm: LLM | None = None
    """The model seam; None builds `AnthropicLLM()` from the environment."""
    model_retries: int | None = None
    """How often a failed model call (timeout, lost connection, 408/409/429/5xx) is tried
    again, each attempt budget-checked and its possible cost counted (`agent.retry`). None
    takes the `llm`'s own `max_retries` (2 for a default `AnthropicLLM`), else 2."""
    max_steps: int = 20
    """Most model calls in one run; one more raises `StepBudgetExceeded`."""
    max_tokens: int | None = None
    """Output tokens per call, thinking included. None takes the model's default from the
    table (32,000 where the model allows it: room to think, and `AnthropicLLM` streams)."""
    thinking: Mapping[str, Any] | None = None
    """`thinking` sent with each request: None leaves the model's default (Opus 5 and later
    think adaptively unless told not to), `{"type": "adaptive", "display": "summarized"}`,
    or `{"type": "disabled"}`. Checked against the model table at construction."""
    thinking_history: str | None = None
    """How thinking blocks survive pruning and compaction (`agent.context.thinking`): "keep",
    "strip", "drop_block" or "append_only". None picks the model's default: "append_only"
    where thinking is bound to its prefix (the 5.5 family), else "keep"."""
    effort: str | None = None
    """`output_config.effort` (low|medium|high|xhigh|max), None to omit. Changing it
    between steps invalidates the cached messages (tools and system stay cached)."""
    max_cost_usd: float | None = None
    """Dollar budget for the run, checked before each call; needs a priced model."""
    max_input_tokens: int | None = None
    """Cumulative prompt-token budget for the run, checked before each call."""
    models: ModelTable = MODELS
    """The model table (prices, cache minimums, efforts, thinking rules); `MODELS.register(...)`
    returns a copy that knows your own model."""
    on_event: Callable[[Event], None] | None = None
    """Called with each `agent.events` event as it happens: step boundaries, text and
    thinking deltas (streamed), tool calls and results. For progress displays."""
    tool_timeout: float | None = 60.0
    """Seconds a tool may run before it becomes an error result (per-tool `timeout` wins)."""
    defer_tools_above: int | None = 30
    """With more tools than this, those not made with `@tool(defer=False)` are declared
    `defer_loading: true` and found through tool search (`agent.tool_search`); None never."""
    tool_search: SearchMode = "client"
    """Who finds deferred tools: "client" (our `search_tools` tool, BM25 + graph), or the API's
    server-side tool search tool, "bm25" or "regex"."""
    usage_log: str | Path | None = None
    """A JSONL file that gets one usage record per model call."""
    request_log: str | Path | None = None
    """A JSONL file that gets the exact request of every step, after pruning and compaction
    (delta-encoded; `python -m agent.inspect FILE --step N` prints one; `agent.request_log`)."""
    max_context_tokens: int = 0
    """Compaction threshold in estimated prompt tokens; 0 disables compaction."""
    keep_recent: int = 3
    """Tool-result turns kept verbatim by pruning; older ones become one-line stubs. 0 disables."""
    prune_batch: int = 4
    """Prune only once this many turns are prunable, so the cached prefix moves rarely."""
    diet: bool = True
    """Slim tool results before the model reads them (whitelist, compressor, artifacts).
    False sends every result whole (bounded only by the registry's output cap)."""
    keep_fields: Mapping[str, Sequence[str]] = MappingProxyType({})
    """Per-tool field whitelists ({tool_name: [field, "nested.path"]}), on top of `@tool(keep=)`."""
    list_top_n: int = 5
    """Items a slimmed list keeps inline (the rest stay in the artifact)."""
    compress_threshold: int = 2000
    """Results longer than this many characters are compressed to at most this many (shorter
    ones are sent untouched); error results may take twice as much."""
    summarize_with: str | None = None
    """Opt-in: a small model (e.g. "claude-haiku-4-5") that summarises long free text (prose, tickets,
    pages) instead of cutting it by rules; never code, diffs, config, logs or traces. Cached by
    content, billed and budgeted like any call (purpose "tool_summary"), the full text kept as an
    artifact (`agent.context.summary_calls`)."""
    artifacts_dir: str | Path | None = "artifacts"
    """Where full results are stored for read-back (one folder per run, and the model gets
    the `read_artifact` tool); None keeps no artifacts."""
    artifact_min_chars: int = 256
    """Results at least this long are stored in full, cut or not, so a pruned stub can point at them."""
    artifact_max_bytes: int = 10_000_000
    """Size cap of one artifact; a larger result is stored truncated, with a note saying so."""
    artifact_keep_runs: int = 20
    """Run folders kept under `artifacts_dir`; older ones go when a new run stores its first result."""
    cache: bool = True
    """Place prompt-cache breakpoints (system, previous request's end, pruning frontier,
    newest message; see `agent.context.cache`). False sends no `cache_control` at all."""
    cache_ttl: str = "5m"
    """Cache lifetime, "5m" or "1h" (a 1h write costs 2x base input instead of 1.25x)."""
    summarizer_model: str | None = None
    """Model for compaction summaries; None uses `model`. A cheaper one is fine."""
    summary_prompt: str | None = None
    """Instructions for the summarizer; None uses `agent.context.compact.SUMMARY_PROMPT`."""
    compact_margin: float = 0.1
    """Compact once the estimated request passes `max_context_tokens * (1 - compact_margin)`:
    room for estimation error and for the step's own growth."""
    exact_token_count: bool = False
    """Near the threshold, ask the API's `count_tokens` (if the `llm` offers it) instead of
    trusting the estimate; costs one extra call per step while near it."""
    memory: Memory | None = None
    """Key/value memory whose keys the model sees each step (pass `tools.memory_tools(memory)` too)."""
    approver: Approver | None = None
    """Asked before an `irreversible` or `requires_approval` tool runs: `approve(call)` returns
    True, or False / a reason to deny. None denies every gated call not in `allow`."""
    allow: Sequence[str] = ()
    """Gated tools trusted to run without asking (the allow list)."""
    mcp_servers: Sequence[RemoteMcp] = ()
    """Remote MCP servers the API itself connects to and calls (`agent.mcp.RemoteMcp`; the
    MCP connector beta). Local servers: pass `mcp_tools(...)` in `tools` instead."""

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(AgentOptions.__annotations__))
        if unknown:
            named = [name + did_you_mean(name, AgentOptions.__annotations__) for name in unknown]
            raise TypeError(f"unknown Agent option(s): {', '.join(named)}")
        for name, value in options.items():
            setattr(self, name, value)
        self.validate()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_subclass(cls, AgentOptions.__annotations__)

    def validate(self) -> None:
        """Reject settings the API or the loop would only reject later, and less clearly."""
        check_option_types(self)
        info = self.models.warn_unknown(self.model)
        check_effort(self.effort, info)
        check_thinking(self.thinking, info)
        strategy = self.history_strategy()
        if strategy not in STRATEGIES:
            raise ValueError(
                f"thinking_history must be one of {', '.join(STRATEGIES)} or None, not {strategy!r}"
            )
        if strategy == "drop_block" and not (info and info.preserved_thinking):
            raise ValueError(
                f'thinking_history="drop_block" needs a model with preserved thinking, not {self.model}'
            )
        if self.tool_search not in ("client", "bm25", "regex"):
            raise ValueError(f'tool_search must be "client", "bm25" or "regex", not {self.tool_search!r}')
        names = ("max_steps", "keep_recent", "prune_batch", "max_context_tokens", "model_retries")
        for name in (*names, "defer_tools_above"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise TypeError(f"{name} must be an int, not {type(value).__name__} {value!r}")
        for name in ("max_cost_usd", "max_input_tokens", "tool_timeout"):
            value = getattr(self, name)
            finite = isinstance(value, int | float) and math.isfinite(value)
            if value is not None and not (finite and value > 0):
                raise ValueError(f"{name} must be a positive, finite number or None, not {value!r}")
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        limit = info.max_output if info else None
        if self.max_tokens is not None and not 1 <= self.max_tokens <= (limit or self.max_tokens):
            raise ValueError(f"max_tokens must be 1..{limit:,} for {self.model}, not {self.max_tokens}")
        if self.cache_ttl not in ("5m", "1h"):
            raise ValueError(f'cache_ttl must be "5m" or "1h", not {self.cache_ttl!r}')
        if self.keep_recent < 0 or self.prune_batch < 1 or self.max_context_tokens < 0:
            raise ValueError("keep_recent and max_context_tokens must be >= 0, prune_batch >= 1")
        if self.compress_threshold < 200:
            raise ValueError("compress_threshold must be at least 200 characters")
        if isinstance(self.mcp_servers, str | Mapping) or any(
            not isinstance(s, RemoteMcp) for s in self.mcp_servers
        ):
            raise TypeError("mcp_servers takes a list of agent.mcp.RemoteMcp(name=..., url=...)")
        if not (isinstance(self.compact_margin, int | float) and 0 <= self.compact_margin < 1):
            raise ValueError(f"compact_margin must be in [0, 1), not {self.compact_margin!r}")

    def history_strategy(self) -> str:
        """The thinking-history strategy in force (the option, else the model's default)."""
        return self.thinking_history or default_strategy(self.models.lookup(self.model))

    def output_budget(self) -> int:
        """`max_tokens` for a request: the option, else the model's default (room to think)."""
        if self.max_tokens is not None:
            return self.max_tokens
        info = self.models.lookup(self.model)
        return info.default_max_tokens() if info else DEFAULT_MAX_TOKENS


DEFAULT_MAX_TOKENS = 16_000
"""`max_tokens` for a model the table does not know."""


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
        raise ValueError(
            f"{info.id} does not accept thinking type {kind!r} (it takes {', '.join(info.thinking_types)})"
        )
