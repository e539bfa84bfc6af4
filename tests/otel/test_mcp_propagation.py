"""The trace context crosses MCP both ways (contract OT9), with real servers.

Client side: a call to an MCP server tool sends the ``traceparent`` of its own ``execute_tool``
span in the request's ``_meta`` (the tests' toolbox server echoes what it received). Server side:
``toolrt mcp serve`` over HTTP (``serve_http``, in this process so its spans reach the same
exporter) makes an incoming ``_meta.traceparent`` the parent of the served call's span — from a
traced toolrt client, and from a hand-set ``TRACEPARENT`` on an untraced one.

The ``mcp`` SDK (2.3) traces its own requests too, with the global tracer provider: its client
injects the current span's context, its server middleware continues an incoming one. The
end-to-end tests pass through both; the in-memory test takes the SDK's server middleware out, so
what it checks is toolrt's own reading of ``_meta.traceparent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from telemetry_support import Telemetry, parent_id

from mcp import Client
from toolrt import ToolRuntime, tool
from toolrt.mcp import TRACEPARENT, HttpServer, McpConnections, StdioServer, build_mcp_server, serve_http
from toolrt.otel import instrument

MCP_TESTS = Path(__file__).parents[1] / "mcp"
sys.path.append(str(MCP_TESTS))  # last: nothing of ours is shadowed
from test_server_support import free_port  # noqa: E402  (tests/mcp's helpers, reused)

TOOLBOX = StdioServer("tb", sys.executable, [str(MCP_TESTS / "servers" / "toolbox.py")])
HAND_SET = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_an_mcp_request_carries_the_traceparent_of_its_call_span(telemetry: Telemetry) -> None:
    """OT9 (client): ``_meta.traceparent`` names the ``execute_tool`` span of the call that sent it,
    and wins over a hand-set ``TRACEPARENT``."""
    runtime = ToolRuntime()
    with instrument(runtime, tracer_provider=telemetry.tracer_provider):
        async with McpConnections(runtime, [TOOLBOX]):
            received = (await runtime.call("mcp__tb__trace", {})).value["result"]
            token = TRACEPARENT.set(HAND_SET)
            try:
                received_again = (await runtime.call("mcp__tb__trace", {})).value["result"]
            finally:
                TRACEPARENT.reset(token)
    first, second = sorted(
        telemetry.spans("execute_tool mcp__tb__trace"), key=lambda span: span.start_time or 0
    )
    for span, traceparent in ((first, received), (second, received_again)):
        version, trace_id, span_id, flags = traceparent.split("-")
        assert version == "00" and int(flags, 16) & 1  # sampled (newer SDKs add the random-id bit)
        assert int(trace_id, 16) == span.context.trace_id
        assert int(span_id, 16) == span.context.span_id


async def test_an_untraced_runtime_forwards_only_a_hand_set_traceparent(telemetry: Telemetry) -> None:
    """OT9 (client): with no tracer, nothing is invented; ``TRACEPARENT`` still goes through."""
    runtime = ToolRuntime()
    async with McpConnections(runtime, [TOOLBOX]):
        assert (await runtime.call("mcp__tb__trace", {})).value == {"result": "none"}
        token = TRACEPARENT.set(HAND_SET)
        try:
            assert (await runtime.call("mcp__tb__trace", {})).value == {"result": HAND_SET}
        finally:
            TRACEPARENT.reset(token)


@contextlib.asynccontextmanager
async def served(telemetry: Telemetry) -> AsyncIterator[str]:
    """``serve_http`` of a traced runtime with ``add``, in this process; yields its URL."""
    runtime = ToolRuntime()
    runtime.register(add)
    handle = instrument(runtime, tracer_provider=telemetry.tracer_provider)
    port = free_port()
    server = asyncio.ensure_future(serve_http(runtime, port=port, mode="native"))
    try:
        for _ in range(600):
            if server.done():
                server.result()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server
        handle.uninstrument()
        runtime.close()


async def test_a_served_call_is_a_child_of_the_calling_toolrt_span(telemetry: Telemetry) -> None:
    """OT9 (both ways): client ``execute_tool mcp__srv__add`` → server ``execute_tool add``, one
    trace, the server span's parent the client's span (remote)."""
    async with served(telemetry) as url:
        client = ToolRuntime()
        with instrument(client, tracer_provider=telemetry.tracer_provider):
            async with McpConnections(client, [HttpServer("srv", url)]):
                result = await client.call("mcp__srv__add", {"a": 2, "b": 3})
    assert result.value == "5"  # the served tool's text
    outer = telemetry.span("execute_tool mcp__srv__add")
    inner = telemetry.span("execute_tool add")
    assert inner.context.trace_id == outer.context.trace_id
    assert parent_id(inner) == outer.context.span_id
    assert inner.parent is not None and inner.parent.is_remote


async def test_a_served_call_continues_a_hand_set_traceparent(telemetry: Telemetry) -> None:
    """OT9 (server): an untraced client's ``_meta.traceparent`` is the served span's parent."""
    async with served(telemetry) as url:
        client = ToolRuntime()
        async with McpConnections(client, [HttpServer("srv", url)]):
            token = TRACEPARENT.set(HAND_SET)
            try:
                await client.call("mcp__srv__add", {"a": 2, "b": 3})
            finally:
                TRACEPARENT.reset(token)
            await client.call("mcp__srv__add", {"a": 1, "b": 1})
    continued, fresh = sorted(telemetry.spans("execute_tool add"), key=lambda span: span.start_time or 0)
    assert f"{continued.context.trace_id:032x}" == HAND_SET.split("-")[1]
    assert f"{parent_id(continued):016x}" == HAND_SET.split("-")[2]
    assert fresh.parent is None  # nothing incoming: a root span of its own


@pytest.mark.parametrize(
    "traceparent", ["garbage", "00-00000000000000000000000000000000-0000000000000000-01"]
)
async def test_an_invalid_incoming_traceparent_starts_a_fresh_trace(
    telemetry: Telemetry, traceparent: str
) -> None:
    """OT9 (server): a malformed ``traceparent`` is ignored, never an error for the call."""
    async with served(telemetry) as url:
        client = ToolRuntime()
        async with McpConnections(client, [HttpServer("srv", url)]):
            token = TRACEPARENT.set(traceparent)
            try:
                result = await client.call("mcp__srv__add", {"a": 2, "b": 3})
            finally:
                TRACEPARENT.reset(token)
    assert result.value == "5"  # the served tool's text
    assert telemetry.span("execute_tool add").parent is None


async def test_serve_reads_the_incoming_traceparent_itself(telemetry: Telemetry) -> None:
    """OT9 (server): with the SDK's own tracing middleware removed, toolrt still makes ``_meta.traceparent``
    the served span's parent (an SDK without tracing, or one configured without it)."""
    runtime = ToolRuntime()
    runtime.register(add)
    instrument(runtime, tracer_provider=telemetry.tracer_provider)
    server = build_mcp_server(runtime, mode="native")
    server.middleware = [
        layer for layer in server.middleware if type(layer).__name__ != "OpenTelemetryMiddleware"
    ]
    async with Client(server) as client:
        await client.call_tool("add", {"a": 2, "b": 3}, meta={"traceparent": HAND_SET})
        await client.call_tool("add", {"a": 1, "b": 1})
    continued, fresh = sorted(telemetry.spans("execute_tool add"), key=lambda span: span.start_time or 0)
    assert f"{continued.context.trace_id:032x}" == HAND_SET.split("-")[1]
    assert f"{parent_id(continued):016x}" == HAND_SET.split("-")[2]
    assert continued.parent is not None and continued.parent.is_remote
    assert fresh.parent is None
