"""The dispatch bridge: a ``run_code`` program's binding calls re-enter the full pipeline.

Each ``await tools.name(args)`` in a program becomes a nested call with the outer execution's token
as ``parent`` and the id ``<outer call id>:code:<n>`` (numbered by submission; rejected calls take no
number). Calls go through a per-run scheduler with the native contract: they start strictly in
submission order; consecutive concurrency-safe calls overlap up to ``max_parallel_sub_calls``; an
exclusive call waits for the pool to drain, runs alone and holds its barrier through its commit.
``prepare`` (pre-execute, approval, guards) never overlaps; post-execute, context deferral and the
program's answer happen in submission order.

A success resolves the program's call with the final canonical value (after post-execute); a failure
raises the program-side ``ToolCallError(toolName, message)`` — content and error codes stay outside
the program. Sub-call contexts are deferred through the outer ``run_code`` result, so the loop
appends them after it (call/result adjacency holds). With an agent whose session is bound, each
started sub-call logs ``tool/code-dispatch-start`` and, once committed, one ``tool/code-dispatch``
whose content passes the ``tools/code-dispatch-log`` waterfall first (the spill hook).

Settlement: when the program returns or fails, a run-scoped signal fires (``run_code settled``),
queued calls are abandoned (they log nothing), in-flight bodies observe the signal, every started
call is committed, and every log write finishes — all before ``run_code`` returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._json import NotLosslessJsonError, snapshot_json, thaw
from ..events import EventBus, message_of
from ..execution import ToolExecution, ToolExecutionInput, ToolRunContext
from ..pipeline import DispatchOutcome, Prepared
from ..registry import RUN_CODE_NAME
from ..results import ToolExecutionResult
from ..runtimes.base import CodeBindingNamespace, CodeErrorClass, CodeRunRequest, CodeRunResult
from ..signal import AbortController

if TYPE_CHECKING:
    from ..runtime import SessionSink, ToolRuntime
    from ..runtimes.base import CodeRuntime

__all__ = ["CodeDispatchLogEntry", "run_program"]

logger = logging.getLogger("toolrt")
_ERROR_CLASS = CodeErrorClass("ToolCallError", "toolName")


@dataclass(frozen=True, slots=True)
class CodeDispatchLogEntry:
    """What a ``tools/code-dispatch-log`` listener sees: ``listener(entry, next)``; ``next()`` returns
    the settled content, and the listener returns the content to log (e.g. a spill preview)."""

    execution: ToolRunContext
    agent: Hashable | None
    sub_call_id: str
    name: str
    is_error: bool
    content: Any


class _Entry:
    __slots__ = ("call", "early", "exclusive", "execution", "flight", "future", "name")

    def __init__(self, name: str, call: ToolExecutionInput, future: asyncio.Future[Any]) -> None:
        self.name = name
        self.call = call
        self.future = future
        self.exclusive = False
        self.execution: ToolExecution | None = None
        self.flight: asyncio.Task[DispatchOutcome] | None = None
        self.early: Prepared | None = None

    def settled(self) -> bool:
        return self.early is not None or (self.flight is not None and self.flight.done())


class _Failed(Exception):
    """A binding call that failed; the runtime raises the program's error class with this message."""


async def run_program(
    runtime: ToolRuntime, code_runtime: CodeRuntime, program: str, outer: ToolRunContext
) -> CodeRunResult:
    """Run ``program`` with ``tools`` bound to every tool ``outer``'s agent can see (not run_code)."""
    bridge = _Bridge(runtime, outer)
    view = runtime._registry.view(outer.agent).visible
    functions = {name: bridge.binding(name) for name in view if name != RUN_CODE_NAME}
    request = CodeRunRequest(
        program=program,
        bindings=[CodeBindingNamespace("tools", functions, _ERROR_CLASS)],
        signal=bridge.controller.signal,
    )
    try:
        return await code_runtime.run(request)
    finally:
        await bridge.settle()


