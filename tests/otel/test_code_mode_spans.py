"""A Code Mode program in the real sandbox: its sub-calls nest under ``run_code`` (contract OT6).

The program runs in a confined child process; its binding calls are dispatched on the host, where
each one's span is made a child of the ``run_code`` span from the call's parent token. Parallel
sub-calls (``asyncio.gather`` in the program, a concurrency-safe tool) overlap in time and still
each have ``run_code`` as parent; each is the current span while its body runs. Both with a child
started for the run and with a warm pool's child, started before the run's span existed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from opentelemetry import trace
from telemetry_support import Telemetry, parent_id

from toolrt import ToolRuntime, tool
from toolrt.otel import instrument
from toolrt.sandbox import PythonSandboxRuntime

PARALLEL = (
    "import asyncio\n"
    "found = await asyncio.gather(*(tools.lookup({'city': c}) for c in ['Oslo', 'Lima', 'Pune']))\n"
    "print(found)"
)

seen_current: list[tuple[str, int]] = []


@tool(is_concurrency_safe=lambda args: True)
async def lookup(city: str) -> str:
    """Look up the weather in a city."""
    seen_current.append((city, trace.get_current_span().get_span_context().span_id))
    await asyncio.sleep(0.2)
    return f"sunny in {city}"


@pytest.fixture(params=[0, 1], ids=["cold", "warm-pool"])
async def sandboxed(telemetry: Telemetry, request: pytest.FixtureRequest) -> AsyncIterator[ToolRuntime]:
    """A traced Code Mode runtime on the real sandbox: a fresh child per run, or a warm pool's."""
    code_runtime = PythonSandboxRuntime(pool_size=request.param)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    runtime.register(lookup)
    instrument(runtime, tracer_provider=telemetry.tracer_provider)
    seen_current.clear()
    try:
        yield runtime
    finally:
        runtime.close()
        await code_runtime.aclose()


async def test_parallel_sub_calls_are_children_of_the_run_code_span(
    sandboxed: ToolRuntime, telemetry: Telemetry
) -> None:
    """OT6: one child span per sub-call, parented to run_code, overlapping, each current in its body."""
    result = await sandboxed.call("run_code", {"code": PARALLEL, "description": "Weather"}, agent="a")
    assert not result.is_error, result.content
    run = telemetry.span("execute_tool run_code")
    subs = telemetry.spans("execute_tool lookup")
    assert len(subs) == 3
    assert {parent_id(span) for span in subs} == {run.context.span_id}
    assert {span.context.trace_id for span in subs} == {run.context.trace_id}
    assert sorted((span.attributes or {})["gen_ai.tool.call.id"] for span in subs) == [
        f"{(run.attributes or {})['gen_ai.tool.call.id']}:code:{n}" for n in (1, 2, 3)
    ]
    # They ran in parallel: every one started before any one ended.
    assert max(span.start_time or 0 for span in subs) < min(span.end_time or 0 for span in subs)
    # Each body saw its own span as the current one (what an MCP sub-call would propagate).
    assert sorted(span_id for _, span_id in seen_current) == sorted(span.context.span_id for span in subs)
    assert run.start_time is not None and run.end_time is not None
    assert all(
        run.start_time <= (span.start_time or 0) and (span.end_time or 0) <= run.end_time for span in subs
    )


async def test_the_run_code_span_carries_the_isolation_and_the_limits(
    sandboxed: ToolRuntime, telemetry: Telemetry
) -> None:
    """OT6: the isolation the run achieved and the limits it ran under, as attributes."""
    await sandboxed.call("run_code", {"code": "print(1)", "description": "One"}, agent="a")
    attributes = telemetry.span("execute_tool run_code").attributes or {}
    code_runtime = sandboxed.code_runtime
    assert isinstance(code_runtime, PythonSandboxRuntime)
    isolation = code_runtime.isolation
    assert attributes["toolrt.code.language"] == "python"
    assert attributes["toolrt.code.isolation.kind"] == isolation.kind == "process"
    assert attributes["toolrt.code.isolation.enforcement"] == isolation.enforcement
    assert set(isolation.layers) <= set(attributes["toolrt.code.isolation.layers"])  # type: ignore[arg-type]
    assert attributes["toolrt.code.limits.wall_seconds"] == code_runtime.limits.wall_seconds
    assert attributes["toolrt.code.limits.memory_bytes"] == code_runtime.limits.memory_bytes
    assert isinstance(attributes["toolrt.code.backend"], str)


async def test_a_failed_program_still_reports_its_isolation_and_error_type(
    sandboxed: ToolRuntime, telemetry: Telemetry
) -> None:
    """OT3, OT6: a program that raises is CODE_RUN_FAILED, with the isolation it was promised."""
    result = await sandboxed.call(
        "run_code", {"code": "raise ValueError('nope')", "description": "Fail"}, agent="a"
    )
    assert result.is_error
    attributes = telemetry.span("execute_tool run_code").attributes or {}
    assert attributes["error.type"] == "CODE_RUN_FAILED"
    assert attributes["toolrt.code.isolation.kind"] == "process"
