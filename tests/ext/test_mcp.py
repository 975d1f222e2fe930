"""MCP servers' tools as agent tools, against a real MCP server (`tests/mcp_server.py`, on the
official SDK) over stdio and over streamable HTTP on a local port: no mock of the protocol."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent import ToolCall
from agent.ext.mcp import HttpServer, McpTool, McpTools, McpUnavailable, StdioServer, mcp_tools
from agent.ext.mcp.tools import result_value
from agent.tool_runs import arun_all, run_all
from agent.tools import ToolRegistry

pytestmark = pytest.mark.slow  # each test starts real MCP server processes (about a second each)

SERVER = str(Path(__file__).with_name("mcp_server.py"))
STDIO = StdioServer(sys.executable, [SERVER, "stdio"])


def run(registry: ToolRegistry, name: str, **arguments: object) -> tuple[bool, object]:
    (outcome,) = run_all(registry, [ToolCall("call_1", name, arguments)])
    return outcome.is_error, outcome.value


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie (exited, never reaped) counts as gone too
        return stat.read().split(") ", 1)[1][0] != "Z"


def server_pid(registry: ToolRegistry) -> int:
    failed, pid = run(registry, "server_pid")
    assert not failed
    return int(str(pid))


@pytest.fixture(scope="module")
def stdio_tools() -> Iterator[McpTools]:
    """One server for the tests that only call tools (starting one costs seconds)."""
    with mcp_tools(STDIO) as tools:
        yield tools


def start_http_server() -> tuple[subprocess.Popen[bytes], str]:
    """The test server on streamable HTTP at a free local port, once it accepts connections."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the MCP test server did not start") from None
            time.sleep(0.1)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    process, url = start_http_server()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_tools_keep_the_servers_schemas_and_descriptions(stdio_tools: McpTools) -> None:
    declared = {d["name"]: d for d in ToolRegistry(stdio_tools).declarations()}
    assert all(isinstance(t, McpTool) for t in stdio_tools)
    assert declared["add"] == {
        "name": "add",
        "description": "Add two integers.",
        "input_schema": {
            "type": "object",
            "properties": {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}},
            "required": ["a", "b"],
            "title": "addArguments",
        },
    }
    assert declared["shout"]["input_schema"]["properties"]["times"]["default"] == 1
    assert "notes_count" in declared and "notes.count" not in declared  # the API's name pattern


def test_calls_run_on_the_server_and_results_come_back_as_text(stdio_tools: McpTools) -> None:
    registry = ToolRegistry(stdio_tools)
    assert run(registry, "add", a=2, b=40) == (False, "42")
    assert run(registry, "shout", text="hi") == (False, "HI")
    assert run(registry, "shout", text="hi", times=2) == (False, "HI HI")
    assert run(registry, "notes_count", folder="abcd") == (False, "4")  # called by its MCP name
    failed, forecast = run(registry, "forecast", city="Oslo")
    assert not failed and '"sky": "clear"' in str(forecast)


def test_bad_input_is_refused_before_it_is_sent_with_each_field_named(stdio_tools: McpTools) -> None:
    failed, message = run(ToolRegistry(stdio_tools), "add", a="x")
    assert failed
    assert message == (
        "invalid input for add: (input): 'b' is a required property; a: 'x' is not of type 'integer'"
    )


def test_a_tool_error_becomes_an_error_result_with_the_servers_message(stdio_tools: McpTools) -> None:
    failed, message = run(ToolRegistry(stdio_tools), "refuse", reason="not today")
    assert failed and "refused: not today" in str(message)


def test_a_slow_call_times_out_and_the_server_still_serves(stdio_tools: McpTools) -> None:
    registry = ToolRegistry(stdio_tools, default_timeout=0.5)
    started = time.monotonic()
    failed, message = run(registry, "nap", seconds=5)
    assert failed and message == "timeout: nap did not finish in 0.5s"
    assert time.monotonic() - started < 3
    assert run(registry, "add", a=1, b=1) == (False, "2")


def test_a_server_that_dies_gives_error_results_not_a_hang() -> None:
    with mcp_tools(STDIO, timeout=10) as tools:
        registry = ToolRegistry(tools)
        pid = server_pid(registry)
        started = time.monotonic()
        failed, message = run(registry, "crash")
        assert failed and "closed the connection" in str(message)
        failed, message = run(registry, "add", a=1, b=2)
        assert failed and "MCP server" in str(message)
        assert time.monotonic() - started < 8
    assert not alive(pid)


def test_the_server_process_is_gone_after_the_block() -> None:
    with mcp_tools(STDIO) as tools:
        registry = ToolRegistry(tools)
        pid = server_pid(registry)
        assert alive(pid)
    assert not alive(pid)
    failed, message = run(registry, "add", a=1, b=2)  # a tool kept past the block fails cleanly
    assert failed and "not connected" in str(message)


