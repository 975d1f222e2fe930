"""Pair-safe compaction: when the request nears the budget, fold the head into a summary.

Pruning slows the history's growth but cannot stop it. Past `max_context_tokens` (less a
margin) the oldest messages become one user message holding a summary; the recent tail stays
verbatim. Each rule prevents a 400 or a lost fact: the tail starts at an assistant message
after a user message (no pair split, roles alternate), never with a `tool_use` pending; the
summarizer gets no tools and a plain-text transcript; the original request and every
irreversible result are copied in verbatim by the framework, not left to the model, and carried
on by the next compaction; a failed summary falls back to aggressive pruning.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.context.prune import PointerFor, Protected, call_signature, prune
from agent.errors import BudgetExceeded
from agent.memory import MEMORY_NOTE_PREFIX
from agent.messages import CLIENT_BLOCKS, Msg, blocks, content_text, tool_names_by_id

__all__ = [
    "SUMMARY_PROMPT",
    "Compaction",
    "choose_boundary",
    "compact",
    "fit_context",
    "original_request",
    "pending_tool_use",
    "summary_request",
    "transcript",
]

log = logging.getLogger("agent.context")

SUMMARY_PROMPT = """Write a handover note for the conversation above, so that someone who reads \
only this note can finish the task. Include every item below; write "none" for an empty one.

1. The user's original request, quoted verbatim.
2. Facts confirmed so far, with exact values (ids, amounts, dates, names, statuses, paths).
3. Irreversible actions already taken and their results.
4. Attempts that failed, and why they failed.
5. The work that remains.

Leave out lookups that turned out irrelevant and intermediate reasoning. Only write what \
the conversation confirms; do not guess."""

SUMMARIZER_SYSTEM = "You summarize agent conversations into precise handover notes. You never call tools."

HEADER = "[Earlier conversation compacted to save context]"
ACTION_PREFIX = "[Irreversible action already taken; do not repeat it] "
REQUEST_OPEN, REQUEST_CLOSE = "<original_request>", "</original_request>"
SUMMARY_OPEN, SUMMARY_CLOSE = "<summary>", "</summary>"
TAIL_SHARE = 0.5
"""After compaction the tail may use this share of the budget, leaving room to grow."""
TRANSCRIPT_RESULT_CHARS = 3000
TRANSCRIPT_INPUT_CHARS = 500


def _no_pointer(tool_use_id: str) -> str | None:
    return None


@dataclass(frozen=True)
class Compaction:
    """What was done: the new history, and `outcome` compacted | pruned | fallback | skipped."""

    messages: list[Msg]
    outcome: str
    detail: str = ""
    folded: int = 0
    """How many messages of the old history the summary replaced."""


def pending_tool_use(messages: Sequence[Msg]) -> bool:
    """True when the history ends in an assistant turn whose tool calls have no results yet."""
    return (
        bool(messages)
        and messages[-1].get("role") == "assistant"
        and any(b.get("type") == "tool_use" for b in blocks(messages[-1]))
    )


def choose_boundary(messages: Sequence[Msg], tail_budget: int, size: Callable[[Msg], int]) -> int | None:
    """Index where the verbatim tail starts, or None when no safe cut folds anything: an assistant
    message after a user one, from index 2, not inside a server call/result span; the earliest
    whose tail fits `tail_budget`, else the latest."""
    split = _server_pair_spans(messages)
    cuts = [
        b
        for b in range(2, len(messages))
        if messages[b].get("role") == "assistant"
        and messages[b - 1].get("role") == "user"
        and not any(start < b <= end for start, end in split)
    ]
    if not cuts:
        return None
    sizes = [size(m) for m in messages]
    return next((cut for cut in cuts if sum(sizes[cut:]) <= tail_budget), cuts[-1])


_CLIENT_KINDS = CLIENT_BLOCKS | {"tool_result"}
"""Block types no server tool's call or result can have: a history of these alone loads nothing more."""


def _server_tests(messages: Sequence[Msg]) -> tuple[Callable[[Any], bool], Callable[[Any], bool]]:
    """`agent.server_blocks`' tests (server call? result?), or two saying no, so it stays unloaded."""
    if all(isinstance(b, Mapping) and b.get("type") in _CLIENT_KINDS for m in messages for b in blocks(m)):
        return _no, _no
    from agent.server_blocks import is_server_call, is_server_result  # loaded by the runs with server tools

    return is_server_call, is_server_result


