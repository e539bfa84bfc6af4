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

The calls run on :class:`toolrt._ordered_executor.OrderedExecutor`, which holds the contract and
the two lanes (a call that arrives while the executor is idle runs prepare → dispatch → commit in one
task of its own, the fast lane; any other call queues for the driver task). A binding answers with
a future rather than a coroutine, so the sandbox host needs no task per call either
(``docs/decisions/0006-code-mode-fast-lane.md``). The log events are made here
(:mod:`toolrt.codemode._dispatch_log`) and handed to the bound session sink.

Human time: each run has a :class:`~toolrt.codemode.RunClock`, handed to the code runtime with the
request and to every sub-call as its ``wait_clock``. The pipeline pauses it while a sub-call waits for
an approval, and the runtime's wall-clock limit counts only the time it runs (the program is blocked
on the reply meanwhile, so it spends no CPU either). A person answering after 35 s does not time out
a program with a 30 s budget.

Settlement: when the program returns or fails, a run-scoped signal fires (``run_code settled``),
queued calls are abandoned (they log nothing), in-flight bodies observe the signal, every started
call is committed, and every log write finishes — all before ``run_code`` returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortController, AbortSignal
from toolrt._events import EventBus, EventSink, message_of
from toolrt._execution import ToolExecutionInput, ToolRunContext
from toolrt._json import NotLosslessJsonError, snapshot_json, thaw
from toolrt._ordered_executor import OrderedCall, OrderedExecutor
from toolrt._registry import RUN_CODE_NAME
from toolrt._results import ToolExecutionResult
from toolrt._tracing import annotate
from toolrt.codemode._code_runtime import (
    BindingAnswer,
    CodeBindingNamespace,
    CodeErrorClass,
    CodeRunRequest,
    CodeRunResult,
    RunClock,
)
from toolrt.codemode._dispatch_log import (
    CodeDispatchLogEntry,
    code_dispatch_event,
    code_dispatch_start_event,
    json_agent_key,
)
from toolrt.codemode._tool_search import declarations_renderer, search_bindings

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime
    from toolrt.codemode._code_runtime import CodeRuntime

__all__ = ["run_program"]

logger = logging.getLogger("toolrt")
_ERROR_CLASS = CodeErrorClass("ToolCallError", "toolName")
_DRAIN_SHARE = 0.8
"""The part of the runtime's grace a cancelled run waits for its sub-calls (the rest commits them)."""


class _Entry(OrderedCall):
    """A binding call on the executor, with the answer the program awaits."""

    __slots__ = ("answer",)

    def __init__(self, call: ToolExecutionInput, answer: BindingAnswer) -> None:
        super().__init__(call)
        self.answer = answer


class _Failed(Exception):
    """A binding call that failed; the runtime raises the program's error class with this message."""


async def run_program(
    runtime: ToolRuntime, code_runtime: CodeRuntime, program: str, outer: ToolRunContext
) -> CodeRunResult:
    """Run ``program`` with ``tools`` bound to every tool ``outer``'s agent can see (not run_code)."""
    bridge = _Bridge(runtime, outer)
    functions = {
        name: bridge.binding(name) for name in runtime.visible_tools(outer.agent) if name != RUN_CODE_NAME
    }
    # Tool search's describe/search (when on): answered from the tool set, never dispatched.
    functions.update(search_bindings(runtime, outer.agent, declarations_renderer(code_runtime.language)))
    request = CodeRunRequest(
        program=program,
        bindings=[CodeBindingNamespace("tools", functions, _ERROR_CLASS, member_noun="tool")],
        signal=bridge.signal,
        clock=bridge.clock,
    )
    if getattr(outer, "trace", None) is not None:
        annotate(outer, _run_attributes(code_runtime))
    try:
        result = await code_runtime.run(request)
    except asyncio.CancelledError:
        # The task awaiting run_code was cancelled: drain the started sub-calls for the runtime's
        # timeout grace at most, then finish them, before the cancellation propagates. The scheduler
        # that cancelled us drains for that same grace from the same moment, so the bridge keeps a
        # share of it for finishing and logging what is still running.
        await bridge.settle(bound_s=runtime.stages.drain_s * _DRAIN_SHARE)
        raise
    except BaseException:
        await bridge.settle()
        raise
    await bridge.settle()
    return result


