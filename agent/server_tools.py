"""Server tools: the API's own tools (web search, web fetch, code execution, ...) next to `@tool`s.

The API runs these itself, inside one model turn: the response carries a
`server_tool_use` block and its `*_tool_result` block side by side in the assistant
content, and the loop has nothing to execute. What it must get right is the wire:

* **Declared as given.** A server tool is declared by its versioned `type` (and the
  fixed `name` that type goes with); the definition is sent exactly as passed, never
  validated against a local list that would go stale the day a version ships.
  `ServerTool` wraps a definition; `web_search`, `web_fetch` and `code_execution`
  build the common ones (newest versions the installed SDK declares, none needing a
  beta header).
* **One pair.** A call and its result are one unit: the API refuses a server call left
  without its result (unless it ends the request: a paused turn being continued) and
  a result without its call. `unanswered_calls` finds what a turn left open and
  `closing_results` answers it with the API's own "unavailable" error shape, so a
  final answer or a cut-off turn never leaves the history unsendable.
* **The container.** Code execution runs in a container whose id comes back in the
  response (`container_of`); sending it on the next request keeps its files and state.
* **Fees.** Web search is billed per search on top of tokens (`agent.fees`).
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CODE_EXECUTION",
    "SERVER_CALLS",
    "WEB_FETCH",
    "WEB_SEARCH",
    "ServerTool",
    "closing_results",
    "code_execution",
    "container_of",
    "is_server_call",
    "is_server_result",
    "result_type_for",
    "server_tool",
    "unanswered_calls",
    "web_fetch",
    "web_search",
]

WEB_SEARCH = "web_search_20260318"
WEB_FETCH = "web_fetch_20260318"
CODE_EXECUTION = "code_execution_20260521"
"""The newest versions `anthropic` 2.15 declares in its stable (non-beta) request types."""

SERVER_CALLS = frozenset({"server_tool_use", "mcp_tool_use"})
"""Blocks that call a tool the server runs (the API's own, or a remote MCP server's)."""

_RESULT_TYPES = {
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
}
_ERROR_CONTENT = {"mcp_tool_result"}  # results whose error is `is_error` + text, not an error object


@dataclass(frozen=True)
class ServerTool:
    """A tool the API runs, declared by its versioned definition (sent as given).

    `betas` names any `anthropic-beta` header the definition needs; the loop adds them to
    the request's `betas` (the SDK sends them as the header).
    """

    definition: Mapping[str, Any]
    betas: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.definition, Mapping):
            raise TypeError(f"a server tool is a definition dict, not {type(self.definition).__name__}")
        kind, name = self.definition.get("type"), self.definition.get("name")
        if "input_schema" in self.definition or kind in (None, "custom"):
            raise ValueError(
                f"{dict(self.definition)!r} is not a server tool: a server tool has a versioned `type` "
                "(e.g. 'web_search_20260318'); declare your own functions with @tool"
            )
        if not isinstance(kind, str) or not kind.strip():
            raise ValueError(f"server tool `type` must be a non-empty string, not {kind!r}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"server tool {kind}: needs the `name` its type goes with (e.g. 'web_search')")
        if isinstance(self.betas, str) or not all(isinstance(b, str) and b for b in self.betas):
            raise TypeError(f"server tool {name}: betas= takes a list of beta names")
        object.__setattr__(self, "definition", copy.deepcopy(dict(self.definition)))
        object.__setattr__(self, "betas", tuple(self.betas))

    @property
    def name(self) -> str:
        return str(self.definition["name"])

    @property
    def type(self) -> str:
        return str(self.definition["type"])

    def declaration(self) -> dict[str, Any]:
        """The definition as the request carries it (a copy: callers may mark it for caching)."""
        return copy.deepcopy(dict(self.definition))


def server_tool(definition: Mapping[str, Any] | ServerTool, *, betas: Iterable[str] = ()) -> ServerTool:
    """`definition` as a `ServerTool` (a `ServerTool` is returned unchanged when no betas are added)."""
    if isinstance(betas, str):
        raise TypeError(f"betas= takes a list of beta names, e.g. [{betas!r}]")
    if isinstance(definition, ServerTool):
        extra = tuple(b for b in betas if b not in definition.betas)
        return ServerTool(definition.definition, definition.betas + extra) if extra else definition
    return ServerTool(definition, tuple(betas))


def _options(**given: Any) -> dict[str, Any]:
    return {k: v for k, v in given.items() if v is not None}


def _domains(tool: str, allowed: Sequence[str] | None, blocked: Sequence[str] | None) -> dict[str, Any]:
    if allowed is not None and blocked is not None:
        raise ValueError(f"{tool}: allowed_domains and blocked_domains cannot both be given (API refuses it)")
    for domains in (allowed, blocked):
        if isinstance(domains, str):
            raise TypeError(f"{tool}: domains are a list, e.g. [{domains!r}]")
    return _options(
        allowed_domains=None if allowed is None else list(allowed),
        blocked_domains=None if blocked is None else list(blocked),
    )


def _max_uses(tool: str, max_uses: int | None) -> int | None:
    if max_uses is not None and (isinstance(max_uses, bool) or not isinstance(max_uses, int) or max_uses < 1):
        raise ValueError(f"{tool}: max_uses must be a positive integer, not {max_uses!r}")
    return max_uses


def web_search(
    *,
    max_uses: int | None = None,
    allowed_domains: Sequence[str] | None = None,
    blocked_domains: Sequence[str] | None = None,
    user_location: Mapping[str, Any] | None = None,
    version: str = WEB_SEARCH,
) -> ServerTool:
    """The API's web search: billed per search (`agent.fees`) plus the results as input tokens.
    `max_uses` caps searches per request, and with it the fee."""
    definition: dict[str, Any] = {"type": version, "name": "web_search"}
    definition |= _options(max_uses=_max_uses("web_search", max_uses))
    definition |= _domains("web_search", allowed_domains, blocked_domains)
    if user_location is not None:
        definition["user_location"] = {"type": "approximate", **dict(user_location)}
    return ServerTool(definition)


def web_fetch(
    *,
    max_uses: int | None = None,
    allowed_domains: Sequence[str] | None = None,
    blocked_domains: Sequence[str] | None = None,
    max_content_tokens: int | None = None,
    citations: bool = False,
    version: str = WEB_FETCH,
) -> ServerTool:
    """The API's web fetch: no fee beyond the fetched text, read as input tokens;
    `max_content_tokens` bounds that."""
    definition: dict[str, Any] = {"type": version, "name": "web_fetch"}
    definition |= _options(max_uses=_max_uses("web_fetch", max_uses), max_content_tokens=max_content_tokens)
    definition |= _domains("web_fetch", allowed_domains, blocked_domains)
    if citations:
        definition["citations"] = {"enabled": True}
    return ServerTool(definition)


def code_execution(*, version: str = CODE_EXECUTION) -> ServerTool:
    """The API's sandboxed code execution (billed per container-hour beyond the free hours;
    see `agent.fees`). Its container id is sent back on later requests by the loop."""
    return ServerTool({"type": version, "name": "code_execution"})


# -- pairs ---------------------------------------------------------------------------------


def is_server_call(block: Mapping[str, Any]) -> bool:
    return block.get("type") in SERVER_CALLS


def is_server_result(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"


def result_type_for(call: Mapping[str, Any]) -> str:
    """The result block type that answers `call` (`web_search` -> `web_search_tool_result`)."""
    if call.get("type") == "mcp_tool_use":
        return "mcp_tool_result"
    name = str(call.get("name", ""))
    return _RESULT_TYPES.get(name, f"{name}_tool_result")


def _content(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def unanswered_calls(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Server calls in `messages` that have no result anywhere in them, in order: what a paused
    turn, a cut-off one, or a call left in flight while the client's tools ran left open."""
    found = [b for m in messages if m.get("role") == "assistant" for b in _content(m)]
    answered = {b.get("tool_use_id") for b in found if is_server_result(b)}
    return [dict(b) for b in found if is_server_call(b) and b.get("id") not in answered]


