"""One ``execute_tool`` span per call, whatever happens to it (contract OT1-OT5, OT8).

Bad input first: ``instrument`` refuses a wrong argument before it touches the runtime, and a
runtime that is not instrumented, or no longer is, emits nothing. Then the span of a success, of
every failure kind, of policy outcomes as events, of cancellation, payloads, and the metrics.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_support import BrokenProvider, Telemetry, events

from toolrt import AbortController, Ask, Deny, ToolrtError, ToolRunContext, ToolRuntime, tool
from toolrt.otel import CALLS, DURATION, ERRORS, instrument
from toolrt.policies import Approvals

AGENT = "agent-1"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def boom() -> int:
    """Fail with a plain exception."""
    raise ValueError("the disk is on fire")


@tool
async def coded() -> int:
    """Fail with a toolrt error code of its own."""
    raise ToolrtError("no space left", "ENOSPC")


async def until_aborted(ctx: ToolRunContext) -> None:
    """Wait until the call's signal fires (a cooperative body: the test never waits out a grace)."""
    fired = asyncio.Event()
    loop = asyncio.get_running_loop()
    remove = ctx.signal.add_callback(lambda reason: loop.call_soon_threadsafe(fired.set))
    try:
        await fired.wait()
    finally:
        remove()


@tool(timeout_ms=30)
async def slow(ctx: ToolRunContext) -> int:
    """Take longer than its deadline."""
    await until_aborted(ctx)
    return 1


@tool
async def wrong_output() -> int:
    """Return what the output schema refuses."""
    return "not a number"  # type: ignore[return-value]


@tool
async def hang(ctx: ToolRunContext) -> int:
    """Wait until its signal fires or its task is cancelled."""
    await until_aborted(ctx)
    return 1


@tool
async def big() -> str:
    """Return more than the output budget."""
    return "x" * 5_000


def traced(telemetry: Telemetry, **options: Any) -> ToolRuntime:
    runtime = ToolRuntime(**options)
    for definition in (add, boom, coded, slow, wrong_output, hang, big):
        runtime.register(definition)
    instrument(runtime, tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider)
    return runtime


# --- bad input and "off" ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"max_payload_chars": 0}, ValueError),
        ({"max_payload_chars": True}, ValueError),
        ({"max_payload_chars": "100"}, ValueError),
        ({"capture_payloads": "yes"}, TypeError),
    ],
)
def test_bad_options_are_refused_and_leave_the_runtime_untraced(
    telemetry: Telemetry, options: dict[str, Any], error: type[Exception]
) -> None:
    """OT1: a wrong argument raises before anything is installed."""
    runtime = ToolRuntime()
    with pytest.raises(error, match=r"max_payload_chars|capture_payloads"):
        instrument(runtime, tracer_provider=telemetry.tracer_provider, **options)
    assert runtime.stages.observer is None


@pytest.mark.parametrize("target", [None, "runtime", object()])
def test_only_a_runtime_can_be_instrumented(telemetry: Telemetry, target: Any) -> None:
    """OT1: anything but a ToolRuntime is a TypeError that names what it got."""
    with pytest.raises(TypeError, match=r"instrument\(\) takes a ToolRuntime, got "):
        instrument(target, tracer_provider=telemetry.tracer_provider)


async def test_an_uninstrumented_runtime_emits_nothing(telemetry: Telemetry) -> None:
    """OT1: no tracer installed, no span and no metric, for successes and failures alike."""
    runtime = ToolRuntime()
    runtime.register(add)
    await runtime.call("add", {"a": 1, "b": 2})
    await runtime.call("add", {"a": "one", "b": 2})
    assert runtime.stages.observer is None
    assert telemetry.spans() == []
    assert telemetry.points(CALLS) == []


async def test_uninstrument_stops_tracing_and_is_idempotent(telemetry: Telemetry) -> None:
    """OT1: after ``uninstrument`` (or the ``with`` block) calls are no longer traced."""
    runtime = ToolRuntime()
    runtime.register(add)
    with instrument(runtime, tracer_provider=telemetry.tracer_provider) as handle:
        await runtime.call("add", {"a": 1, "b": 2})
    assert not handle.active
    handle.uninstrument()
    await runtime.call("add", {"a": 1, "b": 2})
    assert len(telemetry.spans()) == 1
    assert runtime.stages.observer is None


