"""The shapes the Messages API accepts, read from the `anthropic` SDK's own param types.

A hand-written list of block types and keys goes stale the week a server tool or a
block type ships, and then the strict simulator refuses what the real API takes.
So the structure is not listed here: it is derived from the SDK's request
TypedDicts (`MessageCreateParams`, `MessageCountTokensParams`, and their beta
counterparts, which add `context_management`, `mcp_servers`, `compaction`
blocks, `output_config.task_budget`, ...). `check_shape(body)` walks a request
body against those types and returns every structural violation in the API's
words: unknown keys ("Extra inputs are not permitted"), missing required keys,
wrong JSON types, values outside a `Literal`, and block `type`s no union member
declares. A body passes if it fits the stable types or the beta ones (a beta
shape needs a beta header on the real API; the validator does not see headers).

Semantic rules the types cannot express (tool_use/tool_result pairing, empty
text, breakpoints, per-model limits) live in `agent.testing.validate`.
"""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import pydantic
import typing_extensions
from anthropic.types import MessageCountTokensParams
from anthropic.types import message_create_params as stable
from anthropic.types.beta import message_count_tokens_params as beta_count
from anthropic.types.beta import message_create_params as beta

__all__ = ["HEADER_PARAMS", "check_shape", "check_value", "typed_dict_keys"]

HEADER_PARAMS = frozenset({"betas", "user_profile_id", "workspace_id"})
"""SDK arguments that travel as headers (`anthropic-beta`, ...), never in the JSON body."""

_CREATE = (
    stable.MessageCreateParamsNonStreaming,
    stable.MessageCreateParamsStreaming,
    beta.MessageCreateParamsNonStreaming,
    beta.MessageCreateParamsStreaming,
)
_COUNT = (MessageCountTokensParams, beta_count.MessageCountTokensParams)
_LITERALS = {Literal, typing_extensions.Literal}
_UNIONS = {Union, types.UnionType}
_DISCRIMINATORS = ("type", "role")
_REQUIRED = {typing_extensions.Required}


def check_shape(
    body: Mapping[str, Any], *, count_tokens: bool = False, extra: Mapping[str, Any] | None = None
) -> list[str]:
    """Structural violations of `body` against the SDK's request types (empty: it fits).

    Tries the stable types first, then the beta ones; when none fits, reports the
    violations of the closest one. `extra` maps further top-level keys to their types
    (parameters an older API version still takes but the SDK no longer declares).
    """
    best: list[str] | None = None
    for root in _COUNT if count_tokens else _CREATE:
        errors = _check_typed_dict(body, root, "", skip=HEADER_PARAMS, extra=extra or {})
        if not errors:
            return []
        best = _closer(best, errors)
    return best or []


@functools.cache
def typed_dict_keys(td: type) -> tuple[dict[str, Any], frozenset[str]]:
    """(annotations with Required/NotRequired/Annotated stripped, required keys) of a TypedDict."""
    extras = typing.get_type_hints(td, include_extras=True)
    required = frozenset(k for k, v in extras.items() if get_origin(v) in _REQUIRED)
    return typing.get_type_hints(td), required


def _join(where: str, key: str | int) -> str:
    return f"{where}.{key}" if where else str(key)


def check_value(value: Any, tp: Any, where: str) -> list[str]:
    """Violations of one JSON value against one SDK type annotation."""
    return _check(value, tp, where)


_ALL_KINDS = frozenset({"null", "boolean", "integer", "number", "string", "list", "object", "other"})
_SCALARS = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}
_ONE = {"object": "a valid dictionary or object", "null": "null"}


@dataclass(frozen=True)
class _Plan:
    """How to check a value against one type, worked out once per type."""

    category: str  # any, never, scalar, literal, typed_dict, mapping, list, union
    accepts: frozenset[str]  # the JSON kinds of value the type can take
    args: tuple[Any, ...] = ()

    def expected(self) -> str:
        if len(self.accepts) == 1:
            (kind,) = self.accepts
            return _ONE.get(kind, f"a valid {kind}")
        return " or ".join(sorted("an object" if k == "object" else f"a {k}" for k in self.accepts))


