"""A runtime served over MCP: :func:`build_mcp_server` maps toolrt's tools and results to the SDK's.

Two presentations, chosen per server, not per runtime:

* ``native`` lists every tool the served agent can see with its input schema, its output schema (when
  the value is an object, the only kind MCP's ``outputSchema`` accepts) and ``readOnlyHint`` (a tool
  whose concurrency classifier says it is safe). ``structuredContent`` is the canonical value when
  its JSON fits the tool's output budget; a larger one is served cut, as an error result (the
  ``outputSchema`` promises the whole value, the budget promises the client's context is not flooded).
* ``code`` lists one tool, ``run_code``, whose description carries the typed SDK of every tool — the
  same text a model reads in toolrt's own Code Mode prompt (rendered by Code Mode, not copied). The
  program runs in the runtime's code runtime (the sandbox); each ``await tools.x(...)`` in it goes
  through the pipeline and its policies. So one MCP tool stands for any set of MCP servers connected
  with :class:`~toolrt.mcp.McpConnections`, behind the policies and the sandbox.

Every call goes through ``runtime.execute`` under one agent key (``"mcp"`` by default), so scoped
policies and approvals apply. A served run's approvals go to ``runtime.approval``; with none, the
server installs an answerer-less :class:`~toolrt.policies.Approvals` while it serves, so a call that
asks is denied with ``tool "x" requires approval, but no approval channel is available`` instead of
running or hanging. Model mistakes (invalid arguments, a failing body, a denial) are results with
``isError``; a name the server does not serve is a JSON-RPC error (``-32602``), as MCP specifies.

When the client cancels a call or goes away, the SDK cancels the handler's task and the pipeline
aborts the run: a Code Mode run's sandbox process is killed and reaped, and the server serves on.

The way back to the client goes through the runtime's public seams only: ``tools/change`` becomes
``notifications/tools/list_changed`` (or a ``subscriptions/listen`` event), the served agent's
session sink turns ``mcp/progress`` events into ``notifications/progress``, and Python log records
made during a call become its ``notifications/message``. The core knows nothing of MCP for this.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import difflib
import functools
import importlib.metadata
import itertools
import json
import logging
import warnings
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Hashable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Literal

from toolrt._abort import AbortSignal
from toolrt._execution import ToolExecutionInput
from toolrt._json import thaw
from toolrt._registry import RUN_CODE_NAME
from toolrt._results import ToolExecutionResult
from toolrt._tool_definition import ToolDefinition, Unbounded
from toolrt._tool_runtime import Scope, ToolRuntime
from toolrt._tracing import remote_parent
from toolrt.mcp._connections import PROGRESS_EVENT

if TYPE_CHECKING:
    import mcp_types
    from mcp.server import Server

__all__ = ["SERVED_AGENT", "ServeMode", "build_mcp_server", "check_serve_mode"]

ServeMode = Literal["code", "native"]

SERVED_AGENT = "mcp"
"""The agent key every served call runs under (scoped policies and approvals see it)."""

_MODES = ("code", "native")
_LISTED_NAMES = 10
_call_ids = itertools.count(1)


def check_serve_mode(runtime: ToolRuntime, mode: object) -> ServeMode:
    """``mode`` when the runtime can serve it; else a one-line ``ValueError`` saying what to change."""
    if mode not in _MODES:
        raise ValueError(f'serve mode must be "code" or "native", got {mode!r}')
    if mode == "code" and runtime.code_runtime is None:
        raise ValueError(
            'serving in mode "code" needs a code runtime: '
            'ToolRuntime(code_runtime=toolrt.sandbox.PythonSandboxRuntime()), or serve mode "native"'
        )
    return "code" if mode == "code" else "native"


def build_mcp_server(
    runtime: ToolRuntime,
    *,
    mode: ServeMode = "code",
    agent: Hashable = SERVED_AGENT,
    parent: Hashable | None = None,
    name: str = "toolrt",
) -> Server[Any]:
    """The SDK's low-level ``Server`` serving ``runtime`` in ``mode`` (``code`` or ``native``).

    Run it over any SDK transport, or use :func:`serve_stdio` / :func:`serve_http`. While it serves
    (its lifespan), the scope ``agent`` is open on the runtime and presents ``mode``, so a runtime
    built for Code Mode can be served natively and the other way round. That scope is the server's:
    to restrict or police what it serves, open a scope of your own and pass its key as ``parent``
    (the served scope inherits its restrictions, guards and listeners).

    >>> from toolrt import ToolRuntime, tool
    >>> @tool
    ... async def shout(text: str) -> str:
    ...     '''Return ``text`` in capitals.'''
    ...     return text.upper()
    >>> runtime = ToolRuntime()
    >>> _ = runtime.register(shout)
    >>> server = build_mcp_server(runtime, mode="native")   # mcp.Client(server) connects in-process
    """
    checked = check_serve_mode(runtime, mode)
    try:
        import mcp_types as types
        from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    except ImportError as error:  # pragma: no cover - the extra is installed in the test environment
        raise ImportError("serving over MCP needs the mcp extra: pip install 'toolrt[mcp]'") from error
    try:
        version = importlib.metadata.version("toolrt")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree, not installed
        version = ""

    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

    served = _ServedRuntime(runtime, checked, agent, parent)
    # A 2026-07-28 client hears of changes only on a subscriptions/listen stream it opened.
    bus = InMemorySubscriptionBus()
    listen = ListenHandler(bus)
    served.announce_on(bus)

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        with served.serving():
            try:
                yield {}
            finally:
                listen.close()

    async def list_tools(ctx: Any, _params: mcp_types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=served.tools(_connection_of(ctx.session)))

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> Any:
        connection = _connection_of(ctx.session)
        served.watch(connection)
        if params.name not in served.names():
            raise MCPError(types.INVALID_PARAMS, served.unknown_tool_message(params.name))
        # From 2026-07-28 each request opts in to logs at a level and the SDK drops what is below it.
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        level = _LOG_LEVELS[0] if modern else served.log_level(connection)
        channel = _CallChannel(ctx.session, ctx.request_id, level)
        # The client's trace (its request's _meta.traceparent) is the parent of this call's spans.
        meta = params.meta
        traceparent = meta.get("traceparent") if isinstance(meta, dict) else None
        with remote_parent(traceparent if isinstance(traceparent, str) else None):
            result, definition = await served.call(params.name, params.arguments, channel)
        return served.result(result, definition)

    async def set_logging_level(ctx: Any, params: mcp_types.SetLevelRequestParams) -> Any:
        served.set_log_level(_connection_of(ctx.session), params.level)
        return types.EmptyResult()

    with warnings.catch_warnings():
        # Deprecated for the 2026-07-28 protocol, where the SDK gates logs per request itself; the
        # handshake-era clients of today still set a level before they read a tool's logs.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return _server_class()(
            name,
            version=version,
            lifespan=lifespan,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=set_logging_level,
            on_subscriptions_listen=listen,
        )


@functools.cache
def _server_class() -> type[Server[Any]]:
    from mcp.server import Server
    from mcp.server.lowlevel.server import NotificationOptions

    class ListChangedServer(Server[Any]):
        """Declares ``tools.listChanged`` on every transport (the HTTP manager builds its own options)."""

        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True),
                experimental_capabilities,
                extensions,
            )

    return ListChangedServer


def _connection_of(session: Any) -> Any:
    # The SDK's ServerSession is made afresh for every request; what outlives a request (the log
    # level a client set, the channel for an unsolicited list_changed) belongs to its Connection,
    # which the low-level context does not expose otherwise.
    return session._connection


_LOG_LEVEL_KEY = "toolrt.log_level"
_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_DEFAULT_LOG_LEVEL = "warning"
"""What a client that never sent ``logging/setLevel`` receives of a tool's logs."""


