"""The API's rules for deferred tools (`defer_loading`) and `tool_reference` blocks.

From the tool search documentation's error list, both answered 400:

* every tool of the request deferred: "All tools have defer_loading set. At least one tool
  must be non-deferred." (the model would have nothing to search with);
* a `tool_reference` in a `tool_result` (a custom, client-side tool search) naming a tool
  the request does not define: "Tool reference '<name>' has no corresponding tool
  definition".

Deliberately not refused: a reference to a tool that is not deferred, a `tool_result` that
mixes references with other content, deferred tools without any tool search tool (a
client-side search is an ordinary tool), and references inside a server
`tool_search_tool_result` (the API wrote them; the documentation states no 400 for them).

For the simulator's model, `visible_tools` is what a model can call: the tools declared in
full, and the deferred ones a reference has loaded. (The bill follows the same rule, in
`agent.testing.cache_model`.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["check_deferred", "hidden_tools", "referenced_names", "visible_tools"]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def referenced_names(block: Any) -> list[str]:
    """The tool names a `tool_result` or `tool_search_tool_result` block references."""
    if not isinstance(block, Mapping):
        return []
    if block.get("type") == "tool_result":
        inner = _list(block.get("content"))
    elif block.get("type") == "tool_search_tool_result":
        result = block.get("content")
        inner = _list(result.get("tool_references")) if isinstance(result, Mapping) else []
    else:
        return []
    refs = [b for b in inner if isinstance(b, Mapping) and b.get("type") == "tool_reference"]
    return [str(b["tool_name"]) for b in refs if isinstance(b.get("tool_name"), str)]


def _references(
    messages: Any, kinds: tuple[str, ...] = ("tool_result", "tool_search_tool_result")
) -> Iterator[str]:
    for message in _list(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in _list(content):
            if isinstance(block, Mapping) and block.get("type") in kinds:
                yield from referenced_names(block)


def check_deferred(body: Mapping[str, Any]) -> list[str]:
    """The 400s of `defer_loading` and `tool_reference` misuse in `body`."""
    tools = [t for t in _list(body.get("tools")) if isinstance(t, Mapping)]
    errors = []
    if tools and all(t.get("defer_loading") is True for t in tools):
        errors.append("All tools have defer_loading set. At least one tool must be non-deferred.")
    defined = {t.get("name") for t in tools if isinstance(t.get("name"), str)}
    for name in dict.fromkeys(_references(body.get("messages"), ("tool_result",))):
        if name not in defined:
            errors.append(f"Tool reference '{name}' has no corresponding tool definition")
    return errors


def visible_tools(body: Mapping[str, Any]) -> list[str]:
    """The tool names the model sees in `body`: not deferred, or loaded by a reference."""
    tools = [t for t in _list(body.get("tools")) if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
    loaded = set(_references(body.get("messages")))
    return [str(t["name"]) for t in tools if t.get("defer_loading") is not True or t["name"] in loaded]


def hidden_tools(body: Mapping[str, Any]) -> set[str]:
    """The deferred tools of `body` that no reference has loaded yet."""
    declared = {str(t.get("name")) for t in _list(body.get("tools")) if isinstance(t, Mapping)}
    return declared - set(visible_tools(body))
