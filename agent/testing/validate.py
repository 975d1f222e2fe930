"""`validate_request`: what the Messages API would reject, checked offline.

A lenient fake hides the very bugs this project exists to prevent: a `tool_result`
orphaned by pruning, a private key leaked into a block, a fifth cache breakpoint.
This validator is the strict witness. It returns every violation it finds (empty
list = the API would accept the shape); the simulator answers 400 with them, and
the property tests assert none ever appear.

Rules follow `shared/WIRE-RULES.md`. Consecutive same-role messages are merged
first, as the API does, and the pairing rules are checked on the merged turns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent.config import EFFORTS
from agent.context.cache import count_breakpoints

__all__ = ["MAX_BREAKPOINTS", "count_breakpoints", "validate_count_tokens", "validate_request"]

MAX_BREAKPOINTS = 4
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")

REQUEST_KEYS = {
    "model",
    "max_tokens",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "output_config",
    "cache_control",
    "thinking",
    "metadata",
    "stop_sequences",
    "temperature",
    "top_p",
    "top_k",
    "stream",
    "service_tier",
    "container",
    "mcp_servers",
    "inference_geo",
}
BLOCK_KEYS: Mapping[str, set[str]] = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "cache_control", "citations", "context", "title"},
    "tool_use": {"type", "id", "name", "input", "cache_control", "caller"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
RESULT_CONTENT_TYPES = {"text", "image", "document"}
CUSTOM_TOOL_KEYS = {
    "name",
    "description",
    "input_schema",
    "cache_control",
    "type",
    "strict",
    "input_examples",
}


COUNT_TOKENS_KEYS = {
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "cache_control",
    "mcp_servers",
}
NO_EFFORT_MODELS = ("claude-haiku-4-5",)
"""Models that reject `output_config.effort` (dated ids such as `-20251001` included)."""


def validate_request(body: Mapping[str, Any]) -> list[str]:
    """Every reason the Messages API would reject `body` with a 400 (empty if none)."""
    return _validate(body, REQUEST_KEYS, needs_max_tokens=True)


def validate_count_tokens(body: Mapping[str, Any]) -> list[str]:
    """The same checks for `POST /v1/messages/count_tokens` (no `max_tokens` there)."""
    return _validate(body, COUNT_TOKENS_KEYS, needs_max_tokens=False)


def _validate(body: Mapping[str, Any], allowed: set[str], *, needs_max_tokens: bool) -> list[str]:
    errors: list[str] = []
    for key in sorted(set(body) - allowed):
        errors.append(f"{key}: Extra inputs are not permitted")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        errors.append("model: Field required")
    max_tokens = body.get("max_tokens")
    bad_max = not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    if needs_max_tokens and bad_max:
        errors.append("max_tokens: must be a positive integer")
    config = body.get("output_config")
    errors += _check_output_config(config)
    effort = config.get("effort") if isinstance(config, Mapping) else None
    if isinstance(model, str) and _no_effort(model) and effort is not None:
        errors.append(f"output_config.effort: {model} does not support the effort parameter")
    errors += _check_tools(body.get("tools"))
    errors += _check_system(body.get("system"))
    errors += _check_messages(body.get("messages"))
    breakpoints = count_breakpoints(body)
    if breakpoints > MAX_BREAKPOINTS:
        errors.append(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    return errors


def _no_effort(model: str) -> bool:
    return any(model == name or model.startswith(name + "-") for name in NO_EFFORT_MODELS)


def _check_output_config(config: Any) -> list[str]:
    if config is None:
        return []
    if not isinstance(config, Mapping):
        return ["output_config: must be an object"]
    errors = [
        f"output_config.{k}: Extra inputs are not permitted"
        for k in sorted(set(config) - {"effort", "format"})
    ]
    effort = config.get("effort")
    if effort is not None and effort not in EFFORTS:
        errors.append(f"output_config.effort: Input should be one of {sorted(EFFORTS)}, got {effort!r}")
    return errors


def _check_tools(tools: Any) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ["tools: must be a list"]
    errors, seen = [], set()
    for i, item in enumerate(tools):
        where = f"tools.{i}"
        if not isinstance(item, Mapping):
            errors.append(f"{where}: must be an object")
            continue
        name = item.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            errors.append(f"{where}.name: String should match pattern '{TOOL_NAME.pattern}'")
        elif name in seen:
            errors.append(f"{where}.name: Tool names must be unique ({name!r})")
        seen.add(name)
        if item.get("type") not in (None, "custom"):
            continue  # server tools have their own shapes
        for key in sorted(set(item) - CUSTOM_TOOL_KEYS):
            errors.append(f"{where}.{key}: Extra inputs are not permitted")
        schema = item.get("input_schema")
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            errors.append(f"{where}.input_schema: type must be 'object'")
        errors += _check_cache_control(item.get("cache_control"), where)
    return errors


def _check_system(system: Any) -> list[str]:
    if system is None or isinstance(system, str):
        return []
    if not isinstance(system, list):
        return ["system: must be a string or a list of text blocks"]
    errors = []
    for i, block in enumerate(system):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            errors.append(f"system.{i}: Input should be a text block")
        else:
            errors += _check_block(block, f"system.{i}")
    return errors


def _merge(messages: Sequence[Any]) -> tuple[list[tuple[str, list[Any], str]], list[str]]:
    """Consecutive same-role messages merged, as the API does; (role, blocks, where)."""
    errors: list[str] = []
    merged: list[tuple[str, list[Any], str]] = []
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(message, Mapping):
            errors.append(f"{where}: must be an object")
            continue
        for key in sorted(set(message) - {"role", "content"}):
            errors.append(f"{where}.{key}: Extra inputs are not permitted")
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant"):
            errors.append(f"{where}.role: Input should be 'user' or 'assistant'")
            continue
        if isinstance(content, str):
            if not content and i != len(messages) - 1:
                errors.append(f"{where}: all messages must have non-empty content")
            content = [{"type": "text", "text": content}] if content else []
        elif not isinstance(content, list):
            errors.append(f"{where}.content: must be a string or a list of blocks")
            continue
        elif not content and not (role == "assistant" and i == len(messages) - 1):
            errors.append(f"{where}: all messages must have non-empty content")
        if merged and merged[-1][0] == role:
            merged[-1] = (role, merged[-1][1] + list(content), merged[-1][2])
        else:
            merged.append((role, list(content), where))
    return merged, errors


def _check_messages(messages: Any) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    turns, errors = _merge(messages)
    if turns and turns[0][0] != "user":
        errors.append("messages.0.role: the first message must use the user role")
    seen_ids: set[Any] = set()
    for i, block in enumerate(b for m in messages if isinstance(m, Mapping) for b in _list(m.get("content"))):
        errors += _check_block(block, f"block {i}")
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            if block.get("id") in seen_ids:
                errors.append(f"block {i}: `tool_use` ids must be unique ({block.get('id')!r} is repeated)")
            seen_ids.add(block.get("id"))
    for t, (role, content, where) in enumerate(turns):
        if role == "assistant":
            uses = [b["id"] for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"]
            answered = _result_ids(turns[t + 1][1]) if t + 1 < len(turns) else set()
            for use_id in uses:
                if use_id not in answered:
                    errors.append(
                        f"{where}: tool_use ids were found without tool_result blocks immediately "
                        f"after: {use_id}. Each tool_use block must have a corresponding tool_result "
                        f"block in the next message."
                    )
            continue
        previous = turns[t - 1][1] if t > 0 and turns[t - 1][0] == "assistant" else []
        asked = {b.get("id") for b in previous if isinstance(b, Mapping) and b.get("type") == "tool_use"}
        seen_other = False
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind != "tool_result":
                seen_other = True
                continue
            if seen_other:
                errors.append(f"{where}: tool_result blocks must come first in the user message")
            if block.get("tool_use_id") not in asked:
                errors.append(
                    f"{where}: unexpected tool_use_id found in tool_result blocks: "
                    f"{block.get('tool_use_id')}. Each tool_result block must have a corresponding "
                    f"tool_use block in the previous message."
                )
    return errors


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _result_ids(content: Sequence[Any]) -> set[Any]:
    return {
        b.get("tool_use_id") for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"
    }


def _check_block(block: Any, where: str) -> list[str]:
    if not isinstance(block, Mapping):
        return [f"{where}: must be an object"]
    kind = block.get("type")
    allowed = BLOCK_KEYS.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        return [f"{where}.type: unknown content block type {kind!r}"]
    errors = [f"{where}.{key}: Extra inputs are not permitted" for key in sorted(set(block) - allowed)]
    if kind == "text" and (not isinstance(block.get("text"), str) or not block.get("text")):
        errors.append(f"{where}: text content blocks must be non-empty")
    if kind == "tool_use":
        if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
            errors.append(f"{where}: tool_use needs string id and name")
        if not isinstance(block.get("input"), Mapping):
            errors.append(f"{where}.input: Input should be an object")
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            for j, inner in enumerate(content):
                if isinstance(inner, Mapping) and inner.get("type") not in RESULT_CONTENT_TYPES:
                    errors.append(f"{where}.content.{j}: tool_result content must be text, image or document")
                errors += _check_block(inner, f"{where}.content.{j}")
        elif content is not None and not isinstance(content, str):
            errors.append(f"{where}.content: must be a string or a list of blocks")
        if "is_error" in block and not isinstance(block["is_error"], bool):
            errors.append(f"{where}.is_error: Input should be a valid boolean")
    errors += _check_cache_control(block.get("cache_control"), where)
    return errors


def _check_cache_control(marker: Any, where: str) -> list[str]:
    if marker is None:
        return []
    if not isinstance(marker, Mapping) or marker.get("type") != "ephemeral":
        return [f"{where}.cache_control: type must be 'ephemeral'"]
    errors = [
        f"{where}.cache_control.{k}: Extra inputs are not permitted"
        for k in sorted(set(marker) - {"type", "ttl"})
    ]
    if marker.get("ttl", "5m") not in ("5m", "1h"):
        errors.append(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
    return errors
