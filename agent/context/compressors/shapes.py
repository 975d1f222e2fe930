"""What a JSON value looks like: record identities, field profiles, compact summaries.

The helpers the structured shrinker uses to describe what it does not show in
full: which keys identify a record (an id, a name, a state, a message), which
fields a list's records have beyond the first one's, the counts of a field's few
distinct values, and the short forms of collapsed dicts and long key lists.
"""

from __future__ import annotations

import heapq
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.context.compressors.jsonish import json_key, normalize, scalar_json

__all__ = [
    "SCAN_LIMIT",
    "Profile",
    "collapsed_dict",
    "compact",
    "dotted_name",
    "identity_keys",
    "is_id_key",
    "is_scalar",
    "kind",
    "mostly_containers",
    "mostly_records",
    "names",
    "pair_map",
    "profile",
    "scalar",
    "text_of",
]

_ID_SUFFIX = re.compile(r"(?:_id|Id|_no|_number)$")
SCAN_LIMIT = 2000
"""Records scanned for other fields and value counts (the total is always exact)."""


def is_id_key(key: str) -> bool:
    return key in ("id", "uuid") or _ID_SUFFIX.search(key) is not None


@dataclass
class Profile:
    other_fields: dict[str, str]
    values: dict[str, dict[str, int]]
    spread: list[int]
    """Indices of records (after the first) in the order they say most: see `spread`."""
    novel: int
    """How many of `spread`'s first records each show a value not shown before."""


_CATEGORIES = (
    frozenset(("id", "uuid", "number")),
    frozenset(("name", "title", "slug", "key", "login", "email", "path", "filename")),
    frozenset(("status", "state", "level")),
    frozenset(("type", "kind", "version")),
    frozenset(("loc", "msg", "message", "error", "code", "reason")),
)


def identity_keys(record: Mapping[Any, Any]) -> list[Any]:
    """Up to six keys that identify a record: one id, one name, one state, one kind, two details (a
    span's `kind` is the same in every row; its `status` is what the row says)."""
    room = [1, 1, 1, 1, 2]
    keys = []
    for key in record:
        if not isinstance(key, str):
            continue
        for n, category in enumerate(_CATEGORIES):
            if room[n] and (key in category or (n == 0 and is_id_key(key))):
                room[n] -= 1
                keys.append(key)
                break
    return keys


def profile(items: Sequence[Any]) -> Profile:
    """Fields missing from the first record, and counts of low-cardinality scalar fields."""
    first = normalize(items[0])
    first_keys = {json_key(k) for k in first} if isinstance(first, Mapping) else set()
    other: dict[str, str] = {}
    counts: dict[str, dict[str, int] | None] = {}
    seen = 0
    for item in items[:SCAN_LIMIT]:
        record = normalize(item)
        if not isinstance(record, Mapping):
            continue
        seen += 1
        for raw_key, raw_value in record.items():
            key = json_key(raw_key)
            value = normalize(raw_value)
            if key not in first_keys and key not in other:
                other[key] = kind(value)
            bucket = counts.get(key, {})
            if bucket is None or is_id_key(key):
                continue
            if not is_scalar(value) or (isinstance(value, str) and len(value) > 40):
                counts[key] = None
                continue
            label = value if isinstance(value, str) else scalar_json(value)
            bucket[label] = bucket.get(label, 0) + 1
            counts[key] = bucket if len(bucket) <= 6 else None
    values: dict[str, dict[str, int]] = {}
    if seen >= 8:
        for key, bucket in counts.items():
            if bucket and 2 <= len(bucket) <= 6 and sum(bucket.values()) >= seen // 2:
                values[key] = dict(sorted(bucket.items(), key=lambda kv: (-kv[1], kv[0])))
    order, novel = spread(items[:SCAN_LIMIT])
    return Profile(other, values, order, novel)


SPREAD = 40
"""Records ordered by `spread` at most: more brief rows than this never fit a budget."""


_PAIR_KEYS = (("key", "value"), ("name", "value"), ("Key", "Value"), ("Name", "Value"))


def pair_map(items: Sequence[Any]) -> dict[str, Any] | None:
    """A list of `{key, value}` records (OpenTelemetry attributes, AWS tags, env lists) as the map
    it spells, `{key: value}`, when its keys are distinct strings; else None."""
    if not 2 <= len(items) <= SCAN_LIMIT:
        return None
    first = normalize(items[0])
    if not isinstance(first, Mapping) or len(first) != 2:
        return None
    names = next((pair for pair in _PAIR_KEYS if all(k in first for k in pair)), None)
    if names is None:
        return None
    out: dict[str, Any] = {}
    for item in items:
        record = normalize(item)
        if (
            not isinstance(record, Mapping)
            or len(record) != 2
            or names[0] not in record
            or names[1] not in record
        ):
            return None
        key = record[names[0]]
        if not isinstance(key, str) or key in out:
            return None
        out[key] = record[names[1]]
    return out


def dotted_name(record: Mapping[Any, Any]) -> list[Any]:
    """The shortest `*.name` key (`service.name` over `telemetry.sdk.name`): a map's identity."""
    names = [k for k in record if isinstance(k, str) and k.endswith(".name")]
    return [min(names, key=len)] if names else []


_PAIRS_READ = 64
"""Longest `{key, value}` list read as a map for a record's identity (a brief row reads longer ones
too): it is asked of every record, and a longer list is read by its first entry."""


