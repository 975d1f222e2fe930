"""A plain run loads only what it uses: the cold halves of the core stay unloaded.

Each of these modules holds a path a plain run never takes (a tool's odd return value, calls
awaited on a shared event loop, a failed model call, a server tool's blocks, keep paths,
deferred declarations); a top-level import of one from the modules every run loads would
load it into every run, and this test says which.
"""

from __future__ import annotations

from benchmarks.footprint import measure

COLD = (
    "agent.odd_values",
    "agent.tool_awaits",
    "agent.retries",
    "agent.server_blocks",
    "agent.context.keep_paths",
    "agent.context.deferred",
    "agent.context.compact",
)


def test_a_plain_run_leaves_the_cold_paths_unloaded() -> None:
    loaded = set(measure("plain")["names"])  # type: ignore[arg-type]
    assert "agent.loop" in loaded and "agent.render" in loaded
    assert sorted(loaded & set(COLD)) == []
