"""Token estimates good enough to steer by, and honest about being estimates.

A request's size is estimated as characters / 4 of its JSON (cheap, deterministic,
no network). `Calibration` then corrects the ratio with what the API actually
billed: after each step the loop feeds it the estimate it made and the real prompt
size from `usage`, so the estimate converges on the model's real tokenizer.

Where a decision hinges on the exact number (is this request over the compaction
threshold?), `request_tokens` can ask an `LLM` that is also a `TokenCounter` (the
API's free `count_tokens` endpoint): only when the estimate is near the line, and
falling back to the estimate if the count fails. Each exact count also calibrates.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.llm import TokenCounter

__all__ = ["Calibration", "estimate_tokens", "request_tokens"]

log = logging.getLogger("agent.context")

CHARS_PER_TOKEN = 4.0


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def estimate_tokens(value: Any, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Rough token count of any JSON-able value (a request, a message, a string)."""
    return math.ceil(_chars(value) / chars_per_token)


@dataclass
class Calibration:
    """Learns tokens-per-estimated-token from billed usage; starts at 1.0."""

    ratio: float = 1.0
    smoothing: float = 0.5
    samples: int = 0

    def estimate(self, request: Any) -> int:
        return math.ceil(estimate_tokens(request) * self.ratio)

    def observe(self, estimated_raw: int, billed_prompt: int) -> None:
        """Blend in one (raw estimate, real prompt size) pair."""
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
    calibration.observe(estimate_tokens(request), exact)
    return exact
