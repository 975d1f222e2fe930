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

import functools
import hashlib
import json
import logging
import math
import operator
from collections.abc import Callable, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.context.memo import IdentityCache, PrefixMemo, memoized
from agent.tool_search.deferral import loaded_by, unloaded_deferred

if TYPE_CHECKING:
    from agent.llm import TokenCounter

__all__ = [
    "Calibration",
    "estimate_tokens",
    "key_chars",
    "note_derived",
    "prompt_estimate",
    "request_tokens",
    "signature_key",
]

log = logging.getLogger("agent.context")

CHARS_PER_TOKEN = 4.0


def _encoder() -> Callable[[Any], str]:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)`, made once.

    A call through `json.dumps` makes a new encoder and walks two layers of Python before the
    C encoder runs; the new messages of every step are measured here, so where CPython has
    the C encoder it is called directly (no circular-reference bookkeeping: a history is
    JSON, and a cycle still ends in a RecursionError)."""
    plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return plain.encode
    encode = make(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps


_dumps = _encoder()


_LISTS = PrefixMemo()
"""Serialised length of each item of the long lists (a request's messages) seen lately."""
_CHARS = IdentityCache()
"""Serialised length of each nested dict (message, block, tool declaration) seen lately."""
_SIGNATURES = IdentityCache()
_HISTORY_SIGNATURES = PrefixMemo(by_content=True)
"""Thinking-block signatures of each message seen lately."""
_VALUE = operator.itemgetter(1)
_ZERO = (None, 0)
_LONG = 16
"""Lists at least this long (a history) are summed through `_LISTS`."""


def _chars(value: Any) -> int:
    """`len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))`, summed
    from parts: the top-level dict and lists are walked, every nested dict is serialised once
    and its length remembered by identity (a history shares its message dicts from step to
    step; a marked copy of a message is a new dict, serialised afresh)."""
    if type(value) is dict:
        if not value:
            return 2
        if "messages" in value:  # a request: measured up to three times a step, unchanged
            parts = tuple(value.items())
            last = _LAST_REQUEST
            if (
                last is not None
                and last[0] is value
                and len(last[1]) == len(parts)
                and all(map(_same_item, last[1], parts))
                and last[2] == _length(value["messages"])
            ):
                return last[3]
        chars = 1 + len(value) + sum(_key_chars(k) + _part_chars(v) for k, v in value.items())
        if "messages" in value:
            _remember_request(value, parts, chars)
        return chars
    return _part_chars(value)


_LAST_REQUEST: tuple[dict[str, Any], tuple[tuple[Any, Any], ...], int, int] | None = None
"""(request, its items, its number of messages, its serialised length): the loop measures the
request it is about to send, checks its budgets on it and books it, three walks of one dict."""


def _same_item(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    return a[0] is b[0] and a[1] is b[1]


def _length(messages: Any) -> int:
    return len(messages) if isinstance(messages, Sized) else -1


def _remember_request(request: dict[str, Any], parts: tuple[tuple[Any, Any], ...], chars: int) -> None:
    global _LAST_REQUEST
    _LAST_REQUEST = (request, parts, _length(request["messages"]), chars)


def _key_chars(key: Any) -> int:
    """Characters of a key and its colon (`"role":`)."""
    return _str_key_chars(key) if type(key) is str else len(_dumps({key: 0})) - 3


@functools.lru_cache(maxsize=1024)
def _str_key_chars(key: str) -> int:
    return len(_dumps(key)) + 1


def _part_chars(value: Any) -> int:
    kind = type(value)
    if kind is list or kind is tuple:
        if not value:
            return 2
        if len(value) >= _LONG:
            return 1 + len(value) + int(sum(memoized(_LISTS, value, _item_chars, _items_chars)))
        hits = _CHARS.lookup(value)
        extra, start = 0, 0
        while True:  # the few new dicts (marked copies, the newest turns), found in C
            try:
                start = hits.index(None, start)
            except ValueError:
                break
            extra += _part_chars(value[start])
            hits[start] = _ZERO
        return 1 + len(value) + extra + sum(map(_VALUE, hits))  # type: ignore[arg-type]
    return _item_chars(value)


def _item_chars(value: Any) -> int:
    if type(value) is dict:
        hit = _CHARS.lookup((value,))[0]
        if hit is not None:
            return int(hit[1])
        derived = _DERIVED.get(value)
        chars = _item_chars(derived[0]) + derived[1] if derived is not None else len(_dumps(value))
        _CHARS.put(value, chars)
        return chars
    return len(_dumps(value))


def _items_chars(items: Sequence[Any]) -> list[int]:
    """`[_item_chars(item) for item in items]`, the known ones looked up at once (in C)."""
    hits = _CHARS.lookup(items)
    return [_item_chars(item) if hit is None else hit[1] for hit, item in zip(hits, items, strict=True)]


_DERIVED = IdentityCache(1024)
"""copy -> (original, characters it adds): a dict whose JSON is its original's and a fixed
number of characters more (a message marked for the cache), measured without serialising."""


def note_derived(copy: dict[str, Any], original: Any, extra_chars: int) -> None:
    """Tell the estimate that `copy` serialises to `original`'s length plus `extra_chars`
    (the caller vouches for it; neither dict is ever edited in place)."""
    _DERIVED.put(copy, (original, extra_chars))


def key_chars(key: str, value: Any) -> int:
    """Characters one more `"key":value` item adds to a non-empty dict's JSON (its comma too)."""
    return 1 + _key_chars(key) + len(_dumps(value))


def estimate_tokens(value: Any, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Rough token count of any JSON-able value (a request, a message, a string)."""
    return math.ceil(_chars(value) / chars_per_token)


def prompt_estimate(request: Any) -> int:
    """`estimate_tokens` of a request as the model reads it: deferred tool declarations
    (`defer_loading`) are in the body but not in the prompt until a `tool_reference` loads
    them, so those not loaded are left out."""
    raw = estimate_tokens(request)
    if not isinstance(request, Mapping):
        return raw
    unloaded = unloaded_deferred(request, _loads)
    return raw - math.ceil(_chars(unloaded) / CHARS_PER_TOKEN) if unloaded else raw


_LOADS = PrefixMemo(by_content=True)
"""The tool names each message's `tool_reference` blocks load, for the histories seen lately."""


def _loads(messages: Sequence[Any]) -> Sequence[tuple[Any, ...]]:
    if type(messages) is list and len(messages) >= _LONG:
        return memoized(_LOADS, messages, loaded_by)
    return [loaded_by(message) for message in messages]


@functools.lru_cache(maxsize=16384)
def signature_key(signature: str) -> str:
    """A short, stable key for a thinking block's signature (signatures run long)."""
    return hashlib.sha256(signature.encode()).hexdigest()[:16]


def _signatures_of(item: Any) -> tuple[str, ...]:
    return tuple(_thinking_signatures(item))


def _thinking_signatures(value: Any) -> list[str]:
    """Signatures of the thinking blocks in a request, a message, or a list of either."""
    if isinstance(value, Mapping):
        if "messages" in value:
            return _thinking_signatures(value["messages"])
        if "role" in value:
            if type(value) is dict:
                known = _SIGNATURES.get(value)
                if known is None:
                    content = value.get("content")
                    known = tuple(_thinking_signatures(content)) if isinstance(content, list) else ()
                    _SIGNATURES.put(value, known)
                return list(known)
            content = value.get("content")
            return _thinking_signatures(content) if isinstance(content, list) else []
        kind = value.get("type")
        signature = value.get("signature") if kind == "thinking" else value.get("data")
        return [signature] if kind in ("thinking", "redacted_thinking") and isinstance(signature, str) else []
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) >= _LONG:  # a history: its messages' signatures, by shared prefix
            known = memoized(_HISTORY_SIGNATURES, value, _signatures_of)
            return [found for signatures in known for found in signatures]
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
        return math.ceil(prompt_estimate(request) * self.ratio) + self.hidden_tokens(request)

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
    calibration.observe(prompt_estimate(request), exact, calibration.hidden_tokens(request))
    return exact
