"""How an MCP server is reached: :class:`StdioServer`, :class:`HttpServer`, and the JSON config file."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrt._tool_definition import OutputBudget, is_valid_output_budget
from toolrt.mcp._errors import McpConfigError

__all__ = ["HttpServer", "ServerConfig", "StdioServer", "load_server_configs"]

# A server's key becomes part of every tool name (mcp__<server>__<tool>), and "__" is the separator.
_SERVER_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


def _check_common(server: StdioServer | HttpServer) -> None:
    """Check the settings every transport shares, storing ``idempotent_tools`` as a tuple."""
    name, output_budget, timeout_ms = server.name, server.output_budget, server.timeout_ms
    idempotent_tools: object = server.idempotent_tools
    if not isinstance(name, str) or not _SERVER_NAME.match(name) or "__" in name:
        raise McpConfigError(
            f"MCP server name {name!r} must be letters, digits, '_' or '-' (no '__'): "
            "it becomes part of every tool name, mcp__<server>__<tool>"
        )
    if output_budget is not None and not is_valid_output_budget(output_budget):
        raise McpConfigError(f'MCP server "{name}": output_budget must be a positive int or UNBOUNDED')
    if timeout_ms is not None and (
        isinstance(timeout_ms, bool)
        or not isinstance(timeout_ms, int | float)
        or not 0 < timeout_ms < math.inf
    ):
        raise McpConfigError(f'MCP server "{name}": timeout_ms must be a positive finite number')
    if not isinstance(idempotent_tools, list | tuple) or not all(
        isinstance(n, str) for n in idempotent_tools
    ):
        raise McpConfigError(f'MCP server "{name}": idempotent_tools must be a list of tool names')
    object.__setattr__(server, "idempotent_tools", tuple(idempotent_tools))


def _check_string_map(server: StdioServer | HttpServer, what: str, value: Mapping[str, str] | None) -> None:
    if value is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in dict(value).items()
    ):
        raise McpConfigError(f'MCP server "{server.name}": {what} must map strings to strings')


@dataclass(frozen=True, slots=True)
class StdioServer:
    """An MCP server run as a child process speaking JSON-RPC on its stdin/stdout.

    ``env`` is added to a minimal inherited environment (the SDK's default: ``PATH``, ``HOME``, ...,
    never the parent's secrets); ``output_budget`` overrides the runtime's result budget for this
    server's tools; ``timeout_ms`` their deadline; ``idempotent_tools`` names the tools (as the server
    calls them) that may be replayed after a restart even without ``idempotentHint``.

    >>> StdioServer("time", "mcp-server-time").name
    'time'
    """

    name: str
    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | Path | None = None
    output_budget: OutputBudget | None = field(default=None, kw_only=True)
    timeout_ms: float | None = field(default=None, kw_only=True)
    idempotent_tools: Sequence[str] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        _check_common(self)
        if not isinstance(self.command, str) or not self.command:
            raise McpConfigError(f'MCP server "{self.name}": command must be a non-empty string')
        if isinstance(self.args, str) or not all(isinstance(a, str) for a in self.args):
            raise McpConfigError(f'MCP server "{self.name}": args must be a list of strings')
        object.__setattr__(self, "args", tuple(self.args))
        _check_string_map(self, "env", self.env)


@dataclass(frozen=True, slots=True)
class HttpServer:
    """An MCP server reached over streamable HTTP at ``url`` (``headers`` sent with every request).

    >>> HttpServer("remote", "http://127.0.0.1:8000/mcp").url
    'http://127.0.0.1:8000/mcp'
    """

    name: str
    url: str
    headers: Mapping[str, str] | None = None
    output_budget: OutputBudget | None = field(default=None, kw_only=True)
    timeout_ms: float | None = field(default=None, kw_only=True)
    idempotent_tools: Sequence[str] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        _check_common(self)
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise McpConfigError(f'MCP server "{self.name}": url must start with http:// or https://')
        _check_string_map(self, "headers", self.headers)


ServerConfig = StdioServer | HttpServer
"""One MCP server's configuration: a child process (stdio) or a URL (streamable HTTP)."""


def load_server_configs(path: str | Path) -> list[ServerConfig]:
    """Read the ``mcpServers`` JSON file that Claude Desktop and Cursor use.

    Each entry is ``{"command", "args"?, "env"?, "cwd"?}`` (stdio) or ``{"url", "headers"?}``
    (streamable HTTP), plus toolrt's optional ``outputBudget``, ``timeoutMs`` and
    ``idempotentTools``. A malformed file raises :class:`McpConfigError` with one line naming the
    file, the server and what is wrong, before any server is started.
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise McpConfigError(f"{where}: cannot read the MCP config: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise McpConfigError(
            f"{where}: not JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("mcpServers"), dict):
        raise McpConfigError(f'{where}: expected an object with an "mcpServers" object')
    configs: list[ServerConfig] = []
    for name, entry in document["mcpServers"].items():
        configs.append(_entry(where, name, entry))
    return configs


_STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
_HTTP_KEYS = frozenset({"url", "headers", "type", "transport"})
_OUR_KEYS = frozenset({"outputBudget", "timeoutMs", "idempotentTools"})
# Keys other clients write that toolrt does not act on; accepted so one file serves every client.
_IGNORED_KEYS = frozenset({"disabled", "autoApprove", "alwaysAllow", "description", "type"})


def _entry(where: str, name: str, entry: object) -> ServerConfig:
    if not isinstance(entry, dict):
        raise McpConfigError(f'{where}: server "{name}" must be an object')
    unknown = set(entry) - _STDIO_KEYS - _HTTP_KEYS - _OUR_KEYS - _IGNORED_KEYS
    if unknown:
        raise McpConfigError(f'{where}: server "{name}" has unknown key(s) {sorted(unknown)}')
    common: dict[str, Any] = {
        "output_budget": entry.get("outputBudget"),
        "timeout_ms": entry.get("timeoutMs"),
        "idempotent_tools": entry.get("idempotentTools", ()),
    }
    try:
        if "command" in entry and "url" in entry:
            raise McpConfigError(f'server "{name}" has both "command" and "url"; give one')
        if "command" in entry:
            return StdioServer(
                name, entry["command"], entry.get("args", ()), entry.get("env"), entry.get("cwd"), **common
            )
        if "url" in entry:
            return HttpServer(name, entry["url"], entry.get("headers"), **common)
        raise McpConfigError(f'server "{name}" needs "command" (stdio) or "url" (streamable HTTP)')
    except McpConfigError as error:
        message = str(error)
        raise McpConfigError(message if message.startswith(where) else f"{where}: {message}") from None
