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

Two lanes, one order: a call that arrives while nothing is queued, started or committing runs
prepare → dispatch → commit in one task of its own (the fast lane: a sequential program's calls
never wake the driver); any other call queues for the driver task. Whichever lane runs them,
prepares and commits never overlap and commits follow submission order. A binding answers with a
future rather than a coroutine, so the sandbox host needs no task per call either
(``docs/decisions/0006-code-mode-fast-lane.md``).

Settlement: when the program returns or fails, a run-scoped signal fires (``run_code settled``),
queued calls are abandoned (they log nothing), in-flight bodies observe the signal, every started
call is committed, and every log write finishes — all before ``run_code`` returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolrt._abort import AbortController
from toolrt._events import EventBus, message_of
from toolrt._execution import ToolExecution, ToolExecutionInput, ToolRunContext
from toolrt._json import NotLosslessJsonError, snapshot_json, thaw
from toolrt._registry import RUN_CODE_NAME
from toolrt._results import ToolExecutionResult, ToolFailure, ToolSuccess
from toolrt.codemode._code_runtime import (
    BindingAnswer,
    CodeBindingNamespace,
    CodeErrorClass,
    CodeRunRequest,
    CodeRunResult,
)

if TYPE_CHECKING:
    from toolrt._tool_runtime import SessionSink, ToolRuntime
    from toolrt.codemode._code_runtime import CodeRuntime

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


_Settled = tuple[Literal["post-result", "final-result"], ToolExecutionResult]
"""A call's (kind, result) once settled: ``post-result`` goes through post-execute, the rest not."""


