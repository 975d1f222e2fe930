"""Figures in the docs are the benchmarks' own output: write them in, or check they have not drifted.

    python -m benchmarks.figures            # rewrite every marked region from the benchmarks
    python -m benchmarks.figures --check    # exit 1 and show a diff where a region has drifted

A region is marked in Markdown by two comments, which do not render:

    <!-- figures: economics.tables -->
    ...exactly what that part of the benchmark prints...
    <!-- /figures -->

`economics.tables` names the part `tables` of `benchmarks.economics.figures()`. Only
deterministic benchmarks are quoted this way (the economics run is seeded and simulated);
timings vary by machine, so the pages that show them say which command prints them instead.
`tests/core/test_figures.py` runs the check, so a changed figure fails the suite until the
docs are regenerated.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/*.md", "benchmarks/README.md")
REGION = re.compile(r"(<!-- figures: (\w+)\.(\w+) -->\n)(.*?)(<!-- /figures -->)", re.S)


def pages(root: Path = ROOT) -> list[Path]:
    return sorted({path for pattern in PAGES for path in root.glob(pattern)})


def render(text: str, source: Callable[[str], dict[str, str]]) -> str:
    """`text` with every marked region replaced by the part it names."""

    def fill(match: re.Match[str]) -> str:
        part = source(match[2]).get(match[3])
        if part is None:
            raise KeyError(f"benchmarks.{match[2]}.figures() has no part {match[3]!r}")
        return f"{match[1]}{part.rstrip()}\n{match[5]}"

    return REGION.sub(fill, text)


def benchmark_parts() -> Callable[[str], dict[str, str]]:
    """Each benchmark's `figures()`, run once however many regions quote it."""
    done: dict[str, dict[str, str]] = {}

    def parts(name: str) -> dict[str, str]:
        if name not in done:
            done[name] = importlib.import_module(f"benchmarks.{name}").figures()
        return done[name]

    return parts


def drift(root: Path = ROOT, source: Callable[[str], dict[str, str]] | None = None) -> list[str]:
    """A unified diff per page whose regions differ from what the benchmarks print now."""
    source = source or benchmark_parts()
    diffs = []
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        if REGION.search(text) is None:
            continue
        wanted = render(text, source)
        if wanted != text:
            name = str(page.relative_to(root))
            lines = difflib.unified_diff(
                text.splitlines(), wanted.splitlines(), name, f"{name} (now)", lineterm=""
            )
            diffs.append("\n".join(lines))
    return diffs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report drift (exit 1 if any)")
    args = parser.parse_args(argv)
    source = benchmark_parts()
    if args.check:
        diffs = drift(ROOT, source)
        print("\n\n".join(diffs) if diffs else "every figure matches its benchmark")
        return 1 if diffs else 0
    for page in pages():
        text = page.read_text(encoding="utf-8")
        wanted = render(text, source)
        if wanted != text:
            page.write_text(wanted, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
