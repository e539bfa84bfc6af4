"""One MCP server's live connection: started, watched, restarted with backoff, and called through.

A supervisor task owns the SDK ``Client`` (anyio requires a connection to be opened and closed by
one task). It connects, lists the tools, hands them to the owner, and then waits for one of three
things: the server's stream ending (the process died, or wrote garbage before it was ready), a
changed tool list (a re-list: ``notifications/tools/list_changed`` from a handshake-era server, an
event on the ``subscriptions/listen`` stream of a 2026-07-28 one), or the owner closing. A dead
server is restarted after 0.1 s, 0.2 s, 0.4 s, ... (at most :data:`BACKOFF_MAX_S`), and every call
that was in flight fails at once:
the SDK answers each pending request with ``Connection closed`` the moment the stream ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import IO, TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt._errors import clip_text
from toolrt.mcp._config import HttpServer, ServerConfig, StdioServer
from toolrt.mcp._errors import McpServerError

if TYPE_CHECKING:
    from mcp_types import CallToolResult, Tool

    from mcp import Client

__all__ = ["BACKOFF_MAX_S", "STARTUP_TIMEOUT_S", "ServerLink"]

logger = logging.getLogger("toolrt")

STARTUP_TIMEOUT_S = 30.0
"""How long a server may take to start and list its tools before it counts as failed."""

BACKOFF_START_S = 0.1
BACKOFF_MAX_S = 10.0
"""The longest pause between two restarts of a server that keeps dying."""

# A connection that lived this long was healthy: its next death restarts without a long pause.
_HEALTHY_S = 10.0
# How long a call made while its server restarts waits for the new connection.
RECONNECT_WAIT_S = 5.0
# How long a cancelled call waits for the SDK to send notifications/cancelled and settle.
_CANCEL_SETTLE_S = 2.0
_STDERR_TAIL = 600

ToolsHandler = Callable[["ServerLink", "list[Tool]"], None]
ProgressHandler = Callable[[float, float | None, str | None], Any]


class ServerLink:
    """The connection to one configured server (see the module docstring)."""

    def __init__(self, config: ServerConfig, on_tools: ToolsHandler) -> None:
        self.config = config
        self._on_tools = on_tools
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None
        self._last_error = ""
        self.restarts = 0
        self.protocol_version = ""

    @property
    def name(self) -> str:
        """The server's configured name."""
        return self.config.name

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect for the first time; raise :class:`McpServerError` (with the stderr tail) on failure."""
        first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._supervise(first), name=f"mcp-server-{self.name}")
        try:
            await first
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the connection (and stop the server process); no restart follows."""
        self._closing.set()
        task, self._task = self._task, None
        if task is not None:
            if not self._ready.is_set():
                # Between connections (a backoff pause, a restart's handshake) nothing would see
                # the closing flag until a timeout: stop the attempt instead.
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def _supervise(self, first: asyncio.Future[None]) -> None:
        attempt = 0
        while not self._closing.is_set():
            started = time.monotonic()
            try:
                await self._connection(first)
            except Exception as raised:
                error = _leaf(raised)
                message = self._describe(error)
                if not first.done():
                    first.set_exception(
                        error if isinstance(error, McpServerError) else McpServerError(message)
                    )
                    return
                self._last_error = message
                logger.warning("%s", message)
            if self._closing.is_set() or not first.done():
                if not first.done():
                    first.set_exception(
                        McpServerError(f'MCP server "{self.name}" closed before it was ready')
                    )
                return
            attempt = 1 if time.monotonic() - started > _HEALTHY_S else attempt + 1
            delay = min(BACKOFF_START_S * 2 ** (attempt - 1), BACKOFF_MAX_S)
            logger.warning(
                'MCP server "%s" is gone; restarting in %.1fs (attempt %d)', self.name, delay, attempt
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), delay)
            self.restarts += 1

    async def _connection(self, first: asyncio.Future[None]) -> None:
        import anyio

        from mcp import Client

        gone = asyncio.Event()
        garbage: list[str] = []
        async with AsyncExitStack() as stack:
            transport = await self._transport(stack)
            client = Client(
                _watched(transport, gone, garbage, self._ready),
                message_handler=self._on_message,
                client_info=_client_info(),
                # Bounds the handshake and the listing (a server that never answers cannot hang
                # the start); each call passes its own deadline.
                read_timeout_seconds=STARTUP_TIMEOUT_S,
            )
            try:
                await stack.enter_async_context(client)
                group = await stack.enter_async_context(anyio.create_task_group())
                if _listens(client):
                    # Subscribed (acknowledged) before the listing: no change can fall in between.
                    await group.start(self._listen, client)
                tools = await list_all_tools(client)
            except Exception as error:
                if _is_timeout(error):
                    within = f"{STARTUP_TIMEOUT_S:.0f}s"
                    raise McpServerError(
                        f'MCP server "{self.name}" did not start within {within}{self._tail()}'
                    ) from None
                if garbage:
                    raise McpServerError(
                        f'MCP server "{self.name}" wrote something that is not JSON-RPC on its stdout '
                        f"({clip_text(garbage[0], 200)}){self._tail()}"
                    ) from None
                logger.debug("startup failed", exc_info=True)
                raise McpServerError(f"{self._describe(error)}") from None
            if not first.done():
                self._on_tools(self, tools)  # a first connection that cannot register fails loudly
            else:
                self._resync(tools)
            self.protocol_version = client.protocol_version
            self._client = client
            self._ready.set()
            if not first.done():
                first.set_result(None)
            try:
                await self._watch(client, gone)
            finally:
                group.cancel_scope.cancel()
                self._ready.clear()
                self._client = None
            if gone.is_set() and not self._closing.is_set():
                self._last_error = f'MCP server "{self.name}" exited{self._tail()}'

    async def _watch(self, client: Client, gone: asyncio.Event) -> None:
        """Until the stream ends or the owner closes, re-list the tools on every change."""
        while True:
            waiters = [asyncio.ensure_future(event.wait()) for event in (gone, self._closing, self._changed)]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            if gone.is_set() or self._closing.is_set():
                return
            self._changed.clear()
            try:
                tools = await list_all_tools(client)
            except Exception as error:
                logger.warning('MCP server "%s": tools changed, re-listing failed: %s', self.name, error)
                continue
            self._resync(tools)

    def _resync(self, tools: list[Tool]) -> None:
        try:
            self._on_tools(self, tools)
        except Exception as error:
            # All or nothing: the owner restored the old set; the model keeps what worked.
            logger.warning('MCP server "%s": tools changed, re-sync failed: %s', self.name, error)

    async def _listen(self, client: Client, *, task_status: Any) -> None:
        # 2026-07-28 servers announce changes on a subscriptions/listen stream, not a notification.
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _event in subscription:
                    self._changed.set()
        except Exception as error:
            logger.warning('MCP server "%s": tools/list_changed subscription failed: %s', self.name, error)
        finally:
            if not started:
                task_status.started()

    async def _on_message(self, message: Any) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._changed.set()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if isinstance(config, StdioServer):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            if self._stderr is not None:
                self._stderr.close()
            # A real file: the child writes its stderr straight into it, and the tail names the cause.
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=None if config.env is None else dict(config.env),
                cwd=config.cwd,
                encoding_error_handler="replace",
            )
            return stdio_client(params, errlog=self._stderr)
        assert isinstance(config, HttpServer)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(config.headers or {}), timeout=httpx2.Timeout(30.0, read=300.0))
        )
        return streamable_http_client(config.url, http_client=http)

    def _tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()
        except (OSError, ValueError):
            return ""
        # Servers log with padding and box drawing; the tail keeps the words, not the layout.
        lines = [" ".join(line.split()) for line in text.splitlines()]
        text = "\n".join(line for line in lines if line.strip("│╭╮╰╯─ "))
        if not text:
            return ""
        return f"; its stderr ends: {text[-_STDERR_TAIL:]}"

    def _describe(self, error: BaseException) -> str:
        error = _leaf(error)
        if isinstance(error, McpServerError):
            return str(error)
        what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if isinstance(error, OSError) and isinstance(self.config, StdioServer):
            return f'MCP server "{self.name}" could not be started ({self.config.command}): {what}'
        return f'MCP server "{self.name}" failed: {what}{self._tail()}'

    # --- calls -----------------------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        signal: AbortSignal,
        *,
        replayable: bool,
        read_timeout_s: float | None,
        progress: ProgressHandler | None,
        meta: dict[str, Any] | None,
    ) -> CallToolResult:
        """Call ``tool``; a server death fails it at once, or replays it once when ``replayable``."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        for attempt in (1, 2):
            client = await self._connected_client(signal)
            try:
                return await self._call_once(
                    client, tool, dict(arguments), signal, read_timeout_s, progress, meta
                )
            except MCPError as error:
                if error.code == REQUEST_TIMEOUT:
                    raise McpServerError(
                        f'MCP server "{self.name}" did not answer "{tool}" within {read_timeout_s:g}s'
                    ) from None
                if error.code != CONNECTION_CLOSED:
                    raise McpServerError(
                        f'MCP server "{self.name}" refused "{tool}": {error.message}'
                    ) from None
            # The connection closed under the call: the server died (or is being closed).
            if self._closing.is_set():
                raise McpServerError(f'MCP server "{self.name}" was closed during the call to "{tool}"')
            if not replayable or attempt == 2:
                await asyncio.sleep(0)
                raise McpServerError(
                    f'MCP server "{self.name}" exited during the call to "{tool}"{self._tail()}. '
                    + (
                        "It is being restarted; the call was not retried because it may have had effects "
                        "(a read-only or idempotent tool would have been)."
                        if not replayable
                        else "It was restarted and the call replayed once; it failed again."
                    )
                )
            # Wait until the supervisor notices the death, so the replay goes to the new process.
            await self._wait_gone(client)
        raise AssertionError("unreachable")

    async def _wait_gone(self, client: Client) -> None:
        deadline = time.monotonic() + RECONNECT_WAIT_S
        while self._client is client and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    async def _connected_client(self, signal: AbortSignal) -> Client:
        client = self._client
        if client is not None and self._ready.is_set():
            return client
        ready = asyncio.ensure_future(self._ready.wait())
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait(
                {ready, aborted}, timeout=RECONNECT_WAIT_S, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            ready.cancel()
            aborted.cancel()
        signal.throw_if_aborted()
        client = self._client
        if client is None or not self._ready.is_set():
            why = f" ({self._last_error})" if self._last_error else ""
            raise McpServerError(f'MCP server "{self.name}" is not connected; it is being restarted{why}')
        return client

    async def _call_once(  # noqa: PLR0917 - one private call site, in order
        self,
        client: Client,
        tool: str,
        arguments: dict[str, Any],
        signal: AbortSignal,
        read_timeout_s: float | None,
        progress: ProgressHandler | None,
        meta: dict[str, Any] | None,
    ) -> CallToolResult:
        # The SDK call runs in its own task so an abort can cancel it: the SDK then sends
        # notifications/cancelled (stdio) or drops the request's stream (HTTP), as the spec asks.
        call = asyncio.ensure_future(
            client.call_tool(
                tool,
                arguments,
                read_timeout_seconds=read_timeout_s,
                progress_callback=progress,  # type: ignore[arg-type]
                meta=meta,  # type: ignore[arg-type]
            )
        )
        # A callback, not a task awaiting signal.wait(): one task fewer per call. The signal may fire
        # on another thread, so the cancel is handed to this loop.
        loop = asyncio.get_running_loop()

        def on_abort(_reason: object) -> None:
            loop.call_soon_threadsafe(call.cancel)

        stop_watching = signal.add_callback(on_abort)
        try:
            await asyncio.wait({call})
        finally:
            stop_watching()
            if not call.done():
                call.cancel()
                await asyncio.wait({call}, timeout=_CANCEL_SETTLE_S)
        if call.cancelled():
            signal.throw_if_aborted()
        return call.result()


async def list_all_tools(client: Client) -> list[Tool]:
    """Every tool of the server, following pagination (bounded: a cursor loop cannot hang us)."""
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(1_000):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise McpServerError("tools/list did not end after 1,000 pages")


def _leaf(error: BaseException) -> BaseException:
    """The one real error inside the exception groups anyio's task groups wrap it in."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _is_timeout(error: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError
    from mcp_types import REQUEST_TIMEOUT

    return isinstance(error, TimeoutError) or (isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT)


