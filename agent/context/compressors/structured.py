"""JSON values (dicts, lists, HTTP-shaped responses) shrunk to a budget, still valid JSON.

The shrinker renders the value at a ladder of levels, each shallower and terser
than the last (nesting depth, string length, list items, dict keys), and keeps the
richest rendering that fits. Whatever a level leaves out is marked where it was
("... +196 more", "{12 keys: a,b,c}", "(+830)") and totalled in a `_cut` note that
also says where the full result is, so the output is always one JSON document.

Lists of records (dicts) get a summary rather than a prefix: the total, the first
record in full, brief rows (identity fields only) for the next few and the last,
the fields the first record lacks, and counts of low-cardinality values (statuses,
types). That keeps what an agent decides with (how many, which ids, anything odd)
at a fraction of the size. HTTP-shaped dicts (`status`, `headers`, `body`) keep the
status, the body and only the headers an agent acts on: pagination, rate limits,
retry and location.

Each level's work is capped by a node budget, so a huge or deep input costs about
as much as the output it could produce; nothing here recurses deeper than the
current level's depth, and nothing iterates a set unsorted (no hash-seed effects).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.context.compressors.common import clip, where
from agent.context.compressors.detect import is_http
from agent.context.compressors.jsonish import json_key, normalize
from agent.context.compressors.shapes import (
    SCAN_LIMIT,
    SPREAD,
    Profile,
    collapsed_dict,
    compact,
    dotted_name,
    identity_keys,
    is_id_key,
    is_scalar,
    kind,
    mostly_containers,
    mostly_records,
    names,
    pair_map,
    profile,
    scalar,
    text_of,
)

__all__ = ["compress_structured"]


@dataclass(frozen=True)
class Level:
    depth: int
    text: int
    items: int
    keys: int


LEVELS = (
    Level(10, 600, 12, 80),
    Level(7, 240, 6, 48),
    Level(5, 120, 4, 32),
    Level(4, 80, 3, 24),
    Level(3, 60, 3, 16),
    Level(3, 40, 2, 12),
    Level(2, 30, 2, 8),
    Level(2, 20, 1, 6),
    Level(1, 16, 1, 4),
)

RICHEST = LEVELS[0]
"""Past its items (`_refine` goes on where it leaves the budget unspent) only records that show
a value not shown before: a thirteenth delivered order says nothing the twelfth did not."""

PRIORITY = frozenset(
    {
        *("id", "uuid", "key", "name", "title", "slug", "code", "type", "kind", "status", "state", "level"),
        *("version", "loc", "msg", "message", "error", "errors", "detail", "reason", "total", "count"),
        *("next", "cursor", "next_cursor", "has_more"),
    }
)
"""Keys kept even when a dict has more keys than a level shows."""
HEADERS_KEPT = re.compile(
    r"^(link|location|retry-after|x-ratelimit-.*|ratelimit.*|x-rate-limit-.*|x-total.*|x-next.*|x-page.*"
    r"|x-per-page|warning|deprecation|sunset)$",
    re.IGNORECASE,
)


class _TooBig(Exception):
    """This level would produce far more than the budget: try a terser one."""


class _Viewer:
    def __init__(self, level: Level, node_limit: int, profiles: dict[int, Profile], keep: set[int]) -> None:
        self.level = level
        self.node_limit = node_limit
        self.nodes = 0
        self.profiles = profiles
        self.keep = keep
        self.items_cut = 0
        self.keys_cut = 0
        self.texts_cut = 0
        self.nested_cut = 0

    def view(self, value: Any, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > self.node_limit:
            raise _TooBig
        value = normalize(value)
        if isinstance(value, str):
            if len(value) > self.level.text and not _identifier(value):
                self.texts_cut += 1
                return clip(value, self.level.text)
            return value
        if isinstance(value, Mapping):
            return self._dict(value, depth)
        if isinstance(value, (list, tuple)):
            pairs = pair_map(value)
            return self._dict(pairs, depth) if pairs is not None else self._list(value, depth)
        return scalar(value)

    def _dict(self, data: Mapping[Any, Any], depth: int) -> Any:
        if id(data) in self.keep:
            return {json_key(k): clip(text_of(v), 400) for k, v in data.items()}
        if depth >= self.level.depth:
            self.nested_cut += 1
            return self._collapsed(data)
        keys = list(data.keys())
        if depth + 1 >= self.level.depth and len(keys) > 3 and mostly_containers(data):
            self.nested_cut += 1  # its values would all collapse: their names say more
            return f"{{{len(keys)} keys: {names(keys, max(self.node_limit // 4, 200))}}}"
        rest: list[Any] = []
        if len(keys) > self.level.keys:
            chosen = self._chosen(data, keys)  # the last key always: the end of an object is read too
            rest = [k for k, c in zip(keys, chosen, strict=True) if not c]
            keys = [k for k, c in zip(keys, chosen, strict=True) if c]
        out: dict[str, Any] = {}
        for n, key in enumerate(keys):
            if rest and n == len(keys) - 1:
                self.keys_cut += len(rest)
                total = len(rest) + len(keys)
                out["..."] = f"+{len(rest)} of {total} keys: {names(rest, max(self.node_limit // 4, 200))}"
            out[json_key(key)] = self.view(data[key], depth + 1)
        return out

    def _collapsed(self, data: Mapping[Any, Any]) -> Any:
        """A dict past the level's depth: its identity fields when they are short scalars (the id
        and status of a subscription say more than `{37 keys}`), else its shape."""
        if len(data) == 1:
            ((key, only),) = data.items()
            only = normalize(only)
            if is_scalar(only) and (not isinstance(only, str) or len(only) <= 60 or _identifier(only)):
                return {json_key(key): scalar(only)}  # a typed value (`{"stringValue": ...}`), not nesting
        brief: dict[str, Any] = {}
        for key in identity_keys(data)[:3]:
            value = normalize(data[key])
            if is_scalar(value) and (not isinstance(value, str) or len(value) <= 60):
                brief[json_key(key)] = scalar(value) if not isinstance(value, str) else value
        if not brief:
            return collapsed_dict(data)
        brief["..."] = f"{len(data)} keys"
        return brief

    def _chosen(self, data: Mapping[Any, Any], keys: list[Any]) -> list[bool]:
        """Which keys of a dict wider than the level shows: by value, not document order. Every
        short scalar (a count, a flag, a name: cheap, and what is read) up to twice the level's keys,
        the priority and id keys, the last key, then the other keys, the smallest first (a package's
        two `dependencies` say more than the tenth of its sixty `scripts`) and links (`forks_url`:
        where more is) last, up to half the level's, and an empty value (null, "", [], {}) or a URL
        template only where room is left: it says nothing, and an API object's dozen nulls would
        take the places of its `requires_python` and `dependencies`."""
        last = len(keys) - 1
        chosen = [False] * len(keys)
        cheap, others, empty = 0, [], []
        for i, key in enumerate(keys):
            name = json_key(key)
            value = normalize(data[key])
            short = _short(value) or (
                isinstance(value, Mapping)
                and len(value) == 1
                and _short(normalize(next(iter(value.values()))))
            )  # {"stringValue": "checkout-service"} is one value too
            if i == last or name in PRIORITY or is_id_key(name):
                chosen[i] = True
            elif value is None or value == "" or (isinstance(value, (Mapping, list, tuple)) and not value):
                empty.append(i)
            elif isinstance(value, str) and _URL_TEMPLATE.match(value):
                empty.append(i)  # a link to fill in (`.../keys{/key_id}`): a pattern, not this object's data
            elif short and cheap < 2 * self.level.keys:
                cheap += 1
                chosen[i] = True
            else:
                others.append(i)
        others.sort(key=lambda i: (_link(keys[i], data[keys[i]]), _size(normalize(data[keys[i]]))))
        for i in [*others, *empty][: max(self.level.keys // 2, 1)]:
            chosen[i] = True
        return chosen

    def _list(self, items: Sequence[Any], depth: int) -> Any:
        count = len(items)
        if count == 0:
            return []
        if depth >= self.level.depth:
            self.nested_cut += 1
            ends = [normalize(items[0]), normalize(items[-1])]
            if all(
                _short(v) or (isinstance(v, str) and _identifier(v)) for v in ends
            ):  # cheap; they say most
                first, last = scalar(ends[0]), scalar(ends[1])
                return [first, f"... +{count - 2} more", last] if count > 2 else [first, last][:count]
            return f"[{count} items]"
        if count > self.level.items and mostly_records(items):
            return self._records(items, depth)
        if count <= min(self.level.items, RICHEST.items):
            return [self.view(item, depth + 1) for item in items]
        shown = max(min(self.level.items, RICHEST.items) - 1, 1)
        self.items_cut += count - shown - 1
        head = [self.view(item, depth + 1) for item in items[:shown]]
        return [*head, f"... +{count - shown - 1} more", self.view(items[-1], depth + 1)]

    def _records(self, items: Sequence[Any], depth: int) -> dict[str, Any]:
        count = len(items)
        profile = self._profile(items)
        shown = min(self.level.items, max(RICHEST.items, profile.novel + 1), count)
        picked = sorted(i for i in profile.spread[: shown - 1] if i < count - 1)  # the last is shown below
        rows: list[Any] = [self.view(items[0], depth + 2)]
        rows += [self._brief(items[i], depth + 2) for i in picked]
        shown = len(picked) + 1
        if count > shown:
            if count > shown + 1:
                rows.append(f"... +{count - shown - 1} more")
            rows.append(self._brief(items[-1], depth + 2))
            self.items_cut += max(count - shown - 1, 0)
        summary: dict[str, Any] = {"total": count, "items": rows}
        if profile.other_fields:
            names = list(profile.other_fields.items())[: self.level.keys]
            summary["other_fields"] = dict(names)
        if profile.values and self.level.depth >= 2:
            summary["values"] = dict(list(profile.values.items())[: max(self.level.items, 2)])
        if count > SCAN_LIMIT and (profile.other_fields or profile.values):
            summary["scanned"] = SCAN_LIMIT
        return summary

    def _brief(self, item: Any, depth: int, reach: int = 3) -> Any:
        record = normalize(item)
        if isinstance(record, (list, tuple)) and record:  # out of reach too: a brief, never the whole list
            pairs = pair_map(record)
            if pairs is not None:
                return self._brief(pairs, depth, max(reach - 1, 0))
            return [self._brief(record[0], depth, max(reach - 1, 0))]
        if not isinstance(record, Mapping):
            return self.view(record, depth)
        keys = identity_keys(record) or dotted_name(record)
        if not keys:
            keys = [k for k in record if is_scalar(record[k])][:3]
        if not keys and reach:  # only containers: the identity of what is inside them
            inner = {json_key(k): self._brief(record[k], depth, reach - 1) for k in list(record)[:2]}
            return {k: v for k, v in inner.items() if v not in ({}, [], [{}])}
        if len(record) <= 4 and all(is_scalar(v) for v in record.values()):
            keys = list(record)
        out: dict[str, Any] = {}
        for key in keys:
            self.nodes += 1
            value = normalize(record[key])
            if is_scalar(value):
                out[json_key(key)] = self.view(value, depth)
            else:
                small = compact(value, 60)
                out[json_key(key)] = small if small is not None else self.view(value, self.level.depth)
        if all(isinstance(k, str) and is_id_key(k) for k in keys):
            out.update(self._owner(record, keys, depth))
        return out

    def _owner(self, record: Mapping[Any, Any], keys: list[Any], depth: int) -> dict[str, Any]:
        """A record known only by its id (a comment, an event) is briefed with who or what it is
        about too: the first nested object's name (`"user": {"login": ...}`)."""
        for key, raw in record.items():
            value = normalize(raw)
            if key in keys or not isinstance(value, Mapping):
                continue
            inner = [k for k in identity_keys(value) if isinstance(k, str) and not is_id_key(k)][:1]
            named = {json_key(k): self.view(normalize(value[k]), depth) for k in inner if is_scalar(value[k])}
            if named:
                self.nodes += 1
                return {json_key(key): named}
        return {}

    def _profile(self, items: Sequence[Any]) -> Profile:
        cached = self.profiles.get(id(items))
        if cached is None:
            cached = profile(items)
            self.profiles[id(items)] = cached
        return cached


