"""The simulator's prompt cache: the documented rules, as a small pure-ish model.

The caching and economics work is judged on the numbers this produces, so it
follows the documented semantics strictly rather than generously:

* A request is rendered as a list of block *positions* in the order tools →
  system → messages (consecutive same-role messages merged, a string content
  or system prompt counted as one text block). Each position has a deterministic
  token estimate (characters / 4 of its compact JSON, `cache_control` excluded,
  since moving a marker does not change the content) and a digest of the whole
  prefix up to it (a hash chain, so one changed byte changes every later digest).
* A `cache_control` marker makes its position a *breakpoint*; a top-level
  `cache_control` is a breakpoint on the last position.
* A breakpoint writes an entry for the prefix up to it. A later request reads
  only an entry an earlier request wrote at one of its breakpoints, found by
  looking back from each of its own breakpoints over at most `LOOKBACK_BLOCKS`
  positions (the breakpoint's own position and the 19 before it).
* A thinking block the simulator signed costs its hidden length (recorded in its
  signature), not the length of its possibly empty text: sent back, the model reads
  the whole reasoning, and it is billed as input.
* The model id seeds the chain (caches are per model); `tool_choice`, `thinking`
  and `output_config.effort` are mixed in where the messages level starts, so
  changing them invalidates the cached messages but not tools or system.
* A prefix shorter than the model's minimum cacheable length is never written
  (and so never read): both counters stay 0.
* Entries live 5 minutes (or 1 hour with `ttl: "1h"`) on an injectable clock,
  refreshed on every hit.
* A tool declared `defer_loading: true` costs nothing where the tools are (it still
  counts in the digest: the tools list is part of the prefix); a `tool_reference` to it
  costs its definition at the reference's position, where the API loads it.
* uncached + read + write == the whole prompt, always.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.context.cache import MIN_CACHEABLE_TOKENS
from agent.models import MODELS, base_model
from agent.testing.deferred import referenced_names
from agent.testing.signatures import hidden_tokens

__all__ = [
    "LOOKBACK_BLOCKS",
    "MIN_CACHEABLE_TOKENS",
    "TTL_SECONDS",
    "CacheUsage",
    "Position",
    "PromptCache",
    "base_model",
    "block_tokens",
    "min_cacheable_tokens",
    "render",
]

LOOKBACK_BLOCKS = 20
TTL_SECONDS: Mapping[str, float] = {"5m": 300.0, "1h": 3600.0}


def min_cacheable_tokens(model: str) -> int | None:
    """The model's minimum cacheable prefix, or None for a model the table does not know."""
    info = MODELS.lookup(model)
    return info.min_cacheable if info else None


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def block_tokens(block: Any) -> int:
    """Deterministic token estimate of one block: ceil(chars / 4) of its compact JSON, at least 1.

    A thinking block the simulator signed costs its hidden length instead (the thinking
    the model reads back, however short the text the client was shown)."""
    hidden = hidden_tokens(block)
    return hidden if hidden is not None else _tokens(_compact(block))


@dataclass(frozen=True)
class Position:
    """One block of the rendered prompt."""

    level: str
    """"tools", "system" or "messages"."""
    text: str
    """Compact JSON of the block without its `cache_control` (what the cache compares)."""
    tokens: int
    digest: str
    """Hash of the whole prefix up to and including this block."""
    ttl: str | None = None
    """The breakpoint's TTL when this block carries `cache_control`, else None."""


def _without_marker(block: Mapping[str, Any]) -> dict[str, Any]:
    clean = {k: v for k, v in block.items() if k != "cache_control"}
    inner = clean.get("content")
    if clean.get("type") == "tool_result" and isinstance(inner, list):
        clean["content"] = [
            {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, Mapping) else b
            for b in inner
        ]
    return clean


