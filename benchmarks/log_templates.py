"""Log templates: the log compressor's own kinds against Drain3's clusters, on real logs.

    .venv/bin/pip install drain3                  # for the comparison only, not a dependency
    python -m benchmarks.log_templates            # a table per half, then one JSON line

The log compressor groups lines twice: a template (numbers, hex ids and stamps masked) folds
repeats, and a coarse kind (a template's first two words after its source: `Accepted password`,
`Failed password`) ranks one line of each kind, rarest first. Drain3 (a well-kept log template
miner: a fixed-depth parse tree over token counts and leading tokens) could stand in for the
second. Both run through the same `compress_log`, which takes the kinds as an argument, on the
real logs in `../shared/realdata/tool-outputs/` with their must-keep facts (the halves of
`benchmarks.compress --real`); CPU time and peak memory are measured on the ZooKeeper log
repeated to about 1.1 MB.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence

from agent.context.compress import MIN_BUDGET, TARGET, detect
from agent.context.compressors.logs import _MESSAGE, _SOURCE, coarse_kinds, compress_log
from benchmarks.compress import RealItem, real_items

Kinds = Callable[[Sequence[str]], Mapping[str, str]]


def log_budget(budget: int) -> int:
    """What `compress` gives the log compressor of a `budget`."""
    return max(int(budget * TARGET.get("log", 0.8)), MIN_BUDGET)


def drain3_kinds() -> Kinds | None:
    """Drain3 with its defaults (similarity 0.4, depth 4), fed what `coarse_kinds` reads: each
    template's message, its source prefix cut; None when drain3 is not installed."""
    try:
        from drain3 import TemplateMiner
        from drain3.template_miner_config import TemplateMinerConfig
    except ImportError:
        return None

    def kinds(templates: Sequence[str]) -> dict[str, str]:
        config = TemplateMinerConfig()
        config.profiling_enabled = False
        miner = TemplateMiner(config=config)
        out: dict[str, str] = {}
        for template in templates:
            message = _SOURCE.sub("", _MESSAGE.sub("", template, count=1), count=1)
            out[template] = f"cluster {miner.add_log_message(message)['cluster_id']}"
        return out

    return kinds


def kept(items: list[RealItem], kinds: Kinds, budget: int) -> tuple[int, int]:
    """(facts kept, facts) over `items` at `budget`, with the compressor's budget for a log."""
    hits = total = 0
    for item in items:
        out = compress_log(item.text, log_budget(budget), "bench", kinds=kinds)
        assert len(out) <= budget
        hits += sum(fact.kept(out, item.text) for fact in item.facts)
        total += len(item.facts)
    return hits, total


def cost(text: str, kinds: Kinds) -> tuple[float, float]:
    """(CPU ms, peak memory / input size) of one compression of `text` at 2,000 chars: the best of
    three after one to warm up."""
    times = []
    for _ in range(4):
        started = time.process_time()
        compress_log(text, log_budget(2000), "bench", kinds=kinds)
        times.append(time.process_time() - started)
    ms = min(times[1:]) * 1000
    tracemalloc.start()
    compress_log(text, log_budget(2000), "bench", kinds=kinds)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return ms, peak / len(text.encode())


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    items, skipped = real_items()
    if not items:
        print("No real data: " + "; ".join(skipped))
        return
    logs = [item for item in items if detect(item.text) == "log"]
    contenders: dict[str, Kinds | None] = {"ours (first two words)": coarse_kinds, "Drain3": drain3_kinds()}
    big = next(item.text for item in logs if item.name.startswith("log_zookeeper"))
    big *= max(1, 1_100_000 // len(big))
    results: dict[str, dict[str, object]] = {}
    print("| kinds | half | logs | facts @2,000 | facts @4,000 | ms, 1.1 MB log | peak memory / input |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for name, kinds in contenders.items():
        if kinds is None:
            continue
        ms, peak = cost(big, kinds)
        for half in ("tuning", "held-back"):
            part = [item for item in logs if item.half == half]
            at2, n = kept(part, kinds, 2000)
            at4, _ = kept(part, kinds, 4000)
            print(f"| {name} | {half} | {len(part)} | {at2}/{n} | {at4}/{n} | {ms:,.0f} | {peak:.2f}x |")
            results.setdefault(name, {})[half] = [at2, at4, n]
        results[name]["ms"], results[name]["peak"] = round(ms), round(peak, 2)
    if contenders["Drain3"] is None:
        print("\ndrain3 is NOT installed: `.venv/bin/pip install drain3` to compare.")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
