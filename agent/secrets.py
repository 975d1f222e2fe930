"""The project's one secret policy: what counts as a key, and how it is blanked out.

Anything the framework writes (the session's JSONL record, the artifact store's full
tool results, the request log, an error's message, a warning on the `agent` logger) can
outlive the run, be copied, attached to an issue, or read back into the context by a
later run; and what the model reads may be quoted anywhere. A tool that echoes its
environment, or a 401 that quotes the key, would put it there in clear. So every writer,
and the rendering of every tool result the model reads, passes its text through `redact`:

- anything shaped like an Anthropic key (`sk-ant-` and at least 8 key characters)
  becomes `sk-ant-[redacted]`;
- the configured `ANTHROPIC_API_KEY` itself (whatever its shape: a proxy or gateway
  key need not start with `sk-ant-`) becomes `[redacted]`, when it is at least 8
  characters long (a shorter value would blank out ordinary words).

It is a policy for accidental leaks, not a guarantee: a key that was encoded (base64,
split across lines, reversed) before it reached a writer is not recognised.
"""

from __future__ import annotations

import os
import re

__all__ = ["KEY_SHAPE", "MIN_KEY_CHARS", "redact"]

KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")
"""An Anthropic API key (or anything shaped like one)."""
MIN_KEY_CHARS = 8
"""A configured key shorter than this is not searched for (it would hit ordinary text)."""


def redact(text: str) -> str:
    """`text` with every key-shaped string and the configured `ANTHROPIC_API_KEY` blanked out."""
    if "sk-ant-" in text:  # a substring search: far cheaper than the regex on clean text
        text = KEY_SHAPE.sub("sk-ant-[redacted]", text)
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    if len(key) >= MIN_KEY_CHARS and key in text:
        text = text.replace(key, "[redacted]")
    return text
