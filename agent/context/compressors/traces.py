"""Stack traces of other languages: Java/JVM, Node.js, Rust panics, Go panics.

Like a Python traceback, such a trace is read for its exception lines (the thrown
one and every `Caused by:`), where it was raised (the first frame under each), and
the frames in the program's own code rather than the runtime's. Runtime frames
(`java.`, `node:internal`, `std::`, `core::`, `runtime/`) go first when cutting;
`... 12 more` lines and the trace's own last line (`Node.js v22`, the exit note)
stay, and the footer counts frames and exceptions.
"""

from __future__ import annotations

import re

from agent.context.compressors.common import is_important, pick_lines, where
from agent.context.compressors.detect import TRACE_FRAME as _FRAME
from agent.context.compressors.detect import TRACE_HEAD as _HEAD

__all__ = ["compress_trace"]

_LOCATION = re.compile(r"^\s*at \S+:\d+")
_MORE = re.compile(r"^\s*\.\.\. \d+ more")
_RUNTIME = re.compile(
    r"\bat (?:java\.|javax\.|jdk\.|sun\.|kotlin\.|scala\.|node:|internal/)|\(node:|\bat (?:async )?Promise\.|"
    r"\d+: (?:0x[0-9a-f]+ - )?(?:std|core|alloc|__rustc|rust_begin_unwind)::|^\s*(?:runtime|testing)/|"
    r"\s(?:__libc_start|_start$)"
)


def compress_trace(text: str, budget: int, pointer: str | None) -> str:
    """Exception and panic lines, the frame under each, user frames, `... N more`, the ends."""
    lines = [line.rstrip() for line in text.splitlines()]
    priorities: list[tuple[int, int]] = [(1, 0), (3, len(lines) - 1)]
    frames = user = heads = 0
    under_head = False
    for i, line in enumerate(lines):
        if _HEAD.match(line) or (is_important(line) and not _FRAME.match(line)):
            heads += 1
            priorities += [(0, i), (2, i + 1)]
            under_head = True
        elif _FRAME.match(line):
            frames += 1
            runtime = bool(_RUNTIME.search(line))
            user += not runtime
            if under_head:
                priorities.append((2, i))
                under_head = False
            elif not runtime:
                priorities += [(4 + min(user, 40), i), (6 + min(user, 40), i + 1)]
            else:
                priorities.append((300 + i, i))
        elif _MORE.match(line):
            priorities.append((3, i))
        elif line.strip():
            priorities.append((8 + min(i, 50), i))
    footer = (
        f"[stack trace: {heads} exception/panic lines, {frames} frames ({user} outside the runtime); "
        f"{where(pointer)}]"
    )
    return pick_lines(lines, budget, priorities, footer=footer, max_line=300)
