"""The ``run_code`` dispatch bridge and its per-run sub-dispatch scheduler.

Ports of upstream ``code-mode.spec.ts`` describes *the sub-dispatch scheduler (native concurrency
contract)* and *the run_code dispatch bridge* (its construction / collapse cases live in
``test_run_code.py``), plus contract §2.15 B4–B14 and §4.1 items 7, 9 and 10.

Every test drives a :class:`code_mode_fakes.FakeRuntime` whose ``behavior`` plays the program: it
calls the ``tools`` bindings directly. Concurrency is real asyncio concurrency — calls a JavaScript
program would start under ``Promise.all`` are :func:`~code_mode_fakes.submit`-ted as tasks, and
:class:`~code_mode_fakes.Gated` tools park until the test releases them (or their signal aborts).

Python adaptations: upstream's ``fakeAgent()`` is an agent key (:data:`~code_mode_fakes.AGENT`) whose
session is an in-memory :class:`~toolrt.loop.SessionLog` bound with ``runtime.bind_session``;
event data uses snake_case keys and also records the ``agent``. JavaScript-only argument values
(``undefined``, ``Date``, functions, ``BigInt``, throwing getters) become Python values that are not
lossless JSON (a set, an arbitrary object, NaN, ``-0.0``, an unsafe integer, a cycle) and values whose
snapshot raises (a numeric subclass whose conversion raises, a dict subclass whose ``items()`` raises).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any
from unittest.mock import ANY

import pytest

from code_mode_fakes import (
    AGENT,
    Gated,
    Rejected,
    Resolved,
    call,
    eventually,
    functions,
    outcome,
    register_echo,
    run_code,
    run_program,
    session_events,
    setup,
    setup_with_echo,
    submit,
)
from helpers import content_tool, failure, register_tool, text
from toolrt import (
    AbortController,
    AbortSignal,
    Accept,
    Block,
    Deny,
    ToolrtError,
    ToolRuntime,
    ToolSuccess,
    define_tool,
    user_message,
)
from toolrt.codemode._code_runtime import CodeRunError, CodeRunRequest, CodeRunResult
from toolrt.codemode._transport import CodeRunFailedError
from toolrt.loop import (
    SessionLog,
    code_dispatch_event,
    code_dispatch_start_event,
    derive_messages,
    model_user_event,
)
from toolrt.loop._messages import UserMessage
from toolrt.lowlevel import ExecutionToken

RUN_CODE = "run_code"
START = "tool/code-dispatch-start"
SETTLE = "tool/code-dispatch"
NO_OUTPUT = "(run_code completed with no output)"


def sub_ids(events: list[dict[str, Any]]) -> list[str]:
    return [event["sub_call_id"] for event in events]


def only_text(result: Any) -> str:
    (block,) = result.content
    assert block["type"] == "text"
    return str(block["text"])


async def yield_to_scheduler() -> None:
    """Give the driver lane ample chances to (wrongly) start something before a negative assertion."""
    await asyncio.sleep(0.02)


# =================================================================================================
# describe: the sub-dispatch scheduler (native concurrency contract)
# =================================================================================================


async def test_safe_calls_overlap_and_each_dispatch_logs_a_start_event() -> None:
    """overlaps concurrency-safe calls under Promise.all and logs a start event per dispatch"""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "safe_read", safe=True)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        calls = [submit(request, "safe_read", {"id": key}) for key in "abc"]
        # All three must start without any completing (overlap proof).
        started = await eventually(lambda: gated.live == 3)
        gated.release_all()
        values = await asyncio.gather(*calls)
        return CodeRunResult(value=",".join(values) if started else "never overlapped")

    result = await run_program(deployment, behavior, agent=AGENT)

    assert isinstance(result, ToolSuccess)
    assert gated.peak == 3
    assert result.value == {"logs": [], "result": "safe_read:a,safe_read:b,safe_read:c"}
    starts = session_events(deployment.log, START)
    settles = session_events(deployment.log, SETTLE)
    assert sub_ids(starts) == ["call-1:code:1", "call-1:code:2", "call-1:code:3"]
    assert starts[0] == {
        "root_call_id": "call-1",
        "parent_call_id": "call-1",
        "sub_call_id": "call-1:code:1",
        "name": "safe_read",
        "arguments": {"id": "a"},
        "agent": AGENT,
    }
    assert sorted(sub_ids(settles)) == sub_ids(starts)


async def test_an_exclusive_call_waits_for_the_pool_runs_alone_and_bars_later_calls() -> None:
    """an exclusive call bars overlap: safe calls drain first, it runs alone, later calls wait"""
    deployment = setup("code")
    safe = Gated(deployment.runtime, "safe_read", safe=True)
    unsafe = Gated(deployment.runtime, "writer", safe=False)
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        reads = [submit(request, "safe_read", {"id": "r1"}), submit(request, "safe_read", {"id": "r2"})]
        write = submit(request, "writer", {"id": "w"})
        tail = submit(request, "safe_read", {"id": "r3"})
        observed["reads overlap"] = await eventually(lambda: safe.live == 2)
        await yield_to_scheduler()
        observed["writer during reads"] = unsafe.live
        safe.release_all()
        observed["writer started"] = await eventually(lambda: unsafe.live == 1)
        await yield_to_scheduler()
        observed["reads during writer"] = safe.live
        unsafe.release()
        observed["tail started"] = await eventually(lambda: safe.live == 1)
        safe.release_all()
        await asyncio.gather(*reads, write, tail)
        return CodeRunResult(value="ordered")

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert observed == {
        "reads overlap": True,
        "writer during reads": 0,
        "writer started": True,
        "reads during writer": 0,
        "tail started": True,
    }
    assert safe.order[:2] == ["start:r1", "start:r2"]
    assert unsafe.order == ["start:w", "end:w"]
    assert safe.order.index("start:r3") > safe.order.index("end:r2")


async def test_max_parallel_sub_calls_caps_the_overlap_window() -> None:
    """maxParallelSubCalls caps the overlap window"""
    deployment = setup("code", max_parallel_sub_calls=2)
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        calls = [submit(request, "safe_read", {"id": key}) for key in "abc"]
        observed["two started"] = await eventually(lambda: gated.live == 2)
        await yield_to_scheduler()
        observed["parked while capped"] = gated.parked()  # the third waits for a slot
        gated.release("a")
        observed["third started"] = await eventually(lambda: "start:c" in gated.order)
        gated.release_all()
        await asyncio.gather(*calls)
        return CodeRunResult(value="capped")

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert observed == {"two started": True, "parked while capped": ["a", "b"], "third started": True}
    assert gated.peak == 2


async def test_a_finished_call_frees_its_slot_even_before_earlier_calls_commit() -> None:
    """B8 (capacity counts in-flight bodies): with a cap of 2, when the SECOND call finishes first the
    third starts at once, while the first is still running — commits stay in submission order, but
    the overlap window is a rolling pool of bodies, as in the native loop (§2.14 L2)."""
    deployment = setup("code", max_parallel_sub_calls=2)
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        calls = [submit(request, "safe_read", {"id": key}) for key in "abc"]
        await eventually(lambda: gated.live == 2)
        gated.release("b")
        observed["third started beside the first"] = await eventually(lambda: "start:c" in gated.order, 0.5)
        observed["first still running"] = "a" in gated.parked()
        gated.release_all()
        await eventually(lambda: gated.live == 2, 0.5)
        gated.release_all()
        await asyncio.gather(*calls)
        return CodeRunResult()

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert observed == {"third started beside the first": True, "first still running": True}


async def test_a_tool_unregistered_after_binding_enumeration_fails_as_unknown_tool() -> None:
    """a tool unregistered between binding enumeration and dispatch fails as unknown tool"""
    deployment = setup("code")
    ran: list[str] = []

    async def execute(args: Any, ctx: Any) -> str:
        ran.append("ran")
        return "ok"

    dispose = register_tool(
        deployment.runtime, "ephemeral", "Unregistered between binding enumeration and dispatch.", execute
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        dispose()
        settled = await outcome(call(request, "ephemeral", {}))
        return CodeRunResult(value=settled.message if isinstance(settled, Rejected) else "resolved")

    result = await run_program(deployment, behavior, agent=AGENT)

    assert isinstance(result, ToolSuccess)
    assert result.value == {"logs": [], "result": 'unknown tool "ephemeral"'}
    assert ran == []
    (settle,) = session_events(deployment.log, SETTLE)
    assert settle["is_error"] is True
    assert settle["content"] == text('Error: unknown tool "ephemeral"')


def slow_read_policy(runtime: Any, held_suffix: str) -> tuple[list[str], asyncio.Event]:
    """A ``safe_read`` pre-execute policy logging ``pre-enter:<call id>`` / ``pre-exit:<call id>`` to
    the returned stages; the call whose id ends with ``held_suffix`` waits for the returned event.
    """
    stages: list[str] = []
    policy_gate = asyncio.Event()

    async def slow_policy(execution: Any, next_: Any) -> Any:
        if execution.name == "safe_read":
            stages.append(f"pre-enter:{execution.call_id}")
            if execution.call_id.endswith(held_suffix):
                await policy_gate.wait()
            stages.append(f"pre-exit:{execution.call_id}")
        return await next_()

    runtime.on("tools/pre-execute", slow_policy)
    return stages, policy_gate


async def test_ordered_pre_execute_never_overlaps() -> None:
    """ordered pre-execute never overlaps: a slow policy on one call delays the next start"""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    # the FIRST call's policy awaits an asynchronous decision
    stages, policy_gate = slow_read_policy(deployment.runtime, ":1")
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        calls = [submit(request, "safe_read", {"id": "a"}), submit(request, "safe_read", {"id": "b"})]
        await eventually(lambda: len(stages) >= 1)
        await yield_to_scheduler()
        observed["while first policy pends"] = list(stages)
        policy_gate.set()
        await eventually(lambda: gated.live == 2)
        gated.release_all()
        await asyncio.gather(*calls)
        return CodeRunResult(value="ordered-prepare")

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert observed == {"while first policy pends": ["pre-enter:call-1:code:1"]}
    assert stages == [
        "pre-enter:call-1:code:1",
        "pre-exit:call-1:code:1",
        "pre-enter:call-1:code:2",
        "pre-exit:call-1:code:2",
    ]


async def test_a_finished_call_commits_only_after_a_later_calls_prepare_ends() -> None:
    """prepare and commit never overlap: a call whose body ends while the next call's pre-execute
    policy pends runs its post-execute only once that prepare is over (the first call of a run takes
    the fast lane, the second the driver lane: both lanes share the one ordering)"""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    stages, policy_gate = slow_read_policy(deployment.runtime, ":2")

    async def post(execution: Any, result: Any, next_: Any) -> Any:
        if execution.name == "safe_read":
            stages.append(f"post:{execution.call_id}")
        return await next_()

    deployment.runtime.on("tools/post-execute", post)
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        first = submit(request, "safe_read", {"id": "a"})
        await eventually(lambda: gated.live == 1)
        second = submit(request, "safe_read", {"id": "b"})
        await eventually(lambda: "pre-enter:call-1:code:2" in stages)
        gated.release("a")  # the first body ends while the second call's policy pends
        await eventually(lambda: gated.order[-1:] == ["end:a"])
        await yield_to_scheduler()
        observed["first settled while the policy pends"] = first.done()
        policy_gate.set()
        await eventually(lambda: gated.live == 1)
        gated.release_all()
        return CodeRunResult(value=",".join(await asyncio.gather(first, second)))

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert observed == {"first settled while the policy pends": False}
    assert stages == [
        "pre-enter:call-1:code:1",
        "pre-exit:call-1:code:1",
        "pre-enter:call-1:code:2",
        "pre-exit:call-1:code:2",
        "post:call-1:code:1",
        "post:call-1:code:2",
    ]


async def test_a_denied_call_queued_behind_a_running_call_answers_in_submission_order() -> None:
    """a call that never dispatches (denied in prepare) while an earlier call runs is answered only
    after the earlier call commits"""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    calls = register_echo(deployment.runtime)
    deployment.runtime.on(
        "tools/pre-execute",
        lambda execution, next_: Deny("not on my watch") if execution.name == "echo" else next_(),
    )
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        read = submit(request, "safe_read", {"id": "a"})
        denied = submit(request, "echo", {"value": "x"})
        await eventually(lambda: gated.live == 1)
        await yield_to_scheduler()
        observed["denial answered while the read runs"] = denied.done()
        gated.release_all()
        observed["read"] = await outcome(read)
        observed["denied"] = await outcome(denied)
        return CodeRunResult(value="ordered")

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.is_error is False
    assert observed == {
        "denial answered while the read runs": False,
        "read": Resolved("safe_read:a"),
        "denied": Rejected("not on my watch"),
    }
    assert calls == []
    assert sub_ids(session_events(deployment.log, SETTLE)) == ["call-1:code:1", "call-1:code:2"]


async def test_a_call_aborted_before_its_first_step_is_abandoned_undispatched() -> None:
    """an outer abort that lands after a call was submitted but before it started abandons it: no
    prepare, no body, no start event"""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)
    controller = AbortController()
    prepared: list[str] = []

    async def pre(execution: Any, next_: Any) -> Any:
        if execution.name == "echo":
            prepared.append(execution.call_id)
        return await next_()

    deployment.runtime.on("tools/pre-execute", pre)
    settled: list[Any] = []

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        task = submit(request, "echo", {"value": "x"})  # queued at once; its first step comes later
        controller.abort("user-cancel")
        settled.append(await outcome(task))
        return CodeRunResult(error=CodeRunError("abort", "user-cancel"))

    result = await run_program(deployment, behavior, signal=controller.signal, agent=AGENT)

    assert result.is_error is True
    assert settled == [Rejected("run_code run is over (user-cancel); echo tool call abandoned")]
    assert prepared == []
    assert calls == []
    assert session_events(deployment.log, START) == []


async def test_an_exclusive_call_holds_its_barrier_through_post_execute() -> None:
    """an exclusive call holds its barrier through post-execute: the next start waits for the commit"""
    deployment = setup("code")
    writer = Gated(deployment.runtime, "writer", safe=False)
    reader = Gated(deployment.runtime, "safe_read", safe=True)
    stages: list[str] = []
    post_gate = asyncio.Event()

    async def pre(execution: Any, next_: Any) -> Any:
        if execution.name == "safe_read":
            stages.append("pre:safe_read")
        return await next_()

    async def post(execution: Any, result: Any, next_: Any) -> Any:
        if execution.name == "writer":
            stages.append("post-enter:writer")
            await post_gate.wait()
            stages.append("post-exit:writer")
        return await next_()

    deployment.runtime.on("tools/pre-execute", pre)
    deployment.runtime.on("tools/post-execute", post)
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        write = submit(request, "writer", {"id": "w"})
        read = submit(request, "safe_read", {"id": "r"})
        await eventually(lambda: writer.live == 1)
        writer.release()
        await eventually(lambda: "post-enter:writer" in stages)
        await yield_to_scheduler()
        # The writer's body is done and its post-execute is running: the read has not STARTED.
        observed["reader during writer commit"] = (reader.live, list(stages))
        post_gate.set()
        await write
        observed["reader started"] = await eventually(lambda: reader.live == 1)
        reader.release_all()
        await read
        return CodeRunResult(value="barrier-through-commit")

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.is_error is False
    assert observed == {"reader during writer commit": (0, ["post-enter:writer"]), "reader started": True}
    assert stages == ["post-enter:writer", "post-exit:writer", "pre:safe_read"]
    # The reader's start event is appended only after the writer's commit.
    starts = session_events(deployment.log, START)
    assert [event["name"] for event in starts] == ["writer", "safe_read"]


async def test_run_settlement_drains_a_commit_already_in_progress() -> None:
    """run settlement drains a commit already in progress: the settle event is appended inside the turn"""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    post_entered = asyncio.Event()
    post_gate = asyncio.Event()

    async def post(execution: Any, result: Any, next_: Any) -> Any:
        if execution.name == "safe_read":
            post_entered.set()
            await post_gate.wait()
        return await next_()

    deployment.runtime.on("tools/post-execute", post)
    pending: list[asyncio.Task[Any]] = []

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        # Fire-and-forget: the program returns while the sub-call's post-execute commit is mid-flight.
        pending.append(submit(request, "safe_read", {"id": "a"}))
        await eventually(lambda: gated.live == 1)
        gated.release()
        await post_entered.wait()
        asyncio.get_running_loop().call_soon(post_gate.set)
        return CodeRunResult(value="returned-early")

    result = await run_program(deployment, behavior, agent=AGENT)

    # Checked before yielding once: every append happened inside execute().
    settles = session_events(deployment.log, SETTLE)
    assert result.is_error is False
    assert result.value == {"logs": [], "result": "returned-early"}
    assert len(settles) == 1
    # The run's settlement aborted the sub-call while its post-execute ran: the success became ABORTED.
    assert settles[0] == {
        "root_call_id": "call-1",
        "parent_call_id": "call-1",
        "sub_call_id": "call-1:code:1",
        "name": "safe_read",
        "arguments": {"id": "a"},
        "is_error": True,
        "content": text("Error: tool call aborted"),
        "agent": AGENT,
    }
    assert isinstance(await outcome(pending[0]), Rejected)


async def test_post_execute_and_contexts_commit_in_submission_order() -> None:
    """post-execute and context commitment stay in submission order under out-of-order completion"""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    post_order: list[str] = []

    def post(execution: Any, result: Any, next_: Any) -> Any:
        if execution.name != "safe_read":
            return next_()
        post_order.append(execution.call_id)
        return Accept(
            additional_contexts=[
                user_message(f"id-{execution.call_id}", f"ctx:{execution.call_id}", plugin="order-probe")
            ]
        )

    deployment.runtime.on("tools/post-execute", post)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        calls = [submit(request, "safe_read", {"id": "a"}), submit(request, "safe_read", {"id": "b"})]
        await eventually(lambda: gated.live == 2)
        gated.release("b")  # complete b FIRST, out of submission order
        await eventually(lambda: "end:b" in gated.order)
        await yield_to_scheduler()
        gated.release("a")
        await asyncio.gather(*calls)
        return CodeRunResult(value="ordered-commit")

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.is_error is False
    assert gated.order == ["start:a", "start:b", "end:b", "end:a"]
    assert post_order == ["call-1:code:1", "call-1:code:2"]
    assert [context["content"][0]["text"] for context in result.additional_contexts] == [
        "ctx:call-1:code:1",
        "ctx:call-1:code:2",
    ]
    assert sub_ids(session_events(deployment.log, SETTLE)) == ["call-1:code:1", "call-1:code:2"]


async def run_leaving_calls(
    deployment: Any, gated: Gated, ids: list[str], ending: CodeRunResult | BaseException, **options: Any
) -> tuple[Any, list[asyncio.Task[Any]]]:
    """Run a program that submits one ``gated`` call per id, waits until one of them runs, then ends
    with ``ending`` (raised when it is an exception); return the run's result and the submitted calls.
    """
    submitted: list[asyncio.Task[Any]] = []

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        for key in ids:
            submitted.append(submit(request, gated.name, {"id": key}))
        await eventually(lambda: gated.live == 1)
        if isinstance(ending, BaseException):
            raise ending
        return ending

    return await run_program(deployment, behavior, **options), submitted


async def test_a_queued_unstarted_call_abandoned_by_settlement_logs_nothing() -> None:
    """a queued-unstarted call abandoned by run settlement logs no start event"""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "writer", safe=False)
    # The first exclusive call occupies the lane; the second queues unstarted.
    result, submitted = await run_leaving_calls(
        deployment, gated, ["w1", "w2"], RuntimeError("program failed with a queued call"), agent=AGENT
    )

    assert result == failure("program failed with a queued call")
    assert sub_ids(session_events(deployment.log, START)) == ["call-1:code:1"]
    assert sub_ids(session_events(deployment.log, SETTLE)) == ["call-1:code:1"]
    assert gated.order == ["start:w1", "end:w1"]
    assert gated.aborted == ["w1"]
    assert await outcome(submitted[1]) == Rejected(
        "run_code run is over (run_code settled); writer tool call abandoned"
    )
    assert isinstance(await outcome(submitted[0]), Rejected)


async def test_a_call_in_flight_when_the_run_settles_rejects_as_result_discarded() -> None:
    """B7 step 5: once the run is over, a binding whose outcome arrives afterwards rejects with
    ``run_code run is over (<reason>); <name> result discarded`` — whether the sub-call succeeded or
    (as here, aborted by the settlement) failed."""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "writer", safe=False)
    result, submitted = await run_leaving_calls(
        deployment, gated, ["w1"], CodeRunResult(value="returned while w1 runs")
    )

    assert result.is_error is False
    assert await outcome(submitted[0]) == Rejected(
        "run_code run is over (run_code settled); writer result discarded"
    )


# =================================================================================================
# describe: the run_code dispatch bridge
# =================================================================================================


async def test_bridges_tool_calls_returns_the_curated_output_and_logs_each_dispatch() -> None:
    """bridges tool calls, returns only the curated output, and logs one event per dispatch"""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        first = await call(request, "echo", {"value": "one"})
        second = await call(request, "echo", {"value": "two"})
        assert isinstance(first, str)
        assert isinstance(second, str)
        return CodeRunResult(logs=(f"saw {first}",), value=second)

    result = await run_program(deployment, behavior, "const …: string = …", agent=AGENT)

    assert isinstance(result, ToolSuccess)
    assert result.value == {"logs": ["saw echo:one"], "result": "echo:two"}
    assert result.content == text("saw echo:one\necho:two")
    assert result.meta is None
    assert calls == [{"value": "one"}, {"value": "two"}]
    common = {"root_call_id": "call-1", "parent_call_id": "call-1", "name": "echo", "agent": AGENT}
    assert session_events(deployment.log, SETTLE) == [
        {
            **common,
            "sub_call_id": "call-1:code:1",
            "arguments": {"value": "one"},
            "is_error": False,
            "content": text("echo:one"),
        },
        {
            **common,
            "sub_call_id": "call-1:code:2",
            "arguments": {"value": "two"},
            "is_error": False,
            "content": text("echo:two"),
        },
    ]
    assert session_events(deployment.log, START) == [
        {**common, "sub_call_id": "call-1:code:1", "arguments": {"value": "one"}},
        {**common, "sub_call_id": "call-1:code:2", "arguments": {"value": "two"}},
    ]
    assert [event.type for event in deployment.log.events()] == [START, SETTLE, START, SETTLE]


async def test_sub_calls_carry_the_outer_root_call_id() -> None:
    """§4.1 item 1: nested executions and both dispatch events carry the outer call's ``root_call_id``
    (not the outer call id), while ``parent_call_id`` names the outer call."""
    deployment = setup_with_echo("code")
    nested: list[tuple[str, str]] = []
    deployment.runtime.on(
        "tools/result",
        lambda execution, result: (
            nested.append((execution.call_id, execution.root_call_id)) if execution.parent else None
        ),
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "echo", {"value": "x"})
        return CodeRunResult()

    await run_program(deployment, behavior, agent=AGENT, call_id="outer-2", root_call_id="root-7")

    assert nested == [("outer-2:code:1", "root-7")]
    for kind in (START, SETTLE):
        (event,) = session_events(deployment.log, kind)
        assert (event["root_call_id"], event["parent_call_id"], event["sub_call_id"]) == (
            "root-7",
            "outer-2",
            "outer-2:code:1",
        )


async def test_nested_observers_see_only_an_opaque_parent_token() -> None:
    """exposes only an opaque parent token to nested result observers

    Python adaptation of ``Object.freeze(exec.parent)``: the nested execution's ``parent`` is the
    outer execution's :class:`~toolrt.ExecutionToken` — an identity with no attributes — never the
    live outer execution, so a timeout-style wrapper can still swap and restore the outer signal.
    """
    deployment = setup_with_echo("code")
    outer_tokens: list[ExecutionToken] = []
    parents: list[Any] = []

    async def swap_signal(execution: Any, next_: Any) -> Any:
        if execution.name != RUN_CODE:
            return await next_()
        outer_tokens.append(execution.token)
        previous = execution.signal
        execution.signal = AbortController().signal
        try:
            return await next_()
        finally:
            execution.signal = previous

    deployment.runtime.on("tools/execute", swap_signal)
    deployment.runtime.on(
        "tools/result",
        lambda execution, result: parents.append(execution.parent) if execution.parent else None,
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "echo", {"value": "nested"})
        return CodeRunResult(value="done")

    result = await run_program(deployment, behavior, 'await tools.echo({ value: "nested" })')

    assert result.is_error is False
    assert result.content == text("done")
    assert len(parents) == 1
    assert type(parents[0]) is ExecutionToken
    assert parents[0] is outer_tokens[0]
    assert not hasattr(parents[0], "signal")
    with pytest.raises(AttributeError):
        parents[0].signal = AbortSignal()


async def test_a_nested_conclusion_is_forwarded_only_from_a_success() -> None:
    """forwards a nested terminal conclusion onto the successful run_code result"""
    deployment = setup("code")

    async def execute(args: Any, ctx: Any) -> str:
        ctx.conclude_turn()
        return "done"

    register_tool(deployment.runtime, "finalize", "Terminal tool.", execute)

    async def concluding(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "finalize", {})
        return CodeRunResult(value="program complete")

    concluded = await run_program(deployment, concluding, "await tools.finalize({})")
    assert isinstance(concluded, ToolSuccess)
    assert concluded.concludes_turn is True

    # A policy that turns the nested success into a failure strips the marker with it.
    veto = deployment.runtime.on(
        "tools/post-execute",
        lambda execution, result, next_: (
            Block(text("terminal rejected")) if execution.name == "finalize" else next_()
        ),
    )

    async def recovering(request: CodeRunRequest) -> CodeRunResult:
        settled = await outcome(call(request, "finalize", {}))
        assert settled == Rejected("terminal rejected")
        return CodeRunResult(value="recovered")

    recovered = await run_program(deployment, recovering, "await tools.finalize({}).catch(() => {})")
    veto()
    assert isinstance(recovered, ToolSuccess)
    assert recovered.concludes_turn is False


async def test_non_safe_calls_under_gather_never_overlap_and_run_in_submission_order() -> None:
    """serializes Promise.all dispatches: tool executions never overlap, in submission order"""
    deployment = setup("code")
    intervals: list[tuple[str, str]] = []
    active = 0
    overlapped: list[str] = []

    async def execute(args: Any, ctx: Any) -> str:
        nonlocal active
        active += 1
        if active != 1:
            overlapped.append(args["id"])
        intervals.append(("enter", args["id"]))
        await asyncio.sleep(0.02)
        intervals.append(("exit", args["id"]))
        active -= 1
        return str(args["id"])

    register_tool(
        deployment.runtime,
        "probe",
        "Records execution overlap.",
        execute,
        parameters={"id": {"type": "string", "required": True}},
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        values = await asyncio.gather(*(submit(request, "probe", {"id": key}) for key in "abc"))
        return CodeRunResult(value=",".join(values))

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert overlapped == []
    assert intervals == [
        ("enter", "a"),
        ("exit", "a"),
        ("enter", "b"),
        ("exit", "b"),
        ("enter", "c"),
        ("exit", "c"),
    ]
    assert result.content == text("a,b,c")


async def test_a_failing_tool_rejects_the_program_side_call_with_the_tool_error_text() -> None:
    """rejects the program-side call when the tool errors, with the tool error text"""
    deployment = setup("code")

    async def fail(args: Any, ctx: Any) -> Any:
        raise ToolrtError("deliberate failure", "DELIBERATE")

    deployment.runtime.register(content_tool(name="fail", description="Always fails.", execute=fail))

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        try:
            await call(request, "fail", {})
        except Exception as error:
            return CodeRunResult(value=f"caught: {error}")
        return CodeRunResult(value="unreachable")

    result = await run_program(deployment, behavior)

    # Only the message reaches the program: no "Error: " content prefix, no error code.
    assert result.content == text("caught: deliberate failure")


async def test_a_throwing_code_dispatch_log_listener_is_contained(caplog: pytest.LogCaptureFixture) -> None:
    """a throwing tools/code-dispatch-log listener is contained: the original settled content is logged"""
    deployment = setup_with_echo("code")

    def broken(entry: Any, next_: Any) -> Any:
        raise RuntimeError("log-content listener failed")

    deployment.runtime.on("tools/code-dispatch-log", broken)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(value=await call(request, "echo", {"value": "x"}))

    deployment.code.behavior = behavior
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await run_code(deployment.runtime, agent=AGENT)

    assert result.is_error is False
    assert result.content == text("echo:x")
    (settle,) = session_events(deployment.log, SETTLE)
    assert (settle["name"], settle["is_error"], settle["content"]) == ("echo", False, text("echo:x"))
    assert [record.getMessage() for record in caplog.records] == [
        "tools: code-dispatch-log listener failed for echo: log-content listener failed; "
        "logging the original settled content"
    ]


async def test_a_code_dispatch_log_listener_replaces_only_the_durable_copy() -> None:
    """B9: the ``tools/code-dispatch-log`` waterfall (the spill hook) decides the logged content; the
    program's value and the model-facing result are untouched."""
    deployment = setup_with_echo("code")
    seen: list[tuple[str, str, bool, Any]] = []

    async def spill(entry: Any, next_: Any) -> Any:
        original = await next_()
        seen.append((entry.sub_call_id, entry.name, entry.is_error, original))
        return text("preview: stored elsewhere")

    deployment.runtime.on("tools/code-dispatch-log", spill)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(value=await call(request, "echo", {"value": "x"}))

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.content == text("echo:x")
    assert seen == [("call-1:code:1", "echo", False, text("echo:x"))]
    (settle,) = session_events(deployment.log, SETTLE)
    assert settle["content"] == text("preview: stored elsewhere")


