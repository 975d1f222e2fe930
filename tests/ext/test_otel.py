"""`Traces`: OpenTelemetry spans of runs on the simulator, read back from the SDK's in-memory exporter.

Each test names the property it holds: spans nest under the run (parallel tool threads, `arun`,
two runs at once), carry the GenAI convention's attributes, end in error when the run fails,
record content only when asked, and report pruning and compaction.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra: pip install -e '.[otel]'")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent import Agent, tool
from agent.errors import CostBudgetExceeded, StepBudgetExceeded
from agent.ext.otel import Traces
from agent.testing import call, reply, tool_use
from agent.testing.policies import arithmetic, echo_summarizer, latest_results, scripted
from agent.testing.simulator import MessagesSimulator
from tools import calculator

Simulator = Callable[..., MessagesSimulator]
PROMPT = "What is 123456 × 789?"
RULES = "Rule: quote every figure exactly, never guess a value, show the operands. " * 60  # ~900 tokens


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def by_operation(spans: Sequence[ReadableSpan], operation: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == operation]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_a_run_is_a_span_with_its_model_and_tool_calls_as_children(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(
        system=RULES, tools=[calculator], llm=simulator(arithmetic).llm(), extensions=[Traces(provider)]
    )
    result = agent.run(PROMPT)
    assert result.usage.cache_write > 0 and result.usage.cache_read > 0, "the scenario must use the cache"
    spans = exporter.get_finished_spans()
    [run] = by_operation(spans, "invoke_agent")
    chats, tools = by_operation(spans, "chat"), by_operation(spans, "execute_tool")
    assert (len(chats), len(tools), len(spans)) == (2, 1, 4)
    assert run.parent is None and run.name == "invoke_agent agent"
    for span in [*chats, *tools]:
        assert parent_of(span) == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
    for span in spans:
        assert attrs(span)["gen_ai.provider.name"] == attrs(span)["gen_ai.system"] == "anthropic"

    first, second = sorted(chats, key=lambda s: s.start_time or 0)
    assert first.name == "chat claude-opus-5"
    a = attrs(first)
    assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == "claude-opus-5"
    assert str(a["gen_ai.response.id"]).startswith("msg_")
    assert a["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("end_turn",)
    for span, usage in zip((first, second), result.usage.steps, strict=True):
        b = attrs(span)
        assert b["gen_ai.usage.input_tokens"] == usage.uncached + usage.cache_read + usage.cache_write
        assert b["gen_ai.usage.output_tokens"] == usage.output
        assert b["gen_ai.usage.cache_read.input_tokens"] == usage.cache_read
        assert b["gen_ai.usage.cache_creation.input_tokens"] == usage.cache_write
        assert b["agent.cost_usd"] == pytest.approx(usage.cost_usd)

    [calc] = tools
    c = attrs(calc)
    assert calc.name == "execute_tool calculator" and c["gen_ai.tool.name"] == "calculator"
    tool_use_id = result.messages[1]["content"][-1]["id"]
    assert c["gen_ai.tool.call.id"] == tool_use_id
    assert (first.end_time or 0) <= (calc.start_time or 0) <= (calc.end_time or 0) <= (second.start_time or 0)

    r = attrs(run)
    assert r["gen_ai.usage.input_tokens"] == result.usage.prompt
    assert r["gen_ai.usage.output_tokens"] == result.usage.output
    assert r["agent.cost_usd"] == pytest.approx(result.usage.cost_usd) and r["agent.cost_usd"] > 0
    assert (r["agent.steps"], r["agent.model_calls"], r["agent.tool_calls"]) == (2, 2, 1)
    assert r["agent.stop_reason"] == "end_turn"
    assert run.status.status_code is not StatusCode.ERROR


ran_on: list[int] = []


@tool
def slow_lookup(key: str) -> str:
    """Look a key up (slowly).

    Args:
        key: what to look up.
    """
    ran_on.append(threading.get_ident())
    time.sleep(0.2)
    return f"value of {key}"


def three_lookups(body: dict[str, Any]) -> Any:
    if latest_results(body):
        return "all three looked up"
    return [call("slow_lookup", key=k) for k in ("a", "b", "c")]


def test_parallel_tool_calls_on_threads_are_children_of_the_run(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    ran_on.clear()
    agent = Agent(tools=[slow_lookup], llm=simulator(three_lookups).llm(), extensions=[Traces(provider)])
    agent.run("Look up a, b and c.")
    spans = exporter.get_finished_spans()
    [run], tools = by_operation(spans, "invoke_agent"), by_operation(spans, "execute_tool")
    assert len(tools) == 3 and len(set(ran_on)) == 3, "each call ran on its own thread"
    assert {parent_of(s) for s in tools} == {run.context.span_id}
    assert len({attrs(s)["gen_ai.tool.call.id"] for s in tools}) == 3
    starts, ends = [s.start_time or 0 for s in tools], [s.end_time or 0 for s in tools]
    assert max(starts) < min(ends), "the three spans overlap: the calls ran at once"


def test_concurrent_aruns_on_one_agent_keep_their_spans_apart(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    traces = Traces(provider, record_content=True)
    agent = Agent(tools=[calculator], llm=simulator(arithmetic).llm(), extensions=[traces])
    outer = provider.get_tracer("test")

    async def both() -> None:
        with outer.start_as_current_span("request handler"):
            await asyncio.gather(agent.arun("What is 12 × 34?"), agent.arun("What is 56 × 78?"))

    asyncio.run(both())
    spans = exporter.get_finished_spans()
    [handler] = [s for s in spans if s.name == "request handler"]
    runs = by_operation(spans, "invoke_agent")
    assert len(runs) == 2 and {parent_of(r) for r in runs} == {handler.context.span_id}
    seen = set()
    for run in runs:
        assert run.context.trace_id == handler.context.trace_id
        children = [s for s in spans if parent_of(s) == run.context.span_id]
        assert sorted(attrs(s)["gen_ai.operation.name"] for s in children) == ["chat", "chat", "execute_tool"]
        [calc] = [s for s in children if s.name == "execute_tool calculator"]
        a = json.loads(attrs(calc)["gen_ai.tool.call.arguments"])["a"]
        assert f"What is {a} ×" in attrs(run)["gen_ai.input.messages"], "its own run's call"
        seen.add(a)
    assert seen == {12, 56}


def test_a_failed_run_ends_its_span_with_an_error(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    always_a_tool = scripted(*[[call("calculator", a=1, op="+", b=1)]] * 5)
    agent = Agent(
        tools=[calculator], llm=simulator(always_a_tool).llm(), max_steps=2, extensions=[Traces(provider)]
    )
    with pytest.raises(StepBudgetExceeded):
        agent.run("Add forever.")
    [run] = by_operation(exporter.get_finished_spans(), "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert "max_steps=2" in (run.status.description or "")
    assert attrs(run)["error.type"] == "StepBudgetExceeded"
    assert attrs(run)["agent.stop_reason"] == "max_steps"
    assert [e.name for e in run.events] == ["exception"]


def test_a_call_refused_by_the_budget_ends_its_chat_span_with_an_error(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(llm=simulator().llm(), max_cost_usd=1e-9, extensions=[Traces(provider)])
    with pytest.raises(CostBudgetExceeded):
        agent.run("Hello?")
    spans = exporter.get_finished_spans()
    [run], [chat] = by_operation(spans, "invoke_agent"), by_operation(spans, "chat")
    assert parent_of(chat) == run.context.span_id
    for span in (run, chat):
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["error.type"] == "CostBudgetExceeded"


def cut_off_unless_roomy(body: dict[str, Any]) -> Any:
    """Thinking used the whole budget at 100 tokens: nothing usable, so the loop asks again."""
    return reply(stop_reason="max_tokens") if body["max_tokens"] <= 100 else "done"


def test_the_loops_retry_with_more_room_is_a_second_chat_span(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    traces = Traces(provider)
    agent = Agent(
        llm=simulator(cut_off_unless_roomy).llm(),
        max_tokens=100,
        extensions=[traces],
        on_event=traces.on_event,
    )
    result = agent.run("Hello?")
    spans = exporter.get_finished_spans()
    [run] = by_operation(spans, "invoke_agent")
    first, second = sorted(by_operation(spans, "chat"), key=lambda s: s.start_time or 0)
    assert {parent_of(first), parent_of(second)} == {run.context.span_id}
    assert attrs(first)["gen_ai.response.finish_reasons"] == ("max_tokens",)
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert attrs(second)["agent.retry"] == "max_tokens"
    assert (first.end_time or 0) <= (second.start_time or 0)
    assert attrs(second)["gen_ai.usage.output_tokens"] == result.usage.steps[1].output
    assert (attrs(run)["agent.model_calls"], attrs(run)["agent.retries"]) == (2, 1)
    assert [e.name for e in run.events] == ["retry"]


CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def test_content_is_recorded_only_when_asked(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    sim = simulator(arithmetic)
    secret_system = "You are the calculator desk."
    plain = Agent(system=secret_system, tools=[calculator], llm=sim.llm(), extensions=[Traces(provider)])
    plain.run(PROMPT)
    spans = exporter.get_finished_spans()
    assert len(spans) == 4
    for span in spans:
        assert not CONTENT_KEYS & set(attrs(span)), span.name
        assert not any("123456" in str(v) or secret_system in str(v) for v in attrs(span).values())
    exporter.clear()

    traces = Traces(provider, record_content=True)
    Agent(system=secret_system, tools=[calculator], llm=sim.llm(), extensions=[traces]).run(PROMPT)
    spans = exporter.get_finished_spans()
    [run] = by_operation(spans, "invoke_agent")
    first, second = sorted(by_operation(spans, "chat"), key=lambda s: s.start_time or 0)
    [calc] = by_operation(spans, "execute_tool")
    assert json.loads(attrs(run)["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": PROMPT}]}
    ]
    assert "97,406,784" in attrs(run)["gen_ai.output.messages"]
    assert json.loads(attrs(first)["gen_ai.system_instructions"])[0]["content"] == secret_system
    asked = json.loads(attrs(first)["gen_ai.input.messages"])
    assert asked[0]["parts"][0]["content"] == PROMPT
    [answer] = json.loads(attrs(first)["gen_ai.output.messages"])
    assert answer["finish_reason"] == "tool_use"
    assert {"text", "tool_call"} <= {p["type"] for p in answer["parts"]}
    assert json.loads(attrs(calc)["gen_ai.tool.call.arguments"]) == {"a": 123456, "op": "*", "b": 789}
    assert attrs(calc)["gen_ai.tool.call.result"] == "97406784"
    sent = json.loads(attrs(second)["gen_ai.input.messages"])
    assert sent[-1]["parts"][0] == {
        "type": "tool_call_response",
        "id": attrs(calc)["gen_ai.tool.call.id"],
        "response": "97406784",
    }


@tool
def read_page(n: int) -> str:
    """Read one page of the log.

    Args:
        n: the page number.
    """
    return f"page {n}: " + "log line " * 300


def pages(body: dict[str, Any]) -> Any:
    if "tools" not in body:
        return echo_summarizer(body)
    done = [r for r in latest_results(body) if r.name == "read_page"]
    n = int(done[-1].input["n"]) + 1 if done else 1
    return "read them all" if n > 6 else tool_use("read_page", {"n": n})


def test_pruning_and_compaction_are_recorded_on_the_call_that_sends_them(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    traces = Traces(provider)
    sim = simulator(pages, summarizer=echo_summarizer)
    pruning = Agent(
        tools=[read_page],
        llm=sim.llm(),
        keep_recent=1,
        prune_batch=1,
        diet=False,
        extensions=[traces],
        on_event=traces.on_event,
    )
    pruning.run("Read pages 1 to 6.")
    spans = exporter.get_finished_spans()
    [run], chats = by_operation(spans, "invoke_agent"), by_operation(spans, "chat")
    pruned_on = [s for s in chats if "agent.prune.count" in attrs(s)]
    assert pruned_on, "keep_recent=1 prunes the older pages"
    named = [name for s in pruned_on for name in attrs(s)["agent.prune.results"]]
    assert named[0] == "read_page(n=1)"
    for span in pruned_on:
        a = attrs(span)
        assert a["agent.context.tokens_after"] < a["agent.context.tokens_before"]
        assert [e.name for e in span.events] == ["prune"]
    assert attrs(run)["agent.pruned_results"] == len(named)
    exporter.clear()

    compacting = Agent(
        tools=[read_page],
        llm=sim.llm(),
        keep_recent=0,
        diet=False,
        max_context_tokens=2500,
        max_steps=12,
        extensions=[traces],
        on_event=traces.chained(None),
    )
    result = compacting.run("Read pages 1 to 6.")
    spans = exporter.get_finished_spans()
    [run], chats = by_operation(spans, "invoke_agent"), by_operation(spans, "chat")
    calls = [u for u in result.usage.steps if u.purpose == "step"]
    assert len(chats) == len(calls), "one span per call sent, none for a request only measured"
    compacted_on = [s for s in chats if "agent.compaction.folded_messages" in attrs(s)]
    assert compacted_on, "the scenario must compact"
    assert attrs(compacted_on[0])["agent.compaction.folded_messages"] > 1
    assert attrs(compacted_on[0])["agent.compaction.cost_usd"] > 0
    assert attrs(run)["agent.compactions"] == len(compacted_on)


def test_without_on_event_nothing_about_pruning_is_guessed(
    simulator: Simulator, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(
        tools=[read_page],
        llm=simulator(pages).llm(),
        keep_recent=1,
        prune_batch=1,
        diet=False,
        extensions=[Traces(provider)],
    )
    agent.run("Read pages 1 to 6.")
    spans = exporter.get_finished_spans()
    assert not any("agent.prune.count" in attrs(s) for s in spans)
    assert attrs(by_operation(spans, "invoke_agent")[0])["agent.pruned_results"] == 0


def test_bad_arguments_are_refused_clearly() -> None:
    with pytest.raises(TypeError, match="TracerProvider"):
        Traces("http://localhost:4318")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record_content"):
        Traces(record_content="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="agent_name"):
        Traces(agent_name="")


def test_a_plain_run_imports_neither_this_extension_nor_the_sdk() -> None:
    code = (
        "import sys\n"
        "from agent import Agent\n"
        "from agent.testing import ScriptedLLM\n"
        "Agent(llm=ScriptedLLM(['ok']), artifacts_dir=None).run('hi')\n"
        "loaded = [m for m in sys.modules if m == 'agent.ext' or m.startswith('agent.ext.')]\n"
        "print(loaded + [m for m in sys.modules if m.startswith('opentelemetry.sdk')])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def phoenix_command() -> str:
    """Arize Phoenix, a real OTLP receiver and trace viewer from PyPI (heavy: its own venv)."""
    found = os.environ.get("AGENT_PHOENIX") or shutil.which("phoenix")
    if not found:
        pytest.skip(
            "no Phoenix here: python -m venv /tmp/phx && /tmp/phx/bin/pip install arize-phoenix, "
            "then AGENT_PHOENIX=/tmp/phx/bin/phoenix"
        )
    return found


@pytest.mark.slow  # starts a real server
def test_a_real_viewer_receives_the_spans_over_otlp(
    simulator: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = phoenix_command()
    otlp = pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter", reason="needs the otel extra"
    )
    from opentelemetry.sdk.resources import Resource

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (tmp_path / "phoenix.log").open("w")
    server = subprocess.Popen([command, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not _answers(f"{base}/healthz"):
            assert server.poll() is None, (tmp_path / "phoenix.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "Phoenix did not come up in 120 s"
            time.sleep(0.5)
        resource = Resource.create({"service.name": "agent-tests", "openinference.project.name": "otel-test"})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(SimpleSpanProcessor(otlp.OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
        agent = Agent(tools=[calculator], llm=simulator(arithmetic).llm(), extensions=[Traces(provider)])
        agent.run(PROMPT)
        provider.shutdown()  # flushes

        spans: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while len(spans) < 4 and time.monotonic() < deadline:
            time.sleep(0.3)
            try:
                with urllib.request.urlopen(f"{base}/v1/projects/otel-test/spans") as answer:
                    spans = json.load(answer)["data"]
            except urllib.error.HTTPError as error:  # 404 until the viewer has filed the first span
                if error.code != 404:
                    raise
        named = {s["name"]: s for s in spans}
        assert sorted(named) == ["chat claude-opus-5", "execute_tool calculator", "invoke_agent agent"]
        run = named["invoke_agent agent"]
        assert run["parent_id"] is None
        assert len({s["context"]["trace_id"] for s in spans}) == 1
        assert {s["parent_id"] for s in spans if s is not run} == {run["context"]["span_id"]}
        # the viewer understood the conventions: it files the spans as an agent, LLM calls, a tool
        assert (run["span_kind"], named["chat claude-opus-5"]["span_kind"]) == ("AGENT", "LLM")
        assert named["execute_tool calculator"]["span_kind"] == "TOOL"
        assert run["attributes"]["gen_ai.usage.input_tokens"] > 0
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False
