"""Tool input schemas from ordinary Python signatures and docstrings, never written twice by hand.

A pydantic model of the arguments validates the model's input; its titles are stripped from the
schema (tokens on every request, nothing for the model). Keywords a `functools.partial` binds are
hidden from the model; anything no call could get through is refused when decorated.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import logging
import re
import sys
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from agent.errors import did_you_mean

__all__ = [
    "PARAM_NAME",
    "Described",
    "call_arguments",
    "caller_locals",
    "check_sendable",
    "describe_callable",
    "input_model_for",
    "json_schema",
    "parse_docstring",
]

PARAM_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,64}")
"""What the Messages API accepts as a property key of `input_schema`."""


@dataclass(frozen=True)
class Described:
    """A callable as a tool sees it."""

    name: str
    """The default tool name: the function's, or the class's for a callable object."""
    doc: str | None
    params: tuple[inspect.Parameter, ...]
    """The parameters the model fills (partial-bound ones left out)."""
    hints: Mapping[str, Any]


IDEMPOTENCY_KEY = "idempotency_key"
"""A parameter the framework fills, never the model: a key stable for one call across crash and resume."""


def takes_idempotency_key(fn: Callable[..., Any]) -> bool:
    """Whether `fn` has an `idempotency_key` parameter that can be passed by name."""
    try:
        param = inspect.signature(fn).parameters.get(IDEMPOTENCY_KEY)
    except (TypeError, ValueError):
        return False
    return param is not None and param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)


def describe_callable(
    fn: Callable[..., Any], label: str | None = None, localns: Mapping[str, Any] | None = None
) -> Described:
    """Everything `input_model_for` needs to know about `fn`; TypeError if it cannot be a tool.
    `localns` resolves string hints naming something local to the scope that decorated it."""
    if not callable(fn):
        raise TypeError(f"tool: a {type(fn).__name__} is not callable")
    target: Any = fn
    bound: set[str] = set()
    while isinstance(target, functools.partial):
        bound.update(target.keywords)
        target = target.func
    if isinstance(target, type):
        raise TypeError(
            f"tool: {target.__name__} is a class; pass a function, or an instance of a class with __call__"
        )
    is_object = not inspect.isroutine(target)
    core = type(target).__call__ if is_object else target
    name = type(target).__name__ if is_object else getattr(target, "__name__", "")
    label = label or name
    if inspect.isgeneratorfunction(core) or inspect.isasyncgenfunction(core):
        raise TypeError(
            f"tool {label}: a generator function cannot be a tool (the model reads one result); "
            "return a list instead"
        )
    doc = (type(target).__doc__ or core.__doc__) if is_object else target.__doc__
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"tool {label}: its signature cannot be read ({error})") from None
    params = tuple(
        p for p in signature.parameters.values() if p.name not in bound and p.name != IDEMPOTENCY_KEY
    )
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {label}: *args/**kwargs cannot be described to a model")
        if not PARAM_NAME.fullmatch(param.name):
            raise TypeError(
                f"tool {label}: parameter {param.name!r} is not a name the API accepts "
                f"({PARAM_NAME.pattern}); rename it"
            )
    return Described(name, doc, params, _hints(target.__call__ if is_object else target, label, localns))


def _hints(fn: Any, label: str, localns: Mapping[str, Any] | None) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as error:  # a name not yet defined, a malformed string, a bad typing construct
        if isinstance(error, NameError) and localns is not None:
            try:
                return typing.get_type_hints(fn, localns=dict(localns), include_extras=True)
            except Exception:
                pass
        raise TypeError(
            f"tool {label}: its type hints cannot be resolved ({type(error).__name__}: {error}); define or "
            "import every type a parameter names before the tool is decorated"
        ) from None


def call_arguments(fn: Callable[..., Any], arguments: BaseModel) -> tuple[list[Any], dict[str, Any]]:
    """(positional, keyword) arguments for `fn` from its validated input model (a name clashing
    with pydantic's, like `model_config`, is the field's alias)."""
    fields = type(arguments).model_fields
    values = {info.alias or key: getattr(arguments, key) for key, info in fields.items()}
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return [], values
    return [values.pop(p.name) for p in params if p.kind is p.POSITIONAL_ONLY and p.name in values], values


def caller_locals() -> dict[str, Any] | None:
    """The namespace where `@tool` was applied (our caller's caller): string hints may name its locals."""
    try:
        return dict(sys._getframe(2).f_locals)
    except Exception:
        return None


log = logging.getLogger("agent")

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


def input_model_for(
    fn: Callable[..., Any], tool_name: str, *, described: Described | None = None
) -> type[BaseModel]:
    """A strict pydantic model of `fn`'s arguments (unknown keys rejected); TypeError, naming the
    parameter, for a missing hint or a type JSON Schema cannot describe (a `Callable`, any class)."""
    described = described or describe_callable(fn, tool_name)
    _, arg_docs = parse_docstring(described.doc)
    taken = {param.name for param in described.params}
    for documented in sorted(set(arg_docs) - taken):
        log.warning(
            "tool %s: its docstring's Args names %r, which is not a parameter%s; the model never sees "
            "that description",
            tool_name,
            documented,
            did_you_mean(documented, taken),
        )
    fields: dict[str, Any] = {}
    for index, param in enumerate(described.params):
        if param.name not in described.hints:
            raise TypeError(f"tool {tool_name}: parameter {param.name!r} needs a type hint")
        key = param.name
        if key.startswith("_") or key.startswith("model_") or hasattr(BaseModel, key):
            key = next(k for k in (f"arg{index}_{n}" for n in range(len(taken) + 1)) if k not in taken)
        fields[key] = _field(param, described.hints[param.name], arg_docs.get(param.name), key)
        _check_field(tool_name, param.name, {key: fields[key]})
    return _create(f"{tool_name}_input", fields)


def _field(param: inspect.Parameter, hint: Any, doc: str | None, key: str) -> tuple[Any, Any]:
    extra: dict[str, Any] = {"description": doc} if doc else {}
    if key != param.name:
        extra["alias"] = param.name
    default = param.default
    if isinstance(default, FieldInfo):  # `x: int = Field(5, ge=0)`
        return Annotated[hint, default], Field(**extra)
    return hint, Field(... if default is inspect.Parameter.empty else default, **extra)


def _create(name: str, fields: dict[str, Any]) -> type[BaseModel]:
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


def _check_field(tool_name: str, param: str, field: dict[str, Any]) -> None:
    """Build this one parameter's schema now, so a type no model can send fails here, clearly."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a default JSON cannot hold is left out, as it should be
            json_schema(_create("probe", field))
    except Exception as error:
        hint = next(iter(field.values()))[0]
        why = (str(error).strip().splitlines() or [""])[0][:160]
        raise TypeError(
            f"tool {tool_name}: parameter {param!r} ({_show(hint)}) cannot be described in JSON Schema, "
            f"so a model could never pass it ({type(error).__name__}: {why}); take plain data (str, "
            "int, an enum, a pydantic model) and build the object inside the tool"
        ) from None


def _show(hint: Any) -> str:
    try:
        return getattr(hint, "__name__", None) or repr(hint)
    except Exception:
        return "its type"


# JSON Schema keywords whose values are schemas (one, a name -> schema map, or a list)
_SCHEMA_KEYS = {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"}
_SCHEMA_KEYS |= {"unevaluatedItems", "unevaluatedProperties", "additionalItems"}
_SCHEMA_MAPS = {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
_SCHEMA_LISTS = {"anyOf", "allOf", "oneOf", "prefixItems", "items"}


def _strip_titles(node: Any) -> Any:
    """A schema without its `title` keywords; data in it (default, enum, const, examples) untouched."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strip_titles(sub) for sub in value]
        elif key in _SCHEMA_KEYS:
            out[key] = _strip_titles(value)
        else:
            out[key] = value
    return out


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema as the Messages API wants it: an object, no extras. A fresh copy
    each call (pydantic may hand out `json_schema_extra`'s own values), so a caller may edit it."""
    schema: dict[str, Any] = _strip_titles(copy.deepcopy(model.model_json_schema()))
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def check_sendable(declaration: dict[str, Any], tool_name: str) -> None:
    """TypeError now, not mid-run, for a declaration the request encoder (strict JSON, UTF-8)
    would refuse: a NaN default, a lone surrogate in a docstring or an enum."""
    try:
        json.dumps(declaration, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"tool {tool_name}: its declaration cannot be sent to the API ({type(error).__name__}: "
            f"{str(error)[:200]}); check the docstring, defaults and enum values"
        ) from None
