"""The examples' flags, and the printers each example hands to its agent itself.

    (no flag)   offline: the local strict simulator, `MessagesSimulator(model)` (real HTTP;
                the example's scripted model answers); live when ANTHROPIC_API_KEY is set
    --live      live, on the Anthropic API (needs ANTHROPIC_API_KEY)
    --replay    replay cassettes/examples/<name>.yaml: no server, no network, and any change
                in what is sent fails with a diff; --record re-records it (offline too)
    -v 0|1|2    0: the answer and totals (and what an example prints itself); 1 (default):
                + the usage table, prunes, compactions; 2: + every tool call and result
    --usage-log PATH   append result.usage as JSON lines (`python -m agent.ext.charts.chart`)

Nothing here touches an agent: an example passes `course.llm(model)` (or `course.client`,
`course.async_client`) and `on_event=course.show` itself, and prints its own result.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import anthropic

from agent import LLM, AnthropicLLM, Event, RunUsage
from agent.testing import cassettes
from agent.testing.simulator import SERVER_NAME, MessagesSimulator, Policy

CASSETTE_DIR = Path(__file__).resolve().parents[1] / "cassettes" / "examples"


class Course:
    def __init__(self, name: str, argv: Sequence[str] | None = None) -> None:
        flags = argparse.ArgumentParser(prog=f"python -m examples.{name}")
        for flag in ("--replay", "--record", "--live"):
            flags.add_argument(flag, action="store_true")
        flags.add_argument("-v", "--verbosity", type=int, choices=(0, 1, 2), default=1)
        flags.add_argument("--usage-log", metavar="PATH")
        args = flags.parse_args(argv)
        if args.replay and (args.record or args.live):
            flags.error("--replay excludes --record and --live")
        live = args.live or bool(os.environ.get("ANTHROPIC_API_KEY"))
        self.mode = "replay" if args.replay else "live" if live else "simulator"
        self.name, self.record, self.verbosity = name, args.record, args.verbosity
        self.usage_log, self.cassette = args.usage_log, CASSETTE_DIR / f"{name}.yaml"

    def say(self, line: str, level: int = 0) -> None:
        if self.verbosity >= level:
            print(line, flush=True)

    @contextmanager
    def llm(
        self, model: Policy, summarizer: Policy | None = None, moves_cache_prefix: bool = False
    ) -> Iterator[LLM]:
        """The `LLM` (the official SDK underneath) for `Agent(llm=...)`, while the block runs."""
        with self._connection(model, summarizer, moves_cache_prefix) as settings:
            taped = self.mode == "replay" or (self.record and self.mode == "live")
            yield cassettes.CassetteLLM(**settings) if taped else AnthropicLLM(**settings)

    @contextmanager
    def client(self, model: Policy) -> Iterator[anthropic.Anthropic]:
        """A bare `anthropic.Anthropic` client, while the block runs (e00: no framework)."""
        with self._connection(model, None, False) as settings:
            yield anthropic.Anthropic(**settings)

    @contextmanager
    def async_client(
        self, model: Policy, *, clock: Callable[[], float] | None = None
    ) -> Iterator[anthropic.AsyncAnthropic]:
        """A bare `anthropic.AsyncAnthropic` client, while the block runs (e11: `BatchLLM` takes one).

        `clock` is the simulator's (default `time.monotonic`), which stamps a batch's `created_at`
        and `ended_at`: a clock that does not move keeps them, and so the cassette, the same on
        every recording. Only the offline simulator reads it; replay and live ignore it."""
        with self._connection(model, None, False, clock) as settings:
            yield anthropic.AsyncAnthropic(**settings)

    @contextmanager
    def _connection(
        self, model: Policy, summarizer: Policy | None, moves: bool, clock: Callable[[], float] | None = None
    ) -> Iterator[dict[str, Any]]:
        where = self.cassette.relative_to(CASSETTE_DIR.parents[1])
        if self.mode == "replay":
            if not self.cassette.exists():
                raise SystemExit(f"no cassette at {where}; record one with --record")
            self.say(f"offline: replaying {where} (no server, no network)")
            with _cassette(self.cassette, "none"):
                yield {"base_url": cassettes.REPLAY_BASE_URL, "api_key": "replay", "max_retries": 0}
            return
        provenance = {"test": f"examples/{self.name}.py::EXAMPLE", "moves_cache_prefix": moves}
        with _cassette(self.cassette, "all") if self.record else nullcontext() as tape:
            if self.mode == "live":
                self.say("live: calling the Anthropic API")
                cassettes.stamp(tape, recorded_on="api", **provenance)
                yield {"max_retries": 0} if self.record else {}
            else:
                timing = {} if clock is None else {"clock": clock}
                with MessagesSimulator(model, summarizer=summarizer, **timing) as sim:
                    self.say(
                        f"offline: no ANTHROPIC_API_KEY, so this runs on the local strict simulator "
                        f"({SERVER_NAME}) with the scripted model; token counts are its estimates"
                    )
                    cassettes.stamp(tape, recorded_on="simulator", **provenance)
                    yield {"base_url": sim.base_url, "api_key": "sim", "max_retries": 0}
        if self.record:
            self.say(f"recorded {where}")

    def show(self, event: Event) -> None:
        """For `Agent(on_event=...)`: what the context economy did, under its step (-v 1), and
        every tool call with its arguments and every result, shortened (-v 2)."""
        tokens = f"history ~{event.tokens_before:,} -> ~{event.tokens_after:,} tokens"
        if event.kind == "tool_call":
            arguments = json.dumps(dict(event.input or {}), ensure_ascii=False)
            self.say(f"  [step {event.step}] -> {event.tool} {arguments}", 2)
            return
        if event.kind == "tool_result":
            text = " ".join(event.text.split())  # on one line, shortened
            text = text if len(text) <= 120 else f"{text[:119]}… ({len(event.text):,} chars)"
            error = " (error)" if event.is_error else ""
            self.say(f"  [step {event.step}] <- {event.tool}{error}: {text}", 2)
            return
        if event.kind == "prune":
            what = f"pruned {len(event.pruned)} result(s): {', '.join(event.pruned)}; {tokens} ({event.text})"
        elif event.kind == "compact":
            what = f"compacted: {event.folded} messages folded into a summary; {tokens}; the summary:"
            what += "".join(f"\n  | {line}" for line in event.text.splitlines())
        elif event.kind == "retry":
            what = f"retried: {event.text}"
        else:
            return
        self.say(f"  [step {event.step}] {what}", 1)

    def usage(self, usage: RunUsage) -> None:
        """`result.usage` as a table: a line per model call (-v 1) with the run's hit rate so far."""
        read = prompt = 0
        for step in usage.steps:
            read, prompt = read + step.cache_read, prompt + step.prompt
            effort = f" effort={step.effort}" if step.effort else ""
            self.say(step.line(read / prompt if prompt else 0.0) + effort, 1)
        self.say(f"total: {usage.summary()}")
        if self.usage_log:
            with open(self.usage_log, "a", encoding="utf-8") as log:
                log.writelines(json.dumps(s.to_json(), sort_keys=True) + "\n" for s in usage.steps)


@contextmanager
def _cassette(path: Path, record_mode: str) -> Iterator[Any]:
    import vcr  # type: ignore[import-untyped]  # a dev dependency, needed only for cassettes

    if record_mode == "all" and path.exists():
        path.unlink()
    recorder = cassettes.configure(vcr.VCR())
    with recorder.use_cassette(str(path), record_mode=record_mode, **cassettes.vcr_config()) as cassette:
        yield cassette
