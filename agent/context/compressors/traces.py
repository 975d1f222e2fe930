"""Stack traces of other languages: Java/JVM, Node.js, Rust panics, Go panics.

Like a Python traceback, such a trace is read for its exception lines (the thrown
one and every `Caused by:`), where it was raised (the first frame under each), and
the frames in the program's own code rather than the runtime's. Runtime frames
(`java.`, `node:internal`, `std::`, `core::` or `std[hash]::`, `runtime/`) go first when cutting;
`... 12 more` lines and the trace's own last line (`Node.js v22`, the exit note)
stay, and the footer counts frames and exceptions.
"""

from __future__ import annotations

import re
from collections import Counter

from agent.context.compressors.common import is_important, pick_lines, where
from agent.context.compressors.detect import TRACE_FRAME as _FRAME
from agent.context.compressors.detect import TRACE_HEAD as _HEAD

__all__ = ["compress_trace"]

_LOCATION = re.compile(r"^\s*at \S+:\d+")
_GO_FILE = re.compile(r"^\s+\S+\.go:\d+")
_GO_ROUTINE = re.compile(r"^goroutine \d+ (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[([^\],]+)")
_GO_RUNTIME = re.compile(r"^runtime: \w")
_GO_ARGS = re.compile(r"\(.*$")
_GO_PC = re.compile(r" \+0x[0-9a-f]+.*$")
_MORE = re.compile(r"^\s*\.\.\. \d+ more")
_RUST_FRAME = re.compile(r"^\s*\d+: ")
_RUNTIME = re.compile(
    r"\bat (?:java\.|javax\.|jdk\.|sun\.|kotlin\.|scala\.|node:|internal/)|\(node:|\bat (?:async )?Promise\.|"
    r"\d+: +(?:0x[0-9a-f]+ - )?<*(?:&(?:dyn |mut )?)?"
    r"(?:std|core|alloc|__rustc|rust_begin_unwind)(?:\[[0-9a-f]+\])?::"
    r"|^\s*(?:runtime|testing)/|"
    r"\s(?:__libc_start|_start$)"
)


def _go_user(function: str) -> bool:
    """A Go frame's function is the program's own: `main.`, or a package path whose first
    element has a dot (`github.com/...`); the standard library's (`net/http.`, `runtime.`) has none."""
    name = function.strip().removeprefix("created by ")
    if name.startswith("main."):
        return True
    return "/" in name and "." in name.split("/")[0]


def compress_trace(text: str, budget: int, pointer: str | None) -> str:
    """Exception and panic lines, the frame under each, user frames, `... N more`, the ends."""
    lines = [line.rstrip() for line in text.splitlines()]
    priorities: list[tuple[int, int]] = [(1, 0), (3, len(lines) - 1)]
    frames = user = heads = 0
    under_head = False
    attached = -1  # a Rust frame's `at file:line` line, taken with the frame above it
    runtime_listed = 0
    states = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _GO_ROUTINE.match(line))]
    state_count = Counter(state for _, state in states)
    go_heads = {
        i: (0 if n == 0 else 1 if state_count[state] == 1 else 200 + n) for n, (i, state) in enumerate(states)
    }
    seen: set[str] = set()
    for i, line in enumerate(lines):
        if i == attached:
            continue
        if i in go_heads:  # a dump of many goroutines: the first, the rare states, then the rest
            heads += 1
            under = 2 if go_heads[i] == 0 else go_heads[i] + 150  # the first one's top frame: where
            priorities += [(go_heads[i], i), (under, i + 1), (under, i + 2)]
            under_head = True
        elif i + 1 < len(lines) and _GO_FILE.match(lines[i + 1]) and not _FRAME.match(line):
            frames += 1  # a Go frame: the function line, its file line under it
            if not _go_user(line):
                runtime_listed += 1
                if runtime_listed <= budget // 4:  # the standard library's frames fill what is left, in order
                    priorities += [(300 + i, i), (300 + i, i + 1)]
                continue
            user += 1
            site = _GO_ARGS.sub("", line) + _GO_PC.sub("", lines[i + 1])
            rank = 4 + min(len(seen), 40) if site not in seen else 400 + min(i, 5000)  # recursion: once
            seen.add(site)
            priorities += [(rank, i), (rank, i + 1)]
        elif _GO_FILE.match(line):
            continue
        elif _HEAD.match(line) or _GO_RUNTIME.match(line) or (is_important(line) and not _FRAME.match(line)):
            heads += 1
            priorities += [(0, i), (2, i + 1)]
            under_head = True
        elif _FRAME.match(line):
            frames += 1
            runtime = bool(_RUNTIME.search(line))
            user += not runtime
            if _RUST_FRAME.match(line) and i + 1 < len(lines) and _LOCATION.match(lines[i + 1]):
                attached = i + 1
            if under_head:
                priorities.append((2, i))
                under_head = False
            elif not runtime:
                priorities += [(4 + min(user, 40), i), (6 + min(user, 40), i + 1)]
            else:
                priorities += [(300 + i, i), *([(300 + i, i + 1)] if attached == i + 1 else [])]
        elif _MORE.match(line):
            priorities.append((3, i))
        elif line.strip():
            priorities.append((8 + min(i, 50), i))
    footer = (
        f"[stack trace: {heads} exception/panic lines, {frames} frames ({user} outside the runtime); "
        f"{where(pointer)}]"
    )
    return pick_lines(lines, budget, priorities, footer=footer, max_line=300)
