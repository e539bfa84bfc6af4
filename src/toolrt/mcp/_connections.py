"""McpConnections: every configured MCP server connected, its tools registered, kept in sync.

Each server tool becomes a raw :class:`~toolrt.ToolDefinition` on the runtime, so it goes through the
whole pipeline like any tool: approvals, the output budget, deadlines, cancellation, Code Mode.

* **Parameters** are the server's ``inputSchema`` in toolrt's subset (what the model and the Code
  Mode SDK read must be what the runtime understands): a node the subset cannot state reads as any
  value (``Any`` in the SDK). The definition has no ``validate_arguments``, so toolrt never rejects
  arguments the server would accept: validation stays with the server, whose error the model reads.
* **Output** is the ``outputSchema`` degraded into toolrt's subset (:mod:`toolrt.mcp._schemas`), or
  any JSON; the value is ``structuredContent``, else the content (:mod:`toolrt.mcp._results`).
* ``isError`` is a failure with the server's text; ``readOnlyHint`` makes the tool concurrency-safe;
  ``readOnlyHint``/``idempotentHint``/``idempotent_tools`` allow one replay after a restart.
* A server's tool set is swapped atomically: on ``tools/list_changed`` (and after a restart) the new
  set replaces the old in one synchronous step, and if any new tool cannot be registered (a name
  taken by another tool) the old set is put back and the failure logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt._events import Disposer
from toolrt._execution import ToolRunContext
from toolrt._tool_definition import UNBOUNDED, ToolDefinition, ToolOutput, render_value_as_text
from toolrt._tracing import current_traceparent
from toolrt.mcp._config import ServerConfig
from toolrt.mcp._errors import McpConfigError, McpServerError, McpToolError
from toolrt.mcp._names import mcp_tool_name
from toolrt.mcp._results import error_text, render_mcp_value, result_value
from toolrt.mcp._schemas import degrade_schema, parameters_schema
from toolrt.mcp._server_link import ServerLink
from toolrt.mcp._trace_context import TRACEPARENT

if TYPE_CHECKING:
    from mcp_types import Tool

    from toolrt._tool_runtime import ToolRuntime

__all__ = ["McpConnections"]

logger = logging.getLogger("toolrt")

PROGRESS_EVENT = "mcp/progress"
"""The session event a server's progress notification becomes (``callId``, ``server``, ``tool``, ...)."""


