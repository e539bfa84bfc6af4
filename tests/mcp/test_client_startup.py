"""Servers that cannot be used fail the connection loudly, name the server, and leave nothing behind.

Bad input first: garbage on stdout, a server exiting at startup, a command that does not exist, a
tool name already taken. Each raises McpServerError from ``async with McpConnections(...)``, and
the runtime is left exactly as it was (no tool registered, no process running).
"""

from __future__ import annotations

import sys
import time

import pytest

from helpers import string_tool
from toolrt import ToolRuntime
from toolrt.mcp import McpConnections, McpServerError, StdioServer
from toolrt.mcp._server_link import STARTUP_TIMEOUT_S


async def test_a_server_writing_garbage_on_stdout_fails_fast_and_says_so(toolbox):
    runtime = ToolRuntime()
    started = time.monotonic()
    with pytest.raises(McpServerError) as caught:
        async with McpConnections(runtime, [toolbox("noisy", "--garbage")]):
            pass
    message = str(caught.value)
    assert message.startswith('MCP server "noisy" wrote something that is not JSON-RPC on its stdout')
    # The relay ends the stream at the first bad line: no waiting out the start timeout.
    assert time.monotonic() - started < STARTUP_TIMEOUT_S / 3
    assert runtime.schemas() == []


async def test_a_server_exiting_at_startup_names_itself_and_its_stderr_tail(toolbox):
    runtime = ToolRuntime()
    with pytest.raises(McpServerError) as caught:
        async with McpConnections(runtime, [toolbox("db", "--die-at-start")]):
            pass
    message = str(caught.value)
    assert message.startswith('MCP server "db" failed')
    assert "its stderr ends: toolbox: cannot open the database /nonexistent/db.sqlite" in message
    assert caught.value.code == "MCP_SERVER_UNAVAILABLE"
    assert runtime.schemas() == []


async def test_a_command_that_does_not_exist():
    runtime = ToolRuntime()
    with pytest.raises(McpServerError, match=r'MCP server "ghost" could not be started \(/nonexistent/mcp\)'):
        async with McpConnections(runtime, [StdioServer("ghost", "/nonexistent/mcp")]):
            pass


async def test_a_later_server_failing_unwinds_the_earlier_ones(toolbox):
    runtime = ToolRuntime()
    with pytest.raises(McpServerError, match='"db"'):
        async with McpConnections(runtime, [toolbox("tb"), toolbox("db", "--die-at-start")]):
            pass
    assert runtime.schemas() == []  # tb's tools were registered, then taken back


async def test_a_tool_name_already_registered_is_refused_loudly_never_shadowed(toolbox):
    runtime = ToolRuntime()
    mine = string_tool("mcp__tb__echo", lambda args, ctx: "mine")
    runtime.register(mine)
    with pytest.raises(McpServerError) as caught:
        async with McpConnections(runtime, [toolbox("tb")]):
            pass
    assert 'cannot register tool "mcp__tb__echo"' in str(caught.value)
    assert "already registered" in str(caught.value)
    # All or nothing: none of tb's other tools stayed, and the user's own tool is untouched.
    assert [schema["name"] for schema in runtime.schemas()] == ["mcp__tb__echo"]
    assert runtime.get("mcp__tb__echo") is mine


async def test_closing_stops_the_server_process(tmp_path, toolbox):
    log = tmp_path / "log.jsonl"
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", "--log", str(log))]) as connections:
        result = await runtime.call("mcp__tb__echo", {"text": "hello"})
        assert result.value == {"result": "hello"}
        assert connections.tool_names("tb")
    assert runtime.schemas() == []
    import json
    import os

    pid = json.loads(log.read_text().splitlines()[0])["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert sys.executable  # the server was this interpreter, so the test needs no other runtime
