"""Kill trials: SIGKILL a real agent run at random moments, resume it, count what went wrong.

Each trial forks a worker that runs a 14-page order audit against the local simulator
(the real SDK over loopback HTTP; claude-opus-5-5, whose thinking blocks the simulator
signs and binds to their prefix, so a history resent with one byte changed is refused), with
pruning (`keep_recent=2, prune_batch=1`) and compaction (`max_context_tokens`) on,
three irreversible refunds and a key revocation (the leaked key in its input), two of
which the model asks for again later, as if it forgot.
The parent kills the worker with SIGKILL at a random moment of its run (one trial in
four is killed a second time, during its resume), then resumes it to the end in a
fresh worker, and checks:

* irreversible_repeats: a refund or revocation that happened more than once (counted in
  the side-effect log the tools append to);
* lost_results: a result recorded in the session that no committed turn carries;
* wrong results (reported when not 0): a committed result that is not its call's (an id
  mix-up: a lookup's result read as the refund's);
* invalid_requests: a request the strict validator or the simulator refused, or a
  final history that is not a valid request.

The simulator restarts with each process, so its tool_use ids restart too: every
resume sees ids reused for different calls (the never-twice ledger must not confuse
them). Workers are forked from a parent that has already imported everything, so a
trial costs well under a second of CPU.

    .venv/bin/python -m benchmarks.kill_trials [--trials 100] [--seed 0]

Prints a table by where the kill landed (the last record on disk when it died), and a
last line of JSON: {"trials": N, "irreversible_repeats": 0, "lost_results": 0, "invalid_requests": 0}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent.ext.sessions import read_session
from agent.messages import blocks, content_text
from agent.testing.validate import validate_request
from benchmarks.kill_scenario import API_KEY, FINAL, IRREVERSIBLE_CALLS, MODEL, answers, life


class Life:
    """A forked worker, polled like `subprocess.Popen` (reaped exactly once)."""

    def __init__(self, workdir: Path, mode: str) -> None:
        (workdir / "ready").unlink(missing_ok=True)
        self.workdir, self.finished = workdir, False
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child
            try:
                life(workdir, mode)
            finally:
                os._exit(1)

    def poll(self) -> bool:
        """True once the worker has exited."""
        if not self.finished:
            self.finished = os.waitpid(self.pid, os.WNOHANG) != (0, 0)
        return self.finished

    def wait(self) -> None:
        if not self.finished:
            os.waitpid(self.pid, 0)
            self.finished = True

    def wait_ready(self) -> bool:
        """Wait until the worker is about to run; False if it exited first."""
        deadline = time.monotonic() + 120
        while not (self.workdir / "ready").exists() and time.monotonic() < deadline:
            if self.poll():
                return False
            time.sleep(0.002)
        return True

    def wait_started(self, nth: int) -> None:
        """Wait until the session holds its `nth` new `started` marker (a refund under way)."""
        session, before = self.workdir / "run.jsonl", None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not self.poll():
            count = session.read_bytes().count(b'{"event":"started"') if session.exists() else 0
            before = count if before is None else before
            if count - before >= nth:
                return
            time.sleep(0.001)

    def kill(self) -> bool:
        """SIGKILL the worker; False if it had already finished."""
        if self.poll():
            return False
        os.kill(self.pid, signal.SIGKILL)
        self.wait()
        return True


# -- checking a trial ----------------------------------------------------------------------------


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().split(b"\n")[:-1] if line.strip()]


@dataclass
class Trial:
    point: str = "-"
    kills: int = 0
    repeats: int = 0
    refunds: int = 0
    unknown: int = 0
    lost: int = 0
    wrong: int = 0
    invalid: int = 0
    failed: list[str] = field(default_factory=list)


def check(workdir: Path, trial: Trial, last: int) -> None:
    """Fill in `trial` from the files the lives left; `last` is the final resume's pid."""
    report = json.loads((workdir / f"report-resume-{last}.json").read_text())
    if "error" in report or not str(report.get("text", "")).startswith(FINAL):
        trial.failed.append(str(report.get("error") or report))
    log = workdir / "refunds.log"
    issued = Counter(log.read_text().split()) if log.exists() else Counter()
    trial.refunds = sum(issued.values())
    trial.repeats = sum(n - 1 for n in issued.values())
    saved = records(workdir / "run.jsonl")
    results = {(e["id"], e["content"]) for e in saved if e["event"] == "result"}
    committed = {
        (b["tool_use_id"], content_text(b.get("content")))
        for e in saved
        if e["event"] == "turn"
        for m in e["messages"]
        for b in blocks(m)
        if b.get("type") == "tool_result"
    }
    trial.lost = len(results - committed)
    if API_KEY.encode() in (workdir / "run.jsonl").read_bytes():
        trial.failed.append("the configured API key was written to the session")
    trial.wrong = sum(not answers(call, text) for call, text in committed_pairs(saved))
    trial.unknown = sum(1 for _, text in results if text.startswith("outcome unknown"))
    rejected = workdir / "rejected.log"
    refused = sum(json.loads(p.read_text()).get("rejected", 0) for p in workdir.glob("report-*.json"))
    trial.invalid = (len(rejected.read_text().splitlines()) if rejected.exists() else 0) + refused
    if not trial.failed:
        final = read_session(workdir / "run.jsonl").messages
        trial.invalid += bool(validate_request({"model": MODEL, "max_tokens": 1, "messages": final}))