def hold_dispatch_log(runtime: Any) -> asyncio.Event:
    """Park every ``tools/code-dispatch-log`` write until the returned event is set."""
    log_gate = asyncio.Event()

    async def slow_spill(entry: Any, next_: Any) -> Any:
        await log_gate.wait()
        return await next_()

    runtime.on("tools/code-dispatch-log", slow_spill)
    return log_gate


async def test_settle_events_are_written_off_the_programs_path_but_before_run_code_returns() -> None:
    """B9 / B10: a slow ``tools/code-dispatch-log`` listener never delays the program's value, yet the
    run's settlement waits for every log write, so the settle event exists when ``run_code`` returns."""
    deployment = setup_with_echo("code")
    log_gate = hold_dispatch_log(deployment.runtime)
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        value = await call(request, "echo", {"value": "x"})
        observed["settles logged when the value arrived"] = len(session_events(deployment.log, SETTLE))
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, log_gate.set)
        return CodeRunResult(value=value)

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.content == text("echo:x")
    assert observed == {"settles logged when the value arrived": 0}
    (settle,) = session_events(deployment.log, SETTLE)
    assert settle["content"] == text("echo:x")


async def test_pending_log_writes_beyond_the_cap_hold_back_later_starts() -> None:
    """B8 backpressure: after a commit, while more log writes are pending than
    ``max_parallel_sub_calls``, the lane waits — later sub-calls do not start."""
    deployment = setup_with_echo("code", max_parallel_sub_calls=1)
    log_gate = hold_dispatch_log(deployment.runtime)
    observed: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "echo", {"value": "1"})
        await call(request, "echo", {"value": "2"})  # resolved before its commit waits on the logs
        third = submit(request, "echo", {"value": "3"})
        await yield_to_scheduler()
        observed["starts while two writes pend"] = len(session_events(deployment.log, START))
        log_gate.set()
        observed["third"] = await outcome(third)
        return CodeRunResult()

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.is_error is False
    assert observed == {"starts while two writes pend": 2, "third": Resolved("echo:3")}
    assert sub_ids(session_events(deployment.log, SETTLE)) == [
        "call-1:code:1",
        "call-1:code:2",
        "call-1:code:3",
    ]


