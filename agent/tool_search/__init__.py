"""Tool search for large registries: defer most tools, let the model find the ones it needs.

`deferral` decides what is declared `defer_loading: true` and makes the client search
tool; `index` ranks tools (BM25 + graph expansion + weighted reciprocal-rank fusion);
`graph`, `text` and `thesaurus` are its parts. Nothing here imports the registry: the
registry imports this package.
"""

from agent.tool_search.deferral import (
    DEFAULT_THRESHOLD,
    SEARCH_TOOL_NAME,
    SERVER_SEARCH_TOOLS,
    SearchMode,
    reference_blocks,
    server_search_tool,
)
from agent.tool_search.index import Hit, ToolIndex, Weights

__all__ = [
    "DEFAULT_THRESHOLD",
    "SEARCH_TOOL_NAME",
    "SERVER_SEARCH_TOOLS",
    "Hit",
    "SearchMode",
    "ToolIndex",
    "Weights",
    "reference_blocks",
    "server_search_tool",
]
