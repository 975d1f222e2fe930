"""`Traces`: each run as OpenTelemetry spans, in the GenAI semantic conventions (v1.44.0).

Why spans and not another log: the viewers people already run (Jaeger, Langfuse, Phoenix,
Logfire) read these conventions, so a run shows there beside the rest of a service's traces,
nested under whatever span was current when it started, with its tokens, cost and tools.

    invoke_agent <name>        the run (INTERNAL): totals, stop reason, error status if it failed
      chat <model>             each model call (CLIENT): tokens, cache, finish reason, cost in $
      execute_tool <tool>      each tool call (INTERNAL), parallel threads included

Spans are opened and closed by the seam's hooks (`request` opens a model call's span just
before the call, `response` closes it; `before_tool`/`after_tool` bracket a tool call), and
each names its parent explicitly: a sync tool runs on a thread with a fresh `contextvars`
context, so "the current span" there is not the run's. What a run keeps lives in
`run.extras`, so one `Traces` serves concurrent runs. The run's span is also made current
for the run's task (`start` to `finish`), so spans the LLM client or an async tool opens nest
under it, and `on_event` can find its run: pruning and compaction are `Event`s only, which
extensions do not receive, hence `Agent(on_event=traces.on_event)` for them.

Content (prompts, replies, tool arguments and results) is recorded only with
`record_content=True`, in the convention's `gen_ai.input.messages` / `gen_ai.output.messages`
/ `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result` attributes: it may hold what a
trace backend should not.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import Token
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from agent.events import Event
from agent.extension import Extension
from agent.messages import final_text
from agent.render import safe_text

if TYPE_CHECKING:
    from anthropic.types import Message

    from agent.state import RunState
    from agent.tools import ToolCall, ToolOutcome
    from agent.usage import Usage

__all__ = ["CONTENT_CHARS", "PROVIDER", "SEMCONV_VERSION", "Traces"]

SEMCONV_VERSION = "1.44.0"
"""The OpenTelemetry semantic conventions (GenAI, still "development" status) these spans follow."""
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
PROVIDER = "anthropic"
CONTENT_CHARS = 100_000
"""Most characters of one recorded content attribute (a tool result can be megabytes)."""

Attributes = dict[str, Any]


@dataclass
class _Run:
    """What one run's tracing keeps (in `run.extras`): its open spans and running counts."""

    span: Span
    owner: RunState
    """The run's own state: `request` also sees copies of it (compaction measuring candidates)."""
    token: Token[otel_context.Context] | None = None
    chat: Span | None = None
    booked: int = 0
    """Index in `run.usage.steps` where the open (or next) model call's records start."""
    last_end: int | None = None
    """When the last model call's span ended (ns): the start of a call no `request` hook saw."""
    tools: dict[str, Span] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    notes: list[tuple[int, Event]] = field(default_factory=list)
    """prune/compact events (with their time) since the last model call's span opened."""
    stop_reason: str | None = None
    calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    pruned: int = 0
    compactions: int = 0
    retries: int = 0