async def test_a_throwing_pre_execute_listener_settles_the_sub_call_without_post_execute() -> None:
    """a throwing tools/pre-execute listener settles the sub-call without post-execute"""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)
    post_executed: list[str] = []

    def pre(execution: Any, next_: Any) -> Any:
        if execution.name == "echo":
            raise RuntimeError("gate exploded")
        return next_()

    def post(execution: Any, result: Any, next_: Any) -> Any:
        if execution.name == "echo":
            post_executed.append(execution.name)
        return next_()

    deployment.runtime.on("tools/pre-execute", pre)
    deployment.runtime.on("tools/post-execute", post)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        settled = await outcome(call(request, "echo", {"value": "x"}))
        return CodeRunResult(value=settled.message if isinstance(settled, Rejected) else "resolved")

    result = await run_program(deployment, behavior, agent=AGENT)

    assert isinstance(result, ToolSuccess)
    assert result.value == {"logs": [], "result": "gate exploded"}
    assert calls == []
    assert post_executed == []
    (settle,) = session_events(deployment.log, SETTLE)
    assert (settle["name"], settle["is_error"], settle["content"]) == (
        "echo",
        True,
        text("Error: gate exploded"),
    )


async def test_a_pre_execute_denial_reaches_the_program_as_a_binding_rejection() -> None:
    """a tools/pre-execute deny reaches the program as a binding rejection"""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)
    deployment.runtime.on(
        "tools/pre-execute",
        lambda execution, next_: Deny("not on my watch") if execution.name == "echo" else next_(),
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        try:
            await call(request, "echo", {"value": "x"})
        except Exception as error:
            return CodeRunResult(value=f"denied: {error}")
        return CodeRunResult(value="unreachable")

    result = await run_program(deployment, behavior)

    assert result.content == text("denied: not on my watch")
    assert calls == []


async def test_a_non_lossless_binding_argument_is_rejected_and_nothing_dispatched() -> None:
    """rejects a binding argument that is not lossless JSON, dispatching nothing

    ``BigInt`` becomes an integer JavaScript cannot read back exactly (``2**53 + 1``).
    """
    deployment = setup("code")
    calls = register_echo(deployment.runtime)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        settled = await outcome(call(request, "echo", {"value": "x", "big": 2**53 + 1}))
        return CodeRunResult(value=settled.message if isinstance(settled, Rejected) else "resolved")

    result = await run_program(deployment, behavior, agent=AGENT)

    assert "lossless JSON" in only_text(result)
    assert calls == []
    assert deployment.log.events() == ()


async def test_dispatch_and_log_get_independent_snapshots_of_the_same_value() -> None:
    """dispatches and logs independent snapshots of the same lossless JSON value

    Python adaptation of the null-prototype object: a dict subclass holding a tuple is accepted,
    and both the tool and the log see plain JSON (a ``dict`` with a list); mutating the program's
    object afterwards changes neither.
    """
    deployment = setup("code")
    calls = register_echo(deployment.runtime)
    sent: OrderedDict[str, Any] = OrderedDict(value="x", nested=("same",))

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "echo", sent)
        sent["value"] = "mutated after the call"
        return CodeRunResult()

    await run_program(deployment, behavior, agent=AGENT)

    assert calls == [{"value": "x", "nested": ["same"]}]
    (settle,) = session_events(deployment.log, SETTLE)
    assert settle["arguments"] == {"value": "x", "nested": ["same"]}
    assert type(settle["arguments"]) is dict
    assert type(settle["arguments"]["nested"]) is list


