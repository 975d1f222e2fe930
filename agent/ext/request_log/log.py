"""The exact request of every step, kept on disk: what the model saw, after pruning and compaction.

`RequestLog("run.requests.jsonl")` (`agent.ext.request_log`) appends one line per model
call, holding the request as the loop built it (system, tools, parameters, cache
breakpoints, and the messages after pruning, compaction and the memory note).
`python -m agent.ext.request_log.inspect` prints any step of it; `read_requests(path)` and
`request_at(path, step)` give it back as dicts.

Why a file, and why deltas. Each request holds the whole history, so keeping every request
(in memory or as-is on disk) grows with the square of the run's length: a 200-step run
would hold 200 copies of its early turns. Most of a request is the previous request's
messages, unchanged (the history is append-only between prunes and compactions). So each
line stores only `keep`, how many leading messages are the same as in the previous request
of that run, and the messages after them, and names in `same` the other fields (tools,
system, ...) that did not change; the reader rebuilds each request by replaying the lines
in order. An ordinary step writes only its new turns; a pruning batch or a
compaction writes the history from the first message it changed. The extension keeps
nothing but a reference to the run's previous request (in `run.extras`).

The log holds tool results verbatim (it is what the model read), so it is created with mode
0600 like the session file. Compaction's summary calls are not logged, only the steps'.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["append_request", "read_requests", "request_at"]

from agent.render import redact

log = logging.getLogger("agent")


def _same_prefix(before: Sequence[Any], now: Sequence[Any]) -> int:
    """How many leading messages `now` shares with `before` (the same object, or equal)."""
    count = 0
    for old, new in zip(before, now, strict=False):
        if old is not new and old != new:
            break
        count += 1
    return count


def append_request(
    path: str | Path, request: Mapping[str, Any], run_id: str, step: int, sent: Mapping[str, Any]
) -> dict[str, Any]:
    """Append `request` as a delta against `sent` (the run's previous request, `{}` at first);
    returns what to pass as `sent` next time."""
    messages = list(request.get("messages") or [])
    keep = _same_prefix(sent.get("messages") or [], messages)
    same = [key for key, value in request.items() if key != "messages" and key in sent and sent[key] == value]
    body = {
        key: (messages[keep:] if key == "messages" else None if key in same else value)
        for key, value in request.items()
    }
    record = {"run": run_id, "step": step, "keep": keep, "same": same, "request": body}
    line = redact(json.dumps(record, default=str)) + "\n"  # the file outlives the run (`agent.render`)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as file:
            file.write(line)
    except OSError as error:  # a full disk must not stop the run (the next line: a delta of the last written)
        log.warning("[step %d] request log %s not written: %s", step, path, error)
        return dict(sent)
    return {**request, "messages": messages}


def read_requests(path: str | Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(run id, step, the exact request) for each line of a request log, in order."""
    sent: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                run, step, keep, body = record["run"], record["step"], record["keep"], record["request"]
                same = record.get("same", [])
            except (ValueError, KeyError, TypeError) as error:
                raise ValueError(f"{path}:{number}: not a request log line ({error})") from None
            before = sent.get(run, {})
            earlier = before.get("messages", [])
            if keep > len(earlier) or any(key not in before for key in same):
                raise ValueError(f"{path}:{number}: refers to a part of the previous request it did not have")
            request = {key: before[key] if key in same else value for key, value in body.items()}
            if "messages" in body:
                request["messages"] = [*earlier[:keep], *body["messages"]]
            sent[run] = request
            yield run, step, request


def request_at(path: str | Path, step: int, run: str | None = None) -> dict[str, Any]:
    """The request sent at `step` of run `run` (default: the last run in the log); the last
    attempt when the step was retried."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    last_run = None
    for run_id, number, request in read_requests(path):
        if run is None or run_id == run:
            found[(run_id, number)] = request
            last_run = run_id
    chosen = run or last_run
    if chosen is None or (chosen, step) not in found:
        steps = sorted(n for r, n in found if r == chosen)
        known = f" (steps {steps[0]}..{steps[-1]})" if steps else ""
        raise LookupError(f"no step {step} in {path}{known}")
    return found[(chosen, step)]
