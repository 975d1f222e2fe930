"""Token estimates good enough to steer by, and honest about being estimates.

A request is estimated as characters / 4 of its JSON (cheap, deterministic, offline). `Calibration`
corrects that ratio with what the API billed, and keeps each thinking block's hidden size, learned
from the response that produced it: with `display` omitted a block comes back as a signature, yet
its whole reasoning is billed each time it is sent back, which no ratio can learn. Near a decision's
line, `request_tokens` can ask a `TokenCounter` (the free `count_tokens` endpoint). A value edited
in place is measured as it now is: the functions remember nothing, and a run's `Sizes` reuse a
message's length only while the message equals the copy that was measured.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import operator
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.llm import TokenCounter

__all__ = [
    "Calibration",
    "Sizes",
    "estimate_tokens",
    "prompt_estimate",
    "reaches",
    "request_tokens",
    "signature_key",
]

log = logging.getLogger("agent.context")

CHARS_PER_TOKEN = 4.0


def _encoder() -> Callable[[Any], str]:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)`, made once: every
    estimate serialises the whole history, so the C encoder is called directly (no cycle check: a
    cycle still ends in a RecursionError)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
    encode = make(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps


_dumps = _encoder()


def _chars(value: Any) -> int:
    return len(_dumps(value))


class _Exact:
    """A number or bool in a `Sizes` copy: equal only to a value JSON spells alike (`1 == True` is not)."""

    __slots__ = ("kind", "value")

    def __init__(self, value: int | float) -> None:
        self.kind, self.value = type(value), value

    def __eq__(self, other: object) -> bool:
        if type(other) is not self.kind or other != self.value:
            return False
        return self.kind is not float or repr(other) == repr(self.value)  # -0.0 is not 0.0

    __hash__ = None  # type: ignore[assignment]


_NATIVE = (str, type(None))
_NUMBERS = (int, float, bool)


def _copy(message: Any) -> Any:
    """`message` with its numbers and bools made `_Exact`, or None when it holds anything but JSON's
    own types (a str key, dict, list, str, int, float, bool or None, each by exact type): an object's
    `__eq__` may raise or answer yes to anything, so no copy is kept to compare it with. A walk, not
    a recursion, as deep as Python would recurse: a deeper one (or a cycle) is left to the encoder,
    which raises."""
    top: list[Any] = [None]
    work: list[tuple[Any, Any, Any, int]] = [(message, top, 0, 0)]
    deepest = sys.getrecursionlimit()
    while work:
        value, into, at, depth = work.pop()
        kind = type(value)
        if depth > deepest:
            return None
        if kind is dict:
            if not all(type(k) is str for k in value):
                return None
            into[at] = keyed = dict.fromkeys(value)
            work.extend((v, keyed, k, depth + 1) for k, v in value.items())
        elif kind is list:
            into[at] = listed = [None] * len(value)
            work.extend((v, listed, i, depth + 1) for i, v in enumerate(value))
        elif kind in _NUMBERS:
            into[at] = _Exact(value)
        elif kind in _NATIVE:
            into[at] = value
        else:
            return None
    return top[0]


class Sizes:
    """The JSON length of each message of the history one run last measured, beside a copy of it.

    A long run measures its whole history at every step (compaction, budgets), and most of it is
    what the step before measured, at the same place. A length is reused only while the message
    equals its copy (comparing dicts runs in C, several times quicker than encoding them; numbers
    and bools compare by type too): a message edited in place, or another one, is measured anew,
    so nothing stale is served. Only messages of plain JSON data get a copy; the rest are encoded
    each time. Equality is the message's own: a value later put in place of copied data that claims
    to equal what it is not (`mock.ANY`, `pytest.approx`, a `str` subclass lying in `__eq__`) passes
    for the copy; JSON data has none. The copies hold the history's size once more, for the run only.
    """

    def __init__(self) -> None:
        self._copies: list[Any] = []
        self._lengths: list[int] = []

    def chars(self, value: Any) -> int:
        """`len` of `value`'s JSON; a request's messages measured through the copies."""
        if type(value) is not dict or type(messages := value.get("messages")) is not list:
            return _chars(value)
        rest = {k: v for k, v in value.items() if k != "messages"}
        listed = self.history(messages) + max(len(messages) - 1, 0) + 2  # [a,b]
        return _chars(rest) + len('"messages":') + listed + (1 if rest else 0)

    def history(self, messages: Sequence[Any]) -> int:
        """The messages' JSON lengths, each measured apart; those not known are measured and kept."""
        if messages:
            del self._copies[len(messages) :], self._lengths[len(messages) :]  # a compacted run lets go
        try:  # as far as the shorter goes; a message with no copy is never the same
            same = [
                s is True and c is not None
                for s, c in zip(map(operator.eq, messages, self._copies), self._copies, strict=False)
            ]
        except Exception:  # an object in a message refused the comparison (a numpy array does)
            same = []
        same += [False] * (len(messages) - len(same))
        total = sum(itertools.compress(self._lengths, same))
        for i in itertools.compress(range(len(messages)), map(operator.not_, same)):
            copy = _copy(messages[i])  # before encoding: an object's `__str__` may edit the message
            text = _dumps(messages[i])
            total += len(text)
            if i == len(self._copies):
                self._copies.append(None)
                self._lengths.append(0)
            self._copies[i], self._lengths[i] = copy, len(text)
        return total