async def test_sub_call_contexts_are_deferred_onto_the_outer_result() -> None:
    """defers sub-call additionalContexts onto the outer run_code result"""
    deployment = setup_with_echo("code")
    deployment.runtime.on(
        "tools/post-execute",
        lambda execution, result, next_: (
            Accept(
                additional_contexts=[
                    user_message(f"id-{execution.call_id}", f"context for {execution.call_id}", plugin="test")
                ]
            )
            if execution.name == "echo"
            else next_()
        ),
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "echo", {"value": "x"})
        await call(request, "echo", {"value": "y"})
        return CodeRunResult(value="done")

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert result.additional_contexts == [
        {
            "id": "id-call-1:code:1",
            "role": "user",
            "content": text("context for call-1:code:1"),
            "source": {"kind": "plugin", "plugin": "test"},
        },
        {
            "id": "id-call-1:code:2",
            "role": "user",
            "content": text("context for call-1:code:2"),
            "source": {"kind": "plugin", "plugin": "test"},
        },
    ]


async def test_sub_call_contexts_survive_a_later_program_failure() -> None:
    """keeps sub-call contexts when run_code fails after the nested dispatch"""
    deployment = setup_with_echo("both")
    deployment.runtime.on(
        "tools/post-execute",
        lambda execution, result, next_: (
            Accept(additional_contexts=[user_message("nested-1", "nested context", plugin="test")])
            if execution.name == "echo"
            else next_()
        ),
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "echo", {"value": "x"})
        return CodeRunResult(error=CodeRunError("exception", "program failed later"))

    result = await run_program(deployment, behavior)

    assert result.is_error is True
    assert only_text(result) == "Error: code run failed (exception): program failed later"
    assert result.additional_contexts == [
        {
            "id": ANY,
            "role": "user",
            "content": text("nested context"),
            "source": {"kind": "plugin", "plugin": "test"},
        }
    ]


