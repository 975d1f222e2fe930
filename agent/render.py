"""Any Python value a tool returns, made safe to show a model and to write down: never raises.

Tuple keys, a huge int, a cycle, a dict 10,000 deep, a raising `__str__`, a lone surrogate would each
crash a writer downstream, so `renderable` and `safe_text` spell odd parts as text (the walk, in
`agent.odd_values`, loads only when needed). `redact` is the one secret policy: all that is written or
shown to the model passes it, as it may outlive the run; it stops accidental leaks, not encoded keys."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

__all__ = [
    "KEY_SHAPE",
    "MAX_DEPTH",
    "MAX_VALUES",
    "MIN_KEY_CHARS",
    "clean_str",
    "describe_error",
    "redact",
    "renderable",
    "safe_text",
]

KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")
"""An Anthropic API key (or anything shaped like one)."""
MIN_KEY_CHARS = 8
"""A configured key shorter than this is not searched for (it would hit ordinary text)."""


def redact(text: str) -> str:
    """`text` with key-shaped strings and the configured `ANTHROPIC_API_KEY` (of any shape) blanked out."""
    if "sk-ant-" in text:  # a substring search: far cheaper than the regex on clean text
        text = KEY_SHAPE.sub("sk-ant-[redacted]", text)
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    if len(key) >= MIN_KEY_CHARS and key in text:
        text = text.replace(key, "[redacted]")
    return text


MAX_DEPTH = 100
"""Deeper containers are cut: downstream code (and `json`) recurses once per level."""
MAX_VALUES = 250_000
"""Values kept per result, past which containers are cut (a self-sharing list is tiny, but vast as text)."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_COMPACT: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":")}


def _type_name(value: Any) -> str:
    try:
        name = type(value).__name__
    except Exception:  # a metaclass can make even this raise
        name = None
    return name if isinstance(name, str) else "object"


def clean_str(text: str) -> str:
    """An exact `str` UTF-8 can encode: lone surrogates become U+FFFD, valid pairs are joined."""
    text = str.__str__(text)
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _already_plain(value: Any, max_chars: int | None) -> bool:
    """The fast check: exact plain types only, no container seen twice, within the limits."""
    seen: set[int] = set()
    stack = [(value, 1)]
    count = 0
    longest = sys.maxsize if max_chars is None else max_chars
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is dict:
            for key in node:
                if type(key) is not str or (not key.isascii() and _SURROGATE.search(key)):
                    return False
            children: Any = node.values()
        elif kind is list or kind is tuple:
            children = node
        else:
            return _already_plain([node], max_chars)
        if id(node) in seen or depth > MAX_DEPTH:
            return False
        seen.add(id(node))
        count += len(node)
        if count > MAX_VALUES:
            return False
        for child in children:
            kind = type(child)
            if kind is str:
                if len(child) > longest or (not child.isascii() and _SURROGATE.search(child)):
                    return False
            elif kind is int:
                if child.bit_length() >= 14_000:
                    return False
            elif kind is dict or kind is list or kind is tuple:
                stack.append((child, depth + 1))
            elif not (kind is float or kind is bool or child is None):
                return False
    return True


def renderable(value: Any, max_chars: int | None = None) -> Any:
    """`value` if plain JSON data within the limits, else a plain copy with odd parts spelled as text and
    cuts past `MAX_DEPTH`/`MAX_VALUES` noted, so it always encodes (bar top-level `bytes`, returned as is).
    `max_chars` cuts nested strings (the caller bounds a top-level one)."""
    if type(value) is str:
        return clean_str(value)
    if type(value) is bytes:
        return value
    try:
        if _already_plain(value, max_chars):
            return value
        from agent.odd_values import Walker  # loaded by the runs whose tools return odd values

        plain, changed = Walker(clean_str, _type_name, MAX_DEPTH, MAX_VALUES).walk(value, max_chars)
    except Exception as error:  # a bug in the walker must not cost the run
        return f"<unrenderable {_type_name(value)}: {_type_name(error)}>"
    if not changed:
        return value
    return list(plain) if type(plain) is tuple else plain


def safe_text(value: Any, limit: int | None = None) -> str:
    """`value` as text UTF-8 can encode (strings cleaned, bytes decoded, else compact JSON of `renderable`),
    cut to `limit` characters; never raises."""
    try:
        if isinstance(value, (str, bytes, bytearray)):
            text = clean_str(value) if isinstance(value, str) else bytes(value).decode("utf-8", "replace")
        else:
            plain = renderable(value)
            text = plain if isinstance(plain, str) else json.dumps(plain, **_COMPACT)
    except Exception:
        text = f"<unrenderable {_type_name(value)}>"
    if limit is not None and len(text) > limit:
        return text[:limit] + f"[... {len(text) - limit:,} more chars]"
    return text


def describe_error(error: BaseException) -> str:
    """`Type: message` for an exception, safely: its `__str__` may raise anything, even SystemExit."""
    name = _type_name(error)
    try:
        message = str(error)
    except BaseException:
        return name
    return f"{name}: {clean_str(message)}" if message else name
