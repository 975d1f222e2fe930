"""The tool-result diet: what one tool result costs in the context, decided in one place.

    raw value --dump--> full text --(store: artifact + index)--> pointer
        error result   -> passes through, bounded (2 x compress_threshold)
        compress=False -> the full text, exact
        keep=[...]     -> whitelist (slim.py); if it is still long, compressed
        otherwise      -> unchanged under `compress_threshold`, else compressed (compress.py)

`render` is the pure core: value, policy and pointer in, text out. `render_outcome`
is the loop's hook (`Agent.render_result` calls it): it picks the policy for the
tool, stores the full result of every non-trivial call (not only the cut ones, so
keep-recent pruning can later replace an old result with a stub that still points
at it), then renders. What is stored goes through the secret policy
(`agent.secrets.redact`) first. A store that fails (disk full, size cap) only means no
pointer: the run never breaks over an artifact.

The text the model reads is plain; the only trace of the store in it is the
`artifact:<name>` pointer inside a cut note (see `artifacts.find_pointer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.context.artifacts import ArtifactStore, artifact_name
from agent.context.compress import compress
from agent.context.compressors.jsonish import dump_full, normalize
from agent.context.read_artifact import make_read_artifact
from agent.context.slim import slim
from agent.context.summary_calls import Summarize, free_text_summarizer
from agent.secrets import redact

if TYPE_CHECKING:
    from agent.config import AgentConfig
    from agent.loop import Agent
    from agent.registry import ToolOutcome, ToolRegistry
    from agent.state import RunState

__all__ = ["DietPolicy", "policy_for", "register_read_artifact", "render", "render_outcome", "store_for"]


@dataclass(frozen=True)
class DietPolicy:
    """How one tool's results are served to the model."""

    keep: tuple[str, ...] | None = None
    compress: bool = True
    top_n: int = 5
    threshold: int = 2000

    @property
    def error_chars(self) -> int:
        return 2 * self.threshold


def policy_for(config: AgentConfig, outcome: ToolOutcome) -> DietPolicy:
    """The policy for `outcome`'s tool: `keep_fields` wins over `@tool(keep=)`."""
    tool = outcome.tool
    keep: Sequence[str] | None = config.keep_fields.get(outcome.call.name)
    if keep is None and tool is not None:
        keep = tool.keep
    return DietPolicy(
        keep=tuple(keep) if keep is not None else None,
        compress=tool.compress if tool is not None else True,
        top_n=config.list_top_n,
        threshold=config.compress_threshold,
    )


def _is_error_payload(value: Any, keep: Sequence[str]) -> bool:
    value = normalize(value)
    return isinstance(value, Mapping) and any(k in value and k not in keep for k in ("error", "errors"))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)


def render(
    value: Any,
    *,
    is_error: bool = False,
    policy: DietPolicy = DietPolicy(),
    pointer: str | None = None,
    full_text: str | None = None,
    summarize: Summarize | None = None,
) -> str:
    """The text the model reads for one tool result (pure but for `summarize`, the opt-in
    small-model summary of long free text, tried before the rules; never raises)."""
    full = full_text if full_text is not None else dump_full(value)[0]
    if not full:
        return "(empty)"
    if is_error:
        return (
            full if len(full) <= policy.error_chars else compress(value, policy.error_chars, pointer=pointer)
        )
    if not policy.compress:
        return full
    if policy.keep is not None and not _is_error_payload(value, policy.keep):
        try:
            slimmed = slim(value, policy.keep, top_n=policy.top_n, pointer=pointer)
            text = _json(slimmed) if slimmed is not None else None
        except (ValueError, TypeError, RecursionError):
            slimmed, text = None, None
        if text is not None:
            return (
                text
                if len(text) <= policy.threshold
                else compress(slimmed, policy.threshold, pointer=pointer)
            )
    if len(full) <= policy.threshold:
        return full
    if summarize is not None and (summary := summarize(full, policy.threshold, pointer)) is not None:
        return summary
    return compress(
        value, policy.threshold, pointer=pointer, full_text=None if isinstance(value, str) else full
    )


def store_for(config: AgentConfig, state: RunState) -> ArtifactStore | None:
    """This run's artifact store (created on first use), or None when artifacts are off."""
    if not config.diet or config.artifacts_dir is None:
        return None
    if state.artifacts is None:
        state.artifacts = ArtifactStore.for_run(
            config.artifacts_dir,
            state.run_id,
            max_bytes=config.artifact_max_bytes,
            keep_runs=config.artifact_keep_runs,
        )
    return state.artifacts


def render_outcome(config: Agent, outcome: ToolOutcome, state: RunState) -> str:
    """Store the full result (when non-trivial), then render it with the tool's policy."""
    full, is_json = dump_full(outcome.value)
    if not config.diet:
        return full or "(empty)"
    pointer = None
    store = store_for(config, state)
    if store is not None and len(full) >= config.artifact_min_chars:
        kept = redact(full)  # named after what is stored, so the name hashes no secret
        name = artifact_name(outcome.call.name, kept, is_json=is_json)
        try:
            if store.put(name, kept, tool_use_id=outcome.call.id, redacted=True):
                pointer = name
        except (OSError, NotImplementedError):  # disk full, read-only, no dir_fd (Windows): no pointer
            pointer = None
    return render(
        outcome.value,
        is_error=outcome.is_error,
        policy=policy_for(config, outcome),
        pointer=pointer,
        full_text=full,
        summarize=free_text_summarizer(config, state),
    )


def register_read_artifact(registry: ToolRegistry, artifacts_dir: Any, diet: bool = True) -> None:
    """Give the model `read_artifact` when artifacts are on (unless a tool of that name exists)."""
    if not diet or artifacts_dir is None or "read_artifact" in registry:
        return
    registry.add(make_read_artifact(artifacts_dir))