async def test_a_failed_run_is_a_structured_error_with_kind_message_and_logs() -> None:
    """converts a failed run into a structured isError result carrying kind, message, and captured logs"""
    deployment = setup("code")

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(
            logs=("got this far",), error=CodeRunError("timeout", "compute budget exhausted (300ms busy)")
        )

    result = await run_program(deployment, behavior)

    assert result == failure(
        "code run failed (timeout): compute budget exhausted (300ms busy)\nCaptured output:\ngot this far",
        "CodeRunFailedError",
        "CODE_RUN_FAILED",
    )


async def test_a_failed_run_without_logs_has_no_captured_output_section() -> None:
    """B10: the ``Captured output`` suffix appears only when the run printed something."""
    deployment = setup("code")

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(value="ignored", error=CodeRunError("memory-limit", "heap exhausted"))

    result = await run_program(deployment, behavior)

    assert result == failure(
        "code run failed (memory-limit): heap exhausted", "CodeRunFailedError", "CODE_RUN_FAILED"
    )


def test_code_run_failed_error_is_a_harness_error_with_its_code() -> None:
    """CodeRunFailedError is a ToolrtError with the CODE_RUN_FAILED code"""
    error = CodeRunFailedError("boom")

    assert isinstance(error, ToolrtError)
    assert error.code == "CODE_RUN_FAILED"
    assert error.name == "CodeRunFailedError"
    assert str(error) == "boom"