def test_the_server_process_is_gone_after_an_exception_in_the_block() -> None:
    pid = 0
    with pytest.raises(KeyError), mcp_tools(STDIO) as tools:
        pid = server_pid(ToolRegistry(tools))
        raise KeyError("boom")
    assert pid and not alive(pid)


def test_async_with_serves_awaited_calls_and_stops_the_server() -> None:
    async def main() -> tuple[list[object], int]:
        async with mcp_tools(STDIO) as tools:
            registry = ToolRegistry(tools)
            calls = [ToolCall(f"c{i}", "add", {"a": i, "b": i}) for i in range(5)]
            outcomes = await arun_all(registry, calls)
            (pid,) = await arun_all(registry, [ToolCall("p", "server_pid", {})])
            return [o.value for o in outcomes], int(str(pid.value))

    values, pid = asyncio.run(main())
    assert values == ["0", "2", "4", "6", "8"]
    assert not alive(pid)


def test_a_server_that_cannot_start_is_a_clear_error_and_leaves_nothing_running() -> None:
    threads = {t.name for t in threading.enumerate()}
    with pytest.raises(McpUnavailable, match="could not start MCP server no-such-mcp-command"):
        mcp_tools(StdioServer("no-such-mcp-command")).open()
    with pytest.raises(McpUnavailable, match="MCP server"):
        mcp_tools(StdioServer(sys.executable, ["-c", "pass"]), startup_timeout=10).open()
    time.sleep(0.2)
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-") and t.name not in threads]


def test_two_servers_with_a_prefix_each() -> None:
    second = StdioServer(sys.executable, [SERVER, "stdio"], prefix="two")
    with mcp_tools(STDIO, second, timeout=30) as tools:
        registry = ToolRegistry(tools)
        assert {t.timeout for t in tools} == {30}
        assert "add" in registry and "two_add" in registry and "two_notes_count" in registry
        assert server_pid(registry) != int(str(run(registry, "two_server_pid")[1]))


def test_streamable_http_server(http_url: str) -> None:
    with mcp_tools(HttpServer(http_url)) as tools:
        registry = ToolRegistry(tools)
        assert run(registry, "add", a=20, b=22) == (False, "42")
        failed, message = run(registry, "refuse", reason="over http")
        assert failed and "refused: over http" in str(message)


def test_streamable_http_server_with_headers(http_url: str) -> None:
    async def main() -> object:
        async with mcp_tools(HttpServer(http_url, headers={"X-Test": "1"})) as tools:
            (outcome,) = await arun_all(ToolRegistry(tools), [ToolCall("c", "shout", {"text": "ok"})])
            return outcome.value

    assert asyncio.run(main()) == "OK"


def test_an_unreachable_http_server_is_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(McpUnavailable, match=f"127.0.0.1:{port}"):
        mcp_tools(HttpServer(f"http://127.0.0.1:{port}/mcp"), startup_timeout=10).open()


def test_bad_server_descriptions_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="command"):
        StdioServer("")
    with pytest.raises(TypeError, match="list of strings"):
        StdioServer("python", "server.py")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="http"):
        HttpServer("localhost:8000/mcp")
    with pytest.raises(ValueError, match="prefix"):
        StdioServer("python", prefix="a.b")
    with pytest.raises(ValueError, match="at least one server"):
        mcp_tools()


def test_agent_imports_without_the_mcp_sdk() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "import agent, agent.ext.mcp\n"
        "assert 'mcp' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    agent.ext.mcp.mcp_tools(agent.ext.mcp.StdioServer('x')).open()\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install -e '.[mcp]' from the checkout" in out.stdout


def test_what_the_model_reads_of_each_kind_of_content() -> None:
    from mcp_types import CallToolResult, ImageContent, ResourceLink, TextContent

    text = TextContent(type="text", text="two lines\nof text")
    image = ImageContent(type="image", data="aGVsbG8gd29ybGQh", mime_type="image/png")
    link = ResourceLink(type="resource_link", uri="file:///notes/oslo.md", name="oslo.md")
    assert result_value(CallToolResult(content=[text, image, link])) == (
        "two lines\nof text\n[image: image/png, about 12 bytes, not shown]\n"
        "[resource: file:///notes/oslo.md (oslo.md)]"
    )
    structured = {"city": "Oslo", "high_c": 21}
    assert result_value(CallToolResult(content=[], structured_content=structured)) == structured
    assert result_value(CallToolResult(content=[text], structured_content=structured)) == "two lines\nof text"


def test_an_http_server_that_goes_away_gives_error_results_not_a_hang() -> None:
    process, url = start_http_server()
    try:
        with mcp_tools(HttpServer(url), timeout=20) as tools:
            registry = ToolRegistry(tools)
            assert run(registry, "add", a=1, b=2) == (False, "3")
            process.kill()
            process.wait(10)
            started = time.monotonic()
            failed, message = run(registry, "add", a=1, b=2)
            assert failed and "MCP server http://127.0.0.1:" in str(message)
            assert time.monotonic() - started < 15
    finally:
        process.kill()
