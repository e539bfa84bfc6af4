"""A runtime served over MCP: :func:`build_mcp_server` maps toolrt's tools and results to the SDK's.

Two presentations, chosen per server, not per runtime:

* ``native`` lists every tool the served agent can see with its input schema, its output schema (when
  the value is an object, the only kind MCP's ``outputSchema`` accepts) and ``readOnlyHint`` (a tool
  whose concurrency classifier says it is safe). ``structuredContent`` is the canonical value.
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
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
import itertools
import json
from collections.abc import AsyncIterator, Hashable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Literal

from toolrt._abort import AbortSignal
from toolrt._execution import ToolExecutionInput
from toolrt._json import thaw
from toolrt._registry import RUN_CODE_NAME
from toolrt._results import ToolExecutionResult
from toolrt._tool_definition import ToolDefinition
from toolrt._tool_runtime import Scope, ToolRuntime

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
    >>> runtime = ToolRuntime()
    >>> @tool
    ... async def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> _ = runtime.register(add)
    >>> server = build_mcp_server(runtime, mode="native")   # mcp.Client(server) connects in-process
    """
    checked = check_serve_mode(runtime, mode)
    try:
        import mcp_types as types
        from mcp.server import Server
        from mcp.shared.exceptions import MCPError
    except ImportError as error:  # pragma: no cover - the extra is installed in the test environment
        raise ImportError("serving over MCP needs the mcp extra: pip install 'toolrt[mcp]'") from error
    try:
        version = importlib.metadata.version("toolrt")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree, not installed
        version = ""

    served = _ServedRuntime(runtime, checked, agent, parent)

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        with served.serving():
            yield {}

    async def list_tools(_ctx: Any, _params: mcp_types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=served.tools())

    async def call_tool(_ctx: Any, params: mcp_types.CallToolRequestParams) -> Any:
        if params.name not in served.names():
            raise MCPError(types.INVALID_PARAMS, served.unknown_tool_message(params.name))
        result, definition = await served.call(params.name, params.arguments)
        return served.result(result, definition)

    return Server(
        name,
        version=version,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


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
                if self._scope is not None:
                    self._scope.close()
                    self._scope = None

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

    def tools(self) -> list[mcp_types.Tool]:
        """The ``tools/list`` answer, in listing order."""
        import mcp_types as types

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
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[ToolExecutionResult, ToolDefinition | None]:
        """Run one call through the pipeline, under the served agent."""
        definition = self._served_tools().get(name)
        # A client's cancellation (or its going away) cancels this task; the pipeline turns that into
        # an aborted run and returns only once the run's processes are gone.
        result = await self._runtime.execute(
            ToolExecutionInput(
                call_id=f"mcp-{next(_call_ids)}",
                name=name,
                arguments={} if arguments is None else arguments,
                signal=AbortSignal(),
                agent=self._agent,
            )
        )
        return result, definition

    def result(
        self, result: ToolExecutionResult, definition: ToolDefinition | None
    ) -> mcp_types.CallToolResult:
        """A toolrt result as ``CallToolResult``: content blocks, ``structuredContent``, ``isError``."""
        import mcp_types as types

        content = [_content_block(block) for block in thaw(result.content)]
        structured = None
        if (
            not result.is_error
            and definition is not None
            and definition.name != RUN_CODE_NAME
            and _object_schema(definition) is not None
        ):
            structured = thaw(result.value)
        return types.CallToolResult(content=content, structured_content=structured, is_error=result.is_error)


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
