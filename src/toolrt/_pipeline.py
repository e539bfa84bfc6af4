"""The execute pipeline: prepare → dispatch → finalize → finish.

Every call runs the same stages, and every failure anywhere becomes a structured result — never an
exception that escapes to the agent loop (task cancellation excepted: ``CancelledError`` always
propagates, after observers have been told the call ended)::

    prepare    snapshot + freeze arguments, resolve the name for the caller's scope,
               tools/pre-execute (allow / deny / ask → approval), monotonic guards
    dispatch   tools/execute wrappers around the body; arguments validated; the body runs
               with the caller's signal fused back in; the value is validated and rendered
    finalize   tools/post-execute (accept, replace content or value, block)
    finish     snapshot the result, apply the tool's finalize_content, freeze, tools/result

The stages are public one by one (:class:`Pipeline`: ``create``, ``prepare``, ``dispatch``,
``commit``) so a scheduler can run ``prepare`` in model order, overlap only ``dispatch``, and commit
in model order (:mod:`toolrt._ordered_executor` is the one that does). ``create`` resolves the tool
once, in the caller's scope, and every later stage runs that definition. ``prepare`` says where the
call goes next: ``dispatch``, ``post-result`` (a result that still passes post-execute, e.g. a
denial) or ``final-result`` (a result that skips it, e.g. invalid arguments). Stage outcomes are
plain ``(kind, result)`` tuples: they are made once per call, and a tuple costs a fraction of any
wrapper object.

**Deadlines.** A :class:`CallDeadline` set as :attr:`Pipeline.deadline` (every runtime installs the
default one, :func:`toolrt.policies.install_default_deadline`) times the body of each call it gives a
deadline. It costs almost nothing until the body awaits: the body runs up to its first ``await``
before any timer exists, and a body that returns without awaiting (a trivial tool) never gets one.
From its first ``await`` on, the body is driven here, in the awaiting task (an entry under one loop
timer shared by every timed body, no task of its own), so that when the deadline and then the grace
have run out the call can return while the body, which ignored its signal, goes on in a task of its
own (detached, and reported).
The same grace bounds how long a cancelled task waits for a body's cleanup (:attr:`Pipeline.drain_s`).

**Human time.** An approval is asked in ``prepare``, before ``dispatch``: a call's tool deadline
starts with its body and never counts the wait for a person. A call that carries a
:class:`~toolrt._execution.WaitClock` (a Code Mode sub-call: its program's clock) pauses it for the
wait.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import types
from collections.abc import Callable, Coroutine, Generator, Hashable
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from toolrt._abort import AbortController, AbortSignal, fuse_signals
from toolrt._decisions import UNSET, Accept, Allow, Ask, Block, Deny, ExecutionMode, PreToolDecision
from toolrt._errors import ToolArgsError, ToolNotFoundError, ToolOutputError
from toolrt._events import EventBus, message_of
from toolrt._execution import ToolExecution, ToolExecutionInput
from toolrt._json import NotLosslessJsonError, js_json_dumps, js_number, snapshot_json
from toolrt._results import (
    ToolError,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    make_failure,
    make_success,
    tool_error_result,
)
from toolrt._results import aborted_result as _aborted
from toolrt._results import as_content as _as_content
from toolrt._results import collapsed_message as _collapsed_message
from toolrt._results import failure_result as _failure
from toolrt._results import feedback_message as _feedback_message
from toolrt._results import frozen_field as _frozen
from toolrt._results import join_contexts as _join_contexts
from toolrt._results import lossy_arguments_error as _lossy_arguments_error
from toolrt._results import materialize as _materialize
from toolrt._results import project_output as _project
from toolrt._results import rebuild_result as _rebuild
from toolrt._results import result_field as _result_field
from toolrt._results import unknown_tool_message as _unknown_tool_message
from toolrt._threads import run_in_worker

if TYPE_CHECKING:
    from toolrt._approval_request import ApprovalService
    from toolrt._registry import ToolRegistry
    from toolrt._tool_definition import ToolDefinition
    from toolrt._tracing import CallObserver

__all__ = ["DEFAULT_GRACE_MS", "CallDeadline", "DispatchOutcome", "Pipeline", "Prepared", "tool_error_result"]

DEFAULT_GRACE_MS = 5_000
"""How long a body that ignores its signal is waited for after its deadline, and how long a
cancelled task waits for started bodies' cleanup when no deadline policy says otherwise."""


_ALLOW = Allow()
_ACCEPT = Accept()


Prepared: TypeAlias = tuple[Literal["dispatch", "post-result", "final-result"], ToolExecutionResult | None]
"""What ``prepare`` returns: ``("dispatch", None)``, or an early result and where it goes next
(``post-result`` passes post-execute, e.g. a denial; ``final-result`` skips it)."""

DispatchOutcome: TypeAlias = tuple[Literal["post-result", "final-result"], ToolExecutionResult]
"""What ``dispatch`` returns: the result, and whether it passes post-execute (``post-result``) or is
final (``final-result``: a wrapper or the pipeline itself failed)."""