def _run_attributes(code_runtime: CodeRuntime) -> dict[str, Any]:
    """What a traced run is promised: the runtime's isolation and its limits (a runtime with
    ``limits``, like the sandbox's), as span attributes."""
    isolation = code_runtime.isolation
    attributes: dict[str, Any] = {
        "toolrt.code.language": code_runtime.language,
        "toolrt.code.isolation.kind": isolation.kind,
        "toolrt.code.isolation.enforcement": isolation.enforcement,
        "toolrt.code.isolation.layers": list(isolation.layers),
    }
    limits = getattr(code_runtime, "limits", None)
    for name in ("wall_seconds", "cpu_seconds", "memory_bytes", "output_bytes", "value_bytes"):
        value = getattr(limits, name, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[f"toolrt.code.limits.{name}"] = value
    return attributes


class _Bridge(OrderedExecutor[_Entry]):
    def __init__(self, runtime: ToolRuntime, outer: ToolRunContext) -> None:
        self.controller = AbortController()
        self.signal = self.controller.signal
        super().__init__(runtime.stages, signal=self.signal, max_parallel=runtime.max_parallel_sub_calls)
        self.loop = asyncio.get_running_loop()  # per-call futures: no lookup each time
        self.stages = runtime.stages
        self.outer = outer
        self.max_parallel = runtime.max_parallel_sub_calls
        self.remove_outer = outer.signal.add_callback(self.controller.abort)
        self.sink: EventSink | None = runtime.session_for(outer.agent)
        self.agent_key = json_agent_key(outer.agent)
        self.counter = 0
        self.log_tasks: set[asyncio.Task[None]] = set()
        self.clock = RunClock()  # paused by the pipeline while a sub-call waits for a person

    # --- the program side ----------------------------------------------------------------------

    def binding(self, name: str) -> Callable[[Any], BindingAnswer]:
        """The program's ``tools.<name>``: answers with a :class:`BindingAnswer`, not a coroutine, so
        a runtime can wait for it without a task of its own and learn of the answer the moment it
        is set (the sandbox host replies from :meth:`BindingAnswer.when_settled`)."""

        def call(arguments: Any) -> BindingAnswer:
            answer = BindingAnswer(loop=self.loop)
            signal = self.signal
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
                wait_clock=self.clock,
            )
            self.submit(_Entry(call_input, answer))
            return answer

        return call

    # --- the executor's hooks ------------------------------------------------------------------

    def on_start(self, call: _Entry) -> None:
        """Log ``tool/code-dispatch-start`` (with a bound session) before the call's policy runs."""
        if self.sink is not None:
            self.sink(
                *code_dispatch_start_event(
                    root_call_id=self.outer.root_call_id,
                    parent_call_id=self.outer.call_id,
                    sub_call_id=call.input.call_id,
                    name=call.input.name,
                    arguments=thaw(call.input.arguments),
                    agent=self.agent_key,
                )
            )

    def on_commit(self, call: _Entry, result: ToolExecutionResult) -> Awaitable[None] | None:
        """Defer the sub-call's contexts through the outer call, answer the program, and log the
        settled call (at most ``max_parallel_sub_calls`` log writes in flight)."""
        for context in result.additional_contexts:
            self.outer.defer_context(context)
        if not result.is_error and result.concludes_turn:
            self.outer.conclude_turn()
        if result.is_error:
            _resolve(call, "error", result.error.message, self.signal)
        else:
            _resolve(call, "value", result.value, self.signal)
        if self.sink is None:
            return None
        task = asyncio.ensure_future(self._log_settled(call, result))
        self.log_tasks.add(task)
        task.add_done_callback(self.log_tasks.discard)
        if len(self.log_tasks) > self.max_parallel:
            return self._log_backpressure()
        return None

    def on_abandon(self, call: _Entry) -> None:
        """Answer a call that never started because the run is over: it logs nothing."""
        signal = self.signal
        _resolve(
            call,
            "abandoned",
            f"run_code run is over ({signal.reason}); {call.input.name} tool call abandoned",
            signal,
        )

    # --- the log -------------------------------------------------------------------------------

    async def _log_backpressure(self) -> None:
        while len(self.log_tasks) > self.max_parallel:
            await asyncio.wait(set(self.log_tasks), return_when=asyncio.FIRST_COMPLETED)

    async def _log_settled(self, call: _Entry, result: ToolExecutionResult) -> None:
        outer = self.outer
        name = call.input.name
        original = result.content
        content: Any = original
        listeners = self.stages.admitted_listeners("tools/code-dispatch-log", outer.agent)
        if listeners:
            record = CodeDispatchLogEntry(
                outer, outer.agent, call.input.call_id, name, result.is_error, original
            )

            async def keep() -> Any:
                return original

            try:
                content = await EventBus.waterfall(listeners, (record,), keep)
                content = snapshot_json(content)
            except Exception as error:
                logger.warning(
                    "tools: code-dispatch-log listener failed for %s: %s; "
                    "logging the original settled content",
                    name,
                    message_of(error),
                )
                content = original
        assert self.sink is not None
        self.sink(
            *code_dispatch_event(
                root_call_id=outer.root_call_id,
                parent_call_id=outer.call_id,
                sub_call_id=call.input.call_id,
                name=name,
                arguments=thaw(call.input.arguments),
                is_error=result.is_error,
                content=thaw(content),
                agent=self.agent_key,
            )
        )

    # --- settlement -----------------------------------------------------------------------------

    async def settle(self, bound_s: float | None = None) -> None:
        """Abort the run scope, then drain: abandon queued calls, commit started ones, finish logs.

        With ``bound_s`` (the awaiting task was cancelled) the drain lasts that long at most; the
        calls still running then are finished as aborted (each keeps exactly one result and log).
        """
        self.controller.abort("run_code settled")
        self.remove_outer()
        if bound_s is None:
            await self.join()
        elif not await self.join_within(bound_s):
            logger.warning(
                "run_code %s: sub-calls still running %ss after the run was cancelled; finished as aborted",
                self.outer.call_id,
                f"{bound_s:g}",
            )
            self.finish_started()
        while self.log_tasks:
            await asyncio.wait(set(self.log_tasks))


def _resolve(call: _Entry, outcome: str, payload: Any, signal: AbortSignal) -> None:
    """Answer a binding call: ``value``, ``error`` (the tool failed) or ``abandoned`` (never ran);
    an outcome that arrives once the run is over is discarded, whatever it was."""
    answer = call.answer
    if answer.done():  # the runtime gave up on this call (its run ended)
        return
    if outcome == "abandoned":
        answer.set_exception(_Failed(payload))
    elif signal.aborted:
        answer.set_exception(
            _Failed(f"run_code run is over ({signal.reason}); {call.input.name} result discarded")
        )
    elif outcome == "error":
        answer.set_exception(_Failed(payload))
    else:
        answer.set_result(payload)
