"""What a tool is: :class:`ToolDefinition` with its mandatory :class:`ToolOutput` declaration.

Most tools are built with :func:`toolrt.define_tool` (the schema DSL) or :func:`toolrt.tool` (type
hints). A ``ToolDefinition`` can also be constructed directly with a raw JSON Schema for
``parameters`` — the way MCP bridges register tools — in which case the runtime does *not* validate
arguments (the tool owns its input), but it always validates the returned value against
``output.schema``.

Only ``name``, ``description`` and ``parameters`` ever reach the model (:class:`ToolSchema`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from toolrt._content import ContentBlock
from toolrt._execution import ToolExecution, ToolRunContext
from toolrt._json import text_block_content
from toolrt._results import ToolExecutionResult
from toolrt.cards._views import ToolCallView, ToolResultView

__all__ = [
    "DEFAULT_OUTPUT_BUDGET",
    "DEFAULT_TOOL_TIMEOUT_MS",
    "UNBOUNDED",
    "OutputBudget",
    "PresentedResult",
    "ToolDefinition",
    "ToolGroup",
    "ToolOutput",
    "ToolSchema",
    "Unbounded",
    "render_value_as_text",
]


class ToolSchema(TypedDict):
    """The model-facing projection of a tool: exactly these three keys."""

    name: str
    description: str
    parameters: dict[str, Any]


class PresentedResult(TypedDict, total=False):
    """The durable part of a result handed to ``present_result`` (live or on log replay)."""

    content: Sequence[ContentBlock]
    is_error: bool
    meta: Any


class Unbounded:
    """The type of :data:`UNBOUNDED` (one instance; compares by identity)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNBOUNDED"

    def __reduce__(self) -> str:
        return "UNBOUNDED"


UNBOUNDED = Unbounded()
"""An explicit "no output budget": the model reads the whole result, however large it is.

``ToolRuntime(output_budget=UNBOUNDED)`` turns the runtime's default budget off (a result of 5 MB
then reaches the model as 5 MB); ``max_output_chars=UNBOUNDED`` on one tool exempts that tool only.
"""

OutputBudget = int | Unbounded
"""A model-facing result budget: a positive number of characters, or :data:`UNBOUNDED`."""

# 20,000 characters is about 5,000 tokens: a whole source file, a long listing or a page of logs
# reads whole, while one runaway result cannot crowd out a conversation (docs/limits.md).
DEFAULT_OUTPUT_BUDGET = 20_000
"""The default model-facing budget of one tool result (``run_code``'s included), in characters."""


# Two minutes: a build, a test run or a slow fetch finishes; a hung call does not hold a turn
# forever (docs/limits.md).
DEFAULT_TOOL_TIMEOUT_MS = 120_000
"""The default deadline of one tool call, in milliseconds (a tool's ``timeout_ms`` wins)."""


def is_valid_output_budget(budget: object) -> bool:
    """Whether ``budget`` is :data:`UNBOUNDED` or a positive ``int`` (never a ``bool``)."""
    return budget is UNBOUNDED or (isinstance(budget, int) and not isinstance(budget, bool) and budget > 0)


def render_value_as_text(args: Any, value: Any) -> Sequence[ContentBlock]:
    """Default renderer: a string value verbatim, anything else as compact JSON text."""
    kind = type(value)
    if kind is str:
        text = value
    elif kind is int:
        text = str(value)
    elif value is None or kind is bool:
        text = "null" if value is None else ("true" if value else "false")
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text_block_content(text)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """The canonical output contract: a JSON schema for the value and how to present it.

    ``render(args, value)`` turns the validated value into model-facing content;
    ``presentation_meta(args, value)`` (optional) derives JSON metadata persisted with the result for
    UIs, computed for direct (non-nested) calls only.
    """

    schema: Mapping[str, Any]
    render: Callable[[Any, Any], Sequence[ContentBlock]] = render_value_as_text
    presentation_meta: Callable[[Any, Any], Any] | None = None