def _no(block: Any) -> bool:
    return False


def _server_pair_spans(messages: Sequence[Msg]) -> list[tuple[int, int]]:
    """(message of a server call, message of its result) for pairs split over messages."""
    is_server_call, is_server_result = _server_tests(messages)
    called: dict[Any, int] = {}
    spans = []
    for index, message in enumerate(messages):
        for block in blocks(message) if message.get("role") == "assistant" else []:
            if is_server_call(block):
                called[block.get("id")] = index
            elif is_server_result(block) and called.get(block.get("tool_use_id"), index) < index:
                spans.append((called[block.get("tool_use_id")], index))
    return spans


def _texts(message: Msg) -> list[str]:
    return [str(b.get("text", "")) for b in blocks(message) if b.get("type") == "text"]


def is_summary(message: Msg) -> bool:
    texts = _texts(message)
    return message.get("role") == "user" and bool(texts) and texts[0].startswith(HEADER)


def original_request(messages: Sequence[Msg]) -> str:
    """The user's first request, verbatim (read back out of a summary after a compaction)."""
    if not messages:
        return ""
    first = messages[0]
    if is_summary(first):
        head = _texts(first)[0]
        start, end = head.find(REQUEST_OPEN), head.rfind(REQUEST_CLOSE)
        if start >= 0 and end > start:
            return head[start + len(REQUEST_OPEN) : end].strip("\n")
    return "\n\n".join(t for t in _texts(first) if not t.startswith(MEMORY_NOTE_PREFIX))


def carried_actions(head: Sequence[Msg], irreversible: Protected) -> list[str]:
    """One verbatim block per irreversible tool result in the head (older carried ones first)."""
    carried = (
        [t for t in _texts(head[0]) if t.startswith(ACTION_PREFIX)] if head and is_summary(head[0]) else []
    )
    names = tool_names_by_id(head)
    for message in head:
        for block in blocks(message):
            if block.get("type") != "tool_result":
                continue
            name, arguments = names.get(block.get("tool_use_id", ""), ("unknown_tool", {}))
            if not irreversible(name):
                continue
            call = f"{name}({json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)})"
            outcome = "failed with" if block.get("is_error") else "returned"
            result = content_text(block.get("content")) or "(empty)"
            carried.append(f"{ACTION_PREFIX}{call} {outcome}:\n{result}")
    return carried


def summary_message(request: str, actions: Sequence[str], summary: str) -> Msg:
    """The user message that replaces the head: request, carried actions, then the summary."""
    opening = (
        f"{HEADER}\nThe user's original request, verbatim:\n{REQUEST_OPEN}\n"
        f"{request or '(the first message had no text)'}\n{REQUEST_CLOSE}"
    )
    closing = (
        f"{SUMMARY_OPEN}\n{summary.strip()}\n{SUMMARY_CLOSE}\n"
        "Continue the task from here; the messages after this one are verbatim."
    )
    content = [{"type": "text", "text": t} for t in (opening, *actions, closing)]
    return {"role": "user", "content": content}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit:,} more chars]"


def transcript(head: Sequence[Msg]) -> str:
    """The head as plain text ("USER: ...", "CALL ...", "RESULT ..."): no pairs to break."""
    names = tool_names_by_id(head)
    is_server_call, is_server_result = _server_tests(head)
    lines: list[str] = []
    for message in head:
        role = str(message.get("role", "user")).upper()
        for block in blocks(message):
            kind = block.get("type")
            if kind == "text":
                lines.append(f"{role}: {block.get('text', '')}")
            elif kind == "tool_use" or is_server_call(block):
                rendered = json.dumps(block.get("input", {}), ensure_ascii=False, default=str)
                lines.append(f"CALL {block.get('name')} {_cut(rendered, TRANSCRIPT_INPUT_CHARS)}")
            elif is_server_result(block):  # the API's own result (search hits, code output), as JSON
                rendered = json.dumps(block.get("content"), ensure_ascii=False, default=str)
                lines.append(f"SERVER RESULT {block.get('type')}: {_cut(rendered, TRANSCRIPT_RESULT_CHARS)}")
            elif kind == "tool_result":
                name, arguments = names.get(block.get("tool_use_id", ""), ("unknown_tool", {}))
                status = "ERROR from" if block.get("is_error") else "RESULT of"
                text = content_text(block.get("content")) or "(empty)"
                lines.append(
                    f"{status} {call_signature(name, arguments)}: {_cut(text, TRANSCRIPT_RESULT_CHARS)}"
                )
    return "\n".join(lines)


