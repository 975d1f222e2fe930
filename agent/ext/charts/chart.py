"""Charts of a run's economics, from its usage log: where the prompt tokens went, and the $.

    python -m agent.ext.charts.chart usage.jsonl                 # in the terminal
    python -m agent.ext.charts.chart usage.jsonl --png run.png   # and as an image file

A usage log (`Agent(usage_log="usage.jsonl")`, one JSON line per model call, see
`agent.usage`) holds each call's prompt split three ways: uncached, read from the
cache, written to the cache. Stacked per call, they show at a glance what pruning,
compaction and caching did; the cumulative dollars beside them show what it cost.
A table of numbers says the same, but a cache that stopped reading at step 30 is
seen in a second on a chart and missed in a table.

A log that several runs appended to is charted run by run (`split_runs`), in file order:
one chart per run, or one panel per run in the PNG. Without colour (piped, not a TTY) each
part of a bar is drawn with its own glyph (`GLYPHS`), which the legend shows.

Plotting is an optional extra (`pip install -e ".[plot]"`: plotext for the terminal,
matplotlib for the file); the framework never imports this module, and this module
imports them only when it draws.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "RunSeries",
    "compare_png",
    "main",
    "read_usage_log",
    "series",
    "split_runs",
    "terminal",
    "write_png",
]

PARTS = ("uncached", "cache_read", "cache_write")
LABELS = {"uncached": "uncached", "cache_read": "cache read", "cache_write": "cache write"}
COLORS = {"uncached": "tab:red", "cache_read": "tab:green", "cache_write": "tab:orange"}
GLYPHS = {"uncached": "#", "cache_read": ":", "cache_write": "="}
"""What tells the parts apart without colour: plain ASCII, so they read in any font or pager."""


@dataclass(frozen=True)
class RunSeries:
    """One run, call by call: the prompt split three ways, and the dollars so far."""

    calls: tuple[str, ...]
    """Each call's label: its step, with an `s` for a compaction's summary call (`12s`)."""
    uncached: tuple[int, ...]
    cache_read: tuple[int, ...]
    cache_write: tuple[int, ...]
    cumulative_usd: tuple[float, ...]
    """Dollars spent up to and including each call (a call of unknown price adds 0)."""
    unpriced: int = 0
    """How many calls had no known price (their cost is missing from the dollars)."""

    def part(self, name: str) -> tuple[int, ...]:
        values: tuple[int, ...] = getattr(self, name)
        return values


def read_usage_log(path: str | Path) -> list[dict[str, Any]]:
    """The records of a usage log; a line that is not a JSON object is an error naming it."""
    records = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record, dict) or not all(k in record for k in (*PARTS, "step")):
            raise ValueError(f"{path}:{number}: not a usage record (needs step, {', '.join(PARTS)})")
        records.append(record)
    return records


def split_runs(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The records of each run, by run id, runs in the order they first appear: a log is
    appended to, so one file may hold several runs, and charted as one they read as a single
    run whose steps restart. Records carry no run id today (`Usage.to_json`), so a record
    without `run_id` (or `run`) starts a new run where its step goes back (numbered `#1`,
    `#2`, ...). Two runs of a single step each, or runs interleaved in one file, then read as
    one: only a run id tells those apart."""
    runs: dict[str, list[Mapping[str, Any]]] = {}
    unnamed, last_step = 1, None
    for record in records:
        run = record.get("run_id", record.get("run"))
        if run is None:
            if last_step is not None and record["step"] < last_step:
                unnamed += 1
            last_step = record["step"]
            run = f"#{unnamed}"
        runs.setdefault(str(run), []).append(record)
    return runs


def series(records: Sequence[Mapping[str, Any]]) -> RunSeries:
    """The chartable series of usage records (as `Usage.to_json` writes them)."""
    spent, cumulative = 0.0, []
    for record in records:
        spent += record.get("cost_usd") or 0.0
        cumulative.append(spent)
    return RunSeries(
        calls=tuple(f"{r['step']}{'s' if r.get('purpose') == 'summary' else ''}" for r in records),
        uncached=tuple(int(r["uncached"]) for r in records),
        cache_read=tuple(int(r["cache_read"]) for r in records),
        cache_write=tuple(int(r["cache_write"]) for r in records),
        cumulative_usd=tuple(cumulative),
        unpriced=sum(1 for r in records if r.get("cost_usd") is None),
    )


def _title(run: RunSeries, title: str) -> str:
    spent = run.cumulative_usd[-1] if run.cumulative_usd else 0.0
    unknown = f" ({run.unpriced} calls unpriced)" if run.unpriced else ""
    return f"{title}: {len(run.calls)} calls, ${spent:.4f}{unknown}"


