"""`validate_request`: what the Messages API would reject, checked offline.

A lenient fake hides the very bugs this project exists to prevent: a `tool_result`
orphaned by pruning, a private key leaked into a block, a fifth cache breakpoint.
This validator is the strict witness. It returns every violation it finds (empty
list = the API would accept the shape); the simulator answers 400 with them, and
the property tests assert none ever appear.

Strict, but never stricter than the API: a rule the real API does not have makes
the simulator refuse valid traffic and pushes the framework to work around a
fake. So the two halves come from two sources:

* **Structure** (block types, keys, JSON types, literals) is derived from the
  `anthropic` SDK's own request types by `agent.testing.wire_shapes`, stable and
  beta: server-tool blocks, `tool_reference`, MCP blocks, `compaction`,
  mid-conversation system messages, `context_management` and the rest are
  accepted because the SDK declares them, and a key the SDK does not declare is
  "Extra inputs are not permitted", as the API says.
* **Semantics** the types cannot express are the refusals listed in
  `shared/WIRE-RULES.md` ("What the API rejects"): tool_use/tool_result pairing
  on merged turns, `tool_result` first in its message, empty text (and text that
  is whitespace alone in its message), more than 4 cache breakpoints, tool-name pattern and uniqueness,
  `input_schema` of type object, `tool_use` ids unique within a turn; plus the
  per-model refusals read from `agent.models` (effort levels, thinking types,
  forced tool use). A model the table does not know gets no per-model rule. Deferred tools
  and `tool_reference` blocks have their own two refusals (`agent.testing.deferred`).

The schemas of structured outputs (`output_config.format`, the legacy `output_format`, and
tools with `strict: true`) are checked by `check_structured_outputs`: `additionalProperties:
false` on every object (the API's own 400, seen in live recordings), and the limitations the
structured-outputs docs list (unsupported keywords, recursion, external `$ref`, complex enums,
regex features, the per-request complexity limits, no citations beside a format).

Deliberately *not* refused, because live traffic shows the API accepts them: a
history that starts with an assistant turn, and a `tool_use` id reused in a later
turn. `benchmarks/live_shapes.py` replays recordings made against the real API
by other projects through this validator; its false-rejection count must stay 0.
`tests/testing/test_live_requests.py` judges the shared recordings the same way, both
directions: every request answered 2xx accepted, every request-shape 400 refused for the
API's reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from anthropic._constants import ANTHROPIC_API_VERSION as API_VERSION
from anthropic.types import JSONOutputFormatParam

from agent.context.cache import count_breakpoints
from agent.models import MODELS, THINKING_TYPES, ModelTable
from agent.server_blocks import is_server_call, is_server_result, result_type_for
from agent.testing.deferred import check_deferred
from agent.testing.mcp_blocks import check_connector
from agent.testing.wire_shapes import check_shape

__all__ = [
    "API_VERSION",
    "LEGACY_API_VERSION",
    "MAX_BREAKPOINTS",
    "check_structured_outputs",
    "count_breakpoints",
    "validate_count_tokens",
    "validate_request",
]

MAX_BREAKPOINTS = 4
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
FORCED_TOOL_CHOICES = ("any", "tool")
LEGACY_API_VERSION = "2023-06-01"
LEGACY_PARAMS: Mapping[str, Any] = {
    "temperature": float,
    "top_p": float,
    "top_k": int,
    "output_format": JSONOutputFormatParam,
}
"""Body keys that `anthropic-version: 2023-06-01` still takes and the SDK 2.x types no longer
declare (`API_VERSION`, 2026-10-21, removed sampling; `output_format` became
`output_config.format`)."""

Turn = tuple[str, list[Any], str]
"""(role, blocks, where) of consecutive same-role messages merged, as the API does."""


def validate_request(
    body: Mapping[str, Any], *, models: ModelTable = MODELS, api_version: str = API_VERSION
) -> list[str]:
    """Every reason the Messages API would reject `body` with a 400 (empty if none).

    `api_version` is the request's `anthropic-version` header: by default the one the
    installed SDK sends; `LEGACY_API_VERSION` (2023-06-01) still takes `LEGACY_PARAMS`.
    """
    return _validate(body, models, api_version, count_tokens=False)


def validate_count_tokens(
    body: Mapping[str, Any], *, models: ModelTable = MODELS, api_version: str = API_VERSION
) -> list[str]:
    """The same checks for `POST /v1/messages/count_tokens` (no `max_tokens` there)."""
    return _validate(body, models, api_version, count_tokens=True)


def _validate(body: Mapping[str, Any], models: ModelTable, version: str, *, count_tokens: bool) -> list[str]:
    if not isinstance(body, Mapping):
        return ["body: Input should be a valid dictionary or object"]
    legacy = version < API_VERSION
    errors = check_shape(body, count_tokens=count_tokens, extra=LEGACY_PARAMS if legacy else None)
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens < 0:
        errors.append("max_tokens: Input should be greater than or equal to 0")
    errors += _check_model_rules(body, models)
    errors += _check_tools(body.get("tools"))
    errors += check_connector(body)
    errors += check_deferred(body)
    errors += _check_text(body)
    errors += _check_messages(body.get("messages"))
    if not count_tokens:  # "Token counting: count tokens without compilation" (structured-outputs docs)
        errors += check_structured_outputs(body, legacy=legacy)
    if not legacy:
        errors += _check_version_rules(body.get("messages"), version)
    breakpoints = _breakpoints(body)
    if breakpoints > MAX_BREAKPOINTS:
        errors.append(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    return errors


def _check_model_rules(body: Mapping[str, Any], models: ModelTable) -> list[str]:
    """The refusals that depend on the model: what `agent.models` says it does not take."""
    model = body.get("model")
    info = models.lookup(model) if isinstance(model, str) else None
    if info is None:
        return []  # unknown model: no guess
    errors = []
    config = body.get("output_config")
    effort = config.get("effort") if isinstance(config, Mapping) else None
    if effort is not None and effort not in info.efforts:
        if not info.efforts:
            errors.append(f"output_config.effort: {model} does not support the effort parameter")
        else:  # the API's words: "This model does not support effort level 'xhigh'. Supported levels: ..."
            errors.append(
                f"output_config.effort: {model} does not support effort level {effort!r}. "
                f"Supported levels: {', '.join(sorted(info.efforts))}."
            )
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, Mapping) else None
    if kind in THINKING_TYPES and kind not in info.thinking_types:
        errors.append(
            f"thinking.type: {model} does not support thinking type {kind!r} "
            f"(it takes {', '.join(info.thinking_types)})"
        )
    choice = body.get("tool_choice")
    forced = choice.get("type") if isinstance(choice, Mapping) else None
    if forced in FORCED_TOOL_CHOICES and not info.forced_tool_use:
        errors.append(f"tool_choice.type: {model} does not support forced tool use ({forced!r})")
    return errors


def _check_tools(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return []
    errors, seen = [], set()
    for i, item in enumerate(tools):
        if not isinstance(item, Mapping):
            continue
        name = item.get("name")
        if isinstance(name, str):
            if name in seen:
                errors.append(f"tools.{i}.name: Tool names must be unique ({name!r})")
            seen.add(name)
        if item.get("type") not in (None, "custom"):
            continue  # a server tool: its name and shape are fixed by its type
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            errors.append(f"tools.{i}.name: String should match pattern '{TOOL_NAME.pattern}'")
        schema = item.get("input_schema")
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            errors.append(f"tools.{i}.input_schema.type: Input should be 'object'")
    return errors


STRUCTURED_OUTPUTS_DOCS = "https://platform.claude.com/docs/en/build-with-claude/structured-outputs"
MAX_STRICT_TOOLS = 20
MAX_OPTIONAL_PARAMETERS = 24
MAX_UNION_PARAMETERS = 16
OPEN_OBJECT = "For 'object' type, 'additionalProperties' must be explicitly set to false"
"""The API's 400 for an object schema without `additionalProperties: false` (live recordings)."""
UNSUPPORTED_KEYWORDS: Mapping[str, str] = {
    **dict.fromkeys(
        ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), "numerical constraints"
    ),
    **dict.fromkeys(("minLength", "maxLength"), "string constraints"),
    **dict.fromkeys(
        ("maxItems", "uniqueItems", "minContains", "maxContains"), "array constraints beyond minItems 0 or 1"
    ),
}
"""JSON Schema keywords the docs' "JSON Schema limitations" list as not supported (a 400)."""
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")