class McpConnections:
    """Connect MCP ``servers`` and register their tools on ``runtime`` for as long as the block lasts.

    ::

        async with McpConnections(runtime, [StdioServer("time", "mcp-server-time")]):
            result = await runtime.call("mcp__time__get_current_time", {"timezone": "UTC"})

    Entering connects every server (in order) and registers its tools as ``mcp__<server>__<tool>``;
    a server that cannot start, or a tool name that is already taken, raises
    :class:`~toolrt.mcp.McpServerError` and leaves nothing connected or registered. While open, a
    server that dies is restarted with backoff and its tool list re-synced; exiting unregisters
    every tool and stops every server.
    """

    def __init__(self, runtime: ToolRuntime, servers: Sequence[ServerConfig]) -> None:
        names = [server.name for server in servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise McpConfigError(f"MCP server names must be unique; repeated: {', '.join(duplicates)}")
        self._runtime = runtime
        self._servers = tuple(servers)
        self._links: list[ServerLink] = []
        # server name -> {registered name: (MCP tool name, disposer)}
        self._registered: dict[str, dict[str, tuple[ToolDefinition, Disposer]]] = {}
        # server name -> the tools/list it was last synced from (a restart that lists the same
        # tools leaves the registrations, and the tools/change observers, alone)
        self._listed: dict[str, list[Any]] = {}
        self._entered = False

    @property
    def servers(self) -> tuple[ServerConfig, ...]:
        """The configured servers, in order."""
        return self._servers

    def tool_names(self, server: str) -> list[str]:
        """The registered names of ``server``'s tools right now (sorted)."""
        return sorted(self._registered.get(server, {}))

    def restarts(self, server: str) -> int:
        """How many times ``server`` has been restarted since it first connected."""
        return self._link(server).restarts

    def protocol_version(self, server: str) -> str:
        """The MCP revision negotiated with ``server`` (the SDK's choice: the newest both speak)."""
        return self._link(server).protocol_version

    def _link(self, server: str) -> ServerLink:
        for link in self._links:
            if link.name == server:
                return link
        raise KeyError(server)

    async def __aenter__(self) -> McpConnections:
        if self._entered:
            raise RuntimeError("McpConnections is already open")
        self._entered = True
        try:
            for config in self._servers:
                link = ServerLink(config, self._sync)
                self._links.append(link)
                await link.start()
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._close()

    async def _close(self) -> None:
        for registered in self._registered.values():
            for _, dispose in registered.values():
                dispose()
        self._registered.clear()
        self._listed.clear()
        links, self._links = self._links, []
        for link in reversed(links):
            try:
                await link.close()
            except Exception as error:
                logger.warning('MCP server "%s": close failed: %s', link.name, error)

    # --- the tool set ----------------------------------------------------------------------------

    def _sync(self, link: ServerLink, tools: list[Tool]) -> None:
        """Swap ``link``'s registered tools for ``tools``: all or nothing (raises on failure)."""
        listing = [tool.model_dump(mode="json", by_alias=True) for tool in tools]
        if link.name in self._registered and self._listed.get(link.name) == listing:
            return
        wanted: dict[str, ToolDefinition] = {}
        for tool in tools:
            definition = self._definition(link, tool)
            if definition.name in wanted:
                # Two tools with one MCP name: the server listed a duplicate. Keep the first.
                logger.warning('MCP server "%s" lists tool "%s" twice', link.name, tool.name)
                continue
            wanted[definition.name] = definition
        old = self._registered.get(link.name, {})
        for _, dispose in old.values():
            dispose()
        added: dict[str, tuple[ToolDefinition, Disposer]] = {}
        try:
            for name, definition in wanted.items():
                added[name] = (definition, self._runtime.register(definition))
        except Exception as error:
            for _, dispose in added.values():
                dispose()
            failed = name
            restored: dict[str, tuple[ToolDefinition, Disposer]] = {}
            for kept, (definition, _) in old.items():
                restored[kept] = (definition, self._runtime.register(definition))
            self._registered[link.name] = restored
            raise McpServerError(
                f'MCP server "{link.name}": cannot register tool "{failed}": {error}; '
                "rename the server (its name prefixes every tool) or remove the other tool"
            ) from None
        self._registered[link.name] = added
        self._listed[link.name] = listing

    def _definition(self, link: ServerLink, tool: Tool) -> ToolDefinition:
        config = link.config
        runtime = self._runtime
        annotations = tool.annotations
        read_only = bool(annotations and annotations.read_only_hint)
        replayable = (
            read_only
            or bool(annotations and annotations.idempotent_hint)
            or tool.name in config.idempotent_tools
        )
        mcp_name = tool.name
        server_name = config.name
        structured = tool.output_schema is not None
        output = ToolOutput(
            schema=degrade_schema(tool.output_schema) if structured else {},
            render=render_value_as_text if structured else render_mcp_value,
        )

        async def execute(args: Any, ctx: ToolRunContext) -> Any:
            timeout_ms = config.timeout_ms if config.timeout_ms is not None else runtime.tool_timeout_ms
            # No deadline means no deadline: the SDK would otherwise fall back to the start timeout.
            read_timeout_s = _FOREVER_S if timeout_ms is UNBOUNDED else float(timeout_ms) / 1000  # type: ignore[arg-type]
            # The current span's context when a tracer is installed, else one set by hand.
            traceparent = current_traceparent() or TRACEPARENT.get()
            result = await link.call(
                mcp_name,
                args if isinstance(args, dict) else {},
                ctx.signal if isinstance(ctx.signal, AbortSignal) else AbortSignal(),
                replayable=replayable,
                read_timeout_s=read_timeout_s,
                progress=_progress_reporter(runtime, ctx, server_name, mcp_name),
                meta={"traceparent": traceparent} if traceparent else None,
            )
            if result.is_error:
                raise McpToolError(error_text(result.content))
            return result_value(result.structured_content, result.content)

        description = (
            tool.description or tool.title or f'The "{mcp_name}" tool of the MCP server "{server_name}".'
        )
        return ToolDefinition(
            name=mcp_tool_name(server_name, mcp_name),
            description=description,
            parameters=parameters_schema(tool.input_schema),
            output=output,
            execute=execute,
            timeout_ms=config.timeout_ms,
            max_output_chars=config.output_budget,
            is_concurrency_safe=_always if read_only else None,
        )


_FOREVER_S = 10.0**9


def _always(_: Any) -> bool:
    return True


def _progress_reporter(runtime: ToolRuntime, ctx: ToolRunContext, server: str, tool: str) -> Any:
    """Forward the server's progress notifications to the run's session events (if one is bound)."""
    sink = runtime.session_for(ctx.agent)
    if sink is None:
        return None
    call_id, root = ctx.call_id, ctx.root_call_id

    async def report(progress: float, total: float | None, message: str | None) -> None:
        data: dict[str, Any] = {"callId": call_id, "server": server, "tool": tool, "progress": progress}
        if root != call_id:
            data["rootCallId"] = root
        if total is not None:
            data["total"] = total
        if message is not None:
            data["message"] = message
        try:
            sink(PROGRESS_EVENT, data)
        except Exception as error:
            logger.warning('MCP server "%s": progress event dropped: %s', server, error)

    return report
