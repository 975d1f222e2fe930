"""Context management: the API's own context editing, asked for on every request.

    Agent(tools=[...], extensions=[ContextManagement()])                     # the documented defaults
    Agent(..., extensions=[ContextManagement(trigger=30_000, keep=5, clear_at_least=5_000)])
    Agent(..., extensions=[ContextManagement(clear_thinking=2)])             # thinking too

Each request gets `context_management: {"edits": [...]}` and the beta header
`context-management-2025-06-27`. The API then clears the oldest tool results of a prompt
past `trigger` input tokens (keeping the newest `keep` tool uses) before the model reads
it, and, with `clear_thinking`, the thinking of all but the newest assistant turns. The
history on this side is never touched: the edit happens on the server, again on every
request, and what was cleared shows only in the reply's `context_management.applied_edits`.
The facts this relies on, with their sources, are in docs/context-management.md.

The safe default: the results of the agent's `irreversible` and `never_prune` tools are
always in `exclude_tools`. With the documented defaults alone, the ticket a run opened
first (an irreversible call) is among the oldest results, the first to be cleared, and the
final answer can no longer quote its id; here it is never cleared, whatever the options say.
`exclude_tools` adds names to that list; nothing takes them off it.

Why an extension: it is one more `request` hook (the body, the beta) with its options on
its own constructor, and the core's own levers (pruning, compaction) stay as they are; the
two can be combined or compared (`python -m benchmarks.economics`). The extension keeps no
state: the server applies the edit to each request as it comes.

Not here: server-side compaction (`compact_20260112`): the reply's `compaction` block would
have to be kept in the history and sent back, and the simulator does not model it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from agent.extension import Extension

if TYPE_CHECKING:
    from agent.state import RunState
    from agent.tools import ToolRegistry

__all__ = [
    "BETA",
    "CLEAR_THINKING",
    "CLEAR_TOOL_USES",
    "ContextManagement",
    "protected_tools",
    "with_edits",
]

BETA = "context-management-2025-06-27"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
KEY = "context_management"


def protected_tools(registry: ToolRegistry) -> set[str]:
    """The agent's tools whose results must never be cleared: `irreversible` and `never_prune`."""
    return {t.name for t in registry if t.irreversible or t.never_prune}


def with_edits(request: Mapping[str, Any], edits: list[dict[str, Any]]) -> dict[str, Any]:
    """`request` asking for `edits`, with the beta header (each once). `context_management` is a
    body key only the SDK's beta methods declare; `AnthropicLLM` sends it through `extra_body`
    (`BETA_BODY_KEYS`), so the request stays wire-shaped for every other hook."""
    betas = list(request.get("betas") or ())
    return {**request, KEY: {"edits": edits}, "betas": betas if BETA in betas else [*betas, BETA]}


def _count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"ContextManagement: {name} must be an integer of at least {least}, not {value!r}")
    return value


def _names(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"ContextManagement: {name} is a list of tool names, e.g. [{value!r}]")
    names = tuple(value)
    if not all(isinstance(n, str) and n for n in names):
        raise TypeError(f"ContextManagement: {name} is a list of tool names, not {names!r}")
    return names


class ContextManagement(Extension):
    """The API's tool-result clearing (and optionally thinking clearing) on every request.

    `trigger`: clear once the prompt exceeds this many input tokens (or, with
    `trigger_on="tool_uses"`, holds more tool uses than this); `keep`: the newest tool uses
    kept; `clear_at_least`: clear only when at least this many tokens go (each clearing
    invalidates the prompt cache from the first cleared result on); `exclude_tools`: more
    tools never cleared, besides the agent's irreversible and `never_prune` ones;
    `clear_tool_inputs`: also clear the calls' inputs (True, or the tools whose inputs go);
    `clear_tool_uses=False` sends no tool clearing; `clear_thinking`: keep the thinking of
    only this many newest assistant turns ("all": keep every one, the cache-friendly choice).
    """

    def __init__(
        self,
        *,
        trigger: int = 100_000,
        trigger_on: Literal["input_tokens", "tool_uses"] = "input_tokens",
        keep: int = 3,
        clear_at_least: int | None = None,
        exclude_tools: Iterable[str] = (),
        clear_tool_inputs: bool | Iterable[str] = False,
        clear_tool_uses: bool = True,
        clear_thinking: int | Literal["all"] | None = None,
    ) -> None:
        if trigger_on not in ("input_tokens", "tool_uses"):
            raise ValueError(
                f'ContextManagement: trigger_on is "input_tokens" or "tool_uses", not {trigger_on!r}'
            )
        self.trigger, self.trigger_on = _count("trigger", trigger, 1), trigger_on
        self.keep = _count("keep", keep, 0)
        self.clear_at_least = None if clear_at_least is None else _count("clear_at_least", clear_at_least, 1)
        self.exclude_tools = _names("exclude_tools", exclude_tools)
        self.clear_tool_inputs: bool | tuple[str, ...] = (
            clear_tool_inputs
            if isinstance(clear_tool_inputs, bool)
            else _names("clear_tool_inputs", clear_tool_inputs)
        )
        if clear_thinking is not None and clear_thinking != "all":
            _count("clear_thinking", clear_thinking, 1)
        if not clear_tool_uses and clear_thinking is None:
            raise ValueError("ContextManagement: with clear_tool_uses=False, say clear_thinking=N or 'all'")
        self.clear_tool_uses, self.clear_thinking = clear_tool_uses, clear_thinking

    def edits(self, registry: ToolRegistry) -> list[dict[str, Any]]:
        """The `edits` list for an agent with these tools (thinking first, as the API requires)."""
        edits: list[dict[str, Any]] = []
        if self.clear_thinking is not None:
            keep = (
                "all"
                if self.clear_thinking == "all"
                else {"type": "thinking_turns", "value": self.clear_thinking}
            )
            edits.append({"type": CLEAR_THINKING, "keep": keep})
        if self.clear_tool_uses:
            edit: dict[str, Any] = {
                "type": CLEAR_TOOL_USES,
                "trigger": {"type": self.trigger_on, "value": self.trigger},
                "keep": {"type": "tool_uses", "value": self.keep},
            }
            if self.clear_at_least is not None:
                edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
            excluded = sorted(protected_tools(registry) | set(self.exclude_tools))
            if excluded:
                edit["exclude_tools"] = excluded
            inputs = self.clear_tool_inputs
            if inputs:
                edit["clear_tool_inputs"] = True if isinstance(inputs, bool) else sorted(set(inputs))
            edits.append(edit)
        return edits

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        return with_edits(request, self.edits(run.agent.registry))