_URL_TEMPLATE = re.compile(r"https?://\S*\{[/?+#&.;]?\w[^}]*\}\S*$")
"""A URL template (RFC 6570: `https://api.github.com/repos/o/r/issues{/number}`)."""


def _link(key: Any, value: Any) -> bool:
    """A hypermedia link (`"forks_url": "https://api..."`): where more is, not what this object is."""
    return (
        isinstance(key, str) and key.endswith("_url") and isinstance(value, str) and value.startswith("http")
    )


def _size(value: Any, reach: int = 64) -> int:
    """About how much of the budget `value` would take: its values counted (up to `reach`)."""
    if isinstance(value, str):
        return len(value) // 40
    if not isinstance(value, (Mapping, list, tuple)):
        return 0
    count, stack = 0, [value]
    while stack and count < reach:
        node = stack.pop()
        children = list(node.values()) if isinstance(node, Mapping) else list(node)
        count += len(children)
        stack.extend(c for c in children if isinstance(c, (Mapping, list, tuple)))
    return count


def _short(value: Any) -> bool:
    return is_scalar(value) and (not isinstance(value, str) or len(value) <= 40)


IDENTIFIER_CHARS = 200
"""An identifier (a URL, a hash, a path: one word) up to this long is never cut: half a
tarball URL or a digest is no use, and `read_artifact` would be needed for the other half."""


