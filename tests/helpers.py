"""Shared factories for the pipeline tests (ports of upstream ``tools.spec.ts`` fixtures).

Keep this module small and stable: other test files import it. Everything here builds real toolrt
objects (no mocks of toolrt internals).

* :func:`echo_tool` — upstream ``echoTool`` (a plain-function body, so it runs on a worker thread);
  keyword overrides are passed to :func:`toolrt.define_tool` (``{...echoTool, name: 'x'}``).
* :func:`content_tool` — upstream ``defineContentToolFixture``: the canonical value *is* the content.
* :func:`failure` — the exact ``ToolFailure`` of an ``Error: <message>`` result.
* :func:`text`, :func:`ctx_message`, :func:`context_sources` — content / additional-context builders.
* :func:`call_input` — a :class:`toolrt.ToolExecutionInput` with test defaults.
* :class:`Approver` — an in-test approval service answering a fixed outcome.
* :class:`Gate` — an ``asyncio.Event`` latch that parks a listener or body until released.
* :func:`register_tool` — register a :func:`toolrt.define_tool` tool with a ``{"type": <t>}`` output.
* :func:`trace_phases` — pass-through pre-execute / ``tools/execute`` / post-execute tracers.
* :func:`string_tool` — a bare :class:`toolrt.ToolDefinition` with a string output and no description.
* :func:`closing_runtime` — the ``runtime`` fixture body: a fresh runtime, closed afterwards.
* :func:`returning`, :func:`raising` — ``async`` tool bodies returning a value / raising an error.
* :func:`raw_tool` — a bare :class:`toolrt.ToolDefinition` answering ``ran:<name>``.
* :func:`closed_object` — a ``{"type": "object", "additionalProperties": false}`` JSON Schema.
* :func:`bounded` — a parameters schema whose one required property ``qty`` is the field under test.
* :func:`descendant_processes` — every live process below this one, read from ``/proc``.
* :func:`settle` — await with a timeout so a regression hangs for seconds, not forever.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Hashable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from toolrt import (
    AbortSignal,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    ToolOutput,
    ToolRuntime,
    define_tool,
    user_message,
)
from toolrt.lowlevel import ExecutionToken, ToolError, ToolErrorInfo
from toolrt.schema import json_schema_violations

__all__ = [
    "ECHO_OUTPUT",
    "READ_PARAMETERS",
    "READ_SCHEMA",
    "SCHEMA_KEYWORDS",
    "SUBSET_HAS_BOUNDS",
    "Approver",
    "Gate",
    "bounded",
    "call_input",
    "closed_object",
    "closing_runtime",
    "content_tool",
    "context_sources",
    "ctx_message",
    "descendant_processes",
    "echo_tool",
    "failure",
    "raising",
    "raw_tool",
    "register_tool",
    "returning",
    "settle",
    "string_tool",
    "text",
    "trace_phases",
]

T = TypeVar("T")

ECHO_OUTPUT: dict[str, Any] = {
    "schema": {"type": "string"},
    "render": lambda _args, value: [{"type": "text", "text": value}],
}
"""``echoTool.output``; spread it to add a projector: ``{**ECHO_OUTPUT, "presentation_meta": f}``."""


READ_PARAMETERS: dict[str, Any] = {
    "path": {"type": "string", "required": True, "description": "Absolute path"},
    "offset": {"type": "number"},
    "limit": {"type": "number", "description": "Max lines"},
}
"""The S-DSL2 example ``ParameterSchemaSpec`` (upstream ``readFile``)."""
READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Absolute path"},
        "offset": {"type": "number"},
        "limit": {"type": "number", "description": "Max lines"},
    },
    "required": ["path"],
}
"""The standard JSON Schema :data:`READ_PARAMETERS` compiles to."""

SCHEMA_KEYWORDS: list[str] = [
    "type",
    "oneOf",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "description",
    "title",
]
"""The JSON Schema keywords the SDK renderers read (for property tests drawing schema-like dicts)."""


def text(value: str) -> list[dict[str, str]]:
    """``T(x)`` of contract §3.2: one text block."""
    return [{"type": "text", "text": value}]


def echo_tool(**overrides: Any) -> ToolDefinition:
    """The upstream ``echoTool``: returns ``args.text`` (default ``''``) and renders it as text."""
    options: dict[str, Any] = {
        "name": "echo",
        "description": "echo arguments back",
        "parameters": {"text": {"type": "string"}},
        "output": ECHO_OUTPUT,
        "execute": lambda args, ctx: args.get("text", ""),
    }
    options.update(overrides)
    return define_tool(**options)


def content_tool(**options: Any) -> ToolDefinition:
    """Upstream ``defineContentToolFixture``: output ``{type: array, items: json}``, rendered as is."""
    options.setdefault("parameters", {})
    options.setdefault("description", options["name"])
    return define_tool(
        output={"schema": {"type": "array", "items": {"type": "json"}}, "render": lambda _args, value: value},
        **options,
    )


def failure(message: str, name: str | None = None, code: str | None = None, **fields: Any) -> ToolFailure:
    """The exact failure a pipeline error produces: ``Error: <message>`` plus optional ``info``."""
    info = None if name is None else ToolErrorInfo(name, code or "")
    fields.setdefault("content", text(f"Error: {message}"))
    return ToolFailure(error=ToolError(message, info), **fields)


def ctx_message(source: str) -> dict[str, Any]:
    """A user message whose text and ``source.plugin`` are both ``source``."""
    return dict(user_message(f"ctx-{source}", source, plugin=source))


def context_sources(result: ToolExecutionResult) -> list[str]:
    """The ``source.plugin`` of each additional context, in order."""
    return [context["source"]["plugin"] for context in result.additional_contexts]


_EMPTY_ARGUMENTS: Any = object()


def call_input(
    name: str,
    arguments: Any = _EMPTY_ARGUMENTS,
    signal: AbortSignal | None = None,
    *,
    call_id: str = "c1",
    agent: Hashable | None = None,
    parent: ExecutionToken | None = None,
    root_call_id: str | None = None,
) -> ToolExecutionInput:
    """A call with test defaults: ``call_id='c1'``, ``arguments={}``, a never-firing signal.

    ``arguments`` is passed through as given (``None`` stays ``None``); omitted means ``{}``.
    """
    return ToolExecutionInput(
        call_id=call_id,
        name=name,
        arguments={} if arguments is _EMPTY_ARGUMENTS else arguments,
        signal=AbortSignal() if signal is None else signal,
        agent=agent,
        parent=parent,
        root_call_id=root_call_id,
    )


class Approver:
    """An in-test approval service (``ApprovalService`` protocol): answers every request with
    ``outcome`` — after ``gate`` opens, if given; an exception ``outcome`` is raised instead.
    """

    def __init__(self, outcome: Any = "allowed-once", gate: Gate | None = None) -> None:
        self.outcome = outcome
        self.gate = gate
        self.requests: list[Any] = []

    async def request(self, request: Any) -> Any:
        self.requests.append(request)
        if self.gate is not None:
            await self.gate.wait()
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class Gate:
    """A one-shot latch: ``await gate.wait()`` parks until :meth:`open`.

    ``await gate.reached()`` returns once something is parked (upstream's ``entered`` promise), so a
    test can act (abort, cancel) while a listener or body is provably suspended at the gate.
    """

    def __init__(self) -> None:
        self._opened = asyncio.Event()
        self._reached = asyncio.Event()

    async def wait(self) -> None:
        self._reached.set()
        await self._opened.wait()

    def open(self) -> None:
        self._opened.set()

    @property
    def is_reached(self) -> bool:
        return self._reached.is_set()

    async def reached(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(self._reached.wait(), timeout)


async def settle(awaitable: Awaitable[T], timeout: float = 5.0) -> T:
    """Await ``awaitable``, failing the test (TimeoutError) instead of hanging."""
    return await asyncio.wait_for(awaitable, timeout)


def closed_object(properties: Any, required: Any = None) -> dict[str, Any]:
    """A closed object JSON Schema: ``properties`` as given, ``required`` only when given."""
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if required is not None:
        schema["required"] = required
    return schema


def bounded(field: dict[str, Any]) -> dict[str, Any]:
    """A parameters schema whose one required property ``qty`` is ``field`` (the constraint under test)."""
    return {
        "type": "object",
        "properties": {"qty": field},
        "required": ["qty"],
        "additionalProperties": False,
    }


SUBSET_HAS_BOUNDS = not json_schema_violations({"type": "integer", "minimum": 1})
"""Whether the subset accepts bound keywords (the SDK renderers' bound tests are strict xfails until then)."""


def descendant_processes() -> dict[int, list[str]]:
    """Every live process below this one, each with its ``/proc/<pid>/stat`` fields after the command
    name (``[1]`` its parent, ``[11]``/``[12]`` its user/system clock ticks).

    A zombie counts: nobody has reaped it, so a run that left one behind has not cleaned up.
    """
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces or ")": split after the last one.
        stats[int(entry)] = stat[stat.rindex(")") + 2 :].split()
    below = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, fields in stats.items():
            if int(fields[1]) in below and pid not in below:
                below.add(pid)
                grew = True
    return {pid: stats[pid] for pid in below - {os.getpid()}}


def register_tool(
    target: Any,
    name: str,
    description: str,
    execute: Any,
    *,
    parameters: Any = None,
    output: str = "string",
    **options: Any,
) -> Any:
    """``target.register(define_tool(...))`` with ``parameters`` (default none) and an output schema of
    type ``output``; ``options`` go to :func:`toolrt.define_tool`. Returns the disposer.
    """
    return target.register(
        define_tool(
            name=name,
            description=description,
            parameters={} if parameters is None else parameters,
            output={"schema": {"type": output}},
            execute=execute,
            **options,
        )
    )


def trace_phases(runtime: Any, log: list[str]) -> None:
    """Register pass-through listeners appending ``pre``, ``execute:before`` / ``execute:after``
    (around ``next()``) and ``post`` to ``log``.
    """

    async def pre(execution: Any, next: Any) -> Any:
        log.append("pre")
        return await next()

    async def around(execution: Any, next: Any) -> Any:
        log.append("execute:before")
        result = await next()
        log.append("execute:after")
        return result

    async def post(execution: Any, result: Any, next: Any) -> Any:
        log.append("post")
        return await next()

    runtime.on("tools/pre-execute", pre)
    runtime.on("tools/execute", around)
    runtime.on("tools/post-execute", post)


def string_tool(
    name: str, execute: Any, parameters: Any = None, *, description: str = "", **extra: Any
) -> ToolDefinition:
    """``ToolDefinition(name, description, parameters, ToolOutput({"type": "string"}), execute)``;
    ``parameters`` defaults to ``{"type": "object"}``; ``extra`` are further definition fields.
    """
    return ToolDefinition(
        name=name,
        description=description,
        parameters={"type": "object"} if parameters is None else parameters,
        output=ToolOutput(schema={"type": "string"}),
        execute=execute,
        **extra,
    )


def closing_runtime() -> Iterator[ToolRuntime]:
    """The ``runtime`` fixture of the pipeline modules (``pytest.fixture(name="runtime")`` of this)."""
    rt = ToolRuntime()
    yield rt
    rt.close()


def returning(value: Any) -> Any:
    """An ``async`` body returning ``value`` (async so it runs on the loop, not a worker thread)."""

    async def execute(args: Any, ctx: Any) -> Any:
        return value

    return execute


def raising(error: BaseException) -> Any:
    """An ``async`` body raising ``error``."""

    async def execute(args: Any, ctx: Any) -> Any:
        raise error

    return execute


def raw_tool(
    name: str,
    reply: str | None = None,
    *,
    counter: Any = None,
    description: str | None = None,
    parameters: Any = None,
    **extra: Any,
) -> ToolDefinition:
    """A :class:`toolrt.ToolDefinition` whose body answers ``ran:<name>`` (or ``reply``), described
    ``<name> tool`` and taking ``{"type": "object"}`` unless given; ``counter.calls`` (when given)
    records each call's arguments; ``extra`` are further definition fields.
    """

    async def execute(args: Any, ctx: Any) -> str:
        if counter is not None:
            counter.calls.append(args)
        return f"ran:{name}" if reply is None else reply

    return ToolDefinition(
        name=name,
        description=f"{name} tool" if description is None else description,
        parameters={"type": "object"} if parameters is None else parameters,
        output=ToolOutput(schema={"type": "string"}),
        execute=execute,
        **extra,
    )
