"""Scripted server-tool turns for the simulator: ids, declared tools, usage, the container.

A policy scripts a server tool the way the model's output shows it: a
`server_tool_use` block and its `*_tool_result` block in the assistant content
(`agent.testing.scripted_llm.server_call` builds the pair), maybe with
`stop_reason="pause_turn"`. The API fills in what the model does not choose, and
so does this module:

* **Ids.** A call without an id is named `srvtoolu_sim_<response>_<index>`; a result
  without a `tool_use_id` answers the latest call still open.
* **Only declared tools run.** A call to a server tool the request does not declare
  is a policy bug (the API never sends one): refused, so a test cannot pass on it.
  The code-execution sub-tools (`bash_code_execution`, `text_editor_code_execution`)
  come with a declared `code_execution`.
* **Usage.** `usage.server_tool_use` counts the web searches and fetches the reply
  ran, so the client prices them (`agent.models`) from what the API reports.
* **The container.** A reply that runs code runs it in a container: the one the
  request names (`container`, an id or `{"id": ...}`) if this simulator made it,
  else a new one. Each container's requests are listed in `Containers.used`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.server_blocks import is_server_call, is_server_result

__all__ = ["CODE_TOOLS", "Containers", "check_declared", "link_callers", "name_calls", "server_usage"]

CODE_TOOLS = frozenset({"code_execution", "bash_code_execution", "text_editor_code_execution"})
CONTAINER_EXPIRES_AT = "2100-01-01T00:00:00Z"
"""Far ahead and fixed: recorded cassettes stay byte-identical (expiry is tested on the client)."""


def name_calls(content: list[dict[str, Any]], number: str) -> None:
    """Give each server call its id and each result the call it answers (in place: `content`
    is the simulator's own fresh list)."""
    open_calls: list[str] = []
    for index, block in enumerate(content):
        if is_server_call(block):
            block.setdefault("id", f"srvtoolu_sim_{number}_{index}")
            block["input"] = dict(block.get("input") or {})
            open_calls.append(block["id"])
        elif is_server_result(block):
            if "tool_use_id" not in block:
                if not open_calls:
                    raise ValueError(f"policy returned a {block['type']} with no server call before it")
                block["tool_use_id"] = open_calls[-1]
            if block["tool_use_id"] in open_calls:
                open_calls.remove(block["tool_use_id"])


def check_declared(content: list[dict[str, Any]], body: Mapping[str, Any]) -> None:
    """Refuse a scripted call to a server tool the request does not declare."""
    declared = {
        t.get("name")
        for t in body.get("tools") or []
        if isinstance(t, Mapping) and t.get("type") not in (None, "custom")
    }
    if "code_execution" in declared:
        declared |= CODE_TOOLS
    for block in content:
        if block.get("type") == "server_tool_use" and block.get("name") not in declared:
            raise ValueError(
                f"policy called server tool {block.get('name')!r}, which the request does not declare "
                f"(declared: {sorted(str(d) for d in declared)})"
            )


def link_callers(content: list[dict[str, Any]], body: Mapping[str, Any]) -> None:
    """Point each code-called `tool_use` (programmatic tool calling: a `caller` other than
    `direct`) at the `code_execution` call before it, as the API does: `caller.type` is the
    declared code execution tool's type, `caller.tool_id` that call's id. ValueError for what
    the API never sends: such a call with no code execution call before it, or to a tool whose
    `allowed_callers` does not name that type."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
    code_type = next((t.get("type") for t in tools if t.get("name") == "code_execution"), None)
    allowed = {t.get("name"): t.get("allowed_callers") for t in tools}
    running: str | None = None
    for block in content:
        if block.get("type") == "server_tool_use" and block.get("name") == "code_execution":
            running = block["id"]
        caller = block.get("caller")
        if block.get("type") != "tool_use" or not isinstance(caller, dict) or caller.get("type") == "direct":
            continue
        if running is None or not isinstance(code_type, str):
            raise ValueError(
                f"policy made {block['name']!r} a code-called tool_use with no code_execution call before it"
            )
        kind = caller.get("type") or code_type
        callers = allowed.get(block["name"])
        if not isinstance(callers, list) or kind not in callers:
            raise ValueError(
                f"tool {block['name']!r} does not allow caller {kind!r} (allowed_callers: {callers!r})"
            )
        block["caller"] = {"type": kind, "tool_id": running}


def server_usage(content: list[dict[str, Any]], body: Mapping[str, Any]) -> dict[str, int] | None:
    """`usage.server_tool_use` for a reply: None when the request declares no server tool."""
    declared = any(
        isinstance(t, Mapping) and t.get("type") not in (None, "custom") for t in body.get("tools") or []
    )
    if not declared:
        return None
    names = [b.get("name") for b in content if b.get("type") == "server_tool_use"]
    return {"web_search_requests": names.count("web_search"), "web_fetch_requests": names.count("web_fetch")}


@dataclass
class Containers:
    """The code-execution containers this simulator made, and which responses ran in each."""

    used: dict[str, list[str]] = field(default_factory=dict)

    def for_reply(
        self, body: Mapping[str, Any], content: list[dict[str, Any]], number: str
    ) -> dict[str, Any] | None:
        """The `container` of a reply: None unless it ran code; the requested one when known."""
        results = {f"{name}_tool_result" for name in CODE_TOOLS}
        calls = [b for b in content if b.get("type") == "server_tool_use"]
        runs_code = any(b.get("name") in CODE_TOOLS for b in calls) or any(
            b.get("type") in results for b in content
        )
        if not runs_code:
            return None
        asked = body.get("container")
        asked_id = asked.get("id") if isinstance(asked, Mapping) else asked
        container_id = asked_id if isinstance(asked_id, str) and asked_id in self.used else None
        if container_id is None:
            container_id = f"container_sim_{number}"
            self.used[container_id] = []
        self.used[container_id].append(number)
        return {"id": container_id, "expires_at": CONTAINER_EXPIRES_AT}
