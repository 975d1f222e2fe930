"""The session file's format: the errors, the ledger, and how a record becomes a line.

Shared by the writer (`agent.session`) and the reader (`agent.replay`).

What a session keeps of secrets, and why. A resume sends the committed history back
to the model, and thinking blocks are signature-bound to the exact prefix before
them, so the recorded messages must come back byte for byte; a resume also runs the
calls of an interrupted turn, so their inputs must come back exactly too. Redacting
inside either would break a resume (the API refuses the history) or, worse, run an
irreversible call with `[redacted]` as an argument. So:

* Messages, call inputs and results (everything a resume sends or runs) are written
  verbatim, in a file created with mode 0600 (owner only).
* The one secret the framework itself holds, the configured `ANTHROPIC_API_KEY`, is
  never written anywhere: inside those fields it is replaced by a marker that names it
  by a keyed hash (`[redacted ANTHROPIC_API_KEY 3f9c0d1e2a4b]`), and the reader puts
  it back from the environment. A session that holds the marker resumes only with the
  same key configured (else a `SessionError` says so).
* Free-text fields nothing replays (an approval's reason, a stop's error detail, the
  final text of the `end` record) are redacted outright: anything shaped like an
  Anthropic key and the configured key become `[redacted]`.
* What identifies a call (the never-twice ledger) is an HMAC-SHA256 of the tool name
  and its canonical input, keyed by a random per-session key kept in the `start`
  record: it holds no secret, so it needs no redaction and always matches.

Encoding never raises: any value a tool returns (tuple keys, `10**5000`, a cycle, a
dict nested 10,000 deep, an object whose `__str__` raises, a lone surrogate) becomes
JSON text, and a line that cannot be UTF-8 is written ASCII-escaped, which reads back
to the same string.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.errors import AgentError
from agent.registry import ToolCall
from agent.render import renderable, safe_text
from agent.secrets import MIN_KEY_CHARS, redact

__all__ = [
    "MAX_RECORDED_CHARS",
    "VERSION",
    "CallKey",
    "KeyMask",
    "Ledger",
    "Recorded",
    "SessionError",
    "SessionWriteError",
    "as_text",
    "configured_key",
    "encode_line",
    "fingerprint",
    "redact",
    "to_json",
]

VERSION = 2
"""v2: per-record sequence numbers, keyed fingerprints, calls identified by id + fingerprint."""
MAX_RECORDED_CHARS = 200_000
"""A raw result is recorded up to this size; the full one lives in the artifact store."""
MARKER = re.compile(rb"\[redacted ANTHROPIC_API_KEY ([0-9a-f]{12})\]")


class SessionError(ValueError):
    """A session file that cannot be started, read or resumed; the message says why."""


class SessionWriteError(AgentError):
    """A record could not be written (disk full, I/O error). The file is rolled back to its
    last complete record, so it stays resumable; `result` holds the run so far, and
    `__cause__` the `OSError`."""


@dataclass(frozen=True)
class Recorded:
    """A call's result as the session holds it."""

    text: str
    is_error: bool


CallKey = tuple[str, str]
"""(tool_use id, fingerprint): one call. An id alone is not enough (ids get reused)."""


def fingerprint(call: ToolCall, key: bytes) -> str:
    """Identifies "the same action": a keyed hash of the tool name and its canonical input."""
    arguments = dict(call.input) if isinstance(call.input, Mapping) else call.input
    text = f"{call.name}\0{to_json(arguments, sort_keys=True)}"
    return hmac.digest(key, text.encode("utf-8", "surrogatepass"), "sha256").hex()[:32]  # one C call


