"""Thinking blocks in the simulator: when a request thinks, how blocks are signed, what they are bound to.

Today's models think unless told not to, and send their thinking back as blocks the
client must return untouched. The framework's history code (pruning, compaction,
stripping) is only trustworthy if a witness rejects what the API rejects, so the
simulator signs every thinking block it writes and checks every one it gets back:

* On every model a block is bound to its content: altered `thinking` text (or a
  signature this simulator never made) is a 400 "Invalid `signature` in `thinking` block".
* On models with preserved thinking (`ModelInfo.preserved_thinking`) a block is also
  bound to its prefix: the top-level `system`, `tools` and every non-thinking block
  before it, compared without `cache_control`, `None` fields or key order, a string
  content counted as its one text block, tools with `defer_loading` left out, and the
  messages counted from the latest `compaction` block. Thinking blocks themselves are
  not part of the prefix; instead each records the block before it, and the blocks a
  request keeps must be an unbroken run of the sequence each was produced after
  (removing blocks from the start, from the end, or all of them stays valid; leaving
  one out between others, moving one, or putting back one removed earlier does not).
  A failing block and every later one are invalid: a 400, or, with
  `thinking.block_binding.prefix_mismatch_behavior = "drop_block"` (beta header
  `thinking-binding-controls-2026-08-01`), removed before the prompt is billed and
  listed in `input_transformations`.

Signatures (what they record, how they are checked) are in `agent.testing.signatures`.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.models import MODELS
from agent.testing.signatures import THINKING_BLOCKS, Seal, Signer, compact

__all__ = ["BINDING_BETA", "Chain", "Checked", "Mode", "Prefix", "as_blocks", "check_history", "mode_of"]

BINDING_BETA = "thinking-binding-controls-2026-08-01"


@dataclass(frozen=True)
class Mode:
    """How one request thinks, read from its body, headers and the model table."""

    on: bool
    omitted: bool
    """`display` is "omitted": thinking text comes back empty (the signature stays)."""
    budget: int | None
    preserved: bool
    drop_block: bool
    beta: bool
    """The `anthropic-beta` header carries `thinking-binding-controls-2026-08-01`."""


def mode_of(body: Mapping[str, Any], headers: Mapping[str, str]) -> Mode | str:
    """The request's thinking mode, or the 400 message for a binding control sent without its beta."""
    info = MODELS.lookup(str(body.get("model")))
    thinking = body.get("thinking")
    config = thinking if isinstance(thinking, Mapping) else {}
    kind = config.get("type")
    on = kind in ("adaptive", "enabled") or (thinking is None and bool(info and info.thinks_by_default))
    display = config.get("display") or (info.thinking_display if info else None) or "summarized"
    betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
    binding = config.get("block_binding")
    if binding is not None and BINDING_BETA not in betas:
        return "thinking.block_binding: Extra inputs are not permitted"
    budget = config.get("budget_tokens") if kind == "enabled" else None
    return Mode(
        on=on,
        omitted=display == "omitted",
        budget=budget if isinstance(budget, int) else None,
        preserved=bool(info and info.preserved_thinking),
        drop_block=isinstance(binding, Mapping) and binding.get("prefix_mismatch_behavior") == "drop_block",
        beta=BINDING_BETA in betas,
    )


def _clean(value: Any) -> Any:
    """A value as the prefix check compares it: no `cache_control`, no `None` fields."""
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if k != "cache_control" and v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()[:24]


