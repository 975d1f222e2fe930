"""OpenTelemetry traces of agent runs, in the GenAI semantic conventions (the `otel` extra).

    from agent.ext.otel import Traces
    traces = Traces(tracer_provider=provider)         # record_content=False: no prompts, no results
    agent = Agent(..., extensions=[traces], on_event=traces.on_event)  # on_event: prune/compact too

One `invoke_agent` span per run, a `chat` span per model call and an `execute_tool` span per
tool call, both children of the run's span (parallel tool threads and `arun` included), so a
run reads in Jaeger, Langfuse, Phoenix or Logfire like the runs of the frameworks that emit the
same conventions. Nothing of OpenTelemetry is imported by the core or by a run without this.
"""

from __future__ import annotations

from agent.ext.otel.traces import SEMCONV_VERSION, Traces

__all__ = ["SEMCONV_VERSION", "Traces"]