_KIND_OF_TYPE = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "list",
    dict: "object",
}


def _value_kind(value: Any) -> str:
    kind = _KIND_OF_TYPE.get(type(value))
    if kind is not None:
        return kind
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object" if isinstance(value, Mapping) else "other"


_PLANS: dict[int, tuple[Any, _Plan]] = {}
_UNION_PLANS: dict[int, tuple[Any, _UnionPlan]] = {}


def _plan(tp: Any) -> _Plan:
    """`_make_plan(tp)`, cached by identity: hashing typing objects costs more than the check."""
    found = _PLANS.get(id(tp))
    if found is None or found[0] is not tp:
        found = _PLANS[id(tp)] = (tp, _make_plan(tp))
    return found[1]


def _union_plan(tp: Any) -> _UnionPlan:
    found = _UNION_PLANS.get(id(tp))
    if found is None or found[0] is not tp:
        found = _UNION_PLANS[id(tp)] = (tp, _make_union_plan(tp))
    return found[1]


def _make_plan(tp: Any) -> _Plan:
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return _Plan("any", _ALL_KINDS)
    if tp in _SCALARS:
        kind = _SCALARS[tp]
        return _Plan("scalar", frozenset({kind, "integer"} if kind == "number" else {kind}))
    if origin in _UNIONS:
        return _Plan("union", frozenset().union(*(_plan(a).accepts for a in get_args(tp))), get_args(tp))
    if origin in _LITERALS:
        values = get_args(tp)
        return _Plan("literal", frozenset(_value_kind(v) for v in values), values)
    if typing_extensions.is_typeddict(tp):
        return _Plan("typed_dict", frozenset({"object"}), (tp,))
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        # A response block the SDK lets you pass back; it serializes it to its param shape,
        # which is a member of the same union. Matching the wire against the params suffices.
        return _Plan("never", frozenset())
    container = origin or tp
    if isinstance(container, type) and issubclass(container, collections.abc.Mapping):
        return _Plan("mapping", frozenset({"object"}), get_args(tp)[1:2])
    if isinstance(container, type) and issubclass(container, collections.abc.Iterable):
        return _Plan("list", frozenset({"list"}), get_args(tp)[:1])
    return _Plan("any", _ALL_KINDS)  # a type this walker does not model (a pydantic response model)


def _check(value: Any, tp: Any, where: str) -> list[str]:
    plan = _plan(tp)
    if plan.category == "any":
        return []
    kind = _value_kind(value)
    if kind not in plan.accepts:
        return [f"{where}: Input should be {plan.expected()}"]
    if plan.category == "literal":
        if any(value == a and type(value) is type(a) for a in plan.args):
            return []
        return [f"{where}: Input should be {' or '.join(repr(a) for a in plan.args)}"]
    if plan.category == "typed_dict":
        return _check_typed_dict(value, plan.args[0], where)
    if plan.category == "union":
        return _check_union(value, kind, tp, where)
    if plan.category == "mapping" and plan.args:
        return [e for k, v in value.items() for e in _check(v, plan.args[0], _join(where, k))]
    if plan.category == "list" and plan.args:
        return [e for i, item in enumerate(value) for e in _check(item, plan.args[0], _join(where, i))]
    return []


