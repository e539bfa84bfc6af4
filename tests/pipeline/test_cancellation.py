"""Cancellation: the §2.13 matrix (every row), body signals, and Python task cancellation.

Port of the cancellation titles of ``tools.spec.ts`` › ``ToolRuntime`` (§3.2 items 16, 17). Every
test uses a real :class:`toolrt.AbortController`, real asyncio tasks and — where a row matters for
synchronous bodies — a real worker thread. The row of the matrix each test pins is named in its
docstring.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from helpers import Approver, Gate, call_input, ctx_message, echo_tool, failure, settle, text
from toolrt import (
    AbortController,
    AbortSignal,
    Accept,
    Ask,
    Deny,
    ToolFailure,
    ToolrtError,
    ToolRuntime,
    ToolSuccess,
)
from toolrt.lowlevel import ExecutionToken, FrozenDict, FrozenList, ToolError, ToolErrorInfo

AGENT = "agent-1"
ABORTED = ("AbortError", "ABORTED")
ABORTED_BEFORE_DISPATCH = ("AbortError", "ABORTED_BEFORE_DISPATCH")


def aborted(**fields: Any) -> ToolFailure:
    return failure("tool call aborted", *ABORTED, **fields)


def aborted_before_dispatch(**fields: Any) -> ToolFailure:
    return failure("tool call aborted before dispatch", *ABORTED_BEFORE_DISPATCH, **fields)


class Phases:
    """Counts pipeline phases through real listeners."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.counts = {"pre": 0, "around": 0, "body": 0, "post": 0, "result": 0}
        self.results: list[tuple[Any, Any]] = []
        self.post_saw: list[Any] = []
        runtime.on("tools/pre-execute", self._pre)
        runtime.on("tools/execute", self._around)
        runtime.on("tools/post-execute", self._post)
        runtime.on("tools/result", self._result)

    async def _pre(self, execution: Any, next: Any) -> Any:
        self.counts["pre"] += 1
        return await next()

    async def _around(self, execution: Any, next: Any) -> Any:
        self.counts["around"] += 1
        return await next()

    async def _post(self, execution: Any, result: Any, next: Any) -> Any:
        self.counts["post"] += 1
        self.post_saw.append(result)
        return await next()

    def _result(self, execution: Any, result: Any) -> None:
        self.counts["result"] += 1
        self.results.append((execution, result))

    def body(self, value: Any = "ran") -> Any:
        async def execute(args: Any, ctx: Any) -> Any:
            self.counts["body"] += 1
            return value

        return execute


def counting_body(counter: list[int], value: Any = "ran") -> Any:
    async def execute(args: Any, ctx: Any) -> Any:
        counter[0] += 1
        return value

    return execute


def register_counted(runtime: ToolRuntime, name: str = "echo") -> list[int]:
    """Register ``name`` with a counting body; return its dispatch counter."""
    dispatched = [0]
    runtime.register(echo_tool(name=name, execute=counting_body(dispatched, "")))
    return dispatched


def parked(gate: Gate, then: Callable[[Any], Any] = lambda next: next()) -> Any:
    """A pre-execute, ``tools/execute`` or post-execute listener that parks on ``gate``, then returns
    ``then(next)`` (awaited when it is awaitable).
    """

    async def listener(execution: Any, *rest: Any) -> Any:
        await gate.wait()
        outcome = then(rest[-1])
        return await outcome if inspect.isawaitable(outcome) else outcome

    return listener


def raising(error: BaseException) -> Callable[[Any], Any]:
    """A ``then`` for :func:`parked` that raises ``error``."""

    def then(next: Any) -> Any:
        raise error

    return then


def start(runtime: ToolRuntime, *args: Any, **kwargs: Any) -> asyncio.Task[Any]:
    return asyncio.ensure_future(runtime.execute(call_input(*args, **kwargs)))


async def abort_at_gate(runtime: ToolRuntime, gate: Gate, *args: Any, reason: str, **kwargs: Any) -> Any:
    """Start a call under a fresh caller controller, abort it with ``reason`` once ``gate`` is
    reached, then open the gate and return the settled result.
    """
    controller = AbortController()
    pending = start(runtime, *args, signal=controller.signal, **kwargs)
    await gate.reached()
    controller.abort(reason)
    gate.open()
    return await settle(pending)