def _identifier(value: str) -> bool:
    return len(value) <= IDENTIFIER_CHARS and not any(c.isspace() for c in value)


def _http_view(value: Mapping[str, Any], keep: set[int]) -> tuple[dict[str, Any], int]:
    """The response with only the actionable headers, and how many headers were dropped."""
    from agent.context.compressors.jsonish import loads_json_text

    headers = value["headers"]
    kept = {json_key(k): v for k, v in headers.items() if HEADERS_KEPT.match(json_key(k))}
    keep.add(id(kept))
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "headers":
            out["headers"] = kept
        elif key in ("body", "json", "data", "text") and isinstance(item, str):
            parsed, body = loads_json_text(item)
            out[key] = body if parsed else item
        else:
            out[json_key(key)] = item
    return out, len(headers) - len(kept)


def compress_structured(value: Any, budget: int, pointer: str | None) -> str:
    """`value` (a dict, list or other JSON-able value) as one JSON document of at most `budget` chars."""
    keep: set[int] = set()
    dropped_headers = 0
    if is_http(value):
        value, dropped_headers = _http_view(value, keep)
    profiles: dict[int, Profile] = {}
    for level in LEVELS:
        text = _render(value, level, budget, profiles, keep, dropped_headers, pointer)
        if text is not None and len(text) <= budget:
            if len(text) < budget * FILL:
                return _refine(value, level, text, budget, profiles, keep, dropped_headers, pointer)
            return text
    return _minimal(value, budget, pointer)


