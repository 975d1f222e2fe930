"""See what the model saw: print one step of a request log or a session file.

    python -m agent.ext.request_log.inspect run.requests.jsonl --step 12         # the request, readable
    python -m agent.ext.request_log.inspect run.requests.jsonl --step 12 --json  # the request, as JSON
    python -m agent.ext.request_log.inspect session.jsonl --step 12              # the messages sent

A request log (`agent.ext.request_log.RequestLog`) holds each step's whole request:
system, tools, parameters, cache breakpoints, and the messages after pruning, compaction
and the memory note. A session file (`agent.ext.sessions`) holds the messages only, so for
one of those the messages sent at step N are shown (the history as it stood when that
step's reply was committed, with the step's pruning or compaction).
Long texts are cut for reading (`--width`); `--json` prints everything verbatim.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.ext.request_log.log import request_at

__all__ = ["kind_of", "main", "render_request", "session_messages_at"]


def kind_of(path: str | Path) -> str:
    """ "requests" or "session", from the file's first line."""
    with open(path, encoding="utf-8") as file:
        first = file.readline()
    try:
        record = json.loads(first)
    except ValueError:
        raise ValueError(f"{path}: not a request log or a session file (line 1 is not JSON)") from None
    if isinstance(record, dict) and "request" in record and "keep" in record:
        return "requests"
    if isinstance(record, dict) and "event" in record:
        return "session"
    raise ValueError(f"{path}: not a request log or a session file")


def session_messages_at(path: str | Path, step: int) -> list[dict[str, Any]]:
    """The messages sent at `step` of a session: every record up to the turn that step's
    reply committed (its usage record, then any history rewrite), folded by `read_session`."""
    lines = Path(path).read_bytes().splitlines(keepends=True)
    seen_step, cut = False, None
    for index, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        usage = record.get("usage") if record.get("event") == "usage" else None
        if isinstance(usage, Mapping) and (usage.get("step"), usage.get("purpose", "step")) == (step, "step"):
            seen_step = True
        elif seen_step and record.get("event") in ("turn", "end", "stopped"):
            cut = index
            break
    if not seen_step:
        raise LookupError(f"no step {step} in {path}")
    from agent.ext.sessions.replay import read_session  # only a session file needs the sessions extension

    with tempfile.TemporaryDirectory() as folder:
        partial = Path(folder) / "session.jsonl"
        partial.write_bytes(b"".join(lines[:cut]))
        return list(read_session(partial).messages)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else f"{text[:width]}[... {len(text) - width:,} more chars]"


def _block(block: Mapping[str, Any], width: int) -> str:
    kind = block.get("type", "?")
    cached = "  [cache_control]" if "cache_control" in block else ""
    if kind == "text":
        return f"  text: {_cut(str(block.get('text', '')), width)}{cached}"
    if kind == "tool_use":
        arguments = json.dumps(block.get("input"), ensure_ascii=False)
        return f"  tool_use {block.get('name')} {block.get('id')}: {_cut(arguments, width)}{cached}"
    if kind == "tool_result":
        content = block.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        error = " (error)" if block.get("is_error") else ""
        return f"  tool_result {block.get('tool_use_id')}{error}: {_cut(text, width)}{cached}"
    if kind in ("thinking", "redacted_thinking"):
        return f"  {kind}: {_cut(str(block.get('thinking', '')), width)}{cached}"
    return f"  {kind}: {_cut(json.dumps(block, ensure_ascii=False), width)}{cached}"


def render_messages(messages: Sequence[Mapping[str, Any]], width: int = 300) -> list[str]:
    lines = []
    for number, message in enumerate(messages, 1):
        lines.append(f"[{number}] {message.get('role')}")
        content = message.get("content")
        if isinstance(content, str):
            lines.append(f"  text: {_cut(content, width)}")
        else:
            lines.extend(_block(block, width) for block in content or [])
    return lines


def render_request(request: Mapping[str, Any], width: int = 300) -> list[str]:
    """A request as lines a person reads: parameters, system, tool names, then each message."""
    skip = ("system", "tools", "messages")
    params = (f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in request.items() if k not in skip)
    lines = [", ".join(params)]
    for block in request.get("system") or []:
        cached = "  [cache_control]" if "cache_control" in block else ""
        lines.append(f"system: {_cut(str(block.get('text', '')), width)}{cached}")
    tools = request.get("tools") or []
    if tools:
        lines.append("tools: " + ", ".join(str(t.get("name")) for t in tools))
    messages = request.get("messages") or []
    lines.append(f"messages: {len(messages)}")
    return lines + render_messages(messages, width)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.ext.request_log.inspect", description=__doc__.splitlines()[0]
    )
    parser.add_argument("path", help="a request log (RequestLog) or a session file")
    parser.add_argument("--step", type=int, required=True, help="the step to show (1 is the first call)")
    parser.add_argument("--run", help="the run id, when the request log holds several (default: the last)")
    parser.add_argument("--json", action="store_true", help="print the request (or messages) as JSON")
    parser.add_argument("--width", type=int, default=300, help="characters shown of each text")
    args = parser.parse_args(argv)
    try:
        if kind_of(args.path) == "requests":
            request: Any = request_at(args.path, args.step, args.run)
            header = f"step {args.step} of {args.path}: the exact request"
            lines = render_request(request, args.width)
        else:
            request = session_messages_at(args.path, args.step)
            header = f"step {args.step} of {args.path}: the messages sent (no system or tools in a session)"
            lines = render_messages(request, args.width)
    except (OSError, ValueError, LookupError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(request, ensure_ascii=False, indent=2))
    else:
        print(header)
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
