"""See what the model saw: list the steps of a request log or a session file, or print one.

    python -m agent.ext.request_log.inspect run.requests.jsonl                   # one line per step
    python -m agent.ext.request_log.inspect run.requests.jsonl --step 12         # the request, readable
    python -m agent.ext.request_log.inspect run.requests.jsonl --step 12 --json  # the request, as JSON
    python -m agent.ext.request_log.inspect session.jsonl --step 12              # the messages sent

A request log (`agent.ext.request_log.RequestLog`) holds each step's whole request:
system, tools, parameters, cache breakpoints, and the messages after pruning, compaction
and the memory note. A session file (`agent.ext.sessions`) holds the messages only, so for
one of those the messages sent at step N are shown (the history as it stood when that
step's reply was committed, with the step's pruning or compaction).
Without `--step` the file is listed, one line per model call: what a request log holds
(the model, how many messages and bytes were sent, what the request ends with), or what a
session holds (tokens, stop reason, the tools called). The log keeps requests, not replies,
so stop reasons and tokens are only in a session file.
Long texts are cut for reading (`--width`); `--json` prints everything verbatim.
A reader that stops early (`| head`) ends the command quietly (`quiet_when_cut`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.ext.request_log.log import read_requests, request_at

__all__ = [
    "kind_of",
    "list_requests",
    "list_session",
    "main",
    "quiet_when_cut",
    "render_request",
    "render_rows",
    "session_messages_at",
]


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


def _ends_with(messages: Sequence[Mapping[str, Any]]) -> str:
    """What a request ends with, which tells what the step was asked: the user's text, or the
    results of the calls the previous step made (named by tool, looked up by their ids)."""
    if not messages:
        return "-"
    names = {
        block.get("id"): block.get("name")
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    }
    content = messages[-1].get("content")
    blocks: list[Any] = [{"type": "text"}] if isinstance(content, str) else list(content or [])
    kinds = Counter(
        f"tool_result {names.get(b.get('tool_use_id'), '?')}"
        if b.get("type") == "tool_result"
        else str(b.get("type"))
        for b in blocks
    )
    listed = ", ".join(kind if count == 1 else f"{kind} x{count}" for kind, count in kinds.items())
    return f"{messages[-1].get('role')}: {listed or 'empty'}"


def list_requests(path: str | Path, run: str | None = None) -> list[dict[str, Any]]:
    """One row per line of a request log (of run `run`, default all), in file order: a retried
    step has a row per attempt. Bytes are the whole request's as JSON, what the step sent."""
    return [
        {
            "run": run_id,
            "step": step,
            "model": request.get("model"),
            "messages": len(request.get("messages") or []),
            "bytes": len(json.dumps(request, ensure_ascii=False).encode()),
            "ends_with": _ends_with(request.get("messages") or []),
        }
        for run_id, step, request in read_requests(path)
        if run is None or run_id == run
    ]


def list_session(path: str | Path) -> list[dict[str, Any]]:
    """One row per model call of a session file (its usage records): the replies' side, which
    a request log does not hold. Summary and failed calls are marked by their purpose."""
    rows = []
    for line in Path(path).read_bytes().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        usage = record.get("usage") if record.get("event") == "usage" else None
        if not isinstance(usage, Mapping):
            continue
        row = {key: usage.get(key) for key in ("step", "model", "prompt", "output", "stop_reason")}
        row["tools"] = ",".join(usage.get("tools") or []) or None
        if usage.get("purpose", "step") != "step":
            row["purpose"] = usage["purpose"]
        rows.append(row)
    return rows


def render_rows(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """`step   3  model=... messages=7 ...`, one line per row; a `run ...` line before each run."""
    lines, run = [], None
    for row in rows:
        if "run" in row and row["run"] != run:
            run = row["run"]
            lines.append(f"run {run}")
        fields = (
            f"{key}={value:,}" if isinstance(value, int) else f"{key}={value}"
            for key, value in row.items()
            if key not in ("run", "step") and value is not None
        )
        lines.append(f"step {row['step']:>3}  " + "  ".join(fields))
    return lines


def quiet_when_cut(command: Callable[[], int]) -> int:
    """Run `command`, ending quietly with 141 (128 + SIGPIPE, as `cat` would) when the reader
    closes the pipe early (`| head -1`): Python would print a BrokenPipeError traceback, and
    fail again flushing stdout at exit, so stdout is pointed at /dev/null before leaving."""
    try:
        code = command()
        sys.stdout.flush()  # a cut pipe shows here, not at exit where it cannot be caught
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """The command: list the file's steps, or print one (`--step`)."""
    return quiet_when_cut(lambda: _command(argv))


def _command(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.ext.request_log.inspect", description=__doc__.splitlines()[0]
    )
    parser.add_argument("path", help="a request log (RequestLog) or a session file")
    parser.add_argument(
        "--step",
        type=int,
        help="the step to show (1 is the first call); without it, list the steps, one line each: "
        "for a request log the model, messages, bytes and what the request ends with; "
        "for a session file the tokens, stop reason and tools called",
    )
    parser.add_argument(
        "--run",
        help="the run id, when the request log holds several (default: the last; a listing shows all)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the request (or messages) as JSON; listing: a JSON line per step",
    )
    parser.add_argument("--width", type=int, default=300, help="characters shown of each text")
    args = parser.parse_args(argv)
    try:
        kind = kind_of(args.path)
        if args.step is None:
            rows = list_requests(args.path, args.run) if kind == "requests" else list_session(args.path)
            header = f"{len(rows)} {'requests' if kind == 'requests' else 'model calls'} in {args.path}"
            lines = render_rows(rows)
            request: Any = rows
        elif kind == "requests":
            request = request_at(args.path, args.step, args.run)
            header = f"step {args.step} of {args.path}: the exact request"
            lines = render_request(request, args.width)
        else:
            request = session_messages_at(args.path, args.step)
            header = f"step {args.step} of {args.path}: the messages sent (no system or tools in a session)"
            lines = render_messages(request, args.width)
    except (OSError, ValueError, LookupError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.json and args.step is None:
        for row in request:
            print(json.dumps(row, ensure_ascii=False))
    elif args.json:
        print(json.dumps(request, ensure_ascii=False, indent=2))
    else:
        print(header)
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
