"""A small, cheap model summarises long free text; rules handle everything else.

The rule compressor keeps facts it can recognise (counts, error lines, identifiers,
first and last rows). Long free text (prose, a support ticket, a web page after
extraction) has no such anchors: a head/tail cut keeps the greeting and the
signature and loses the request in the middle. There a small model earns its cost
(seed 004: rules first, a model only for free text, the original always behind a
re-read key). It is never used for code, diffs, migrations, configuration, stack
traces, error codes or test runs, where a paraphrase would lose the exact text
that matters, nor for a file about to be edited (`@tool(compress=False)` keeps
those exact before the diet ever gets here).

This module is pure: `summarize_free_text(text, budget, call=..., model=...)` (or
`is_free_text`, then `summarize_prose`). `call(model, prompt)` performs the model call
and returns (summary text, usage record), so the caller routes it through its own budget
and usage log (record the usage inside `call`: a call that returns an empty summary is
billed too); `llm_call` builds one on any `LLM` (`AnthropicLLM`, the simulator's), and
`agent.ext.summaries.calls` the one a live run uses. Summaries are cached by content hash
(model, prompt and text), so the same page is paid for once. The caller keeps the full
text as an artifact, and the summary names it (`pointer`). A failed call returns None:
the caller falls back to the rule compressor.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from agent.context.compress import detect
from agent.context.compressors.common import fit, is_important, where
from agent.context.compressors.html import html_to_lines

__all__ = [
    "PROMPT",
    "SummaryCache",
    "SummaryResult",
    "is_free_text",
    "llm_call",
    "summarize_free_text",
    "summarize_prose",
]

Call = Callable[[str, str], tuple[str, Any]]
"""`call(model, prompt) -> (summary text, usage record)`: the one model call, made by the caller."""

PROMPT = (
    "Summarise the text below for an agent that will act on it, in at most {chars} characters. "
    "Keep every name, number, date, id, URL and quoted error exactly as written; keep what is asked "
    "or decided and by whom; drop greetings, boilerplate and repetition. Answer with the summary only.\n\n"
    "<text>\n{text}\n</text>"
)
MIN_CHARS = 6000
"""Shorter text is cheaper to keep (or cut by rules) than to send to a model."""

_CODEISH = re.compile(
    r"[{};]\s*$|^\s*(?:def|class|import|from|function|const|let|var|return|if|for|while|#include|package|fn"
    r"|SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\b|^\s*[\w.-]+\s*[:=]\s*\S+$|^[+-@]{1,3}\s|^\s+at\s|=>|->|::",
    re.IGNORECASE,
)
_WORD = re.compile(r"[(\"']?[A-Za-z\u00c0-\uffff][a-z\u00c0-\uffff'-]{0,15}[.,;:!?)\"']{0,2}")
"""A word of prose: letters, lower case after the first, maybe quoted or followed by punctuation."""


def is_free_text(text: str, *, min_chars: int = MIN_CHARS) -> str | None:
    """The prose to summarise when `text` is long free text (a page as its extracted text),
    else None: any other kind, code or config lines, error lines, or too short."""
    if len(text) < min_chars:
        return None
    kind = detect(text)
    if kind == "html":
        title, lines = html_to_lines(text)
        text = "\n".join([title, *lines]) if title else "\n".join(lines)
        if len(text) < min_chars // 2:
            return None
    elif kind != "text":
        return None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    code = sum(1 for line in lines if _CODEISH.search(line))
    errors = sum(1 for line in lines if is_important(line))
    tokens = [token for line in lines for token in line.split()]
    words = sum(1 for token in tokens if _WORD.fullmatch(token))
    if code * 10 > len(lines) or errors * 20 > len(lines):
        return None  # code, config, a log or an error report: rules keep those exactly
    if len(tokens) < 6 * len(lines) or words * 10 < len(tokens) * 6:
        return None  # lists, tables, paths, encoded data: not sentences of words
    return text


@dataclass
class SummaryCache:
    """Summaries by content hash (model, prompt, text), the oldest dropped past `size`."""

    size: int = 256
    entries: OrderedDict[str, str] = field(default_factory=OrderedDict)

    @staticmethod
    def key(model: str, prompt: str) -> str:
        return hashlib.sha256(f"{model}\x00{prompt}".encode()).hexdigest()

    def get(self, key: str) -> str | None:
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
        return found

    def put(self, key: str, summary: str) -> None:
        self.entries[key] = summary
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


@dataclass(frozen=True)
class SummaryResult:
    text: str
    """What the model reads: a one-line note (model, size, where the full text is), then the summary."""
    usage: Any = None
    """The call's usage record (None when served from the cache): count it in budgets and the log."""
    cached: bool = False


def summarize_free_text(
    text: str,
    budget: int,
    *,
    call: Call,
    model: str,
    cache: SummaryCache | None = None,
    pointer: str | None = None,
    min_chars: int = MIN_CHARS,
) -> SummaryResult | None:
    """A summary of `text` in at most `budget` characters, or None when `text` is not long free
    text or the call failed (then the rule compressor applies)."""
    prose = is_free_text(text, min_chars=min_chars)
    if prose is None:
        return None
    return summarize_prose(prose, len(text), budget, call=call, model=model, cache=cache, pointer=pointer)


def summarize_prose(
    prose: str,
    length: int,
    budget: int,
    *,
    call: Call,
    model: str,
    cache: SummaryCache | None = None,
    pointer: str | None = None,
) -> SummaryResult | None:
    """A summary of `prose` (what `is_free_text` found in a result of `length` characters) in at
    most `budget` characters, or None when the call failed or said nothing."""
    note = f"[summary by {model} of {length:,} chars of free text; {where(pointer)}]\n"
    room = max(budget - len(note), 100)
    prompt = PROMPT.format(chars=room, text=prose)
    key = SummaryCache.key(model, prompt)
    summary = cache.get(key) if cache is not None else None
    usage = None
    if summary is None:
        try:
            summary, usage = call(model, prompt)
        except Exception:  # a failed summary costs nothing more: the rules take over
            return None
        summary = (summary or "").strip()
        if not summary:
            return None  # billed all the same: `call` is where the caller records usage
        if cache is not None:
            cache.put(key, summary)
    return SummaryResult(note + fit(summary, room, pointer), usage, cached=usage is None)


def llm_call(llm: Any, *, step: int = 0, max_tokens: int = 1024, models: Any = None) -> Call:
    """A `Call` on any `LLM` (`create(request) -> Message`): one tool-less request; the usage is
    an `agent.usage.Usage` with purpose "tool_summary", priced as the model asked for."""
    from agent.messages import text_of
    from agent.models import MODELS
    from agent.usage import Usage

    def run(model: str, prompt: str) -> tuple[str, Any]:
        request = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        message = llm.create(request)
        usage = Usage.from_message(step, message, models=models or MODELS, model=model)
        return text_of(message), replace(usage, purpose="tool_summary")

    return run