_Where = tuple[str, ...]
"""Where a sub-schema sits in its schema: the keys from the root."""


def check_structured_outputs(body: Mapping[str, Any], *, legacy: bool = False) -> list[str]:
    """The refusals of structured outputs: the JSON Schema rules, the complexity limits, citations.

    Applies to `output_config.format.schema` (and `output_format.schema` when `legacy`: the
    parameter `anthropic-version: 2023-06-01` still takes) and to the `input_schema` of every
    custom tool with `strict: true` ("Both JSON outputs and strict tool use share these
    limitations", STRUCTURED_OUTPUTS_DOCS#json-schema-limitations). Every object, nested ones
    included (properties, items, anyOf/allOf/oneOf branches, $defs/definitions,
    additionalProperties sub-schemas), must set `additionalProperties: false`: the API's own
    400 in live recordings, where every schema answered 200 sets it on every object. A schema
    that is not an object (an array at the root) is taken, as recordings show.
    """
    roots: list[tuple[str, Mapping[str, Any]]] = []
    formats = [("output_config.format", _get(body.get("output_config"), "format"))]
    if legacy:
        formats.append(("output_format", body.get("output_format")))
    formats = [(where, f) for where, f in formats if isinstance(f, Mapping)]
    for where, fmt in formats:
        schema = fmt.get("schema")
        if fmt.get("type") == "json_schema" and isinstance(schema, Mapping):
            roots.append((f"{where}.schema", schema))
    strict = 0
    for i, tool in enumerate(_list(body.get("tools"))):
        if isinstance(tool, Mapping) and tool.get("strict") is True and tool.get("type") in (None, "custom"):
            strict += 1
            if isinstance(tool.get("input_schema"), Mapping):
                roots.append((f"tools.{i}.input_schema", tool["input_schema"]))
    errors = [e for where, schema in roots for e in _check_schema(schema, where)]
    if strict > MAX_STRICT_TOOLS:
        errors.append(f"tools: at most {MAX_STRICT_TOOLS} tools may set `strict: true` (found {strict})")
    optional = unions = 0
    for _, schema in roots:
        for _, node in _subschemas(schema):
            o, u = _parameter_counts(node)
            optional, unions = optional + o, unions + u
    if optional > MAX_OPTIONAL_PARAMETERS:
        errors.append(
            f"structured outputs: at most {MAX_OPTIONAL_PARAMETERS} optional parameters (properties not "
            f"listed in `required`) across all strict tool and JSON output schemas (found {optional})"
        )
    if unions > MAX_UNION_PARAMETERS:
        errors.append(
            f"structured outputs: at most {MAX_UNION_PARAMETERS} parameters with union types (`anyOf` "
            f"or a type array) across all strict schemas (found {unions})"
        )
    if formats:
        errors += _check_citations(body, formats[0][0])
    return errors