async def test_an_outer_abort_aborts_the_in_flight_call_and_abandons_queued_ones() -> None:
    """aborting the outer signal aborts the in-flight sub-dispatch and abandons queued ones"""
    deployment = setup("code")
    slow = Gated(deployment.runtime, "slow", safe=False)
    controller = AbortController()
    settled: list[Any] = []

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        calls = [submit(request, "slow", {"id": "first"}), submit(request, "slow", {"id": "second"})]
        await eventually(lambda: slow.live == 1)
        controller.abort("user-cancel")
        settled.extend([await outcome(task) for task in calls])
        # A real runtime is terminated by the abort; the fake reports it as the run failure.
        return CodeRunResult(error=CodeRunError("abort", "user-cancel"))

    result = await run_program(deployment, behavior, signal=controller.signal)

    assert result.is_error is True
    assert only_text(result) == "Error: code run failed (abort): user-cancel"
    assert slow.order == ["start:first", "end:first"]
    assert slow.aborted == ["first"]
    assert isinstance(settled[0], Rejected)
    assert settled[1] == Rejected("run_code run is over (user-cancel); slow tool call abandoned")


async def test_a_runtime_that_raises_after_starting_a_call_still_drains_before_returning() -> None:
    """a runtime that starts a binding call and then REJECTS still reaches quiescence before returning"""
    deployment = setup("code")
    slow = Gated(deployment.runtime, "slow", safe=False)
    result, orphans = await run_leaving_calls(
        deployment, slow, ["orphan"], RuntimeError("backend exploded"), agent=AGENT
    )

    # Quiescence held: the in-flight call was aborted and logged INSIDE the run_code execution.
    assert result == failure("backend exploded")
    assert slow.aborted == ["orphan"]
    assert [event["name"] for event in session_events(deployment.log, SETTLE)] == ["slow"]
    assert isinstance(await outcome(orphans[0]), Rejected)


@pytest.mark.parametrize("agent", [None, "unbound-agent"])
async def test_runs_without_a_logging_agent_dispatch_but_log_nothing(agent: str | None) -> None:
    """runs without an owning agent: dispatches work, event logging is skipped

    §4.1 item 7: events need an agent — and, in Python, a session bound for it.
    """
    deployment = setup("code")
    calls = register_echo(deployment.runtime)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "echo", {"value": "x"})
        return CodeRunResult(value="ok")

    result = await run_program(deployment, behavior, agent=agent)

    assert result.is_error is False
    assert result.content == text("ok")
    assert calls == [{"value": "x"}]
    assert deployment.log.events() == ()


async def test_executing_run_code_without_a_runtime_is_a_structured_error() -> None:
    """Issue 12 item 4 (was: a structured isError at the first run_code): the missing runtime is
    refused at construction, so no model ever reads it."""
    with pytest.raises(ValueError) as raised:
        ToolRuntime(mode="code")
    message = str(raised.value)
    assert message.startswith('ToolRuntime(mode="code") requires a code runtime')
    assert "ToolRuntime(code_runtime=...)" in message


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ("   ", "invalid description: expected a non-empty string"),
        ("\t\n", "invalid description: expected a non-empty string"),
        (None, 'invalid arguments: missing required property "description"'),
    ],
)
async def test_a_blank_or_missing_description_is_a_structured_error(
    description: str | None, message: str
) -> None:
    """rejects a whitespace-only description with a structured isError (and B4's missing description)"""
    deployment = setup("code")

    result = await run_code(deployment.runtime, "return 1", description=description)

    assert result.is_error is True
    assert only_text(result) == f"Error: {message}"
    assert deployment.code.requests == []


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        pytest.param(CodeRunResult(logs=("printed",)), "printed", id="logs only"),
        pytest.param(CodeRunResult(value="returned"), "returned", id="result only"),
        pytest.param(
            CodeRunResult(logs=("printed",), value="returned"), "printed\nreturned", id="logs plus result"
        ),
        pytest.param(CodeRunResult(), NO_OUTPUT, id="no output"),
        pytest.param(CodeRunResult(value=""), NO_OUTPUT, id="empty string result"),
        pytest.param(CodeRunResult(logs=("",)), NO_OUTPUT, id="one empty log line"),
        pytest.param(CodeRunResult(logs=("", "")), "\n", id="two empty log lines"),
        pytest.param(CodeRunResult(logs=("a", "b"), value=None), "a\nb\nnull", id="logs plus null"),
    ],
)
async def test_keeps_the_output_in_durable_content_without_a_result_presenter(
    run: CodeRunResult, expected: str
) -> None:
    """keeps %s in durable content without a result presenter (plus §4.1 item 10's empty edges)"""
    deployment = setup("code")

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return run

    result = await run_program(deployment, behavior, "return 1")
    definition = deployment.runtime.get(RUN_CODE)

    assert result.content == text(expected)
    assert definition is not None
    assert definition.present_result is None


async def test_a_post_policy_spill_preview_is_the_durable_content() -> None:
    """keeps a post-policy spill preview in durable content without a result presenter"""
    deployment = setup("code")
    preview = "HEAD\n\n(Omitted 100 bytes. Full formatted result stored at: /tmp/run-code.txt.)\n\nTAIL"

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(logs=("printed",), value="returned")

    deployment.code.behavior = behavior
    deployment.runtime.on(
        "tools/post-execute",
        lambda execution, result, next_: (
            Accept(content=text(preview)) if execution.name == RUN_CODE else next_()
        ),
    )

    result = await run_code(deployment.runtime, "return 1")

    assert isinstance(result, ToolSuccess)
    assert result.content == text(preview)
    assert result.value == {"logs": ["printed"], "result": "returned"}
    assert deployment.runtime.get(RUN_CODE).present_result is None  # type: ignore[union-attr]


async def test_canonical_failure_content_is_durable() -> None:
    """keeps canonical failure content durable without a result presenter"""
    deployment = setup("code")

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(
            logs=("captured before failure",),
            error=CodeRunError("output-limit", "outer output exceeded 8 bytes"),
        )

    result = await run_program(deployment, behavior, "return 1")

    assert result.is_error is True
    assert result.content == text(
        "Error: code run failed (output-limit): outer output exceeded 8 bytes\n"
        "Captured output:\ncaptured before failure"
    )
    assert result.error.info is not None
    assert (result.error.info.name, result.error.info.code) == ("CodeRunFailedError", "CODE_RUN_FAILED")
    assert deployment.runtime.get(RUN_CODE).present_result is None  # type: ignore[union-attr]


