"""Timeout policy: enforce a definition's ``timeout_ms`` around the body.

A ``timeout_ms`` on a tool is only a declaration; installing this policy enforces it::

    dispose = install_timeout_policy(runtime, grace_ms=2_000)

For a tool with a budget, a ``tools/execute`` wrapper hands the body a derived signal that fires
when the budget runs out (a caller abort still fires it too). When *its own* deadline fired, the
call's result becomes ``Error: tool call timed out after <ms>ms`` (``TOOL_TIMEOUT``), whatever the
body returned — a cooperative body's ``ABORTED`` or its own abort error included. A caller abort that
fires first keeps the runtime's ``ABORTED``.

A body that ignores the signal is waited for ``grace_ms`` more, then **detached**: the call returns
``TOOL_TIMEOUT`` with ``meta = {"timeout": {"detached": true, ...}}``, a warning is logged, and the
body is tracked until it finally returns (then logged again). The loop never hangs forever on one
tool, and the leak is never silent. (The runtime itself never abandons a started body; detaching is
this policy's explicit, reported decision.) A body that runs on a worker thread (a plain function)
cannot be stopped at all: its thread is reported as leaked (``"leakedThread": true`` in the meta, and
in the warning).

**The default deadline.** Every runtime installs :func:`install_default_deadline` on itself (as it
does the output budget): a call's deadline is its tool's ``timeout_ms``, else the runtime's
``tool_timeout_ms`` (120,000 ms unless set; ``UNBOUNDED`` on either means no deadline). Two kinds of
tool get no runtime default (their own ``timeout_ms`` still applies): ``run_code``, whose program the
sandbox's own wall-clock limit stops (a tool deadline must never cut a program shorter than that
limit), and ``run_inline`` tools, which run on the event loop and cannot be interrupted anyway. It
reports exactly as this policy does, but it is not a ``tools/execute`` wrapper: the pipeline times
the body itself (:class:`toolrt._pipeline.CallDeadline`), which spares every call the wrapper's
task and two fused signals (``benchmarks/pipeline.py`` measures what is left). An explicit
``install_timeout_policy`` takes over from the default for the calls it covers (its ``grace_ms``),
so a call is never timed twice.
Calling ``install_default_deadline(runtime, grace_ms=N)`` again replaces the default one (its
disposer puts the previous one back).

A deadline times the body only. An approval is asked before the body starts, so the wait for a
person never counts against the call's deadline (nor, in Code Mode, against the program's clock).

**Cancelling the awaiting task** (``task.cancel()``) passes the cancellation to the body as a plain
``await`` would, and waits for its cleanup for the grace at most before ``CancelledError``
propagates; the schedulers drain their started calls for the runtime's grace too
(``runtime.stages.drain_s``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortController, fuse_signals
from toolrt._content import text_content
from toolrt._events import Disposer
from toolrt._execution import ToolExecution
from toolrt._json import js_number
from toolrt._pipeline import DEFAULT_GRACE_MS
from toolrt._registry import RUN_CODE_NAME
from toolrt._results import ToolError, ToolErrorInfo, ToolExecutionResult, ToolFailure
from toolrt._tool_definition import ToolDefinition

if TYPE_CHECKING:
    from toolrt._tool_runtime import Scope, ToolRuntime

__all__ = ["TIMEOUT_CODE", "install_default_deadline", "install_timeout_policy", "timeout_result"]

TIMEOUT_CODE = "TOOL_TIMEOUT"
logger = logging.getLogger("toolrt")

# Where an explicit timeout policy is installed: runtime -> scope keys (None for the whole runtime).
_explicit: weakref.WeakKeyDictionary[ToolRuntime, Counter[Hashable | None]] = weakref.WeakKeyDictionary()


def _deadline_ms(runtime: ToolRuntime, definition: ToolDefinition | None, name: str) -> float | None:
    # The tool's own timeout_ms wins; UNBOUNDED on the tool or the runtime means no deadline. The
    # runtime's default skips run_code (the sandbox's wall-clock limit is its deadline) and inline
    # tools (they run on the event loop: nothing could interrupt them).
    if definition is None:
        return None
    chosen: object = definition.timeout_ms
    if chosen is None:
        if name == RUN_CODE_NAME or definition.run_inline:
            return None
        chosen = runtime.tool_timeout_ms
    return chosen if isinstance(chosen, int | float) else None


class _Deadline:
    """The reason our own timer aborts with, so a caller abort is never mistaken for a timeout."""

    __slots__ = ("timeout_ms",)

    def __init__(self, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms

    def __repr__(self) -> str:
        return f"TOOL_TIMEOUT after {js_number(self.timeout_ms)}ms"


def timeout_result(timeout_ms: float, meta: Any = None) -> ToolFailure:
    """``Error: tool call timed out after <ms>ms`` with ``ToolTimeoutError`` / ``TOOL_TIMEOUT``."""
    message = f"tool call timed out after {js_number(timeout_ms)}ms"
    return ToolFailure(
        error=ToolError(message, ToolErrorInfo("ToolTimeoutError", TIMEOUT_CODE)),
        content=text_content(f"Error: {message}"),
        meta=meta,
    )


def install_timeout_policy(
    target: ToolRuntime | Scope,
    *,
    grace_ms: float = DEFAULT_GRACE_MS,
    prepend: bool = False,
) -> Disposer:
    """Install the wrapper on a runtime (every call) or a scope (that agent's calls).

    A call's deadline is its tool's ``timeout_ms``, else the runtime's ``tool_timeout_ms``. For the
    calls it covers this policy replaces the default one (:func:`install_default_deadline`).
    """
    if not grace_ms >= 0:
        raise ValueError("grace_ms must be a non-negative number")
    from toolrt._tool_runtime import Scope

    runtime, key = (target.runtime, target.key) if isinstance(target, Scope) else (target, None)
    keys = _explicit.setdefault(runtime, Counter())
    keys[key] += 1
    listening = target.on("tools/execute", _enforcer(runtime, grace_ms), prepend=prepend)

    def dispose() -> None:
        listening()
        keys[key] -= 1
        if keys[key] <= 0:
            del keys[key]

    return Disposer(dispose, target)


def install_default_deadline(runtime: ToolRuntime, *, grace_ms: float = DEFAULT_GRACE_MS) -> Disposer:
    """The deadline every runtime installs on itself (see the module docstring for who is exempt).

    Call it again to change the grace of a runtime's default deadline::

        install_default_deadline(runtime, grace_ms=1_000)

    The grace also bounds how long a cancelled turn waits for its started bodies' cleanup.
    """
    if not grace_ms >= 0:
        raise ValueError("grace_ms must be a non-negative number")
    stages = runtime.stages
    previous = stages.deadline
    installed = _DefaultDeadline(runtime, grace_ms)
    stages.deadline = installed

    def dispose() -> None:
        if stages.deadline is installed:
            stages.deadline = previous

    return Disposer(dispose, runtime)


class _DefaultDeadline:
    """The runtime's default deadline, timed by the pipeline itself (see the module docstring)."""

    __slots__ = ("_covered", "_grace_ms", "_runtime")

    def __init__(self, runtime: ToolRuntime, grace_ms: float) -> None:
        self._runtime = runtime
        self._grace_ms = grace_ms
        # Shared with install_timeout_policy: empty (and falsy) unless an explicit policy is installed.
        self._covered = _explicit.setdefault(runtime, Counter())

    @property
    def grace_ms(self) -> float:
        """How long a body that ignores its fired signal is waited for."""
        return self._grace_ms

    def timeout_ms(self, execution: ToolExecution, definition: ToolDefinition) -> float | None:
        """The tool's ``timeout_ms``, else the runtime's (``None`` for exempt tools, ``UNBOUNDED``
        and calls an explicit timeout policy covers)."""
        chosen: object = definition.timeout_ms
        if chosen is None:
            if definition.run_inline or execution.name == RUN_CODE_NAME:
                return None
            chosen = self._runtime.tool_timeout_ms
        if self._covered and _covered(self._runtime, execution.agent):
            return None
        return chosen if isinstance(chosen, int | float) else None

    def expired(
        self, execution: ToolExecution, timeout_ms: float, *, detached: bool, on_thread: bool
    ) -> ToolExecutionResult:
        """``TOOL_TIMEOUT``; for a detached body with the report the explicit policy gives."""
        if not detached:
            return timeout_result(timeout_ms)
        return _detached_result(execution, timeout_ms, self._grace_ms, on_thread)

    def ended_late(self, execution: ToolExecution, outcome: str) -> None:
        """Log that a detached body has ended at last."""
        logger.warning('tool "%s" (%s): detached body %s', execution.name, execution.call_id, outcome)


def _detached_result(
    execution: ToolExecution, timeout_ms: float, grace_ms: float, on_thread: bool
) -> ToolFailure:
    logger.warning(
        'tool "%s" (%s): ignored its timeout of %sms for %sms more; detached and still running%s',
        execution.name,
        execution.call_id,
        js_number(timeout_ms),
        js_number(grace_ms),
        " (its worker thread is leaked: a thread cannot be stopped)" if on_thread else "",
    )
    report: dict[str, Any] = {"timeoutMs": timeout_ms, "graceMs": grace_ms, "detached": True}
    if on_thread:
        report["leakedThread"] = True
    return timeout_result(timeout_ms, {"timeout": report})


def _enforcer(
    runtime: ToolRuntime, grace_ms: float
) -> Callable[[ToolExecution, Callable[[], Awaitable[ToolExecutionResult]]], Awaitable[ToolExecutionResult]]:
    detached: set[asyncio.Task[Any]] = set()

    async def enforce(
        execution: ToolExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        definition = execution.definition  # resolved once when the call was created
        timeout_ms = _deadline_ms(runtime, definition, execution.name)
        if timeout_ms is None:
            return await next()
        on_thread = definition is not None and not definition.body_is_async and not definition.run_inline
        caller = execution.signal
        timer = AbortController()
        deadline, detach = fuse_signals(caller, timer.signal)
        reason = _Deadline(timeout_ms)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        grace: list[asyncio.TimerHandle] = []

        def on_deadline() -> None:
            timer.abort(reason)
            grace.append(loop.call_later(grace_ms / 1000, _wake, waiter))

        handle = loop.call_later(timeout_ms / 1000, on_deadline)
        execution.signal = deadline
        body = asyncio.ensure_future(next())
        detached_now = False
        try:
            try:
                result = await _wait_with_grace(body, waiter, grace, grace_ms)
            except _Detached:
                detached_now = True
                detached.add(body)
                body.add_done_callback(lambda task: _report_late(task, execution, detached))
                return _detached_result(execution, timeout_ms, grace_ms, on_thread)
            if deadline.aborted and deadline.reason is reason:
                return timeout_result(timeout_ms)
            return result
        finally:
            handle.cancel()
            detach()
            if not detached_now:
                # A detached body still runs and holds the signal; the runtime restores the
                # caller's signal itself once this wrapper returns.
                execution.signal = caller

    return enforce


def _covered(runtime: ToolRuntime, agent: Hashable | None) -> bool:
    keys = _explicit.get(runtime)
    if not keys:
        return False
    return None in keys or any(key in keys for key in runtime.scope_chain(agent))


class _Detached(Exception):
    pass


def _wake(waiter: asyncio.Future[None], *_: object) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _wait_with_grace(
    body: asyncio.Future[ToolExecutionResult],
    waiter: asyncio.Future[None],
    grace: list[asyncio.TimerHandle],
    grace_ms: float,
) -> ToolExecutionResult:
    # One future woken by whichever comes first: the body's end, or the end of the grace that the
    # deadline starts (on_deadline). No extra task per call: every call pays for this wrapper.
    wake = functools.partial(_wake, waiter)
    body.add_done_callback(wake)
    try:
        await waiter
        if body.done():
            return body.result()
        raise _Detached
    except asyncio.CancelledError:
        body.cancel()
        # The caller's cancellation waits for the body's cleanup, bounded by this policy's grace.
        await asyncio.wait({body}, timeout=grace_ms / 1000)
        raise
    finally:
        body.remove_done_callback(wake)
        for handle in grace:
            handle.cancel()


def _report_late(task: asyncio.Task[Any], execution: ToolExecution, detached: set[asyncio.Task[Any]]) -> None:
    detached.discard(task)
    outcome = "was cancelled" if task.cancelled() else "finally returned"
    logger.warning('tool "%s" (%s): detached body %s', execution.name, execution.call_id, outcome)
