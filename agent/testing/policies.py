"""The one vocabulary for scripting a model, shared by `ScriptedLLM` and `MessagesSimulator`.

A *policy* is `policy(request_body) -> answer`; a `ScriptedLLM` script is a list of answers
(or of policies, or one policy). Both take the same answers: a string, a content block, a
list of strings and blocks, or `reply(...)` (which can also set `stop_reason` and usage).
The good policies are *stateless*: they decide from the request alone (the prompt, the
latest tool results), so the same history always gets the same answer, a re-recorded
cassette comes out identical, and one policy serves many runs at once.

    call("calculator", a=2, op="*", b=3)     # a tool_use block (the model names its id)
    tool_use("calculator", {"a": 2}, id=...) # the same block, input as a dict, id fixed
    text("Done.")                            # a text block (a bare string is one too)
    reply("Checking.", call(...))            # a whole reply; stop_reason=..., usage too
    server_call("web_search", {...}, [...])  # a server tool's call and result, side by side
    scripted(answer1, answer2, ...)          # answer N at the N-th step of a run

What a policy can read from the request body:

    prompt_text(body)                        # the first user message's text
    step_number(body)                        # 1 on the first call, +1 per assistant turn
    latest_results(body)                     # ToolResult(name, input, text, is_error) for
                                             # each result in the last user turn, in order
    visible_tools(body)                      # the tools it can call (deferred ones once found)

Two ready policies: `arithmetic` (calls `calculator` for "123456 × 789", then answers) and
`echo_summarizer` (a tool-less summary call's answer).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.testing.deferred import visible_tools

__all__ = [
    "HINT",
    "ToolResult",
    "arithmetic",
    "as_reply",
    "call",
    "echo_summarizer",
    "latest_results",
    "prompt_text",
    "reply",
    "scripted",
    "server_call",
    "step_number",
    "text",
    "tool_use",
    "visible_tools",
]

Body = Mapping[str, Any]

HINT = (
    "answer with a string, call(name, **input), text(...), reply(...) or a list of them "
    "(agent.testing.policies)"
)


def call(name: str, /, **input: Any) -> dict[str, Any]:
    """A `tool_use` block asking for `name(**input)`; the model that sends it names its id."""
    return {"type": "tool_use", "name": name, "input": input}


def tool_use(name: str, input: Mapping[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    """`call` with the input as a dict (for field names that are not identifiers) and, for
    tests about ids, the id fixed."""
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": dict(input or {})}
    return {**block, "id": id} if id is not None else block


def text(value: str) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value}


def server_call(
    name: str,
    input: Mapping[str, Any],
    content: Any,
    *,
    result_type: str | None = None,
    id: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A server tool's call and its result, as the API puts them side by side in one turn:
    `reply("Searching.", *server_call("web_search", {"query": q}, [result...]), "Found it.")`.
    Without `id`, the model that sends it names it (and links the result to it)."""
    use: dict[str, Any] = {"type": "server_tool_use", "name": name, "input": dict(input)}
    result: dict[str, Any] = {"type": result_type or f"{name}_tool_result", "content": content}
    if id is not None:
        use["id"], result["tool_use_id"] = id, id
    return use, result


def reply(*content: Mapping[str, Any] | str, stop_reason: str | None = None, **usage: int) -> dict[str, Any]:
    """A whole reply; `stop_reason` defaults to tool_use when it holds a tool call, and
    `usage` fields (`input_tokens=...`) override the estimates."""
    blocks = [_block(c) for c in content]
    if stop_reason is None:
        stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    return {"content": blocks, "stop_reason": stop_reason, "usage": usage}


def as_reply(answer: Any) -> dict[str, Any]:
    """Any answer of the vocabulary as a `reply(...)` dict; a shape outside it is a `TypeError`
    that names the helper to use instead (mixing a response dict with a block is the usual slip)."""
    if isinstance(answer, Mapping) and "type" not in answer:
        if "content" not in answer and "name" in answer:
            _block(answer)  # raises, naming `call`
        if not isinstance(answer.get("content"), list | tuple | str):
            raise TypeError(f"not an answer: {answer!r}; {HINT}")
        stop = answer.get("stop_reason")
        shaped = reply(*_items(answer["content"]), stop_reason=stop, **dict(answer.get("usage") or {}))
        return {**answer, **shaped}
    return reply(*_items(answer))