def _listens(client: Client) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = client.server_capabilities.tools
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS and bool(tools and tools.list_changed)


def _client_info() -> Any:
    from mcp_types import Implementation

    return Implementation(name="toolrt", version="0.1.0")


@asynccontextmanager
async def _watched(
    transport: Any, gone: asyncio.Event, garbage: list[str], ready: asyncio.Event
) -> AsyncIterator[Any]:
    """``transport`` with its read stream watched, so the end of the stream is seen while idle.

    The SDK notices a closed stream only through pending requests; the watcher sets ``gone`` when
    the server's stream ends, and ends the stream itself when the server writes garbage before it
    is ready (a server printing a banner on stdout would otherwise hang the handshake). It wraps the
    stream in place rather than relaying it through a task, so a message costs no extra task hop.
    """
    async with transport as (read, write):
        yield _WatchedReadStream(read, gone, garbage, ready), write


class _WatchedReadStream:
    """The SDK's read stream (its ``ReadStream`` protocol), reporting its end to the supervisor.

    The SDK's dispatcher always has a read pending on it, so seeing the end here is seeing it at
    once, idle or not.
    """

    def __init__(self, inner: Any, gone: asyncio.Event, garbage: list[str], ready: asyncio.Event) -> None:
        self._inner = inner
        self._gone = gone
        self._garbage = garbage
        self._ready = ready

    @property
    def last_context(self) -> Any:
        # The dispatcher duck-types this (a streamable HTTP message's sender context).
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._inner.receive()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            self._gone.set()
            raise anyio.EndOfStream from None
        if isinstance(item, Exception) and not self._ready.is_set():
            self._garbage.append(str(item))
            self._gone.set()
            raise anyio.EndOfStream
        return item

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