FILL = 0.85
"""A level that fits in less than this share of the budget is refined (the ladder's steps are
coarse: one level can be 13,800 chars and the next 426; the richest can leave half of it)."""


def _render(
    value: Any,
    level: Level,
    budget: int,
    profiles: dict[int, Profile],
    keep: set[int],
    dropped_headers: int,
    pointer: str | None,
) -> str | None:
    viewer = _Viewer(level, max(budget, 400), profiles, keep)
    try:
        view = viewer.view(value, 0)
    except _TooBig:
        return None
    return _wrap(view, viewer, dropped_headers, pointer)


def _refine(
    value: Any,
    level: Level,
    text: str,
    budget: int,
    profiles: dict[int, Profile],
    keep: set[int],
    dropped_headers: int,
    pointer: str | None,
) -> str:
    """`level` made richer one dimension at a time, while it fits: depth first (what is inside
    says more than how much of it), then keys, then items, then string length. Items go past
    the ladder's richest level (`RICHEST`), up to the records `spread` orders: a budget twice
    the default would otherwise stop at the same twelve lint codes as the default."""

    def fits(amount: int) -> str | None:
        got = _render(
            value, replace(level, **{field: amount}), budget, profiles, keep, dropped_headers, pointer
        )
        return got if got is not None and len(got) <= budget else None

    for field in ("depth", "keys", "items", "text"):
        ladder = {getattr(lv, field) for lv in LEVELS} | ({SPREAD + 1} if field == "items" else set())
        richer = sorted(amount for amount in ladder if amount > getattr(level, field))
        for amount in richer:
            low = getattr(level, field)
            if (got := fits(amount)) is not None:
                level, text = replace(level, **{field: amount}), got
                continue
            while amount - low > 1:  # between the last step that fit and the first that did not
                middle = (low + amount) // 2
                if (got := fits(middle)) is not None:
                    low, level, text = middle, replace(level, **{field: middle}), got
                else:
                    amount = middle
            break
    return text


def _wrap(view: Any, viewer: _Viewer, dropped_headers: int, pointer: str | None) -> str:
    parts = [
        f"{n} {label}"
        for n, label in (
            (viewer.items_cut, "items"),
            (viewer.keys_cut, "keys"),
            (viewer.texts_cut, "long strings"),
            (viewer.nested_cut, "nested values"),
            (dropped_headers, "headers"),
        )
        if n
    ]
    if not parts:
        return json.dumps(view, ensure_ascii=False, separators=(",", ":"))
    note = f"cut {', '.join(parts) or 'nothing'}; {where(pointer)}"
    if isinstance(view, dict):
        view = {**view, "_cut": note}
    elif isinstance(view, list):
        view = [*view, note]
    else:
        view = {"value": view, "_cut": note}
    return json.dumps(view, ensure_ascii=False, separators=(",", ":"))


def _minimal(value: Any, budget: int, pointer: str | None) -> str:
    value = normalize(value)
    if isinstance(value, Mapping):
        shape = f"object with {len(value)} keys: " + ",".join(json_key(k) for k in list(value)[:50])
    elif isinstance(value, (list, tuple)):
        shape = f"list of {len(value)} items"
    else:
        shape = kind(value)
    tail = f"; {where(pointer)}"
    room = max(budget - len(tail) - 16, 8)
    return json.dumps({"_cut": clip(shape, room) + tail}, ensure_ascii=False, separators=(",", ":"))
