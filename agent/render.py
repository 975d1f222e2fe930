"""Any Python value a tool returns, made safe to show a model and to write down: never raises.

A tool may return anything: tuple keys, an int too long to print, a list that holds
itself, a dict 10,000 levels deep, an object whose `__str__` raises, a lone surrogate, a
small structure that shares itself into terabytes of text. Any of those would crash a
writer downstream (the session file, the request encoder), so `renderable` and `safe_text`
spell each odd part as text, walking with an explicit stack (no recursion).

`redact` is the project's one secret policy. Whatever the framework writes (session
record, artifacts, request log, errors, warnings) can outlive the run and be shared, and
what the model reads may be quoted anywhere; a tool echoing its environment or a 401
quoting the key would put it there in clear. So every writer, and every tool result the
model reads, passes through `redact`. It stops accidental leaks, not an encoded key.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import re
import sys
from collections import deque
from collections.abc import Iterator, Mapping
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
    """`text` with every key-shaped string and the configured `ANTHROPIC_API_KEY` blanked out
    (the latter whatever its shape: a proxy or gateway key need not start with `sk-ant-`)."""
    if "sk-ant-" in text:  # a substring search: far cheaper than the regex on clean text
        text = KEY_SHAPE.sub("sk-ant-[redacted]", text)
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    if len(key) >= MIN_KEY_CHARS and key in text:
        text = text.replace(key, "[redacted]")
    return text


MAX_DEPTH = 100
"""Deeper containers are cut: downstream code (and `json`) recurses once per level."""
MAX_VALUES = 250_000
"""Values kept per result; past it containers are cut (a self-sharing list of lists is tiny in
memory, astronomically large as text). Already more JSON than a text result may hold."""
_INT_DIGITS = 100_000
"""Ints longer than this are described, not printed."""
_PLAIN = (str, int, float, bool, type(None))
_SURROGATE = re.compile("[\ud800-\udfff]")
_WALKED = (*_PLAIN, Mapping, list, tuple)
_END = object()
_SMALL = 1 << 60
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


def _int_text(number: int) -> str:
    number = int.__index__(number)
    try:
        return str(number)
    except ValueError:  # over sys.get_int_max_str_digits(): print it in pieces that are not
        pass
    digits = int(number.bit_length() * math.log10(2)) + 1
    if digits > _INT_DIGITS:
        return f"<int of about {digits:,} digits>"
    return ("-" + _digits(-number)) if number < 0 else _digits(number)


def _digits(number: int) -> str:
    """Decimal digits of a non-negative int, however long (split in halves until printable)."""
    try:
        return str(number)
    except ValueError:
        pass
    half = int(number.bit_length() * math.log10(2)) // 2
    high, low = divmod(number, 10**half)
    return _digits(high) + _digits(low).zfill(half)


def _text_of(value: Any) -> str:
    """`str(value)`, or a note saying why there is none."""
    try:
        text = str(value)
    except Exception as error:
        return f"<unprintable {_type_name(value)}: __str__ raised {_type_name(error)}>"
    return clean_str(text)


def _key(key: Any) -> str:
    """A dict key as JSON spells it."""
    if isinstance(key, str):
        return clean_str(key)
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, int):
        return _int_text(key)
    if isinstance(key, float):
        return json.dumps(float.__float__(key))
    return _text_of(key)


def _scalar(value: Any) -> tuple[Any, bool]:
    """(plain scalar, changed) for a str, int, float, bool or None (or a subclass)."""
    kind = type(value)
    if kind is str:
        cleaned = clean_str(value)
        return cleaned, cleaned is not value
    if kind is bool or value is None:
        return value, False
    if isinstance(value, int):
        if value.bit_length() < 14_000:  # printable under the default 4,300-digit limit
            return int.__index__(value), kind is not int
        return _int_text(value), True
    if isinstance(value, float):
        return float.__float__(value), kind is not float
    return clean_str(value), True


def _open(value: Any) -> Any:
    """One level of a value that is neither plain nor a container: something plain or walkable."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8", errors="replace")
        except Exception:
            return f"<unreadable {_type_name(value)}>"
    try:
        if isinstance(value, enum.Enum):
            return value.value
        dump = None if isinstance(value, type) else getattr(value, "model_dump", None)
        if callable(dump):
            return dump(mode="json")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        if isinstance(value, (set, frozenset)):
            return sorted(value, key=_text_of)
        if isinstance(value, deque):
            return list(value)
    except Exception:
        pass
    return _text_of(value)


def _cut_string(text: str, max_chars: int) -> str:
    half = max_chars // 2
    return text[:half] + f"[... {len(text) - 2 * half:,} chars cut ...]" + text[len(text) - half :]


