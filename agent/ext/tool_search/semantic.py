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
`onnx_embedder()` runs the same model exported once by `export_onnx()` on ONNX Runtime: the
same vectors, a query in a third of PyTorch's time, and no PyTorch at run time (the
`semantic-onnx` extra); exported with int8 weights (`quantize=True`), faster again, the vectors
near the model's. The tools' vectors are computed once per index and belong to it.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_MODEL",
    "QUANTIZED_COSINE",
    "DenseIndex",
    "Embed",
    "export_onnx",
    "onnx_embedder",
    "sentence_transformer",
    "tool_text",
]

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


def _not_advice(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Please consider to run pre-processing")


QUANTIZED_COSINE = 0.9
"""How near an int8 export's vectors must stay to the model's (cosine, each probe). On
all-MiniLM-L6-v2 they stay 0.94 to 0.99 near on real queries, 0.90 to 0.99 on real tools."""

ONNX_HINT = (
    "ONNX tool search needs the `semantic-onnx` extra: pip install -e '.[semantic-onnx]' from the "
    "checkout (or pip install onnxruntime tokenizers numpy); exporting a model needs the `semantic` "
    "extra and onnx too"
)


def export_onnx(model: str, folder: str | Path, *, quantize: bool = False) -> Path:
    """Write `model` (a sentence-transformers model, hub name or local folder) to `folder` as
    `model.onnx` with its `tokenizer.json` and `embedding.json` (the model's window), for
    `onnx_embedder`. Once per model, on a machine with both extras and onnx. Mean pooling only
    (all-MiniLM-L6-v2's): another pooling is refused, not guessed. The export is a trace, so it
    is checked: texts of one token, a sentence and past the model's window must come back as
    the model's own vectors, or the export is refused (and its model file removed).

    `quantize` then stores the weights as int8 (ONNX Runtime's dynamic quantization): a query
    runs in about a third of the time, and the vectors move a little, so the check becomes
    nearness: each probe's vector within `QUANTIZED_COSINE` of the model's. Whether the
    rankings hold is measured, not assumed (`benchmarks/tool_search.py --real`)."""
    try:
        import numpy as np
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ImportError(HINT) from error
    loaded = SentenceTransformer(model, device="cpu")
    pooling = next((m for m in loaded if type(m).__name__ == "Pooling"), None)
    legacy = "mean" if getattr(pooling, "pooling_mode_mean_tokens", False) else None  # before 6.0
    if pooling is None or (getattr(pooling, "pooling_mode", None) or legacy) != "mean":
        raise ValueError(f"{model}: only mean pooling is exported (this model pools otherwise)")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)

    class Hidden(torch.nn.Module):  # the token vectors, for pooling outside the graph
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, ids: Any, mask: Any) -> Any:
            return self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state

    sample = loaded.tokenizer(["a query"], return_tensors="pt")
    axes = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings():  # the TorchScript exporter (the newer one needs onnxscript
        warnings.simplefilter("ignore")  # too): its deprecation and tracing warnings; checked below
        torch.onnx.export(
            Hidden(loaded[0].auto_model).eval(),
            (sample["input_ids"], sample["attention_mask"]),
            str(out / "model.onnx"),
            input_names=["input_ids", "attention_mask"],
            output_names=["hidden"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "hidden": axes},
            opset_version=17,
            dynamo=False,
        )
    loaded.tokenizer.backend_tokenizer.save(str(out / "tokenizer.json"))
    (out / "embedding.json").write_text(json.dumps({"max_seq_length": loaded.max_seq_length}))
    probes = ["a", "read the pod's logs, then restart the deployment", "search tools " * 200]
    theirs = loaded.encode(probes, normalize_embeddings=True)
    drift = float(np.abs(onnx_embedder(out)(probes) - theirs).max())
    if drift > 1e-4:  # a trace is one path through the model: this one must give its vectors
        (out / "model.onnx").unlink()
        raise ValueError(f"{model}: the exported model's vectors differ from the model's (by {drift:.2g})")
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        exact = out / "model.fp32.onnx"
        (out / "model.onnx").replace(exact)
        advice = logging.getLogger()  # it logs its advice to pre-process there (which, tried, moved
        advice.addFilter(_not_advice)  # the vectors more: 0.78)
        try:
            quantize_dynamic(str(exact), str(out / "model.onnx"), weight_type=QuantType.QInt8)
        finally:
            advice.removeFilter(_not_advice)
            exact.unlink()
        real = probes[:2]  # the third, one word 200 times over, checked the trace's window above
        nearness = float((onnx_embedder(out)(real) * theirs[:2]).sum(axis=1).min())
        if nearness < QUANTIZED_COSINE:
            (out / "model.onnx").unlink()
            raise ValueError(
                f"{model}: the int8 model's vectors are too far from the model's ({nearness:.3f})"
            )
    return out


def onnx_embedder(folder: str | Path, threads: int = 1) -> Embed:
    """An `Embed` running a model `export_onnx` wrote to `folder` on ONNX Runtime, loaded at its
    first call. `threads` per call: one by default, as the process has other work; more make a
    single query faster. Each text runs on its own, unpadded: a text's vector then never
    depends on the others in its call (an int8 model scales its activations per batch)."""
    loaded: list[Any] = []

    def embed(texts: Sequence[str]) -> Any:
        if not loaded:
            try:
                import numpy as np
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as error:
                raise ImportError(ONNX_HINT) from error
            where = Path(folder)
            config = json.loads((where / "embedding.json").read_text())
            tokenizer = Tokenizer.from_file(str(where / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=int(config["max_seq_length"]))
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = threads
            session = onnxruntime.InferenceSession(
                str(where / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
            loaded.extend((np, tokenizer, session))
        np, tokenizer, session = loaded
        vectors = []
        for encoded in tokenizer.encode_batch(list(texts)):  # one at a time: see the docstring
            ids = np.array([encoded.ids], dtype=np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
            vectors.append(hidden[0].mean(axis=0))
        return _unit(np, np.array(vectors, dtype=np.float32).reshape(len(vectors), -1))

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
