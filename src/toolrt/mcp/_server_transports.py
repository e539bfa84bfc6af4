"""Serving a runtime over stdio (:func:`serve_stdio`) or streamable HTTP (:func:`serve_http`)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from toolrt._tool_runtime import ToolRuntime
from toolrt.mcp._http_safety import (
    StaticTokenVerifier,
    auth_settings,
    require_token_off_loopback,
    transport_security,
)
from toolrt.mcp._server import SERVED_AGENT, ServeMode, build_mcp_server, check_serve_mode

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_PORT", "serve_http", "serve_stdio"]

DEFAULT_PORT = 8000
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""A request body larger than this gets 413 before it is parsed (the SDK's default, 4 MiB)."""


async def serve_stdio(
    runtime: ToolRuntime,
    *,
    mode: ServeMode = "code",
    agent: Hashable = SERVED_AGENT,
    parent: Hashable | None = None,
) -> None:
    """Serve ``runtime`` on this process's stdin/stdout until the client closes it.

    What Claude Desktop, Cursor and Codex launch. Nothing else may write to stdout meanwhile.
    ``mode``, ``agent`` and ``parent`` are :func:`~toolrt.mcp.build_mcp_server`'s.
    """
    from mcp.server.stdio import stdio_server

    server = build_mcp_server(runtime, mode=mode, agent=agent, parent=parent)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(
    runtime: ToolRuntime,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    mode: ServeMode = "code",
    agent: Hashable = SERVED_AGENT,
    parent: Hashable | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    log_level: str = "warning",
) -> None:
    """Serve ``runtime`` over streamable HTTP at ``http://host:port/mcp`` until cancelled.

    Loopback by default, with ``Origin``/``Host`` checked against DNS rebinding. Any other ``host``
    needs ``token`` (a ``ValueError`` otherwise, before anything binds); with a token, a request
    without ``Authorization: Bearer <token>`` gets 401.
    """
    import uvicorn

    check_serve_mode(runtime, mode)
    require_token_off_loopback(host, token)
    app = build_http_app(
        runtime,
        host=host,
        port=port,
        token=token,
        mode=mode,
        agent=agent,
        parent=parent,
        max_body_bytes=max_body_bytes,
    )
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on"))
    await server.serve()


def build_http_app(
    runtime: ToolRuntime,
    *,
    host: str,
    port: int,
    token: str | None,
    mode: ServeMode,
    agent: Hashable = SERVED_AGENT,
    parent: Hashable | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Any:
    """The Starlette app :func:`serve_http` runs (for embedding in an ASGI server of your own)."""
    require_token_off_loopback(host, token)
    server = build_mcp_server(runtime, mode=mode, agent=agent, parent=parent)
    url = f"http://{host}:{port}"
    return server.streamable_http_app(
        host=host,
        transport_security=transport_security(host, port),
        max_request_body_size=max_body_bytes,
        token_verifier=StaticTokenVerifier(token) if token is not None else None,
        auth=auth_settings(url) if token is not None else None,
    )
