"""The shared runner every example uses: offline by default, live with a key, recordable.

Contract for an example module (`examples/<name>.py`, run as `python -m examples.<name>`):

    from agent import LLM, Agent
    from examples._runner import Example, main

    def make_agent(llm: LLM) -> Agent:          # build the agent around the LLM you are given
        return Agent(system=..., tools=[...], llm=llm)

    def policy(body: dict) -> Any:              # the scripted model (see agent.testing.policies):
        ...                                     # read the request, answer; stateless is best

    EXAMPLE = Example(name="<name>", prompt="...", make_agent=make_agent, policy=policy)
    #   optional: summarizer=<policy for tool-less calls>, moves_cache_prefix=True (compaction)

    if __name__ == "__main__":
        raise SystemExit(main(EXAMPLE))

What `main` does, by flag:

    (no flag)   no ANTHROPIC_API_KEY: runs the real loop, real SDK and real tools against the
                local strict simulator answering with `policy`, and says plainly it is offline.
                With the key: runs live against the API (the policy is not used).
    --replay    replays `cassettes/examples/<name>.yaml`: no server, no network, and any change
                in what the framework sends fails with a diff.
    --record    re-records that cassette: on the simulator without a key, live with one.

Each model call prints the framework's usage line plus the size of the request body sent
(`sent=12,345 B`), and every prune, compaction and warning prints under its step
(`--verbosity 0|1|2`, see `examples._watch`); the end prints the answer (or why the run
stopped: a budget or a failure) and the totals. `main` returns 0 when the run ended
normally or by a budget it reports, 1 on a failure (a model call that failed, a missing
cassette).

Tests call `run(EXAMPLE, mode)` directly and get an `ExampleRun` back.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anthropic.types import Message

from agent import LLM, Agent, AgentError, AnthropicLLM, ModelCallFailed, RunResult, RunUsage, Usage
from agent.context.compact import SUMMARIZER_SYSTEM
from agent.llm import Delta, StreamingLLM
from agent.models import ModelTable
from agent.testing import cassettes
from agent.testing.simulator import SERVER_NAME, MessagesSimulator, Policy
from examples._watch import Watch

__all__ = ["CASSETTE_DIR", "Example", "ExampleRun", "choose_mode", "main", "run"]

CASSETTE_DIR = Path(__file__).resolve().parents[1] / "cassettes" / "examples"
MODES = ("simulator", "live", "replay")


@dataclass(frozen=True)
class Example:
    """One runnable teaching example."""

    name: str
    prompt: str
    make_agent: Callable[[LLM], Agent]
    policy: Policy
    summarizer: Policy | None = None
    moves_cache_prefix: bool = False
    """True when the run rewrites its cached prefix on purpose (compaction, pruning batches)."""
    prelude: Callable[[Callable[[str], None]], None] | None = None
    """Runs first, printing through the function it is given (e05: the same agent on a fake)."""


@dataclass
class ExampleRun:
    """What one run did: how it ran, what it returned, what it sent, what it printed."""

    mode: str
    result: RunResult | None = None
    stopped: AgentError | None = None
    sent_bytes: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The run ended with an answer or a budget it reported; not by a failure."""
        return self.result is not None and not isinstance(self.stopped, ModelCallFailed)


def choose_mode(replay: bool, environ: Mapping[str, str]) -> str:
    """replay if asked, live with an API key, else the simulator."""
    if replay:
        return "replay"
    return "live" if environ.get("ANTHROPIC_API_KEY") else "simulator"


class _Meter:
    """An `LLM` wrapper that prints each call's usage line with the size of what was sent;
    a compaction's summary call is labelled as one, under the step that needed it."""

    def __init__(self, llm: LLM, models: ModelTable, watch: Watch, sent: list[int]) -> None:
        self.llm, self.models, self.watch, self.sent = llm, models, watch, sent
        self.usage = RunUsage()

    def create(self, request: Mapping[str, Any]) -> Message:
        return self.stream(request)

    def stream(self, request: Mapping[str, Any], on_delta: Delta | None = None) -> Message:
        """Metered like `create`; a streaming `LLM` underneath still reports its deltas."""
        size = len(json.dumps(request, ensure_ascii=False, separators=(",", ":"), default=str).encode())
        if on_delta is not None and isinstance(self.llm, StreamingLLM):
            response = self.llm.stream(request, on_delta)
        else:
            response = self.llm.create(request)
        self.sent.append(size)
        effort = (request.get("output_config") or {}).get("effort")
        step = self.watch.step or len(self.sent)
        record = Usage.from_message(step, response, effort=effort, models=self.models)
        summary = request.get("system") == SUMMARIZER_SYSTEM
        self.usage.steps.append(replace(record, purpose="summary") if summary else record)
        line = record.line(self.usage.cache_hit_ratio)
        if summary:
            line = f"[step {step} summary call]" + line[len(f"[step {step}]") :]
        self.watch.show(f"{line}{f' effort={effort}' if effort else ''} sent={size:,} B")
        return response

    def count_tokens(self, request: Mapping[str, Any]) -> int:
        count: int = self.llm.count_tokens(request)  # type: ignore[attr-defined]
        return count


