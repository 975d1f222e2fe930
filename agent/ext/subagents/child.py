"""One child run as its parent sees it: its budgets, its share of the ledger, its transcript.

A child is an ordinary `Agent` run; what makes it a *child* is only what it is given before it
starts and what is taken from it after it ends:

- its budgets, lowered to what the parent has left (`bounded`): a shallow copy of the agent
  whose `max_cost_usd` / `max_input_tokens` are the smaller of its own and the parent's rest,
  so the core's own check, before every attempt, keeps the child inside the parent's budget.
  The caller's agent object is never changed.
- a view of the parent's never-twice ledger (`shared_ledger`): the same dicts, journal and
  key, so the child's `Approval` enters its verdicts, `started` markers and results where the
  parent's session writes them down, and a resumed parent's child finds them there. Only the
  tool lookup is the child's own, so its calls are fingerprinted on its tools' validated input.
- `ChildRun` (a run extension of the child, ahead of its own) collects every turn for the
  transcript, and refuses an irreversible call that an earlier life of the parent started and
  never finished (a live model names its calls anew each life, so the ledger's match on the
  call's id cannot find it; the fingerprint can).
- its usage, rolled up into the parent's (`roll_up`), each record marked with the sub-agent's
  name, so the parent's `result.usage`, usage log, session and budget count it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.ext.approval.ledger import LEDGER, CallKey, Ledger
from agent.extension import Extension
from agent.tools import ToolCall, ToolOutcome

if TYPE_CHECKING:
    from agent.loop import Agent
    from agent.state import RunState
    from agent.usage import RunUsage

__all__ = ["KEY", "ChildRun", "Watch", "bounded", "roll_up", "shared_ledger", "transcript_text"]

KEY = "subagents"
"""Key in the child's `RunState.extras`: its `Watch`."""


@dataclass
class Watch:
    """What one child run keeps for its parent (in the child's `extras[KEY]`)."""

    name: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    """Every message of the run as it was appended, before any pruning or compaction."""
    unfinished: frozenset[CallKey] = frozenset()
    """Irreversible calls an earlier life started and never finished (id, fingerprint)."""


def bounded(agent: Agent, parent: Agent, spent_usd: float, spent_tokens: int) -> Agent | str:
    """`agent` with its budgets lowered to what `parent` has left, or why nothing is left.
    A copy only when a budget changes; the caller's agent is never edited."""
    caps: dict[str, float | int] = {}
    if parent.max_cost_usd is not None:
        left_usd = parent.max_cost_usd - spent_usd
        if left_usd <= 0:
            return f"max_cost_usd={parent.max_cost_usd} of the parent is spent (${spent_usd:.4f})"
        if agent.max_cost_usd is None or left_usd < agent.max_cost_usd:
            caps["max_cost_usd"] = left_usd
    if parent.max_input_tokens is not None:
        left_tokens = parent.max_input_tokens - spent_tokens
        if left_tokens <= 0:
            return f"max_input_tokens={parent.max_input_tokens:,} of the parent is spent ({spent_tokens:,})"
        if agent.max_input_tokens is None or left_tokens < agent.max_input_tokens:
            caps["max_input_tokens"] = left_tokens
    if not caps:
        return agent
    lowered = copy.copy(agent)  # configuration only: the registry, llm and extensions are shared
    for name, value in caps.items():
        setattr(lowered, name, value)
    return lowered


def unpriced_models(agent: Agent) -> list[str]:
    """The models `agent` may bill that have no price: a parent's dollar budget cannot cover them."""
    models = {agent.model, agent.summarizer_model or agent.model}
    return sorted(m for m in models if agent.models.price(m) is None)


def shared_ledger(parent: Ledger, child: Agent) -> Ledger:
    """The parent's ledger as the child's run uses it: every entry shared (and journalled where
    the parent's are), calls fingerprinted with the child's tools."""
    return Ledger(
        key=parent.key,
        approvals=parent.approvals,
        started=parent.started,
        results=parent.results,
        done=parent.done,
        seen=parent.seen,
        journal=parent.journal,
        lookup=child.registry.get,
        canonical=parent.canonical,
    )