class _Entry:
    __slots__ = ("call", "early", "exclusive", "execution", "flight", "future", "inline", "name")

    def __init__(self, name: str, call: ToolExecutionInput, future: asyncio.Future[Any]) -> None:
        self.name = name
        self.call = call
        self.future = future
        self.exclusive = False
        self.inline = False
        self.execution: ToolExecution | None = None
        self.flight: asyncio.Task[_Settled] | None = None
        self.early: _Settled | None = None  # (kind, result): settled without a flight to wait for

    def settled(self) -> bool:
        """Ready for the driver to commit; an inline entry commits itself, never through the driver."""
        if self.inline:
            return False
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
        self.loop = asyncio.get_running_loop()  # per-call futures and tasks: no lookup each time
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
        # The fast lane: a call that arrives while the lane is idle runs prepare → dispatch → commit
        # in one task of its own instead of through the driver (two task switches and two Event
        # wake-ups fewer per sequential call). ``stepping`` and ``inline_busy`` keep the contract:
        # no prepare or commit ever overlaps another, whichever of the two lanes runs it.
        self.stepping = False
        self.inline_busy = False
        self.inline_task: asyncio.Task[None] | None = None
        self.lane_waiter: asyncio.Future[None] | None = None

    # --- the program side ----------------------------------------------------------------------

    def binding(self, name: str) -> Callable[[Any], BindingAnswer]:
        """The program's ``tools.<name>``: answers with a :class:`BindingAnswer`, not a coroutine, so
        a runtime can wait for it without a task of its own and learn of the answer the moment it
        is set (the sandbox host replies from :meth:`BindingAnswer.when_settled`)."""

        def call(arguments: Any) -> BindingAnswer:
            answer = BindingAnswer(loop=self.loop)
            signal = self.controller.signal
            if signal.aborted:
                answer.set_exception(
                    _Failed(f"run_code run is over ({signal.reason}); {name} not dispatched")
                )
                return answer
            try:
                snapshot = snapshot_json(arguments)
            except NotLosslessJsonError:
                answer.set_exception(
                    _Failed(
                        "tool arguments must be lossless JSON "
                        "(call the tool with an arguments object, e.g. `{}`)"
                    )
                )
                return answer
            except Exception as error:
                answer.set_exception(_Failed(f"tool arguments must be lossless JSON: {message_of(error)}"))
                return answer
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
            entry = _Entry(name, call_input, answer)
            if self._idle():
                self._run_inline(entry)
            else:
                self.pending.append(entry)
                self._kick()
            return answer

        return call

    # --- the driver lane ------------------------------------------------------------------------

    def _kick(self) -> None:
        if self.driver is None:
            self.driver = asyncio.ensure_future(self._drive())
        self.wake.set()

    def _idle(self) -> bool:
        """Nothing queued, started or being committed: a new call may take the fast lane."""
        return not (self.pending or self.commits or self.stepping or self.inline_busy)

    def _run_inline(self, entry: _Entry) -> None:
        # A task of its own, not the caller's: the runtime may cancel a binding call at settlement,
        # and a started call must still be committed (its body observes the run signal instead).
        entry.inline = True
        self.inline_busy = True  # held from now: a call arriving before the task starts must queue
        self.commits.append(entry)
        self.inline_task = self.loop.create_task(self._inline(entry))

    async def _inline(self, entry: _Entry) -> None:
        signal = self.controller.signal
        try:
            if signal.aborted:
                self.commits.remove(entry)
                _abandon(entry, signal)
                return
            entry.exclusive = self.exclusive_active = self.runtime.execution_mode(entry.call) == "exclusive"
            kind, result = await self._prepare(entry)
            if kind == "dispatch":
                assert entry.execution is not None
                self.running += 1
                self.inline_busy = False
                if self.pending:
                    self._kick()  # queued calls may start beside this one (the pool allows it)
                try:
                    entry.early = await self.stages._dispatch(entry.execution)
                finally:
                    self.running -= 1
                self.inline_busy = True
                while self.stepping:  # the driver is inside a prepare: commits never overlap it
                    await self._lane_free()
            else:
                assert result is not None
                entry.early = (kind, result)
            assert self.commits[0] is entry  # nothing commits past an uncommitted head
            self.commits.popleft()
            await self._commit(entry)
        finally:
            self.inline_busy = False
            if self.pending or self.commits:
                self._kick()

    async def _lane_free(self) -> None:
        waiter = self.lane_waiter = asyncio.get_running_loop().create_future()
        await waiter

    async def _drive(self) -> None:
        while True:
            self.wake.clear()
            self.stepping = True
            try:
                progressed = await self._step()
            finally:
                self.stepping = False
                waiter, self.lane_waiter = self.lane_waiter, None
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)
            if progressed:
                continue
            if not self.pending and not self.commits and self.controller.signal.aborted:
                return
            await self.wake.wait()

    async def _step(self) -> bool:
        """Do one unit of work; False when nothing can progress right now."""
        if self.inline_busy:
            return False  # the fast lane is preparing or committing; it wakes us when done
        if self.commits and self.commits[0].settled():
            await self._commit(self.commits.popleft())
            return True
        if not self.pending:
            return False
        entry = self.pending[0]
        signal = self.controller.signal
        if signal.aborted:
            self.pending.popleft()
            _abandon(entry, signal)
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
        kind, result = await self._prepare(entry)
        if kind == "dispatch":
            assert entry.execution is not None
            flight = self.loop.create_task(self.stages._dispatch(entry.execution))
            self.running += 1
            flight.add_done_callback(self._landed)
            entry.flight = flight
        else:
            assert result is not None
            entry.early = (kind, result)

    async def _prepare(
        self, entry: _Entry
    ) -> tuple[Literal["dispatch", "post-result", "final-result"], ToolExecutionResult | None]:
        """Log the start (with a bound session), create the execution and run ``prepare`` (policy,
        approval, guards) when it has work: the stages :meth:`Pipeline.execute` runs, in its order,
        with the same shortcuts (a call with no policy to consult goes straight to dispatch)."""
        call = entry.call
        if self.sink is not None:
            from toolrt.loop._event_constructors import code_dispatch_start_event

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
        stages = self.stages
        execution, early = stages._create(call)
        entry.execution = execution
        if early is not None:
            return "final-result", early
        if not stages.needs_prepare(execution):
            return "dispatch", None
        return await stages._prepare(execution)

    def _landed(self, flight: asyncio.Future[_Settled]) -> None:
        self.running -= 1
        self.wake.set()

    async def _commit(self, entry: _Entry) -> None:
        execution = entry.execution
        assert execution is not None
        if entry.early is not None:
            kind, result = entry.early
        else:
            assert entry.flight is not None
            kind, result = entry.flight.result()
        committed = self.stages.commit(execution, kind, result)
        result = committed if isinstance(committed, ToolSuccess | ToolFailure) else await committed
        for context in result.additional_contexts:
            self.outer.defer_context(context)
        if not result.is_error and result.concludes_turn:
            self.outer.conclude_turn()
        if entry.exclusive:
            self.exclusive_active = False
        if result.is_error:
            _resolve(entry, "error", result.error.message, self.controller.signal)
        else:
            _resolve(entry, "value", result.value, self.controller.signal)
        if self.sink is not None:
            task = asyncio.ensure_future(self._log_settled(entry, result))
            self.log_tasks.add(task)
            task.add_done_callback(self.log_tasks.discard)
            while len(self.log_tasks) > self.max_parallel:
                await asyncio.wait(set(self.log_tasks), return_when=asyncio.FIRST_COMPLETED)

    async def _log_settled(self, entry: _Entry, result: ToolExecutionResult) -> None:
        from toolrt.loop._event_constructors import code_dispatch_event

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
        if self.inline_task is not None:
            await asyncio.shield(self.inline_task)
        if self.driver is not None:
            self.wake.set()
            await asyncio.shield(self.driver)
        while self.log_tasks:
            await asyncio.wait(set(self.log_tasks))


def _abandon(entry: _Entry, signal: Any) -> None:
    """Answer a call that never started because the run is over: it logs nothing."""
    _resolve(
        entry,
        "abandoned",
        f"run_code run is over ({signal.reason}); {entry.name} tool call abandoned",
        signal,
    )


def _resolve(entry: _Entry, outcome: str, payload: Any, signal: Any) -> None:
    """Answer a binding call: ``value``, ``error`` (the tool failed) or ``abandoned`` (never ran);
    an outcome that arrives once the run is over is discarded, whatever it was."""
    future = entry.future
    if future.done():  # the runtime gave up on this call (its run ended)
        return
    if outcome == "abandoned":
        future.set_exception(_Failed(payload))
    elif signal.aborted:
        future.set_exception(
            _Failed(f"run_code run is over ({signal.reason}); {entry.name} result discarded")
        )
    elif outcome == "error":
        future.set_exception(_Failed(payload))
    else:
        future.set_result(payload)


def _json_key(agent: Hashable | None) -> Any:
    from toolrt._json import is_lossless_json

    return agent if agent is None or is_lossless_json(agent) else repr(agent)