class _Bridge:
    def __init__(self, runtime: ToolRuntime, outer: ToolRunContext) -> None:
        self.runtime = runtime
        self.stages = runtime.stages
        self.outer = outer
        self.max_parallel = runtime.max_parallel_sub_calls
        self.controller = AbortController()
        self.remove_outer = outer.signal.add_callback(self.controller.abort)
        self.sink: SessionSink | None = runtime.session_for(outer.agent)
        self.counter = 0
        self.pending: deque[_Entry] = deque()
        self.commits: deque[_Entry] = deque()
        self.exclusive_active = False
        self.running = 0
        self.log_tasks: set[asyncio.Task[None]] = set()
        self.wake = asyncio.Event()
        self.driver: asyncio.Task[None] | None = None

    # --- the program side ----------------------------------------------------------------------

    def binding(self, name: str) -> Callable[[Any], Awaitable[Any]]:
        async def call(arguments: Any) -> Any:
            signal = self.controller.signal
            if signal.aborted:
                raise _Failed(f"run_code run is over ({signal.reason}); {name} not dispatched")
            try:
                snapshot = snapshot_json(arguments)
            except NotLosslessJsonError:
                raise _Failed(
                    "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
                ) from None
            except Exception as error:
                raise _Failed(f"tool arguments must be lossless JSON: {message_of(error)}") from None
            self.counter += 1
            outer = self.outer
            call_input = ToolExecutionInput(
                call_id=f"{outer.call_id}:code:{self.counter}",
                root_call_id=outer.root_call_id,
                name=name,
                arguments=snapshot,
                agent=outer.agent,
                parent=outer.token,
                signal=signal,
            )
            entry = _Entry(name, call_input, asyncio.get_running_loop().create_future())
            self.pending.append(entry)
            self._kick()
            outcome, payload = await entry.future
            if outcome == "abandoned":
                raise _Failed(payload)
            if _fired(signal):
                raise _Failed(f"run_code run is over ({signal.reason}); {name} result discarded")
            if outcome == "error":
                raise _Failed(payload)
            return payload

        return call

    # --- the driver lane ------------------------------------------------------------------------

    def _kick(self) -> None:
        if self.driver is None:
            self.driver = asyncio.ensure_future(self._drive())
        self.wake.set()

    async def _drive(self) -> None:
        while True:
            self.wake.clear()
            if await self._step():
                continue
            if not self.pending and not self.commits and self.controller.signal.aborted:
                return
            await self.wake.wait()

    async def _step(self) -> bool:
        """Do one unit of work; False when nothing can progress right now."""
        if self.commits and self.commits[0].settled():
            await self._commit(self.commits.popleft())
            return True
        if not self.pending:
            return False
        entry = self.pending[0]
        signal = self.controller.signal
        if signal.aborted:
            self.pending.popleft()
            _resolve(
                entry.future,
                "abandoned",
                f"run_code run is over ({signal.reason}); {entry.name} tool call abandoned",
            )
            return True
        exclusive = self.runtime.execution_mode(entry.call) == "exclusive"
        # The pool is the bodies still running; settled calls waiting to commit hold no slot.
        if self.exclusive_active or (self.running if exclusive else self.running >= self.max_parallel):
            return False
        self.pending.popleft()
        entry.exclusive = exclusive
        self.exclusive_active = exclusive
        self.commits.append(entry)
        await self._start(entry)
        return True

    async def _start(self, entry: _Entry) -> None:
        call = entry.call
        if self.sink is not None:
            from ..loop.session import code_dispatch_start_event

            self.sink(
                *code_dispatch_start_event(
                    root_call_id=self.outer.root_call_id,
                    parent_call_id=self.outer.call_id,
                    sub_call_id=call.call_id,
                    name=entry.name,
                    arguments=thaw(call.arguments),
                    agent=_json_key(self.outer.agent),
                )
            )
        prepared = await self.stages.prepare(call)
        entry.execution = prepared.execution
        if prepared.kind == "dispatch":
            flight = asyncio.ensure_future(self.stages.dispatch(prepared.execution))
            self.running += 1
            flight.add_done_callback(self._landed)
            entry.flight = flight
        else:
            entry.early = prepared

    def _landed(self, flight: asyncio.Future[DispatchOutcome]) -> None:
        self.running -= 1
        self.wake.set()

    async def _commit(self, entry: _Entry) -> None:
        execution = entry.execution
        assert execution is not None
        if entry.early is not None:
            kind, result = entry.early.kind, entry.early.result
        else:
            assert entry.flight is not None
            outcome = entry.flight.result()
            kind, result = outcome.kind, outcome.result
        assert result is not None
        if kind == "post-result":
            result = await self.stages.finalize(execution, result)
        else:
            result = self.stages.finish(execution, result)
        for context in result.additional_contexts:
            self.outer.defer_context(context)
        if not result.is_error and result.concludes_turn:
            self.outer.conclude_turn()
        if entry.exclusive:
            self.exclusive_active = False
        if result.is_error:
            _resolve(entry.future, "error", result.error.message)
        else:
            _resolve(entry.future, "value", result.value)
        if self.sink is not None:
            task = asyncio.ensure_future(self._log_settled(entry, result))
            self.log_tasks.add(task)
            task.add_done_callback(self.log_tasks.discard)
            while len(self.log_tasks) > self.max_parallel:
                await asyncio.wait(set(self.log_tasks), return_when=asyncio.FIRST_COMPLETED)

    async def _log_settled(self, entry: _Entry, result: ToolExecutionResult) -> None:
        from ..loop.session import code_dispatch_event

        outer = self.outer
        original = result.content
        content: Any = original
        listeners = self.runtime._events._listeners.get("tools/code-dispatch-log")
        if listeners:
            chain = self.runtime._registry.chain(outer.agent)[1]
            admitted = EventBus.admitted(listeners, chain)
            record = CodeDispatchLogEntry(
                outer, outer.agent, entry.call.call_id, entry.name, result.is_error, original
            )

            async def keep() -> Any:
                return original

            try:
                content = await EventBus.waterfall(admitted, (record,), keep)
                content = snapshot_json(content)
            except Exception as error:
                logger.warning(
                    "tools: code-dispatch-log listener failed for %s: %s; "
                    "logging the original settled content",
                    entry.name,
                    message_of(error),
                )
                content = original
        assert self.sink is not None
        self.sink(
            *code_dispatch_event(
                root_call_id=outer.root_call_id,
                parent_call_id=outer.call_id,
                sub_call_id=entry.call.call_id,
                name=entry.name,
                arguments=thaw(entry.call.arguments),
                is_error=result.is_error,
                content=thaw(content),
                agent=_json_key(outer.agent),
            )
        )

    # --- settlement -----------------------------------------------------------------------------

    async def settle(self) -> None:
        """Abort the run scope, then drain: abandon queued calls, commit started ones, finish logs."""
        self.controller.abort("run_code settled")
        self.remove_outer()
        if self.driver is not None:
            self.wake.set()
            await asyncio.shield(self.driver)
        while self.log_tasks:
            await asyncio.wait(set(self.log_tasks))


def _fired(signal: Any) -> bool:
    """Re-read ``signal.aborted`` after an ``await`` (type checkers narrow a plain re-read)."""
    return bool(signal.aborted)


def _resolve(future: asyncio.Future[Any], outcome: str, payload: Any) -> None:
    """Answer a binding call: ``value``, ``error`` (the tool failed) or ``abandoned`` (never ran)."""
    if not future.done():
        future.set_result((outcome, payload))


def _json_key(agent: Hashable | None) -> Any:
    from .._json import is_lossless_json

    return agent if agent is None or is_lossless_json(agent) else repr(agent)
