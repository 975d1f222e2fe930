"""The docs quote the benchmarks' figures through marked regions, and the suite fails when they drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import figures

PAGE = "Intro.\n<!-- figures: economics.headline -->\n{}\n<!-- /figures -->\nAfter.\n"


def parts(name: str) -> dict[str, str]:
    assert name == "economics"
    return {"headline": "It costs 3.1%.", "tables": "| a |"}


def test_a_region_that_differs_from_its_benchmark_is_reported_and_rewritten(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(PAGE.format("It costs 3.0%."), encoding="utf-8")
    (diff,) = figures.drift(tmp_path, parts)
    assert "-It costs 3.0%." in diff and "+It costs 3.1%." in diff
    fixed = figures.render((tmp_path / "README.md").read_text(encoding="utf-8"), parts)
    assert fixed == PAGE.format("It costs 3.1%.")
    (tmp_path / "README.md").write_text(fixed, encoding="utf-8")
    assert figures.drift(tmp_path, parts) == []


def test_a_region_naming_a_part_the_benchmark_lacks_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(PAGE.replace("headline", "nothing").format("x"), encoding="utf-8")
    with pytest.raises(KeyError, match="no part 'nothing'"):
        figures.drift(tmp_path, parts)


def test_the_readme_quotes_the_economics_headline() -> None:
    text = (figures.ROOT / "README.md").read_text(encoding="utf-8")
    assert "<!-- figures: economics.headline -->" in text


@pytest.mark.slow
def test_every_figure_in_the_docs_is_what_its_benchmark_prints_today() -> None:
    from benchmarks import peers

    if set(peers.available()) != set(peers.PEERS):
        pytest.skip("the `peers` extra is not installed (Python 3.10?): the incident tables quote them")
    diffs = figures.drift()
    assert not diffs, "figures drifted; run `python -m benchmarks.figures`:\n" + "\n\n".join(diffs)
