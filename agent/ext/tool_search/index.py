"""`ToolIndex`: rank tools for a natural-language need, without a model or embeddings.

Three sources, fused by weighted reciprocal-rank fusion (each source contributes
`weight / (RRF_K + rank)` per tool, so sources on different scales combine by rank alone):

* **keyword**: BM25 (the `rank-bm25` library) over each tool's name, description,
  parameter names and parameter descriptions, cut into words by `agent.ext.tool_search.text`.
  The name counts twice: it is the shortest, most deliberate summary a tool has. The
  query's words are widened by `agent.ext.tool_search.thesaurus` ("bug" also asks for "issue"),
  the added words counting for less.
* **graph**: the best keyword hits expanded over `ToolGraph` (tools sharing an identifying
  parameter or a resource), which brings the *other* tools of a workflow (cancel an order,
  then refund it) that the query does not spell out.
* **names**: tools whose whole name is spelled by the query words (`slack` + `post` +
  `message`), which settles near-duplicates across vendor families.

BM25 needs the `toolsearch` extra (`pip install -e ".[toolsearch]"` from the checkout); without
it the index says so when built, not at import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.ext.tool_search.graph import ToolGraph
from agent.ext.tool_search.text import words
from agent.ext.tool_search.thesaurus import expand

__all__ = ["Hit", "ToolIndex", "Weights", "document_words"]

RRF_K = 10
"""Small: the useful ranks are the first few, and a large K flattens them into ties."""

EXTRA_HINT = (
    "tool search needs the `toolsearch` extra: pip install -e '.[toolsearch]' from the checkout "
    "(or pip install rank-bm25 snowballstemmer)"
)


@dataclass(frozen=True)
class Weights:
    """How much each source counts in the fusion (chosen on the benchmark's tuning half)."""

    keyword: float = 1.0
    graph: float = 0.5
    names: float = 0.4
    expansion: float = 0.5
    """Weight of the thesaurus words (`agent.ext.tool_search.thesaurus`) next to the query's own."""
    seeds: int = 4
    """How many top keyword hits seed the graph expansion."""
    k1: float = 1.5
    b: float = 0.5
    """BM25's term saturation and length normalisation (k1 the library's default; b lower:
    tool texts are all short, and a longer one is not less about its subject)."""


@dataclass(frozen=True)
class Hit:
    name: str
    score: float


def document_words(declaration: Mapping[str, Any]) -> list[str]:
    """The words a tool is found by: name (twice), description, parameter names and texts."""
    name = str(declaration.get("name", ""))
    parts = [name, name, str(declaration.get("description") or "")]
    schema = declaration.get("input_schema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    for param, spec in (props or {}).items() if isinstance(props, Mapping) else ():
        parts.append(str(param))
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return words(parts)


class ToolIndex:
    """Ranks the given tool declarations (any Messages API tool dicts) for a query."""

    def __init__(self, declarations: Sequence[Mapping[str, Any]], weights: Weights | None = None) -> None:
        try:
            from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]
        except ImportError as error:
            raise ImportError(EXTRA_HINT) from error
        self.weights = weights or Weights()
        self.declarations = [d for d in declarations if isinstance(d.get("name"), str)]
        self.names = [str(d["name"]) for d in self.declarations]
        corpus = [document_words(d) or ["\x00"] for d in self.declarations]  # BM25 needs a word each
        self._bm25 = BM25Okapi(corpus, k1=self.weights.k1, b=self.weights.b) if corpus else None
        self._name_words = [frozenset(words(n)) for n in self.names]
        self.graph = ToolGraph(self.declarations)

    def __len__(self) -> int:
        return len(self.names)

    def keyword(self, query: str, k: int | None = None, *, widen: bool = True) -> list[Hit]:
        """BM25: tools with a positive score, best first; `widen` adds the thesaurus words
        at `Weights.expansion` (False: plain BM25 on the query's own words)."""
        terms = words(query)
        if self._bm25 is None or not terms:
            return []
        scores = self._bm25.get_scores(terms)
        extra = expand(terms) if widen and self.weights.expansion else []
        if extra:
            scores = scores + self.weights.expansion * self._bm25.get_scores(extra)
        hits = (Hit(n, float(s)) for n, s in zip(self.names, scores, strict=True) if s > 0)
        ranked = sorted(hits, key=lambda h: (-h.score, h.name))
        return ranked[:k] if k is not None else ranked

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The `k` best tools for `query` by the fused ranking, best first (ties by name)."""
        if k <= 0:
            return []
        keyword = self.keyword(query)
        if not keyword:
            return []
        w = self.weights
        top = keyword[0].score
        seeds = {h.name: h.score / top for h in keyword[: w.seeds]}
        graph = sorted(self.graph.expand(seeds).items(), key=lambda item: (-item[1], item[0]))
        terms = frozenset(words(query))
        named = zip(self.names, self._name_words, strict=True)
        shares = ((n, len(nw & terms) / len(nw)) for n, nw in named if nw & terms)
        spelled = sorted(shares, key=lambda item: (-item[1], item[0]))
        fused: dict[str, float] = {}
        for ranking, weight in (
            ([h.name for h in keyword], w.keyword),
            ([n for n, _ in graph], w.graph),
            ([n for n, share in spelled if share == 1.0], w.names),
        ):
            for rank, name in enumerate(ranking if weight > 0 else (), start=1):
                fused[name] = fused.get(name, 0.0) + weight / (RRF_K + rank)
        best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [Hit(name, score) for name, score in best]
