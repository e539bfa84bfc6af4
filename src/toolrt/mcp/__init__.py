"""MCP both ways: MCP servers as toolrt tool sources (the client), and toolrt served over MCP.

The client half connects servers configured in code (:class:`StdioServer`, :class:`HttpServer`) or
in the Claude-Desktop/Cursor JSON file (:func:`load_server_configs`) and registers every server tool
on a runtime as ``mcp__<server>__<tool>`` (:func:`mcp_tool_name`), behind the whole policy pipeline:
output budgets, deadlines, cancellation, approvals, Code Mode. :class:`McpConnections` keeps them in
sync and restarts servers that die. Needs the ``mcp`` extra (``pip install 'toolrt[mcp]'``); the SDK
is imported only when a connection opens, so ``import toolrt.mcp`` stays cheap.

The server half serves a runtime over MCP (``toolrt mcp serve``): :func:`build_mcp_server` returns
the SDK's server for it, in ``code`` mode (one sandboxed ``run_code`` tool whose description carries
the SDK: a Code Mode proxy for every server behind it) or ``native`` mode (every tool);
:func:`serve_stdio` and :func:`serve_http` (loopback, ``Origin`` checked, a bearer token off
loopback) put it on a transport.
"""

from toolrt.mcp._config import HttpServer, ServerConfig, StdioServer, load_server_configs
from toolrt.mcp._connections import McpConnections
from toolrt.mcp._errors import McpConfigError, McpServerError, McpToolError
from toolrt.mcp._names import mcp_tool_name
from toolrt.mcp._server import build_mcp_server
from toolrt.mcp._server_transports import serve_http, serve_stdio
from toolrt.mcp._trace_context import TRACEPARENT

__all__ = [
    "TRACEPARENT",
    "HttpServer",
    "McpConfigError",
    "McpConnections",
    "McpServerError",
    "McpToolError",
    "ServerConfig",
    "StdioServer",
    "build_mcp_server",
    "load_server_configs",
    "mcp_tool_name",
    "serve_http",
    "serve_stdio",
]
