"""The API's context editing in the simulator: `context_management.edits`, applied server-side.

A request may carry `context_management: {"edits": [...]}` (beta header
`context-management-2025-06-27`). The API applies the edits to the prompt before the model
reads it; the client keeps, and sends, its full history. So does the simulator: the edited
prompt is what the policy reads and what is billed against the prompt cache, while the
thinking checks and signatures stay on the body the client sent. The rules, from the
platform docs (docs/context-management.md lists them with their sources):

* **`clear_tool_uses_20250919`.** When the prompt's input tokens exceed `trigger` (default
  100,000; or, with `{"type": "tool_uses"}`, when it holds more tool uses than that), the
  oldest tool results are cleared, each replaced by `PLACEHOLDER`, keeping the newest
  `keep` tool uses (default 3) and every use of a tool named in `exclude_tools`.
  `clear_tool_inputs` (true, or a list of tool names) also empties those calls' `input`.
  With `clear_at_least`, an edit that would remove fewer input tokens is not applied.
* **`clear_thinking_20251015`.** Thinking blocks are removed from every assistant turn
  (consecutive assistant messages, merged as the API merges them) but the newest `keep`
  (`{"type": "thinking_turns", "value": N}`; `"all"` keeps every one). It must come first
  in `edits` when both are sent (the docs' rule; a 400 otherwise).
* **The cache.** The edited prompt is billed as it is: every block before the first edited
  one keeps its prefix digest (`agent.testing.cache_model`), so the cache reads up to the
  edit point at most and everything after it is written again.
* **The response.** `context_management.applied_edits` lists each edit that changed the
  prompt, with `cleared_tool_uses` or `cleared_thinking_turns` and `cleared_input_tokens`
  (`[]` when the request asked and nothing was cleared); streamed, it comes in the final
  `message_delta` event. `count_tokens` counts the edited prompt and reports
  `context_management.original_input_tokens`.

* **`compact_20260112`** (beta header `compact-2026-01-12`). Once the prompt exceeds
  `trigger` (default 150,000 input tokens; below 50,000 is a 400), the server summarizes the
  whole prompt into a `compaction` block at the start of the reply and the model goes on
  from the summary alone. The summary is one more sampling step, billed as its own
  `usage.iterations` entry (`compaction`: the full prompt in, the summary out); the top-level
  usage is the reply's own (`message`) iteration, as live recordings show, and
  `applied_edits` stays `[]`. With `pause_after_compaction` the reply is the block alone,
  `stop_reason: "compaction"`. On every request the server drops all that comes before the
  last `compaction` block with content (`after_compaction`), so that is all it reads and
  bills, whatever the client sends before it.

Readings of what the docs leave open (the simulator's own, and said here so a test can see
them): the edits run in the order given, each measuring the prompt as the earlier ones left
it; `keep` counts the newest tool uses of any tool, and excluded ones are kept besides; a
result is cleared whole, however short; `clear_thinking` without `keep` keeps one turn. The
summary is written by the simulator's `summarizer` (or `echo_summarizer`) from the prompt's
plain-text transcript followed by `instructions` (or `COMPACTION_PROMPT`); the compaction
step reads and writes the prompt cache as a request would. A compaction block is honoured
with or without the edit in the request. `server_tool_use` and MCP results are never cleared.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.testing import sse
from agent.testing.cache_model import render

__all__ = [
    "BETA",
    "CLEAR_THINKING",
    "CLEAR_TOOL_USES",
    "COMPACT",
    "COMPACTION_PROMPT",
    "COMPACT_BETA",
    "PLACEHOLDER",
    "Edited",
    "after_compaction",
    "apply_edits",
    "compaction_due",
    "counted",
    "refusal",
    "stream_body",
]

BETA = "context-management-2025-06-27"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
COMPACT_BETA = "compact-2026-01-12"
COMPACT_TRIGGER = 150_000
COMPACT_MINIMUM = 50_000
COMPACTION_PROMPT = (
    "Summarize the conversation above so that the work can go on from the summary alone: "
    "the task, what was found, what was done, and what is left."
)
"""What the simulator asks its summarizer for when the edit gives no `instructions` (the
API's own prompt is not published; `instructions` replaces it, the docs say)."""
DEFAULT_TRIGGER = 100_000
DEFAULT_KEEP = 3
DEFAULT_THINKING_TURNS = 1
PLACEHOLDER = "[This tool result was cleared by context management to save context.]"
"""What a cleared result reads. The docs say only "placeholder text" that tells the model the
result was removed; the client never sees the edited prompt, so this wording is the simulator's."""

Msg = dict[str, Any]


@dataclass(frozen=True)
class Edited:
    """The prompt the model reads after the request's edits, and what they did."""

    body: dict[str, Any]
    applied: list[dict[str, Any]] | None
    """`applied_edits` for the response; None when the request sent no `context_management`."""
    original_tokens: int
    """The prompt's input tokens before the edits (0, not counted, without `context_management`)."""


def refusal(body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """The 400 message for a `context_management` the API (or this simulator) refuses, else None."""
    config = body.get("context_management")
    if config is None:
        return None
    edits = _edits(config)
    kinds = [e.get("type") for e in edits]
    betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
    if (not kinds or any(k != COMPACT for k in kinds)) and BETA not in betas:
        return "context_management: Extra inputs are not permitted"
    if CLEAR_THINKING in kinds and kinds[0] != CLEAR_THINKING:
        return f"context_management.edits: {CLEAR_THINKING} must be listed first in the edits array"
    for i, edit in enumerate(edits):
        if edit.get("type") != COMPACT:
            continue
        if COMPACT_BETA not in betas:  # the simulator's wording: the docs say only that the header is needed
            return f"context_management.edits.{i}: {COMPACT} needs the beta header {COMPACT_BETA}"
        if _value(edit.get("trigger"), COMPACT_TRIGGER) < COMPACT_MINIMUM:
            return f"context_management.edits.{i}.trigger.value: must be at least {COMPACT_MINIMUM}"
    return None


def apply_edits(body: Mapping[str, Any]) -> Edited:
    """`body` with its edits applied, in order (a copy; `body` is left as it came)."""
    body = after_compaction(body)
    config = body.get("context_management")
    if config is None:
        return Edited(dict(body), None, 0)
    total = _tokens(body)
    prompt, applied = copy.deepcopy(dict(body)), []
    for edit in _edits(config):
        before = _tokens(prompt)
        if edit.get("type") == CLEAR_TOOL_USES:
            edited, count = _clear_tool_uses(prompt, edit, before)
            key = "cleared_tool_uses"
        elif edit.get("type") == CLEAR_THINKING:
            edited, count = _clear_thinking(prompt, edit)
            key = "cleared_thinking_turns"
        else:
            continue
        cleared = before - _tokens(edited)
        if count == 0 or cleared < _value(edit.get("clear_at_least"), 0):
            continue  # nothing to clear, or less than the edit asks for: the prompt is left as it is
        prompt = edited
        applied.append({"type": edit["type"], key: count, "cleared_input_tokens": cleared})
    return Edited(prompt, applied, total)


def after_compaction(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """`body` as the server reads it: its messages from the last `compaction` block with
    content on (that block first in its message); `body` itself when there is none. A block
    with `content: null` is a failed compaction, a no-op, as the SDK's type says."""
    messages = body.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        blocks = _blocks(messages[i])
        for j in range(len(blocks) - 1, -1, -1):
            block = blocks[j]
            if isinstance(block, Mapping) and block.get("type") == "compaction" and block.get("content"):
                if i == 0 and j == 0:
                    return body
                return {**body, "messages": [{**messages[i], "content": blocks[j:]}, *messages[i + 1 :]]}
    return body


def compaction_due(prompt: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `compact_20260112` edit when the prompt (as the other edits left it) exceeds its trigger."""
    edit = next((e for e in _edits(prompt.get("context_management")) if e.get("type") == COMPACT), None)
    if edit is None or _tokens(prompt) <= _value(edit.get("trigger"), COMPACT_TRIGGER):
        return None
    return edit


def counted(body: Mapping[str, Any]) -> dict[str, Any]:
    """The `count_tokens` answer: the edited prompt's size, and the original's when edits were asked."""
    edited = apply_edits(body)
    answer: dict[str, Any] = {"input_tokens": _tokens(edited.body)}
    if edited.applied is not None:
        answer["context_management"] = {"original_input_tokens": edited.original_tokens}
    return answer


def stream_body(message: Mapping[str, Any]) -> bytes:
    """`message` as the API streams it: `context_management` in the final `message_delta`."""
    managed = message.get("context_management")
    events = sse.events({k: v for k, v in message.items() if k != "context_management"})
    if managed is not None:
        for event in events:
            if event["type"] == "message_delta":
                event["context_management"] = managed
    return sse.encode(events)


# -- the edits ------------------------------------------------------------------------------


def _edits(config: Any) -> list[Mapping[str, Any]]:
    edits = config.get("edits") if isinstance(config, Mapping) else None
    return [e for e in edits or () if isinstance(e, Mapping)]


def _value(setting: Any, default: int) -> int:
    value = setting.get("value") if isinstance(setting, Mapping) else None
    return value if isinstance(value, int) else default


def _tokens(body: Mapping[str, Any]) -> int:
    return sum(p.tokens for p in render(body))


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, list) else []


def _clear_tool_uses(
    prompt: dict[str, Any], edit: Mapping[str, Any], tokens: int
) -> tuple[dict[str, Any], int]:
    """(the prompt with the clearable results replaced, how many) once the trigger is passed."""
    messages: list[Msg] = prompt.get("messages") or []
    uses = [
        (i, j, block)
        for i, message in enumerate(messages)
        if message.get("role") == "assistant"
        for j, block in enumerate(_blocks(message))
        if isinstance(block, Mapping) and block.get("type") == "tool_use"
    ]
    trigger = edit.get("trigger")
    by_uses = isinstance(trigger, Mapping) and trigger.get("type") == "tool_uses"
    if (len(uses) if by_uses else tokens) <= _value(trigger, DEFAULT_TRIGGER):
        return prompt, 0
    keep = _value(edit.get("keep"), DEFAULT_KEEP)
    excluded = set(edit.get("exclude_tools") or ())
    inputs = edit.get("clear_tool_inputs")
    older = uses[: max(0, len(uses) - keep)]
    cleared = {block.get("id"): (i, j, block) for i, j, block in older if block.get("name") not in excluded}
    if not cleared:
        return prompt, 0
    edited = copy.deepcopy(prompt)
    for i, j, block in cleared.values():
        if inputs is True or (isinstance(inputs, list) and block.get("name") in inputs):
            edited["messages"][i]["content"][j] = {**block, "input": {}}
    for message in edited["messages"]:
        if message.get("role") != "user":
            continue
        for j, block in enumerate(_blocks(message)):
            if (
                isinstance(block, Mapping)
                and block.get("type") == "tool_result"
                and block.get("tool_use_id") in cleared
            ):
                message["content"][j] = _placeholder(block)
    return edited, len(cleared)


def _placeholder(result: Mapping[str, Any]) -> dict[str, Any]:
    """A cleared result: the placeholder instead of its content, its cache breakpoint kept."""
    inner = result.get("content")
    markers = (
        [b.get("cache_control") for b in inner if isinstance(b, Mapping)] if isinstance(inner, list) else []
    )
    marker = result.get("cache_control") or next((m for m in reversed(markers) if m), None)
    cleared = {k: v for k, v in result.items() if k not in ("content", "cache_control")}
    cleared["content"] = PLACEHOLDER
    return {**cleared, "cache_control": marker} if marker else cleared


def _clear_thinking(prompt: dict[str, Any], edit: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """(the prompt without the thinking of all but the newest `keep` assistant turns, how many lost some)."""
    keep = edit.get("keep")
    if keep == "all" or (isinstance(keep, Mapping) and keep.get("type") == "all"):
        return prompt, 0
    turns: list[list[int]] = []  # indices of the messages of each assistant turn
    role = None
    for i, message in enumerate(prompt.get("messages") or []):
        if message.get("role") == "assistant":
            if role != "assistant":
                turns.append([])
            turns[-1].append(i)
        role = message.get("role")
    older = turns[: max(0, len(turns) - _value(keep, DEFAULT_THINKING_TURNS))]
    edited, count = copy.deepcopy(prompt), 0
    for turn in older:
        lost = False
        for i in turn:
            blocks = _blocks(edited["messages"][i])
            kept = [b for b in blocks if not (isinstance(b, Mapping) and b.get("type") in _THINKING)]
            if len(kept) < len(blocks):
                edited["messages"][i]["content"], lost = kept, True
        count += lost
    return (edited, count) if count else (prompt, 0)


_THINKING = ("thinking", "redacted_thinking")
