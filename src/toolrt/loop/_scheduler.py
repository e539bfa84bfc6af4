"""The native scheduler: run one assistant message's tool calls, concurrently where safe.

The contract (upstream L1–L5), and why:

* **Parse.** Each call's raw JSON arguments are parsed; empty text means ``{}``. Malformed JSON is an
  ``INVALID_ARGS`` result the model can read — never a silent ``{}`` that runs the tool with
  arguments the model did not send.
* **Group.** Calls are classified with :meth:`ToolRuntime.execution_mode` just before each starts.
  Consecutive ``parallel`` calls share a rolling pool of ``max_parallel`` slots; an ``exclusive``
  call is a barrier: the pool drains, it runs alone (through its commit), then the next group starts.
* **Order.** ``tool/call`` is recorded before a call's policy runs; ``prepare`` (pre-execute,
  approval, guards) runs in model order and never overlaps; only ``dispatch`` — the body — overlaps.
  Results are committed (post-execute, ``tool/result``, contexts) in model order even when a later
  call finishes first, because middleware and models read results by position.
* **Abort.** When the step's signal fires, no new call starts; started calls drain (their bodies see
  the signal) and commit; every unstarted call gets an ``ABORTED_BEFORE_DISPATCH`` result. Every call
  ends with exactly one result, whatever happens — including cancellation of the awaiting task.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt._errors import ToolArgsError
from toolrt._execution import ToolExecution, ToolExecutionInput
from toolrt._results import ToolExecutionResult, ToolFailure, ToolSuccess
from toolrt.loop._messages import ToolCall

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime

__all__ = ["CommittedCall", "parse_arguments", "run_tool_calls"]

_INVALID_JSON = object()
_YIELD_EVERY = 8
"""Started dispatches between yields to the loop (a yield per start costs more than it overlaps)."""


@dataclass(frozen=True, slots=True)
class CommittedCall:
    """One call's final outcome, in model order."""

    call: ToolCall
    arguments: Any
    result: ToolExecutionResult


def parse_arguments(raw: str) -> tuple[Any, str | None]:
    """The parsed arguments, or a description of why the text is not JSON."""
    if raw.strip() == "":
        return {}, None
    try:
        return json.loads(raw), None
    except (ValueError, RecursionError) as error:
        detail = str(error) if isinstance(error, ValueError) else "nesting too deep"
        return _INVALID_JSON, f"arguments are not valid JSON: {detail}"


class _Slot:
    __slots__ = ("arguments", "call", "early", "execution", "task")

    def __init__(self, call: ToolCall, arguments: Any) -> None:
        self.call = call
        self.arguments = arguments
        self.execution: ToolExecution | None = None
        self.task: asyncio.Task[tuple[str, ToolExecutionResult]] | None = None
        self.early: tuple[str, ToolExecutionResult] | None = None

    def ready(self) -> bool:
        return self.task is None or self.task.done()


async def run_tool_calls(
    runtime: ToolRuntime,
    calls: Sequence[ToolCall],
    *,
    signal: AbortSignal,
    agent: Hashable | None = None,
    max_parallel: int = 10,
    on_call: Callable[[ToolCall, Any], None] | None = None,
    on_result: Callable[[CommittedCall], None] | None = None,
) -> list[CommittedCall]:
    """Run ``calls`` (one assistant message) and return their results in model order.

    ``on_call(call, parsed_arguments)`` runs before each call's policy (append ``tool/call`` there);
    ``on_result(committed)`` after each commit, in model order (append ``tool/result`` there).
    """
    if not isinstance(max_parallel, int) or isinstance(max_parallel, bool) or max_parallel < 1:
        raise ValueError("max_parallel_tool_calls must be a positive integer")
    return await _Batch(runtime, calls, signal, agent, max_parallel, on_call, on_result).run()


