"""`agent.ext.charts.chart` draws what the usage log says: the PNG decodes, its bars and line
are the log's numbers."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("plotext")

from matplotlib.image import imread

from agent.ext.charts import chart
from benchmarks import economics
from examples import e06_caching

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real usage log: the caching example on the simulator (cache reads and writes, priced)."""
    path = tmp_path_factory.mktemp("chart") / "usage.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        with contextlib.redirect_stdout(io.StringIO()):
            e06_caching.main(["-v", "0", "--usage-log", str(path)])
    return path


def records(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_series_are_the_logs_numbers(log: Path) -> None:
    rows = records(log)
    run_series = chart.series(chart.read_usage_log(log))
    assert run_series.calls == tuple(str(r["step"]) for r in rows)
    assert run_series.cache_read == tuple(r["cache_read"] for r in rows)
    assert run_series.cache_write == tuple(r["cache_write"] for r in rows)
    assert run_series.uncached == tuple(r["uncached"] for r in rows)
    assert run_series.cumulative_usd[-1] == pytest.approx(sum(r["cost_usd"] for r in rows))
    assert sum(run_series.cache_read) > 0  # the example caches: the chart has something to show


def test_the_png_decodes_and_plots_the_log(log: Path, tmp_path: Path) -> None:
    run_series = chart.series(chart.read_usage_log(log))
    path = chart.write_png(run_series, tmp_path / "run.png")
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 400
    figure = chart.figure(run_series)
    bars, money = figure.axes
    n = len(run_series.calls)
    heights = [round(p.get_height()) for p in bars.patches]
    assert heights == [*run_series.uncached, *run_series.cache_read, *run_series.cache_write]
    stacked_on = [round(p.get_y()) for p in bars.patches[2 * n :]]  # writes sit on uncached + read
    assert stacked_on == [u + r for u, r in zip(run_series.uncached, run_series.cache_read, strict=True)]
    assert list(money.lines[0].get_ydata()) == pytest.approx(run_series.cumulative_usd)


def test_the_terminal_chart_names_the_run_and_its_parts(log: Path) -> None:
    run_series = chart.series(chart.read_usage_log(log))
    text = chart.terminal(run_series, "caching", color=False)
    assert f"caching: {len(run_series.calls)} calls, ${run_series.cumulative_usd[-1]:.4f}" in text
    assert "cache read" in text and "cache write" in text and "cumulative $" in text
    assert "\x1b[" not in text


def test_summary_calls_are_marked(tmp_path: Path) -> None:
    rows = [
        {"step": 1, "uncached": 10, "cache_read": 0, "cache_write": 5, "cost_usd": 0.5, "purpose": "step"},
        {"step": 2, "uncached": 7, "cache_read": 0, "cache_write": 0, "cost_usd": None, "purpose": "summary"},
    ]
    run_series = chart.series(rows)
    assert run_series.calls == ("1", "2s") and run_series.unpriced == 1
    assert [p.get_hatch() for p in chart.figure(run_series).axes[0].patches][:2] == [None, "//"]


def test_the_command_draws_both_and_refuses_a_bad_log(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "out.png"
    assert chart.main([str(log), "--png", str(png)]) == 0
    assert imread(png).ndim == 3 and "prompt tokens per call" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 1}\n')
    assert chart.main([str(bad), "--no-terminal"]) == 1
    assert "bad.jsonl:1: not a usage record" in capsys.readouterr().err


def test_economics_writes_one_chart_comparing_its_configurations(tmp_path: Path) -> None:
    outcomes = economics.run_all(4, ["naive", "all"])
    path = economics.write_chart(outcomes, str(tmp_path / "economics.png"))
    assert imread(path).ndim == 3
    runs = {o.name: chart.series([u.to_json() for u in o.result.steps]) for o in outcomes}
    panels = [ax for ax in chart.compare_figure(runs).axes if ax.get_visible() and ax.patches]
    assert [ax.get_title().split(":")[0] for ax in panels] == ["naive", "all"]
    for ax, name in zip(panels, runs, strict=True):
        assert [round(p.get_height()) for p in ax.patches][: len(runs[name].calls)] == list(
            runs[name].uncached
        )


@pytest.mark.slow  # imports agent in a fresh subprocess
def test_the_framework_never_imports_the_plotting_libraries() -> None:
    import subprocess
    import sys

    plotting = "('matplotlib', 'plotext', 'agent.ext.charts.chart')"
    code = f"import agent, sys; print(sorted(m for m in {plotting} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def usage_rows(*runs: int, run_ids: bool = False) -> list[dict[str, object]]:
    """Usage records of runs of the given lengths, one after the other, as one log holds them."""
    return [
        {"step": step, "uncached": 400, "cache_read": 300 * step, "cache_write": 200, "cost_usd": 0.01}
        | ({"run_id": f"run-{number}"} if run_ids else {})
        for number, steps in enumerate(runs, 1)
        for step in range(1, steps + 1)
    ]


def test_a_monochrome_chart_tells_its_parts_apart_by_glyph() -> None:
    text = chart.terminal(chart.series(usage_rows(4)), "piped", color=False)
    for part, glyph in chart.GLYPHS.items():
        assert f"{glyph * 2} {chart.LABELS[part]}" in text  # the legend names the glyph
        assert glyph * 8 in text  # and the bars are drawn with it
    assert len(set(chart.GLYPHS.values())) == len(chart.PARTS)


def test_a_log_of_two_runs_is_charted_run_by_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert {run: len(rows) for run, rows in chart.split_runs(usage_rows(3, 2)).items()} == {"#1": 3, "#2": 2}
    interleaved = usage_rows(2, 2, run_ids=True)
    interleaved[1], interleaved[2] = interleaved[2], interleaved[1]  # two runs writing at once
    assert {run: [r["step"] for r in rows] for run, rows in chart.split_runs(interleaved).items()} == {
        "run-1": [1, 2],
        "run-2": [1, 2],
    }

    log = tmp_path / "usage.jsonl"
    log.write_text("".join(json.dumps(row) + "\n" for row in usage_rows(3, 2)))
    png = tmp_path / "runs.png"
    assert chart.main([str(log), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    first, second = out.index("usage.jsonl, run #1: 3 calls"), out.index("usage.jsonl, run #2: 2 calls")
    assert first < second and "5 calls" not in out
    assert imread(png).shape[:2] == (400, 1100)  # `compare_figure`: a row of two panels, one per run


@pytest.mark.slow  # runs the command in a subprocess
def test_the_chart_command_ends_quietly_when_its_reader_leaves(tmp_path: Path) -> None:
    log = tmp_path / "usage.jsonl"  # 40 runs: far more chart than a pipe holds
    log.write_text("".join(json.dumps(row) + "\n" for row in usage_rows(*[3] * 40)))
    assert cut_after_one_line([sys.executable, "-m", "agent.ext.charts.chart", str(log)]) == (141, "")


def cut_after_one_line(command: list[str]) -> tuple[int, str]:
    """Run `command` as `command | head -1` would: read one line, close the pipe, and give back
    the exit code and what it wrote to stderr."""
    with subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline()
        process.stdout.close()
        errors = process.stderr.read()
        return process.wait(timeout=60), errors
