"""What the simulated model writes: its thinking, the policy's answer, and both cut to `max_tokens`.

On today's models `max_tokens` is a hard limit on thinking *plus* text, and thinking
is billed as output. A framework that budgets `max_tokens` for the answer alone gets
turns that stop on `max_tokens` with nothing but a thinking block; this module makes
the simulator produce exactly those turns, so the framework is tested against them.

* Thinking on (`Mode.on`) and no thinking block in the policy's answer: a thinking
  block of `think()` tokens comes first (none when `think()` is 0: an adaptive model
  may choose not to think). A policy may script blocks itself:
  `{"type": "thinking", "thinking": "text", "tokens": n}` or
  `{"type": "redacted_thinking", "tokens": n}` (`tokens` defaults to `think()`).
  Thinking off: scripted thinking blocks are left out, as the model would not write them.
* Display "omitted": the block's text comes back empty; the signature stays.
* `budget_tokens` (type "enabled") caps each block's hidden length.
* Costs: a thinking block its hidden length, any other block `block_tokens(block)`.
* Blocks are kept in order while they fit. The first that does not is cut: thinking to
  the tokens left (signature kept), text to the longest prefix that fits, a `tool_use`
  to the top-level input fields that fit whole (the API returns an incomplete tool
  call, never a made-up one; none at all when not even its name fits). Then
  `stop_reason` is "max_tokens" and `output_tokens == max_tokens`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.testing.cache_model import block_tokens
from agent.testing.signatures import THINKING_BLOCKS, Seal, Signer
from agent.testing.thinking import Checked, Mode

__all__ = ["SUMMARY", "Output", "compose", "sign"]

SUMMARY = "Simulated reasoning about the request."
"""The text of an unscripted thinking block under display "summarized"."""


@dataclass
class Piece:
    block: dict[str, Any]
    tokens: int
    text: str = ""
    """A thinking block's visible text (what its signature binds)."""


@dataclass
class Output:
    pieces: list[Piece]
    stop_reason: str
    output_tokens: int
    thinking_tokens: int | None


def _thinking_piece(block: dict[str, Any], mode: Mode, think: Callable[[], int]) -> Piece:
    tokens = block.get("tokens")
    n = tokens if isinstance(tokens, int) and tokens >= 0 else think()
    if mode.budget is not None:
        n = min(n, mode.budget)
    if block["type"] == "redacted_thinking":
        return Piece({"type": "redacted_thinking", "data": ""}, n)
    text = "" if mode.omitted else (block.get("thinking") or SUMMARY)
    return Piece({"type": "thinking", "thinking": text, "signature": ""}, n, text)


def compose(
    content: list[dict[str, Any]], stop_reason: str, mode: Mode, think: Callable[[], int], max_tokens: int
) -> Output:
    """The response's blocks with their costs, cut to `max_tokens` (signatures still empty)."""
    scripted = any(b["type"] in THINKING_BLOCKS for b in content)
    if not mode.on:
        content = [b for b in content if b["type"] not in THINKING_BLOCKS]
    elif not scripted:
        content = [{"type": "thinking"}, *content]
    pieces = []
    for block in content:
        if block["type"] in THINKING_BLOCKS:
            piece = _thinking_piece(block, mode, think)
            if piece.tokens > 0 or scripted:
                pieces.append(piece)
        else:
            pieces.append(Piece(block, block_tokens(block)))
    kept, cut = _fit(pieces, max_tokens)
    thinking = sum(p.tokens for p in kept if p.block["type"] in THINKING_BLOCKS) if mode.on else None
    if cut or stop_reason == "max_tokens":
        return Output(kept, "max_tokens", max_tokens, thinking)
    return Output(kept, stop_reason, sum(p.tokens for p in kept), thinking)


def _fit(pieces: list[Piece], limit: int) -> tuple[list[Piece], bool]:
    kept: list[Piece] = []
    left = limit
    for piece in pieces:
        if piece.tokens <= left:
            kept.append(piece)
            left -= piece.tokens
            continue
        part = _cut(piece, left)
        if part is not None:
            kept.append(part)
        return kept, True
    return kept, False


def _cut(piece: Piece, left: int) -> Piece | None:
    block = piece.block
    if left <= 0:
        return None
    if block["type"] in THINKING_BLOCKS:
        text = piece.text[: 4 * left]
        return Piece({**block, "thinking": text} if block["type"] == "thinking" else block, left, text)
    if block["type"] == "text":
        return _longest(block, left, lambda b, n: {**b, "text": b["text"][:n]}, len(block["text"]))
    if block["type"] == "tool_use":
        fields = list(block["input"].items())
        return _longest(
            block, left, lambda b, n: {**b, "input": dict(fields[:n])}, len(fields), empty_ok=True
        )
    return None


def _longest(
    block: dict[str, Any],
    left: int,
    take: Callable[[dict[str, Any], int], dict[str, Any]],
    size: int,
    *,
    empty_ok: bool = False,
) -> Piece | None:
    """The largest `take(block, n)` that costs at most `left` tokens (binary search on n)."""
    low, high = (0 if empty_ok else 1), size
    best = None
    while low <= high:
        middle = (low + high) // 2
        candidate = take(block, middle)
        if block_tokens(candidate) <= left:
            best, low = Piece(candidate, block_tokens(candidate)), middle + 1
        else:
            high = middle - 1
    if best is not None and best.block.get("type") == "text" and not best.block["text"].strip():
        return None  # the API never sends an empty or blank text block
    return best


def sign(output: Output, checked: Checked, signer: Signer, message_id: str) -> list[dict[str, Any]]:
    """Sign each thinking block to its content, the prompt before it and the thinking it follows."""
    prefix, chain = checked.prefix, checked.chain
    content = []
    for index, piece in enumerate(output.pieces):
        block = dict(piece.block)
        if block["type"] in THINKING_BLOCKS:
            seal = Seal(
                block["type"],
                piece.tokens,
                f"{message_id}.{index}",
                chain.last,
                chain.count,
                prefix.digest(),
                prefix.tools,
                prefix.system,
            )
            signature = signer.sign(seal, piece.text)
            block["data" if block["type"] == "redacted_thinking" else "signature"] = signature
            chain.keep(seal)
        else:
            prefix.add("assistant", block)
        content.append(block)
    return content
