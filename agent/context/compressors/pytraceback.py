"""Python tracebacks: every exception line (so the root cause of a chain), user frames, the raise site.

A traceback is read bottom-up and mostly skipped: the exception line says what
happened, the frames in the user's own code say where, and the frames inside the
standard library or site-packages are rarely the place to fix anything. Chained
exceptions ("The above exception was the direct cause...") are kept whole at the
exception lines, because the first exception of the chain is usually the real cause.
"""

from __future__ import annotations

import re

from agent.context.compressors.common import pick_lines, where
from agent.context.compressors.detect import PYTB_START as _START

__all__ = ["compress_traceback"]

_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
_CHAIN = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
_REPEAT = re.compile(r"^\s*\[Previous line repeated \d+ more times?\]")
_CARET = re.compile(r"^\s*[\^~]+\s*$")
LIBRARY = re.compile(r"site-packages|dist-packages|[\\/]lib[\\/]python\d|<frozen |[\\/]importlib[\\/]|^<")


def compress_traceback(text: str, budget: int, pointer: str | None) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    priorities: list[tuple[int, int]] = []
    state = "outside"
    frames = user = exceptions = 0
    last_frame: int | None = None
    outside: list[int] = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped == _START:
            priorities.append((3, i))
            state, last_frame = "frames", None
        elif _CHAIN.match(line):
            priorities.append((2, i))
            state = "outside"
        elif state == "frames" and _FRAME.match(line):
            frames += 1
            last_frame = i
            if not LIBRARY.search(_FRAME.match(line).group(1)):  # type: ignore[union-attr]
                user += 1
                priorities += [(2, i), (3, i + 1)]
        elif state == "frames" and _REPEAT.match(line):
            priorities.append((2, i))
        elif state == "frames" and (line.startswith((" ", "\t")) or _CARET.match(line) or not stripped):
            continue
        elif state in ("frames", "exception") and stripped:
            if state == "frames":
                exceptions += 1
                priorities.append((0 if i > len(lines) // 2 else 1, i))
                if last_frame is not None:
                    priorities += [(2, last_frame), (4, last_frame + 1)]
                state = "exception"
            else:
                priorities.append((4, i))
        else:
            state = "outside" if not stripped else state
            if stripped:
                outside.append(i)
    for n, i in enumerate(outside):
        priorities += [(6 + 2 * n, i), (7 + 3 * (len(outside) - 1 - n), i)]
    footer = (
        f"[traceback: {exceptions} exception(s), {frames} frames ({user} in user code), "
        f"library frames cut; {where(pointer)}]"
    )
    return pick_lines(lines, budget, priorities, footer=footer, max_line=300)