def _marker_ttl(block: Mapping[str, Any]) -> str | None:
    markers = [block.get("cache_control")]
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        markers += [b.get("cache_control") for b in block["content"] if isinstance(b, Mapping)]
    found = [m for m in markers if isinstance(m, Mapping)]
    return str(found[-1].get("ttl", "5m")) if found else None


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def render(body: Mapping[str, Any]) -> list[Position]:
    """The prompt as positions, tools → system → messages, each with its prefix digest."""
    chain = hashlib.sha256(_compact(["model", body.get("model")]).encode())
    positions: list[Position] = []

    tools = [t for t in body.get("tools") or []]
    deferred = {
        t["name"]: t
        for t in tools
        if isinstance(t, Mapping) and isinstance(t.get("name"), str) and t.get("defer_loading") is True
    }

    def add(level: str, block: Any, prefix: str = "") -> None:
        ttl = _marker_ttl(block) if isinstance(block, Mapping) else None
        text = _compact(_without_marker(block) if isinstance(block, Mapping) else block)
        chain.update(f"{level}|{prefix}{text}\n".encode())
        hidden = hidden_tokens(block)
        tokens = hidden if hidden is not None else _tokens(text)
        if (
            level == "tools"
            and isinstance(block, Mapping)
            and isinstance(block.get("name"), str)
            and block["name"] in deferred
        ):
            tokens = 0  # not in the prompt until a tool_reference loads it, where the reference is
        elif level == "messages":
            tokens += sum(_tokens(_compact(deferred[n])) for n in referenced_names(block) if n in deferred)
        positions.append(Position(level, text, tokens, chain.hexdigest(), ttl))

    for tool in tools:
        add("tools", tool)
    for block in _as_blocks(body.get("system")):
        add("system", block)
    config = body.get("output_config")
    settings = {
        "tool_choice": body.get("tool_choice"),
        "thinking": body.get("thinking"),
        "effort": config.get("effort") if isinstance(config, Mapping) else None,
    }
    chain.update(("settings|" + _compact(settings) + "\n").encode())
    role = None
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        starts_turn = message.get("role") != role
        role = message.get("role")
        for i, block in enumerate(_as_blocks(message.get("content"))):
            add("messages", block, f"{role}{'+' if starts_turn and i == 0 else ''}:")
    automatic = body.get("cache_control")
    if isinstance(automatic, Mapping) and positions:
        last = positions[-1]
        positions[-1] = Position(last.level, last.text, last.tokens, last.digest, automatic.get("ttl", "5m"))
    return positions


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


@dataclass(frozen=True)
class CacheUsage:
    """How one request's prompt was billed."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int

    @property
    def prompt(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
        }


@dataclass
class _Entry:
    expires_at: float
    ttl: str


@dataclass
class PromptCache:
    """The cache entries one simulator holds, and the accounting for each request."""

    clock: Callable[[], float] = time.monotonic
    """Seconds; inject a fake clock to test TTL expiry without waiting."""
    entries: dict[str, _Entry] = field(default_factory=dict)

    def account(self, body: Mapping[str, Any]) -> CacheUsage:
        """Bill `body`'s prompt against the cache, and update the cache as the API would."""
        positions = render(body)
        return self.account_positions(positions, min_cacheable_tokens(str(body.get("model"))) or 0)

    def account_positions(self, positions: Sequence[Position], minimum: int) -> CacheUsage:
        now = self.clock()
        self.entries = {k: e for k, e in self.entries.items() if e.expires_at > now}
        cumulative: list[int] = []
        running = 0
        for position in positions:
            running += position.tokens
            cumulative.append(running)
        breakpoints = [i for i, p in enumerate(positions) if p.ttl is not None]

        hit = -1
        for b in breakpoints:
            for q in range(b, max(b - LOOKBACK_BLOCKS, -1), -1):
                if positions[q].digest in self.entries:
                    hit = max(hit, q)
                    break
        read = cumulative[hit] if hit >= 0 else 0
        if hit >= 0:
            entry = self.entries[positions[hit].digest]
            entry.expires_at = now + TTL_SECONDS[entry.ttl]

        written = {"5m": 0, "1h": 0}
        covered = hit
        for b in breakpoints:
            ttl = str(positions[b].ttl)
            existing = self.entries.get(positions[b].digest)
            if b <= hit:
                if existing is not None:
                    existing.expires_at = now + TTL_SECONDS[existing.ttl]
                continue
            if cumulative[b] < minimum:
                continue  # below the model's minimum: silently not cached
            written[ttl if ttl in written else "5m"] += cumulative[b] - (
                cumulative[covered] if covered >= 0 else 0
            )
            self.entries[positions[b].digest] = _Entry(now + TTL_SECONDS.get(ttl, 300.0), ttl)
            covered = b
        write = written["5m"] + written["1h"]
        total = cumulative[-1] if cumulative else 0
        return CacheUsage(total - read - write, read, write, written["5m"], written["1h"])
