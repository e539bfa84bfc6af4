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
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Coroutine, Hashable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from toolrt._abort import AbortController, AbortSignal, fuse_signals
from toolrt._decisions import UNSET, Accept, Allow, Ask, Block, Deny, ExecutionMode, PreToolDecision
from toolrt._errors import ToolArgsError, ToolNotFoundError, ToolOutputError
from toolrt._events import EventBus, message_of
from toolrt._execution import ToolExecution, ToolExecutionInput
from toolrt._json import NotLosslessJsonError, js_json_dumps, snapshot_json
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
from toolrt._results import materialize as _materialize
from toolrt._results import project_output as _project
from toolrt._results import rebuild_result as _rebuild
from toolrt._results import result_field as _result_field
from toolrt._threads import run_in_worker

if TYPE_CHECKING:
    from toolrt._approval_request import ApprovalService
    from toolrt._registry import ToolRegistry
    from toolrt._tool_definition import ToolDefinition

__all__ = ["DispatchOutcome", "Pipeline", "Prepared", "tool_error_result"]


_ALLOW = Allow()
_ACCEPT = Accept()


Prepared: TypeAlias = tuple[Literal["dispatch", "post-result", "final-result"], ToolExecutionResult | None]
"""What ``prepare`` returns: ``("dispatch", None)``, or an early result and where it goes next
(``post-result`` passes post-execute, e.g. a denial; ``final-result`` skips it)."""

DispatchOutcome: TypeAlias = tuple[Literal["post-result", "final-result"], ToolExecutionResult]
"""What ``dispatch`` returns: the result, and whether it passes post-execute (``post-result``) or is
final (``final-result``: a wrapper or the pipeline itself failed)."""


class Pipeline:
    """The staged pipeline of one runtime (see the module docstring)."""

    def __init__(self, registry: ToolRegistry, events: EventBus) -> None:
        self._registry = registry
        self._events = events
        self.approval: ApprovalService | None = None

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
            arguments = snapshot_json(raw_arguments)
        except NotLosslessJsonError:
            arguments = None
            error = TypeError("tool execution arguments must be losslessly JSON-serializable")
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
        )
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

        # Typed as object: the service is third-party code and may answer outside the protocol.
        outcome: object = await approval.request(
            ApprovalRequest(
                agent=execution.agent,
                tool_name=name,
                call_id=execution.call_id,
                reason=ask.reason,
                signal=execution.signal,
                arguments=execution.arguments,
                execution=execution,
            )
        )
        if outcome == "allowed-once":
            return _ALLOW, False
        if outcome == "rejected":
            return Deny(f'the user rejected tool "{name}"'), False
        if outcome == "cancelled":
            return Deny(f'approval for tool "{name}" was cancelled'), True
        if outcome == "unavailable":
            return Deny(f'tool "{name}" requires approval, but no approval channel is available'), False
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

    async def _dispatch_body(self, execution: ToolExecution) -> ToolExecutionResult:
        wrapper_signal = execution.signal
        caller = execution.caller_signal
        if wrapper_signal is caller:
            fused, detach = wrapper_signal, _noop
        else:
            fused, detach = fuse_signals(caller, wrapper_signal)
        # Wrappers may swap the signal around next(); the body itself never may.
        writable = execution.lend_signal(fused)
        try:
            if fused.aborted:
                result: ToolExecutionResult = _aborted(False)
                execution.canonical_result = result
                return result
            definition = self._definition(execution)
            try:
                if definition is None:
                    raise ToolNotFoundError(f'unknown tool "{execution.name}"')
                execution.body_invoked = True
                if definition.validate_arguments is not None:
                    violations = definition.validate_arguments(execution.arguments)
                    if violations:
                        raise ToolArgsError(violations)
                if definition.body_is_async:
                    value = await definition.execute(execution.arguments, execution)
                else:
                    value = await self._run_sync_body(definition, execution)
                result = self._success(execution, definition, value, ())
                if _fired(fused):
                    result = _aborted(True)
            except asyncio.CancelledError:
                raise
            except BaseException as error:
                result = tool_error_result(error)
            execution.canonical_result = result
            return result
        finally:
            # Restore the wrapper's signal unless something still owns the body's one: a worker thread
            # left running by task cancellation, or a call already published (a detached body).
            execution.return_signal(fused, wrapper_signal, writable)
            detach()

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
        thread_abort = AbortController()
        entry_signal = execution.signal
        body_signal, detach = fuse_signals(entry_signal, thread_abort.signal)
        writable = execution.lend_signal(body_signal)
        finished = [False]
        future = run_in_worker(definition.execute, execution.arguments, execution, done=finished)
        try:
            returned, raised = await future
        except asyncio.CancelledError:
            thread_abort.abort("the task awaiting this tool call was cancelled")
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
                raise ToolNotFoundError(f'unknown tool "{execution.name}"')
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
                raise ToolNotFoundError(f'unknown tool "{execution.name}"')
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


def _noop() -> None:
    return None


def _fired(signal: AbortSignal) -> bool:
    """Re-read ``signal.aborted`` after an ``await`` (a plain read would be narrowed by type checkers)."""
    return signal.aborted


async def _allow() -> Allow:
    return _ALLOW


async def _accept() -> Accept:
    return _ACCEPT
