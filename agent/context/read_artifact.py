"""`read_artifact`: read back a bounded slice of a tool result cut from the context (its cut note
ends with `artifact:<name>`) by line range, JSON path, or pattern.

Every input comes from the model, so a prompt injection can choose it; each is bounded and each
refusal is an error the model can act on. The name must be a plain artifact name, opened without
following links (`agent.context.artifacts`); reads and answers are capped and say how to read on;
`pattern` never reaches Python's backtracking `re`: RE2 when google-re2 is installed, else a glob
subset, both linear (`agent/context/pattern_search.py`), and the description says which.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.tools import Tool, tool

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore

__all__ = ["for_run", "make_read_artifact", "read_artifact", "syntax_help"]

SUMMARY = "Read part of a full tool result that was cut: by line range, JSON path, or pattern."
MAX_PATTERN_CHARS = 500  # agent.context.pattern_search.MAX_PATTERN_CHARS


def syntax_help() -> str:
    """What the model is told the `pattern` argument accepts: RE2 where google-re2 is
    installed (looked up, not imported: the search engine is loaded by the first search)."""
    if importlib.util.find_spec("re2") is not None:
        return (
            "RE2 regex, case-insensitive (no backreferences or lookaround); returns the matching "
            f"lines, numbered. At most {MAX_PATTERN_CHARS} chars."
        )
    return (
        "glob text, case-insensitive: * matches any run of characters, | separates alternatives, "
        "every other character is literal (no regex); returns the matching lines, numbered. "
        f"At most {MAX_PATTERN_CHARS} chars."
    )


def make_read_artifact(
    root: str | Path,
    *,
    max_chars: int = 6000,
    max_read_bytes: int = 16 * 1024 * 1024,  # agent.context.artifacts.MAX_READ_BYTES
    search_seconds: float = 3.0,
) -> Tool:
    """A `read_artifact` tool reading the store under `root`: it reads at most `max_read_bytes`
    of an artifact, answers at most `max_chars`, and stops a search after `search_seconds`."""
    reader = _reader(Path(root), None, max_chars, max_read_bytes, search_seconds)
    return tool(compress=False, defer=False)(reader)  # bounded already; core: results point at it


def for_run(declared: Tool, root: str | Path, store: Callable[[], ArtifactStore | None]) -> Tool:
    """The framework's `read_artifact` (`declared`, default limits) reading through one run's `store`,
    whose folder its lease holds open: a store moved (or swapped for a link) mid-run still reads."""
    reader = _reader(Path(root), store, 6000, 16 * 1024 * 1024, 3.0, described=False)
    return dataclasses.replace(declared, fn=reader)


def _reader(
    base: Path,
    store: Callable[[], ArtifactStore | None] | None,
    max_chars: int,
    max_read_bytes: int,
    search_seconds: float,
    *,
    described: bool = True,
) -> Callable[..., str]:
    def read_artifact(
        name: str, start_line: int = 0, end_line: int = 0, json_path: str = "", pattern: str = ""
    ) -> str:
        from agent.context.artifact_reader import read_part  # loaded when the model first reads

        return read_part(
            base,
            store() if store is not None else None,
            name,
            start_line,
            end_line,
            json_path,
            pattern,
            max_chars=max_chars,
            max_read_bytes=max_read_bytes,
            search_seconds=search_seconds,
        )

    if not described:  # the declaration (and so the description) is the registry's tool's
        return read_artifact
    read_artifact.__doc__ = f"""{SUMMARY}

        Args:
            name: what follows `artifact:` in the cut note.
            start_line: first line (1-based).
            end_line: last line (inclusive).
            json_path: e.g. items[3].customer or items[*].id (JSON results).
            pattern: {syntax_help()}
        """
    return read_artifact


read_artifact = make_read_artifact("artifacts")
"""`read_artifact` over the default store (`./artifacts`)."""