def _walk(value: Any, max_chars: int | None) -> tuple[Any, bool]:
    """(plain copy of `value`, whether anything had to change), with an explicit stack."""
    changed = False
    count = 0
    longest = sys.maxsize if max_chars is None else max_chars
    root: list[Any] = []
    # one frame per open container: (its items, the copy being built, is it a dict, its id)
    stack: list[tuple[Iterator[Any], Any, bool, int]] = [(iter([value]), root, False, 0)]
    on_path: set[int] = set()
    while stack:
        items, out, is_dict, node_id = stack[-1]
        item: Any
        try:
            item = next(items, _END)
        except Exception as error:  # a hostile container: note it, close it
            _put(out, is_dict, "<error>", f"<{_type_name(error)} while reading>")
            item, changed = _END, True
        if item is _END:
            on_path.discard(node_id)
            stack.pop()
            continue
        key: Any = None
        node: Any = item
        if is_dict:
            try:
                key, node = item
            except Exception:
                key, node, changed = "<bad item>", item, True
            if type(key) is not str or not key.isascii():
                fixed = _key(key)
                changed = changed or fixed is not key
                key = fixed
        count += 1
        if count > MAX_VALUES:
            for frame in stack[1:]:
                _put(frame[1], frame[2], "...", f"[... cut: over {MAX_VALUES:,} values ...]")
            return (root[0] if root else None), True
        kind = type(node)
        if (kind is int and -_SMALL < node < _SMALL) or kind is float or kind is bool or node is None:
            child: Any = node  # the common cases first, cheaply
        elif kind is str and node.isascii() and len(node) <= longest:
            child = node
        else:
            if not isinstance(node, _WALKED):
                node, changed = _open(node), True
                if not isinstance(node, _WALKED):
                    node = _text_of(node)
            if isinstance(node, _PLAIN):
                if isinstance(node, str) and len(node) > longest:
                    node, changed = _cut_string(node, longest), True
                child, fixed_scalar = _scalar(node)
                changed = changed or fixed_scalar
            elif id(node) in on_path:
                child, changed = "<cycle>", True
            elif len(stack) > MAX_DEPTH:
                child, changed = f"[... cut: nested deeper than {MAX_DEPTH} levels ...]", True
            else:
                is_map = isinstance(node, Mapping)
                changed = changed or type(node) not in (dict, list, tuple)
                try:
                    source = iter(node.items()) if is_map else iter(node)
                except Exception as error:
                    source, is_map, changed = iter([f"<{_type_name(error)} while reading>"]), False, True
                child = {} if is_map else []
                on_path.add(id(node))
                stack.append((source, child, is_map, id(node)))
        if is_dict:
            out[key] = child
        else:
            out.append(child)
    return (root[0] if root else None), changed


def _put(container: Any, is_dict: bool, key: Any, child: Any) -> None:
    if is_dict:
        container[key] = child
    else:
        container.append(child)


def _utf8(text: str) -> bool:
    return _SURROGATE.search(text) is None


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
                if type(key) is not str or not (key.isascii() or _utf8(key)):
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
                if len(child) > longest or not (child.isascii() or _utf8(child)):
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
    """`value` if it is plain JSON data within the limits, else a plain copy with every odd
    part spelled as text, cut past `MAX_DEPTH` levels or `MAX_VALUES` values with a note.

    `json.dumps(renderable(v), ensure_ascii=False).encode("utf-8")` always works, except for
    top-level `bytes`, which come back as they are (a top-level `str` comes back cleaned).
    `max_chars` cuts any string nested inside a structure (the caller bounds a top-level one).
    """
    if type(value) is str:
        return clean_str(value)
    if type(value) is bytes:
        return value
    try:
        if _already_plain(value, max_chars):
            return value
        plain, changed = _walk(value, max_chars)
    except Exception as error:  # a bug in the walker must not cost the run
        return f"<unrenderable {_type_name(value)}: {_type_name(error)}>"
    if not changed:
        return value
    if type(plain) is tuple:
        return list(plain)
    return plain


def safe_text(value: Any, limit: int | None = None) -> str:
    """`value` as text a model can read and UTF-8 can encode; never raises.

    Strings (cleaned) and bytes (decoded) are themselves; anything else is compact JSON
    of `renderable(value)`, cut to `limit` characters when given.
    """
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
    """`Type: message` for an exception, safely: its `__str__` may raise anything, even
    SystemExit, and describing a failure must not fail too."""
    name = _type_name(error)
    try:
        message = str(error)
    except BaseException:
        return name
    return f"{name}: {clean_str(message)}" if message else name
