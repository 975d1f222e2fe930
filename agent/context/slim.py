"""Per-tool field whitelists: the cheapest cut, because the tool's author knows what matters.

An order-lookup API returns thirty fields per order; deciding a refund needs five.
`@tool(keep=["order_id", "item", "price", "status", "customer.name"])` (or
`Agent(keep_fields={...})`, or the same as a class attribute) keeps exactly those:

- a dict keeps only the listed paths; a dotted path keeps a nested field and the
  structure around it (`customer.name` -> `{"customer": {"name": ...}}`), and a path
  that meets a list applies to every item of it (`items.sku`);
- a list keeps its first `top_n` items, each slimmed, inside
  `{"items": [...], "total": N}`; lists nested inside keep `top_n` items too;
- whatever was dropped is counted in a `_cut` note naming where the full result is.

`slim` returns None when the whitelist matches nothing in the result (a tool that
changed shape, an error payload): the caller then falls back to the compressor
rather than send an empty object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.context.compressors.common import where
from agent.context.compressors.jsonish import json_key, normalize

__all__ = ["parse_paths", "slim"]

Trie = dict[str, "Trie"]


def parse_paths(paths: Sequence[str]) -> Trie:
    """Dotted paths as a trie: ["a", "b.c", "b.d"] -> {"a": {}, "b": {"c": {}, "d": {}}}."""
    trie: Trie = {}
    for path in paths:
        parts = str(path).split(".")
        if not all(parts):
            raise ValueError(f"bad keep path {path!r}: empty segment")
        node = trie
        for part in parts:
            node = node.setdefault(part, {})
    return trie


@dataclass
class _Tally:
    top_n: int
    items: int = 0
    matched: bool = False
    dropped: set[str] = field(default_factory=set)


def _apply(value: Any, trie: Trie, tally: _Tally, prefix: str) -> Any:
    value = normalize(value)
    if isinstance(value, (list, tuple)):
        items = [_apply(item, trie, tally, prefix) for item in value[: tally.top_n]]
        if len(value) > tally.top_n:
            tally.items += len(value) - tally.top_n
            items.append(f"... +{len(value) - tally.top_n} more")
        return items
    if not trie or not isinstance(value, Mapping):
        return value
    by_name = {json_key(k): k for k in value}
    out: dict[str, Any] = {}
    for name, sub in trie.items():
        if name in by_name:
            tally.matched = True
            out[name] = _apply(value[by_name[name]], sub, tally, f"{prefix}{name}.")
    tally.dropped.update(prefix + name for name in by_name if name not in out)
    return out


def slim(value: Any, keep: Sequence[str], *, top_n: int = 5, pointer: str | None = None) -> Any | None:
    """`value` with only the `keep` paths (lists cut to `top_n`), or None if nothing matched."""
    trie = parse_paths(keep)
    tally = _Tally(top_n=max(top_n, 0))
    value = normalize(value)
    if isinstance(value, (list, tuple)):
        total = len(value)
        items = [_apply(item, trie, tally, "") for item in value[: tally.top_n]]
        if total and not tally.matched:
            return None
        out: dict[str, Any] = {"items": items, "total": total}
        shown_cut = total - len(items)
    elif isinstance(value, Mapping):
        out = _apply(value, trie, tally, "")
        if not tally.matched:
            return None
        shown_cut = 0
    else:
        return None
    parts = []
    if shown_cut:
        parts.append(f"{shown_cut} more items")
    if tally.items:
        parts.append(f"{tally.items} nested items")
    if tally.dropped:
        parts.append(f"{len(tally.dropped)} other fields")
    if parts:
        out = {**out, "_cut": f"cut {', '.join(parts)}; {where(pointer)}"}
    return out