def unfinished(ledger: Ledger) -> frozenset[CallKey]:
    """Irreversible calls started and never given a result, as the ledger holds them now."""
    return frozenset(
        key for key, irreversible in ledger.started.items() if irreversible and key not in ledger.results
    )


class ChildRun(Extension):
    """The child's side of a delegation: collects its turns, and never repeats an irreversible
    call an earlier life of the parent left unfinished. Keeps nothing itself (`extras[KEY]`)."""

    async def start(self, run: RunState) -> None:
        watch: Watch = run.extras[KEY]
        watch.turns[:] = [*run.messages]

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        watch: Watch = run.extras[KEY]
        tool_ = run.agent.registry.get(call.name) if run.agent is not None else None
        if not watch.unfinished or tool_ is None or not tool_.irreversible or tool_.idempotent:
            return None
        ledger: Ledger = run.extras[LEDGER]  # the shared view, set before the run
        fp = ledger.fingerprint(call)
        if not any(key[1] == fp and key not in ledger.results for key in watch.unfinished):
            return None
        return ToolOutcome(
            call,
            f"outcome unknown: {call.name} with these exact arguments was started by sub-agent "
            f"{watch.name} in an earlier life of this run, which stopped before its result was "
            "recorded. It was NOT run again, so it is done at most once. Check whether it took "
            "effect (look it up) before deciding anything; do not simply retry it.",
            True,
            tool=tool_,
        )

    def record(self, turns: Sequence[dict[str, Any]], run: RunState) -> None:
        watch: Watch = run.extras[KEY]
        watch.turns.extend(turns)


def roll_up(child: RunUsage, run: RunState, name: str) -> None:
    """Book each of the child's usage records in the parent's run (and its usage log), at the
    parent's step, its purpose marked `subagent:<name>` (`subagent:<name>:summary` and so on
    for the child's calls that were not steps)."""
    parent = run.agent
    log = Path(parent.usage_log) if parent is not None and parent.usage_log else None
    for record in child.steps:
        purpose = f"subagent:{name}" if record.purpose == "step" else f"subagent:{name}:{record.purpose}"
        run.usage.add(replace(record, step=run.step, purpose=purpose), log, run.run_id)


def transcript_text(name: str, task: str, turns: Sequence[Mapping[str, Any]], footer: str) -> str:
    """The child's whole conversation as plain text (for `read_artifact`'s line ranges and
    patterns): a header per message, each call with its input, each result under its call."""
    names: dict[str, str] = {}
    lines = [f"# sub-agent {name}", f"task: {task}", footer, ""]
    for number, message in enumerate(turns, start=1):
        role = str(message.get("role", "?"))
        lines.append(f"## {number} {role}")
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in items:
            lines.extend(_block_lines(block, names))
        lines.append("")
    return "\n".join(lines)


def _block_lines(block: Any, names: dict[str, str]) -> list[str]:
    if not isinstance(block, Mapping):
        return [str(block)]
    kind = block.get("type")
    if kind == "text":
        return [str(block.get("text", ""))]
    if kind == "tool_use":
        names[str(block.get("id"))] = str(block.get("name"))
        arguments = json.dumps(block.get("input"), ensure_ascii=False, sort_keys=True, default=str)
        return [f"-> {block.get('name')} {arguments}"]
    if kind == "tool_result":
        error = " (error)" if block.get("is_error") else ""
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(b.get("text", b)) if isinstance(b, Mapping) else str(b) for b in content)
        return [f"<- {names.get(str(block.get('tool_use_id')), '?')}{error}:", str(content)]
    if kind == "thinking":
        return ["[thinking] " + str(block.get("thinking", ""))]
    return [json.dumps(block, ensure_ascii=False, sort_keys=True, default=str)]
