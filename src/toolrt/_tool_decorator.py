"""``@tool``: a :class:`~toolrt.ToolDefinition` from a function's type hints and docstring.

>>> from toolrt import tool
>>> @tool
... async def add(a: int, b: int) -> int:
...     '''Add two integers.
...
...     Args:
...         a: The first addend.
...         b: The second addend.
...     '''
...     return a + b
>>> add.name, add.description, add.parameters["required"]
('add', 'Add two integers.', ['a', 'b'])

The parameter schema comes from the signature (see :mod:`toolrt.schema._type_hints` for the mapping), the
description from the docstring summary, per-parameter descriptions from ``Args:`` or
``Annotated[T, "text"]``, and the output schema from the return annotation. Anything the enforced
JSON-Schema subset cannot express faithfully raises ``TypeError`` at decoration time, naming the
parameter.

The definition goes through :func:`toolrt._tool_builder.build_validated_definition`, the same path as
:func:`toolrt.define_tool`, so the model's arguments are validated before the body runs and a
mistake comes back to the model as an ``INVALID_ARGS`` result. The body then receives converted
arguments of their hinted types: ``Enum`` members, dataclass and pydantic instances, tuples, sets,
``datetime``/``date``/``time``/``UUID``/``Path``/``Decimal`` values, and
fresh, mutable ``list``/``dict`` values owned by the call (the body may keep and mutate them; the
pipeline's frozen snapshot stays the record of what the model sent). Raw tools (``define_tool``,
``ToolDefinition``) keep receiving the frozen snapshot. A parameter annotated
``ToolRunContext`` or ``ToolExecution`` receives the call's context and is not shown to the model.
Return values are turned back into JSON (pydantic ``model_dump(mode="json", by_alias=True)``,
dataclass fields, ``Enum.value``, tuple → list, set → sorted list, ``isoformat()``/``str()`` for the
formatted types). An argument that validated but cannot become its hinted value (a malformed
date-time, a pydantic validator saying no) is ``INVALID_ARGS`` at its path, in toolrt's words.

A synchronous function stays synchronous, so the runtime runs it on a worker thread; an ``async``
one stays a coroutine function. ``definition.execute.__wrapped__`` is the original function.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, overload

from toolrt._content import ContentBlock
from toolrt._errors import JsonSchemaError, ToolArgsError
from toolrt._execution import ToolExecution, ToolRunContext
from toolrt._json import snapshot_json
from toolrt._registry import is_valid_timeout_ms
from toolrt._results import ToolExecutionResult
from toolrt._tool_builder import build_validated_definition
from toolrt._tool_definition import (
    OutputBudget,
    PresentedResult,
    ToolDefinition,
    ToolGroup,
    ToolOutput,
    Unbounded,
    mark_async_body,
    render_value_as_text,
)
from toolrt.cards._views import ToolCallView, ToolResultView
from toolrt.schema import assert_supported_json_schema

if TYPE_CHECKING:
    from toolrt.schema._converters import Converter
    from toolrt.schema._type_hints import FunctionSpec

__all__ = ["tool"]

_POSITIONAL_ONLY = inspect.Parameter.POSITIONAL_ONLY
_EMPTY = inspect.Parameter.empty


@overload
def tool(fn: Callable[..., Any], /) -> ToolDefinition: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_ms: float | Unbounded | None = None,
    max_output_chars: OutputBudget | None = None,
    is_concurrency_safe: Callable[[Any], bool] | None = None,
    present_call: Callable[[Any], ToolCallView | None] | None = None,
    present_result: Callable[[Any, PresentedResult], ToolResultView | None] | None = None,
    render: Callable[[Any, Any], Sequence[ContentBlock]] | None = None,
    presentation_meta: Callable[[Any, Any], Any] | None = None,
    finalize_content: Callable[[ToolExecution, ToolExecutionResult], Sequence[ContentBlock] | None]
    | None = None,
    run_inline: bool = False,
    group: str | ToolGroup | None = None,
) -> Callable[[Callable[..., Any]], ToolDefinition]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_ms: float | Unbounded | None = None,
    max_output_chars: OutputBudget | None = None,
    is_concurrency_safe: Callable[[Any], bool] | None = None,
    present_call: Callable[[Any], ToolCallView | None] | None = None,
    present_result: Callable[[Any, PresentedResult], ToolResultView | None] | None = None,
    render: Callable[[Any, Any], Sequence[ContentBlock]] | None = None,
    presentation_meta: Callable[[Any, Any], Any] | None = None,
    finalize_content: Callable[[ToolExecution, ToolExecutionResult], Sequence[ContentBlock] | None]
    | None = None,
    run_inline: bool = False,
    group: str | ToolGroup | None = None,
) -> ToolDefinition | Callable[[Callable[..., Any]], ToolDefinition]:
    """Turn a function into a :class:`ToolDefinition` (bare ``@tool`` or ``@tool(**options)``).

    ``name`` defaults to the function's ``__name__``, ``description`` to its docstring summary.
    ``render`` / ``presentation_meta`` form the :class:`ToolOutput` (default: the value as text).
    ``is_concurrency_safe``, ``present_call`` and ``present_result`` receive the *raw* validated
    JSON arguments (not the converted ones) and are wrapped softly like ``define_tool``'s.
    ``group`` (a name, or a :class:`~toolrt._tool_definition.ToolGroup` with a description) is the
    system the tool belongs to, shown to the model once per group.
    The other options are forwarded to the definition as they are.

    >>> @tool(name="shout", timeout_ms=1000)
    ... def upper(text: str) -> str:
    ...     '''Upper-case a text.'''
    ...     return text.upper()
    >>> upper.name, upper.timeout_ms, upper.body_is_async
    ('shout', 1000, False)
    >>> upper.execute({"text": "hi"}, None)
    'HI'
    """

    def build(function: Callable[..., Any]) -> ToolDefinition:
        return _build(
            function,
            name=name,
            description=description,
            timeout_ms=timeout_ms,
            max_output_chars=max_output_chars,
            is_concurrency_safe=is_concurrency_safe,
            present_call=present_call,
            present_result=present_result,
            render=render,
            presentation_meta=presentation_meta,
            finalize_content=finalize_content,
            run_inline=run_inline,
            group=group,
        )

    if fn is None:
        return build
    return build(fn)


def _build(
    function: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    timeout_ms: float | Unbounded | None,
    max_output_chars: OutputBudget | None,
    is_concurrency_safe: Callable[[Any], bool] | None,
    present_call: Callable[[Any], ToolCallView | None] | None,
    present_result: Callable[[Any, PresentedResult], ToolResultView | None] | None,
    render: Callable[[Any, Any], Sequence[ContentBlock]] | None,
    presentation_meta: Callable[[Any, Any], Any] | None,
    finalize_content: Callable[[ToolExecution, ToolExecutionResult], Sequence[ContentBlock] | None] | None,
    run_inline: bool,
    group: str | ToolGroup | None = None,
) -> ToolDefinition:
    if isinstance(function, ToolDefinition):
        raise TypeError(f"@tool {function.name}: already a ToolDefinition (is @tool applied twice?)")
    if not callable(function):
        raise TypeError(f"@tool: expected a function, got {type(function).__name__}")
    # Loaded with the first @tool, not with `import toolrt`: the type-hint mapping and its
    # converters (datetime, pathlib, uuid, decimal, ...) are among the costliest imports of the core.
    from toolrt.schema._type_hints import analyze_function

    spec = analyze_function(function, is_injected=_is_injected, description=description)
    where = f"@tool {spec.qualname}"
    tool_name = name if name is not None else getattr(function, "__name__", None)
    if not isinstance(tool_name, str) or not tool_name or tool_name == "<lambda>":
        raise TypeError(f"{where}: cannot derive a tool name; pass @tool(name=...)")
    if not is_valid_timeout_ms(timeout_ms):
        raise TypeError(f"{where}: timeout_ms must be a positive finite number")
    if group is not None and not isinstance(group, str | ToolGroup):
        raise TypeError(f"{where}: group must be a str or a ToolGroup, got {type(group).__name__}")
    for label, schema in (("parameters", spec.parameters), ("return value", spec.output)):
        # The mapping only emits subset constructs; this is the guard that keeps it honest.
        try:
            assert_supported_json_schema(schema)
        except JsonSchemaError as error:
            raise TypeError(f"{where}: {label}: generated schema is unsupported: {error.message}") from error
    definition = build_validated_definition(
        name=tool_name,
        description=spec.description,
        # Frozen: every consumer of a registered tool sees the same, unchangeable schema.
        parameters=snapshot_json(spec.parameters),
        output=ToolOutput(
            schema=snapshot_json(spec.output),
            render=render if render is not None else render_value_as_text,
            presentation_meta=presentation_meta,
        ),
        execute=_make_execute(function, spec),
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        max_output_chars=max_output_chars,
        is_concurrency_safe=is_concurrency_safe,
        present_call=present_call,
        present_result=present_result,
        run_inline=run_inline,
        output_checked=True,  # asserted above
    )
    if group is None:
        return definition
    # The shared builder has no group: attach it after (a replace re-derives the cached fields).
    return dataclasses.replace(definition, group=ToolGroup(group) if isinstance(group, str) else group)


def _is_injected(hint: Any) -> bool:
    while getattr(hint, "__metadata__", None) is not None:  # Annotated[ToolRunContext, ...]
        hint = hint.__origin__
    return hint is ToolRunContext or hint is ToolExecution


def _make_execute(function: Callable[..., Any], spec: FunctionSpec) -> Callable[[Any, Any], Any]:
    """Build ``execute(args, ctx)`` once, specialised so the per-call path does only what it must.

    ``args`` is the validated, frozen ``FrozenDict``; for scalar-only parameters it unpacks straight
    into the call. Container parameters are thawed (fresh plain values) by their converters.
    """
    from toolrt.schema._converters import ArgumentConversionError

    converters: tuple[tuple[str, Converter], ...] = tuple(
        (param.name, param.to_python)
        for param in spec.params
        if not param.injected and param.to_python is not None
    )
    injected = tuple(param.name for param in spec.params if param.injected)
    positional = tuple((param.name, param.default) for param in spec.params if param.kind is _POSITIONAL_ONLY)
    # With **kwargs the model may send any key; one naming the context parameter must not replace it.
    guard_injected = spec.var_keyword is not None and bool(injected)

    def keywords(args: Any, ctx: Any) -> Any:
        kwargs: dict[str, Any] | None = None
        for key, convert in converters:
            if key in args:
                old = args[key]
                try:
                    new = convert(old)
                except ArgumentConversionError as error:
                    # A value that validated but is no datetime / breaks a pydantic rule: the model
                    # reads it as INVALID_ARGS at its path, like any schema violation.
                    raise ToolArgsError(error.within(key).messages()) from None
                if new is not old:
                    if kwargs is None:
                        kwargs = dict(args)
                    kwargs[key] = new
        if not injected:
            return args if kwargs is None else kwargs
        if kwargs is None:
            kwargs = dict(args)
        for key in injected:
            if guard_injected and key in kwargs:
                raise ToolArgsError(
                    [f'"{key}" is not a declared property (it is reserved for the tool context)']
                )
            kwargs[key] = ctx
        return kwargs

    invoke: Callable[[Any, Any], Any]
    if positional:

        def invoke(args: Any, ctx: Any) -> Any:
            kwargs = dict(keywords(args, ctx))
            values = []
            for key, default in positional:
                if key in kwargs:
                    values.append(kwargs.pop(key))
                elif default is _EMPTY:
                    raise TypeError(f"{spec.qualname}() missing required argument: {key!r}")
                else:
                    values.append(default)
            return function(*values, **kwargs)

    elif converters or injected:

        def invoke(args: Any, ctx: Any) -> Any:
            return function(**keywords(args, ctx))

    else:
        # Plain JSON parameters: the frozen arguments unpack straight into the call.
        def invoke(args: Any, ctx: Any) -> Any:
            return function(**args)

    out = spec.output_to_json
    execute: Callable[[Any, Any], Any]
    if _is_async(function):
        if out is None:
            # invoke() returns the user's coroutine: the pipeline awaits it directly.
            execute = mark_async_body(invoke)
        else:
            to_json = out

            async def execute(args: Any, ctx: Any) -> Any:
                return to_json(await invoke(args, ctx))

    elif out is None:
        execute = invoke  # a fresh closure, so update_wrapper below may decorate it
    else:
        to_json = out

        def execute(args: Any, ctx: Any) -> Any:
            return to_json(invoke(args, ctx))

    # __name__/__qualname__/__doc__ for tracebacks and logs; __wrapped__ reaches the original.
    # (updated=() keeps the function's __dict__ off the wrapper.)
    return functools.update_wrapper(execute, function, updated=())


def _is_async(function: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004 - an instance with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)