def _check_schema(root: Mapping[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    for path, node in _subschemas(root):
        at = _at(where, path)
        kind = node.get("type")
        if (kind == "object" or (isinstance(kind, list) and "object" in kind)) and node.get(
            "additionalProperties"
        ) is not False:
            errors.append(f"{at}: {OPEN_OBJECT}")
        for key in node:
            if key in UNSUPPORTED_KEYWORDS and not (key == "uniqueItems" and node[key] is False):  # a no-op
                errors.append(
                    f"{at}.{key}: not supported in structured outputs ({UNSUPPORTED_KEYWORDS[key]})"
                )
        min_items = node.get("minItems")
        if "minItems" in node and (type(min_items) is not int or min_items not in (0, 1)):
            errors.append(f"{at}.minItems: only 0 and 1 are supported in structured outputs")
        for j, value in enumerate(_list(node.get("enum"))):
            if isinstance(value, (Mapping, list)):
                errors.append(f"{at}.enum.{j}: enum values must be strings, numbers, booleans or null")
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            errors.append(f"{at}.$ref: external $ref is not supported ({ref!r})")
        for j, branch in enumerate(_list(node.get("allOf"))):
            if isinstance(branch, Mapping) and "$ref" in branch:
                errors.append(f"{at}.allOf.{j}: allOf with $ref is not supported")
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            errors += [
                f"{at}.pattern: {why} are not supported in regex patterns" for why in _regex_issues(pattern)
            ]
    errors += [
        f"{_at(where, path)}.$ref: Too many recursive definitions in schema: recursive schemas are not "
        f"supported ({ref!r} leads back to itself)"
        for path, ref in _recursive_refs(root)
    ]
    return errors


def _subschemas(root: Mapping[str, Any]) -> list[tuple[_Where, Mapping[str, Any]]]:
    """(path, schema) of `root` and every schema nested in it, parents first."""
    found: list[tuple[_Where, Mapping[str, Any]]] = []
    todo: list[tuple[_Where, Any]] = [((), root)]
    while todo:
        path, node = todo.pop()
        if not isinstance(node, Mapping):
            continue
        found.append((path, node))
        children: list[tuple[_Where, Any]] = []
        for key in _SUBSCHEMA_MAPS:
            if isinstance(node.get(key), Mapping):
                children += [((*path, key, str(name)), sub) for name, sub in node[key].items()]
        for key in _SUBSCHEMA_LISTS:
            children += [((*path, key, str(i)), sub) for i, sub in enumerate(_list(node.get(key)))]
        items = node.get("items")
        if isinstance(items, list):
            children += [((*path, "items", str(i)), sub) for i, sub in enumerate(items)]
        else:
            children.append(((*path, "items"), items))
        children.append(((*path, "additionalProperties"), node.get("additionalProperties")))
        todo += reversed(children)
    return found


def _parameter_counts(node: Mapping[str, Any]) -> tuple[int, int]:
    """(optional, union-typed) parameters among the properties of one object schema."""
    properties = node.get("properties")
    if not isinstance(properties, Mapping):
        return 0, 0
    required = set(r for r in _list(node.get("required")) if isinstance(r, str))
    optional = sum(1 for name in properties if name not in required)
    unions = sum(
        1
        for sub in properties.values()
        if isinstance(sub, Mapping)
        and (isinstance(sub.get("anyOf"), list) or isinstance(sub.get("type"), list))
    )
    return optional, unions


def _recursive_refs(root: Mapping[str, Any]) -> list[tuple[_Where, str]]:
    """(path, $ref) of every local $ref whose expansion comes back to the $ref itself."""
    refs = [
        (path, node["$ref"], _pointer(node["$ref"]))
        for path, node in _subschemas(root)
        if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#")
    ]
    inside = {target: [t for p, _, t in refs if p[: len(target)] == target] for _, _, target in refs}

    def reaches(start: _Where) -> set[_Where]:
        seen, todo = {start}, [start]
        while todo:
            for target in inside.get(todo.pop(), []):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    return [(p, ref) for p, ref, target in refs if any(p[: len(t)] == t for t in reaches(target))]


def _pointer(ref: str) -> _Where:
    """`#/$defs/A~1B` -> ("$defs", "A/B"); `#` -> () (the root)."""
    parts = ref[1:].split("/")[1:] if ref.startswith("#/") else []
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in parts)


def _regex_issues(pattern: str) -> list[str]:
    """The regex features the docs list as not supported, found in `pattern` (escapes respected)."""
    issues: set[str] = set()
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1 : i + 2]
            if not in_class and escaped in ("b", "B"):
                issues.add("word boundaries (\\b, \\B)")
            elif not in_class and (escaped in tuple("123456789") or pattern.startswith("k<", i + 1)):
                issues.add("backreferences")
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            i += 1
            i += pattern.startswith("^", i)
            i += pattern.startswith("]", i)  # a `]` first in a class is a literal
            continue
        elif pattern.startswith(_LOOKAROUND, i):
            issues.add("lookahead/lookbehind assertions")
        i += 1
    return sorted(issues)


