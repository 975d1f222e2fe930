"""`ToolIndex`: rank tools for a natural-language need, without a model unless given one.

Sources, fused by weighted reciprocal-rank fusion (each source contributes
`weight / (RRF_K + rank)` per tool, so sources on different scales combine by rank alone):

* **keyword**: BM25 over three fields of each tool, scored apart and summed with weights:
  its name, its description, its parameters' names and descriptions (words cut by
  `agent.ext.tool_search.text`). Each field is normalised by its own length, the description
  fully: on real MCP servers descriptions run from four words (filesystem's) to pages
  (Google Workspace's), and a long one's many mentions of "file" must not beat a short
  one's name. The query's words are widened by `agent.ext.tool_search.thesaurus` ("bug"
  also asks for "issue"), the added words counting for less.
* **names**: tools whose whole name is spelled by the query words (`slack` + `post` +
  `message`), which settles near-duplicates across vendor families.
* **graph** (off by default, `Weights.graph`): the best keyword hits expanded over
  `ToolGraph`. On 481 real tools it filled the top five with one family's siblings.
* **dense** (with an `embed`, `agent.ext.tool_search.semantic`): the tools nearest the query
  by sentence embeddings, for a need said in other words than the tool's.

A query of several steps ("read the pod's logs, then restart the deployment") is ranked
whole and step by step (`steps`), the rankings taking turns for the first places, so each
step gets its tool. The framework's own tools (`CORE_TOOLS`: `search_tools`,
`read_artifact`) are never ranked. An index belongs to whoever built it: no process-wide
cache. `LEGACY` is the ranking before the real-data work (one BM25 text with the name twice,
via `rank-bm25`, plus the graph), kept for the benchmark's side-by-side.

Figures: `benchmarks/tool_search.py --real` and `docs/tool-search.md`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.ext.tool_search.graph import ToolGraph
from agent.ext.tool_search.semantic import DenseIndex, Embed
from agent.ext.tool_search.text import words
from agent.ext.tool_search.thesaurus import expand

__all__ = ["LEGACY", "Hit", "ToolIndex", "Weights", "document_words"]

RRF_K = 10
"""Small: the useful ranks are the first few, and a large K flattens them into ties."""

EXTRA_HINT = (
    "this ranking needs the `toolsearch` extra: pip install -e '.[toolsearch]' from the checkout "
    "(or pip install rank-bm25 snowballstemmer)"
)


@dataclass(frozen=True)
class Weights:
    """How much each source counts in the fusion (chosen on the benchmarks' tuning halves)."""

    keyword: float = 1.0
    graph: float = 0.0
    """Graph expansion's weight (0: off). On real MCP tools it filled the top five with a
    family's siblings; at 0.5 it cost 0.007 recall@5 and 0.026 MRR on the tuning half."""
    names: float = 0.4
    expansion: float = 0.5
    """Weight of the thesaurus words (`agent.ext.tool_search.thesaurus`) next to the query's own."""
    seeds: int = 4
    """How many top keyword hits seed the graph expansion."""
    k1: float = 1.5
    b: float = 0.5
    """BM25's term saturation and length normalisation (k1 the library's default; b lower:
    tool texts are all short, and a longer one is not less about its subject)."""
    fielded: bool = True
    """Score name, description and parameters as separate BM25 fields (weights below), each
    normalised by its own length, instead of one text with the name twice. A server whose
    tools have one-line descriptions then meets one whose descriptions run to pages on even
    terms: the name decides."""
    name_field: float = 1.0
    description_field: float = 1.0
    parameter_field: float = 0.3
    description_b: float = 0.75
    """Length normalisation of the description field: full, so a long description's many
    mentions of a word do not outweigh a short one's single one."""
    vendor: float = 0.0
    """Weight of the tools of a family the query names ("in Slack", "on GitHub"), the family's
    words being those of the server prefix (`slack_`, `google-workspace_`). Off: at 0.5 it
    cost 0.013 recall@5 on the real tools' tuning half (the name field already has them)."""
    diversity: float = 1.0
    """Each earlier tool of the same family in the ranking multiplies a tool's fused score by
    this (1: off), unless the query names the family: siblings do not crowd out a better
    fit from another server. Off: at 0.8 it cost 0.004 recall@5 on the real tools' tuning half
    (the steps, not diversity, keep one family from taking all five places)."""
    steps: bool = True
    """A query of several steps ("read the logs, then restart the deployment") is also ranked
    step by step, the steps' best tools taking turns in the first places."""
    dense: float = 0.5
    """Weight of the semantic ranking (`agent.ext.tool_search.semantic`), when the index has an
    `embed`: half the keyword ranking's, as embeddings alone rank real tools worse than BM25."""
    dense_depth: int = 20
    """How many of the semantic ranking's nearest tools enter the fusion."""


LEGACY = Weights(graph=0.5, expansion=0.5, fielded=False, steps=False)
"""The ranking before the real-data work (one BM25 text, thesaurus, graph expansion)."""

CORE_TOOLS = frozenset({"search_tools", "read_artifact"})
"""The framework's own tools: declared to the model already, never a search's answer."""


@dataclass(frozen=True)
class Hit:
    name: str
    score: float


def _parameters(declaration: Mapping[str, Any]) -> list[str]:
    schema = declaration.get("input_schema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    parts: list[str] = []
    for param, spec in (props or {}).items() if isinstance(props, Mapping) else ():
        parts.append(str(param))
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return parts


def document_words(declaration: Mapping[str, Any]) -> list[str]:
    """The words a tool is found by: name (twice), description, parameter names and texts."""
    name = str(declaration.get("name", ""))
    return words([name, name, str(declaration.get("description") or ""), *_parameters(declaration)])


def family(name: str) -> str:
    """A tool's family: its server prefix, the name up to the first `_` (`StdioServer(prefix=)`)."""
    return name.split("_", 1)[0] if "_" in name else name


def field_words(declaration: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """A tool's words by field: name, description, parameters (names and descriptions)."""
    name = str(declaration.get("name", ""))
    return words(name), words(str(declaration.get("description") or "")), words(_parameters(declaration))


_STEP = re.compile(r"[,;:]|\b(?:and then|then|and|after that|before)\b", re.IGNORECASE)


def steps(query: str) -> list[str]:
    """The steps of a query, split at commas, "and", "then"; those with a content word."""
    return [part for part in (p.strip() for p in _STEP.split(query)) if words(part)]


class _Field:
    """BM25 over one field of every tool, from postings (term -> [(tool, count)]): a query
    touches only the tools that have its words. IDF is Lucene's, never negative."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float, b: float) -> None:
        self.k1, self.size = k1, len(documents)
        lengths = [len(d) for d in documents]
        mean = (sum(lengths) / len(lengths)) if lengths and sum(lengths) else 1.0
        self.norm = [k1 * (1 - b + b * n / mean) for n in lengths]
        postings: dict[str, dict[int, int]] = {}
        for i, document in enumerate(documents):
            for word in document:
                counts = postings.setdefault(word, {})
                counts[i] = counts.get(i, 0) + 1
        self.postings = {w: tuple(c.items()) for w, c in postings.items()}
        self.idf = {w: math.log(1 + (self.size - len(c) + 0.5) / (len(c) + 0.5)) for w, c in postings.items()}

    def add(self, terms: Sequence[str], weight: float, into: list[float]) -> None:
        k1, norm = self.k1, self.norm
        for term in terms:
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, tf in self.postings[term]:
                into[i] += weight * idf * tf * (k1 + 1) / (tf + norm[i])


class ToolIndex:
    """Ranks the given tool declarations (any Messages API tool dicts) for a query. The
    framework's own tools (`CORE_TOOLS`) are left out: the model has them already."""

    def __init__(
        self,
        declarations: Sequence[Mapping[str, Any]],
        weights: Weights | None = None,
        embed: Embed | None = None,
    ) -> None:
        self.weights = w = weights or Weights()
        self.declarations = [
            d for d in declarations if isinstance(d.get("name"), str) and d["name"] not in CORE_TOOLS
        ]
        self.dense = DenseIndex(self.declarations, embed) if embed is not None and w.dense > 0 else None
        self.names = [str(d["name"]) for d in self.declarations]
        self._bm25: Any = None
        self._fields: list[tuple[_Field, float]] = []
        if w.fielded:
            by_field = [field_words(d) for d in self.declarations]
            name, description, parameters = ([f[i] for f in by_field] for i in range(3))
            self._fields = [
                (_Field(name, w.k1, w.b), w.name_field),
                (_Field(description, w.k1, w.description_b), w.description_field),
                (_Field(parameters, w.k1, w.b), w.parameter_field),
            ]
        else:
            try:
                from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]
            except ImportError as error:
                raise ImportError(EXTRA_HINT) from error
            corpus = [document_words(d) or ["\x00"] for d in self.declarations]  # BM25 needs a word each
            self._bm25 = BM25Okapi(corpus, k1=w.k1, b=w.b) if corpus else None
        self._name_words = [frozenset(words(n)) for n in self.names]
        self.families = [family(n) for n in self.names]
        self._family_words = {f: frozenset(words(f)) for f in self.families}
        self.graph = ToolGraph(self.declarations)

    def __len__(self) -> int:
        return len(self.names)

    def _scores(self, terms: Sequence[str]) -> list[float]:
        if self._bm25 is not None:
            return [float(s) for s in self._bm25.get_scores(list(terms))]
        scores = [0.0] * len(self.names)
        for field, weight in self._fields:
            if weight:
                field.add(terms, weight, scores)
        return scores

    def keyword(self, query: str, k: int | None = None, *, widen: bool = True) -> list[Hit]:
        """BM25: tools with a positive score, best first; `widen` adds the thesaurus words
        at `Weights.expansion` (False: plain BM25 on the query's own words)."""
        terms = words(query)
        if not self.names or not terms:
            return []
        scores = self._scores(terms)
        extra = expand(terms) if widen and self.weights.expansion else []
        if extra:
            more = self._scores(extra)
            scores = [s + self.weights.expansion * m for s, m in zip(scores, more, strict=True)]
        hits = (Hit(n, float(s)) for n, s in zip(self.names, scores, strict=True) if s > 0)
        ranked = sorted(hits, key=lambda h: (-h.score, h.name))
        return ranked[:k] if k is not None else ranked

    def _fused(self, query: str) -> list[tuple[str, float]]:
        """One query's tools by weighted reciprocal-rank fusion of the sources, best first."""
        keyword = self.keyword(query)
        if not keyword and self.dense is None:
            return []
        w = self.weights
        graph: list[tuple[str, float]] = []
        if w.graph > 0 and keyword:
            top = keyword[0].score
            seeds = {h.name: h.score / top for h in keyword[: w.seeds]}
            graph = sorted(self.graph.expand(seeds).items(), key=lambda item: (-item[1], item[0]))
        terms = frozenset(words(query))
        named = zip(self.names, self._name_words, strict=True)
        shares = ((n, len(nw & terms) / len(nw)) for n, nw in named if nw & terms)
        spelled = sorted(shares, key=lambda item: (-item[1], item[0]))
        named_families = {f for f, fw in self._family_words.items() if fw and fw <= terms}
        of = dict(zip(self.names, self.families, strict=True))
        vendor = [h.name for h in keyword if of[h.name] in named_families]
        dense = self.dense.rank(query, w.dense_depth) if self.dense is not None else []
        fused: dict[str, float] = {}
        for ranking, weight in (
            ([h.name for h in keyword], w.keyword),
            ([n for n, _ in graph], w.graph),
            ([n for n, share in spelled if share == 1.0], w.names),
            (vendor, w.vendor),
            (dense, w.dense),
        ):
            for rank, name in enumerate(ranking if weight > 0 else (), start=1):
                fused[name] = fused.get(name, 0.0) + weight / (RRF_K + rank)
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
        if w.diversity >= 1.0:
            return ranked
        seen: dict[str, int] = {}
        spread = []
        for name, score in ranked:
            fam = of[name]
            spread.append((name, score * (1.0 if fam in named_families else w.diversity ** seen.get(fam, 0))))
            seen[fam] = seen.get(fam, 0) + 1
        return sorted(spread, key=lambda item: (-item[1], item[0]))

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The `k` best tools for `query`, best first (ties by name). A query of several steps
        (`steps`) is ranked whole and step by step, the rankings taking turns: the whole
        query's best, each step's best, then each one's second..."""
        if k <= 0:
            return []
        whole = self._fused(query)
        parts = steps(query) if self.weights.steps else []
        if len(parts) < 2:
            return [Hit(name, score) for name, score in whole[:k]]
        rankings = [whole, *(self._fused(p) for p in parts)]
        best: dict[str, float] = {}
        for round_ in range(max(map(len, rankings))):
            for ranking in rankings:
                if round_ < len(ranking) and ranking[round_][0] not in best:
                    best[ranking[round_][0]] = ranking[round_][1]
                if len(best) == k:
                    return [Hit(name, score) for name, score in best.items()]
        return [Hit(name, score) for name, score in best.items()]
