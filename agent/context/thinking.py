"""Thinking blocks under a history that gets rewritten: what stays legal, and what it costs.

On models with *preserved thinking* a block's signature also covers its prefix, so once pruning
or compaction rewrites an earlier turn, that block and every later one are invalid. The
`thinking_history` strategy: "keep" sends every block back (right where only the text is
signed); "strip" removes the blocks from the first rewrite on; "drop_block" lets the API drop
the invalid ones (beta `BINDING_BETA`); "append_only" prunes only when compacting, then strips.
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
    """ "append_only" where thinking is bound to its prefix (the most reasoning kept at the lowest
    cost, benchmarks/thinking.py); else "keep"."""
    return "append_only" if info is not None and info.preserved_thinking else "keep"


def first_rewrite(sent: Sequence[Msg], new: Sequence[Msg]) -> int | None:
    """Index of the first message of `new` unlike `sent`'s there; None when `new` only appends."""
    for index, (before, after) in enumerate(zip(sent, new, strict=False)):
        if before is not after and before != after:
            return index
    return len(new) if len(new) < len(sent) else None


def strip_thinking_from(messages: Sequence[Msg], start: int) -> list[Msg]:
    """`messages` without thinking blocks from index `start` on. An assistant turn left empty
    goes too: the API merges the user turns around it, as it merges any same-role neighbours."""
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
    """(the request's `thinking`, the betas it needs): only "drop_block" adds anything."""
    if strategy != "drop_block":
        return (dict(thinking) if thinking is not None else None), []
    base: dict[str, Any] = dict(thinking) if thinking is not None else {"type": "adaptive"}
    base["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
    return base, [BINDING_BETA]
