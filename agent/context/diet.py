"""The tool-result diet: what one tool result costs in the context, decided in one place.

An error passes through, bounded (2 x threshold); `compress=False` sends the full text; `keep=[...]`
whitelists fields (slim.py), compressed if still long; anything else is compressed over the threshold
(compress.py). `render_outcome` stores every non-trivial result (redacted), not only the cut ones, so
keep-recent pruning can later stub an old result that still points at it; a failed store only means
no pointer, and the model sees the store only as the `artifact:<name>` pointer in a cut note.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.render import redact

if TYPE_CHECKING:
    from agent.context.artifacts import ArtifactStore
    from agent.tools import Tool, ToolOutcome, ToolRegistry

__all__ = ["DietPolicy", "register_read_artifact", "render", "render_outcome"]


@dataclass(frozen=True)
class DietPolicy:
    """How one tool's results are served to the model."""

    keep: tuple[str, ...] | None = None
    compress: bool = True
    top_n: int = 5
    threshold: int = 2000
    on: bool = True
    """False sends every result whole (the diet is off)."""
    min_chars: int = 256
    """Results at least this long are stored as artifacts, cut or not."""

    @property
    def error_chars(self) -> int:
        return 2 * self.threshold

    @classmethod
    def for_tool(
        cls,
        tool: Tool | None,
        keep: Sequence[str] | None,
        top_n: int,
        threshold: int,
        *,
        on: bool,
        min_chars: int,
    ) -> DietPolicy:
        """The policy for one tool: `keep` (the agent's `keep_fields`) wins over `@tool(keep=)`."""
        keep = tool.keep if keep is None and tool is not None else keep
        return cls(
            keep=tuple(keep) if keep is not None else None,
            compress=tool.compress if tool is not None else True,
            top_n=top_n,
            threshold=threshold,
            on=on,
            min_chars=min_chars,
        )


def dump_full(value: Any) -> tuple[str, bool]:
    """The whole `value` as text, and whether that text is JSON (`compressors.jsonish` is loaded
    only for a value plain `json.dumps` refuses: NaN, a cycle, great depth)."""
    if isinstance(value, str):
        return value, False
    if not isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False), True
        except (ValueError, TypeError, RecursionError, OverflowError):
            pass
    from agent.context.compressors.jsonish import dump_full as dump_any

    return dump_any(value)


def _is_error_payload(value: Any, keep: Sequence[str]) -> bool:
    from agent.context.compressors.jsonish import normalize

    value = normalize(value)
    return isinstance(value, Mapping) and any(k in value and k not in keep for k in ("error", "errors"))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)


def _compress(value: Any, budget: int, **options: Any) -> str:
    from agent.context.compress import compress  # loaded by the runs whose results need it

    return compress(value, budget, **options)


def render(
    value: Any,
    *,
    is_error: bool = False,
    policy: DietPolicy = DietPolicy(),
    pointer: str | None = None,
    full_text: str | None = None,
) -> str:
    """The text the model reads for one tool result (pure; never raises)."""
    full = full_text if full_text is not None else dump_full(value)[0]
    if not full:
        return "(empty)"
    if is_error:
        return (
            full if len(full) <= policy.error_chars else _compress(value, policy.error_chars, pointer=pointer)
        )
    if not policy.compress:
        return full
    if policy.keep is not None and not _is_error_payload(value, policy.keep):
        from agent.context.slim import slim

        try:
            slimmed = slim(value, policy.keep, top_n=policy.top_n, pointer=pointer)
            text = _json(slimmed) if slimmed is not None else None
        except (ValueError, TypeError, RecursionError):
            text = None
        if text is not None and len(text) <= policy.threshold:
            return text
        if text is not None:
            return _compress(slimmed, policy.threshold, pointer=pointer)
    if len(full) <= policy.threshold:
        return full
    return _compress(
        value, policy.threshold, pointer=pointer, full_text=None if isinstance(value, str) else full
    )


def store_full(outcome: ToolOutcome, full: str, is_json: bool, store: ArtifactStore | None) -> str | None:
    """Keep `full`, redacted, as an artifact; its name, or None when the store fails or refuses."""
    if store is None:
        return None
    from agent.context.artifacts import artifact_name

    kept = store.fit(redact(full))  # named after what is stored: the name hashes no secret
    name = artifact_name(outcome.call.name, kept, is_json=is_json)
    try:
        return name if store.put(name, kept, tool_use_id=outcome.call.id, redacted=True) else None
    except (OSError, NotImplementedError):  # disk full, read-only, no dir_fd (Windows): no pointer
        return None


def render_outcome(
    outcome: ToolOutcome, policy: DietPolicy, store: Callable[[], ArtifactStore | None]
) -> str:
    """Store the full result (when non-trivial), then render it with the tool's policy.
    `store` opens the run's artifact store on first use (None: artifacts are off)."""
    full, is_json = dump_full(outcome.value)
    if not policy.on:
        return redact(full) or "(empty)"
    pointer = store_full(outcome, full, is_json, store()) if len(full) >= policy.min_chars else None
    shown = render(outcome.value, is_error=outcome.is_error, policy=policy, pointer=pointer, full_text=full)
    return redact(shown)  # the model never reads a key a tool printed (`agent.render`)


def register_read_artifact(registry: ToolRegistry, artifacts_dir: Any) -> None:
    """Give the model `read_artifact` when artifacts are on. The name is then reserved: a declared
    tool that took it would be handed the artifact names of every cut note."""
    if artifacts_dir is None:
        return
    if "read_artifact" in registry:
        raise ValueError(
            "a declared tool is named read_artifact, the framework's own tool while artifacts are "
            "on (every cut note points the model at it): rename that tool (an MCP server's tools "
            "take a prefix), or turn artifacts off with artifacts_dir=None"
        )
    from agent.context.read_artifact import make_read_artifact

    registry.add(make_read_artifact(artifacts_dir))