def test_importing_toolrt_does_not_import_opentelemetry() -> None:
    """OT1: the core is standard-library only; OpenTelemetry loads when a runtime is instrumented."""
    code = (
        "import sys, toolrt\n"
        "r = toolrt.ToolRuntime()\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'loaded'\n"
        "import toolrt.otel\n"
        "toolrt.otel.instrument(r)\n"
        "assert 'opentelemetry.trace' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_a_broken_tracer_never_breaks_a_call(caplog: pytest.LogCaptureFixture) -> None:
    """OT1: a tracer that raises is logged, and the call returns exactly what it would untraced."""
    runtime = ToolRuntime()
    runtime.register(add)
    instrument(runtime, tracer_provider=BrokenProvider())
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await runtime.call("add", {"a": 1, "b": 2})
        failed = await runtime.call("add", {"a": "one", "b": 2})
    assert result.value == 3
    assert failed.error is not None and failed.error.info is not None
    assert failed.error.info.code == "INVALID_ARGS"
    assert [record.getMessage() for record in caplog.records] == [
        'tracing failed to start a span for tool "add"; the call goes on'
    ] * 2


# --- the span of a call -----------------------------------------------------------------------------


async def test_a_successful_call_is_one_execute_tool_span_with_the_gen_ai_attributes(
    telemetry: Telemetry,
) -> None:
    """OT2: name, kind, the GenAI attributes, status unset; no payloads unless asked for."""
    runtime = traced(telemetry)
    result = await runtime.call("add", {"a": 1, "b": 2}, call_id="c-1", agent=AGENT)
    assert result.value == 3
    span = telemetry.span("execute_tool add")
    assert span.kind is SpanKind.INTERNAL
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "c-1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
        "toolrt.agent": AGENT,
    }
    assert span.status.status_code is StatusCode.UNSET
    assert span.parent is None


@pytest.mark.parametrize(
    ("name", "arguments", "error_type"),
    [
        ("add", {"a": "one", "b": 2}, "INVALID_ARGS"),
        ("nope", {}, "UNKNOWN_TOOL"),
        ("boom", {}, "TOOL_ERROR"),
        ("coded", {}, "ENOSPC"),
        ("slow", {}, "TOOL_TIMEOUT"),
        ("wrong_output", {}, "INVALID_TOOL_OUTPUT"),
    ],
)
async def test_every_failure_kind_sets_error_type_and_an_error_status(
    telemetry: Telemetry, name: str, arguments: dict[str, Any], error_type: str
) -> None:
    """OT3: ``error.type`` is the toolrt code (``TOOL_ERROR`` for a plain exception); status ERROR
    with the message the model reads."""
    runtime = traced(telemetry)
    result = await runtime.call(name, arguments)
    assert result.is_error
    span = telemetry.span(f"execute_tool {name}")
    assert span.attributes is not None and span.attributes["error.type"] == error_type
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == result.error.message


async def test_a_timeout_is_an_event_at_the_moment_the_deadline_fires(telemetry: Telemetry) -> None:
    """OT4: the deadline firing is recorded on the span, with the deadline it had."""
    runtime = traced(telemetry)
    await runtime.call("slow", {})
    assert events(telemetry.span("execute_tool slow")) == [("toolrt.timeout", {"toolrt.timeout_ms": 30.0})]


async def test_a_pre_execute_denial_is_an_event_and_error_type_denied(telemetry: Telemetry) -> None:
    """OT3, OT4: the decision as an event; a policy refusal has ``error.type`` DENIED."""
    runtime = traced(telemetry)
    runtime.on("tools/pre-execute", lambda execution, next: Deny("no maths today"))
    await runtime.call("add", {"a": 1, "b": 2})
    span = telemetry.span("execute_tool add")
    assert events(span) == [
        ("toolrt.pre_execute", {"toolrt.decision": "deny", "toolrt.reason": "no maths today"})
    ]
    assert span.attributes is not None and span.attributes["error.type"] == "DENIED"


async def test_an_allow_decision_is_recorded_too(telemetry: Telemetry) -> None:
    """OT4: every pre-execute decision is an event, not only refusals."""
    runtime = traced(telemetry)
    runtime.on("tools/pre-execute", lambda execution, next: next())
    await runtime.call("add", {"a": 1, "b": 2})
    span = telemetry.span("execute_tool add")
    assert events(span) == [("toolrt.pre_execute", {"toolrt.decision": "allow", "toolrt.reason": ""})]
    assert "error.type" not in (span.attributes or {})


async def test_a_guard_denial_is_an_event(telemetry: Telemetry) -> None:
    """OT4: a guard's refusal is its own event (no pre-execute listener ran)."""
    runtime = traced(telemetry)
    runtime.guard(lambda execution: "read-only session" if execution.name == "add" else None)
    await runtime.call("add", {"a": 1, "b": 2})
    span = telemetry.span("execute_tool add")
    assert events(span) == [("toolrt.guard.denied", {"toolrt.reason": "read-only session"})]
    assert span.attributes is not None and span.attributes["error.type"] == "DENIED"


@pytest.mark.parametrize(("answer", "failed"), [("allowed-once", False), ("rejected", True)])
async def test_an_approval_is_asked_and_decided_with_the_wait(
    telemetry: Telemetry, answer: str, failed: bool
) -> None:
    """OT4: ``toolrt.approval.asked`` then ``toolrt.approval.decided`` with the outcome and the time
    the person took (here at least the 50 ms the answerer sleeps)."""
    approvals = Approvals()

    async def person(request: Any, next: Any) -> str:
        await asyncio.sleep(0.05)
        return answer

    approvals.answerer(person)
    runtime = traced(telemetry, approval=approvals)
    runtime.on("tools/pre-execute", lambda execution, next: Ask("adding is irreversible"))
    result = await runtime.call("add", {"a": 1, "b": 2}, agent=AGENT)
    assert result.is_error is failed
    span = telemetry.span("execute_tool add")
    names = [name for name, _ in events(span)]
    assert names == ["toolrt.pre_execute", "toolrt.approval.asked", "toolrt.approval.decided"]
    asked, decided = events(span)[1][1], events(span)[2][1]
    assert asked == {"toolrt.reason": "adding is irreversible"}
    assert decided["toolrt.approval.outcome"] == answer
    assert decided["toolrt.approval.wait_ms"] >= 50
    if failed:
        assert span.attributes is not None and span.attributes["error.type"] == "DENIED"
    else:
        assert "error.type" not in (span.attributes or {})