def summary_request(
    text: str, *, model: str, max_tokens: int, prompt: str = SUMMARY_PROMPT, thinking_off: bool = False
) -> dict[str, Any]:
    """A tool-less request for the handover note of `text`; `thinking_off`: a summary needs no reasoning."""
    content = [{"type": "text", "text": f"<transcript>\n{text}\n</transcript>\n\n{prompt}"}]
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "system": SUMMARIZER_SYSTEM,
        "messages": [{"role": "user", "content": content}],
    }
    if thinking_off:
        request["thinking"] = {"type": "disabled"}
    return request


def compact(
    messages: Sequence[Msg],
    summarize: Callable[[str], str],
    *,
    tail_budget: int,
    size: Callable[[Msg], int],
    irreversible: Protected,
    protected: Protected,
    pointer_for: PointerFor | None = None,
    request: str | None = None,
) -> Compaction:
    """Fold the head of `messages` into a summary quoting `request` (default: the first one); a new
    list. If `summarize` fails or returns nothing, older results become stubs instead ("fallback")."""
    if pending_tool_use(messages):
        return Compaction(list(messages), "skipped", "a tool_use is still waiting for its result")
    cut = choose_boundary(messages, tail_budget, size)
    if cut is None:
        return Compaction(list(messages), "skipped", "no safe boundary folds anything")
    head, tail = messages[:cut], messages[cut:]
    try:
        summary = summarize(transcript(head)).strip()
        failure = "" if summary else "the summarizer returned no text"
    except BudgetExceeded:
        raise  # a budget stops the run; it is not a summarizer failure to work around
    except Exception as error:
        summary, failure = "", f"the summarizer failed: {type(error).__name__}: {error}"
    if failure:
        log.warning("compaction fell back to pruning: %s", failure)
        fallback = prune(messages, 1, batch=1, protected=protected, pointer_for=pointer_for or _no_pointer)
        return Compaction(fallback, "fallback", failure)
    task = request if request is not None else original_request(messages)
    folded = summary_message(task, carried_actions(head, irreversible), summary)
    log.info("compacted %d messages into a summary of %d chars", cut, len(summary))
    return Compaction([folded, *tail], "compacted", f"folded {cut} messages", cut)


def fit_context(
    messages: Sequence[Msg],
    summarize: Callable[[str], str],
    *,
    limit: int,
    margin: float,
    measure: Callable[[Sequence[Msg]], int],
    size: Callable[[Msg], int],
    irreversible: Protected,
    protected: Protected,
    keep_recent: int = 0,
    pointer_for: PointerFor | None = None,
    request: str | None = None,
) -> Compaction:
    """Keep the request under `limit * (1 - margin)` tokens, as `measure` counts them.

    Over the line, pruning all now (the cached prefix moves anyway) is enough if it gets to
    `TAIL_SHARE` of the line (less would rewrite the prefix again a step later); else the head is
    summarized, the tail getting `TAIL_SHARE` of the budget less the fixed part (`measure([])`)."""
    trigger = int(limit * (1 - margin))
    if limit <= 0 or measure(messages) <= trigger:
        return Compaction(list(messages), "skipped", "under budget")
    if keep_recent > 0:
        pruned = prune(
            messages, keep_recent, batch=1, protected=protected, pointer_for=pointer_for or _no_pointer
        )
        if pruned != list(messages) and measure(pruned) <= trigger * TAIL_SHARE:
            return Compaction(pruned, "pruned", "pruning ahead of the batch made enough room")
        messages = pruned
    done = compact(
        messages,
        summarize,
        tail_budget=int(trigger * TAIL_SHARE) - measure([]),
        size=size,
        irreversible=irreversible,
        protected=protected,
        pointer_for=pointer_for,
        request=request,
    )
    if (left := measure(done.messages)) > limit:
        too_big = "still ~%d tokens after %s (limit %d): the newest turns alone are too big"
        log.warning(too_big, left, done.outcome, limit)
    return done