def estimate_tokens(value: Any, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Rough token count of any JSON-able value (a request, a message, a string)."""
    return math.ceil(_chars(value) / chars_per_token)


def reaches(values: Iterable[Any], tokens: float) -> bool:
    """Whether the values' estimate together reaches `tokens`, encoding no more of them than it
    takes: asking whether a prompt passes its first thousand tokens should not encode all of it."""
    wanted, total = tokens * CHARS_PER_TOKEN, 0
    for value in values:
        total += _chars(value)
        if total >= wanted:
            return True
    return False


def prompt_estimate(request: Any, chars: Callable[[Any], int] = _chars) -> int:
    """`estimate_tokens` of a request as the model reads it: a deferred tool declaration is in
    the body but not in the prompt until a `tool_reference` loads it, so unloaded ones are left out."""
    raw = math.ceil(chars(request) / CHARS_PER_TOKEN)
    tools = request.get("tools") if isinstance(request, Mapping) else None
    if not isinstance(tools, list) or not any(
        isinstance(t, Mapping) and t.get("defer_loading") is True for t in tools
    ):
        return raw
    from agent.context.deferred import unloaded_deferred  # loaded by the runs that defer tools

    unloaded = unloaded_deferred(request)
    return raw - math.ceil(_chars(unloaded) / CHARS_PER_TOKEN) if unloaded else raw


def signature_key(signature: str) -> str:
    """A short, stable key for a thinking block's signature (signatures run long)."""
    return hashlib.sha256(signature.encode()).hexdigest()[:16]


def _thinking_signatures(value: Any) -> list[str]:
    """Signatures of the thinking blocks in a request, a message, or a list of either."""
    found: list[str] = []
    _collect_signatures(value, found)
    return found


def _collect_signatures(value: Any, found: list[str]) -> None:
    """Every block is visited at each estimate: plain dicts and lists are recognised first."""
    if type(value) is dict or isinstance(value, Mapping):
        if "messages" in value:
            _collect_signatures(value["messages"], found)
        elif "role" in value:
            content = value.get("content")
            if isinstance(content, list):
                _collect_signatures(content, found)
        else:
            kind = value.get("type")
            signature = value.get("signature") if kind == "thinking" else value.get("data")
            if kind in ("thinking", "redacted_thinking") and isinstance(signature, str):
                found.append(signature)
    elif type(value) is list or (isinstance(value, Sequence) and not isinstance(value, str)):
        for item in value:
            _collect_signatures(item, found)


@dataclass
class Calibration:
    """Learns billed tokens per estimated token, and the hidden size of each thinking block."""

    ratio: float = 1.0
    smoothing: float = 0.5
    samples: int = 0
    hidden: dict[str, int] = field(default_factory=dict)
    """signature_key(signature) -> tokens of reasoning behind that thinking block."""

    def estimate(self, request: Any, raw: int | None = None) -> int:
        """Calibrated prompt tokens of `request` (`raw`: its `prompt_estimate`, if known)."""
        raw = prompt_estimate(request) if raw is None else raw
        return math.ceil(raw * self.ratio) + self.hidden_tokens(request)

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
        """Blend in one (raw estimate, billed prompt) pair, less `hidden` (the thinking ledger's part)."""
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
    raw: int | None = None,
) -> int:
    """The calibrated estimate, or an exact count from `counter` when the estimate is at least
    `exact_from` (`raw`: the request's `prompt_estimate`, if known)."""
    raw = prompt_estimate(request) if raw is None else raw
    estimate = calibration.estimate(request, raw)
    if counter is None or estimate < exact_from:
        return estimate
    try:
        exact = int(counter.count_tokens(request))
    except Exception as error:
        log.warning("count_tokens failed (%s: %s); using the estimate", type(error).__name__, error)
        return estimate
    calibration.observe(raw, exact, calibration.hidden_tokens(request))
    return exact