class CallDeadline(Protocol):
    """Which calls have a deadline, and what the model reads when one runs out (a policy's part).

    The pipeline does the timing (see the module docstring); the policy decides the rest.
    """

    @property
    def grace_ms(self) -> float:
        """How long a body that ignores its fired signal is waited for before it is detached."""
        ...

    def timeout_ms(self, execution: ToolExecution, definition: ToolDefinition) -> float | None:
        """The deadline of this call's body in milliseconds, or ``None`` for none."""
        ...

    def expired(
        self, execution: ToolExecution, timeout_ms: float, *, detached: bool, on_thread: bool
    ) -> ToolExecutionResult:
        """The result of a call whose deadline ran out (``detached``: its body is still running)."""
        ...

    def ended_late(self, execution: ToolExecution, outcome: str) -> None:
        """A detached body has ended at last (``outcome`` says how)."""
        ...


class Pipeline:
    """The staged pipeline of one runtime (see the module docstring)."""

    def __init__(self, registry: ToolRegistry, events: EventBus) -> None:
        self._registry = registry
        self._events = events
        self.approval: ApprovalService | None = None
        self.deadline: CallDeadline | None = None
        """The deadline of every call's body (see :class:`CallDeadline`); ``None``: no deadline."""
        self._detached: set[asyncio.Task[Any]] = set()
        self._deadlines: _DeadlineClock | None = None
        self.observer: CallObserver | None = None
        """The tracer told of every call's stages (:mod:`toolrt._tracing`); ``None``: no tracing."""

    def _clock(self) -> _DeadlineClock:
        clock = self._deadlines
        loop = asyncio.get_running_loop()
        if clock is None or clock.loop is not loop:
            clock = self._deadlines = _DeadlineClock(loop)
        return clock

    @property
    def drain_s(self) -> float:
        """How long a cancelled scheduler waits for its started bodies' cleanup: the deadline's grace
        (a body that cleans up within the grace it would get after its deadline is always drained)."""
        deadline = self.deadline
        return (DEFAULT_GRACE_MS if deadline is None else deadline.grace_ms) / 1000

    # --- stage 1: create -----------------------------------------------------------------------

    def create(self, call: ToolExecutionInput) -> tuple[ToolExecution, ToolExecutionResult | None]:
        """Make the call's :class:`ToolExecution`: snapshot the arguments, resolve the tool once.

        Returns the execution and, when the call cannot run at all (arguments that are not lossless
        JSON, a name collapsed under Code Mode), its early result, which goes straight to
        :meth:`finish`. Creating a call publishes nothing: a scheduler may create a call before it
        decides when to start it.
        """
        call_id, name, raw_arguments = call.call_id, call.name, call.arguments
        signal, agent, parent = call.signal, call.agent, call.parent
        if not isinstance(signal, AbortSignal):
            raise TypeError("ToolExecutionInput.signal must be an AbortSignal (every call is cancellable)")
        registry = self._registry
        visible = registry.view(agent).visible.get(name)
        collapsed = visible is not None and registry.collapses(name, agent, parent is not None)
        error: BaseException | None = None
        try:
            arguments = snapshot_json(raw_arguments, "arguments")
        except NotLosslessJsonError as lossy:
            arguments = None
            error = _lossy_arguments_error(lossy)
        except Exception as raised:
            arguments = None
            error = raised
        execution = ToolExecution(
            call_id,
            call_id if call.root_call_id is None else call.root_call_id,
            name,
            arguments,
            agent,
            parent,
            signal,
            None if visible is None else visible.finalize_content,
            None if collapsed else visible,
            registry.generation,
            call.wait_clock,
        )
        observer = self.observer
        if observer is not None:
            execution.trace = observer.start_call(execution)
        if error is not None:
            if collapsed and not signal.aborted:
                execution.take_finalizer()
            return execution, tool_error_result(error)
        if collapsed:
            if signal.aborted:
                return execution, _aborted(False)
            execution.take_finalizer()
            return execution, _failure(
                _collapsed_message(name), ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")
            )
        return execution, None

    def _listeners(self, execution: ToolExecution, event: str) -> Any:
        listeners = self._events.listeners.get(event)
        if not listeners:
            return ()
        chain = execution.scope_chain
        if chain is None:
            chain = execution.scope_chain = self._registry.chain(execution.agent)[1]
        return EventBus.admitted(listeners, chain)

    def reject(self, call: ToolExecutionInput, error: BaseException) -> ToolExecutionResult:
        """Fail a call before policy with ``error`` (e.g. arguments that are not valid JSON).

        The call is created like any other (its arguments snapshotted when possible), skips every
        policy and dispatch phase like invalid arguments do, and publishes exactly one result.
        """
        execution, early = self.create(call)
        return self.finish(execution, early if early is not None else tool_error_result(error))

    def execution_mode(self, execution: ToolExecution, arguments: Any) -> ExecutionMode:
        """``"parallel"`` only when the created call's tool classifies ``arguments`` as exactly ``True``.

        ``arguments`` are the caller's, as given (the classifier sees them raw, not snapshotted); an
        unknown or collapsed name, a tool without a classifier and a classifier that raises are
        ``"exclusive"``. Uses the definition resolved by :meth:`create`.
        """
        definition = self._definition(execution)
        if definition is None or definition.is_concurrency_safe is None:
            return "exclusive"
        try:
            return "parallel" if definition.is_concurrency_safe(arguments) is True else "exclusive"
        except Exception:
            return "exclusive"

    def _definition(self, execution: ToolExecution) -> ToolDefinition | None:
        """The call's definition as resolved by :meth:`create`; resolved again only when the registry
        changed since (a tool disposed mid-call is then unknown, as it would be to a new call)."""
        registry = self._registry
        generation = registry.generation
        if execution.resolved_at != generation:
            execution.rebind(
                registry.resolve_execution(execution.name, execution.agent, execution.parent is not None),
                generation,
            )
        return execution.definition

    def admitted_listeners(self, event: str, agent: Hashable | None) -> tuple[Any, ...]:
        """The listeners of ``event`` that apply to ``agent``'s calls: the global ones and those
        registered on a scope of its chain, in registration order (for waterfalls run outside the
        stages, like Code Mode's ``tools/code-dispatch-log``)."""
        listeners = self._events.listeners.get(event)
        if not listeners:
            return ()
        return EventBus.admitted(listeners, self._registry.chain(agent)[1])

    # --- stage 2: prepare ----------------------------------------------------------------------

    async def prepare(self, execution: ToolExecution) -> Prepared:
        """Run policy for a created call: ``tools/pre-execute`` (allow / deny / ask → approval), then
        the guards. Never raises for a model or policy mistake (task cancellation propagates).

        Skip it when :meth:`needs_prepare` says there is nothing to run: the outcome would be
        ``("dispatch", None)``.
        """
        caller = execution.caller_signal
        if caller.aborted:
            return "final-result", _aborted(False)
        try:
            listeners = self._listeners(execution, "tools/pre-execute")
            decision: Any = _ALLOW
            if listeners:
                decision = await EventBus.waterfall(listeners, (execution,), _allow)
                if execution.trace is not None:
                    execution.trace.event("toolrt.pre_execute", _decision_attributes(decision))
            approval_cancelled = False
            if type(decision) is Ask:
                decision, approval_cancelled = await self._ask(execution, decision)
            elif not isinstance(decision, Allow | Deny | Ask):
                raise TypeError(
                    "tools/pre-execute must return a decision (Allow, Deny or Ask; return next() to "
                    f"delegate), got {decision!r}"
                )
            if approval_cancelled and _fired(caller):
                return "post-result", _aborted(False)
            reason = decision.reason if type(decision) is Deny else self._registry.guard_reason(execution)
            if reason is not None:
                if execution.trace is not None and type(decision) is not Deny:
                    execution.trace.event("toolrt.guard.denied", {"toolrt.reason": str(reason)})
                return "post-result", _failure(str(reason))
            if _fired(caller):
                return "post-result", _aborted(False)
            return "dispatch", None
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            return "final-result", tool_error_result(error)

    async def _ask(self, execution: ToolExecution, ask: Ask) -> tuple[PreToolDecision, bool]:
        name = execution.name
        approval = self.approval
        if approval is None:
            return Deny(
                ask.reason
                if ask.reason is not None
                else f'tool "{name}" requires approval (not yet supported)'
            ), False
        if execution.agent is None:
            return Deny(
                f'tool "{name}" requires approval, but the call has no agent to route it through'
            ), False
        from toolrt._approval_request import ApprovalRequest

        request = ApprovalRequest(
            agent=execution.agent,
            tool_name=name,
            call_id=execution.call_id,
            reason=ask.reason,
            signal=execution.signal,
            arguments=execution.arguments,
            execution=execution,
        )
        # Human time is not program time: the program this call is made for waits for the answer,
        # so its clock stops while a person decides (a 30 s program budget is not a 30 s human one).
        clock = execution.wait_clock
        if clock is not None:
            clock.pause()
        trace = execution.trace
        if trace is not None:
            trace.event(
                "toolrt.approval.asked", {"toolrt.reason": "" if ask.reason is None else str(ask.reason)}
            )
            asked_at = asyncio.get_running_loop().time()
        try:
            # Typed as object: the service is third-party code and may answer outside the protocol.
            outcome: object = await approval.request(request)
        finally:
            if clock is not None:
                clock.resume()
        if trace is not None:
            waited_ms = (asyncio.get_running_loop().time() - asked_at) * 1000
            trace.event(
                "toolrt.approval.decided",
                {"toolrt.approval.outcome": str(outcome), "toolrt.approval.wait_ms": waited_ms},
            )
        if outcome == "allowed-once":
            return _ALLOW, False
        if outcome == "rejected":
            return Deny(f'the user rejected tool "{name}"'), False
        if outcome == "cancelled":
            return Deny(f'approval for tool "{name}" was cancelled'), True
        if outcome == "unavailable":
            return Deny(f'tool "{name}" requires approval, but no approval channel is available'), False
        if outcome == "expired":
            return Deny(
                f'approval for tool "{name}" expired: nobody answered before the approval wait '
                "deadline, so the call was not run"
            ), False
        try:
            shown = js_json_dumps(snapshot_json(outcome))
        except Exception:
            shown = repr(outcome)
        raise TypeError(f"unreachable variant in ApprovalOutcome: {shown}")

    # --- stage 3: dispatch ---------------------------------------------------------------------

    async def dispatch(self, execution: ToolExecution) -> DispatchOutcome:
        """Run ``tools/execute`` wrappers around the body and normalise what comes back.

        The only stage whose calls may overlap. Never raises for a model or tool mistake (task
        cancellation propagates); pass the outcome to :meth:`commit`.
        """
        trace = execution.trace
        entered = None if trace is None else trace.enter()  # nested calls see the span
        try:
            listeners = (
                self._listeners(execution, "tools/execute")
                if self._events.listeners.get("tools/execute")
                else ()
            )
            if listeners:
                execution.open_signal()
                try:
                    returned = await EventBus.waterfall(
                        listeners, (execution,), lambda: self._dispatch_body(execution)
                    )
                finally:
                    execution.close_signal()
                result = self._normalize(execution, returned)
            else:
                result = await self._dispatch_body(execution)
            deferred = execution.deferred_contexts
            if deferred:
                contexts = _result_field([*deferred, *result.additional_contexts])
                result = _rebuild(result, result.content, result.meta, contexts)
            if not result.is_error and execution.caller_signal.aborted:
                result = _aborted(execution.body_invoked, result.additional_contexts)
            return "post-result", result
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            return "final-result", tool_error_result(error)
        finally:
            if trace is not None:
                trace.exit(entered)

    async def _dispatch_body(self, execution: ToolExecution) -> ToolExecutionResult:
        wrapper_signal = execution.signal
        caller = execution.caller_signal
        if wrapper_signal is caller:
            fused, detach = wrapper_signal, _noop
        else:
            fused, detach = fuse_signals(caller, wrapper_signal)
        if fused.aborted:
            detach()
            result: ToolExecutionResult = _aborted(False)
            execution.canonical_result = result
            return result
        definition = self._definition(execution)
        deadline = self.deadline
        timeout_ms = (
            None if deadline is None or definition is None else deadline.timeout_ms(execution, definition)
        )
        # Wrappers may swap the signal around next(); the body itself never may. A timed body's
        # signal of its own is made only if it is needed (see the module docstring).
        if timeout_ms is None:
            writable = execution.lend_signal(fused)
        else:
            writable = execution.lend_body_signal(fused)
        timer: _Timer | None = None
        kept = False
        try:
            try:
                if definition is None:
                    raise ToolNotFoundError(_unknown_tool_message(execution.name))
                if timeout_ms is None:
                    value = await self._body(definition, execution)
                else:
                    awaitable = self._body(definition, execution)
                    steps = awaitable if type(awaitable) is _COROUTINE else awaitable.__await__()
                    try:
                        yielded = steps.send(None)
                    except StopIteration as stop:
                        value = stop.value  # done without awaiting: no timer was ever needed
                    else:
                        assert deadline is not None
                        timer = _Timer(self._clock(), execution, timeout_ms, deadline.grace_ms)
                        try:
                            value = await _drive(steps, yielded, timer)
                        except _Detach as detached:
                            kept = True  # the body runs on, reading its own (fired) signal
                            return self._detach(execution, deadline, timer, steps, detached.waiting_on)
                if timer is not None and timer.expired:
                    assert deadline is not None and timeout_ms is not None
                    result = deadline.expired(execution, timeout_ms, detached=False, on_thread=False)
                else:
                    result = self._success(execution, definition, value, ())
                    if _fired(fused):
                        result = _aborted(True)
            except asyncio.CancelledError:
                if timeout_ms is not None:
                    # A worker thread may still run the body and re-read its signal: leave it fired.
                    execution.body_signal().abort("the task awaiting this tool call was cancelled")
                    kept = True
                raise
            except BaseException as error:
                if timer is not None and timer.expired:
                    # The deadline wins over whatever the body did once it fired (a cooperative
                    # body's own abort error included): the model reads why the call stopped.
                    assert deadline is not None and timeout_ms is not None
                    result = deadline.expired(execution, timeout_ms, detached=False, on_thread=False)
                else:
                    result = tool_error_result(error)
            execution.canonical_result = result
            return result
        finally:
            if timer is not None:
                timer.stop()
            if timeout_ms is None:
                # Restore the wrapper's signal unless something still owns the body's one: a worker
                # thread left running by task cancellation, or a call already published.
                execution.return_signal(fused, wrapper_signal, writable)
            elif kept:
                execution.keep_body_signal()
            else:
                execution.return_body_signal(wrapper_signal, writable)
            detach()

    def _body(self, definition: ToolDefinition, execution: ToolExecution) -> Any:
        """Validate the arguments and start the body: the awaitable of its value."""
        execution.body_invoked = True
        if definition.validate_arguments is not None:
            violations = definition.validate_arguments(execution.arguments)
            if violations:
                raise ToolArgsError(violations)
        if definition.body_is_async:
            return definition.execute(execution.arguments, execution)
        return self._run_sync_body(definition, execution)

    def _detach(
        self, execution: ToolExecution, deadline: CallDeadline, timer: _Timer, steps: Any, waiting_on: Any
    ) -> ToolExecutionResult:
        """Leave a body that outlived its grace running in a task of its own, tracked and reported
        when it ends (never silently abandoned). Returns the call's result, or re-raises the awaiting
        task's cancellation when that is what the body outlived."""
        task = asyncio.get_running_loop().create_task(_resume(steps, waiting_on))
        self._detached.add(task)

        def ended(task: asyncio.Task[Any]) -> None:
            self._detached.discard(task)
            if task.cancelled():
                outcome = "was cancelled"
            else:
                task.exception()  # retrieved: its failure is reported here, not as "never retrieved"
                outcome = "finally returned"
            deadline.ended_late(execution, outcome)

        task.add_done_callback(ended)
        cancelled = timer.cancelled
        if cancelled is not None:
            from toolrt._events import logger

            logger.warning(
                'tool "%s" (%s): the task awaiting it was cancelled and its body did not end within '
                "the grace of %sms; left running, tracked until it ends",
                execution.name,
                execution.call_id,
                js_number(deadline.grace_ms),
            )
            raise cancelled
        definition = execution.definition
        on_thread = definition is not None and not definition.body_is_async and not definition.run_inline
        result = deadline.expired(execution, timer.timeout_ms, detached=True, on_thread=on_thread)
        execution.canonical_result = result
        return result

    async def _run_sync_body(self, definition: ToolDefinition, execution: ToolExecution) -> Any:
        if definition.run_inline:
            outcome = definition.execute(execution.arguments, execution)
        else:
            outcome = await self._run_on_thread(definition, execution)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome

    async def _run_on_thread(self, definition: ToolDefinition, execution: ToolExecution) -> Any:
        # A worker thread cannot be interrupted. If the awaiting task is cancelled, the body's signal
        # fires so a cooperative body can stop; one that ignores it is reported, never forgotten.
        if execution.lends_body_signal:
            # A timed body already has a signal of its own (made if it reads it): fire that one.
            body_signal, detach, abort_thread = None, _noop, execution.body_signal().abort
        else:
            thread_abort = AbortController()
            entry_signal = execution.signal
            body_signal, detach = fuse_signals(entry_signal, thread_abort.signal)
            writable = execution.lend_signal(body_signal)
            abort_thread = thread_abort.abort
        finished = [False]
        future = run_in_worker(definition.execute, execution.arguments, execution, done=finished)
        try:
            returned, raised = await future
        except asyncio.CancelledError:
            abort_thread("the task awaiting this tool call was cancelled")
            if not finished[0]:
                from toolrt._events import logger

                logger.warning(
                    'tool "%s" (%s): task cancelled while its synchronous body runs on a worker thread; '
                    "the thread was signalled and keeps running until the body returns",
                    execution.name,
                    execution.call_id,
                )
            # The body may still re-read ctx.signal: leave it the aborted one.
            raise
        detach()
        if body_signal is not None:
            execution.return_signal(body_signal, entry_signal, writable)
        if raised is not None:
            # Re-raised here, in this frame, so any BaseException (GeneratorExit, SystemExit...) is
            # an ordinary failed call instead of something asyncio throws into the task.
            raise raised
        return returned

    def _success(
        self, execution: ToolExecution, definition: ToolDefinition, value: Any, contexts: Any
    ) -> ToolSuccess:
        """Snapshot, validate, freeze and render a canonical value (S1)."""
        name = execution.name
        try:
            snapshot = snapshot_json(value)
        except NotLosslessJsonError as error:
            # The path and the offending type, so the model (or author) can find and fix the part.
            raise ToolOutputError(name, f"{error.path}: {error.reason}") from None
        except Exception as error:
            raise ToolOutputError(name, f"value snapshot failed: {message_of(error)}") from None
        validator = definition.compiled_output
        if validator is None:
            from toolrt.schema import compile_validator

            validator = compile_validator(definition.output.schema)
            object.__setattr__(definition, "compiled_output", validator)
        violations = validator.validate(snapshot, "value")
        if violations:
            raise ToolOutputError(name, "; ".join(violations), violations)
        output = definition.output
        content = _project(name, "render", output.render, execution.arguments, snapshot)
        content = _as_content(name, content)
        meta = None
        if execution.parent is None and output.presentation_meta is not None:
            # The label is model-facing text: upstream's name for the projector, byte for byte.
            meta = _project(name, "presentationMeta", output.presentation_meta, execution.arguments, snapshot)
        return make_success(snapshot, content, meta, contexts, execution.concludes_turn)

    def _normalize(self, execution: ToolExecution, returned: Any) -> ToolExecutionResult:
        """What a ``tools/execute`` chain returned, re-bound to this call's output declaration."""
        if returned is execution.canonical_result and returned is not None:
            return returned  # type: ignore[no-any-return]
        if isinstance(returned, ToolFailure):
            error = returned.error
            if not isinstance(error, ToolError):
                raise TypeError("a tools/execute wrapper returned a ToolFailure without a ToolError")
            return make_failure(
                ToolError(str(error.message), error.info),
                _as_content(execution.name, _result_field(returned.content)),
                _frozen(returned.meta),
                _frozen(returned.additional_contexts),
            )
        if isinstance(returned, ToolSuccess):
            # A wrapper-authored (or cached) success is revalidated under the active declaration;
            # its own content is ignored and re-rendered from the value.
            definition = self._definition(execution)
            if definition is None:
                raise ToolNotFoundError(_unknown_tool_message(execution.name))
            return self._success(execution, definition, returned.value, _frozen(returned.additional_contexts))
        raise TypeError(
            "a tools/execute wrapper must return a ToolSuccess or ToolFailure (return await next()), "
            f"got {returned!r}"
        )

    # --- stage 4: finalize (post-execute) ------------------------------------------------------

    async def finalize(self, execution: ToolExecution, result: ToolExecutionResult) -> ToolExecutionResult:
        """Run ``tools/post-execute``, then :meth:`finish`."""
        try:
            listeners = self._listeners(execution, "tools/post-execute")
            if listeners:
                decision = await EventBus.waterfall(listeners, (execution, result), _accept)
                result = self._apply_post(execution, result, decision)
            if not result.is_error and execution.caller_signal.aborted:
                result = _aborted(execution.body_invoked, result.additional_contexts)
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            result = tool_error_result(error)
        return self.finish(execution, result)

    def _apply_post(
        self, execution: ToolExecution, result: ToolExecutionResult, decision: Any
    ) -> ToolExecutionResult:
        if isinstance(decision, Block):
            feedback = _as_content(execution.name, _result_field(decision.feedback))
            return make_failure(
                ToolError(_feedback_message(feedback)), feedback, None, _frozen(decision.additional_contexts)
            )
        if not isinstance(decision, Accept):
            raise TypeError(
                "tools/post-execute must return Accept or Block (return next() to delegate), "
                f"got {decision!r}"
            )
        replaces_content = decision.content is not UNSET
        replaces_value = decision.value is not UNSET
        contexts = _join_contexts(result.additional_contexts, _frozen(decision.additional_contexts))
        if replaces_content and replaces_value:
            raise TypeError("tools/post-execute accept decision cannot replace both value and content")
        if replaces_value:
            if result.is_error:
                raise TypeError("tools/post-execute cannot replace the value of a failed result")
            definition = self._definition(execution)
            if definition is None:
                raise ToolNotFoundError(_unknown_tool_message(execution.name))
            return self._success(execution, definition, decision.value, contexts)
        if replaces_content:
            content = _as_content(execution.name, _result_field(decision.content))
            return _rebuild(result, content, result.meta, contexts)
        if contexts is result.additional_contexts:
            return result
        return _rebuild(result, result.content, result.meta, contexts)

    # --- stage 5: finish -----------------------------------------------------------------------

    def finish(self, execution: ToolExecution, result: ToolExecutionResult) -> ToolExecutionResult:
        """Materialise, apply ``finalize_content`` once, freeze, and publish ``tools/result``."""
        result = _materialize(result)
        finalizer = execution.take_finalizer()
        if finalizer is not None:
            try:
                replacement = finalizer(execution, result)
                if replacement is not None:
                    content = _as_content(execution.name, _result_field(replacement))
                    result = _rebuild(result, content, result.meta, result.additional_contexts)
            except asyncio.CancelledError:
                raise
            except BaseException as error:
                result = _materialize(tool_error_result(error))
        execution.freeze()
        listeners = (
            self._listeners(execution, "tools/result") if self._events.listeners.get("tools/result") else ()
        )
        if listeners:
            name, call_id = execution.name, execution.call_id
            self._events.emit(
                listeners,
                (execution, result),
                lambda message: f'tool "{name}" ({call_id}): tools/result observer failed: {message}',
            )
        if execution.trace is not None:
            execution.trace.end(execution, result)
        return result

    # --- shortcuts shared by execute() and the ordered executor ---------------------------------

    def finish_aborted(self, execution: ToolExecution) -> ToolExecutionResult:
        """Finish a call whose task was cancelled mid-flight with the matching aborted result
        (``TOOL_ABORTED`` once the body was invoked, ``TOOL_ABORTED_BEFORE_DISPATCH`` before)."""
        return self.finish(execution, _aborted(execution.body_invoked))

    def needs_prepare(self, execution: ToolExecution) -> bool:
        """Whether ``prepare`` has work: pre-execute listeners, guards, or an aborted caller.

        Stages with nothing to do are skipped outright: the common call (no policy listeners, no
        guards) costs a few microseconds, and every feature costs only when it is used.
        """
        return bool(
            self._events.listeners.get("tools/pre-execute")
            or self._registry.guard_count
            or execution.signal.aborted
        )

    def commit(
        self, execution: ToolExecution, kind: str, result: ToolExecutionResult
    ) -> ToolExecutionResult | Coroutine[Any, Any, ToolExecutionResult]:
        """Finish a dispatched or prepared call: ``finalize`` (a coroutine) when post-execute has
        listeners and the result is a ``post-result``, else the finished result directly.

        Returning the result itself when there is nothing to await spares the common call a
        coroutine: check ``isinstance(committed, ToolSuccess | ToolFailure)`` before awaiting.
        """
        if kind == "post-result":
            if self._events.listeners.get("tools/post-execute"):
                return self.finalize(execution, result)
            if not result.is_error and execution.caller_signal.aborted:
                result = _aborted(execution.body_invoked, result.additional_contexts)
        return self.finish(execution, result)

    # --- the whole pipeline --------------------------------------------------------------------

    async def execute(self, call: ToolExecutionInput) -> ToolExecutionResult:
        """Run one call through every stage. Returns a result for every model mistake."""
        execution, early = self.create(call)
        if early is not None:
            return self.finish(execution, early)
        try:
            result: ToolExecutionResult | None = None
            kind: str = "dispatch"
            if self.needs_prepare(execution):
                kind, result = await self.prepare(execution)
            if kind == "dispatch":
                kind, result = await self.dispatch(execution)
            assert result is not None
            committed = self.commit(execution, kind, result)
            if isinstance(committed, ToolSuccess | ToolFailure):
                return committed
            return await committed
        except asyncio.CancelledError:
            if not execution.frozen:
                # Observers hear that the call ended; the task's cancellation still propagates.
                self.finish_aborted(execution)
            raise


