"""Context management: the API's own context editing, asked for on every request.

    Agent(tools=[...], extensions=[ContextManagement()])                     # the documented defaults
    Agent(..., extensions=[ContextManagement(trigger=30_000, keep=5, clear_at_least=5_000)])
    Agent(..., extensions=[ContextManagement(clear_thinking=2)])             # thinking too
    Agent(..., extensions=[ContextManagement(clear_tool_uses=False, compact_at=80_000)])  # compaction

Each request gets `context_management: {"edits": [...]}` and the beta header
`context-management-2025-06-27`. The API then clears the oldest tool results of a prompt
past `trigger` input tokens (keeping the newest `keep` tool uses) before the model reads
it, and, with `clear_thinking`, the thinking of all but the newest assistant turns. These
clearing edits never touch the history on this side: they happen on the server, again on
every request, and what was cleared shows only in the reply's `context_management.applied_edits`.
The facts this relies on, with their sources, are in docs/context-management.md.

The safe default: the results of the agent's `irreversible` and `never_prune` tools are
always in `exclude_tools`. With the documented defaults alone, the ticket a run opened
first (an irreversible call) is among the oldest results, the first to be cleared, and the
final answer can no longer quote its id; here it is never cleared, whatever the options say.
`exclude_tools` adds names to that list; nothing takes them off it.

Why an extension: it is a `request` hook (the body, the beta; for compaction a `history`
hook too) with its options on its own constructor, and the core's own levers (pruning,
compaction) stay as they are; the two can be combined or compared (`python -m
benchmarks.economics`). The extension keeps no state: each hook reads what it needs from
the request or the history in front of it.

Server-side compaction (`compact_at=`, the `compact_20260112` edit, beta `compact-2026-01-12`):
past that many input tokens the API summarizes the conversation into a `compaction` block at
the start of its reply and goes on from it; on later requests it drops everything before
that block. So the `history` hook keeps what the API reads: the opening user message (a
history starts with one) and everything from the newest compaction block on. That is what
the core's own compaction does with its summary, and it keeps the core's token estimates,
budgets and pruning on the prompt the API actually bills. The summary is the server's, and
nothing tells it what must survive; so each irreversible or `never_prune` result the dropped
part held is carried on verbatim, as text after the first `tool_result`s past the block (the
core's compaction carries them the same way), and a run can never forget that it already
refunded the order. The summary's own cost arrives in `usage.iterations` and is billed.
`pause_after_compaction` is not offered: the loop would take its `stop_reason` for an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from agent.context.compact import ACTION_PREFIX, carried_actions
from agent.extension import Extension
from agent.messages import blocks

if TYPE_CHECKING:
    from agent.state import RunState
    from agent.tools import ToolRegistry

__all__ = [
    "BETA",
    "CLEAR_THINKING",
    "CLEAR_TOOL_USES",
    "COMPACT",
    "COMPACT_BETA",
    "ContextManagement",
    "after_compaction",
    "protected_tools",
    "with_edits",
]

BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
COMPACT_MINIMUM = 50_000
"""The lowest compaction trigger the API takes (its default is 150,000)."""
KEY = "context_management"
Msg = dict[str, Any]


def protected_tools(registry: ToolRegistry) -> set[str]:
    """The agent's tools whose results must never be cleared: `irreversible` and `never_prune`."""
    return {t.name for t in registry if t.irreversible or t.never_prune}


def with_edits(request: Mapping[str, Any], edits: list[dict[str, Any]]) -> dict[str, Any]:
    """`request` asking for `edits`, with the beta headers they need (each once): compaction
    its own, the clearing edits theirs. `context_management` is a body key only the SDK's beta
    methods declare; `AnthropicLLM` sends it through `extra_body` (`BETA_BODY_KEYS`), so the
    request stays wire-shaped for every other hook."""
    needed = [COMPACT_BETA] if any(e.get("type") == COMPACT for e in edits) else []
    if not edits or any(e.get("type") != COMPACT for e in edits):
        needed.insert(0, BETA)
    betas = list(request.get("betas") or ())
    return {**request, KEY: {"edits": edits}, "betas": [*betas, *(b for b in needed if b not in betas)]}


