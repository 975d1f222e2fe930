"""Token estimates good enough to steer by, and honest about being estimates.

A request's size is estimated as characters / 4 of its JSON (cheap, deterministic,
no network). `Calibration` then corrects the ratio with what the API actually
billed: after each step the loop feeds it the estimate it made and the real prompt
size from `usage`, so the estimate converges on the model's real tokenizer.

Thinking blocks are the exception a ratio cannot learn: with `display` omitted a block
comes back as an empty string and a signature, yet the model reads (and the API bills)
the whole reasoning each time the block is sent back. So `Calibration` also keeps a
ledger of each block's hidden size, learned from the response that produced it
(`usage.output_tokens_details.thinking_tokens`), and adds it to every estimate of a
request, a message or a block list that still carries the block.

Where a decision hinges on the exact number (is this request over the compaction
threshold?), `request_tokens` can ask an `LLM` that is also a `TokenCounter` (the
API's free `count_tokens` endpoint): only when the estimate is near the line, and
falling back to the estimate if the count fails. Each exact count also calibrates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.llm import TokenCounter

__all__ = ["Calibration", "estimate_tokens", "request_tokens", "signature_key"]

log = logging.getLogger("agent.context")

CHARS_PER_TOKEN = 4.0


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def estimate_tokens(value: Any, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Rough token count of any JSON-able value (a request, a message, a string)."""
    return math.ceil(_chars(value) / chars_per_token)


def signature_key(signature: str) -> str:
    """A short, stable key for a thinking block's signature (signatures run long)."""
    return hashlib.sha256(signature.encode()).hexdigest()[:16]


def _thinking_signatures(value: Any) -> list[str]:
    """Signatures of the thinking blocks in a request, a message, or a list of either."""
    if isinstance(value, Mapping):
        if "messages" in value:
            return _thinking_signatures(value["messages"])
        if "role" in value:
            content = value.get("content")
            return _thinking_signatures(content) if isinstance(content, list) else []
        kind = value.get("type")
        signature = value.get("signature") if kind == "thinking" else value.get("data")
        return [signature] if kind in ("thinking", "redacted_thinking") and isinstance(signature, str) else []
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [found for item in value for found in _thinking_signatures(item)]
    return []


@dataclass
class Calibration:
    """Learns tokens-per-estimated-token from billed usage (starts at 1.0), and the hidden
    size of each thinking block the run has been sent."""

    ratio: float = 1.0
    smoothing: float = 0.5
    samples: int = 0
    hidden: dict[str, int] = field(default_factory=dict)
    """signature_key(signature) -> tokens of reasoning behind that thinking block."""

    def estimate(self, request: Any) -> int:
        return math.ceil(estimate_tokens(request) * self.ratio) + self.hidden_tokens(request)

    def hidden_tokens(self, value: Any) -> int:
        """Tokens of reasoning carried by the thinking blocks in `value` beyond their text."""
        if not self.hidden:
            return 0
        return sum(self.hidden.get(signature_key(s), 0) for s in _thinking_signatures(value))

    def note_thinking(self, content: Sequence[Mapping[str, Any]], thinking_tokens: int) -> None:
        """Remember how much reasoning a response's thinking blocks stand for (split evenly)."""
        signatures = _thinking_signatures(list(content))
        for signature in signatures:
            self.hidden[signature_key(signature)] = thinking_tokens // len(signatures)

    def observe(self, estimated_raw: int, billed_prompt: int, hidden: int = 0) -> None:
        """Blend in one (raw estimate, real prompt size) pair; `hidden` is the part of the
        bill the ledger already accounts for (thinking blocks), left out of the ratio."""
        billed_prompt -= hidden
        if estimated_raw <= 0 or billed_prompt <= 0:
            return
        seen = billed_prompt / estimated_raw
        self.ratio = seen if self.samples == 0 else (1 - self.smoothing) * self.ratio + self.smoothing * seen
        self.samples += 1


def request_tokens(
    request: Mapping[str, Any],
    calibration: Calibration,
    counter: TokenCounter | None = None,
    *,
    exact_from: int = 0,
) -> int:
    """The request's prompt tokens: the calibrated estimate, or an exact count from
    `counter` when one is given and the estimate is at least `exact_from`."""
    estimate = calibration.estimate(request)
    if counter is None or estimate < exact_from:
        return estimate
    try:
        exact = int(counter.count_tokens(request))
    except Exception as error:
        log.warning("count_tokens failed (%s: %s); using the estimate", type(error).__name__, error)
        return estimate
    calibration.observe(estimate_tokens(request), exact, calibration.hidden_tokens(request))
    return exact