def _items(answer: Any) -> list[Any]:
    if isinstance(answer, str | Mapping):
        return [answer]
    if isinstance(answer, list | tuple):
        return list(answer)
    raise TypeError(f"not an answer: {answer!r}; {HINT}")


def _block(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return text(item)
    if isinstance(item, Mapping) and isinstance(item.get("type"), str):
        return dict(item)
    if isinstance(item, Mapping) and "name" in item:
        raise TypeError(f"a tool call needs its type: use call({item['name']!r}, ...) for {item!r}")
    raise TypeError(f"not a content block: {item!r}; {HINT}")


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, Mapping)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, Mapping))


def prompt_text(body: Body) -> str:
    """The text of the first user message (the task, unless compaction rewrote it)."""
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            return "".join(b.get("text", "") for b in _blocks(message) if b.get("type") == "text")
    return ""


def step_number(body: Body) -> int:
    """1 for the first call of a run, 2 after one assistant turn, and so on."""
    return 1 + sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")


@dataclass(frozen=True)
class ToolResult:
    """One result the model is reading now, with the call it answers."""

    name: str
    input: Mapping[str, Any]
    text: str
    is_error: bool


def latest_results(body: Body) -> list[ToolResult]:
    """The results in the last user message, in order, each joined to its `tool_use`."""
    messages = list(body.get("messages") or [])
    if len(messages) < 2 or messages[-1].get("role") != "user":
        return []
    calls = {b.get("id"): b for b in _blocks(messages[-2]) if b.get("type") == "tool_use"}
    found = []
    for block in _blocks(messages[-1]):
        if block.get("type") == "tool_result":
            use = calls.get(block.get("tool_use_id"), {})
            found.append(
                ToolResult(
                    str(use.get("name", "?")),
                    dict(use.get("input") or {}),
                    _text(block.get("content")),
                    bool(block.get("is_error")),
                )
            )
    return found


def scripted(*answers: Any) -> Callable[[Body], Any]:
    """Answer with `answers[N-1]` at step N of a run (a callable answer gets the body).

    Stateless: the step is counted from the assistant turns in the request, so a
    history shortened by compaction counts from what is left.
    """

    def policy(body: Body) -> Any:
        step = step_number(body)
        if step > len(answers):
            raise AssertionError(f"scripted policy has {len(answers)} answers; asked for step {step}")
        answer = answers[step - 1]
        return answer(body) if callable(answer) else answer

    return policy


_OPS = {"×": "*", "x": "*", "*": "*", "/": "/", "÷": "/", "+": "+", "-": "-", "−": "-"}
_EXPRESSION = re.compile(r"(-?\d[\d,_]*(?:\.\d+)?)\s*([×x*/÷+\-−])\s*(-?\d[\d,_]*(?:\.\d+)?)")


def _number(text: str) -> int | float:
    clean = text.replace(",", "").replace("_", "")
    return float(clean) if "." in clean else int(clean)


def _pretty(value: str) -> str:
    """`97406784` → `97,406,784`; anything else unchanged."""
    try:
        number = int(value)
    except ValueError:
        return value
    return f"{number:,}"


def arithmetic(body: Body) -> Any:
    """A model that never does arithmetic in its head.

    Step 1: finds "A op B" in the prompt and calls `calculator`. Once the result is
    back: states it (or the calculator's error). No expression: says so.
    """
    results = [r for r in latest_results(body) if r.name == "calculator"]
    if results:
        r = results[-1]
        expression = f"{r.input.get('a')} {r.input.get('op')} {r.input.get('b')}"
        if r.is_error:
            return f"The calculator could not compute {expression}: {r.text}"
        return f"{expression} = {_pretty(r.text)}"
    match = _EXPRESSION.search(prompt_text(body))
    if match is None:
        return "I need two numbers and an operator, such as 12 × 34."
    a, op, b = match.groups()
    return [
        f"I'll compute {a} {op} {b} with the calculator.",
        call("calculator", a=_number(a), op=_OPS[op], b=_number(b)),
    ]


def echo_summarizer(body: Body, limit: int = 4000) -> str:
    """A summarizer's answer: the transcript it was given, cut to `limit` characters.

    Deterministic and lossless for short transcripts, so a test can assert what a
    compaction kept without a real model deciding it.
    """
    messages: Sequence[Mapping[str, Any]] = body.get("messages") or []
    transcript = _text(messages[-1].get("content")) if messages else ""
    return "Summary of the work so far:\n" + transcript[:limit] if transcript else "Summary: (nothing yet)"
