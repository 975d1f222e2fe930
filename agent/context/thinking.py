"""Thinking blocks under a history that gets rewritten: what stays legal, and what it costs.

Thinking blocks go back to the API unchanged and in order: on every model a block's
signature covers its text. On models with *preserved thinking* (the 5.5 family,
Fable and Mythos 5.1+; `ModelInfo.preserved_thinking`) it also covers the block's
prefix: tools, system, and every message and block before it. Once anything before
a thinking block changes, that block and every later one are invalid, and removing
only the offending block is not enough, because dropping it shifts the prefix of
the next one.

Pruning and compaction rewrite earlier turns; that is their job. So on those models
the history policy picks one of these strategies (`Agent(thinking_history=...)`):

* ``"keep"``: send every block back unchanged. Right for models whose thinking is
  bound to its content only (Opus 5, Sonnet 4.6): pruning a tool result is harmless.
* ``"strip"``: client-side, remove every thinking block from the first rewritten
  message on. Nothing left can fail its prefix check, and the blocks before the
  rewrite still reach the model. Costs the reasoning after each rewrite.
* ``"drop_block"``: send the history unchanged and let the API drop the invalid blocks
  (`thinking.block_binding.prefix_mismatch_behavior = "drop_block"`, beta header
  `thinking-binding-controls-2026-08-01`); the response lists each drop. The same
  effect as "strip", decided by the server, with the dropped bytes still uploaded.
* ``"append_only"``: prune only when compacting, so the prefix changes once per
  compaction instead of once per pruning batch, and strip as above at that moment.
  Between compactions the history is append-only, as the docs advise.

Which default each model gets, and why, is measured in `benchmarks/thinking.py`.
Every function here is pure: new lists out, the inputs untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.messages import Msg, blocks
from agent.models import ModelInfo

__all__ = [
    "BINDING_BETA",
    "STRATEGIES",
    "THINKING_BLOCKS",
    "default_strategy",
    "first_rewrite",
    "strip_thinking_from",
    "thinking_blocks",
    "thinking_param",
]

STRATEGIES = ("keep", "strip", "drop_block", "append_only")
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
BINDING_BETA = "thinking-binding-controls-2026-08-01"


def default_strategy(info: ModelInfo | None) -> str:
    """ "append_only" where thinking is bound to its prefix (fewest rewrites, so the most
    reasoning kept at the lowest cost: see benchmarks/thinking.py); else "keep"."""
    return "append_only" if info is not None and info.preserved_thinking else "keep"


def first_rewrite(sent: Sequence[Msg], new: Sequence[Msg]) -> int | None:
    """Index of the first message of `new` that is not the message `sent` had there;
    None when `new` only appends to `sent` (the prefix is intact)."""
    for index, (before, after) in enumerate(zip(sent, new, strict=False)):
        if before is not after and before != after:
            return index
    return len(new) if len(new) < len(sent) else None


def strip_thinking_from(messages: Sequence[Msg], start: int) -> list[Msg]:
    """`messages` without thinking blocks in any message at index >= `start`.

    An assistant turn left with nothing (it only thought) goes too: the API merges the
    user turns around it, as it merges any consecutive same-role messages.
    """
    result: list[Msg] = []
    for index, message in enumerate(messages):
        content = blocks(message)
        if index < start or not any(b.get("type") in THINKING_BLOCKS for b in content):
            result.append(message)
            continue
        kept = [b for b in content if b.get("type") not in THINKING_BLOCKS]
        if kept:
            result.append({**message, "content": kept})
    return result


def thinking_blocks(messages: Sequence[Msg]) -> int:
    """How many thinking and redacted_thinking blocks a history carries."""
    return sum(1 for m in messages for b in blocks(m) if b.get("type") in THINKING_BLOCKS)


def thinking_param(
    thinking: Mapping[str, Any] | None, strategy: str
) -> tuple[dict[str, Any] | None, list[str]]:
    """(the request's `thinking`, the betas it needs) for `strategy`: only "drop_block"
    adds anything (adaptive thinking with the binding control, and its beta header)."""
    if strategy != "drop_block":
        return (dict(thinking) if thinking is not None else None), []
    base: dict[str, Any] = dict(thinking) if thinking is not None else {"type": "adaptive"}
    base["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
    return base, [BINDING_BETA]