def answered_ids(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """Ids of the server calls in `messages` (what a later result may answer)."""
    found = [b for m in messages if m.get("role") == "assistant" for b in _content(m)]
    return {str(b.get("id")) for b in found if is_server_call(b)}


def closing_results(calls: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One error result per call, in the API's own error shape ("unavailable"): the honest
    answer for a server call that never got one, so the history stays valid to continue."""
    results = []
    for call in calls:
        kind = result_type_for(call)
        block: dict[str, Any] = {"type": kind, "tool_use_id": call.get("id")}
        if kind in _ERROR_CONTENT:
            block |= {"is_error": True, "content": "not run: the turn ended before this call finished"}
        else:
            block["content"] = {"type": f"{kind}_error", "error_code": "unavailable"}
        results.append(block)
    return results


# -- the container ---------------------------------------------------------------------------


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def container_of(response: Any, now: dt.datetime | None = None) -> str | None:
    """The id of the container a response ran code in, while it has not expired; else None."""
    container = getattr(response, "container", None)
    if container is None:
        return None
    expires = getattr(container, "expires_at", None)
    if isinstance(expires, dt.datetime) and expires.tzinfo is not None and expires <= (now or _utc_now()):
        return None
    container_id = getattr(container, "id", None)
    return container_id if isinstance(container_id, str) and container_id else None
