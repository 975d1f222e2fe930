"""HTTP responses as `curl -i` prints them: a status line, headers, a blank line, the body.

Head and tail would cut such a transcript through its body, which is what it is read for. So it
keeps the status line and the headers an agent acts on (a JSON response's are kept the same way,
`structured.HEADERS_KEPT`), and hands the body to the caller's compressor, as what it is: JSON,
HTML, another transcript (a redirect followed). This module imports nothing of the dispatcher.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agent.context.compressors.common import MIN_BUDGET, fit

__all__ = ["Transcript", "transcript"]

_STATUS_LINE = re.compile(r"HTTP/\d(?:\.\d)? \d{3}\b[^\r\n]*")
_HEADER_LINE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+:")
_HEADERS_END = re.compile(r"\r?\n\r?\n")
_HEADERS_READ = 64_000
"""Characters searched for the blank line that ends the headers."""

Body = Callable[[str, int, "str | None"], str]
"""The body's compressor: (text, budget, pointer) -> at most `budget` characters."""


@dataclass(frozen=True)
class Transcript:
    status: str
    headers: list[str]
    body: str

    def __call__(self, budget: int, pointer: str | None, compress_body: Body) -> str:
        """The status line, the actionable headers (the others counted), the body compressed."""
        from agent.context.compressors.structured import HEADERS_KEPT

        kept = [line for line in self.headers if HEADERS_KEPT.match(line.split(":", 1)[0])]
        dropped = len(self.headers) - len(kept)
        shown = [self.status, *kept, *([f"[{dropped} more headers]"] if dropped else [])]
        head = "\n".join(shown)[: budget // 4]
        room = budget - len(head) - 2
        if not self.body.strip() or room < MIN_BUDGET:
            return fit(f"{head}\n\n{self.body}", budget, pointer)
        return f"{head}\n\n{compress_body(self.body, room, pointer)}"


def transcript(text: str) -> Transcript | None:
    """`text` split as a response transcript, or None when it is not one."""
    status = _STATUS_LINE.match(text)
    end = _HEADERS_END.search(text, 0, _HEADERS_READ) if status else None
    if status is None or end is None:
        return None
    headers = text[status.end() : end.start()].splitlines()[1:]
    if not all(_HEADER_LINE.match(line) for line in headers):
        return None
    return Transcript(status.group().rstrip(), [line.rstrip() for line in headers], text[end.end() :])
