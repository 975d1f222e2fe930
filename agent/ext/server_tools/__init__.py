"""Server tools: the API's own tools (web search, web fetch, code execution, ...) next to `@tool`s.

    Agent(tools=[my_tool, web_search(max_uses=3), code_execution()], extensions=[Containers()])

The API runs these itself, inside one model turn: the response carries a
`server_tool_use` block and its `*_tool_result` block side by side in the assistant
content, and the loop has nothing to execute. The core knows what any server tool needs
(`agent.tools.ServerTool`: declared as given, its beta headers sent; `agent.server_blocks`:
a call and its result kept one pair). What lives here is what the common ones need:

* **Definitions.** `web_search`, `web_fetch` and `code_execution` build the versioned
  definitions (newest versions the installed SDK declares, none needing a beta header),
  checked for what the API would refuse (both domain lists, a zero `max_uses`).
* **The container.** Code execution runs in a container whose id comes back in the
  response (`container_of`); `Containers` sends it on the next request, which keeps the
  sandbox's files and state. An extension, because only code execution has one.
* **Fees.** Web search is billed per search on top of tokens (`agent.models`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.extension import Extension
from agent.tools import ServerTool, server_tool

if TYPE_CHECKING:
    from anthropic.types import Message

    from agent.state import RunState

__all__ = [
    "CODE_EXECUTION",
    "WEB_FETCH",
    "WEB_SEARCH",
    "Containers",
    "ServerTool",
    "code_execution",
    "container_of",
    "server_tool",
    "web_fetch",
    "web_search",
]

WEB_SEARCH = "web_search_20260318"
WEB_FETCH = "web_fetch_20260318"
CODE_EXECUTION = "code_execution_20260521"
"""The newest versions `anthropic` 2.15 declares in its stable (non-beta) request types."""


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
    """The API's web search: billed per search (`agent.models`) plus the results as input tokens.
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
    see `agent.models`). With `Containers()`, its container id is sent back on later requests."""
    return ServerTool({"type": version, "name": "code_execution"})


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


class Containers(Extension):
    """Code execution goes on in the same container: the id the last reply ran code in
    (while it has not expired) is sent as the next request's `container`."""

    key = "server_tools.container"
    """Where the id is kept, in `run.extras`."""

    def response(self, response: Message, run: RunState) -> Message:
        run.extras[self.key] = container_of(response) or run.extras.get(self.key)
        return response

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        container = run.extras.get(self.key)
        return request if container is None else {**request, "container": container}
