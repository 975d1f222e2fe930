"""Semantic ranking for tool search: tools and queries as sentence embeddings, compared by cosine.

Keyword ranking misses a need said in other words ("let the team know the deploy is done"
has no word of `slack_post_message`); an embedding model places both near each other. It is
opt-in, as one more source in `ToolIndex`'s fusion (`Weights.dense`), for three reasons: it
needs a model and its runtime (the `semantic` extra: sentence-transformers, which brings
PyTorch), a query costs milliseconds of model time where BM25 costs a fraction of one, and
on its own it ranks worse than BM25 on real tools: the two together rank best
(`benchmarks/tool_search.py --real`).

`Embed` is the seam: any function from texts to vectors (a local model, an embeddings API).
`sentence_transformer()` makes one from a sentence-transformers model, loaded at first use.
The tools' vectors are computed once per index and belong to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["DEFAULT_MODEL", "DenseIndex", "Embed", "sentence_transformer", "tool_text"]

Embed = Callable[[Sequence[str]], Any]
"""Texts -> one vector per text (a list of lists of floats, or a 2-D array)."""

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Small (90 MB), fast on a CPU, and trained for sentence similarity."""

DESCRIPTION_CHARS = 400
"""Of a tool's description, embedded: its first sentences say what it does, and long ones
(pages, on some MCP servers) would be cut by the model's window anyway."""

HINT = (
    "semantic tool search needs the `semantic` extra: pip install -e '.[semantic]' from the checkout "
    "(or pip install sentence-transformers numpy)"
)


def sentence_transformer(model: str = DEFAULT_MODEL, device: str = "cpu") -> Embed:
    """An `Embed` backed by a sentence-transformers `model` (a hub name, or a local folder for a
    machine offline), loaded at its first call and normalised, so a dot product is the cosine."""
    loaded: list[Any] = []

    def embed(texts: Sequence[str]) -> Any:
        if not loaded:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as error:
                raise ImportError(HINT) from error
            loaded.append(SentenceTransformer(model, device=device))
        return loaded[0].encode(list(texts), normalize_embeddings=True, show_progress_bar=False)

    return embed


def tool_text(declaration: Mapping[str, Any]) -> str:
    """What a tool is embedded as: its name in words, then the start of its description."""
    name = str(declaration.get("name", "")).replace("_", " ").replace("-", " ")
    description = str(declaration.get("description") or "")[:DESCRIPTION_CHARS]
    return f"{name}: {description}"


class DenseIndex:
    """The tools' vectors, and their ranking for a query by cosine similarity."""

    def __init__(self, declarations: Sequence[Mapping[str, Any]], embed: Embed) -> None:
        try:
            import numpy as np
        except ImportError as error:
            raise ImportError(HINT) from error
        self._np = np
        self.embed = embed
        self.names = [str(d["name"]) for d in declarations]
        vectors = (
            np.asarray(embed([tool_text(d) for d in declarations]), dtype=np.float32)
            if declarations
            else None
        )
        self.vectors = None if vectors is None else _unit(np, vectors)

    def rank(self, query: str, k: int) -> list[str]:
        """The `k` tools nearest to `query`, nearest first (ties in declaration order)."""
        if self.vectors is None or not query.strip():
            return []
        np = self._np
        point = _unit(np, np.asarray(self.embed([query]), dtype=np.float32))[0]
        scores = self.vectors @ point
        top = np.argsort(-scores, kind="stable")[: max(k, 0)]
        return [self.names[i] for i in top if scores[i] > 0]  # unrelated is not near


def _unit(np: Any, vectors: Any) -> Any:
    """Rows scaled to length 1 (an `Embed` need not normalise)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