def _identity_pairs(record: Any, reach: int = 4, path: str = "") -> list[tuple[str, str]]:
    """(key, value) of a record's identity fields that are short scalars, ids left out. A record
    of containers only is known by what is inside them, as its brief row shows it: a trace batch
    by its service and span names (`path` is the dotted way down, `reach` the levels left)."""
    record = normalize(record)
    if isinstance(record, (list, tuple)):
        inner = pair_map(record) if path and 2 <= len(record) <= _PAIRS_READ else None
        if inner is not None:  # `{key, value}` entries spell a map: no level down
            return _identity_pairs(inner, reach, path)
        return _identity_pairs(record[0], reach - 1, path) if path and record and reach else []
    if not isinstance(record, Mapping):
        return []
    keys = identity_keys(record)
    if path and not keys:
        scalars = (k for k in record if isinstance(k, str) and is_scalar(normalize(record[k])))
        keys = dotted_name(record) or list(itertools.islice(scalars, 3))
    pairs = []
    for key in keys:
        value = normalize(record[key])
        if is_scalar(value) and not is_id_key(key) and (not isinstance(value, str) or len(value) <= 80):
            pairs.append((path + key, value if isinstance(value, str) else scalar_json(value)))
        elif path and reach and isinstance(value, Mapping):  # a name spelled as an object
            pairs += _identity_pairs(value, reach - 1, f"{path}{key}.")
    if not keys and reach and not any(is_scalar(normalize(v)) for v in record.values()):
        for key in list(record)[:2]:
            pairs += _identity_pairs(record[key], reach - 1, f"{path}{json_key(key)}.")
    return pairs


def spread(items: Sequence[Any]) -> tuple[list[int], int]:
    """Indices of the records after the first, in the order that shows most kinds: each next one
    the record with the most identity values not yet shown (a code, a file, a state), the rarer
    the better; then the rest in document order; and how many of them come first as new.
    Document order would brief five copies of the commonest lint code and never reach the code
    seen once. Fields nearly unique per record (a timestamp, a url) are left out: every record
    is new in them."""
    rows = [_identity_pairs(item) for item in items]
    counts: dict[tuple[str, str], int] = {}
    for pairs in rows:
        for pair in pairs:
            counts[pair] = counts.get(pair, 0) + 1
    distinct: dict[str, int] = {}
    for key, _ in counts:
        distinct[key] = distinct.get(key, 0) + 1
    telling = {key for key, n in distinct.items() if n * 2 <= len(rows)}
    rows = [[p for p in pairs if p[0] in telling] for pairs in rows]
    shown = set(rows[0]) if rows else set()

    def score(i: int) -> tuple[int, float]:
        new = [p for p in rows[i] if p not in shown]
        return len(new), sum(1 / counts[p] for p in new)

    heap = [(-n, -rare, i) for i in range(1, len(rows)) for n, rare in [score(i)] if n]
    heapq.heapify(heap)
    order: list[int] = []
    while heap and len(order) < SPREAD:  # lazy greedy: a score only falls as values are shown
        _, _, i = heapq.heappop(heap)
        n, rare = score(i)
        if n and heap and (-n, -rare, i) > heap[0]:
            heapq.heappush(heap, (-n, -rare, i))
            continue
        if n:
            order.append(i)
            shown.update(rows[i])
    picked = set(order)
    rest = [i for i in range(1, len(items)) if i not in picked][: max(SPREAD - len(order), 0)]
    return order + rest, len(order)


def mostly_records(items: Sequence[Any]) -> bool:
    sample = items[:20]
    dicts = sum(1 for item in sample if isinstance(normalize(item), Mapping))
    return dicts * 10 >= len(sample) * 6


def scalar(value: Any) -> Any:
    """A scalar as a strict-JSON-safe Python value (NaN and unprintable ints become strings)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int) and -(10**15) < value < 10**15:
        return int(value)
    return json.loads(scalar_json(value))


def names(keys: Sequence[Any], limit: int) -> str:
    """Key names joined by commas; too many keep the first and the last ones, with a count between."""
    names = [json_key(k) for k in keys]
    if sum(len(n) + 1 for n in names) <= limit:
        return ",".join(names)
    head: list[str] = []
    used = 0
    for name in names:
        if used + len(name) + 1 > limit * 2 // 3:
            break
        head.append(name)
        used += len(name) + 1
    tail: list[str] = []
    for name in reversed(names[len(head) :]):
        if used + len(name) + 1 > limit - 16:
            break
        tail.insert(0, name)
        used += len(name) + 1
    return ",".join([*head, f"...+{len(names) - len(head) - len(tail)}...", *tail])


def mostly_containers(data: Mapping[Any, Any]) -> bool:
    sample = list(data.values())[:20]
    return sum(isinstance(normalize(v), (Mapping, list, tuple)) for v in sample) * 10 >= len(sample) * 6


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "list"
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(value), type(value).__name__)


def text_of(value: Any) -> str:
    value = normalize(value)
    return (
        value if isinstance(value, str) else scalar_json(value) if is_scalar(value) else compact_text(value)
    )


def compact_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)[:400]
    except (ValueError, TypeError, RecursionError):
        return f"<{kind(value)}>"


def compact(value: Any, limit: int) -> Any:
    """`value` itself when its JSON is at most `limit` chars and all-scalar one level down."""
    if isinstance(value, Mapping):
        parts = list(value.values())
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        return None
    if len(parts) > limit // 2 or not all(is_scalar(normalize(p)) for p in parts):
        return None
    text = compact_text(value)
    return json.loads(text) if len(text) <= limit and text[:1] in "{[" else None


def collapsed_dict(data: Mapping[Any, Any]) -> str:
    names = ",".join(json_key(k) for k in list(data)[:4])
    return f"{{{names}}}" if len(data) <= 3 and len(names) <= 30 else f"{{{len(data)} keys}}"