@contextmanager
def _connect(example: Example, mode: str, record: bool, say: Callable[[str], None]) -> Iterator[LLM]:
    """The LLM for `mode`, with the simulator running and the cassette open as needed."""
    path = CASSETTE_DIR / f"{example.name}.yaml"
    if mode == "replay":
        if not path.exists():
            raise FileNotFoundError(f"no cassette at {path}; record one with --record")
        say(f"offline: replaying {path.relative_to(CASSETTE_DIR.parents[1])} (no server, no network)")
        with _cassette(path, "none"):
            yield cassettes.CassetteLLM(base_url=cassettes.REPLAY_BASE_URL, api_key="replay", max_retries=0)
        return
    with _cassette(path, "all") if record else _nothing() as cassette:
        if mode == "live":
            say("live: ANTHROPIC_API_KEY is set, calling the Anthropic API")
            cassettes.stamp(cassette, recorded_on="api", **_provenance(example))
            yield cassettes.CassetteLLM(max_retries=0) if record else AnthropicLLM()
            return
        with MessagesSimulator(example.policy, summarizer=example.summarizer) as sim:
            say(
                f"offline: no ANTHROPIC_API_KEY, so this runs on the local strict simulator "
                f"({SERVER_NAME}) with a scripted policy; token counts are its estimates"
            )
            cassettes.stamp(cassette, recorded_on="simulator", **_provenance(example))
            yield sim.llm()
    if record:
        say(f"recorded {path.relative_to(CASSETTE_DIR.parents[1])}")


def _provenance(example: Example) -> dict[str, Any]:
    return {"test": f"examples/{example.name}.py::EXAMPLE", "moves_cache_prefix": example.moves_cache_prefix}


@contextmanager
def _cassette(path: Path, record_mode: str) -> Iterator[Any]:
    import vcr  # type: ignore[import-untyped]  # dev dependency, needed only for cassettes

    if record_mode == "all" and path.exists():
        path.unlink()
    recorder = cassettes.configure(vcr.VCR())
    with recorder.use_cassette(str(path), record_mode=record_mode, **cassettes.vcr_config()) as cassette:
        yield cassette


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


def run(
    example: Example,
    mode: str,
    *,
    record: bool = False,
    out: Callable[[str], None] = print,
    verbosity: int = 1,
    usage_log: str | None = None,
) -> ExampleRun:
    """Run `example` in `mode` ("simulator", "live" or "replay"); see the module docstring
    and `examples._watch` for what each `verbosity` prints."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    outcome = ExampleRun(mode)

    def say(line: str) -> None:
        outcome.lines.append(line)
        out(line)

    if example.prelude is not None:
        example.prelude(say)
    try:
        with _connect(example, mode, record, say) as llm:
            agent = example.make_agent(llm)
            if usage_log:
                agent.usage_log = (
                    usage_log  # one JSON line per call: `python -m agent.ext.charts.chart` draws it
                )
            watch = Watch(say, verbosity, forward=agent.on_event)
            agent.on_event = watch
            agent.llm = _Meter(llm, agent.models, watch, outcome.sent_bytes)
            say(f"prompt: {example.prompt}")
            try:
                with watch.logs():
                    outcome.result = agent.run(example.prompt)
            except AgentError as error:
                outcome.stopped, outcome.result = error, error.result
    except FileNotFoundError as error:
        say(f"failed: {error}")
        return outcome
    _report(outcome, say)
    return outcome


def _report(outcome: ExampleRun, say: Callable[[str], None]) -> None:
    if outcome.stopped is not None:
        say(f"stopped: {outcome.stopped}")
    if outcome.result is not None:
        if outcome.result.text:
            say(f"{'last text' if outcome.stopped else 'answer'}: {outcome.result.text}")
        say(f"total: {outcome.result.usage.summary()}; sent {sum(outcome.sent_bytes):,} B in all")


def main(
    example: Example, argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> int:
    """The command line of every example (see the module docstring)."""
    parser = argparse.ArgumentParser(prog=f"python -m examples.{example.name}", description=example.prompt)
    parser.add_argument("--replay", action="store_true", help="replay the recorded cassette (no server)")
    parser.add_argument("--record", action="store_true", help="re-record the cassette")
    parser.add_argument(
        "-v",
        "--verbosity",
        type=int,
        choices=(0, 1, 2),
        default=1,
        help="0: answer and totals; 1 (default): + usage lines, prunes, compactions, warnings; 2: + tools",
    )
    parser.add_argument("--usage-log", metavar="PATH", help="append each call's usage (JSON lines) here")
    args = parser.parse_args(argv)
    if args.replay and args.record:
        parser.error("--replay and --record exclude each other")
    mode = choose_mode(args.replay, os.environ if environ is None else environ)
    outcome = run(example, mode, record=args.record, verbosity=args.verbosity, usage_log=args.usage_log)
    sys.stdout.flush()
    return 0 if outcome.ok else 1