ToolBody = Callable[[Any, ToolRunContext], "Awaitable[Any] | Any"]


@dataclass(frozen=True, slots=True)
class ToolGroup:
    """The system a tool belongs to: a name and what the system is, told to the model once.

    Several tools acting on one object (a file system, a trading account) share its state; a model
    that cannot tell which system ``cd`` or ``place_order`` belongs to guesses. The group is
    rendered once per group (a section comment in the SDKs, one line in the native prompt), never
    repeated in each tool's description. Groups compare by value, so tools built apart join the
    same group.

    >>> ToolGroup("GorillaFileSystem", "A file system with a current directory.").name
    'GorillaFileSystem'
    """

    name: str
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"a tool group name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.description, str):
            raise TypeError(f"tool group {self.name!r}: description must be a string")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ToolDefinition:
    """A registered tool.

    ``execute(args, ctx)`` may be ``async`` or a plain function; a plain function runs on a worker
    thread (never blocking the event loop) unless ``run_inline=True`` declares it cheap and
    non-blocking. ``timeout_ms`` is the call's deadline (``None``: the runtime's
    ``tool_timeout_ms``; :data:`UNBOUNDED`: none), enforced by the timeout policy, never shown to the
    model. ``max_output_chars`` is this tool's model-facing result budget (a positive ``int``, or
    :data:`UNBOUNDED`); ``None`` means the runtime's ``output_budget``.
    ``is_concurrency_safe(args)`` returning exactly ``True`` lets the scheduler overlap the call with
    other safe calls; anything else runs it alone. ``validate_arguments(args)`` returns the
    violations of the model's arguments (``define_tool`` and ``@tool`` supply it; a raw definition
    without it owns its own input validation). ``group`` names the system the tool belongs to
    (:class:`ToolGroup`; ``runtime.register_methods`` sets it from the class). Definitions compare by
    identity.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    output: ToolOutput
    execute: ToolBody
    finalize_content: Callable[[ToolExecution, ToolExecutionResult], Sequence[ContentBlock] | None] | None = (
        None
    )
    timeout_ms: float | Unbounded | None = None
    max_output_chars: OutputBudget | None = None
    is_concurrency_safe: Callable[[Any], bool] | None = None
    present_call: Callable[[Any], ToolCallView | None] | None = None
    present_result: Callable[[Any, PresentedResult], ToolResultView | None] | None = None
    run_inline: bool = False
    validate_arguments: Callable[[Any], Sequence[str]] | None = None
    group: ToolGroup | None = None
    body_is_async: bool = field(default=False, init=False, repr=False, compare=False)
    compiled_output: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_output_chars is not None and not is_valid_output_budget(self.max_output_chars):
            raise TypeError(
                f'tool "{self.name}": max_output_chars must be a positive int or UNBOUNDED, '
                f"got {self.max_output_chars!r}"
            )
        if self.group is not None and not isinstance(self.group, ToolGroup):
            raise TypeError(f'tool "{self.name}": group must be a ToolGroup, got {type(self.group).__name__}')
        # Decided once at definition time so the hot path does not inspect the callable per call.
        object.__setattr__(self, "body_is_async", _is_async_callable(self.execute))

    def schema(self) -> ToolSchema:
        """The model-facing projection (parameters are not copied; see ``ToolRuntime.schemas``)."""
        return {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}


_ASYNC_BODY_MARK = "__toolrt_async_body__"


def mark_async_body(function: Any) -> Any:
    """Declare that a plain function returns an awaitable (so it is awaited, not run on a thread).

    The ``@tool`` decorator uses it to hand an async tool's coroutine straight to the pipeline
    without wrapping it in another coroutine.
    """
    setattr(function, _ASYNC_BODY_MARK, True)
    return function


def _is_async_callable(function: object) -> bool:
    if inspect.iscoroutinefunction(function) or getattr(function, _ASYNC_BODY_MARK, False):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004 - an async __call__ on an instance
    return call is not None and inspect.iscoroutinefunction(call)