async def test_an_output_over_the_budget_records_the_spill(telemetry: Telemetry) -> None:
    """OT4: a result cut to a preview says where the whole content went."""
    runtime = traced(telemetry, output_budget=500)
    try:
        result = await runtime.call("big", {})
        assert "spill://" in result.content[0]["text"]
        [(name, attributes)] = events(telemetry.span("execute_tool big"))
        assert name == "toolrt.spill"
        assert attributes["toolrt.spill.locator"].startswith("spill://")
        assert attributes["toolrt.spill.locator"] in result.content[0]["text"]
    finally:
        runtime.close()


# --- cancellation -----------------------------------------------------------------------------------


async def test_a_call_aborted_before_dispatch_ends_its_span(telemetry: Telemetry) -> None:
    """OT3: an aborted caller still gets one span, ``error.type`` ABORTED_BEFORE_DISPATCH."""
    runtime = traced(telemetry)
    controller = AbortController()
    controller.abort("user pressed stop")
    await runtime.call("add", {"a": 1, "b": 2}, signal=controller.signal)
    span = telemetry.span("execute_tool add")
    assert span.attributes is not None and span.attributes["error.type"] == "ABORTED_BEFORE_DISPATCH"


async def test_a_call_whose_signal_fires_mid_body_is_aborted(telemetry: Telemetry) -> None:
    """OT3: a signal fired while the body runs gives ``error.type`` ABORTED."""
    runtime = traced(telemetry)
    controller = AbortController()
    call = asyncio.ensure_future(runtime.call("hang", {}, signal=controller.signal))
    await asyncio.sleep(0.05)
    controller.abort("stop")
    await call
    span = telemetry.span("execute_tool hang")
    assert span.attributes is not None and span.attributes["error.type"] == "ABORTED"


async def test_a_cancelled_task_still_ends_the_span(telemetry: Telemetry) -> None:
    """OT3: cancelling the awaiting task propagates, and the span is ended as aborted, not leaked."""
    runtime = traced(telemetry)
    call = asyncio.ensure_future(runtime.call("hang", {}))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    span = telemetry.span("execute_tool hang")
    assert span.end_time is not None
    assert span.attributes is not None and span.attributes["error.type"] == "ABORTED"


# --- payloads ---------------------------------------------------------------------------------------


async def test_payloads_are_off_by_default_and_capped_when_on(telemetry: Telemetry) -> None:
    """OT5: arguments and result only with ``capture_payloads``, each cut to ``max_payload_chars``."""
    runtime = ToolRuntime()
    runtime.register(add)
    runtime.register(big)
    instrument(
        runtime, tracer_provider=telemetry.tracer_provider, capture_payloads=True, max_payload_chars=40
    )
    await runtime.call("add", {"a": 1, "b": 2})
    await runtime.call("big", {})
    small = telemetry.span("execute_tool add").attributes or {}
    assert small["gen_ai.tool.call.arguments"] == '{"a":1,"b":2}'
    assert small["gen_ai.tool.call.result"] == "3"
    cut = (telemetry.span("execute_tool big").attributes or {})["gen_ai.tool.call.result"]
    assert isinstance(cut, str) and cut.startswith("x" * 40) and cut.endswith("more characters]")
    assert len(cut) < 100


# --- metrics ----------------------------------------------------------------------------------------


async def test_metrics_count_calls_errors_by_code_and_time_each_tool(telemetry: Telemetry) -> None:
    """OT8: ``toolrt.tool.calls``, ``toolrt.tool.errors`` (by ``error.type``), ``toolrt.tool.duration``."""
    runtime = traced(telemetry)
    for arguments in ({"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": "x", "b": 1}):
        await runtime.call("add", arguments)
    await runtime.call("boom", {})
    calls = {
        point_attributes["gen_ai.tool.name"]: point.value
        for point_attributes, point in telemetry.points(CALLS)
    }
    assert calls == {"add": 3, "boom": 1}
    errors = {
        (point_attributes["gen_ai.tool.name"], point_attributes["error.type"]): point.value
        for point_attributes, point in telemetry.points(ERRORS)
    }
    assert errors == {("add", "INVALID_ARGS"): 1, ("boom", "TOOL_ERROR"): 1}
    durations = telemetry.points(DURATION)
    assert sum(point.count for _, point in durations) == 4
    assert all(point.sum >= 0 for _, point in durations)
    assert {attributes.get("error.type") for attributes, _ in durations} == {
        None,
        "INVALID_ARGS",
        "TOOL_ERROR",
    }
