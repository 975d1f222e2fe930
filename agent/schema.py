"""Tool input schemas from ordinary Python signatures.

The model only ever sees a JSON Schema, and the only place the truth about a tool's
arguments lives is its signature and docstring. So the schema is derived from
them (through a pydantic model, which then also validates the model's input) and
never written twice by hand. Titles pydantic adds are stripped: they cost tokens
on every request and tell the model nothing the property names don't.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

__all__ = ["input_model_for", "json_schema", "parse_docstring"]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
_ARG = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {arg: description})."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            match = _ARG.match(line)
            indent = len(line) - len(line.lstrip())
            if match and indent <= 4:
                current = match.group(1).lstrip("*")
                args[current] = match.group(3).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), args


def input_model_for(fn: Callable[..., Any], tool_name: str) -> type[BaseModel]:
    """A strict pydantic model of `fn`'s keyword arguments (unknown keys rejected)."""
    hints = typing.get_type_hints(fn)
    _, arg_docs = parse_docstring(fn.__doc__)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise TypeError(f"tool {tool_name}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=arg_docs.get(param.name)))
    model: type[BaseModel] = create_model(
        f"{tool_name}_input", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def _strip_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema as the Messages API wants it: an object, no extras."""
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema
