"""Say out loud what the model is told quietly.

Every tool failure becomes an `is_error` result the model reads and adapts to, which
keeps the run going; but a developer watching only the final answer would never learn
that the refund was denied or the lookup raised. So each such outcome is also a WARNING
on the `agent` logger, naming the tool and the step: a denied gated call, an exception,
invalid input, a timeout. So is a result that reached the model as a Python repr
(`<Book object at 0x7f...>`): the tool returned an object with no readable form (give
it a dataclass, a pydantic model or a `__str__`), and the model got an address.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from agent.tools import ToolOutcome

__all__ = ["KINDS", "default_repr", "warn_outcomes"]

log = logging.getLogger("agent")

KINDS = (("denied: ", "was denied"), ("timeout: ", "timed out"), ("invalid input for ", "got invalid input"))
"""(prefix of the error text, how the warning words it); any other error text is an exception."""
_REPR = re.compile(r"<[A-Za-z_][\w.]* object at 0x[0-9a-fA-F]+>")
_SCANNED = 200_000
"""Characters of a result searched for a repr: enough for any object's, and bounded."""


def warn_outcomes(outcomes: Sequence[ToolOutcome], step: int) -> None:
    """One WARNING per failed call, and one per result that shows a default repr."""
    for outcome in outcomes:
        name = outcome.call.name
        if outcome.is_error:
            text = str(outcome.value)
            kind = next((words for prefix, words in KINDS if text.startswith(prefix)), "failed")
            first = text.splitlines()[0][:300] if text else ""
            log.warning("[step %d] tool %s %s: %s", step, name, kind, first)
        else:
            shown = default_repr(outcome.value)
            if shown is not None:
                log.warning(
                    "[step %d] tool %s returned %s: the model reads only that repr; return a dict, "
                    "a dataclass, a pydantic model or a str instead",
                    step,
                    name,
                    shown,
                )


def default_repr(value: Any) -> str | None:
    """The first `<X object at 0x...>` in the strings of a rendered result, or None."""
    stack, budget = [value], _SCANNED
    while stack and budget > 0:
        item = stack.pop()
        if isinstance(item, str):
            text = item[:budget]
            budget -= len(text)
            if " object at 0x" in text:
                found = _REPR.search(text)
                if found:
                    return found.group()
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None