def as_blocks(content: Any) -> list[Any]:
    """A message's content as blocks (a string is one text block; an empty one, none)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


@dataclass
class Prefix:
    """The conversation before a point, as the prefix check sees it, hashed as it grows."""

    tools: str
    system: str
    messages: Any = field(default_factory=hashlib.sha256)

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Prefix:
        tools = [
            t for t in body.get("tools") or [] if not (isinstance(t, Mapping) and t.get("defer_loading"))
        ]
        return cls(_digest(compact(_clean(tools))), _digest(compact(_clean(as_blocks(body.get("system"))))))

    def add(self, role: Any, block: Any) -> None:
        if isinstance(block, Mapping) and block.get("type") in THINKING_BLOCKS:
            return  # thinking is bound by its chain, not by the prefix
        if isinstance(block, Mapping) and block.get("type") == "compaction":
            self.messages = hashlib.sha256()  # the check starts at the latest compaction
        self.messages.update(f"{role}\x1f{compact(_clean(block))}\x1e".encode())

    def digest(self) -> str:
        return _digest(self.tools, self.system, self.messages.hexdigest())


@dataclass
class Chain:
    """The thinking blocks the model sees, in order: what the next block is produced after."""

    last: str | None = None
    count: int = 0

    def keep(self, seal: Seal) -> None:
        self.last, self.count = seal.id, self.count + 1


def _mismatch(seal: Seal, prefix: Prefix, chain: Chain) -> str | None:
    """Why a correctly signed block fails the prefix check (None: it passes)."""
    if seal.tools != prefix.tools:
        return "The `tools` differ from the ones the block was produced with."
    if seal.system != prefix.system:
        return "The `system` prompt differs from the one the block was produced with."
    if chain.count and (seal.prev != chain.last or chain.count > seal.depth):
        return "A thinking block before it was left out, moved or put back."
    if seal.prefix != prefix.digest():
        return "A message before the block differs from the one it was produced after."
    return None


@dataclass
class Checked:
    """The history after the thinking checks: the prompt the model sees, and what was dropped."""

    body: dict[str, Any]
    mode: Mode
    prefix: Prefix
    chain: Chain
    dropped: list[str]
    error: str | None = None

    def transformations(self) -> list[dict[str, Any]] | None:
        """`input_transformations` for the response: only with the beta header, `[]` when none."""
        if not self.mode.beta:
            return None
        return [
            {"type": "thinking_dropped", "path": path, "reason": "prefix_binding_mismatch"}
            for path in self.dropped
        ]


def _bound_error(path: str, reason: str, mode: Mode) -> str:
    message = (
        f"{path}: Invalid `signature` in `thinking` block. The block is bound to a different "
        "conversation. Remove the block, or set "
        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
    )
    if not mode.beta:
        message += f" That setting requires the `{BINDING_BETA}` value in the `anthropic-beta` header."
    return f"{message} {reason}"


def check_history(body: Mapping[str, Any], signer: Signer, mode: Mode) -> Checked:
    """Check every thinking block `body` sends back; drop the failing ones under `drop_block`."""
    prefix, chain = Prefix.of(body), Chain()
    dropped: list[tuple[int, int]] = []
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, Mapping):
            continue
        role, content = message.get("role"), message.get("content")
        for j, block in enumerate(as_blocks(content)):
            if not (isinstance(block, Mapping) and block.get("type") in THINKING_BLOCKS):
                prefix.add(role, block)
                continue
            path = f"messages.{i}.content.{j}"
            seal = signer.open(block)
            if seal is None:
                error = f"{path}: Invalid `signature` in `{block.get('type')}` block."
                return Checked(dict(body), mode, prefix, chain, [], error)
            reason = _mismatch(seal, prefix, chain) if mode.preserved else None
            if reason is None:
                chain.keep(seal)
            elif mode.drop_block:
                dropped.append((i, j))
            else:
                return Checked(dict(body), mode, prefix, chain, [], _bound_error(path, reason, mode))
    kept = _without(body, set(dropped))
    return Checked(kept, mode, prefix, chain, [f"messages.{i}.content.{j}" for i, j in dropped])


def _without(body: Mapping[str, Any], dropped: set[tuple[int, int]]) -> dict[str, Any]:
    if not dropped:
        return dict(body)
    result = copy.deepcopy(dict(body))
    for i, message in enumerate(result["messages"]):
        if isinstance(message.get("content"), list):
            message["content"] = [b for j, b in enumerate(message["content"]) if (i, j) not in dropped]
    return result
