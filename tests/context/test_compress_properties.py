"""The compressor's promises, for any input: it returns, within budget, JSON for JSON, the
same text under any hash seed, and it leaves the input alone."""

from __future__ import annotations

import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.context.compress import MIN_BUDGET, compress
from agent.context.compressors.jsonish import dump_full, encode_iterative

REPO = Path(__file__).resolve().parents[2]
PROPERTY = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])

keys = st.one_of(
    st.text(max_size=12),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.tuples(st.integers(), st.text(max_size=3)),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**4400, max_value=10**4500),  # too long for str() in Python 3.11
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=300),
    st.binary(max_size=300),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=30),
        st.tuples(inner, inner),
        st.dictionaries(keys, inner, max_size=20),
        st.frozensets(st.one_of(st.integers(), st.text(max_size=5)), max_size=8),
    ),
    max_leaves=120,
)
LINES = [
    "Traceback (most recent call last):",
    '  File "/app/main.py", line 12, in run',
    '  File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode',
    "    return json.loads(raw)",
    "ValueError: bad value",
    "The above exception was the direct cause of the following exception:",
    "2026-08-01 10:00:00,000 ERROR payment failed",
    "2026-08-01 10:00:01,000 INFO GET /orders 200",
    "=================== 1 failed, 3 passed in 0.1s ===================",
    "FAILED tests/test_x.py::test_y - assert 1 == 2",
    "E       assert 1 == 2",
    "_____________ test_y _____________",
    "<html><head><title>t</title></head><body><h1>Hi</h1><p>text</p>",
    "<script>x()</script></body></html>",
    "commit 0123456789abcdef0123456789abcdef01234567",
    "Author: Ada <a@b.c>",
    "    subject line",
    "drwxr-xr-x  2 root root  4096 Sep 22 04:45 lib",
    "pkg/sub/module.py",
    "def f(x):",
    "class C:",
    '{"a": [1, 2, {"b": null}], "c": "d"}',
    "[1, 2, 3]",
    "",
    "    ",
    "\x00\x01 binary",
]
texts = st.one_of(
    st.text(max_size=4000),
    st.lists(st.one_of(st.sampled_from(LINES), st.text(max_size=80)), max_size=400).map("\n".join),
)
budgets = st.integers(min_value=-5, max_value=3000)
small_budgets = st.integers(min_value=-5, max_value=600)  # small enough that most values get cut


def strict_json(text: str) -> Any:
    def reject(constant: str) -> Any:
        raise ValueError(constant)

    # JSON sets no limit on an integer's length; Python's int() does (4,300 digits), so keep the digits
    return json.loads(text, parse_constant=reject, parse_int=lambda d: int(d) if len(d) <= 4000 else d)


@pytest.mark.slow
@PROPERTY
@given(value=values, budget=small_budgets)
def test_any_value_compresses_without_raising_and_within_budget(value: Any, budget: int) -> None:
    before = pickle.dumps(value)
    out = compress(value, budget, pointer="tool-0123456789ab.json")
    assert isinstance(out, str)
    assert len(out) <= max(budget, MIN_BUDGET)
    assert pickle.dumps(value) == before, "the input is never mutated"


@pytest.mark.slow
@PROPERTY
@given(text=texts, budget=budgets)
def test_any_text_compresses_without_raising_and_within_budget(text: str, budget: int) -> None:
    out = compress(text, budget, pointer="tool-0123456789ab.txt")
    assert isinstance(out, str) and len(out) <= max(budget, MIN_BUDGET)
    if len(text) <= max(budget, MIN_BUDGET):
        assert out == text, "what fits is sent unchanged"


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.one_of(st.lists(values, max_size=40), st.dictionaries(keys, values, max_size=30)),
    budget=small_budgets,
)
def test_json_in_gives_strict_json_out(value: Any, budget: int) -> None:
    strict_json(compress(value, budget))
    strict_json(dump_full(value)[0])


def nested(depth: int, kind: type) -> Any:
    value: Any = {} if kind is dict else []
    node = value
    for _ in range(depth):
        child: Any = {} if kind is dict else []
        if kind is dict:
            node["a"] = child
        else:
            node.append(child)
        node = child
    return value


def test_nesting_ten_thousand_deep_is_fine() -> None:
    for value in (nested(10_000, dict), nested(10_000, list), "[" * 10_000 + "]" * 10_000):
        out = compress(value, 500, pointer="tool-0123456789ab.json")
        assert len(out) <= 500 and "tool-0123456789ab" in out
        strict_json(out)
    assert len(encode_iterative(nested(10_000, list))) == 20_002, "the full dump keeps every level"


def test_cycles_odd_keys_nan_bytes_and_broken_objects() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no str")

        __repr__ = __str__

    loop: list[Any] = [1]
    loop.append(loop)
    value = {
        (1, 2): math.nan,
        None: math.inf,
        3.5: b"\x00\xff" * 500,
        "obj": Broken(),
        "loop": loop,
        "set": {"b", "a"},
        "big": 10**5000,
    }
    text, is_json = dump_full(value)
    parsed = strict_json(text)
    assert is_json and parsed["(1, 2)"] == "NaN" and parsed["null"] == "Infinity"
    assert parsed["set"] == ["a", "b"], "sets sorted, never in hash order"
    assert parsed["loop"] == [1, "<cycle>"] and parsed["obj"] == "<unprintable Broken>"
    out = compress(value, 300)
    assert len(out) <= 300
    strict_json(out)


def test_binary_bytes_are_described_not_dumped() -> None:
    out = compress(b"\x00\x01\x02" * 10_000, 300, pointer="tool-0123456789ab.txt")
    assert out.startswith("[binary data, 30,000 bytes") and "artifact:tool-0123456789ab.txt" in out


SEED_SCRIPT = """
import hashlib, json
from agent.context.compress import compress
values = [
    {"tags": {"alpha", "beta", "gamma", "delta"},
     "rows": [{"id": i, "name": f"n{i}", "type": "t", "status": "ok", "key": str(i)} for i in range(80)]},
    [{"title": f"t{i}", "state": "open" if i % 7 else "closed", "labels": {"x", "y", "z"}}
     for i in range(120)],
    {"status": 200, "headers": {f"X-H{i}": "v" for i in range(30)}, "body": {"data": list(range(500))}},
    "\\n".join(f"2026-01-01 00:00:{i % 60:02d} INFO event {i}" for i in range(3000)),
]
print(hashlib.sha256(json.dumps([compress(v, 800) for v in values]).encode()).hexdigest())
"""


@pytest.mark.slow
def test_output_is_the_same_under_any_hash_seed() -> None:
    digests = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SEED_SCRIPT], capture_output=True, text=True, env=env, cwd=REPO, check=True
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1