async def test_logs_the_complete_sub_result_content_verbatim() -> None:
    """logs the complete sub-result content verbatim, non-text blocks and long text included"""
    deployment = setup("code")
    long = "x" * 300

    async def execute(args: Any, ctx: Any) -> str:
        return "mixed-value"

    deployment.runtime.register(
        define_tool(
            name="mixed",
            description="Returns mixed content.",
            parameters={},
            output={
                "schema": {"type": "string"},
                "render": lambda _args, _value: [
                    {"type": "text", "text": long},
                    {"type": "reasoning", "text": "hidden"},
                ],
            },
            execute=execute,
        )
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(value=await call(request, "mixed", {}))

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.is_error is False
    assert result.content == text("mixed-value")
    (settle,) = session_events(deployment.log, SETTLE)
    assert settle["content"] == [{"type": "text", "text": long}, {"type": "reasoning", "text": "hidden"}]


class _Unconvertible(int):
    """An int whose conversion raises: its lossless snapshot throws (the throwing-getter analogue)."""

    def __int__(self) -> int:
        raise RuntimeError("error-throw")


class _ThrowingItems(dict):  # type: ignore[type-arg]
    """A dict subclass whose ``items()`` raises (the brief's throwing-accessor analogue)."""

    def items(self) -> Any:
        raise RuntimeError("items-throw")


def _cycle() -> dict[str, Any]:
    looped: dict[str, Any] = {"value": "x"}
    looped["self"] = looped
    return looped


UNREPRESENTABLE = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"


async def test_unrepresentable_and_throwing_binding_arguments_are_rejected_before_dispatch() -> None:
    """rejects undefined, getter-throwing, exotic, and unrepresentable binding arguments before dispatch

    Rejected calls dispatch nothing, log nothing and take no sub-call number (§4.1 item 9): the next
    valid call is ``call-1:code:1``.
    """
    deployment = setup("code")
    calls = register_echo(deployment.runtime)
    unrepresentable: list[Any] = [
        {1, 2},
        object(),
        {"value": float("nan")},
        {"value": -0.0},
        {"value": 2**53 + 1},
        _cycle(),
        {1: "non-string key"},
        b"bytes",
    ]
    messages: list[Any] = []

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        for arguments in unrepresentable:
            messages.append(await outcome(call(request, "echo", arguments)))
        messages.append(await outcome(call(request, "echo", {"value": _Unconvertible(1)})))
        messages.append(await outcome(call(request, "echo", {"value": "valid"})))
        return CodeRunResult()

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.is_error is False
    assert messages == [
        *[Rejected(UNREPRESENTABLE)] * len(unrepresentable),
        Rejected("tool arguments must be lossless JSON: error-throw"),
        Resolved("echo:valid"),
    ]
    assert calls == [{"value": "valid"}]
    assert sub_ids(session_events(deployment.log, START)) == ["call-1:code:1"]
    assert sub_ids(session_events(deployment.log, SETTLE)) == ["call-1:code:1"]


async def test_a_dict_subclass_is_snapshotted_from_its_stored_entries_not_its_overrides() -> None:
    """Python adaptation of the throwing-getter case (decision 0002): a snapshot reads a dict's own
    stored entries once, never its overridable ``items()``, so an object cannot show one thing to
    validation and another to the log. The throwing analogue is the ``int`` subclass test above."""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        settled = await outcome(call(request, "echo", _ThrowingItems(value="x")))
        return CodeRunResult(value=settled.message if isinstance(settled, Rejected) else "resolved")

    result = await run_program(deployment, behavior)

    assert result.content == text("resolved")
    assert calls == [{"value": "x"}]


async def test_binding_arguments_deeper_than_the_recursion_limit_dispatch_and_log() -> None:
    """dispatches and durably logs binding arguments deeper than the structured-clone call stack"""
    deployment = setup("code")
    depth = 5_000
    observed: dict[str, Any] = {}

    def measure(value: Any) -> tuple[int, Any]:
        levels = 0
        while isinstance(value, list):
            assert len(value) == 1
            levels += 1
            value = value[0]
        return levels, value

    async def execute(args: Any, ctx: Any) -> int:
        observed["depth"], observed["leaf"] = measure(args["nested"])
        return int(observed["depth"])

    register_tool(
        deployment.runtime,
        "deep_args",
        "Measure a deeply nested JSON argument.",
        execute,
        parameters={"nested": {"type": "json", "required": True}},
        output="integer",
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        nested: Any = "leaf"
        for _ in range(depth):
            nested = [nested]
        return CodeRunResult(value=await call(request, "deep_args", {"nested": nested}))

    result = await run_program(deployment, behavior, "return tools.deep_args(...)", agent=AGENT)

    assert isinstance(result, ToolSuccess)
    assert result.value == {"logs": [], "result": depth}
    assert observed == {"depth": depth, "leaf": "leaf"}
    (settle,) = [event for event in deployment.log.events() if event.type == SETTLE]
    assert measure(settle.data["arguments"]["nested"]) == (depth, "leaf")


async def test_the_tool_and_the_log_share_one_immutable_argument_value() -> None:
    """gives the tool and durable log the same immutable argument value"""
    deployment = setup("code")
    attempts: list[str] = []

    async def execute(args: Any, ctx: Any) -> Any:
        try:
            args["list"][0] = "injected-by-tool"
            attempts.append("mutated")
        except TypeError:
            attempts.append("refused")
        try:
            args["list"].append("injected-by-tool")
            attempts.append("mutated")
        except TypeError:
            attempts.append("refused")
        return text("protected")

    deployment.runtime.register(
        content_tool(
            name="mutator",
            description="Attempts to mutate its args object.",
            parameters={"list": {"type": "array", "required": True}},
            execute=execute,
        )
    )

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "mutator", {"list": ["original"]})
        return CodeRunResult()

    result = await run_program(deployment, behavior, agent=AGENT)

    assert result.is_error is False
    assert attempts == ["refused", "refused"]
    (settle,) = session_events(deployment.log, SETTLE)
    assert settle["arguments"] == {"list": ["original"]}


@pytest.mark.parametrize("name", ["__proto__", "__class__", "items", "get"])
async def test_a_tool_with_an_exotic_name_is_an_ordinary_binding(name: str) -> None:
    """exposes a tool named __proto__ as an ordinary own binding

    Python adaptation: names that collide with object or mapping attributes are ordinary keys too.
    """
    deployment = setup("code")

    async def execute(args: Any, ctx: Any) -> str:
        return "proto-tool-ok"

    register_tool(deployment.runtime, name, "A prototype-colliding tool name.", execute)

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        assert sorted(functions(request)) == [name]
        return CodeRunResult(value=await call(request, name, {}))

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert result.content == text("proto-tool-ok")


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ({"n": 42, "ok": True}, '{\n  "n": 42,\n  "ok": true\n}'),
        ({}, "{}"),
        ({"outer": [{"inner": True}]}, '{\n  "outer": [\n    {\n      "inner": true\n    }\n  ]\n}'),
        (["x", 2], '[\n  "x",\n  2\n]'),
        ([], "[]"),
        (None, "null"),
        ("raw", "raw"),
        ("", NO_OUTPUT),
        (0, "0"),
        (False, "false"),
        ({"empty": [], "also": {}}, '{\n  "empty": [],\n  "also": {}\n}'),
        # JavaScript number and string spelling (contract JS1–JS2).
        (
            {"n": 1.0, "big": 1e21, "tiny": 1e-7, "half": 0.5},
            '{\n  "n": 1,\n  "big": 1e+21,\n  "tiny": 1e-7,\n  "half": 0.5\n}',
        ),
        (['say "hi"\n', "é/\u2028"], '[\n  "say \\"hi\\"\\n",\n  "é/\u2028"\n]'),
        # Containers at depth >= 5 render compact.
        (
            [[[[[[1, 2]]]]]],
            "[\n  [\n    [\n      [\n        [\n          [1,2]\n        ]\n      ]\n    ]\n  ]\n]",
        ),
        (
            [[[[[{"k": {"v": 1}, "arr": [0]}]]]]],
            '[\n  [\n    [\n      [\n        [\n          {"k":{"v":1},"arr":[0]}'
            "\n        ]\n      ]\n    ]\n  ]\n]",
        ),
    ],
)
async def test_non_string_results_render_as_pretty_json_and_strings_raw(value: Any, rendered: str) -> None:
    """renders every non-string JSON root as pretty JSON while preserving strings raw"""
    deployment = setup("code")

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(value=value)

    result = await run_program(deployment, behavior)

    assert isinstance(result, ToolSuccess)
    assert result.content == text(rendered)
    assert result.value == {"logs": [], "result": value}


async def test_no_return_value_keeps_result_absent_and_null_present() -> None:
    """renders every non-string JSON root … (the no-value case): ``result`` is omitted iff the program
    returned nothing; a returned ``None`` is kept (contract JS4)."""
    deployment = setup("code")

    async def nothing(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult()

    async def null(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(value=None)

    absent = await run_program(deployment, nothing, "undefined")
    present = await run_program(deployment, null, "null")

    assert isinstance(absent, ToolSuccess)
    assert absent.content == text(NO_OUTPUT)
    assert absent.value == {"logs": []}
    assert isinstance(present, ToolSuccess)
    assert present.value == {"logs": [], "result": None}
    assert present.content == text("null")


async def test_deeply_nested_results_render_iteratively_in_linear_size() -> None:
    """renders deeply nested JSON without recursive traversal or quadratic indentation"""
    deployment = setup("code")
    value: Any = {
        "emptyArray": [],
        "emptyObject": {},
        "pair": ["leaf", 2],
        "record": {"first": True, "second": None},
    }
    for _ in range(5_000):
        value = [value]

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        return CodeRunResult(value=value)

    result = await run_program(deployment, behavior, "deep result")

    assert result.is_error is False
    rendered = only_text(result)
    assert rendered.startswith("[\n  [\n    [")
    assert '"leaf"' in rendered
    assert rendered.endswith("]")
    assert len(rendered) < 11_000


async def test_a_pre_aborted_outer_signal_never_reaches_the_code_runtime() -> None:
    """short-circuits a pre-aborted outer signal before the code runtime"""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)

    result = await run_code(deployment.runtime, signal=AbortSignal.aborted_with("too-late"))

    assert result == failure("tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH")
    assert deployment.code.requests == []
    assert calls == []


async def test_cancellation_is_reported_after_a_late_binding_is_rejected_undispatched() -> None:
    """reports cancellation after rejecting a late binding without dispatching it"""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)
    controller = AbortController()
    late: list[Any] = []

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        controller.abort("cancelled-mid-run")
        late.append(await outcome(call(request, "echo", {"value": "x"})))
        return CodeRunResult(value="returned anyway")

    result = await run_program(deployment, behavior, signal=controller.signal, agent=AGENT)

    assert result == failure("tool call aborted", "AbortError", "ABORTED")
    assert late == [Rejected("run_code run is over (cancelled-mid-run); echo not dispatched")]
    assert calls == []
    assert deployment.log.events() == ()


