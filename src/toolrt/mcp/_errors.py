"""The MCP client's exceptions: a bad configuration, an unusable server, a tool that reported failure.

::

    ToolrtError
    ├── McpConfigError   MCP_CONFIG (also a ValueError): a server configuration that cannot be used
    ├── McpServerError   MCP_SERVER_UNAVAILABLE: a server that cannot be started, reached or kept
    └── McpToolError     MCP_TOOL_ERROR: the server answered the call with ``isError``

Inside a call each becomes a model-visible failure (``error.info`` names the class and code); the
first two also raise from :class:`toolrt.mcp.McpConnections` when a server cannot be connected.
"""

from __future__ import annotations

from toolrt._errors import ToolrtError

__all__ = ["McpConfigError", "McpServerError", "McpToolError"]


class McpConfigError(ToolrtError, ValueError):
    """An MCP server configuration that cannot be used; the one-line message names the file and server."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "MCP_CONFIG")


class McpServerError(ToolrtError):
    """An MCP server that could not be started, connected or restarted (names it, with its stderr tail)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "MCP_SERVER_UNAVAILABLE")


class McpToolError(ToolrtError):
    """An MCP tool answered with ``isError``: the message is the server's own text, for the model."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "MCP_TOOL_ERROR")
