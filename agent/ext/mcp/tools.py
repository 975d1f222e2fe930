"""An MCP server's tools as registry `Tool`s: the server's own schemas, its errors as error results.

Each MCP tool becomes an `McpTool`, a `Tool` whose declaration carries the input schema
exactly as the server gave it, and whose input model checks a call against that schema
(JSON Schema, via `jsonschema`, which the `mcp` SDK brings) before anything is sent, so
a bad call costs no round trip and the model reads which field was wrong. The function is
async: it is awaited on the caller's loop while the call runs on the session's own
(`agent.ext.mcp.connection`), under `run` and `arun` alike.

What the server answers becomes what the model reads: the text blocks, joined (structured
content when there is no text); other blocks described in a line. An `isError` result, a
protocol error, a server that died and a call past its timeout all raise `McpToolError`,
which the registry turns into an `is_error` result.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, model_validator
from pydantic_core import PydanticCustomError

from agent.ext.mcp.connection import Connection, McpUnavailable
from agent.schema import check_sendable
from agent.tools import Tool

__all__ = ["McpTool", "McpToolError", "make_tools", "result_value"]

CONNECTION_CLOSED = -32000
"""The MCP SDK's error code for a call whose connection ended (the server exited, say)."""

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class McpToolError(RuntimeError):
    """An MCP call that did not succeed; its message is what the model reads."""


@dataclass(frozen=True)
class McpTool(Tool):
    """A tool served by an MCP server; `schema` is its input schema as the server declared it."""

    schema: Mapping[str, Any] | None = None
    remote_name: str = ""
    """The tool's own name on its server (the API's name pattern may have changed it)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.schema, Mapping) or self.schema.get("type") != "object":
            raise ValueError(f"MCP tool {self.name}: its input schema must be an object schema")

    def declaration(self) -> dict[str, Any]:
        """`Tool.declaration` (whatever else it declares) with the server's schema as the input schema."""
        return {**super().declaration(), "input_schema": copy.deepcopy(self.schema)}


class _Arguments(BaseModel):
    """The whole input object, passed on as is once the schema accepts it."""

    arguments: dict[str, Any]


def _input_model(name: str, schema: Mapping[str, Any]) -> type[_Arguments]:
    check = _validator(schema)

    class Arguments(_Arguments):
        @model_validator(mode="before")
        @classmethod
        def _against_schema(cls, data: Any) -> Any:
            if isinstance(data, _Arguments):
                return data
            if check is not None:
                problems = [
                    ".".join(map(str, e.absolute_path)) + ": " + e.message if e.absolute_path else e.message
                    for e in sorted(check.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
                ]
                if problems:
                    shown = {"problems": "; ".join(problems[:5])}
                    raise PydanticCustomError("mcp_schema", "{problems}", shown)
            return {"arguments": data}

    Arguments.__name__ = Arguments.__qualname__ = f"{name}_input"
    return Arguments


def _validator(schema: Mapping[str, Any]) -> Any:
    """A JSON Schema validator for the server's schema, or None if the schema itself is not
    valid (then the server alone judges the input, as it would anyway)."""
    try:
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
        from jsonschema.validators import validator_for  # type: ignore[import-untyped,unused-ignore]

        kind = validator_for(schema, default=Draft202012Validator)
        kind.check_schema(schema)
        return kind(schema)
    except Exception:
        return None


def _api_name(prefix: str | None, name: str, taken: set[str]) -> str:
    """The tool's name as the API accepts it: the prefix, invalid characters made `_`, at most
    128 characters, made unique with a counter."""
    base = _NOT_NAME.sub("_", f"{prefix}_{name}" if prefix else name)[:120] or "tool"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    taken.add(candidate)
    return candidate


def _schema(listed: Any) -> dict[str, Any]:
    schema = dict(listed) if isinstance(listed, Mapping) else {}
    schema.setdefault("type", "object")  # the API and MCP both want an object at the root
    return schema


POLICIES = frozenset(
    {"keep", "never_prune", "irreversible", "requires_approval", "compress", "timeout", "defer"}
)
"""The `Tool` policies `mcp_tools(options=...)` may set per tool (what `@tool(...)` takes)."""


def make_tools(
    connection: Connection,
    timeout: float | None,
    taken: set[str],
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[McpTool]:
    """Registry tools for every tool the connection's server lists; `options` sets the policies of
    some (by the tool's name as declared, or its own name on the server)."""
    options = options or {}
    made = []
    for listed in connection.tools:
        name = _api_name(connection.server.prefix, listed.name, taken)
        schema = _schema(listed.input_schema)
        title = getattr(listed, "title", None) or listed.name
        description = (listed.description or "").strip() or (
            f"{title} (a tool of MCP server {connection.server.label})"
        )
        policies: dict[str, Any] = {"timeout": timeout, **options.get(name, options.get(listed.name, {}))}
        if policies.get("keep") is not None:
            policies["keep"] = tuple(policies["keep"])
        tool_ = McpTool(
            name=name,
            description=description,
            fn=_Caller(connection, listed.name, policies["timeout"]),
            input_model=_input_model(name, schema),
            schema=schema,
            remote_name=listed.name,
            **policies,
        )
        check_sendable(tool_.declaration(), name)
        made.append(tool_)
    return made


class _Caller:
    """The function of one MCP tool: an awaited call through the connection."""

    def __init__(self, connection: Connection, name: str, timeout: float | None) -> None:
        self.connection, self.name, self.timeout = connection, name, timeout

    async def __call__(self, arguments: dict[str, Any]) -> Any:
        label = self.connection.server.label
        client = self.connection.client
        try:
            result = await self.connection.call(
                client.call_tool(self.name, arguments, read_timeout_seconds=self.timeout)
            )
        except McpUnavailable as error:
            raise McpToolError(str(error)) from None
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if getattr(error, "code", None) == CONNECTION_CLOSED:
                reason = "closed the connection (the server may have exited)"
                raise McpToolError(f"MCP server {label} {reason} during the call to {self.name}") from None
            failed = f"MCP server {label} failed the call to {self.name}"
            raise McpToolError(f"{failed}: {_described(error)}") from None
        value = result_value(result)
        if result.is_error:
            said = value if isinstance(value, str) and value else f"{self.name} failed (no message)"
            raise McpToolError(said)
        return value


def _described(error: BaseException) -> str:
    code = getattr(error, "code", None)
    text = str(error).strip() or type(error).__name__
    return f"{text} (code {code})" if isinstance(code, int) else f"{type(error).__name__}: {text}"


def result_value(result: Any) -> Any:
    """What the model reads of a `CallToolResult`: its text, else its structured content."""
    texts, others = [], []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            texts.append(block.resource.text)
        else:
            others.append(_describe_block(block))
    if not texts and not others and result.structured_content is not None:
        return result.structured_content
    if not texts and result.structured_content is not None:
        return {"result": result.structured_content, "other_content": others}
    return "\n".join([*texts, *others])


def _describe_block(block: Any) -> str:
    kind = getattr(block, "type", "unknown")
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind}: {getattr(block, 'mime_type', '?')}, about {size:,} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource: {block.uri}{f' ({block.name})' if getattr(block, 'name', None) else ''}]"
    if kind == "resource":
        return f"[resource: {getattr(block.resource, 'uri', '?')}, binary, not shown]"
    return f"[{kind} content, not shown]"
