"""Deferred tool declarations, and the `tool_reference`s that load them.

A declaration with `"defer_loading": true` (tool search's deferral) is in the request body but
not in the prompt the model reads until a `tool_reference` in a tool result loads it, so a
token estimate leaves the unloaded ones out (`agent.context.tokens.prompt_estimate`). Only a
request that defers a tool has anything to look for, so the estimate loads this module for those.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LOADING_BLOCKS", "unloaded_deferred"]

LOADING_BLOCKS = ("tool_result", "tool_search_tool_result")
"""Blocks whose `tool_reference`s load deferred tools (a client search's result, the server's)."""


def _loaded_names(messages: Any) -> set[Any]:
    """Tool names the `tool_reference`s of `messages` load (plain dicts are recognised before
    the slower abstract check: every block is read at each estimate)."""
    loaded: set[Any] = set()
    for message in messages:
        content = message.get("content") if type(message) is dict or isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else ():
            if (type(block) is dict or isinstance(block, Mapping)) and block.get("type") in LOADING_BLOCKS:
                loaded.update(_references(block.get("content")))
    return loaded


def _references(inner: Any) -> list[Any]:
    """The names a loading block lists (the server's result lists them under `tool_references`)."""
    if isinstance(inner, str):
        return []
    refs = inner.get("tool_references") if isinstance(inner, Mapping) else inner
    return [r.get("tool_name") for r in refs if isinstance(r, Mapping)] if isinstance(refs, list) else []


def unloaded_deferred(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The `"defer_loading": true` declarations no `tool_reference` in the messages loads."""
    tools = request.get("tools")
    if not isinstance(tools, list):
        return []
    deferred = [t for t in tools if isinstance(t, Mapping) and t.get("defer_loading") is True]
    if not deferred:
        return []
    loaded = _loaded_names(request.get("messages") or ())
    return [t for t in deferred if t.get("name") not in loaded]