def terminal(
    run: RunSeries, title: str = "run", width: int = 100, height: int = 36, color: bool = True
) -> str:
    """The chart as text for a terminal: prompt tokens per call (stacked), then cumulative $."""
    import plotext as plt  # type: ignore[import-untyped]  # the optional `plot` extra

    plt.main()  # plotext is one global figure: `clf` in a subplot clears only that subplot,
    plt.clf()  # and a second chart (the next run of a log) would be drawn into the first's
    plt.plotsize(width, height)
    if not color:
        plt.theme("clear")
    plt.subplots(2, 1)
    plt.subplot(1, 1)
    plt.stacked_bar(
        list(run.calls),
        [list(run.part(p)) for p in PARTS],
        labels=[LABELS[p] for p in PARTS],
        marker=None if color else [GLYPHS[p] for p in PARTS],
    )
    plt.title(f"{_title(run, title)}: prompt tokens per call")
    plt.subplot(2, 1)
    plt.plot(list(range(1, len(run.calls) + 1)), list(run.cumulative_usd), label="cumulative $")
    plt.xlabel("call")
    text: str = plt.build()
    plt.main()
    plt.clf()
    return text if color else str(plt.uncolorize(text))


def _draw(ax: Any, run: RunSeries, title: str) -> Any:
    """Stacked bars of one run on `ax`, cumulative $ on a twin axis; returns the twin."""
    x = list(range(1, len(run.calls) + 1))
    bottom = [0] * len(x)
    for part in PARTS:
        values = list(run.part(part))
        ax.bar(x, values, bottom=bottom, label=LABELS[part], color=COLORS[part], width=0.9)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xlabel("model call (summary calls hatched)")
    ax.set_ylabel("prompt tokens")
    ax.set_title(_title(run, title), fontsize=10)
    for patch, label in zip(ax.patches, list(run.calls) * len(PARTS), strict=False):
        if label.endswith("s"):
            patch.set_hatch("//")
    money = ax.twinx()
    money.plot(x, list(run.cumulative_usd), color="black", label="cumulative $")
    money.set_ylabel("cumulative $")
    return money


def figure(run: RunSeries, title: str = "run") -> Any:
    """The matplotlib figure of one run (what `write_png` saves)."""
    from matplotlib.figure import Figure  # the optional `plot` extra; no pyplot, no GUI

    fig = Figure(figsize=(11, 5), layout="constrained")
    ax = fig.add_subplot()
    money = _draw(ax, run, title)
    bars, labels = ax.get_legend_handles_labels()
    line, label = money.get_legend_handles_labels()
    ax.legend(bars + line, labels + label, loc="upper left", fontsize=8)
    return fig


def write_png(run: RunSeries, path: str | Path, title: str = "run") -> Path:
    """Save the chart of one run as a PNG; returns its path."""
    figure(run, title).savefig(path, dpi=110)
    return Path(path)


def compare_figure(runs: Mapping[str, RunSeries]) -> Any:
    """One panel per run (same token scale), for comparing configurations of one task."""
    from matplotlib.figure import Figure

    columns = min(3, len(runs)) or 1
    rows = -(-len(runs) // columns)
    fig = Figure(figsize=(5.5 * columns, 4 * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharey=True)
    top = max((max(run.cumulative_usd, default=0.0) for run in runs.values()), default=0.0)
    for ax, (name, run) in zip(axes.flat, runs.items(), strict=False):
        money = _draw(ax, run, name)
        money.set_ylim(0, top * 1.05 or 1)
    for ax in list(axes.flat)[len(runs) :]:
        ax.set_visible(False)
    axes.flat[0].legend(loc="upper left", fontsize=8)
    return fig


def compare_png(runs: Mapping[str, RunSeries], path: str | Path) -> Path:
    """Save `compare_figure(runs)` as a PNG; returns its path."""
    compare_figure(runs).savefig(path, dpi=100)
    return Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    """The command: one chart per run of the log, in the terminal and/or a PNG."""
    try:
        code = _command(argv)
        sys.stdout.flush()  # a reader that left (`| head`) shows here, not at exit
    except BrokenPipeError:  # end quietly, as `cat` would; stdout to /dev/null so exit's flush passes
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


def _command(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.ext.charts.chart", description=__doc__.splitlines()[0]
    )
    parser.add_argument("log", help="a usage log (JSON lines), as Agent(usage_log=...) writes it")
    parser.add_argument("--png", help="also write the chart to this PNG file (a panel per run)")
    parser.add_argument("--no-terminal", action="store_true", help="do not draw in the terminal")
    args = parser.parse_args(argv)
    try:
        groups = split_runs(read_usage_log(args.log))
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not groups:
        print(f"error: {args.log} holds no usage records", file=sys.stderr)
        return 1
    name = Path(args.log).name
    runs = {name if len(groups) == 1 else f"{name}, run {run}": series(rows) for run, rows in groups.items()}
    if not args.no_terminal:  # drawn and printed run by run: a reader that leaves stops the drawing
        for number, (title, run) in enumerate(runs.items()):
            print(("\n" if number else "") + terminal(run, title, color=sys.stdout.isatty()))
    if args.png:
        (title, run), *more = runs.items()
        print(f"wrote {compare_png(runs, args.png) if more else write_png(run, args.png, title)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