def after_compaction(messages: list[Msg], protected: Iterable[str] = ()) -> list[Msg]:
    """What the API reads of `messages`: the opening user message, then everything from the
    newest `compaction` block with content on; `messages` itself when nothing comes before it.
    The results of `protected` tools in the part left out are carried on verbatim, as text
    blocks at the end of the first user message after the block (a new list; nothing edited)."""
    found = _newest_compaction(messages)
    if found is None:
        return messages
    i, j = found
    opening = messages[0] if _plain_user(messages[0]) else None
    if j == 0 and i <= (1 if opening is not None else 0):
        return messages  # nothing before the block but the opening: already as the API reads it
    dropped = [*messages[:i], {**messages[i], "content": blocks(messages[i])[:j]}]
    kept = [{**messages[i], "content": blocks(messages[i])[j:]}, *messages[i + 1 :]]
    names = set(protected)
    earlier = [
        t for m in dropped for b in blocks(m) if (t := str(b.get("text", ""))).startswith(ACTION_PREFIX)
    ]
    carried = list(dict.fromkeys([*earlier, *carried_actions(dropped, names.__contains__)]))
    at = next((k for k, m in enumerate(kept) if m.get("role") == "user"), None)
    if carried and at is not None:
        texts = [{"type": "text", "text": t} for t in carried]
        kept[at] = {**kept[at], "content": [*blocks(kept[at]), *texts]}
    return [*([opening] if opening is not None and i > 0 else []), *kept]


def _newest_compaction(messages: list[Msg]) -> tuple[int, int] | None:
    """(message, block) index of the newest `compaction` block with content (a null one is a
    failed compaction, which the API ignores)."""
    for i in range(len(messages) - 1, -1, -1):
        content = blocks(messages[i])
        for j in range(len(content) - 1, -1, -1):
            if content[j].get("type") == "compaction" and content[j].get("content"):
                return i, j
    return None


def _plain_user(message: Msg) -> bool:
    return message.get("role") == "user" and all(b.get("type") != "tool_result" for b in blocks(message))


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
    only this many newest assistant turns ("all": keep every one, the cache-friendly choice);
    `compact_at`: compact on the server once the prompt passes this many input tokens (at
    least 50,000), with `compact_instructions` in place of the API's own summary prompt.
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
        compact_at: int | None = None,
        compact_instructions: str | None = None,
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
        if not clear_tool_uses and clear_thinking is None and compact_at is None:
            raise ValueError(
                "ContextManagement: with clear_tool_uses=False, say clear_thinking=N or 'all' or compact_at=N"
            )
        self.clear_tool_uses, self.clear_thinking = clear_tool_uses, clear_thinking
        self.compact_at = None if compact_at is None else _count("compact_at", compact_at, COMPACT_MINIMUM)
        if compact_instructions is not None and (
            not isinstance(compact_instructions, str) or not compact_instructions.strip()
        ):
            raise ValueError(
                f"ContextManagement: compact_instructions is a non-empty text, not {compact_instructions!r}"
            )
        if compact_instructions is not None and compact_at is None:
            raise ValueError("ContextManagement: compact_instructions needs compact_at=N (at least 50,000)")
        self.compact_instructions = compact_instructions

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
        if self.compact_at is not None:
            compact: dict[str, Any] = {
                "type": COMPACT,
                "trigger": {"type": "input_tokens", "value": self.compact_at},
            }
            if self.compact_instructions is not None:
                compact["instructions"] = self.compact_instructions
            edits.append(compact)
        return edits

    def history(self, messages: list[Msg], run: RunState) -> list[Msg]:
        if self.compact_at is None:
            return messages
        return after_compaction(messages, protected_tools(run.agent.registry))

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        return with_edits(request, self.edits(run.agent.registry))
