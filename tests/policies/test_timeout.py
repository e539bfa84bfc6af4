"""The timeout policy (upstream ``timeout-policy.spec`` plus the detach-after-grace extension)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from helpers import string_tool
from toolrt import UNBOUNDED, AbortController, ToolDefinition, ToolExecutionInput, ToolRuntime
from toolrt._errors import TOOL_ABORTED, AbortError
from toolrt._tool_definition import Unbounded
from toolrt.policies._timeout import install_timeout_policy


def budgeted(name: str, body: Any, timeout_ms: float | Unbounded | None) -> ToolDefinition:
    return string_tool(name, body, description=name, timeout_ms=timeout_ms)


def call(name: str, signal: Any = None) -> ToolExecutionInput:
    return ToolExecutionInput(
        call_id="c1", name=name, arguments={}, signal=signal or AbortController().signal
    )


async def run_recording_signals(
    name: str, timeout_ms: float | Unbounded | None
) -> tuple[Any, Any, list[Any]]:
    """Run ``name`` (returning its own name, with budget ``timeout_ms``) under the timeout policy and a
    fresh caller signal; return the result, the caller signal and the signals its body saw.
    """
    runtime = ToolRuntime()
    caller = AbortController().signal
    seen: list[Any] = []

    async def body(args: Any, ctx: Any) -> str:
        seen.append(ctx.signal)
        return name

    runtime.register(budgeted(name, body, timeout_ms))
    install_timeout_policy(runtime)
    return await runtime.execute(call(name, caller)), caller, seen


async def test_delegates_a_tool_with_no_deadline_unchanged_and_leaves_the_signal_alone() -> None:
    # Issue 12 changed this on purpose: under the policy, a tool without timeout_ms now has the
    # runtime's tool_timeout_ms; only an explicit UNBOUNDED means "no deadline".
    result, caller, seen = await run_recording_signals("plain", UNBOUNDED)
    assert result.value == "plain"
    assert seen == [caller]


async def test_a_tool_without_timeout_ms_gets_the_runtime_default_deadline() -> None:
    result, caller, seen = await run_recording_signals("plain", None)
    assert result.value == "plain"
    assert seen[0] is not caller and not seen[0].aborted


async def test_a_budgeted_tool_that_returns_fast_keeps_its_result_and_sees_a_derived_signal() -> None:
    result, caller, seen = await run_recording_signals("fast", 1_000)
    assert result.value == "fast"
    assert seen[0] is not caller and not seen[0].aborted


async def test_restores_the_caller_signal_for_post_execute() -> None:
    runtime = ToolRuntime()
    caller = AbortController().signal
    post_signals: list[Any] = []

    async def body(args: Any, ctx: Any) -> str:
        return "ok"

    runtime.register(budgeted("t", body, 1_000))
    install_timeout_policy(runtime)
    runtime.on(
        "tools/post-execute",
        lambda execution, result, next: (post_signals.append(execution.signal), next())[1],
    )
    await runtime.execute(call("t", caller))
    assert post_signals == [caller]


async def test_replaces_a_cooperative_result_with_tool_timeout_when_its_own_deadline_fires() -> None:
    runtime = ToolRuntime()

    async def body(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        return "stopped"

    runtime.register(budgeted("slow", body, 20))
    install_timeout_policy(runtime)
    result = await runtime.execute(call("slow"))
    assert result.is_error
    assert result.content == [{"type": "text", "text": "Error: tool call timed out after 20ms"}]
    assert result.error.message == "tool call timed out after 20ms"  # type: ignore[union-attr]
    assert result.error.info is not None  # type: ignore[union-attr]
    assert (result.error.info.name, result.error.info.code) == ("ToolTimeoutError", "TOOL_TIMEOUT")  # type: ignore[union-attr]
    assert result.meta is None


async def test_replaces_a_tool_owned_abort_error_with_tool_timeout_when_the_signal_was_ours() -> None:
    runtime = ToolRuntime()

    async def body(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        raise AbortError("provider aborted", TOOL_ABORTED)

    runtime.register(budgeted("slow", body, 20))
    install_timeout_policy(runtime)
    result = await runtime.execute(call("slow"))
    assert result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]


async def test_preserves_aborted_when_the_caller_aborts_first() -> None:
    runtime = ToolRuntime()
    controller = AbortController()

    async def body(args: Any, ctx: Any) -> str:
        controller.abort("user stop")
        await ctx.signal.wait()
        return "stopped"

    runtime.register(budgeted("slow", body, 5_000))
    install_timeout_policy(runtime)
    result = await runtime.execute(call("slow", controller.signal))
    assert result.error.info.code == "ABORTED"  # type: ignore[union-attr]


async def test_preserves_tool_timeout_when_the_deadline_wins_before_a_later_caller_abort() -> None:
    runtime = ToolRuntime()
    controller = AbortController()

    async def body(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        controller.abort("too late")
        return "stopped"

    runtime.register(budgeted("slow", body, 20))
    install_timeout_policy(runtime)
    result = await runtime.execute(call("slow", controller.signal))
    assert result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]


async def test_detaches_a_body_that_ignores_the_deadline_after_the_grace_period_and_reports_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = ToolRuntime()
    release = asyncio.Event()

    async def stubborn(args: Any, ctx: Any) -> str:
        await release.wait()  # ignores ctx.signal entirely
        return "finally"

    runtime.register(budgeted("stubborn", stubborn, 20))
    install_timeout_policy(runtime, grace_ms=30)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await runtime.execute(call("stubborn"))
    assert time.monotonic() - started < 2  # never hangs on one tool
    assert result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    assert result.meta == {"timeout": {"timeoutMs": 20, "graceMs": 30, "detached": True}}
    assert any("detached and still running" in record.getMessage() for record in caplog.records)
    release.set()
    for _ in range(50):
        await asyncio.sleep(0.01)
        if any("detached body finally returned" in record.getMessage() for record in caplog.records):
            break
    assert any("detached body finally returned" in record.getMessage() for record in caplog.records)


async def test_a_scoped_policy_applies_only_to_that_agent() -> None:
    # Every runtime enforces a tool's timeout_ms by default now (issue 12): the unscoped call is
    # timed too, by the default deadline and its grace, the scoped one by the scope's policy.
    runtime = ToolRuntime()

    async def body(args: Any, ctx: Any) -> str:
        await asyncio.sleep(0.2)  # ignores its signal: the grace decides who timed it
        return "ran to completion"

    runtime.register(budgeted("slow", body, 20))
    scope = runtime.scope("agent-a")
    install_timeout_policy(scope, grace_ms=50)
    scoped = await runtime.execute(
        ToolExecutionInput(
            call_id="c1", name="slow", arguments={}, signal=AbortController().signal, agent="agent-a"
        )
    )
    unscoped = await runtime.execute(call("slow"))
    assert scoped.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    assert scoped.meta == {"timeout": {"timeoutMs": 20, "graceMs": 50, "detached": True}}
    # The default grace (5 s) outlasts the body: timed out, not detached.
    assert unscoped.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    assert unscoped.meta is None
    await asyncio.sleep(0.25)  # the detached body ends inside the test
