"""What server tools cost beyond tokens: the per-use fees of the API's own tools.

A web search is billed per search on top of the tokens its results add; a dollar
budget that sees only tokens under-counts a search-heavy run. The fees are read
from `usage.server_tool_use` in each response (`web_search_requests`,
`web_fetch_requests`), so what is booked is what the API counted, not a guess
from the blocks.

Code execution is billed by container time (per container-hour beyond a monthly
free allowance, shared by the organisation). A response does not report container
time, so no per-call figure exists to book; `code_execution_per_hour` is kept for
estimates and the README's economics, and the run's cost leaves it out (said in
`Usage.line` whenever a container was used).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SERVER_TOOL_FEES", "ServerToolFees"]


@dataclass(frozen=True)
class ServerToolFees:
    """Dollars per use of the API's server tools (platform pricing page, late 2026)."""

    web_search_per_1k: float = 10.0
    """$10 per 1,000 searches; a search that fails is not billed (and not counted)."""
    web_fetch_per_1k: float = 0.0
    """Web fetch has no fee: the fetched content is billed as input tokens."""
    code_execution_per_hour: float = 0.05
    """Per container-hour beyond the free allowance; not reported per response (see above)."""

    def cost(self, server_tool_use: Mapping[str, Any] | None) -> float:
        """Dollars for one response's `usage.server_tool_use` counts (0 without any)."""
        if not server_tool_use:
            return 0.0
        searches = server_tool_use.get("web_search_requests") or 0
        fetches = server_tool_use.get("web_fetch_requests") or 0
        return (searches * self.web_search_per_1k + fetches * self.web_fetch_per_1k) / 1000

    def most(self, request: Mapping[str, Any]) -> float:
        """The most `request` can spend on fees: each declared web search or fetch used up to its
        `max_uses`. One without `max_uses` has no bound to add (the budget sees it after the call)."""
        per_use = {"web_search": self.web_search_per_1k, "web_fetch": self.web_fetch_per_1k}
        dollars = 0.0
        for declared in request.get("tools") or []:
            uses = declared.get("max_uses") if isinstance(declared, Mapping) else None
            if isinstance(uses, int) and declared.get("type") not in (None, "custom"):
                dollars += uses * per_use.get(str(declared.get("name")), 0.0) / 1000
        return dollars


SERVER_TOOL_FEES = ServerToolFees()
