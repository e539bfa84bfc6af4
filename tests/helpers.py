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
* :func:`settle` — await with a timeout so a regression hangs for seconds, not forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Hashable
from typing import Any, TypeVar

from toolrt import (
    AbortSignal,
    ExecutionToken,
    ToolDefinition,
    ToolError,
    ToolErrorInfo,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    define_tool,
    user_message,
)

__all__ = [
    "ECHO_OUTPUT",
    "Approver",
    "Gate",
    "call_input",
    "content_tool",
    "context_sources",
    "ctx_message",
    "echo_tool",
    "failure",
    "settle",
    "text",
]

T = TypeVar("T")

ECHO_OUTPUT: dict[str, Any] = {
    "schema": {"type": "string"},
    "render": lambda _args, value: [{"type": "text", "text": value}],
}
"""``echoTool.output``; spread it to add a projector: ``{**ECHO_OUTPUT, "presentation_meta": f}``."""


def text(value: str) -> list[dict[str, str]]:
    """``T(x)`` of the spec: one text block."""
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