class Traces(Extension):
    """One span per run, per model call and per tool call; see the module docstring.

    `tracer_provider`: where spans go (default: the global one, `trace.get_tracer_provider()`,
    never set here). `record_content`: also record prompts, replies and tool arguments/results.
    `agent_name`: `gen_ai.agent.name`, and the run span's name `invoke_agent <agent_name>`.
    List it last in `extensions=` to record each request as the other extensions left it.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        record_content: bool = False,
        agent_name: str = "agent",
    ) -> None:
        if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
            raise TypeError(
                "tracer_provider takes an OpenTelemetry TracerProvider "
                f"(opentelemetry.sdk.trace.TracerProvider), not {type(tracer_provider).__name__}"
            )
        if not isinstance(record_content, bool):
            raise TypeError(f"record_content must be True or False, not {record_content!r}")
        if not isinstance(agent_name, str) or not agent_name:
            raise TypeError(f"agent_name must be a non-empty str, not {agent_name!r}")
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self.tracer = provider.get_tracer("agent.ext.otel", schema_url=SCHEMA_URL)
        self.record_content = record_content
        self.agent_name = agent_name
        self.key = f"agent.ext.otel:{id(self)}"
        """This instance's key in `run.extras` (two `Traces` on one run keep apart)."""
        self.context_key = otel_context.create_key(self.key)

    # -- the run ---------------------------------------------------------------------------

    async def start(self, run: RunState) -> None:
        parent = otel_context.get_current()
        attributes: Attributes = {
            **_common("invoke_agent"),
            "gen_ai.agent.name": self.agent_name,
            "agent.run_id": run.run_id,
        }
        model = getattr(run.agent, "model", None)
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        if run.step:
            attributes["agent.resumed_at_step"] = run.step
        if self.record_content:
            attributes |= self._run_input(run)
        span = self.tracer.start_span(
            f"invoke_agent {self.agent_name}", context=parent, kind=SpanKind.INTERNAL, attributes=attributes
        )
        record = _Run(span, run, booked=len(run.usage.steps))
        current = otel_context.set_value(self.context_key, record, trace.set_span_in_context(span, parent))
        record.token = otel_context.attach(current)
        run.extras[self.key] = record

    def finish(self, run: RunState, error: BaseException | None) -> None:
        record = run.extras.pop(self.key, None)
        if not isinstance(record, _Run):
            return  # an extension before this one failed to start: no span was opened
        why = "the run ended first" if error is None else f"the run failed: {type(error).__name__}"
        if record.chat is not None:
            self._end_chat(record, run, None, error)
        with record.lock:
            left, record.tools = record.tools, {}
        for span in left.values():  # a call the run did not wait for (cancelled, crashed)
            span.set_status(Status(StatusCode.ERROR, why))
            span.set_attribute("error.type", "unfinished")
            span.end()
        span = record.span
        span.set_attributes(_tokens(run.usage.steps))
        span.set_attributes(
            {
                "agent.steps": run.step,
                "agent.model_calls": record.calls,
                "agent.tool_calls": record.tool_calls,
                "agent.tool_errors": record.tool_errors,
                "agent.pruned_results": record.pruned,
                "agent.compactions": record.compactions,
                "agent.retries": record.retries,
                "agent.cost_usd": run.usage.priced_cost_usd,
            }
        )
        if run.usage.cost_usd is None:
            span.set_attribute("agent.cost_unpriced", True)  # some call had no price: a floor
        stop = record.stop_reason
        result = getattr(error, "result", None)
        if error is not None:
            stop = getattr(result, "stop_reason", None) or "error"
        if stop:
            span.set_attribute("agent.stop_reason", stop)
        if self.record_content:
            span.set_attribute(
                "gen_ai.output.messages", _json([_message("assistant", final_text(run.messages))])
            )
        if error is not None:
            span.record_exception(error)
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:500]))
        span.end()
        if record.token is not None:
            otel_context.detach(record.token)

    # -- model calls -------------------------------------------------------------------------

    def request(self, request: dict[str, Any], run: RunState) -> dict[str, Any]:
        record = self._record(run)
        if record is None or run is not record.owner:  # a request only measured, never sent
            return request
        if record.chat is not None:  # a call that never answered (a subclass's own loop)
            self._end_chat(record, run, None, None)
        model = str(request.get("model", ""))
        attributes: Attributes = {**_common("chat"), "gen_ai.request.model": model, "agent.step": run.step}
        if isinstance(request.get("max_tokens"), int):
            attributes["gen_ai.request.max_tokens"] = request["max_tokens"]
        summaries = [u for u in run.usage.steps[record.booked :] if u.purpose == "summary"]
        attributes |= self._context_changes(record, summaries)
        if self.record_content:
            attributes |= _request_content(request)
        record.chat = self.tracer.start_span(
            f"chat {model}",
            context=trace.set_span_in_context(record.span),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        for at, event in record.notes:
            record.chat.add_event(event.kind, _note_attributes(event), timestamp=at)
        record.notes.clear()
        record.booked = len(run.usage.steps)
        return request

    def response(self, response: Message, run: RunState) -> Message:
        record = self._record(run)
        if record is None:
            return response
        if record.chat is None:  # a call no `request` hook saw: the loop's retry with more room
            model = getattr(run.agent, "model", response.model)
            record.chat = self.tracer.start_span(
                f"chat {model}",
                context=trace.set_span_in_context(record.span),
                kind=SpanKind.CLIENT,
                attributes={
                    **_common("chat"),
                    "gen_ai.request.model": str(model),
                    "agent.step": run.step,
                    "agent.retry": "max_tokens",
                },
                start_time=record.last_end,
            )
        self._end_chat(record, run, response, None)
        return response

    def _end_chat(
        self, record: _Run, run: RunState, response: Message | None, error: BaseException | None
    ) -> None:
        span, record.chat = record.chat, None
        if span is None:
            return
        booked = run.usage.steps[record.booked :]
        record.booked = len(run.usage.steps)
        record.calls += 1
        span.set_attributes(_tokens(booked))
        priced = [u.cost_usd for u in booked if u.cost_usd is not None]
        if priced:
            span.set_attribute("agent.cost_usd", sum(priced))
        failed = sum(1 for u in booked if u.purpose == "failed_attempt")
        if failed:
            span.set_attribute("agent.failed_attempts", failed)
        if response is not None:
            record.stop_reason = response.stop_reason
            span.set_attributes(
                {
                    "gen_ai.response.model": response.model,
                    "gen_ai.response.id": response.id,
                    "gen_ai.response.finish_reasons": [response.stop_reason or "unknown"],
                }
            )
            if self.record_content:
                content = [b.model_dump(mode="json") for b in response.content]
                out = {"role": "assistant", "parts": _parts(content), "finish_reason": response.stop_reason}
                span.set_attribute("gen_ai.output.messages", _json([out]))
        elif error is not None:
            span.record_exception(error)
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:500]))
        else:
            span.set_attribute("error.type", "unanswered")
            span.set_status(Status(StatusCode.ERROR, "no answer reached the loop"))
        span.end()
        record.last_end = time.time_ns()

    # -- tool calls --------------------------------------------------------------------------

    async def before_tool(self, call: ToolCall, run: RunState) -> ToolOutcome | None:
        record = self._record(run)
        if record is not None:
            span = self._tool_span(record, call, None)
            with record.lock:
                record.tools[call.id] = span
        return None

    def after_tool(self, outcome: ToolOutcome, run: RunState) -> ToolOutcome:
        """Ends the call's span; on a sync tool's own thread, hence the lock and explicit parent."""
        record = self._record(run)
        if record is None:
            return outcome
        with record.lock:
            span = record.tools.pop(outcome.call.id, None)
            record.tool_calls += 1
            record.tool_errors += outcome.is_error
        if span is None:  # settled by an extension listed before this one (a denial, a replay)
            span = self._tool_span(record, outcome.call, time.time_ns() - int(outcome.seconds * 1e9))
        span.set_attribute("agent.tool.seconds", outcome.seconds)
        if self.record_content:
            span.set_attribute("gen_ai.tool.call.result", safe_text(outcome.value, CONTENT_CHARS))
        if outcome.is_error:
            span.set_attribute("error.type", "tool_error")
            said = safe_text(outcome.value, 200) if self.record_content else "the tool returned an error"
            span.set_status(Status(StatusCode.ERROR, said))  # its text is content: only when asked
        span.end()
        return outcome

    def _tool_span(self, record: _Run, call: ToolCall, start_time: int | None) -> Span:
        attributes: Attributes = {
            **_common("execute_tool"),
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if self.record_content:
            attributes["gen_ai.tool.call.arguments"] = _json(dict(call.input))
        return self.tracer.start_span(
            f"execute_tool {call.name}",
            context=trace.set_span_in_context(record.span),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_time,
        )

    # -- events (pruning, compaction, retries) -------------------------------------------------

    def on_event(self, event: Event) -> None:
        """Pass as `Agent(on_event=traces.on_event)` (or call it from your own callback) to
        record pruning, compaction and retries: each becomes a span event on the next model
        call's span, and counts on the run's. It finds its run through the current context
        (`start` made it current for the run's task), so concurrent runs keep apart."""
        record = otel_context.get_value(self.context_key)
        if not isinstance(record, _Run):
            return
        if event.kind in ("prune", "compact"):
            record.notes.append((time.time_ns(), event))
        elif event.kind == "retry":
            record.retries += 1
            record.span.add_event("retry", {"agent.step": event.step, "agent.retry.reason": event.text})

    def chained(self, callback: Callable[[Event], None] | None) -> Callable[[Event], None]:
        """`on_event` that then calls `callback` (your progress display) with the same event."""

        def both(event: Event) -> None:
            self.on_event(event)
            if callback is not None:
                callback(event)

        return both

    # -- helpers -----------------------------------------------------------------------------

    def _record(self, run: RunState) -> _Run | None:
        record = run.extras.get(self.key)
        return record if isinstance(record, _Run) else None

    def _context_changes(self, record: _Run, summaries: Sequence[Usage]) -> Attributes:
        """What pruning and compaction did to the history this call sends (from the notes)."""
        if not record.notes:
            return {}
        events = [event for _, event in record.notes]
        pruned = [name for event in events if event.kind == "prune" for name in event.pruned]
        folded = sum(event.folded for event in events if event.kind == "compact")
        record.pruned += len(pruned)
        record.compactions += sum(1 for event in events if event.kind == "compact")
        attributes: Attributes = {
            "agent.context.tokens_before": events[0].tokens_before,
            "agent.context.tokens_after": events[-1].tokens_after,
        }
        if pruned:
            attributes["agent.prune.count"] = len(pruned)
            attributes["agent.prune.results"] = pruned
        if folded:
            attributes["agent.compaction.folded_messages"] = folded
        cost = [u.cost_usd for u in summaries if u.cost_usd is not None]
        if cost:
            attributes["agent.compaction.cost_usd"] = sum(cost)
        return attributes

    def _run_input(self, run: RunState) -> Attributes:
        attributes: Attributes = {"gen_ai.input.messages": _json([_message("user", run.prompt)])}
        system = getattr(run.agent, "system", "")
        if isinstance(system, str) and system:
            attributes["gen_ai.system_instructions"] = _json([{"type": "text", "content": system}])
        return attributes


def _common(operation: str) -> Attributes:
    """Every span's: the operation, and the provider under its current and its older name."""
    return {"gen_ai.operation.name": operation, "gen_ai.provider.name": PROVIDER, "gen_ai.system": PROVIDER}


def _tokens(records: Sequence[Usage]) -> Attributes:
    """Token counts of `records`. `gen_ai.usage.input_tokens` includes the cached tokens, as
    the convention says it SHOULD (the API's own `input_tokens` counts only the uncached)."""
    if not records:
        return {}
    read = sum(u.cache_read for u in records)
    write = sum(u.cache_write for u in records)
    return {
        "gen_ai.usage.input_tokens": sum(u.uncached for u in records) + read + write,
        "gen_ai.usage.output_tokens": sum(u.output for u in records),
        "gen_ai.usage.cache_read.input_tokens": read,
        "gen_ai.usage.cache_creation.input_tokens": write,
    }


def _note_attributes(event: Event) -> Attributes:
    attributes: Attributes = {
        "agent.step": event.step,
        "agent.context.tokens_before": event.tokens_before,
        "agent.context.tokens_after": event.tokens_after,
    }
    if event.kind == "prune":
        attributes |= {"agent.prune.results": list(event.pruned), "agent.prune.reason": event.text}
    else:
        attributes["agent.compaction.folded_messages"] = event.folded
    return attributes


def _request_content(request: Mapping[str, Any]) -> Attributes:
    """A request's system prompt and messages in the convention's message shape, as JSON."""
    attributes: Attributes = {}
    system = request.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    if isinstance(system, list) and system:
        attributes["gen_ai.system_instructions"] = _json(_parts(system))
    messages = [
        {"role": m.get("role", "user"), "parts": _parts(m.get("content"))}
        for m in request.get("messages", ())
        if isinstance(m, Mapping)
    ]
    attributes["gen_ai.input.messages"] = _json(messages)
    return attributes


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _parts(content: Any) -> list[dict[str, Any]]:
    """Anthropic content blocks as the convention's parts (text, tool_call, tool_call_response,
    reasoning); any other block keeps its type and its fields."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "content": block.get("text", "")})
        elif kind == "tool_use":
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "arguments": block.get("input"),
                }
            )
        elif kind == "tool_result":
            response = block.get("content")
            if isinstance(response, list):
                response = "".join(str(b.get("text", "")) for b in response if isinstance(b, Mapping))
            parts.append({"type": "tool_call_response", "id": block.get("tool_use_id"), "response": response})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": block.get("thinking", "")})
        else:
            parts.append({k: v for k, v in block.items() if k != "cache_control"})
    return parts


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= CONTENT_CHARS else text[:CONTENT_CHARS] + "...[cut]"
