"""A step's request is built once, not twice.

With `max_context_tokens` set, the history policy measures the request it would send
(`agent.context.history`), then the loop builds the same request again to send it: the
same body, marked for the cache again, and walked again by the token estimate of the
budget check. So the finished body of the last request built is kept in the run state,
and a request built again from the very same parts (its messages the same dicts in the
same places, every other value equal, key order included) gets that body back: the
object the estimate has just measured, which it then recognises at no cost.

The kept body is handed out once and then forgotten, so two callers never share one
body they might edit; anything that changed in between (the history rewritten after it
was measured, a memory note, another effort) is a different request, built afresh.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["built_once"]

Built = list[tuple[dict[str, Any], dict[str, Any], tuple[Any, ...]]]
"""At most one (request as built, its finished body, what that body held when finished)."""


def built_once(
    kept: Built, request: dict[str, Any], finish: Callable[[dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """`finish(request)`, or the body kept in `kept` for an identical request (then forgotten)."""
    if kept and _same(request, kept[0][0]) and _contents(kept[0][1]) == kept[0][2]:
        return kept.pop()[1]
    body = finish(request)
    kept[:] = [(request, body, _contents(body))]
    return body


def _contents(body: Mapping[str, Any]) -> tuple[Any, ...]:
    """The body's items by identity, and its number of messages: a body its first holder edited
    (a key added, a value replaced, a message appended) is not handed out again."""
    messages = body.get("messages")
    return (*map(id, body), *map(id, body.values()), len(messages) if isinstance(messages, list) else -1)


def _same(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    if len(new) != len(old) or any(map(operator.ne, new, old)):  # same keys, same order
        return False
    for key, value in new.items():
        was = old[key]
        if key == "messages" and type(value) is list and type(was) is list:
            if len(value) != len(was) or not all(map(operator.is_, value, was)):
                return False
        elif not _equal(value, was):
            return False
    return True


def _equal(a: Any, b: Any) -> bool:
    """Equal as sent: 1, 1.0 and True compare equal but are not the same JSON, nor are two
    dicts with their keys in another order."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(map(_equal, a.values(), b.values()))
    if type(a) is list or type(a) is tuple:  # the same items (a fresh list of the declarations): at once
        return len(a) == len(b) and (all(map(operator.is_, a, b)) or all(map(_equal, a, b)))
    return bool(a == b)
