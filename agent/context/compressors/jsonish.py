"""Any Python value as JSON text, safely: the full dump for artifacts, and parsing.

Tool results are not always JSON-friendly (tuple keys, NaN, bytes, sets, pydantic models, huge
ints, nesting deep enough to make the C encoder raise RecursionError), so the fallback is an
iterative encoder: any full result can be stored and measured. Sets are sorted (hash-seed proof).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TooDeep", "dump_full", "encode_iterative", "json_key", "loads_json_text", "normalize", "safe_str"]


def safe_str(value: Any, limit: int = 10_000) -> str:
    """`str(value)`, never raising, at most `limit` characters."""
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        text = f"<unprintable {type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + f"...(+{len(text) - limit})"


def _repr_key(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return type(value).__name__


def normalize(value: Any) -> Any:
    """One level of `value` as a JSON kind: str, int, float, bool, None, Mapping, list or tuple."""
    if value is None or isinstance(value, (str, bool, int, float, Mapping, list, tuple)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=_repr_key)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            dumped = dump(mode="json")
            if isinstance(dumped, (Mapping, list)):
                return dumped
        except Exception:
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        except Exception:
            pass
    return safe_str(value)


def json_key(key: Any) -> str:
    """A dict key as JSON spells it (non-string keys included)."""
    if isinstance(key, str):
        return key
    if isinstance(key, float) and not math.isfinite(key):
        return "NaN" if math.isnan(key) else ("Infinity" if key > 0 else "-Infinity")
    if key is None or isinstance(key, (int, float)):
        return scalar_json(key)
    return safe_str(key, 200)


def scalar_json(value: Any) -> str:
    """A scalar as strict JSON text (NaN and infinities become strings)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        try:
            return str(int(value))
        except ValueError:
            return f'"<int of {value.bit_length()} bits>"'
    if isinstance(value, float):
        if math.isnan(value):
            return '"NaN"'
        if math.isinf(value):
            return '"Infinity"' if value > 0 else '"-Infinity"'
        return repr(float(value))
    return json.dumps(value if isinstance(value, str) else safe_str(value), ensure_ascii=False)


def _default(value: Any) -> Any:
    normal = normalize(value)
    if normal is value:  # an unknown object normalize could not open
        return safe_str(value)
    return normal


def dump_full(value: Any) -> tuple[str, bool]:
    """The whole `value` as text, and whether that text is JSON: strings and bytes as they are,
    anything else as compact strict JSON (NaN becomes a string), whatever its shape or depth."""
    if isinstance(value, str):
        return value, False
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace"), False
    try:
        return json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default
        ), True
    except (ValueError, TypeError, RecursionError, OverflowError):
        return encode_iterative(value), True


_END = object()


def encode_iterative(value: Any) -> str:
    """Compact strict JSON of any value, with an explicit stack (no recursion limit); cycles become
    the string "<cycle>"."""
    out: list[str] = []
    stack: list[tuple[Iterator[Any], bool, int]] = []
    on_path: set[int] = set()
    current: Any = value
    while True:
        node = normalize(current)
        if not isinstance(node, (Mapping, list, tuple)):
            out.append(scalar_json(node))
        elif id(node) in on_path:
            out.append('"<cycle>"')
        else:
            is_dict = isinstance(node, Mapping)
            out.append("{" if is_dict else "[")
            on_path.add(id(node))
            items: list[Any]
            try:
                items = list(node.items()) if isinstance(node, Mapping) else list(node)
            except Exception:
                items = []
            stack.append((iter(items), is_dict, id(node)))
        while stack:  # close finished containers until one has a next item
            iterator, is_dict, node_id = stack[-1]
            item: Any = next(iterator, _END)
            if item is not _END:
                break
            out.append("}" if is_dict else "]")
            on_path.discard(node_id)
            stack.pop()
        else:
            return "".join(out)
        if out[-1] not in ("{", "["):
            out.append(",")
        if is_dict:
            key, current = item
            out.append(json.dumps(json_key(key), ensure_ascii=False) + ":")
        else:
            current = item


@dataclass(frozen=True)
class TooDeep:
    """JSON text nested deeper than `json.loads` can follow."""

    size: int
    head: str


def loads_json_text(text: str) -> tuple[bool, Any]:
    """(True, value) when `text` is a JSON document or JSON Lines; (False, None) otherwise."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return False, None
    try:
        return True, json.loads(stripped)
    except RecursionError:  # JSON nested deeper than the parser goes: the caller describes it
        return True, TooDeep(len(stripped), stripped[:80])
    except ValueError:
        pass
    if stripped[0] != "{" or "\n" not in stripped:
        return False, None
    rows = []
    for line in stripped.splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except (ValueError, RecursionError):
            return False, None
    return (True, rows) if len(rows) > 1 else (False, None)