@dataclass
class Ledger:
    """What the approval gate needs to know about every call of the run."""

    key: bytes = field(default_factory=lambda: os.urandom(16))
    """The fingerprint key (random per session; kept in the `start` record)."""
    approvals: dict[CallKey, bool | str] = field(default_factory=dict)
    started: dict[CallKey, bool] = field(default_factory=dict)
    """Calls whose `started` marker was written → whether they were irreversible."""
    results: dict[CallKey, Recorded] = field(default_factory=dict)
    done: dict[str, str] = field(default_factory=dict)
    """Fingerprints of irreversible calls that took (or may have taken) effect → call id."""
    seen: dict[str, str] = field(default_factory=dict)
    """tool_use id → fingerprint of the latest call that used it."""

    _known: dict[int, tuple[ToolCall, Any, str]] = field(default_factory=dict, repr=False, compare=False)
    """id(call) -> (call, its input, fingerprint): a call is fingerprinted when it is listed,
    checked, approved, started and settled; its input is the history's, never edited in place."""

    def fingerprint(self, call: ToolCall) -> str:
        known = self._known.get(id(call))
        if known is not None and known[0] is call and known[1] is call.input:
            return known[2]
        found = fingerprint(call, self.key)
        if len(self._known) >= 256:
            self._known.clear()
        self._known[id(call)] = (call, call.input, found)
        return found

    def call_key(self, call: ToolCall) -> CallKey:
        return call.id, self.fingerprint(call)


# -- values to JSON, never raising ------------------------------------------------------------


_ENCODERS = {
    (sort_keys, ascii): json.JSONEncoder(
        ensure_ascii=ascii, separators=(",", ":"), sort_keys=sort_keys, default=safe_text
    )
    for sort_keys in (False, True)
    for ascii in (False, True)
}
"""The four encoders `to_json` needs, made once (`json.dumps` with options makes one a call)."""


def to_json(value: Any, *, sort_keys: bool = False, ascii: bool = False) -> str:
    """Compact JSON text of any value; never raises."""
    options: dict[str, Any] = {"ensure_ascii": ascii, "separators": (",", ":"), "sort_keys": sort_keys}
    try:
        return _ENCODERS[sort_keys, ascii].encode(value)
    except (TypeError, ValueError, RecursionError, OverflowError):
        pass
    try:
        return json.dumps(renderable(value), default=safe_text, **options)
    except (TypeError, ValueError, RecursionError, OverflowError):
        return json.dumps(safe_text(value), **options)


def as_text(value: Any, limit: int = MAX_RECORDED_CHARS) -> str:
    """A raw tool value as bounded text (what a session keeps of a result); never raises."""
    text = safe_text(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit:,} more chars not recorded in the session]"


# -- secrets ------------------------------------------------------------------------------------


def configured_key() -> str | None:
    """`ANTHROPIC_API_KEY` when it is long enough to be searched for (`agent.secrets`)."""
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    return key if len(key) >= MIN_KEY_CHARS else None


class KeyMask:
    """Keeps the configured API key out of the file while what is replayed stays exact."""

    def __init__(self, secret: bytes, key: str | None = None) -> None:
        self.key = key
        digest = hmac.new(secret, (key or "").encode("utf-8", "surrogatepass"), hashlib.sha256)
        self.tag = digest.hexdigest()[:12] if key else ""
        self.marker = f"[redacted ANTHROPIC_API_KEY {self.tag}]"

    def hide(self, line: str, ascii: bool) -> str:
        if not self.key:
            return line
        encoded = json.dumps(self.key, ensure_ascii=ascii)[1:-1]
        return line.replace(encoded, self.marker) if encoded in line else line

    def restore(self, raw: bytes) -> tuple[bytes, set[str]]:
        """The line with the key put back; and the tags of keys it holds that are not this one."""
        tags = {m.decode() for m in MARKER.findall(raw)}
        if self.key and self.tag in tags:
            raw = raw.replace(self.marker.encode(), json.dumps(self.key)[1:-1].encode())  # ASCII-escaped
            tags.discard(self.tag)
        return raw, tags


def encode_line(record: Mapping[str, Any], mask: KeyMask) -> bytes:
    """One record as a complete line; never raises."""
    text = mask.hide(to_json(record), ascii=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, it reads back as the same string
        return (mask.hide(to_json(record, ascii=True), ascii=True) + "\n").encode("ascii")