def recording_post(
    runtime: ToolRuntime, pick: Callable[[Any, Any], Any] = lambda execution, result: result
) -> list[Any]:
    """Register a pass-through ``tools/post-execute`` listener and return what it sees: the results,
    or ``pick(execution, result)`` of each call.
    """
    post_saw: list[Any] = []

    async def post(execution: Any, result: Any, next: Any) -> Any:
        post_saw.append(pick(execution, result))
        return await next()

    runtime.on("tools/post-execute", post)
    return post_saw


def replacing_signal(replacement: AbortSignal, gate: Gate | None = None) -> Any:
    """A ``tools/execute`` wrapper that hands the body ``replacement`` and restores the original."""

    async def around(execution: Any, next: Any) -> Any:
        upstream = execution.signal
        execution.signal = replacement
        try:
            if gate is not None:
                await gate.wait()
            return await next()
        finally:
            execution.signal = upstream

    return around


class CountingList(list):
    """A list that counts how often it is iterated (how often the snapshot reads it)."""

    reads = 0

    def __iter__(self) -> Any:
        CountingList.reads += 1
        return super().__iter__()


# --- before dispatch ------------------------------------------------------------------------------


async def test_a_pre_aborted_call_publishes_one_result_without_entering_any_phase(
    runtime: ToolRuntime,
) -> None:
    """materializes a pre-aborted call and publishes one result without entering pipeline phases

    Row "Before ``execute`` (pre-aborted) and args materialize". ``ToolExecutionInput`` is a frozen
    dataclass, so "read each input field once" becomes: the argument value is snapshotted once.
    """
    phases = Phases(runtime)
    runtime.register(echo_tool(name="domain-abort", execute=phases.body([])))
    CountingList.reads = 0
    caller_arguments = {"nested": {"value": 1}, "counted": CountingList([1])}
    caller_signal = AbortSignal.aborted_with("already cancelled")

    result = await runtime.execute(
        call_input("domain-abort", caller_arguments, caller_signal, call_id="pre-aborted")
    )

    assert CountingList.reads == 1
    assert phases.counts == {"pre": 0, "around": 0, "body": 0, "post": 0, "result": 1}
    assert result == aborted_before_dispatch()
    ((execution, observed),) = phases.results
    assert observed is result
    assert execution.frozen
    assert isinstance(execution.token, ExecutionToken)
    assert execution.signal is caller_signal
    assert execution.arguments == {"nested": {"value": 1}, "counted": [1]}
    assert execution.arguments is not caller_arguments
    assert isinstance(execution.arguments, FrozenDict)
    assert isinstance(execution.arguments["nested"], FrozenDict)
    assert isinstance(execution.arguments["counted"], FrozenList)
    caller_arguments["nested"]["value"] = 2  # the caller's object is detached and not frozen
    assert execution.arguments["nested"]["value"] == 1


async def test_argument_materialization_failure_wins_over_a_pre_aborted_signal(runtime: ToolRuntime) -> None:
    """lets argument materialization failure win over a pre-aborted signal

    Row "Pre-aborted but args invalid".
    """
    observed: list[Any] = []
    runtime.on("tools/result", lambda _execution, result: observed.append(result))

    result = await runtime.execute(
        call_input(
            "missing",
            {"invalid": lambda: None},
            AbortSignal.aborted_with("already cancelled"),
            call_id="invalid-pre-aborted",
        )
    )

    assert result == failure("tool execution arguments must be losslessly JSON-serializable")
    assert observed == [result]


async def test_cancellation_during_an_allowing_pre_execute_skips_dispatch(runtime: ToolRuntime) -> None:
    """skips dispatch when caller cancellation arrives while pre-execute awaits

    Row "During pre-execute, decision allow": ABORTED_BEFORE_DISPATCH, post-execute still runs.
    """
    dispatched = register_counted(runtime, "must-not-run")
    gate = Gate()
    runtime.on("tools/pre-execute", parked(gate))
    post_saw = recording_post(runtime)
    result = await abort_at_gate(
        runtime, gate, "must-not-run", call_id="cancelled-in-pre", reason="cancelled in policy"
    )
    assert result == aborted_before_dispatch()
    assert dispatched == [0]
    assert post_saw == [result]


async def test_a_pre_execute_denial_settling_after_cancellation_is_kept(runtime: ToolRuntime) -> None:
    """preserves a pre-execute denial that settles after cancellation

    Row "During pre-execute, decision deny".
    """
    dispatched = register_counted(runtime, "denied-after-cancel")
    gate = Gate()
    runtime.on("tools/pre-execute", parked(gate, lambda next: Deny("policy denied the call")))
    assert await abort_at_gate(
        runtime,
        gate,
        "denied-after-cancel",
        call_id="denied-after-cancel",
        reason="cancelled while policy decided",
    ) == ToolFailure(error=ToolError("policy denied the call"), content=text("Error: policy denied the call"))
    assert dispatched == [0]


