"""The native scheduler: run one assistant message's tool calls, concurrently where safe.

The contract (upstream L1–L5), and why:

* **Parse.** Each call's raw JSON arguments are parsed; empty text means ``{}``. Malformed JSON is an
  ``INVALID_ARGS`` result the model can read — never a silent ``{}`` that runs the tool with
  arguments the model did not send.
* **Group, order, abort.** The calls run on :class:`toolrt._ordered_executor.OrderedExecutor`, whose
  docstring states (and argues) the contract: classified just before each starts; consecutive
  ``parallel`` calls share a rolling pool of ``max_parallel`` slots; an ``exclusive`` call (and a call
  whose arguments are not JSON) is a barrier; policy runs in model order and never overlaps; results
  are committed in model order. ``tool/call`` is recorded before a call's policy runs
  (``on_start``), ``tool/result`` after its commit.
* **Abort.** When the step's signal fires, no new call starts; started calls drain (their bodies see
  the signal) and commit; every unstarted call then gets its ``tool/call`` record and an
  ``ABORTED_BEFORE_DISPATCH`` result, in model order. Every call ends with exactly one result,
  whatever happens — including cancellation of the awaiting task (``task.cancel()``): the started
  bodies are cancelled and drained, for at most the runtime's timeout grace
  (``runtime.stages.drain_s``, 5 s by default), before every call is finished and ``CancelledError``
  propagates.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt._errors import ToolArgsError
from toolrt._execution import ToolExecutionInput
from toolrt._ordered_executor import OrderedCall, OrderedExecutor
from toolrt._results import ToolExecutionResult
from toolrt.loop._messages import ToolCall

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime

__all__ = ["CommittedCall", "parse_arguments", "run_tool_calls"]

_INVALID_JSON = object()


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


class _Slot(OrderedCall):
    """A model call on the executor: the call as the model sent it, and its recorded arguments."""

    __slots__ = ("arguments", "tool_call")

    def __init__(
        self, tool_call: ToolCall, arguments: Any, call: ToolExecutionInput, rejection: BaseException | None
    ) -> None:
        super().__init__(call, rejection)
        self.tool_call = tool_call
        self.arguments = arguments  # what tool/call records: None when the text is not JSON


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
    return await _Batch(runtime, calls, signal, agent, max_parallel, on_call, on_result).run_batch()


class _Batch(OrderedExecutor[_Slot]):
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
        super().__init__(runtime.stages, signal=signal, max_parallel=max_parallel)
        self.stages = runtime.stages
        self.signal = signal
        self.agent = agent
        self.on_call = on_call
        self.on_result = on_result
        self.committed: list[CommittedCall] = []
        self.unstarted: list[_Slot] = []
        for call in calls:
            arguments, problem = parse_arguments(call.arguments)
            if problem is not None:
                # The raw text goes to the rejection (it is what the model sent); nothing is recorded.
                slot_input = self._input(call, call.arguments, signal)
                self.enqueue(_Slot(call, None, slot_input, ToolArgsError([problem])))
            else:
                self.enqueue(_Slot(call, arguments, self._input(call, arguments, signal), None))

    def _input(self, call: ToolCall, arguments: Any, signal: AbortSignal) -> ToolExecutionInput:
        return ToolExecutionInput(
            call_id=call.id, name=call.name, arguments=arguments, signal=signal, agent=self.agent
        )

    async def run_batch(self) -> list[CommittedCall]:
        try:
            await self.run()
        except asyncio.CancelledError:
            # The awaiting task was cancelled: drain the started bodies (bounded), then end every
            # call with a result before re-raising.
            await self.drain_started(self.stages.drain_s)
            for slot, result in self.cancel_started():
                self._record(CommittedCall(slot.tool_call, slot.arguments, result))
            self.abandon_queued()
            self._abort_unstarted()
            raise
        except BaseException:
            # A scheduler-internal failure: let started bodies finish, fabricate nothing, re-raise.
            await self.wait_started()
            raise
        self._abort_unstarted()
        return self.committed

    def on_start(self, call: _Slot) -> None:
        """Record ``tool/call`` (through ``on_call``) before the call's policy runs."""
        if self.on_call is not None:
            self.on_call(call.tool_call, call.arguments)

    def on_commit(self, call: _Slot, result: ToolExecutionResult) -> None:
        """Record the committed result (``on_result`` appends ``tool/result``)."""
        self._record(CommittedCall(call.tool_call, call.arguments, result))

    def on_abandon(self, call: _Slot) -> None:
        """Keep the call for :meth:`_abort_unstarted`: its records come after every started call's."""
        self.unstarted.append(call)

    def _abort_unstarted(self) -> None:
        """Whatever was never started still gets its one call record and one result."""
        for slot in self.unstarted:
            if self.on_call is not None:
                self.on_call(slot.tool_call, slot.arguments)
            aborted = _aborted_signal(self.signal)
            result = self.stages.reject(
                self._input(slot.tool_call, slot.arguments, aborted), _aborted_before_dispatch()
            )
            self._record(CommittedCall(slot.tool_call, slot.arguments, result))
        self.unstarted.clear()

    def _record(self, committed: CommittedCall) -> None:
        self.committed.append(committed)
        if self.on_result is not None:
            self.on_result(committed)


def _aborted_signal(signal: AbortSignal) -> AbortSignal:
    return signal if signal.aborted else AbortSignal.aborted_with("the step was cancelled")


def _aborted_before_dispatch() -> BaseException:
    from toolrt._errors import TOOL_ABORTED_BEFORE_DISPATCH, AbortError

    return AbortError("tool call aborted before dispatch", TOOL_ABORTED_BEFORE_DISPATCH)