def _mcp_level(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    return "info" if levelno >= logging.INFO else "debug"


class _CallChannel:
    """The way back to the client for one ``tools/call``: its progress and log notifications, in order.

    A body may report from a worker thread, and the MCP client half reports an upstream server's
    progress from its own task; everything is handed to the event loop and sent by a chain of tasks,
    so notifications keep the order they were made in. The tasks run in an empty context: the SDK's
    own logging while sending must not come back here as a tool's log.
    """

    def __init__(self, session: Any, request_id: Any, log_level: str) -> None:
        self._session = session
        self._request_id = request_id
        self._log_floor = _LOG_LEVELS.index(log_level)
        self._loop = asyncio.get_running_loop()
        self._tail: asyncio.Task[None] | None = None

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Send ``notifications/progress`` with the client's token (nothing if it asked for none)."""
        # The session knows the caller's token on JSON-RPC and the caller's callback in-process.
        self._post(lambda: self._session.report_progress(progress, total, message))

    def log(self, level: str, logger: str, data: Any) -> None:
        """Send ``notifications/message`` if ``level`` is at or above the client's level."""
        if _LOG_LEVELS.index(level) < self._log_floor:
            return

        async def send() -> None:
            from mcp.shared.exceptions import MCPDeprecationWarning

            with warnings.catch_warnings():
                # Deprecated for 2026-07-28 (the SDK then gates by the request's own opt-in).
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                coroutine = self._session.send_log_message(
                    level, data, logger, related_request_id=self._request_id
                )
            await coroutine

        self._post(send)

    def _post(self, send: Callable[[], Awaitable[None]]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closing: the client is gone anyway
            self._loop.call_soon_threadsafe(self._chain, send)

    def _chain(self, send: Callable[[], Awaitable[None]]) -> None:
        previous = self._tail

        async def run() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            with contextlib.suppress(Exception):  # a notification is best effort; the call goes on
                await send()

        self._tail = self._loop.create_task(run(), context=contextvars.Context())

    async def drain(self) -> None:
        """Wait until every notification made so far is sent (before the result goes out)."""
        await asyncio.sleep(0)  # let reports handed over from threads reach the chain
        if self._tail is not None:
            await asyncio.wait([self._tail])


_current_call: contextvars.ContextVar[_CallChannel | None] = contextvars.ContextVar(
    "toolrt_mcp_served_call", default=None
)


class _ClientLogHandler(logging.Handler):
    """Python log records made while a served call runs, sent to its client as ``notifications/message``.

    Installed on the root logger while serving; a record outside a served call is not its business.
    Which records exist at all is still the loggers' levels' choice, as for any handler.
    """

    def emit(self, record: logging.LogRecord) -> None:
        channel = _current_call.get()
        if channel is None:
            return
        try:
            channel.log(_mcp_level(record.levelno), record.name, record.getMessage())
        except Exception:  # pragma: no cover - a log line must never fail the call
            self.handleError(record)


_LOG_HANDLER = _ClientLogHandler()
_log_handler_users = 0


def _use_log_handler() -> None:
    # One handler for every server in the process: the record's call (a context variable) says
    # which client it is for, so a second handler would send each line twice.
    global _log_handler_users
    if _log_handler_users == 0:
        logging.getLogger().addHandler(_LOG_HANDLER)
    _log_handler_users += 1


def _release_log_handler() -> None:
    global _log_handler_users
    _log_handler_users -= 1
    if _log_handler_users == 0:
        logging.getLogger().removeHandler(_LOG_HANDLER)


class _ServedRuntime:
    """The runtime as one agent sees it while served: what is listed, how a call runs and maps back."""

    def __init__(
        self, runtime: ToolRuntime, mode: ServeMode, agent: Hashable, parent: Hashable | None
    ) -> None:
        self._runtime = runtime
        self._mode = mode
        self._agent = agent
        self._parent = parent
        self._scope: Scope | None = None
        self._connections = 0
        self._restore_approval = False
        self._connections_seen: weakref.WeakSet[Any] = weakref.WeakSet()
        self._listed: tuple[tuple[str, int], ...] | None = None
        self._change_pending = False
        self._calls: dict[str, _CallChannel] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._undo: list[Callable[[], None]] = []
        self._bus: Any = None

    @contextmanager
    def serving(self) -> Iterator[None]:
        # Reference-counted: an HTTP app and in-process clients may enter the lifespan more than once.
        if self._connections == 0:
            scope = self._runtime.scope(self._agent, parent=self._parent)
            try:
                scope.present_as(self._mode)
            except BaseException:
                scope.close()
                raise
            self._scope = scope
            self._listen(asyncio.get_running_loop())
            if self._runtime.approval is None:
                from toolrt.policies import Approvals

                # No answerer: every Ask is denied as "no approval channel is available", at once.
                self._runtime.approval = Approvals()
                self._restore_approval = True
        self._connections += 1
        try:
            yield
        finally:
            self._connections -= 1
            if self._connections == 0:
                if self._restore_approval:
                    self._runtime.approval = None
                    self._restore_approval = False
                while self._undo:
                    self._undo.pop()()
                if self._scope is not None:
                    self._scope.close()
                    self._scope = None

    def _listen(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hook the runtime's seams for the way back: tools/change, the session sink, Python logging."""

        def changed(_change: Any) -> None:
            # A burst (an MCP server re-syncing twenty tools) becomes one notification per client.
            if self._change_pending:
                return
            self._change_pending = True
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._spawn, self._send_list_changed)

        self._undo.append(self._runtime.on("tools/change", changed))
        earlier = self._runtime.session_for(self._agent)

        def sink(kind: str, data: Mapping[str, Any]) -> Any:
            if kind == PROGRESS_EVENT:
                channel = self._calls.get(str(data.get("rootCallId", data.get("callId"))))
                if channel is not None:
                    channel.progress(data["progress"], data.get("total"), data.get("message"))
            return None if earlier is None else earlier(kind, data)

        unbind = self._runtime.bind_session(self._agent, sink)

        def restore_sink() -> None:
            unbind()
            if earlier is not None:
                self._runtime.bind_session(self._agent, earlier)

        self._undo.append(restore_sink)
        _use_log_handler()
        self._undo.append(_release_log_handler)

    def _spawn(self, send: Callable[[], Coroutine[Any, Any, None]]) -> None:
        task = asyncio.get_running_loop().create_task(send(), context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_list_changed(self) -> None:
        self._change_pending = False
        # Only a client holding a list that is now stale is told (a change in another agent's scope
        # leaves what this server serves as it was).
        if self._listed is None or self._listing() == self._listed:
            return
        if self._bus is not None:
            from mcp.server.subscriptions import ToolsListChanged

            await self._bus.publish(ToolsListChanged())
        for connection in list(self._connections_seen):
            # Best effort by the SDK's contract: a client that went away is dropped, never raised.
            await connection.outbound.notify("notifications/tools/list_changed", None)

    def _listing(self) -> tuple[tuple[str, int], ...]:
        listing = tuple((name, id(definition)) for name, definition in self._served_tools().items())
        if self._mode == "code":
            # run_code's description carries the SDK of every tool: it changes with them.
            visible = self._runtime.visible_tools(self._agent)
            listing += tuple((name, id(definition)) for name, definition in visible.items())
        return listing

    def announce_on(self, bus: Any) -> None:
        """Publish list changes on ``bus`` too (the SDK's fan-out to ``subscriptions/listen`` streams)."""
        self._bus = bus

    def watch(self, connection: Any) -> None:
        """Remember a client connection, to tell it when the tool list changes."""
        self._connections_seen.add(connection)

    def log_level(self, connection: Any) -> str:
        """The level the client set with ``logging/setLevel`` (``warning`` until it does)."""
        level = connection.state.get(_LOG_LEVEL_KEY, _DEFAULT_LOG_LEVEL)
        return level if level in _LOG_LEVELS else _DEFAULT_LOG_LEVEL

    def set_log_level(self, connection: Any, level: str) -> None:
        """Record a client's ``logging/setLevel`` on its connection (the SDK's per-connection state)."""
        connection.state[_LOG_LEVEL_KEY] = level

    def _served_tools(self) -> dict[str, ToolDefinition]:
        visible = self._runtime.visible_tools(self._agent)
        if self._mode == "code":
            return {name: visible[name] for name in (RUN_CODE_NAME,) if name in visible}
        return {name: definition for name, definition in visible.items() if name != RUN_CODE_NAME}

    def names(self) -> set[str]:
        """The tool names this server serves right now."""
        return set(self._served_tools())

    def unknown_tool_message(self, name: str) -> str:
        """What a client reads when it calls a name this server does not serve."""
        served = sorted(self.names())
        if len(served) <= _LISTED_NAMES:
            return f'unknown tool "{name}": this server serves {", ".join(served) if served else "no tools"}'
        # A proxy may serve hundreds of tools: name the likely ones, not all of them.
        close = difflib.get_close_matches(name, served, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f'unknown tool "{name}": this server serves {len(served)} tools (see tools/list){hint}'

    def tools(self, connection: Any = None) -> list[mcp_types.Tool]:
        """The ``tools/list`` answer, in listing order (``connection`` is told when it goes stale)."""
        import mcp_types as types

        if connection is not None:
            self.watch(connection)
        self._listed = self._listing()

        tools: list[types.Tool] = []
        for name, definition in self._served_tools().items():
            if name == RUN_CODE_NAME:
                tools.append(self._run_code_tool(definition))
                continue
            output = _object_schema(definition)
            tools.append(
                types.Tool(
                    name=name,
                    description=definition.description,
                    input_schema=thaw(definition.parameters),
                    output_schema=output,
                    annotations=types.ToolAnnotations(read_only_hint=True)
                    if _is_read_only(definition)
                    else None,
                )
            )
        return tools

    def _run_code_tool(self, definition: ToolDefinition) -> mcp_types.Tool:
        import mcp_types as types

        from toolrt.codemode._prompt_sections import render_sdk

        # The SDK a model would read in toolrt's Code Mode prompt, rendered by Code Mode itself; an MCP
        # client has no system-prompt section to put it in, so it rides in the tool's description.
        sdk = render_sdk(self._runtime, self._agent)
        # No outputSchema: what a program prints and returns is written for the model to read.
        return types.Tool(
            name=RUN_CODE_NAME,
            description=f"{definition.description}\n\n{sdk}" if sdk else definition.description,
            input_schema=thaw(definition.parameters),
        )

    async def call(
        self, name: str, arguments: dict[str, Any] | None, channel: _CallChannel | None = None
    ) -> tuple[ToolExecutionResult, ToolDefinition | None]:
        """Run one call through the pipeline, under the served agent; ``channel`` carries its reports."""
        definition = self._served_tools().get(name)
        call_id = f"mcp-{next(_call_ids)}"
        if channel is not None:
            self._calls[call_id] = channel
        reset = _current_call.set(channel)
        try:
            # A client's cancellation (or its going away) cancels this task; the pipeline turns that
            # into an aborted run and returns only once the run's processes are gone.
            result = await self._runtime.execute(
                ToolExecutionInput(
                    call_id=call_id,
                    name=name,
                    arguments={} if arguments is None else arguments,
                    signal=AbortSignal(),
                    agent=self._agent,
                )
            )
        finally:
            _current_call.reset(reset)
            self._calls.pop(call_id, None)
        if channel is not None:
            await channel.drain()
        return result, definition

    def result(
        self, result: ToolExecutionResult, definition: ToolDefinition | None
    ) -> mcp_types.CallToolResult:
        """A toolrt result as ``CallToolResult``: content blocks, ``structuredContent``, ``isError``."""
        import mcp_types as types

        content = [_content_block(block) for block in thaw(result.content)]
        structured = None
        is_error = result.is_error
        if (
            not result.is_error
            and definition is not None
            and definition.name != RUN_CODE_NAME
            and _object_schema(definition) is not None
        ):
            value = thaw(result.value)
            budget = self._budget(definition)
            size = len(json.dumps(value, ensure_ascii=False))
            if isinstance(budget, Unbounded) or size <= budget:
                structured = value
            else:
                # The budget keeps the client's context from flooding, and structuredContent must be
                # the whole value when the tool declares an outputSchema: both cannot hold, so the call
                # says so (an error result, which no schema binds) and serves the cut text.
                is_error = True
                content.insert(0, types.TextContent(type="text", text=_oversized_notice(size, budget)))
        return types.CallToolResult(content=content, structured_content=structured, is_error=is_error)

    def _budget(self, definition: ToolDefinition) -> int | Unbounded:
        own = definition.max_output_chars
        return self._runtime.output_budget if own is None else own


def _oversized_notice(size: int, budget: int) -> str:
    return (
        f"The tool succeeded, but its value is {size:,} characters of JSON, over the output budget of "
        f"{budget:,}: it is served without structuredContent, as the cut text below. Do not retry the "
        "call; read the rest as the text says, or ask for less."
    )


def _object_schema(definition: ToolDefinition) -> dict[str, Any] | None:
    # MCP's outputSchema must describe an object (through 2025-11-25), and structuredContent is one.
    schema = thaw(definition.output.schema)
    if isinstance(schema, dict) and schema.get("type") == "object":
        return schema
    return None


def _is_read_only(definition: ToolDefinition) -> bool:
    # The classifier is per-arguments (and says False for invalid ones), while readOnlyHint is per
    # tool: it is asked about the plainest valid call, its required fields at their simplest values.
    # A tool safe for that call is taken as read-only (file readers, MCP tools marked readOnlyHint);
    # anything else claims nothing rather than claiming "not read-only".
    if definition.is_concurrency_safe is None:
        return False
    try:
        return definition.is_concurrency_safe(_plainest_arguments(thaw(definition.parameters))) is True
    except Exception:
        return False


_PLAIN_VALUES: dict[str, Any] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


def _plainest_arguments(parameters: Any) -> dict[str, Any]:
    properties = parameters.get("properties", {}) if isinstance(parameters, dict) else {}
    arguments: dict[str, Any] = {}
    for name in parameters.get("required", []) if isinstance(parameters, dict) else []:
        schema = properties.get(name, {})
        if "const" in schema:
            arguments[name] = schema["const"]
        elif schema.get("enum"):
            arguments[name] = schema["enum"][0]
        else:
            kind = schema.get("type")
            arguments[name] = _PLAIN_VALUES.get(kind if isinstance(kind, str) else "string", "")
    return arguments


_BLOCK_TYPES = ("text", "image", "audio", "resource_link", "resource")


@functools.cache
def _block_adapter() -> Any:
    import mcp_types as types
    from pydantic import TypeAdapter

    return TypeAdapter(types.ContentBlock)


def _content_block(block: Any) -> mcp_types.ContentBlock:
    import mcp_types as types
    from pydantic import ValidationError

    if isinstance(block, dict) and block.get("type") in _BLOCK_TYPES:
        try:
            return _block_adapter().validate_python(block)  # type: ignore[no-any-return]
        except ValidationError:
            pass
    # A block MCP has no type for still reaches the client, as its JSON text.
    return types.TextContent(type="text", text=json.dumps(block, ensure_ascii=False))