async def test_a_pre_execute_failure_settling_after_cancellation_is_kept(runtime: ToolRuntime) -> None:
    """preserves an async pre-execute failure that settles after cancellation

    Row "During pre-execute, … listener throws".
    """
    dispatched = register_counted(runtime, "must-not-run")
    gate = Gate()
    runtime.on("tools/pre-execute", parked(gate, raising(RuntimeError("gate interrupted"))))
    assert await abort_at_gate(
        runtime, gate, "must-not-run", call_id="cancelled-pre-error", reason="cancelled in policy"
    ) == failure("gate interrupted")
    assert dispatched == [0]


@pytest.mark.parametrize("outcome", ["cancelled", "allowed-once"])
async def test_cancellation_during_approval_aborts_before_dispatch(outcome: str) -> None:
    """Rows "During approval, approval ``cancelled``" (E8) and "… ``allowed-once``" (E10): both
    become ABORTED_BEFORE_DISPATCH, a post-result (post-execute runs), and the body never runs.
    """
    gate = Gate()
    runtime = ToolRuntime(approval=Approver(outcome, gate))
    dispatched = register_counted(runtime)
    runtime.on("tools/pre-execute", lambda execution, next: Ask("please"))
    post_saw = recording_post(runtime)
    result = await abort_at_gate(runtime, gate, "echo", agent=AGENT, reason="caller cancelled approval")
    assert result == aborted_before_dispatch()
    assert post_saw == [result]
    assert dispatched == [0]
    runtime.close()


async def test_a_rejection_settling_after_cancellation_stays_a_denial() -> None:
    """Row "During pre-execute, decision deny" via approval: a ``rejected`` answer that settles after
    the caller aborted stays the (more specific) denial (E10 "a deny that settles after
    cancellation stays a deny").
    """
    gate = Gate()
    runtime = ToolRuntime(approval=Approver("rejected", gate))
    runtime.register(echo_tool())
    runtime.on("tools/pre-execute", lambda execution, next: Ask())
    assert await abort_at_gate(runtime, gate, "echo", agent=AGENT, reason="too late") == failure(
        'the user rejected tool "echo"'
    )
    runtime.close()


async def test_cancellation_during_a_wrapper_before_next_skips_the_body(runtime: ToolRuntime) -> None:
    """rechecks caller cancellation after an async around-dispatch wrapper delegates

    Row "During an around wrapper before ``next()``".
    """
    dispatched = register_counted(runtime, "must-not-run")
    gate = Gate()
    replacement = AbortController()
    runtime.on("tools/execute", replacing_signal(replacement.signal, gate))
    assert (
        await abort_at_gate(
            runtime, gate, "must-not-run", call_id="cancelled-in-around", reason="cancelled in wrapper"
        )
        == aborted_before_dispatch()
    )
    assert dispatched == [0]
    assert not replacement.signal.aborted


async def test_an_already_aborted_replacement_signal_skips_the_body(runtime: ToolRuntime) -> None:
    """skips dispatch when an around wrapper supplies an already-aborted signal

    Row "Wrapper supplies an already-aborted replacement signal" (the caller itself never aborts).
    """
    dispatched = register_counted(runtime, "must-not-run")
    runtime.on("tools/execute", replacing_signal(AbortSignal.aborted_with("wrapper cancelled")))
    controller = AbortController()

    result = await runtime.execute(
        call_input("must-not-run", signal=controller.signal, call_id="cancelled-wrapper")
    )

    assert isinstance(result, ToolFailure)
    assert result.error == ToolError(
        "tool call aborted before dispatch", ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH")
    )
    assert dispatched == [0]
    assert not controller.signal.aborted


async def test_cancellation_overtaking_a_wrapper_short_circuit_keeps_its_contexts(
    runtime: ToolRuntime,
) -> None:
    """uses ABORTED_BEFORE_DISPATCH when cancellation overtakes a wrapper short-circuit

    Row "Wrapper short-circuits with a success while caller aborts".
    """
    dispatched = register_counted(runtime, "short-circuited")
    gate = Gate()
    runtime.on(
        "tools/execute",
        parked(
            gate,
            lambda next: ToolSuccess(
                value="wrapper success",
                content=text("wrapper success"),
                additional_contexts=[ctx_message("wrapper")],
            ),
        ),
    )
    assert await abort_at_gate(
        runtime,
        gate,
        "short-circuited",
        call_id="cancelled-short-circuit",
        reason="cancelled while wrapper waited",
    ) == aborted_before_dispatch(additional_contexts=[ctx_message("wrapper")])
    assert dispatched == [0]