def _check_citations(body: Mapping[str, Any], fmt: str) -> list[str]:
    """Documents or search results with citations enabled, refused beside a format (citations docs)."""
    errors = []
    for m, message in enumerate(_list(body.get("messages"))):
        content = message.get("content") if isinstance(message, Mapping) else None
        for b, block in enumerate(_list(content)):
            nested = _list(block.get("content")) if isinstance(block, Mapping) else []
            for where, item in [(f"messages.{m}.content.{b}", block)] + [
                (f"messages.{m}.content.{b}.content.{c}", sub) for c, sub in enumerate(nested)
            ]:
                if (
                    isinstance(item, Mapping)
                    and item.get("type") in ("document", "search_result")
                    and _get(item.get("citations"), "enabled") is True
                ):
                    errors.append(f"{where}.citations: citations cannot be enabled together with `{fmt}`")
    return errors


def _at(where: str, path: _Where) -> str:
    return ".".join((where, *path))


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _block_groups(body: Mapping[str, Any]) -> list[tuple[str, list[Any]]]:
    """(where, blocks) of every block list that can hold text: system, messages, tool results."""
    groups = [("system", _list(body.get("system")))]
    for m, message in enumerate(_list(body.get("messages"))):
        content = message.get("content") if isinstance(message, Mapping) else None
        content = (
            [{"type": "text", "text": content}] if isinstance(content, str) and content else _list(content)
        )
        groups.append((f"messages.{m}.content", content))
        for b, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                groups.append((f"messages.{m}.content.{b}.content", _list(block.get("content"))))
    return groups


