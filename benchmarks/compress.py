"""Compressor benchmark on real outputs of this machine: ours vs graph-tool-call vs a head/tail cut.

    .venv/bin/pip install graph-tool-call      # for the comparison only, not a dependency
    .venv/bin/python -m benchmarks.compress    # [--budget 2000] [--show ITEM] [--markdown]
    .venv/bin/python -m benchmarks.compress --real   # third-party outputs, ../shared/realdata/

The corpus is built fresh on the machine that runs it: `pip list`, `pip show -f`, `ps`,
`ls -la`, a generated git repository's `git log`, the JSON schema of the SDK's
`Message` model, real pydantic validation errors (as text, and as a FastAPI-style 422
response), a JSON API page and a 503 page served by a loopback `http.server`, a
traceback provoked in a subprocess, a real pytest run on a generated test file, a
log written by `logging`, `/var/log/dpkg.log`, a stdlib source file, and HTML docs
found on disk (Python's own IDLE help page, pydoc output, others if present).

Each item has must-keep facts, computed from the data (never from any output):
its first and last entries, the odd ones in between (an editable install, a
symlink, a merge commit, a refunded order, each failing test and its first error
line, each error in a log, the root cause of a chained exception) and its counts.
A fact is kept when it is a substring of the output (counts: the number as a whole
word). Its position (head / middle / tail) is measured in the input. The same
budget is given to all three compressors. Determinism is checked by re-running
every compressor on the same pickled corpus in subprocesses with different
PYTHONHASHSEEDs and comparing output hashes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from agent.context.artifacts import artifact_name
from agent.context.compress import compress, detect
from agent.context.compressors.http import transcript
from agent.context.compressors.jsonish import dump_full
from benchmarks import compress_corpus as corpus

SEEDS = ("0", "1", "2", "12345")
REAL = Path(__file__).resolve().parents[1].parent / "shared" / "realdata" / "tool-outputs"
"""Real third-party tool outputs (provenance in its README), read at run time, never copied here."""
REAL_FACTS = Path(__file__).resolve().parent / "corpus" / "real_facts.json"
REAL_FACTS_SHA256 = "e5e08767c27d2ec7507ea7399b5415744a4d7e220a486ce1586bd8f4d58021e0"
"""The facts for REAL were written before the compressor ran on it, then frozen: a test fails
when the file changes, so no fact can be bent to fit a result."""
REAL_BUDGETS = (2000, 4000)


@dataclass
class Fact:
    text: str
    where: str = ""
    kind: str = "text"

    def kept(self, output: str, source: str) -> bool:
        """In the output; a count also counts as kept when nothing was cut (every item is there)."""
        if self.kind == "text":
            return self.text in output
        if self.kind == "loose":
            return re.sub(r"\s+", "", self.text) in re.sub(r"\s+", "", output)
        if output == source:
            return True
        n = int(self.text)
        return any(re.search(rf"(?<![\d.,]){re.escape(s)}(?![\d])", output) for s in {str(n), f"{n:,}"})


@dataclass
class Item:
    name: str
    value: Any
    facts: list[Fact] = field(default_factory=list)

    @cached_property
    def text(self) -> str:
        return dump_full(self.value)[0]

    @cached_property
    def html(self) -> bool:
        """HTML, or an HTTP transcript of an HTML page (its body is compressed as HTML)."""
        found = transcript(self.value) if isinstance(self.value, str) else None
        return detect(found.body if found else self.value) == "html"

    @property
    def json_in(self) -> bool:
        if not isinstance(self.value, str):
            return True
        try:
            json.loads(self.value)
            return True
        except ValueError:
            return False


# -- the three contenders ---------------------------------------------------------------


def ours(value: Any, budget: int) -> str:
    text, is_json = dump_full(value)
    return compress(value, budget, pointer=artifact_name("bench", text, is_json=is_json))


def naive(value: Any, budget: int) -> str:
    text = dump_full(value)[0]
    if len(text) <= budget:
        return text
    note = f"\n[... {len(text) - budget} chars cut ...]\n"
    head = (budget - len(note)) * 3 // 5
    tail = budget - len(note) - head
    return text[:head] + note + text[-tail:]


def gtc_compressor() -> Callable[[Any, int], str] | None:
    try:
        from graph_tool_call.compressor import CompressConfig, compress_tool_result
    except ImportError:
        return None

    def run(value: Any, budget: int) -> str:
        return str(compress_tool_result(value, config=CompressConfig(max_chars=budget)))

    return run


def contenders() -> dict[str, Callable[[Any, int], str] | None]:
    return {"ours": ours, "graph-tool-call": gtc_compressor(), "head/tail": naive}


# -- measuring --------------------------------------------------------------------------


def strict_json(text: str) -> bool:
    def reject(constant: str) -> Any:
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=reject)
        return True
    except (ValueError, RecursionError):
        return False


@dataclass
class Run:
    output: str = ""
    crashed: str = ""
    seconds: float = 0.0


def run_one(fn: Callable[[Any, int], str], value: Any, budget: int, repeat: int = 5) -> Run:
    best = float("inf")
    out = Run()
    for _ in range(repeat):
        started = time.process_time()  # CPU time: other processes on the machine do not count
        try:
            output = fn(value, budget)
        except BaseException as error:  # a crash is a result here
            if isinstance(error, KeyboardInterrupt):
                raise
            return Run("", f"{type(error).__name__}", 0.0)
        best = min(best, time.process_time() - started)
        out = Run(output, "", best)
    return out


def hashes(items: list[Item], budget: int) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for name, fn in contenders().items():
        if fn is None:
            continue
        found[name] = {}
        for item in items:
            result = run_one(fn, item.value, budget, repeat=1)
            found[name][item.name] = hashlib.sha256((result.crashed or result.output).encode()).hexdigest()
    return found


def determinism(items: list[Item], budget: int) -> dict[str, bool]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.pkl"
        path.write_bytes(pickle.dumps(items))
        seen: dict[str, set[str]] = {}
        for seed in SEEDS:
            env = {**os.environ, "PYTHONHASHSEED": seed}
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.compress", "--child", str(path), "--budget", str(budget)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
            for name, per_item in json.loads(out).items():
                seen.setdefault(name, set()).add(json.dumps(per_item, sort_keys=True))
    return {name: len(variants) == 1 for name, variants in seen.items()}


def measure(items: list[Item], budget: int) -> tuple[dict[str, dict[str, Run]], dict[str, Any]]:
    runs: dict[str, dict[str, Run]] = {}
    summary: dict[str, Any] = {}
    for name, fn in contenders().items():
        if fn is None:
            continue
        runs[name] = {item.name: run_one(fn, item.value, budget) for item in items}
        kept = total = json_ok = json_in = chars = crashes = 0
        seconds = size = html_seconds = html_size = 0.0
        for item in items:
            run = runs[name][item.name]
            kept += sum(f.kept(run.output, item.text) for f in item.facts)
            total += len(item.facts)
            chars += len(run.output)
            crashes += bool(run.crashed)
            if item.json_in:
                json_in += 1
                json_ok += strict_json(run.output)
            size += len(item.text.encode())
            seconds += run.seconds
            if item.html:
                html_size += len(item.text.encode())
                html_seconds += run.seconds
        summary[name] = {
            "chars": chars,
            "kept": kept,
            "facts": total,
            "json": (json_ok, json_in),
            "crashes": crashes,
            "mbps": size / 1e6 / seconds if seconds else 0.0,
            "html_mbps": html_size / 1e6 / html_seconds if html_seconds else 0.0,
        }
    return runs, summary


# -- reporting --------------------------------------------------------------------------


def report(items: list[Item], budget: int, runs: dict[str, dict[str, Run]], summary: dict[str, Any]) -> None:
    names = list(runs)
    print(
        f"\nBudget {budget:,} chars per result; {len(items)} real outputs; "
        "facts kept = substring of the output.\n"
    )
    head = "| item | kind | input chars | " + " | ".join(f"{n} chars | {n} facts" for n in names) + " |"
    print(head)
    print("|" + "---|" * (3 + 2 * len(names)))
    for item in items:
        cells = [item.name, detect(item.value), f"{len(item.text):,}"]
        for name in names:
            run = runs[name][item.name]
            kept = sum(f.kept(run.output, item.text) for f in item.facts)
            cells += [run.crashed or f"{len(run.output):,}", f"{kept}/{len(item.facts)}"]
        print("| " + " | ".join(cells) + " |")


def summary_table(halves: dict[str, dict[str, Any]], det: dict[str, bool]) -> None:
    """One row per (half, compressor): chars, facts kept, valid JSON, determinism, speed, crashes."""
    print(
        "\n| half | compressor | output chars | facts kept | valid JSON (JSON in) | deterministic | MB/s "
        "| HTML MB/s | crashes |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, summary in halves.items():
        for name, s in summary.items():
            ok, of = s["json"]
            print(
                f"| {label} | {name} | {s['chars']:,} | {s['kept']}/{s['facts']} "
                f"({100 * s['kept'] / max(s['facts'], 1):.1f}%) | {ok}/{of} ({100 * ok / max(of, 1):.0f}%) "
                f"| {'yes' if det.get(name) else 'NO'} | {s['mbps']:.1f} | {s['html_mbps']:.1f} "
                f"| {s['crashes']} |"
            )
    if gtc_compressor() is None:
        print("\ngraph-tool-call is NOT installed: `.venv/bin/pip install graph-tool-call` to compare.")


def robustness(budget: int) -> None:
    print("\nRobustness (not in the totals): does it return, within budget, and valid JSON for JSON in?\n")
    print("| input | " + " | ".join(n for n, fn in contenders().items() if fn) + " |")
    print("|---|" + "---|" * sum(1 for fn in contenders().values() if fn))
    for label, value in corpus.hostile_inputs():
        cells = []
        for fn in contenders().values():
            if fn is None:
                continue
            run = run_one(fn, value, budget, repeat=1)
            if run.crashed:
                cells.append(f"raises {run.crashed}")
            else:
                over = "" if len(run.output) <= budget else f", OVER budget ({len(run.output):,})"
                valid = "valid JSON" if strict_json(run.output) else "not JSON"
                cells.append(f"{len(run.output):,} chars, {valid}{over}")
        print(f"| {label} | " + " | ".join(cells) + " |")


# -- real third-party outputs (../shared/realdata/tool-outputs) ---------------------------


@dataclass
class RealItem:
    name: str
    text: str
    facts: list[Fact]
    half: str

    @cached_property
    def json_in(self) -> bool:
        return strict_json(self.text)


def real_half(name: str) -> str:
    """ "tuning" when the first byte of sha256(file name) is even, else "held-back"."""
    return "tuning" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "held-back"


def real_items(folder: Path = REAL) -> tuple[list[RealItem], list[str]]:
    """The real outputs that are present and unchanged (by SHA-256), and why any was skipped."""
    spec = json.loads(REAL_FACTS.read_text())["files"]
    items: list[RealItem] = []
    skipped: list[str] = []
    for name, entry in sorted(spec.items()):
        path = folder / name
        if not path.is_file():
            skipped.append(f"{name}: absent from {folder}")
            continue
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            skipped.append(f"{name}: changed since its facts were written (SHA-256 differs)")
            continue
        facts = [Fact(text, "", kind) for text, kind in entry["facts"]]
        items.append(RealItem(name, data.decode("utf-8", errors="replace"), facts, real_half(name)))
    return items, skipped


def real_measure(items: list[RealItem], fn: Callable[[Any, int], str], budget: int) -> dict[str, Any]:
    kept = total = over = json_ok = json_in = chars = 0
    per_item: dict[str, tuple[int, int]] = {}
    for item in items:
        output = run_one(fn, item.text, budget, repeat=1).output
        got = sum(f.kept(output, item.text) for f in item.facts)
        per_item[item.name] = (got, len(item.facts))
        kept += got
        total += len(item.facts)
        over += len(output) > budget
        chars += len(output)
        if item.json_in:
            json_in += 1
            json_ok += strict_json(output)
    return {
        "kept": kept,
        "facts": total,
        "over": over,
        "json": (json_ok, json_in),
        "chars": chars,
        "items": per_item,
    }


def peak_ratio(text: str, budget: int = 2000) -> float:
    """tracemalloc's peak while compressing `text`, over the input's size in bytes."""
    import tracemalloc

    tracemalloc.start()
    try:
        compress(text, budget, pointer="bench")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / max(len(text.encode()), 1)


def real_report(folder: Path = REAL, show_items: bool = True) -> dict[str, Any]:
    items, skipped = real_items(folder)
    for reason in skipped:
        print(f"skipped {reason}", file=sys.stderr)
    if not items:
        print(f"\nNo real outputs at {folder}: the --real section needs ../shared/realdata/.")
        return {}
    results: dict[str, Any] = {}
    named = {"ours": ours, "head/tail": naive}
    print(
        f"\n## Real third-party outputs ({len(items)} of {len(items) + len(skipped)} present; "
        "facts frozen by hash)\n"
    )
    print("| half | compressor | budget | facts kept | over budget | valid JSON (JSON in) | output chars |")
    print("|---|---|---|---|---|---|---|")
    for half in ("tuning", "held-back"):
        part = [i for i in items if i.half == half]
        for name, fn in named.items():
            for budget in REAL_BUDGETS:
                r = real_measure(part, fn, budget)
                results[(half, name, budget)] = r
                ok, of = r["json"]
                print(
                    f"| {half} ({len(part)}) | {name} | {budget:,} | {r['kept']}/{r['facts']} "
                    f"({100 * r['kept'] / max(r['facts'], 1):.1f}%) | {r['over']} | {ok}/{of} "
                    f"| {r['chars']:,} |"
                )
    if show_items:
        print(
            "\n| file | half | kind | chars | "
            + " | ".join(f"{n} @{b:,}" for n in named for b in REAL_BUDGETS)
            + " |"
        )
        print("|---|---|---|---|" + "---|" * (len(named) * len(REAL_BUDGETS)))
        for item in items:
            cells = [item.name, item.half, detect(item.text), f"{len(item.text):,}"]
            for name in named:
                for budget in REAL_BUDGETS:
                    got, of = results[(item.half, name, budget)]["items"][item.name]
                    cells.append(f"{got}/{of}")
            print("| " + " | ".join(cells) + " |")
    logs = [i for i in items if detect(i.text) == "log"]
    if logs:
        largest = max(logs, key=lambda i: len(i.text))
        big = "\n".join([largest.text.rstrip("\n")] * max(1, -(-1_100_000 // len(largest.text))))
        print(
            f"\nPeak memory (tracemalloc) / input size: {peak_ratio(largest.text):.2f}x on {largest.name} "
            f"({len(largest.text.encode()):,} bytes); {peak_ratio(big):.2f}x on it repeated to "
            f"{len(big.encode()):,} bytes."
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--show", help="print every contender's output for this item")
    parser.add_argument("--built", action="store_true", help="the corpus built live (first version)")
    parser.add_argument("--real", action="store_true", help="only the real third-party outputs, side by side")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.real:
        real_report()
        return
    if args.child:
        items = pickle.loads(Path(args.child).read_bytes())
        print(json.dumps(hashes(items, args.budget)))
        return
    if args.built:
        with tempfile.TemporaryDirectory() as folder:
            entries = corpus.build(Path(folder))
    else:
        entries = corpus.stored()
    items = [Item(name, value, [Fact(*f) for f in facts]) for name, value, facts in entries]
    if args.show:
        item = next(i for i in items if i.name == args.show)
        for name, fn in contenders().items():
            if fn is not None:
                out = run_one(fn, item.value, args.budget, repeat=1)
                print(f"===== {name} ({len(out.output)} chars) =====\n{out.crashed or out.output}\n")
        for fact in item.facts:
            print(fact.where, repr(fact.text), "ours:", fact.kept(ours(item.value, args.budget), item.text))
        return
    if args.built:
        runs, summary = measure(items, args.budget)
        report(items, args.budget, runs, summary)
        summary_table({"built": summary}, determinism(items, args.budget))
        robustness(args.budget)
        return
    halves: dict[str, dict[str, Any]] = {}
    for label in ("tuning", "held-back"):
        part = [item for item in items if corpus.half(item.name) == label]
        runs, halves[label] = measure(part, args.budget)
        print(f"\n## {label} half ({len(part)} outputs, {sum(len(i.facts) for i in part)} facts)")
        report(part, args.budget, runs, halves[label])
    print("\n## Both halves")
    summary_table(halves, determinism(items, args.budget))
    robustness(args.budget)


if __name__ == "__main__":
    main()