class _Batch:
    def __init__(  # noqa: PLR0917 - private; built in one place from run_tool_calls' arguments
        self,
        runtime: ToolRuntime,
        calls: Sequence[ToolCall],
        signal: AbortSignal,
        agent: Hashable | None,
        max_parallel: int,
        on_call: Callable[[ToolCall, Any], None] | None,
        on_result: Callable[[CommittedCall], None] | None,
    ) -> None:
        self.runtime = runtime
        self.stages = runtime.stages
        self.calls = calls
        self.signal = signal
        self.agent = agent
        self.max_parallel = max_parallel
        self.on_call = on_call
        self.on_result = on_result
        self.pending: deque[_Slot] = deque()
        self.in_flight = 0
        self.committed: list[CommittedCall] = []
        self.wake: asyncio.Future[None] | None = None
        self.next_index = 0
        self.started = 0
        self.parsed = [parse_arguments(call.arguments) for call in calls]
        # One input per call, built once: classification and prepare see the same object.
        self.inputs = [
            self._input(call, call.arguments if problem is not None else arguments, signal)
            for call, (arguments, problem) in zip(calls, self.parsed, strict=True)
        ]

    def _input(self, call: ToolCall, arguments: Any, signal: AbortSignal) -> ToolExecutionInput:
        return ToolExecutionInput(
            call_id=call.id, name=call.name, arguments=arguments, signal=signal, agent=self.agent
        )

    async def run(self) -> list[CommittedCall]:
        try:
            await self._drive()
        except asyncio.CancelledError:
            self._abandon()
            raise
        except BaseException:
            # A scheduler-internal failure: let started bodies finish, fabricate nothing, re-raise.
            await self._settle_started()
            raise
        return self.committed

    async def _drive(self) -> None:
        calls = self.calls
        while self.next_index < len(calls):
            if self.signal.aborted:
                break
            call = calls[self.next_index]
            arguments, _ = self.parsed[self.next_index]
            exclusive = arguments is _INVALID_JSON or (
                self.runtime.execution_mode(self.inputs[self.next_index]) == "exclusive"
            )
            if exclusive:
                await self._drain()
                if _fired(self.signal):
                    break
                await self._start(call)
                await self._drain()
                continue
            while self.in_flight >= self.max_parallel:
                await self._wait_for_settlement()
            if _fired(self.signal):
                break
            await self._start(call)
            await self._commit_ready()
        await self._drain()
        self._abort_unstarted()

    def _abort_unstarted(self) -> None:
        """Whatever was never started still gets its one call record and one result."""
        for index in range(self.next_index, len(self.calls)):
            call = self.calls[index]
            arguments, problem = self.parsed[index]
            recorded = None if problem is not None else arguments
            if self.on_call is not None:
                self.on_call(call, recorded)
            aborted = _aborted_signal(self.signal)
            result = self.stages.reject(self._input(call, recorded, aborted), _aborted_before_dispatch())
            self._record(CommittedCall(call, recorded, result))
        self.next_index = len(self.calls)

    async def _start(self, call: ToolCall) -> None:
        index = self.next_index
        arguments, problem = self.parsed[index]
        self.next_index += 1
        slot = _Slot(call, None if problem is not None else arguments)
        self.pending.append(slot)
        if self.on_call is not None:
            self.on_call(call, slot.arguments)
        stages = self.stages
        if problem is not None:
            slot.early = ("done", stages.reject(self.inputs[index], ToolArgsError([problem])))
            return
        # The pipeline's internal stages (tuples, no wrapper objects): this runs once per model call.
        execution, early = stages._create(self.inputs[index])
        slot.execution = execution
        if early is not None:
            slot.early = ("final-result", early)
            return
        kind: str = "dispatch"
        if stages.needs_prepare(execution):
            kind, result = await stages._prepare(execution)
            if kind != "dispatch":
                assert result is not None
                slot.early = (kind, result)
                return
        task = asyncio.ensure_future(stages._dispatch(execution))
        self.in_flight += 1
        task.add_done_callback(self._settled)
        slot.task = task
        self.started += 1
        if self.started % _YIELD_EVERY == 0 and self.next_index < len(self.calls):
            # Let started bodies run up to their first await before preparing more siblings, so
            # the overlap begins early instead of after every sibling is prepared.
            await asyncio.sleep(0)

    def _settled(self, task: asyncio.Task[tuple[str, ToolExecutionResult]]) -> None:
        self.in_flight -= 1
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)

    async def _wait_for_settlement(self) -> None:
        self.wake = asyncio.get_running_loop().create_future()
        try:
            await self.wake
        finally:
            self.wake = None
        await self._commit_ready()

    async def _commit_ready(self) -> None:
        while self.pending and self.pending[0].ready():
            await self._commit(self.pending.popleft())

    async def _drain(self) -> None:
        while self.pending:
            head = self.pending[0]
            if not head.ready():
                assert head.task is not None
                await asyncio.wait((head.task,))
            await self._commit(self.pending.popleft())

    async def _commit(self, slot: _Slot) -> None:
        if slot.early is not None:
            kind, result = slot.early
        else:
            assert slot.task is not None
            kind, result = slot.task.result()
        if kind != "done":
            assert slot.execution is not None
            committed = self.stages.commit(slot.execution, kind, result)
            result = committed if isinstance(committed, ToolSuccess | ToolFailure) else await committed
        self._record(CommittedCall(slot.call, slot.arguments, result))

    def _record(self, committed: CommittedCall) -> None:
        self.committed.append(committed)
        if self.on_result is not None:
            self.on_result(committed)

    async def _settle_started(self) -> None:
        tasks = [slot.task for slot in self.pending if slot.task is not None and not slot.task.done()]
        if tasks:
            await asyncio.wait(tasks)

    def _abandon(self) -> None:
        """The awaiting task was cancelled: end every call with a result before re-raising."""
        for slot in self.pending:
            if slot.task is not None and not slot.task.done():
                slot.task.cancel()
            execution = slot.execution
            if slot.early is not None and slot.early[0] == "done":
                result = slot.early[1]
            elif execution is None or execution.frozen:
                continue
            elif slot.early is not None:
                # A policy outcome already decided (e.g. a denial) stays; post-execute cannot run now.
                result = self.stages.finish(execution, slot.early[1])
            else:
                result = self.stages.finish_aborted(execution)
            self._record(CommittedCall(slot.call, slot.arguments, result))
        self.pending.clear()
        self._abort_unstarted()


def _fired(signal: AbortSignal) -> bool:
    """Re-read ``signal.aborted`` after an ``await`` (type checkers narrow a plain re-read)."""
    return signal.aborted


def _aborted_signal(signal: AbortSignal) -> AbortSignal:
    return signal if signal.aborted else AbortSignal.aborted_with("the step was cancelled")


def _aborted_before_dispatch() -> BaseException:
    from toolrt._errors import TOOL_ABORTED_BEFORE_DISPATCH, AbortError

    return AbortError("tool call aborted before dispatch", TOOL_ABORTED_BEFORE_DISPATCH)