def _check_typed_dict(
    value: Any,
    td: type,
    where: str,
    *,
    skip: frozenset[str] = frozenset(),
    extra: Mapping[str, Any] | None = None,
) -> list[str]:
    if not isinstance(value, Mapping):
        return [f"{where or 'body'}: Input should be a valid dictionary or object"]
    hints, required = typed_dict_keys(td)
    hints = {**hints, **extra} if extra else hints
    errors: list[str] = []
    unknown = value.keys() - hints.keys() | value.keys() & skip
    if unknown:
        errors += [f"{_join(where, k)}: Extra inputs are not permitted" for k in sorted(unknown, key=str)]
    missing = required - value.keys()
    if missing:
        errors += [f"{_join(where, key)}: Field required" for key in sorted(missing)]
    for key, item in value.items():
        hint = hints.get(key)
        if hint is not None and key not in skip:
            errors += _check(item, hint, f"{where}.{key}" if where else key)
    return errors


class _Absent:
    def __repr__(self) -> str:
        return "None"


_ABSENT: Any = _Absent()


@dataclass(frozen=True)
class _UnionPlan:
    members: tuple[Any, ...]  # None left out: a null is checked before
    others: tuple[Any, ...]  # the members that are not TypedDicts
    key: str | None  # the discriminator every TypedDict member declares as a Literal
    by_tag: Mapping[Any, tuple[Any, ...]]  # discriminator value (or _ABSENT) -> members
    tags: tuple[str, ...]


def _make_union_plan(tp: Any) -> _UnionPlan:
    members = tuple(m for m in get_args(tp) if m is not type(None) and _plan(m).accepts)
    dicts = tuple(m for m in members if typing_extensions.is_typeddict(m))
    others = tuple(m for m in members if not typing_extensions.is_typeddict(m) and _plan(m).accepts)
    key = next(
        (k for k in _DISCRIMINATORS if len(dicts) > 1 and all(_literal_values(_hint(m, k)) for m in dicts)),
        None,
    )
    by_tag: dict[Any, tuple[Any, ...]] = {}
    if key is None:
        return _UnionPlan(members, others, None, by_tag, ())
    for m in dicts:
        hints, required = typed_dict_keys(m)
        for tag in (*_literal_values(hints.get(key)), *(() if key in required else (_ABSENT,))):
            by_tag[tag] = (*by_tag.get(tag, ()), m)
    tags = tuple(sorted(t for t in by_tag if isinstance(t, str)))
    return _UnionPlan(members, others, key, by_tag, tags)


def _check_union(value: Any, kind: str, tp: Any, where: str) -> list[str]:
    if value is None:
        return []  # `accepts` said the union takes null
    plan = _union_plan(tp)
    members = plan.members
    if kind == "object" and plan.key is not None:
        tag = value.get(plan.key, _ABSENT)
        hashable = isinstance(tag, (str, int, float, bool, _Absent)) or tag is None
        candidates = plan.by_tag.get(tag, ()) if hashable else ()
        if not candidates and not any(not _check(value, m, where) for m in plan.others):
            return [
                f"{_join(where, plan.key)}: Input tag {tag!r} found using '{plan.key}' does not match "
                f"any of the expected tags: {', '.join(map(repr, plan.tags))}"
            ]
        members = candidates + plan.others
    best: list[str] | None = None
    for member in members:
        if kind not in _plan(member).accepts:
            continue
        errors = _check(value, member, where)
        if not errors:
            return []
        best = _closer(best, errors)
    return best if best is not None else [f"{where}: Input should be {_plan(tp).expected()}"]


def _closer(best: list[str] | None, errors: list[str]) -> list[str]:
    """The violations of the closer candidate: fewer of them, then the one that got deeper."""

    def score(found: list[str]) -> tuple[int, int]:
        return len(found), -max(e.split(":", 1)[0].count(".") for e in found)

    return errors if best is None or score(errors) < score(best) else best


def _hint(td: type, key: str) -> Any:
    return typed_dict_keys(td)[0].get(key)


def _literal_values(tp: Any) -> tuple[Any, ...]:
    if get_origin(tp) in _LITERALS:
        return get_args(tp)
    if get_origin(tp) in _UNIONS:
        return tuple(v for arg in get_args(tp) for v in _literal_values(arg))
    return ()
