"""The session file's format: its errors, its secrets, and how a record becomes a line.

Shared by the writer (`agent.ext.sessions.session`) and the reader (`agent.ext.sessions.replay`).
The ledger a session records and seeds is the approval gate's
(`agent.ext.approval.ledger`): the session only writes it down.

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
from typing import Any

from agent.errors import AgentError
from agent.ext.approval.ledger import to_json
from agent.render import MIN_KEY_CHARS, redact

__all__ = [
    "VERSION",
    "KeyMask",
    "SessionError",
    "SessionWriteError",
    "configured_key",
    "encode_line",
    "redact",
    "with_checksum",
    "without_checksum",
]

VERSION = 3
"""v3: each record ends in a checksum of its line (`"ck"`), and fingerprints are taken over
a call's validated input. v2 (sequence numbers, keyed fingerprints over the raw input,
calls identified by id + fingerprint, no checksum) is still read."""
READABLE = (2, 3)
"""The format versions this code resumes."""
CHECKSUM = re.compile(rb',"ck":"([0-9a-f]{16})"\}$')
"""The end of a v3 line: the first 16 hex digits of the SHA-256 of the line before it."""
MARKER = re.compile(rb"\[redacted ANTHROPIC_API_KEY ([0-9a-f]{12})\]")


class SessionError(AgentError, ValueError):
    """A session file that cannot be started, read or resumed; the message says why. (A
    `ValueError` too, as it always was: a file that is not a session is a bad value.)"""


class SessionWriteError(AgentError):
    """A record could not be written (disk full, I/O error). The file is rolled back to its
    last complete record, so it stays resumable; `result` holds the run so far, and
    `__cause__` the `OSError`."""


# -- secrets ------------------------------------------------------------------------------------


def configured_key() -> str | None:
    """`ANTHROPIC_API_KEY` when it is long enough to be searched for (`agent.render`)."""
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
    """One record as a complete line, its checksum last; never raises."""
    text = mask.hide(to_json(record), ascii=False)
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, it reads back as the same string
        body = mask.hide(to_json(record, ascii=True), ascii=True).encode("ascii")
    return with_checksum(body) + b"\n"


def with_checksum(body: bytes) -> bytes:
    """`{...}` as `{...,"ck":"<16 hex>"}`: the digest of the line as written (key masked)."""
    digest = hashlib.sha256(body).hexdigest()[:16]
    return body[:-1] + b',"ck":"' + digest.encode() + b'"}'


def without_checksum(raw: bytes) -> bytes:
    """A v3 line with its checksum checked and removed; `ValueError` when it does not match
    (a damaged record is refused, never replayed: a flipped bit could turn a call into another)."""
    found = CHECKSUM.search(raw)
    if found is None:
        raise ValueError("no checksum")
    body = raw[: found.start()] + b"}"
    if hashlib.sha256(body).hexdigest()[:16] != found.group(1).decode():
        raise ValueError("checksum mismatch")
    return body