def committed_pairs(saved: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """(tool_use, the text of its tool_result) for every call committed by a `turn` record."""
    pairs = []
    for event in saved:
        if event["event"] != "turn":
            continue
        asked: dict[str, dict[str, Any]] = {}
        for message in event["messages"]:
            for block in blocks(message):
                if block.get("type") == "tool_use":
                    asked[block["id"]] = block
                elif block.get("type") == "tool_result" and block["tool_use_id"] in asked:
                    pairs.append((asked[block["tool_use_id"]], content_text(block.get("content"))))
    return pairs


def run_trial(root: Path, number: int, rng: random.Random, span: float) -> Trial:
    """One trial: a random SIGKILL (one in three aimed inside a refund), sometimes a second
    one during the resume, then a resume to the end and the checks."""
    workdir = root / f"trial-{number:03d}"
    workdir.mkdir()
    trial = Trial()
    lives = ["run", *(["resume"] if rng.random() < 0.25 else [])]
    for mode in lives:
        worker = Life(workdir, mode)
        if not worker.wait_ready():
            report = workdir / f"report-{mode}-{worker.pid}.json"
            said = report.read_text() if report.exists() else "no report"
            print(f"trial {number}: the {mode} life ended before it was ready: {said}", file=sys.stderr)
            continue
        if rng.random() < 1 / 3:
            worker.wait_started(rng.randint(1, IRREVERSIBLE_CALLS))
            time.sleep(rng.uniform(0, 0.03))
        else:
            time.sleep(rng.uniform(0, span))
        if worker.kill():
            trial.kills += 1
            if trial.point == "-":
                saved = records(workdir / "run.jsonl")
                trial.point = saved[-1]["event"] if saved else "(nothing)"
    final = Life(workdir, "resume")
    final.wait()
    check(workdir, trial, final.pid)
    return trial


def trial_in_child(root: Path, number: int, seed: int, span: float) -> int:
    """Fork a process that runs one trial and writes it as JSON (the parent stays single-threaded)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            trial = run_trial(root, number, random.Random(seed * 100_003 + number), span)
        except BaseException as error:  # the checks themselves broke: that is a failure to report
            trial = Trial(failed=[f"trial crashed: {type(error).__name__}: {error}"])
        (root / f"trial-{number:03d}.json").write_text(json.dumps(asdict(trial)))
        os._exit(0)
    return pid


def run_all(root: Path, count: int, seed: int, span: float, parallel: int) -> list[Trial]:
    running: set[int] = set()
    for number in range(count):
        if len(running) >= parallel:
            running.discard(os.wait()[0])
        running.add(trial_in_child(root, number, seed, span))
    while running:
        running.discard(os.wait()[0])
    trials = []
    for number in range(count):
        saved = root / f"trial-{number:03d}.json"
        trials.append(Trial(**json.loads(saved.read_text())) if saved.exists() else Trial(failed=["crashed"]))
    return trials


def calibrate(root: Path) -> float:
    """How long one uninterrupted run takes from ready to the end (the kill window)."""
    workdir = root / "calibration"
    workdir.mkdir()
    worker = Life(workdir, "run")
    worker.wait_ready()
    started = time.monotonic()
    worker.wait()
    report = json.loads((workdir / f"report-run-{worker.pid}.json").read_text())
    if "error" in report or report.get("text") != FINAL:
        sys.exit(f"the uninterrupted run failed: {report}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parallel", type=int, default=4, help="trials at once (they mostly wait)")
    args = parser.parse_args()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kill-trials-") as tmp:
        root = Path(tmp)
        span = calibrate(root)
        trials = run_all(root, args.trials, args.seed, span, args.parallel)
    by_point: dict[str, list[Trial]] = {}
    for trial in trials:
        by_point.setdefault(trial.point, []).append(trial)
    print(f"### Kill trials: {args.trials} runs, SIGKILL within the {span:.2f} s a run takes\n")
    print(
        "| killed after record | trials | kills | irreversible done | repeats | outcome unknown | lost "
        "| wrong result | invalid | failed |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for point, group in sorted(by_point.items()):
        names = ("kills", "refunds", "repeats", "unknown", "lost", "wrong", "invalid")
        sums = [sum(getattr(t, name) for t in group) for name in names]
        failed = sum(1 for t in group if t.failed)
        print(f"| {point} | {len(group)} | " + " | ".join(str(s) for s in sums) + f" | {failed} |")
    for trial in trials:
        for failure in trial.failed:
            print(f"failed: {failure}", file=sys.stderr)
    print(f"\n{sum(t.kills for t in trials)} kills in {time.monotonic() - began:.0f} s\n")
    summary = {
        "trials": args.trials,
        "irreversible_repeats": sum(t.repeats for t in trials),
        "lost_results": sum(t.lost for t in trials),
        "invalid_requests": sum(t.invalid for t in trials),
    }
    wrong = sum(t.wrong for t in trials)
    failed = sum(1 for t in trials if t.failed)
    if wrong or failed:  # never silently: the four keys above are the contract, these the extras
        summary.update(wrong_results=wrong, failed_resumes=failed)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
