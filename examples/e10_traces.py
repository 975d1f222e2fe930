"""Lesson 10, traces: the run as OpenTelemetry spans, as Jaeger, Langfuse, Phoenix or Logfire show it.

`Traces` (`agent/ext/otel/`) is one more extension on the seam: no `Agent` keyword, no change
to the loop. It opens a span for the run (`invoke_agent`), one for each model call (`chat`)
and one for each tool call (`execute_tool`), with the attributes of OpenTelemetry's GenAI
semantic conventions: model, tokens in and out, cache read and write, finish reason, tool
name and call id, plus ours: the cost in dollars and what pruning and compaction did (passed
in by `on_event=traces.on_event`). Here the spans go to the SDK's in-memory exporter and are
printed as a tree; for a real viewer, give the provider an `OTLPSpanExporter` instead
(docs/otel.md). Needs the `otel` extra (`pip install -e '.[otel]'`; the dev extra has it).

The model asks for two multiplications in one turn; the tools run in parallel, each on its
own thread, and both spans still hang under the run's span.

What to look for in the output: one `invoke_agent` line with two `chat` and two
`execute_tool` lines indented under it; the tool spans sit between the two model calls, side
by side (the calls ran at once, on two threads); the run's tokens and dollars are the sum of its calls'
and match the `total:` line. No prompt or result text is in any span: content is recorded
only with `Traces(record_content=True)`.

    python -m examples.e10_traces            # on the simulator (or live with ANTHROPIC_API_KEY)
    python -m examples.e10_traces --replay   # from cassettes/examples/e10_traces.yaml
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, RunResult
from agent.ext.otel import Traces
from agent.testing.policies import call, latest_results, prompt_text
from examples._course import Course
from tools import calculator

EXAMPLE = "e10_traces"  # its cassette: cassettes/examples/e10_traces.yaml
PROMPT = "What are 123 × 456 and 789 × 12?"
SYSTEM = "Use the calculator for every product; call it once per product, all in one turn."


def model(body: dict[str, Any]) -> Any:
    """The scripted model (offline only): both products at once, then both results."""
    results = latest_results(body)
    if results:
        return " and ".join(f"{r.input['a']} × {r.input['b']} = {int(r.text):,}" for r in results)
    pairs = re.findall(r"(\d+) × (\d+)", prompt_text(body))
    return ["Two products, two calls.", *(call("calculator", a=int(a), op="*", b=int(b)) for a, b in pairs)]


def describe(span: ReadableSpan) -> str:
    """One line per span: its name, duration and the attributes a viewer would show first."""
    a: dict[str, Any] = dict(span.attributes or {})
    ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    parts = [f"{span.name}  {ms:.1f} ms"]
    if "gen_ai.usage.input_tokens" in a:
        read, write = a["gen_ai.usage.cache_read.input_tokens"], a["gen_ai.usage.cache_creation.input_tokens"]
        tokens_in, tokens_out = a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]
        parts.append(f"in={tokens_in:,} (cache read={read:,} write={write:,}) out={tokens_out:,}")
    if "agent.cost_usd" in a:
        parts.append(f"${a['agent.cost_usd']:.4f}")
    if "gen_ai.response.finish_reasons" in a:
        parts.append("finish=" + ",".join(a["gen_ai.response.finish_reasons"]))
    if "gen_ai.tool.call.id" in a:
        parts.append(f"id={a['gen_ai.tool.call.id']}")
    if span.status.is_ok is False:
        parts.append(f"ERROR {span.status.description}")
    return "  ".join(parts)


def print_tree(spans: Sequence[ReadableSpan]) -> None:
    """The spans as a tree, children under their parent in start order (as a trace viewer shows them)."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)

    def show(span: ReadableSpan, depth: int) -> None:
        print("  " * depth + describe(span))
        for child in children.get(span.context.span_id, []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


def main(argv: Sequence[str] | None = None) -> RunResult:
    course = Course(EXAMPLE, argv)
    exporter = InMemorySpanExporter()  # the console, Jaeger or Phoenix: another exporter, same spans
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    traces = Traces(tracer_provider=provider, record_content=False)
    with course.llm(model) as llm:
        agent = Agent(
            system=SYSTEM,
            tools=[calculator],
            llm=llm,
            max_steps=5,
            extensions=[traces],
            on_event=traces.chained(course.show),  # prunes and compactions reach the spans too
        )
        result = agent.run(PROMPT)
    provider.shutdown()
    print("spans:")
    print_tree(exporter.get_finished_spans())
    print(f"answer: {result.text}")
    course.usage(result.usage)
    return result


if __name__ == "__main__":
    main()