_COROUTINE = types.CoroutineType


def _noop() -> None:
    return None


def _fired(signal: AbortSignal) -> bool:
    """Re-read ``signal.aborted`` after an ``await`` (a plain read would be narrowed by type checkers)."""
    return signal.aborted


async def _allow() -> Allow:
    return _ALLOW


def _decision_attributes(decision: Any) -> dict[str, str]:
    """A pre-execute decision as span event attributes (what a tracer records of it)."""
    kind = {Allow: "allow", Deny: "deny", Ask: "ask"}.get(type(decision), type(decision).__name__)
    reason = getattr(decision, "reason", None)
    return {"toolrt.decision": kind, "toolrt.reason": "" if reason is None else str(reason)}


async def _accept() -> Accept:
    return _ACCEPT


class _Detach(Exception):
    """The grace (or the cancelled task's drain) ran out while the body still waits on ``waiting_on``."""

    def __init__(self, waiting_on: Any) -> None:
        super().__init__()
        self.waiting_on = waiting_on


class _DeadlineReason:
    """The reason a deadline fires the body's signal with (never mistaken for a caller's abort)."""

    __slots__ = ("timeout_ms",)

    def __init__(self, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms

    def __repr__(self) -> str:
        return f"TOOL_TIMEOUT after {js_number(self.timeout_ms)}ms"


class _Timer:
    """The timers of one timed body that awaits: the deadline, then the grace (or, once the awaiting
    task is cancelled, the drain), and the future the awaiting task sleeps on meanwhile."""

    __slots__ = (
        "cancelled",
        "clock",
        "due",
        "execution",
        "expired",
        "grace",
        "grace_s",
        "out_of_time",
        "timeout_ms",
        "wake",
    )

    def __init__(
        self, clock: _DeadlineClock, execution: ToolExecution, timeout_ms: float, grace_ms: float
    ) -> None:
        self.clock = clock
        self.execution = execution
        self.timeout_ms = timeout_ms
        self.grace_s = grace_ms / 1000
        self.expired = False  # the deadline fired first (a caller abort before it keeps ABORTED)
        self.out_of_time = False  # the grace or the drain ran out
        self.cancelled: BaseException | None = None  # the awaiting task's cancellation, if any
        self.wake: asyncio.Future[None] | None = None
        self.grace: asyncio.TimerHandle | None = None
        self.due = clock.loop.time() + timeout_ms / 1000
        clock.add(self)

    def on_deadline(self) -> None:
        """The deadline has come: fire the body's signal and start the grace."""
        body = self.execution.body_signal()
        self.expired = not body.base.aborted
        if self.expired and self.execution.trace is not None:
            self.execution.trace.event("toolrt.timeout", {"toolrt.timeout_ms": self.timeout_ms})
        body.abort(_DeadlineReason(self.timeout_ms))
        self.start_grace()

    def start_grace(self) -> None:
        """Give the body the grace from now (once: a deadline and a cancellation share it)."""
        if self.grace is None:
            self.grace = self.clock.loop.call_later(self.grace_s, self._on_grace)

    def _on_grace(self) -> None:
        self.out_of_time = True
        _wake(self.wake)

    def stop(self) -> None:
        self.clock.timers.discard(self)
        if self.grace is not None:
            self.grace.cancel()


class _DeadlineClock:
    """The deadlines of one pipeline's timed bodies on one loop, behind a single loop timer.

    Why not one ``call_later`` per body: a timer handle, its heap entry and its cancellation cost
    more than the rest of a trivial awaiting call, and the loop keeps every cancelled handle in its
    heap until it is cleaned out. Here a body that awaits is one set entry; the one loop timer is
    set for the earliest deadline, and when it fires it fires the due bodies and is set again for
    the next. With equal deadlines (the runtime default) a new body never moves it.
    """

    __slots__ = ("armed_at", "handle", "loop", "timers")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.timers: set[_Timer] = set()
        self.handle: asyncio.TimerHandle | None = None
        self.armed_at = float("inf")

    def add(self, timer: _Timer) -> None:
        self.timers.add(timer)
        if timer.due < self.armed_at:
            self._arm(timer.due)

    def _arm(self, when: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.armed_at = when
        self.handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self.handle = None
        self.armed_at = float("inf")
        # The loop runs a timer up to its clock resolution early: count those as due too.
        now = self.loop.time() + _CLOCK_SLACK_S
        due = [timer for timer in self.timers if timer.due <= now]
        for timer in due:
            self.timers.discard(timer)
        if self.timers:
            self._arm(min(timer.due for timer in self.timers))
        for timer in due:
            timer.on_deadline()


_CLOCK_SLACK_S = 0.001


class _Wake(asyncio.Future[None]):
    """What the awaiting task sleeps on while a timed body awaits: settled from the body's future's
    done-callback (or the end of the grace), it resumes the task in that same loop iteration.

    Why: a plain future schedules its waiters one loop iteration after it is settled, so waiting on
    the body's future through one would cost every ``await`` of a timed body an extra loop turn (a
    few microseconds each). Settling runs outside any task (a done-callback or a timer), where
    stepping the awaiting task is what the loop itself would do next; a cancellation, which may come
    from inside another task, is scheduled as usual.
    """

    _waiters: list[tuple[Callable[[Any], object], contextvars.Context | None]] | None = None

    def add_done_callback(
        self, fn: Callable[[Any], object], *, context: contextvars.Context | None = None
    ) -> None:
        if self.done():
            super().add_done_callback(fn, context=context)
            return
        if self._waiters is None:
            self._waiters = []
        self._waiters.append((fn, context))

    def remove_done_callback(self, fn: Callable[[Any], object]) -> int:
        waiters = self._waiters or []
        kept = [item for item in waiters if item[0] != fn]
        self._waiters = kept
        return len(waiters) - len(kept) + super().remove_done_callback(fn)

    def set_result(self, result: None, /) -> None:
        super().set_result(result)
        waiters, self._waiters = self._waiters, None
        for fn, context in waiters or ():
            try:
                if context is None:
                    fn(self)
                else:
                    context.run(fn, self)
            except Exception as error:  # pragma: no cover - a task's wakeup does not raise
                self.get_loop().call_exception_handler({"message": "wake failed", "exception": error})

    def cancel(self, msg: Any | None = None) -> bool:
        waiters, self._waiters = self._waiters, None
        cancelled = super().cancel(msg)
        for fn, context in waiters or ():
            if cancelled:
                self.get_loop().call_soon(fn, self, context=context)
            else:
                super().add_done_callback(fn, context=context)
        return cancelled


def _wake(waiter: asyncio.Future[None] | None, *_: object) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


@types.coroutine
def _drive(steps: Any, yielded: Any, timer: _Timer) -> Generator[Any, Any, Any]:
    """Run the rest of a body that has started awaiting, in the awaiting task, as ``await`` would,
    except that the task sleeps on a future of ours that the body's future or the end of the grace
    wakes. Raises :class:`_Detach` when the grace runs out first.

    Cancelling the awaiting task reaches the body as with a plain ``await`` (what it awaits is
    cancelled), then its cleanup gets the grace at most. A second cancellation means the canceller
    has stopped waiting (a scheduler finishing its calls): the body is left running at once.
    """
    loop = asyncio.get_running_loop()
    while True:
        throw: BaseException | None = None
        if yielded is None:  # a bare yield (asyncio.sleep(0)): the task just runs again
            if timer.out_of_time:
                raise _Detach(None)
            try:
                yield None
            except asyncio.CancelledError as error:
                if timer.cancelled is not None:
                    raise _Detach(None) from None
                timer.cancelled = error
                timer.start_grace()
                throw = error
        elif getattr(yielded, "_asyncio_future_blocking", None) is None:
            throw = RuntimeError(f"Task got bad yield: {yielded!r}")
        else:
            yielded._asyncio_future_blocking = False
            if not yielded.done():
                if timer.out_of_time:
                    raise _Detach(yielded)
                wake = timer.wake = _Wake(loop=loop)
                callback = functools.partial(_wake, wake)
                yielded.add_done_callback(callback)
                again = False
                try:
                    wake._asyncio_future_blocking = True  # what a future's __await__ sets
                    yield wake
                except asyncio.CancelledError as error:
                    again = timer.cancelled is not None
                    if not again:
                        timer.cancelled = error
                        timer.start_grace()
                        if not yielded.cancel():
                            throw = error
                finally:
                    yielded.remove_done_callback(callback)
                    timer.wake = None
                if again or (throw is None and not yielded.done() and timer.out_of_time):
                    raise _Detach(yielded)
                if throw is None and not yielded.done():
                    yielded._asyncio_future_blocking = True
                    continue  # woken by a cancellation whose future is still ending: wait on
        try:
            yielded = steps.send(None) if throw is None else steps.throw(throw)
        except StopIteration as stop:
            return stop.value


@types.coroutine
def _resume(steps: Any, yielded: Any) -> Generator[Any, Any, Any]:
    """Go on with a detached body exactly as a task awaiting it would (it waits on ``yielded``)."""
    if yielded is not None:
        yielded._asyncio_future_blocking = True
    while True:
        try:
            sent = yield yielded
        except BaseException as error:
            try:
                yielded = steps.throw(error)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                yielded = steps.send(sent)
            except StopIteration as stop:
                return stop.value
