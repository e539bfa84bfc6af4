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
this policy's explicit, reported decision.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortController, fuse_signals
from toolrt._content import text_content
from toolrt._events import Disposer
from toolrt._execution import ToolExecution
from toolrt._json import js_number
from toolrt._results import ToolError, ToolErrorInfo, ToolExecutionResult, ToolFailure

if TYPE_CHECKING:
    from toolrt._tool_runtime import Scope, ToolRuntime

__all__ = ["TIMEOUT_CODE", "install_timeout_policy", "timeout_result"]

TIMEOUT_CODE = "TOOL_TIMEOUT"
logger = logging.getLogger("toolrt")


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
    grace_ms: float = 5_000,
    prepend: bool = False,
) -> Disposer:
    """Install the wrapper on a runtime (every call) or a scope (that agent's calls)."""
    if not grace_ms >= 0:
        raise ValueError("grace_ms must be a non-negative number")
    from toolrt._tool_runtime import Scope

    runtime = target.runtime if isinstance(target, Scope) else target
    detached: set[asyncio.Task[Any]] = set()

    async def enforce(
        execution: ToolExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        definition = runtime.get(execution.name, execution.agent)
        timeout_ms = definition.timeout_ms if definition is not None else None
        if timeout_ms is None:
            return await next()
        caller = execution.signal
        timer = AbortController()
        deadline, detach = fuse_signals(caller, timer.signal)
        reason = _Deadline(timeout_ms)
        handle = asyncio.get_running_loop().call_later(timeout_ms / 1000, timer.abort, reason)
        execution.signal = deadline
        body = asyncio.ensure_future(next())
        detached_now = False
        try:
            try:
                result = await _wait_with_grace(body, timer, grace_ms)
            except _Detached:
                detached_now = True
                detached.add(body)
                body.add_done_callback(lambda task: _report_late(task, execution, detached))
                logger.warning(
                    'tool "%s" (%s): ignored its timeout of %sms for %sms more; detached and still running',
                    execution.name,
                    execution.call_id,
                    js_number(timeout_ms),
                    js_number(grace_ms),
                )
                return timeout_result(
                    timeout_ms,
                    {"timeout": {"timeoutMs": timeout_ms, "graceMs": grace_ms, "detached": True}},
                )
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

    return target.on("tools/execute", enforce, prepend=prepend)


class _Detached(Exception):
    pass


async def _wait_with_grace(
    body: asyncio.Future[ToolExecutionResult], timer: AbortController, grace_ms: float
) -> ToolExecutionResult:
    # Wait for the body; once our timer fires, give it grace_ms more to observe the signal.
    fired: asyncio.Future[Any] = asyncio.ensure_future(timer.signal.wait())
    try:
        done, _ = await asyncio.wait({body, fired}, return_when=asyncio.FIRST_COMPLETED)
        if body in done:
            return body.result()
        finished, _ = await asyncio.wait({body}, timeout=grace_ms / 1000)
        if body in finished:
            return body.result()
        raise _Detached
    except asyncio.CancelledError:
        body.cancel()
        raise
    finally:
        fired.cancel()


def _report_late(task: asyncio.Task[Any], execution: ToolExecution, detached: set[asyncio.Task[Any]]) -> None:
    detached.discard(task)
    outcome = "was cancelled" if task.cancelled() else "finally returned"
    logger.warning('tool "%s" (%s): detached body %s', execution.name, execution.call_id, outcome)