async def test_a_binding_called_after_its_run_settled_is_not_dispatched() -> None:
    """B7 step 1 / §4.1 item 9: a binding kept past its run rejects without dispatch or numbering."""
    deployment = setup("code")
    calls = register_echo(deployment.runtime)
    kept: list[CodeRunRequest] = []

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        kept.append(request)
        return CodeRunResult()

    await run_program(deployment, behavior, agent=AGENT)

    late = await outcome(call(kept[0], "echo", {"value": "late"}))

    assert late == Rejected("run_code run is over (run_code settled); echo not dispatched")
    assert calls == []
    assert deployment.log.events() == ()


def test_a_code_dispatch_event_never_derives_a_model_message() -> None:
    """a tool/code-dispatch event never derives a model message"""
    log = SessionLog.in_memory()
    log.append(*model_user_event("hi"))
    dispatch = {
        "root_call_id": "p1",
        "parent_call_id": "p1",
        "sub_call_id": "p1:code:1",
        "name": "echo",
        "arguments": {"value": "x"},
    }
    log.append(*code_dispatch_start_event(**dispatch))
    log.append(*code_dispatch_event(**dispatch, is_error=False, content=text("echo:x")))

    derived = derive_messages(log.events())

    assert len(derived) == 1
    assert isinstance(derived[0], UserMessage)
    assert derived[0].content == text("hi")


async def test_each_sub_call_resolves_its_tool_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A binding call is resolved once (classification, policy, the body and the commit share it):
    one view read per sub-call, whichever lane runs it (the first takes the fast lane)."""
    deployment = setup("code")
    gated = Gated(deployment.runtime, "safe_read", safe=True)
    registry = deployment.runtime._registry
    views: list[Any] = []
    resolves: list[Any] = []
    view, resolve = registry.view, registry.resolve_execution

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        monkeypatch.setattr(registry, "view", lambda key: views.append(key) or view(key))
        monkeypatch.setattr(
            registry, "resolve_execution", lambda *args: resolves.append(args) or resolve(*args)
        )
        calls = [submit(request, "safe_read", {"id": key}) for key in "abc"]
        await eventually(lambda: gated.live == 3)
        gated.release_all()
        return CodeRunResult(value=",".join(await asyncio.gather(*calls)))

    result = await run_program(deployment, behavior)

    assert result.is_error is False
    assert len(views) == 3
    assert resolves == []


def test_code_mode_makes_the_same_dispatch_events_the_loop_knows() -> None:
    """Code Mode builds its two log events itself (it never imports the loop); they are the loop's
    ``tool/code-dispatch-start`` / ``tool/code-dispatch`` events, type and data alike."""
    from toolrt.codemode import _dispatch_log

    dispatch = {
        "root_call_id": "p1",
        "parent_call_id": "p1",
        "sub_call_id": "p1:code:1",
        "name": "echo",
        "arguments": {"value": "x"},
        "agent": "a",
    }
    settled = {**dispatch, "is_error": False, "content": text("echo:x")}

    assert _dispatch_log.code_dispatch_start_event(**dispatch) == tuple(code_dispatch_start_event(**dispatch))
    assert _dispatch_log.code_dispatch_event(**settled) == tuple(code_dispatch_event(**settled))
    assert list(_dispatch_log.code_dispatch_event(**settled)[1]) == list(code_dispatch_event(**settled).data)


# --- human time and the bounded drain (issue 12 items 3 and 8) ------------------------------------


async def test_each_run_hands_its_clock_to_the_runtime_and_pauses_it_while_a_sub_call_awaits_approval() -> (
    None
):
    from code_mode_fakes import FakeRuntime
    from toolrt import Ask
    from toolrt.codemode import RunClock
    from toolrt.policies import Approvals

    approvals = Approvals()
    paused_while_asked: list[bool] = []
    clocks: list[Any] = []

    async def person(request: Any, next: Any) -> str:
        paused_while_asked.append(clocks[0].paused)
        await asyncio.sleep(0.05)
        return "allowed-once"

    approvals.answerer(person)
    fake = FakeRuntime()
    runtime = ToolRuntime(mode="code", code_runtime=fake, approval=approvals)
    register_echo(runtime)
    runtime.on("tools/pre-execute", lambda execution, next: Ask("check") if execution.parent else next())

    async def program(request: CodeRunRequest) -> CodeRunResult:
        clocks.append(request.clock)
        value = await call(request, "echo", {"value": "hi"})
        return CodeRunResult(logs=(str(value),))

    fake.behavior = program
    result = await runtime.call("run_code", {"code": "p", "description": "d"}, agent=AGENT)
    assert not result.is_error, result.content
    assert isinstance(clocks[0], RunClock)
    assert paused_while_asked == [True]
    assert not clocks[0].paused and clocks[0].paused_seconds() >= 0.04


async def test_cancelling_run_code_drains_its_sub_calls_for_the_grace_at_most_and_finishes_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from code_mode_fakes import FakeRuntime
    from toolrt.loop._agent import Agent
    from toolrt.loop._messages import AssistantMessage, ToolCall
    from toolrt.loop._scripted_model import ScriptedModel
    from toolrt.policies import install_default_deadline

    fake = FakeRuntime()
    runtime = ToolRuntime(mode="code", code_runtime=fake)
    install_default_deadline(runtime, grace_ms=40)
    started = asyncio.Event()
    finished = asyncio.Event()

    async def stubborn(args: Any, ctx: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()  # ignores the run's signal
        finally:
            try:
                await asyncio.sleep(0.6)  # and cleans up for far longer than the grace
            finally:
                finished.set()
        return "never"

    register_tool(runtime, "stubborn", "Ignores its signal.", stubborn)

    async def program(request: CodeRunRequest) -> CodeRunResult:
        await call(request, "stubborn", {})
        return CodeRunResult()

    fake.behavior = program
    model = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall("r1", "run_code", '{"code":"p","description":"d"}'),)), "ok"]
    )
    agent = Agent(runtime, model)
    task = asyncio.ensure_future(agent.run_turn("go"))
    await started.wait()
    loop = asyncio.get_running_loop()
    began = loop.time()
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert loop.time() - began < 0.45  # bounded by the grace, not by the cleanup
    assert not finished.is_set()
    events = agent.session.events()
    starts = [e.data["sub_call_id"] for e in events if e.type == "tool/code-dispatch-start"]
    settled = [e.data["sub_call_id"] for e in events if e.type == "tool/code-dispatch"]
    assert starts == settled == ["r1:code:1"]
    assert [e.data["call_id"] for e in events if e.type == "tool/result"] == ["r1"]
    assert events[-1].type == "turn/end"
    assert any("sub-calls still running" in record.getMessage() for record in caplog.records)
    await asyncio.wait_for(finished.wait(), 5)
    assert (await agent.run_turn("again")).reason == "stop"
