"""Tool search: does the model find the tools a task needs, and what does deferral save?

Data: `benchmarks/tool_search_data/` (249 tools modelled on MCP servers, 93 labelled task
queries, written before the retrieval code; see its README). Queries with an odd number
are the *tuning* half, the even ones the *held-back* half: weights, tokenisation and the
thesaurus were chosen looking at the tuning half only. Both are reported.

Rankers, each given the task text as its query (harder than the short query a model would
write):

* **hybrid**: ours (`agent.ext.tool_search.index.ToolIndex`): BM25 with identifier splitting,
  stemming and the thesaurus, graph expansion, weighted reciprocal-rank fusion;
* **bm25**: the same BM25 (same words, same parameters) alone, no thesaurus, no graph;
* **server-bm25 shape**: the API's server-side BM25 tool search as its docs describe it
  (BM25 over names, descriptions, argument names and argument descriptions), emulated
  locally with the same library on plain lower-cased words: no identifier splitting,
  stemming, thesaurus or graph;
* **server-regex shape**: the regex variant, emulated as the pattern a model would write
  from the task, every content word as an alternative (`(?i)word1|word2|...`), tools ranked
  by how many alternatives their text matches.

Metrics: recall@5 (share of the needed tools in the first five, averaged over queries),
MRR (1 / rank of the first needed tool), time per search. Tokens (the project's estimator,
`agent.context.tokens.estimate_tokens`): the tools of a request declaring all 249 tools
against one with deferral, where the prompt holds the search tool and the definitions its
five references load (a deferred declaration costs nothing until loaded), plus the search
call and its result.

    .venv/bin/python -m benchmarks.tool_search

Last line: `{"recall_at_5": X, "token_ratio": Y}` (hybrid over all queries; deferred
tokens / all-declared tokens, averaged over queries).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent.context.tokens import estimate_tokens
from agent.ext.tool_search import SEARCH_TOOL_NAME, ToolIndex
from agent.ext.tool_search.deferral import search_tool
from agent.ext.tool_search.index import document_words
from agent.ext.tool_search.text import STOPWORDS

DATA = Path(__file__).parent / "tool_search_data"
K = 5

Ranker = Callable[[str], list[str]]


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    tools = json.loads((DATA / "tools.json").read_text())
    queries = json.loads((DATA / "queries.json").read_text())
    return tools, queries


def half(query: dict[str, Any]) -> str:
    return "tuning" if int(query["id"][1:]) % 2 == 1 else "held-back"


def tool_text(declaration: dict[str, Any]) -> str:
    """Name, description, argument names and descriptions: what the server search reads."""
    parts = [declaration["name"], declaration.get("description", "")]
    for name, spec in declaration["input_schema"].get("properties", {}).items():
        parts += [name, spec.get("description", "")]
    return " ".join(parts)


def plain_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def server_bm25(tools: list[dict[str, Any]]) -> Ranker:
    from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

    names = [t["name"] for t in tools]
    bm25 = BM25Okapi([plain_words(tool_text(t)) for t in tools])

    def rank(query: str) -> list[str]:
        scores = bm25.get_scores(plain_words(query))
        ranked = sorted(zip(names, scores, strict=True), key=lambda item: (-item[1], item[0]))
        return [n for n, s in ranked if s > 0][:10]

    return rank


def server_regex(tools: list[dict[str, Any]]) -> Ranker:
    texts = [(t["name"], tool_text(t)) for t in tools]

    def rank(query: str) -> list[str]:
        alternatives = sorted({w for w in plain_words(query) if len(w) > 2 and w not in STOPWORDS})
        if not alternatives:
            return []
        pattern = re.compile("(?i)" + "|".join(map(re.escape, alternatives)))
        scored = [(name, len({m.group(0).lower() for m in pattern.finditer(text)})) for name, text in texts]
        return [n for n, s in sorted(scored, key=lambda item: (-item[1], item[0])) if s > 0][:10]

    return rank


def evaluate(rank: Ranker, queries: Sequence[dict[str, Any]]) -> dict[str, float]:
    recalls, reciprocal, seconds = [], [], []
    for q in queries:
        started = time.perf_counter()
        found = rank(q["query"])
        seconds.append(time.perf_counter() - started)
        top = found[:K]
        recalls.append(sum(n in top for n in q["needs"]) / len(q["needs"]))
        ranks = [found.index(n) + 1 for n in q["needs"] if n in found]
        reciprocal.append(1 / min(ranks) if ranks else 0.0)
    return {
        "recall": statistics.fmean(recalls),
        "mrr": statistics.fmean(reciprocal),
        "ms": 1000 * statistics.median(seconds),
        "n": len(queries),
    }


def token_table(
    tools: list[dict[str, Any]], rank: Ranker, queries: Sequence[dict[str, Any]]
) -> dict[str, float]:
    """Prompt tokens of the tools part of a request, all declared vs deferred + search."""

    search_declaration = search_tool([]).declaration()  # as the agent declares it
    by_name = {t["name"]: t for t in tools}
    everything = estimate_tokens(tools)
    deferred = []
    for q in queries:
        loaded = rank(q["query"])[:K]
        call = {
            "type": "tool_use",
            "id": "toolu_01",
            "name": SEARCH_TOOL_NAME,
            "input": {"query": q["query"]},
        }
        result = {
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "content": [{"type": "tool_reference", "tool_name": n} for n in loaded],
        }
        deferred.append(
            estimate_tokens([search_declaration])
            + estimate_tokens([by_name[n] for n in loaded])
            + estimate_tokens([call, result])
        )
    mean = statistics.fmean(deferred)
    return {"all": everything, "deferred": mean, "ratio": mean / everything}


def main() -> None:
    tools, queries = load()
    started = time.perf_counter()
    index = ToolIndex(tools)
    build_ms = 1000 * (time.perf_counter() - started)
    rankers: dict[str, Ranker] = {
        "hybrid (ours)": lambda q: [h.name for h in index.search(q, 10)],
        "bm25 alone": lambda q: [h.name for h in index.keyword(q, 10, widen=False)],
        "server-bm25 shape": server_bm25(tools),
        "server-regex shape": server_regex(tools),
    }
    halves = {
        "tuning": [q for q in queries if half(q) == "tuning"],
        "held-back": [q for q in queries if half(q) == "held-back"],
        "all": queries,
    }
    words = sum(len(document_words(t)) for t in tools)
    print(f"#### Tool search: {len(tools)} tools ({words:,} indexed words), {len(queries)} queries\n")
    print(f"Index built in {build_ms:.0f} ms (BM25 + tool graph).\n")
    print("| ranker | half | queries | recall@5 | MRR | ms / search |")
    print("|---|---|--:|--:|--:|--:|")
    results: dict[tuple[str, str], dict[str, float]] = {}
    for name, rank in rankers.items():
        for label, subset in halves.items():
            r = evaluate(rank, subset)
            results[name, label] = r
            print(f"| {name} | {label} | {r['n']:.0f} | {r['recall']:.3f} | {r['mrr']:.3f} | {r['ms']:.2f} |")
    print("\n| request tools part | tokens / request | vs all declared |")
    print("|---|--:|--:|")
    tokens = token_table(tools, rankers["hybrid (ours)"], queries)
    print(f"| all {len(tools)} tools declared | {tokens['all']:,.0f} | 100.0% |")
    print(
        f"| deferred: search tool + 5 loaded + search call/result | {tokens['deferred']:,.0f} | "
        f"{100 * tokens['ratio']:.1f}% |"
    )
    print()
    summary = {
        "recall_at_5": round(results["hybrid (ours)", "all"]["recall"], 3),
        "token_ratio": round(tokens["ratio"], 3),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