async def test_a_wrapper_failure_settling_after_cancellation_is_kept(runtime: ToolRuntime) -> None:
    """preserves an around-dispatch failure that settles after cancellation

    Row "Wrapper throws after cancellation".
    """
    dispatched = register_counted(runtime, "wrapper-failure")
    gate = Gate()
    runtime.on("tools/execute", parked(gate, raising(ToolrtError("wrapper failed", "WRAPPER_FAILURE"))))
    assert await abort_at_gate(
        runtime, gate, "wrapper-failure", call_id="wrapper-failure", reason="cancelled while wrapper failed"
    ) == failure("wrapper failed", "ToolrtError", "WRAPPER_FAILURE")
    assert dispatched == [0]


# --- while and after the body runs ----------------------------------------------------------------


@pytest.mark.parametrize("body_kind", ["async", "sync-thread"])
async def test_a_body_that_finishes_after_cancellation_is_aborted_once_it_settles(
    runtime: ToolRuntime, body_kind: str
) -> None:
    """waits for an uncooperative started body before returning ABORTED

    Row "Body running; body settles successfully": the registry waits for the body (it never
    races or abandons it) and keeps its deferred contexts.
    """
    entered = threading.Event()
    release_thread = threading.Event()
    gate = Gate()

    if body_kind == "async":

        async def execute(args: Any, ctx: Any) -> str:
            ctx.defer_context(ctx_message("nested"))
            entered.set()
            await gate.wait()
            return "settled"

    else:

        def execute(args: Any, ctx: Any) -> str:
            ctx.defer_context(ctx_message("nested"))
            entered.set()
            release_thread.wait(5)
            return "settled"

    runtime.register(echo_tool(name="uncooperative", execute=execute))
    controller = AbortController()

    pending = start(runtime, "uncooperative", signal=controller.signal, call_id="drain-body")
    assert await asyncio.to_thread(entered.wait, 5)
    controller.abort("must still drain")
    await asyncio.sleep(0.05)
    assert not pending.done()

    gate.open()
    release_thread.set()
    assert await settle(pending) == aborted(additional_contexts=[ctx_message("nested")])


@pytest.mark.parametrize("body_kind", ["async", "sync-thread"])
async def test_a_tool_owned_failure_after_observing_cancellation_is_kept(
    runtime: ToolRuntime, body_kind: str
) -> None:
    """preserves a tool-owned failure after the body observes cancellation

    Row "Body running; body throws on abort" — for an async body awaiting its signal and for a
    synchronous body polling it on a worker thread.
    """
    entered = threading.Event()

    if body_kind == "async":

        async def execute(args: Any, ctx: Any) -> str:
            entered.set()
            await ctx.signal.wait()
            raise ToolrtError("tool failed", "TOOL_FAILURE")

    else:

        def execute(args: Any, ctx: Any) -> str:
            entered.set()
            deadline = time.monotonic() + 5
            while not ctx.signal.aborted and time.monotonic() < deadline:
                time.sleep(0.002)
            raise ToolrtError("tool failed", "TOOL_FAILURE")

    runtime.register(echo_tool(name="tool-failure", execute=execute))
    controller = AbortController()

    pending = start(runtime, "tool-failure", signal=controller.signal, call_id="tool-failure")
    assert await asyncio.to_thread(entered.wait, 5)
    controller.abort("cancelled running body")

    assert await settle(pending) == failure("tool failed", "ToolrtError", "TOOL_FAILURE")


async def test_a_late_wrapper_success_becomes_aborted_with_deferred_contexts(runtime: ToolRuntime) -> None:
    """replaces a late wrapper success with ABORTED and preserves deferred contexts

    Row "After body, while a wrapper … awaits; outcome success".
    """

    async def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context(ctx_message("child"))
        return "body complete"

    runtime.register(echo_tool(name="completed-before-wrapper", execute=execute))
    gate = Gate()

    async def around(execution: Any, next: Any) -> Any:
        result = await next()
        await gate.wait()
        return result

    runtime.on("tools/execute", around)
    assert await abort_at_gate(
        runtime,
        gate,
        "completed-before-wrapper",
        call_id="cancelled-after-body",
        reason="cancelled while wrapper settled",
    ) == aborted(additional_contexts=[ctx_message("child")])