def _check_text(body: Mapping[str, Any]) -> list[str]:
    """Empty text blocks are refused; whitespace-only ones when nothing else is in their list.

    (Live traffic shows `{"type": "text", "text": " "}` before `tool_use` blocks answered 200,
    while a message of whitespace alone is a 400.)
    """
    errors = []
    for where, blocks in _block_groups(body):
        texts = [
            (i, b.get("text"))
            for i, b in enumerate(blocks)
            if isinstance(b, Mapping) and b.get("type") == "text"
        ]
        blank = len(texts) == len(blocks) and all(isinstance(t, str) and not t.strip() for _, t in texts)
        for i, text in texts:
            if text == "":
                errors.append(f"{where}.{i}: text content blocks must be non-empty")
            elif blank and isinstance(text, str):
                errors.append(f"{where}.{i}: text content blocks must contain non-whitespace text")
    return errors


def _check_version_rules(messages: Any, version: str) -> list[str]:
    """Refusals added by API version 2026-10-21 (the one the SDK 2.x sends)."""
    errors = []
    for m, message in enumerate(_list(messages)):
        role = message.get("role") if isinstance(message, Mapping) else None
        for b, block in enumerate(_list(message.get("content")) if role else []):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if role == "assistant" and kind == "document":
                errors.append(
                    f"messages.{m}.content.{b}: document blocks are not allowed in assistant messages "
                    f"({version})"
                )
            if role == "user" and kind == "text" and block.get("citations"):
                errors.append(
                    f"messages.{m}.content.{b}.citations: not allowed on text blocks in user messages "
                    f"({version})"
                )
    return errors


def _merge(messages: Sequence[Any]) -> tuple[list[Turn], list[str]]:
    """Consecutive same-role messages merged, as the API does; string content as one text block."""
    errors: list[str] = []
    turns: list[Turn] = []
    last = len(messages) - 1
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant", "system"):
            continue  # the shape check reports it
        role, content, where = message["role"], message.get("content"), f"messages.{i}"
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        elif not isinstance(content, list):
            continue
        if not content and not (role == "assistant" and i == last):
            errors.append(
                f"{where}: all messages must have non-empty content "
                "except for the optional final assistant message"
            )
        if turns and turns[-1][0] == role:
            turns[-1] = (role, turns[-1][1] + list(content), turns[-1][2])
        else:
            turns.append((role, list(content), where))
    return turns, errors


def _check_messages(messages: Any) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    turns, errors = _merge(messages)
    if isinstance(messages[0], Mapping) and messages[0].get("role") == "system":
        errors.append(
            "messages.0.role: a system message cannot be the first message; use the top-level `system`"
        )
    errors += _check_server_pairs(turns)
    for t, (role, content, where) in enumerate(turns):
        if role == "assistant":
            errors += _check_assistant_turn(content, where, turns[t + 1] if t + 1 < len(turns) else None)
        elif role == "user":
            errors += _check_user_turn(content, where, turns[t - 1] if t > 0 else None)
    return errors


def _check_assistant_turn(content: list[Any], where: str, following: Turn | None) -> list[str]:
    errors: list[str] = []
    uses = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"]
    seen: set[str] = set()
    for block in uses:
        use_id = block.get("id")
        if not isinstance(use_id, str):
            continue  # the shape check reports it
        if not TOOL_USE_ID.match(use_id):
            errors.append(f"{where}: tool_use.id: String should match pattern '{TOOL_USE_ID.pattern}'")
        if use_id in seen:
            errors.append(f"{where}: `tool_use` ids must be unique ({use_id!r} is repeated in one turn)")
        seen.add(use_id)
    answered = (
        _ids(following[1], "tool_result", "tool_use_id") if following and following[0] == "user" else set()
    )
    for use_id in sorted(seen - answered):
        errors.append(
            f"{where}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{use_id}. Each `tool_use` block must have a corresponding `tool_result` block "
            "in the next message."
        )
    return errors


