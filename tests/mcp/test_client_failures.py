"""What real MCP servers do to an agent, and what toolrt makes of it.

A server killed mid-call, a server that never answers, a cancelled call, a tool list that changes,
a result too big for the context, names no provider accepts, progress and trace context. The server
is tests/mcp/servers/toolbox.py (the SDK's MCPServer), run as a real child process (or a real HTTP
server); its ``--log`` file records what happened on the server's side.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import string_tool
from toolrt import AbortController, AbortSignal, ToolRuntime, content_text
from toolrt.mcp import TRACEPARENT, HttpServer, McpConnections, McpServerError, StdioServer, mcp_tool_name

SERVERS = Path(__file__).parent / "servers"
TOOLBOX = SERVERS / "toolbox.py"


def events(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


async def until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.fixture
def log(tmp_path) -> Path:
    return tmp_path / "server.jsonl"


# --- a server that dies ----------------------------------------------------------------------------


async def test_a_server_killed_mid_call_fails_the_call_at_once_and_is_restarted(toolbox, log):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", "--log", str(log))]) as connections:
        started = time.monotonic()
        result = await runtime.call("mcp__tb__crash", {"note": "boom"})
        elapsed = time.monotonic() - started
        assert result.is_error
        text = content_text(result.content)
        assert text.startswith('Error: MCP server "tb" exited during the call to "crash"')
        assert "not retried because it may have had effects" in text
        assert elapsed < 2.0  # at once: the SDK fails pending requests when the stream ends
        # The next call waits for the restarted server and works.
        again = await runtime.call("mcp__tb__echo", {"text": "back"})
        assert again.value == {"result": "back"}
        assert connections.restarts("tb") == 1
    # Not replayed: the effectful call reached exactly one server process.
    assert [event["event"] for event in events(log)].count("crash") == 1
    assert len({event["pid"] for event in events(log)}) == 2


async def test_a_read_only_call_is_replayed_once_on_the_restarted_server(toolbox, log):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", "--log", str(log))]):
        result = await runtime.call("mcp__tb__lookup", {"key": "die-once"})
        assert result.value == {"result": "value of die-once"}
    lookups = [event for event in events(log) if event["event"] == "lookup"]
    assert len(lookups) == 2
    assert lookups[0]["pid"] != lookups[1]["pid"]


async def test_a_tool_marked_idempotent_in_the_config_is_replayed_once_then_fails(toolbox, log):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", "--log", str(log), idempotent_tools=["crash"])]):
        result = await runtime.call("mcp__tb__crash", {"note": "twice"})
        assert result.is_error
        assert "restarted and the call replayed once; it failed again" in content_text(result.content)
    assert [event["event"] for event in events(log)].count("crash") == 2


async def test_an_idle_server_that_dies_is_restarted_before_the_next_call(toolbox, log):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", "--log", str(log))]) as connections:
        await runtime.call("mcp__tb__echo", {"text": "one"})
        pid = events(log)[0]["pid"]
        subprocess.run(["kill", "-9", str(pid)], check=True)
        await until(lambda: connections.restarts("tb") == 1)
        result = await runtime.call("mcp__tb__echo", {"text": "two"})
        assert result.value == {"result": "two"}


# --- a server that never answers -------------------------------------------------------------------


async def test_a_server_that_never_answers_meets_the_server_s_deadline(toolbox):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", timeout_ms=300)]):
        assert runtime.get("mcp__tb__hang").timeout_ms == 300
        started = time.monotonic()
        result = await runtime.call("mcp__tb__hang", {"note": "x"})
        assert time.monotonic() - started < 5
        assert content_text(result.content) == "Error: tool call timed out after 300ms"
        # The connection survives a timed-out call.
        assert (await runtime.call("mcp__tb__echo", {"text": "alive"})).value == {"result": "alive"}


async def test_the_runtime_default_deadline_applies_when_the_server_sets_none(toolbox):
    runtime = ToolRuntime(tool_timeout_ms=300)
    async with McpConnections(runtime, [toolbox("tb")]):
        result = await runtime.call("mcp__tb__hang", {"note": "x"})
        assert content_text(result.content) == "Error: tool call timed out after 300ms"


async def test_the_sdk_deadline_is_the_backstop_without_the_timeout_policy(toolbox):
    """The body passes the same deadline to the SDK, so a call never hangs on a silent server."""
    runtime = ToolRuntime(tool_timeout_ms=300)
    async with McpConnections(runtime, [toolbox("tb")]):
        definition = runtime.get("mcp__tb__hang")

        class Context:  # what a body reads of its ToolRunContext here
            signal = AbortSignal()
            agent = None
            call_id = root_call_id = "direct"

        # The body alone: no pipeline, no timeout policy, only the SDK's read timeout.
        started = time.monotonic()
        with pytest.raises(McpServerError, match=r'MCP server "tb" did not answer "hang" within 0.3s'):
            await definition.execute({"note": "x"}, Context())
        assert time.monotonic() - started < 5


# --- cancellation ----------------------------------------------------------------------------------


async def _cancel_sleep(runtime: ToolRuntime, log: Path) -> None:
    controller = AbortController()
    call = asyncio.ensure_future(runtime.call("mcp__tb__sleep", {"seconds": 20}, signal=controller.signal))
    await until(lambda: any(event["event"] == "sleep-start" for event in events(log)))
    controller.abort("user pressed stop")
    result = await asyncio.wait_for(call, 5)
    assert result.is_error
    assert result.error.info.code == "ABORTED"
    # The server heard it: its handler was cancelled (notifications/cancelled, or the stream closed).
    await until(lambda: any(event["event"] == "cancelled" for event in events(log)), timeout=5)
    assert not any(event["event"] == "sleep-end" for event in events(log))


async def test_cancelling_a_call_reaches_a_stdio_server(toolbox, log):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", "--log", str(log))]):
        await _cancel_sleep(runtime, log)
        assert (await runtime.call("mcp__tb__echo", {"text": "still here"})).value == {"result": "still here"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def http_toolbox(log):
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(TOOLBOX), "--log", str(log), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail("the HTTP toolbox did not start")
            time.sleep(0.05)
    yield HttpServer("tb", f"http://127.0.0.1:{port}/mcp")
    process.terminate()
    process.wait(10)


async def test_cancelling_a_call_reaches_a_streamable_http_server(http_toolbox, log):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [http_toolbox]) as connections:
        assert connections.protocol_version("tb") == "2026-07-28"
        assert (await runtime.call("mcp__tb__add", {"a": 1, "b": 2})).value == {"sum": 3}
        await _cancel_sleep(runtime, log)


# --- list_changed ----------------------------------------------------------------------------------


async def test_a_changed_tool_list_is_re_synced(toolbox):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb")]) as connections:
        before = connections.tool_names("tb")
        result = await runtime.call("mcp__tb__add_tool", {"name": "fresh"})
        assert result.value == {"result": "added fresh"}
        await until(lambda: runtime.get("mcp__tb__fresh") is not None)
        assert sorted([*before, "mcp__tb__fresh"]) == connections.tool_names("tb")
        assert (await runtime.call("mcp__tb__fresh", {"text": "hi"})).value == {"result": "fresh: hi"}


async def test_a_handshake_era_server_s_list_changed_notification_re_syncs(launch):
    legacy = StdioServer("legacy", launch.node, [str(SERVERS / "legacy_tools.mjs"), str(launch.modules)])
    runtime = ToolRuntime()
    async with McpConnections(runtime, [legacy]) as connections:
        assert connections.protocol_version("legacy") == "2025-11-25"
        assert connections.tool_names("legacy") == ["mcp__legacy__add_tool"]
        assert (await runtime.call("mcp__legacy__add_tool", {"name": "fresh"})).value == "added fresh"
        await until(lambda: runtime.get("mcp__legacy__fresh") is not None)
        assert (await runtime.call("mcp__legacy__fresh", {})).value == "fresh answers"


async def test_a_re_sync_that_cannot_register_keeps_the_old_set_whole(toolbox, caplog):
    runtime = ToolRuntime()
    mine = string_tool("mcp__tb__taken", lambda args, ctx: "mine")
    runtime.register(mine)
    async with McpConnections(runtime, [toolbox("tb")]) as connections:
        before = connections.tool_names("tb")
        with caplog.at_level(logging.WARNING, logger="toolrt"):
            await runtime.call("mcp__tb__add_tool", {"name": "taken"})
            await until(lambda: "re-sync failed" in caplog.text)
        assert 'cannot register tool "mcp__tb__taken"' in caplog.text
        assert connections.tool_names("tb") == before
        assert runtime.get("mcp__tb__taken") is mine
        assert all(runtime.get(name) is not None for name in before)
        assert (await runtime.call("mcp__tb__echo", {"text": "ok"})).value == {"result": "ok"}


# --- budgets, names, tracing -----------------------------------------------------------------------


async def test_an_oversized_result_is_spilled_with_a_preview_and_read_spill(toolbox):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", output_budget=2_000)]):
        result = await runtime.call("mcp__tb__big", {"chars": 50_000})
        assert len(result.value["result"]) == 50_000  # the canonical value is whole (Code Mode gets it)
        text = content_text(result.content)
        assert len(text) < 3_000
        assert "[output truncated" in text
        locator = text[text.index("spill://") :].split()[0].rstrip(".")
        page = await runtime.call("read_spill", {"locator": locator, "offset": 0})
        assert "0123456789abcdefghijklmnopqrstuvwxyz" in content_text(page.content)
    runtime.close()


async def test_exotic_names_are_normalized_distinct_and_callable(toolbox):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb", "--exotic")]) as connections:
        names = connections.tool_names("tb")
        unicode_name = mcp_tool_name("tb", "résumé.überprüfen")
        long_name = mcp_tool_name("tb", "t" * 100)
        dotted, dashed = mcp_tool_name("tb", "files.read"), mcp_tool_name("tb", "files_read")
        assert {unicode_name, long_name, dotted, dashed} <= set(names)
        assert dotted != dashed and len(long_name) == 64
        assert (await runtime.call(unicode_name, {"text": "x"})).value == {"result": "unicode x"}
        assert (await runtime.call(long_name, {"text": "x"})).value == {"result": "long x"}
        assert (await runtime.call(dotted, {"text": "x"})).value == {"result": "dotted x"}
        assert (await runtime.call(dashed, {"text": "x"})).value == {"result": "dashed x"}


async def test_a_server_failure_is_a_tool_failure_with_the_server_s_words(toolbox):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb")]):
        result = await runtime.call("mcp__tb__fail", {"message": "the disk is full"})
        # The SDK's MCPServer prefixes its own words; the model reads them as the server sent them.
        assert content_text(result.content) == "Error: Error executing tool fail: the disk is full"
        assert (result.error.info.name, result.error.info.code) == ("McpToolError", "MCP_TOOL_ERROR")


async def test_arguments_the_subset_cannot_describe_reach_the_server_unchecked(toolbox):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [toolbox("tb")]):
        # "choice" has no type and "limit" is anyOf[integer, null]: both read as any value.
        assert runtime.get("mcp__tb__pick").parameters["properties"]["limit"] == {"title": "Limit"}
        result = await runtime.call("mcp__tb__pick", {"choice": [1, {"a": None}], "limit": None})
        assert json.loads(result.value["result"]) == {"choice": [1, {"a": None}], "limit": None}


async def test_traceparent_is_forwarded_in_meta(toolbox):
    runtime = ToolRuntime()
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    async with McpConnections(runtime, [toolbox("tb")]):
        assert (await runtime.call("mcp__tb__trace", {})).value == {"result": "none"}
        token = TRACEPARENT.set(traceparent)
        try:
            assert (await runtime.call("mcp__tb__trace", {})).value == {"result": traceparent}
        finally:
            TRACEPARENT.reset(token)


async def test_progress_notifications_reach_the_run_s_session_events(toolbox):
    runtime = ToolRuntime()
    recorded: list[tuple[str, dict]] = []
    runtime.bind_session("agent", lambda kind, data: recorded.append((kind, dict(data))))
    async with McpConnections(runtime, [toolbox("tb")]):
        result = await runtime.call("mcp__tb__sleep", {"seconds": 0.3}, agent="agent", call_id="c-7")
        assert result.value == {"result": "slept"}
    progress = [data for kind, data in recorded if kind == "mcp/progress"]
    assert len(progress) >= 2
    assert progress[0] == {
        "callId": "c-7",
        "server": "tb",
        "tool": "sleep",
        "progress": 0.0,
        "total": 3.0,
        "message": "step 0",
    }
