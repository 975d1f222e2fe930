"""The request log: the exact request of every step on disk, to see what the model saw.

    Agent(..., extensions=[..., RequestLog("run.requests.jsonl")])   # last: it sees the final body
    python -m agent.ext.request_log.inspect run.requests.jsonl --step 12

Why an extension: a session holds the messages, but not the system prompt, the tools, the
parameters or the cache breakpoints the model was actually sent; when a step goes wrong,
that request is the one thing worth reading. `RequestLog` writes each step's body as the
`request` hooks left it (pruned, compacted, cache-marked, changed by every extension before
it in the list), delta-encoded (`agent.ext.request_log.log`), and `read_requests`/`request_at`
give the requests back.

When it writes. The `request` hook also sees the candidate histories compaction measures,
which are never sent, so it only remembers the run's latest body; that body is written when
its reply comes (`response`) or, for a run that ends on an error, at `finish` (the request
that failed, or that a budget refused to send). Where the file cannot be written, each step
logs a warning and the run goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.ext.request_log.log import append_request, read_requests, request_at
from agent.extension import Extension

if TYPE_CHECKING:
    from anthropic.types import Message

    from agent.state import RunState

__all__ = ["RequestLog", "read_requests", "request_at"]

KEY = "request_log"


@dataclass
class _Unsent:
    """One run's log state: the body built last (not yet written) and the last one written,
    which the next line is a delta against."""

    run: int
    """`id()` of the run the log follows: a candidate history being measured comes as a copy
    of it (`RunState.with_messages`), and its bodies are never sent."""
    latest: dict[str, Any] | None = None
    sent: dict[str, Any] = field(default_factory=dict)


class RequestLog(Extension):
    """Append every step's exact request to the JSONL file `path` (created 0600)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    async def start(self, run: RunState) -> None:
        run.extras[KEY] = _Unsent(id(run))

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        state: _Unsent | None = run.extras.get(KEY)
        if state is not None and state.run == id(run):
            state.latest = request
        return request

    def response(self, response: Message, run: RunState) -> Message:
        self._write(run)
        return response

    def finish(self, run: RunState, error: BaseException | None) -> None:
        if error is not None:
            self._write(run)

    def _write(self, run: RunState) -> None:
        state: _Unsent | None = run.extras.get(KEY)
        if state is None or state.latest is None:
            return  # answered already (a retry with more room is not built again), or nothing built
        state.sent = append_request(self.path, state.latest, run.run_id, run.step, state.sent)
        state.latest = None