def _check_server_pairs(turns: list[Turn]) -> list[str]:
    """Server tool calls and their results, across the merged turns.

    Refused, as the API refuses them: a result whose call is nowhere before it, and a call
    that never gets its result while the conversation goes on past it. A call still
    waiting is accepted in the request's last turn (a paused turn sent back to be
    continued), and in the last assistant turn when only the user's `tool_result`s follow
    (the API ran the client's calls first and resumes the server's: live traffic shows
    both answered 200). A code execution call also stays open while the conversation goes on
    only by its own code's calls (programmatic tool calling): each later assistant turn holds
    a `tool_use` whose `caller.tool_id` is that call, each later user turn `tool_result`s
    (the docs repeat that step until the code ends; a recorded run answers the call 14 replies
    later). A pair split over turns is not refused: no evidence says the API does.
    """
    errors: list[str] = []
    calls_before: set[Any] = set()
    results = {
        b.get("tool_use_id")
        for _, content, _ in turns
        for b in content
        if isinstance(b, Mapping) and is_server_result(b)
    }
    for t, (role, content, where) in enumerate(turns):
        if role != "assistant":
            continue
        found = [b for b in content if isinstance(b, Mapping)]
        following = turns[t + 1 :]
        in_flight_ok = not following or (
            len(following) == 1
            and following[0][0] == "user"
            and any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in following[0][1])
        )
        for block in found:
            if is_server_call(block):
                calls_before.add(block.get("id"))
                if block.get("id") not in results and not (in_flight_ok or _code_running(block, following)):
                    errors.append(
                        f"{where}: `{block.get('name')}` tool use with id `{block.get('id')}` was found "
                        f"without a corresponding `{result_type_for(block)}` block"
                    )
            elif is_server_result(block) and block.get("tool_use_id") not in calls_before:
                errors.append(
                    f"{where}: `{block.get('type')}` block with tool_use_id `{block.get('tool_use_id')}` "
                    "was found without a corresponding server tool use block before it"
                )
    return errors


def _code_running(call: Mapping[str, Any], following: list[Turn]) -> bool:
    """True when every turn after `call` is its code's: a user turn of `tool_result`s, or an
    assistant turn with a `tool_use` that `call` made (`caller.tool_id`)."""

    def made_by_call(block: Any) -> bool:
        if not isinstance(block, Mapping) or block.get("type") != "tool_use":
            return False
        caller = block.get("caller")
        return isinstance(caller, Mapping) and caller.get("tool_id") == call.get("id")

    def results(content: list[Any]) -> bool:
        return any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)

    return all(
        results(content) if role == "user" else any(made_by_call(b) for b in content)
        for role, content, _ in following
    )


def _check_user_turn(content: list[Any], where: str, previous: Turn | None) -> list[str]:
    errors: list[str] = []
    asked = _ids(previous[1], "tool_use", "id") if previous and previous[0] == "assistant" else set()
    seen_other = False
    for block in content:
        if not isinstance(block, Mapping) or block.get("type") != "tool_result":
            seen_other = True
            continue
        if seen_other:
            errors.append(f"{where}: tool_result blocks must come first in the user message")
        if not isinstance(block.get("tool_use_id"), str) or block["tool_use_id"] not in asked:
            errors.append(
                f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                "`tool_use` block in the previous message."
            )
    return errors


def _breakpoints(body: Mapping[str, Any]) -> int:
    """cache_control markers anywhere a block can carry one (nested block content included)."""

    def marked(items: Any) -> int:
        found = 0
        for item in _list(items):
            if isinstance(item, Mapping):
                found += bool(item.get("cache_control")) + marked(item.get("content"))
        return found

    top = 1 if body.get("cache_control") else 0
    return top + marked(body.get("tools")) + marked(body.get("system")) + marked(body.get("messages"))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _ids(content: Sequence[Any], kind: str, key: str) -> set[str]:
    """The string `key`s of the `kind` blocks in `content` (tool_use ids, tool_result targets)."""
    blocks = (b for b in content if isinstance(b, Mapping) and b.get("type") == kind)
    return {b[key] for b in blocks if isinstance(b.get(key), str)}