async def test_a_late_post_execute_success_becomes_aborted_with_all_contexts(runtime: ToolRuntime) -> None:
    """replaces a late post-execute success with ABORTED and preserves contexts

    Row "After body, while … post-execute awaits; outcome success" (contexts incl. post's kept).
    """

    async def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context(ctx_message("child"))
        return "body complete"

    runtime.register(echo_tool(name="completed-before-post", execute=execute))
    gate = Gate()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        decision = await next()
        await gate.wait()
        return Accept(
            content=decision.content, value=decision.value, additional_contexts=[ctx_message("post")]
        )

    runtime.on("tools/post-execute", post)
    assert await abort_at_gate(
        runtime,
        gate,
        "completed-before-post",
        call_id="cancelled-in-post",
        reason="cancelled while post policy waits",
    ) == aborted(additional_contexts=[ctx_message("child"), ctx_message("post")])


async def test_a_post_policy_failure_settling_after_cancellation_is_kept(runtime: ToolRuntime) -> None:
    """preserves a post-policy failure that settles after cancellation

    Row "Post-execute throws after cancellation".
    """
    runtime.register(echo_tool())
    gate = Gate()
    runtime.on("tools/post-execute", parked(gate, raising(ToolrtError("post-policy failed", "POST_FAILURE"))))
    assert await abort_at_gate(
        runtime, gate, "echo", call_id="post-failure", reason="cancelled while post-policy failed"
    ) == failure("post-policy failed", "ToolrtError", "POST_FAILURE")


