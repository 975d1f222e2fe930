"""Odd values spelled as plain data: the copy `agent.render.renderable` makes when a tool
returns more than plain JSON (tuple keys, a 20,000-digit int, a set, a pydantic model, a list
that holds itself, an object whose `__str__` raises).

A plain result passes `render`'s fast check and never comes here, so this module is loaded
only by the runs that meet an odd value. `render` hands in what both need (its string
cleaner, its type namer, its limits), so nothing here imports the package and no import
circle forms. The walk uses an explicit stack: a dict 10,000 levels deep must not recurse.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Walker"]

_INT_DIGITS = 100_000
"""Ints longer than this are described, not printed."""
_PLAIN = (str, int, float, bool, type(None))
_WALKED = (*_PLAIN, Mapping, list, tuple)
_END = object()
_SMALL = 1 << 60


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


def _cut_string(text: str, max_chars: int) -> str:
    half = max_chars // 2
    return text[:half] + f"[... {len(text) - 2 * half:,} chars cut ...]" + text[len(text) - half :]


def _put(container: Any, is_dict: bool, key: Any, child: Any) -> None:
    if is_dict:
        container[key] = child
    else:
        container.append(child)


@dataclass(frozen=True)
class Walker:
    """Makes plain copies, cleaning strings with `clean`, naming types with `type_name`, cutting
    containers nested deeper than `max_depth` and past `max_values` values with a note."""

    clean: Callable[[str], str]
    type_name: Callable[[Any], str]
    max_depth: int
    max_values: int

    def _text_of(self, value: Any) -> str:
        """`str(value)`, or a note saying why there is none."""
        try:
            text = str(value)
        except Exception as error:
            return f"<unprintable {self.type_name(value)}: __str__ raised {self.type_name(error)}>"
        return self.clean(text)

    def _key(self, key: Any) -> str:
        """A dict key as JSON spells it."""
        if isinstance(key, str):
            return self.clean(key)
        if key is None or isinstance(key, bool):
            return json.dumps(key)
        if isinstance(key, int):
            return _int_text(key)
        if isinstance(key, float):
            return json.dumps(float.__float__(key))
        return self._text_of(key)

    def _scalar(self, value: Any) -> tuple[Any, bool]:
        """(plain scalar, changed) for a str, int, float, bool or None (or a subclass)."""
        kind = type(value)
        if kind is str:
            cleaned = self.clean(value)
            return cleaned, cleaned is not value
        if kind is bool or value is None:
            return value, False
        if isinstance(value, int):
            if value.bit_length() < 14_000:  # printable under the default 4,300-digit limit
                return int.__index__(value), kind is not int
            return _int_text(value), True
        if isinstance(value, float):
            return float.__float__(value), kind is not float
        return self.clean(value), True

    def _open(self, value: Any) -> Any:
        """One level of a value that is neither plain nor a container: something plain or walkable."""
        if isinstance(value, (bytes, bytearray, memoryview)):
            try:
                return bytes(value).decode("utf-8", errors="replace")
            except Exception:
                return f"<unreadable {self.type_name(value)}>"
        try:
            if isinstance(value, enum.Enum):
                return value.value
            dump = None if isinstance(value, type) else getattr(value, "model_dump", None)
            if callable(dump):
                return dump(mode="json")
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
            if isinstance(value, (set, frozenset)):
                return sorted(value, key=self._text_of)
            if isinstance(value, deque):
                return list(value)
        except Exception:
            pass
        return self._text_of(value)

    def walk(self, value: Any, max_chars: int | None) -> tuple[Any, bool]:
        """(plain copy of `value`, whether anything had to change); strings nested inside cut
        to `max_chars`."""
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
                _put(out, is_dict, "<error>", f"<{self.type_name(error)} while reading>")
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
                    fixed = self._key(key)
                    changed = changed or fixed is not key
                    key = fixed
            count += 1
            if count > self.max_values:
                for frame in stack[1:]:
                    _put(frame[1], frame[2], "...", f"[... cut: over {self.max_values:,} values ...]")
                return (root[0] if root else None), True
            kind = type(node)
            if (kind is int and -_SMALL < node < _SMALL) or kind is float or kind is bool or node is None:
                child: Any = node  # the common cases first, cheaply
            elif kind is str and node.isascii() and len(node) <= longest:
                child = node
            else:
                if not isinstance(node, _WALKED):
                    node, changed = self._open(node), True
                    if not isinstance(node, _WALKED):
                        node = self._text_of(node)
                if isinstance(node, _PLAIN):
                    if isinstance(node, str) and len(node) > longest:
                        node, changed = _cut_string(node, longest), True
                    child, fixed_scalar = self._scalar(node)
                    changed = changed or fixed_scalar
                elif id(node) in on_path:
                    child, changed = "<cycle>", True
                elif len(stack) > self.max_depth:
                    child, changed = f"[... cut: nested deeper than {self.max_depth} levels ...]", True
                else:
                    is_map = isinstance(node, Mapping)
                    changed = changed or type(node) not in (dict, list, tuple)
                    try:
                        source = iter(node.items()) if is_map else iter(node)
                    except Exception as error:
                        source, is_map, changed = (
                            iter([f"<{self.type_name(error)} while reading>"]),
                            False,
                            True,
                        )
                    child = {} if is_map else []
                    on_path.add(id(node))
                    stack.append((source, child, is_map, id(node)))
            if is_dict:
                out[key] = child
            else:
                out.append(child)
        return (root[0] if root else None), changed
