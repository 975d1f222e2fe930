"""Every knob of an `Agent`, declared once, with its default and the reason it exists.

A domain agent is a subclass that sets some; a constructor keyword wins over the class, and a
misspelt one gets a did-you-mean. Mistakes that would do nothing (a subclass attribute `systme`, a
keep path no result can match) get a WARNING when built; wrong types, which would fail later and
less clearly, are errors. Features beyond the core take their options on their own `Extension`.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from typing_extensions import dataclass_transform

from agent.context.cache import min_cacheable_tokens
from agent.context.diet import DietPolicy, register_read_artifact
from agent.context.history import ESTIMATE_MARGIN, HistoryPolicy
from agent.context.prune import pruned_next_step
from agent.context.thinking import STRATEGIES, default_strategy
from agent.context.tokens import prompt_estimate, reaches, request_tokens
from agent.errors import did_you_mean
from agent.events import Event
from agent.extension import Extension
from agent.llm import LLM, TokenCounter
from agent.models import MODELS, ModelTable, check_effort, check_thinking
from agent.state import BudgetPolicy
from agent.tools import RunTools, ServerTool, Tool, ToolOutcome, ToolRegistry

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore
    from agent.memory import Memory
    from agent.state import RunState

__all__ = ["AgentConfig", "check_subclass"]

log = logging.getLogger("agent")


def check_subclass(cls: type, options: Iterable[str]) -> None:
    """Warn about a class attribute of an Agent subclass that looks like a misspelt option."""
    known = set(options)
    inherited = {name for base in cls.__mro__[1:] for name in vars(base)}
    for name, value in vars(cls).items():
        if name.startswith("_") or name in known or name in inherited:
            continue
        if inspect.isfunction(value) or isinstance(value, staticmethod | classmethod | property):
            continue
        hint = did_you_mean(name, known, cutoff=0.75)  # an attribute of its own, unless it is close
        if hint:
            log.warning("%s.%s is not an Agent option, so nothing reads it%s", cls.__name__, name, hint)


def _named(value: Any) -> str:
    name = getattr(value, "name", None) or getattr(value, "__name__", None)
    return name if isinstance(name, str) else "my_tool"


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {repr(value)[:80]}"


DEFAULT_RETRIES = 2
DEFAULT_MAX_TOKENS = 16_000
"""`max_tokens` for a model the table does not know."""


@dataclass_transform(kw_only_default=True)
class AgentConfig:
    """Defaults for every option; the constructor takes each as a keyword."""

    model: str = "claude-opus-5"
    """Model id sent with every request (and used to look up its price)."""
    system: str = ""
    """System prompt. Keep it free of timestamps: a changing system prompt kills the cache."""
    tools: Sequence[Tool | Mapping[str, Any] | Callable[..., Any]] = ()
    """Tools (or plain typed functions) the model may call; a definition dict or a `ServerTool` is a
    tool the API runs."""
    extensions: Sequence[Extension] = ()
    """Features beyond the core, each on the seam (`agent.extension`), hooks called in this order."""
    llm: LLM | None = None
    """The model seam; None builds `AnthropicLLM()` from the environment."""
    model_retries: int | None = None
    """Retries of a failed model call (timeout, lost connection, 408/409/429/5xx), each budget-checked
    and its possible cost counted (`agent.retries`); None takes the `llm`'s `max_retries`, else 2."""
    max_steps: int = 20
    """Most model calls in one run; one more raises `StepBudgetExceeded`."""
    max_tokens: int | None = None
    """Output tokens per call, thinking included; None: the model's default (32,000 if allowed, to think)."""
    thinking: Mapping[str, Any] | None = None
    """`thinking` sent with each request, e.g. `{"type": "disabled"}`; None leaves the model's default."""
    thinking_history: str | None = None
    """How thinking blocks survive pruning and compaction (`agent.context.thinking`): "keep", "strip",
    "drop_block" or "append_only"; None: "append_only" where thinking is bound to its prefix, else "keep"."""
    effort: str | None = None
    """`output_config.effort` (low|medium|high|xhigh|max), None to omit; changing it voids cached messages."""
    max_cost_usd: float | None = None
    """Dollar budget for the run, checked before each call; needs a priced model."""
    max_input_tokens: int | None = None
    """Cumulative prompt-token budget for the run, checked before each call."""
    models: ModelTable = MODELS
    """Prices, cache minimums, efforts and thinking rules; `MODELS.register(...)` adds yours (a copy)."""
    on_event: Callable[[Event], None] | None = None
    """Called with each `agent.events` event as it happens, for progress displays."""
    tool_timeout: float | None = 60.0
    """Seconds a tool may run before it becomes an error result (per-tool `timeout` wins)."""
    usage_log: str | Path | None = None
    """A JSONL file that gets one usage record per model call."""
    max_context_tokens: int = 0
    """Compaction threshold in estimated prompt tokens; 0 disables compaction."""
    keep_recent: int = 1
    """Tool-result turns kept verbatim by pruning; older ones become stubs naming their artifact. 0 disables.
    One: the model reads each result whole once, and each step rewrites only one stub."""
    prune_batch: int = 1
    """Prune only once this many turns are prunable: a larger batch moves the cached prefix less often."""
    diet: bool = True
    """Slim tool results before the model reads them; False sends each whole, up to the output cap."""
    keep_fields: Mapping[str, Sequence[str]] = MappingProxyType({})
    """Per-tool field whitelists ({tool_name: [field, "nested.path"]}), on top of `@tool(keep=)`."""
    list_top_n: int = 5
    """Items a slimmed list keeps inline (the rest stay in the artifact)."""
    compress_threshold: int = 2000
    """Results over this many characters are compressed to at most this many (errors may take twice)."""
    artifacts_dir: str | Path | None = "artifacts"
    """Where full results are stored (a folder per run) for the `read_artifact` tool; None keeps none."""
    artifact_min_chars: int = 256
    """Results at least this long are stored in full, cut or not, so a pruned stub can point at them."""
    artifact_max_bytes: int = 10_000_000
    """Size cap of one artifact; a larger result is stored truncated, with a note saying so."""
    artifact_keep_runs: int = 20
    """Run folders kept under `artifacts_dir`; older ones go when a new run stores its first result."""
    cache: bool = True
    """Place prompt-cache breakpoints (`agent.context.cache`); False sends no `cache_control` at all."""
    cache_ttl: str = "5m"
    """Cache lifetime, "5m" or "1h" (a 1h write costs 2x base input instead of 1.25x)."""
    summarizer_model: str | None = None
    """Model for compaction summaries; None uses `model`. A cheaper one is fine."""
    summary_prompt: str | None = None
    """Instructions for the summarizer; None uses `agent.context.compact.SUMMARY_PROMPT`."""
    compact_margin: float = 0.1
    """Compact past `max_context_tokens * (1 - compact_margin)`: room for estimate error and step growth."""
    exact_token_count: bool = False
    """Near the threshold, ask the `llm`'s `count_tokens` (if any), not the estimate: a call per step."""
    memory: Memory | None = None
    """Key/value memory whose keys the model sees each step (pass `tools.memory_tools(memory)` too)."""

    def __init__(self, **options: Any) -> None:
        known = option_names(type(self))
        unknown = sorted(set(options) - known)
        if unknown:
            named = [name + did_you_mean(name, known) for name in unknown]
            raise TypeError(f"unknown Agent option(s): {', '.join(named)}")
        for name, value in options.items():
            setattr(self, name, value)
        self.validate()
        self.extensions = list(self.extensions)
        own = ToolRegistry(self.tools)
        if self.diet:
            register_read_artifact(own, self.artifacts_dir)
        declared: Sequence[Tool | ServerTool] = own.all()
        for ext in self.extensions:
            declared = ext.tools(declared)
        self.registry = ToolRegistry(declared, default_timeout=self.tool_timeout)
        if self.keep_fields or any(t.keep is not None for t in self.registry):
            from agent.context.keep_paths import check_tools  # loaded by the agents that keep fields

            check_tools(self.registry, self.keep_fields)
        if self.llm is None:
            from agent.anthropic_llm import AnthropicLLM  # loaded by the runs that use it

            self.llm = AnthropicLLM()
        llm = self.llm
        if self.model_retries is None:
            self.model_retries = int(getattr(llm, "max_retries", DEFAULT_RETRIES))
        if callable(without := getattr(llm, "without_retries", None)):  # it retries itself (AnthropicLLM)
            llm = without()  # the loop retries instead, so the budgets see every attempt
        self.llm: LLM = llm  # an `AsyncLLM` too, possibly (`agent.steps.ask`)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_subclass(cls, option_names(cls))

    def validate(self) -> None:
        """Reject settings the API or the loop would only reject later (or ignore), and less clearly."""
        tools = self.tools
        if isinstance(tools, str | bytes | Mapping) or callable(tools) or not isinstance(tools, Iterable):
            raise TypeError(
                f"tools must be a list of tools, e.g. tools=[{_named(tools)}], not {_shown(tools)}"
            )
        if not isinstance(self.model, str):
            raise TypeError(f"model must be a str, not {_shown(self.model)}")
        if self.system is not None and not isinstance(self.system, str):
            raise TypeError(f"system must be a str, not {_shown(self.system)}")
        keep_fields = self.keep_fields
        if not isinstance(keep_fields, Mapping):
            raise TypeError(f"keep_fields must map tool names to field lists, not {_shown(keep_fields)}")
        for tool_name, paths in keep_fields.items():
            if isinstance(paths, str | bytes) or not isinstance(paths, Iterable):
                raise TypeError(f"keep_fields[{tool_name!r}] must be a list of field paths, e.g. [{paths!r}]")
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
        for name in ("max_steps", "keep_recent", "prune_batch", "max_context_tokens", "model_retries"):
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
        if not (isinstance(self.compact_margin, int | float) and 0 <= self.compact_margin < 1):
            raise ValueError(f"compact_margin must be in [0, 1), not {self.compact_margin!r}")
        if isinstance(self.extensions, Extension) or any(
            not isinstance(e, Extension) for e in self.extensions
        ):
            raise TypeError("extensions takes a list of agent.extension.Extension instances")
        for model in (self.model, self.summarizer_model or self.model):
            if self.max_cost_usd is not None and self.models.price(model) is None:
                raise ValueError(
                    f"max_cost_usd needs a price for {model!r}: pass models=MODELS.with_price({model!r}, ...)"
                )
        if self.usage_log:
            Path(self.usage_log).parent.mkdir(parents=True, exist_ok=True)

    # -- what the pure context functions are handed: a small policy record, never the agent --

    def history_strategy(self) -> str:
        """The thinking-history strategy in force: the option, else the model's default."""
        return self.thinking_history or default_strategy(self.models.lookup(self.model))

    def output_budget(self) -> int:
        """`max_tokens` for a request: the option, else the model's default (room to think)."""
        if self.max_tokens is not None:
            return self.max_tokens
        info = self.models.lookup(self.model)
        return info.default_max_tokens() if info else DEFAULT_MAX_TOKENS

    def budget_policy(self) -> BudgetPolicy:
        return BudgetPolicy(
            self.model, self.models, self.max_input_tokens, self.max_cost_usd, self.cache, self.cache_ttl
        )

    def history_policy(self) -> HistoryPolicy:
        return HistoryPolicy(
            model=self.model,
            models=self.models,
            strategy=self.history_strategy(),
            keep_recent=self.keep_recent,
            prune_batch=self.prune_batch,
            max_context_tokens=self.max_context_tokens,
            compact_margin=self.compact_margin,
            summarizer_model=self.summarizer_model or self.model,
            summary_prompt=self.summary_prompt,
            max_tokens=self.output_budget(),
            memory=self.memory,
            on_event=self.on_event,
            irreversible=frozenset(t.name for t in self.registry if t.irreversible),
            protected=self.protected_tools(),
            artifacts=self.diet and self.artifacts_dir is not None,
            cacheable=self.cacheable if self.cache else None,
        )

    def diet_policy(self, outcome: ToolOutcome) -> DietPolicy:
        """The policy for `outcome`'s tool: `keep_fields` wins over `@tool(keep=)`."""
        return DietPolicy.for_tool(
            outcome.tool,
            self.keep_fields.get(outcome.call.name),
            self.list_top_n,
            self.compress_threshold,
            on=self.diet,
            min_chars=self.artifact_min_chars,
        )

    def artifact_store(self, state: RunState) -> ArtifactStore | None:
        """This run's artifact store, created on first use; None when artifacts are off."""
        if not self.diet or self.artifacts_dir is None:
            return None
        if state.artifacts is None:
            from agent.context.artifacts import ArtifactStore

            state.artifacts = ArtifactStore.for_run(
                self.artifacts_dir,
                state.run_id,
                max_bytes=self.artifact_max_bytes,
                keep_runs=self.artifact_keep_runs,
            )
        return state.artifacts

    def tools_for(self, state: RunState) -> ToolRegistry | RunTools:
        """The registry, with `read_artifact` reading through this run's own store first."""
        declared = self.registry.get("read_artifact")
        if declared is None or not self.diet or self.artifacts_dir is None:
            return self.registry
        if state.tools is None:
            from agent.context.read_artifact import for_run

            own = for_run(declared, self.artifacts_dir, lambda: self.artifact_store(state))
            state.tools = RunTools(self.registry, {"read_artifact": own})
        tools: RunTools = state.tools
        return tools

    def cacheable(self, messages: Sequence[dict[str, Any]], tools: Sequence[Any] | None = None) -> bool:
        """Whether a request with this history reaches the cache minimum, encoding no more than the
        answer takes (`tools`: the declarations, when the caller has them already)."""
        declared = self.registry.declarations() if tools is None else tools
        parts = itertools.chain(declared, [self.system] if self.system else [], messages)
        return reaches(parts, min_cacheable_tokens(self.model, self.models) * ESTIMATE_MARGIN)

    def newest_pruned(self, state: RunState, request: Mapping[str, Any]) -> bool:
        """Whether the next step's pruning stubs a result the newest turn holds; not while the history
        before it is too short to cache (pruning waits then too, and the newest results are read again)."""
        if self.history_strategy() == "append_only":
            return False
        protected = self.protected_tools().__contains__
        return pruned_next_step(
            state.messages, self.keep_recent, self.prune_batch, protected
        ) and self.cacheable(request["messages"][:-1], request.get("tools", ()))

    def protected_tools(self) -> frozenset[str]:
        """The tools whose results pruning never touches: `never_prune` or `irreversible`."""
        return frozenset(t.name for t in self.registry if t.irreversible or t.never_prune)

    def measure(self, state: RunState, candidate: Sequence[dict[str, Any]]) -> int:
        """Estimated prompt tokens of this step's request with `candidate` as its history."""
        counter = self.llm if self.exact_token_count and isinstance(self.llm, TokenCounter) else None
        near = int(self.max_context_tokens * (1 - self.compact_margin) * 0.8)
        request = self.build_request(state.with_messages(list(candidate)))  # type: ignore[attr-defined]
        raw = prompt_estimate(request, state.sizes.chars)
        state.measured = (state.step, request, raw)
        return request_tokens(request, state.calibration, counter, exact_from=near, raw=raw)


def option_names(cls: type) -> set[str]:
    """Every option an `AgentConfig` (sub)class declares: its annotated class attributes."""
    return {
        name
        for klass in cls.__mro__
        if issubclass(klass, AgentConfig)
        for name in vars(klass).get("__annotations__", {})
    }