async def test_a_timeout_wrappers_own_deadline_replaces_the_outcome_with_tool_timeout(
    runtime: ToolRuntime,
) -> None:
    """Row "Timeout policy's own deadline fired": the timeout policy is a neighbour package; this is a
    minimal real ``tools/execute`` timeout wrapper. The body (cooperative) stops on the derived
    deadline signal and comes back ABORTED; the wrapper replaces that with its TOOL_TIMEOUT failure,
    which post-execute sees, while the caller's signal never fires.
    """
    stopped: list[bool] = []

    async def execute(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        stopped.append(True)
        return "stopped"

    runtime.register(echo_tool(name="budgeted", execute=execute, timeout_ms=10))
    inner: list[Any] = []

    async def timeout_policy(execution: Any, next: Any) -> Any:
        budget = runtime.get(execution.name).timeout_ms  # type: ignore[union-attr]
        deadline = AbortController()
        handle = asyncio.get_running_loop().call_later(budget / 1000, deadline.abort, "deadline")
        upstream = execution.signal
        execution.signal = deadline.signal
        try:
            result = await next()
        finally:
            execution.signal = upstream
            handle.cancel()
        inner.append(result)
        if deadline.signal.aborted and not upstream.aborted:
            message = f"tool call timed out after {budget}ms"
            return ToolFailure(
                error=ToolError(message, ToolErrorInfo("ToolTimeoutError", "TOOL_TIMEOUT")),
                content=text(f"Error: {message}"),
            )
        return result

    runtime.on("tools/execute", timeout_policy)
    post_saw = recording_post(runtime)
    controller = AbortController()

    result = await settle(runtime.execute(call_input("budgeted", signal=controller.signal)))

    assert stopped == [True]
    assert inner == [aborted()]
    assert result == failure("tool call timed out after 10ms", "ToolTimeoutError", "TOOL_TIMEOUT")
    assert post_saw == [result]
    assert not controller.signal.aborted


# --- body signals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("body_kind", ["async", "sync-thread"])
async def test_caller_cancellation_is_fused_into_a_wrapper_replacement_signal(
    runtime: ToolRuntime, body_kind: str
) -> None:
    """fuses caller cancellation back into a wrapper replacement for the running body

    Body-signal rule of §2.13: the body's signal is neither the caller's nor the replacement;
    aborting the caller aborts it without aborting the wrapper's own controller.
    """
    entered = threading.Event()
    body_signals: list[AbortSignal] = []

    if body_kind == "async":

        async def execute(args: Any, ctx: Any) -> str:
            body_signals.append(ctx.signal)
            entered.set()
            await ctx.signal.wait()
            return "stopped"

    else:

        def execute(args: Any, ctx: Any) -> str:
            body_signals.append(ctx.signal)
            entered.set()
            deadline = time.monotonic() + 5
            while not ctx.signal.aborted and time.monotonic() < deadline:
                time.sleep(0.002)
            return "stopped"

    runtime.register(echo_tool(name="cooperative", execute=execute))
    replacement = AbortController()
    runtime.on("tools/execute", replacing_signal(replacement.signal))
    controller = AbortController()

    pending = start(runtime, "cooperative", signal=controller.signal, call_id="cancelled-body")
    assert await asyncio.to_thread(entered.wait, 5)
    (body_signal,) = body_signals
    assert body_signal is not controller.signal
    assert body_signal is not replacement.signal
    controller.abort("cancel running body")

    assert await settle(pending) == aborted()
    assert body_signal.aborted
    assert not replacement.signal.aborted


async def test_the_caller_signal_is_restored_after_around_dispatch(runtime: ToolRuntime) -> None:
    """restores the required caller signal after around dispatch

    As upstream, no tool is registered: an unknown tool still goes through wrappers and post.
    """
    runtime.on("tools/execute", replacing_signal(AbortController().signal))
    post_signals = recording_post(runtime, lambda execution, result: execution.signal)
    controller = AbortController()

    result = await runtime.execute(call_input("echo", signal=controller.signal, call_id="restored-signal"))

    assert post_signals == [controller.signal]
    assert post_signals[0] is controller.signal
    assert result == failure('unknown tool "echo"', "ToolNotFoundError", "UNKNOWN_TOOL")


async def test_a_wrapper_that_forgets_to_restore_the_signal_is_restored_anyway(runtime: ToolRuntime) -> None:
    """Python-specific (D6, §2.13 "After the around stage the execution's signal is the caller signal
    again"): even a wrapper that does not restore it cannot leak its replacement into post-execute.
    """
    runtime.register(echo_tool())

    async def around(execution: Any, next: Any) -> Any:
        execution.signal = AbortController().signal
        return await next()

    runtime.on("tools/execute", around)
    post_signals = recording_post(runtime, lambda execution, result: execution.signal)
    controller = AbortController()

    await runtime.execute(call_input("echo", signal=controller.signal))

    assert post_signals[0] is controller.signal


async def test_the_body_sees_the_caller_signal_re_fused_with_a_replacement(runtime: ToolRuntime) -> None:
    """re-fuses the caller signal with an around-dispatch replacement for the body"""
    seen: list[AbortSignal] = []

    async def execute(args: Any, ctx: Any) -> str:
        seen.append(ctx.signal)
        return "ok"

    runtime.register(echo_tool(name="signal-probe", execute=execute))
    upstream = AbortController().signal
    replacement = AbortController().signal
    wrapper_saw: list[AbortSignal] = []

    async def around(execution: Any, next: Any) -> Any:
        wrapper_saw.append(execution.signal)
        execution.signal = replacement
        return await next()

    runtime.on("tools/execute", around)

    assert await runtime.execute(call_input("signal-probe", signal=upstream)) == ToolSuccess(
        value="ok", content=text("ok")
    )
    assert wrapper_saw == [upstream]
    assert wrapper_saw[0] is upstream
    (body_signal,) = seen
    assert body_signal is not upstream
    assert body_signal is not replacement


async def test_only_a_tools_execute_wrapper_may_replace_the_signal(runtime: ToolRuntime) -> None:
    """Python adaptation (D6): ``execution.signal`` is assignable inside a ``tools/execute`` wrapper
    only; pre-execute, post-execute and guards get ``AttributeError``.
    """
    runtime.register(echo_tool())
    refused: list[str] = []

    def try_assign(phase: str, execution: Any) -> None:
        try:
            execution.signal = AbortController().signal
        except AttributeError:
            refused.append(phase)

    async def pre(execution: Any, next: Any) -> Any:
        try_assign("pre", execution)
        return await next()

    def guard(execution: Any) -> None:
        try_assign("guard", execution)

    async def post(execution: Any, result: Any, next: Any) -> Any:
        try_assign("post", execution)
        return await next()

    runtime.on("tools/pre-execute", pre)
    runtime.guard(guard)
    runtime.on("tools/post-execute", post)

    assert await runtime.execute(call_input("echo", {"text": "x"})) == ToolSuccess(
        value="x", content=text("x")
    )
    assert refused == ["pre", "guard", "post"]


@pytest.mark.parametrize(
    "with_wrapper",
    [
        False,
        pytest.param(
            True,
        ),
    ],
    ids=["no-wrapper", "under-a-wrapper"],
)
async def test_a_tool_body_cannot_replace_its_signal(runtime: ToolRuntime, with_wrapper: bool) -> None:
    """Python adaptation (D5/D6): the body receives a ``ToolRunContext`` whose ``signal`` is
    read-only — whether or not a ``tools/execute`` wrapper surrounds the dispatch.
    """
    outcome: list[str] = []

    async def execute(args: Any, ctx: Any) -> str:
        try:
            ctx.signal = AbortController().signal
        except AttributeError:
            outcome.append("refused")
        else:
            outcome.append("replaced")
        return "done"

    runtime.register(echo_tool(name="assigner", execute=execute))
    if with_wrapper:
        runtime.on("tools/execute", lambda execution, next: next())

    await runtime.execute(call_input("assigner"))

    assert outcome == ["refused"]


# --- Python task cancellation (ADR 0001 "BaseException") ------------------------------------------


def _observe(runtime: ToolRuntime) -> list[tuple[Any, Any]]:
    published: list[tuple[Any, Any]] = []
    runtime.on("tools/result", lambda execution, result: published.append((execution, result)))
    return published


async def _cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await settle(task)


async def _cancel_at_gate(runtime: ToolRuntime, gate: Gate, *args: Any, **kwargs: Any) -> None:
    task = start(runtime, *args, **kwargs)
    await gate.reached()
    await _cancel(task)


async def _wait_noting_cancellation(gate: Gate, cancelled: list[bool]) -> None:
    try:
        await gate.wait()
    except asyncio.CancelledError:
        cancelled.append(True)
        raise


async def test_task_cancellation_during_pre_execute_publishes_aborted_before_dispatch(
    runtime: ToolRuntime,
) -> None:
    """Python-specific: cancelling the calling task while pre-execute awaits propagates
    ``CancelledError`` and observers get exactly one ABORTED_BEFORE_DISPATCH result.
    """
    dispatched = register_counted(runtime)
    gate = Gate()
    listener_cancelled: list[bool] = []

    async def pre(execution: Any, next: Any) -> Any:
        await _wait_noting_cancellation(gate, listener_cancelled)
        return await next()

    runtime.on("tools/pre-execute", pre)
    published = _observe(runtime)
    controller = AbortController()

    await _cancel_at_gate(runtime, gate, "echo", signal=controller.signal)

    assert listener_cancelled == [True]
    assert [result for _, result in published] == [aborted_before_dispatch()]
    assert published[0][0].frozen
    assert dispatched == [0]
    assert not controller.signal.aborted


async def test_task_cancellation_during_an_execute_wrapper_publishes_aborted_before_dispatch(
    runtime: ToolRuntime,
) -> None:
    """Python-specific: a task cancelled in a wrapper before ``next()`` never reaches the body."""
    dispatched = register_counted(runtime)
    gate = Gate()
    runtime.on("tools/execute", parked(gate))
    published = _observe(runtime)

    await _cancel_at_gate(runtime, gate, "echo")

    assert [result for _, result in published] == [aborted_before_dispatch()]
    assert dispatched == [0]


async def test_task_cancellation_during_an_async_body_publishes_aborted(runtime: ToolRuntime) -> None:
    """Python-specific: the body's ``await`` receives the cancellation; observers get one ABORTED."""
    gate = Gate()
    body_cancelled: list[bool] = []

    async def execute(args: Any, ctx: Any) -> str:
        await _wait_noting_cancellation(gate, body_cancelled)
        return "never"

    runtime.register(echo_tool(name="slow", execute=execute))
    published = _observe(runtime)
    post_calls = [0]

    async def post(execution: Any, result: Any, next: Any) -> Any:
        post_calls[0] += 1
        return await next()

    runtime.on("tools/post-execute", post)

    await _cancel_at_gate(runtime, gate, "slow")

    assert body_cancelled == [True]
    assert [result for _, result in published] == [aborted()]
    assert post_calls == [0]


async def test_task_cancellation_during_post_execute_publishes_aborted(runtime: ToolRuntime) -> None:
    """Python-specific: a task cancelled in post-execute (the body already ran) publishes ABORTED."""
    ran = register_counted(runtime)
    gate = Gate()
    runtime.on("tools/post-execute", parked(gate))
    published = _observe(runtime)

    await _cancel_at_gate(runtime, gate, "echo")

    assert ran == [1]
    assert [result for _, result in published] == [aborted()]


async def _cancel_a_running_sync_body(runtime: ToolRuntime, reads: str) -> tuple[list[Any], AbortController]:
    """Start a sync body that polls its signal on a worker thread, cancel the calling task, and
    return what observers saw once the body noticed the abort and the thread finished.
    """
    entered = threading.Event()
    saw_abort = threading.Event()
    release = threading.Event()
    finished = threading.Event()

    def execute(args: Any, ctx: Any) -> str:
        captured = ctx.signal

        def signal() -> AbortSignal:
            return captured if reads == "captured-once" else ctx.signal

        entered.set()
        while not signal().aborted and not release.is_set():
            time.sleep(0.002)
        if signal().aborted:
            saw_abort.set()
        release.wait(5)
        finished.set()
        return "late"

    runtime.register(echo_tool(name="threaded", execute=execute))
    published = _observe(runtime)
    controller = AbortController()

    task = start(runtime, "threaded", signal=controller.signal)
    try:
        assert await asyncio.to_thread(entered.wait, 5)
        await _cancel(task)
        assert await asyncio.to_thread(saw_abort.wait, 1)
    finally:
        release.set()
        assert await asyncio.to_thread(finished.wait, 5)
    return published, controller


@pytest.mark.parametrize(
    "reads",
    [
        "captured-once",
        pytest.param(
            "re-read",
        ),
    ],
)
async def test_task_cancellation_signals_a_sync_body_on_its_worker_thread(
    runtime: ToolRuntime, reads: str
) -> None:
    """Python-specific (ADR 0001 "Sync bodies"): a thread cannot be interrupted, so cancelling the
    task fires the body's signal (not the caller's), propagates ``CancelledError`` and publishes one
    ABORTED result.

    Both ways a body may watch its signal must work: holding the object it read on entry, or
    re-reading ``ctx.signal`` on every poll (the idiom upstream bodies use: ``exec.signal``).
    """
    published, controller = await _cancel_a_running_sync_body(runtime, reads)

    assert [result for _, result in published] == [aborted()]
    assert not controller.signal.aborted


async def test_task_cancellation_warns_that_a_sync_body_keeps_running(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """Python-specific (ADR 0001 "Sync bodies": "a warning is logged if it keeps running")."""
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        await _cancel_a_running_sync_body(runtime, "captured-once")

    assert [record.getMessage() for record in caplog.records if record.name == "toolrt"] == [
        'tool "threaded" (c1): task cancelled while its synchronous body runs on a worker thread; the thread '
        "was signalled and keeps running until the body returns"
    ]


# --- the drain after task cancellation, bounded by the timeout grace (issue 12 item 8) ------------


async def test_task_cancellation_waits_for_a_body_cleanup_that_awaits() -> None:
    """Every runtime times its bodies (the default deadline); cancelling the awaiting task still
    reaches the body as a plain ``await`` would, and its cleanup has run when ``CancelledError``
    propagates."""
    runtime = ToolRuntime()
    started = asyncio.Event()
    cleaned: list[str] = []

    async def execute(args: Any, ctx: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            for _ in range(5):  # a cleanup that itself awaits (flush a file, kill a child process)
                await asyncio.sleep(0)
            await asyncio.sleep(0.01)
            cleaned.append("done")
        return "never"

    runtime.register(echo_tool(name="slow", execute=execute))
    published = _observe(runtime)
    task = start(runtime, "slow")
    await started.wait()
    await _cancel(task)
    assert cleaned == ["done"]
    assert [result for _, result in published] == [aborted()]


async def test_a_cleanup_longer_than_the_grace_is_left_running_reported_and_tracked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from toolrt.policies import install_default_deadline

    runtime = ToolRuntime()
    install_default_deadline(runtime, grace_ms=30)
    started = asyncio.Event()
    finished = asyncio.Event()

    async def execute(args: Any, ctx: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            try:
                await asyncio.sleep(0.5)  # ignores the grace
            finally:
                finished.set()
        return "never"

    runtime.register(echo_tool(name="stubborn", execute=execute))
    published = _observe(runtime)
    task = start(runtime, "stubborn")
    await started.wait()
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        began = time.monotonic()
        await _cancel(task)
        waited = time.monotonic() - began
        assert not finished.is_set()  # the cancellation did not wait for the whole cleanup
        assert waited < 0.4
        assert [result for _, result in published] == [aborted()]
        await settle(finished.wait())
        for _ in range(3):
            await asyncio.sleep(0)
    messages = [record.getMessage() for record in caplog.records]
    assert any(
        'tool "stubborn" (c1): the task awaiting it was cancelled and its body did not end within the '
        "grace of 30ms; left running, tracked until it ends" in message
        for message in messages
    )
    assert any('tool "stubborn" (c1): detached body' in message for message in messages)
