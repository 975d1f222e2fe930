"""Tool search on real MCP tools: the frozen labels, their split, and regression floors.

The tools are read from `../shared/realdata/mcp-tools/tools.json` (never copied into the
repository); where that folder is absent (a user's clone) the tests that need it skip and
say why. The labels are ours (`benchmarks/tool_search_data/real_*queries.json`), frozen by
hash in `benchmarks.tool_search.REAL_QUERY_SETS`.
"""

from __future__ import annotations

import hashlib

import pytest

from benchmarks.tool_search import (
    CORE_DECLARATIONS,
    DATA,
    MISSING_REAL,
    REAL_QUERY_SETS,
    evaluate_real,
    real_half,
    real_kind,
    real_queries,
    real_rankers,
    real_tools,
)

TOOLS = real_tools()
needs_real = pytest.mark.skipif(TOOLS is None, reason=MISSING_REAL)


def test_the_labels_are_frozen_by_hash() -> None:
    for file, frozen in REAL_QUERY_SETS.items():
        assert hashlib.sha256((DATA / file).read_bytes()).hexdigest() == frozen, f"{file} changed"
    queries = real_queries()
    assert len(queries) >= 120 and len({q["query"] for q in queries}) == len(queries)
    assert {real_kind(q) for q in queries} == {"one-step", "multi-step"}


def test_the_split_is_by_hash_of_the_query_text_and_both_halves_are_big() -> None:
    queries = real_queries()
    halves = [real_half(q) for q in queries]
    assert halves == [real_half({"query": q["query"]}) for q in queries]  # the text alone decides
    assert min(halves.count("tuning"), halves.count("held-back")) >= 100


@needs_real
def test_every_label_names_a_real_tool() -> None:
    assert TOOLS is not None
    names = {t["name"] for t in TOOLS}
    for q in real_queries():
        for need in q["needs"]:
            assert set([need] if isinstance(need, str) else need) <= names, q["query"]


@needs_real
def test_the_ranker_keeps_its_measured_figures_and_never_returns_the_core_tools() -> None:
    # Floors a little under the figures in docs/tool-search.md: a regression fails here.
    assert TOOLS is not None
    rank = real_rankers(TOOLS, semantic=False)["ours (ToolIndex.search)"]
    queries = real_queries()
    tuning = evaluate_real(rank, [q for q in queries if real_half(q) == "tuning"])
    held = evaluate_real(rank, [q for q in queries if real_half(q) == "held-back"])
    assert tuning["recall"] >= 0.81 and held["recall"] >= 0.71 and held["one"] >= 0.72
    assert tuning["core"] == held["core"] == 0 and len(CORE_DECLARATIONS) == 2
