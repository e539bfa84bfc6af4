"""The default deadline (issue 12 item 2): on for every runtime, ``tool_timeout_ms`` and the grace.

Every ``ToolRuntime`` installs it on itself, so these tests use the plain constructor. The runtime's
``tool_timeout_ms`` is set low here so the tests do not wait two minutes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from typing import Any

import pytest

from helpers import string_tool
from toolrt import DEFAULT_TOOL_TIMEOUT_MS, UNBOUNDED, ToolRuntime, define_tool, tool
from toolrt.policies import install_default_deadline, install_timeout_policy

# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("deadline", [0, -1, math.inf, math.nan, True, None, "120000"])
def test_a_runtime_deadline_must_be_a_positive_finite_number_or_unbounded(deadline: Any) -> None:
    with pytest.raises(ValueError, match="tool_timeout_ms must be a positive finite number or UNBOUNDED"):
        ToolRuntime(tool_timeout_ms=deadline)


def test_unbounded_is_a_valid_tool_deadline_everywhere() -> None:
    @tool(timeout_ms=UNBOUNDED)
    def wait(text: str) -> str:
        """Wait."""
        return text

    defined = define_tool(
        name="w",
        description="Wait.",
        parameters={},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: "",
        timeout_ms=UNBOUNDED,
    )
    runtime = ToolRuntime()
    runtime.register(wait)
    runtime.register(defined)
    assert wait.timeout_ms is UNBOUNDED and defined.timeout_ms is UNBOUNDED


# --- the default ----------------------------------------------------------------------------------


def test_the_default_deadline_is_two_minutes() -> None:
    assert ToolRuntime().tool_timeout_ms == DEFAULT_TOOL_TIMEOUT_MS == 120_000


async def test_a_hung_async_body_is_stopped_by_the_default_deadline() -> None:
    runtime = ToolRuntime(tool_timeout_ms=50)

    async def hang(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()  # hangs until the deadline fires its signal
        return "stopped"

    runtime.register(string_tool("hang", hang))
    result = await runtime.call("hang")
    assert result.is_error and result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    assert result.content == [{"type": "text", "text": "Error: tool call timed out after 50ms"}]
    assert result.meta is None


async def test_a_tool_deadline_wins_over_the_runtime_default() -> None:
    runtime = ToolRuntime(tool_timeout_ms=UNBOUNDED)

    async def hang(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        return "stopped"

    runtime.register(string_tool("hang", hang, timeout_ms=30))
    result = await runtime.call("hang")
    assert result.content == [{"type": "text", "text": "Error: tool call timed out after 30ms"}]


async def test_no_deadline_lets_a_slow_body_finish() -> None:
    async def slow(args: Any, ctx: Any) -> str:
        await asyncio.sleep(0.2)
        return "done"

    unbounded_runtime = ToolRuntime(tool_timeout_ms=UNBOUNDED)
    unbounded_runtime.register(string_tool("slow", slow))
    assert (await unbounded_runtime.call("slow")).value == "done"
    unbounded_tool = ToolRuntime(tool_timeout_ms=20)
    unbounded_tool.register(string_tool("slow", slow, timeout_ms=UNBOUNDED))
    assert (await unbounded_tool.call("slow")).value == "done"


async def test_an_async_body_that_ignores_the_deadline_is_detached_after_the_grace_and_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = ToolRuntime(tool_timeout_ms=20)
    release = asyncio.Event()

    async def stubborn(args: Any, ctx: Any) -> str:
        await release.wait()  # never looks at ctx.signal
        return "late"

    runtime.register(string_tool("stubborn", stubborn))
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await runtime.call("stubborn")
    assert result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    assert result.meta == {"timeout": {"timeoutMs": 20, "graceMs": 5_000, "detached": True}}
    assert any("detached and still running" in record.getMessage() for record in caplog.records)
    release.set()


async def test_a_hung_sync_body_is_reported_as_a_leaked_thread(caplog: pytest.LogCaptureFixture) -> None:
    runtime = ToolRuntime(tool_timeout_ms=20)
    release = threading.Event()

    def blocking(args: Any, ctx: Any) -> str:
        release.wait(30)  # a plain function on a worker thread: nothing can stop it
        return "late"

    runtime.register(string_tool("blocking", blocking))
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await runtime.call("blocking")
    release.set()
    assert result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    assert result.meta == {
        "timeout": {"timeoutMs": 20, "graceMs": 5_000, "detached": True, "leakedThread": True}
    }
    assert any(
        "its worker thread is leaked: a thread cannot be stopped" in record.getMessage()
        for record in caplog.records
    )


async def test_run_code_is_timed_by_its_sandbox_not_by_the_tool_deadline() -> None:
    from toolrt.sandbox import PythonSandboxRuntime

    code_runtime = PythonSandboxRuntime(pool_size=0)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime, tool_timeout_ms=50)
    try:
        result = await runtime.call(
            "run_code", {"code": "import time\ntime.sleep(0.5)\nprint('slept')", "description": "Sleep"}
        )
        assert not result.is_error, result.content
        assert "slept" in result.content[0]["text"]
    finally:
        runtime.close()
        await code_runtime.aclose()


# --- on by default, cheap, and every kind of body -------------------------------------------------


async def test_a_plain_runtime_stops_a_hung_body_without_any_policy_installed() -> None:
    runtime = ToolRuntime(tool_timeout_ms=40)
    seen: list[Any] = []

    async def hang(args: Any, ctx: Any) -> str:
        seen.append(await ctx.signal.wait())  # the body's own signal fires at the deadline
        return "stopped"

    runtime.register(string_tool("hang", hang))
    result = await runtime.call("hang")
    assert result.content == [{"type": "text", "text": "Error: tool call timed out after 40ms"}]
    assert repr(seen[0]) == "TOOL_TIMEOUT after 40ms"


async def test_a_body_that_returns_without_awaiting_is_untouched() -> None:
    runtime = ToolRuntime(tool_timeout_ms=1)

    async def quick(args: Any, ctx: Any) -> str:
        return "done"

    runtime.register(string_tool("quick", quick))
    assert [(await runtime.call("quick")).value for _ in range(3)] == ["done"] * 3


async def test_a_body_that_awaits_many_times_within_its_deadline_keeps_its_value() -> None:
    runtime = ToolRuntime(tool_timeout_ms=5_000)

    async def chatty(args: Any, ctx: Any) -> str:
        inner = asyncio.ensure_future(asyncio.sleep(0.01, "inner"))
        steps = []
        for _ in range(5):
            await asyncio.sleep(0)
        steps.append(await inner)  # awaiting a task, then a plain future
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.01, future.set_result, "future")
        steps.append(await future)
        return "+".join(steps)

    runtime.register(string_tool("chatty", chatty))
    assert (await runtime.call("chatty")).value == "inner+future"


async def test_a_cooperative_body_that_raises_its_own_abort_error_reads_as_a_timeout() -> None:
    runtime = ToolRuntime(tool_timeout_ms=20)

    async def polite(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        ctx.signal.throw_if_aborted()
        return "unreachable"

    runtime.register(string_tool("polite", polite))
    result = await runtime.call("polite")
    assert result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]


async def test_a_caller_abort_before_the_deadline_stays_aborted() -> None:
    from toolrt import AbortController

    runtime = ToolRuntime(tool_timeout_ms=60)
    controller = AbortController()

    async def hang(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        await asyncio.sleep(0.1)  # still cleaning up when the deadline passes
        return "stopped"

    runtime.register(string_tool("hang", hang))
    asyncio.get_running_loop().call_later(0.01, controller.abort, "user pressed stop")
    result = await runtime.call("hang", signal=controller.signal)
    assert result.error.info.code == "ABORTED"  # type: ignore[union-attr]


async def test_a_sync_body_that_stops_within_the_grace_reads_as_a_timeout() -> None:
    runtime = ToolRuntime(tool_timeout_ms=30)

    def waits(args: Any, ctx: Any) -> str:
        deadline = threading.Event()  # the signal is made and read on the worker thread
        ctx.signal.add_callback(lambda reason: deadline.set())
        deadline.wait(5)
        return "stopped"

    runtime.register(string_tool("waits", waits))
    result = await runtime.call("waits")
    assert result.error.info.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    assert result.meta is None  # not detached: it stopped within the grace


async def test_installing_the_default_again_changes_its_grace_and_the_disposer_restores_it() -> None:
    runtime = ToolRuntime(tool_timeout_ms=20)
    release = asyncio.Event()

    async def stubborn(args: Any, ctx: Any) -> str:
        await release.wait()
        return "late"

    runtime.register(string_tool("stubborn", stubborn))
    assert runtime.stages.drain_s == 5.0
    dispose = install_default_deadline(runtime, grace_ms=10)
    assert runtime.stages.drain_s == 0.01
    result = await runtime.call("stubborn")
    assert result.meta == {"timeout": {"timeoutMs": 20, "graceMs": 10, "detached": True}}
    dispose()
    assert runtime.stages.drain_s == 5.0
    release.set()
    await asyncio.sleep(0.01)


def test_a_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError, match="grace_ms must be a non-negative number"):
        install_default_deadline(ToolRuntime(), grace_ms=-1)


async def test_a_detached_body_is_tracked_until_it_ends_and_logged_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = ToolRuntime(tool_timeout_ms=10)
    install_default_deadline(runtime, grace_ms=10)
    release = asyncio.Event()
    seen: list[bool] = []

    async def stubborn(args: Any, ctx: Any) -> str:
        await release.wait()
        seen.append(ctx.signal.aborted)  # it still reads its own, fired signal
        return "late"

    runtime.register(string_tool("stubborn", stubborn))
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await runtime.call("stubborn")
        assert result.meta["timeout"]["detached"] is True  # type: ignore[index]
        release.set()
        for _ in range(5):
            await asyncio.sleep(0)
    assert seen == [True]
    assert any("detached body finally returned" in record.getMessage() for record in caplog.records)


async def test_an_explicit_policy_takes_over_and_the_call_is_timed_once() -> None:
    runtime = ToolRuntime(tool_timeout_ms=20)
    install_timeout_policy(runtime, grace_ms=15)
    release = asyncio.Event()

    async def stubborn(args: Any, ctx: Any) -> str:
        await release.wait()
        return "late"

    runtime.register(string_tool("stubborn", stubborn))
    result = await runtime.call("stubborn")
    # The explicit policy's grace, not the default's: one deadline, one report.
    assert result.meta == {"timeout": {"timeoutMs": 20, "graceMs": 15, "detached": True}}
    release.set()
    await asyncio.sleep(0.01)


async def test_an_approval_wait_does_not_count_against_the_tool_deadline() -> None:
    # Decision: the deadline times the body only. The approval is asked before the body starts.
    from toolrt import Ask
    from toolrt.policies import Approvals

    approvals = Approvals()

    async def slow_human(request: Any, next: Any) -> str:
        await asyncio.sleep(0.2)  # ten times the tool's deadline
        return "allowed-once"

    approvals.answerer(slow_human)
    runtime = ToolRuntime(tool_timeout_ms=20, approval=approvals)

    async def quick(args: Any, ctx: Any) -> str:
        await asyncio.sleep(0.005)
        return "ran"

    runtime.register(string_tool("quick", quick))
    runtime.on("tools/pre-execute", lambda execution, next: Ask("a person decides"))
    result = await runtime.call("quick", agent="agent-1")
    assert not result.is_error, result.content
    assert result.value == "ran"


async def test_concurrent_bodies_with_different_deadlines_each_stop_at_their_own() -> None:
    # One loop timer serves every timed body: a shorter deadline that arrives later moves it earlier.
    runtime = ToolRuntime()
    loop = asyncio.get_running_loop()
    began = loop.time()
    ended: dict[str, float] = {}

    async def hang(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        ended[ctx.name] = loop.time() - began
        return "stopped"

    for name, timeout_ms in (("long", 400), ("short", 40), ("middle", 150)):
        runtime.register(string_tool(name, hang, timeout_ms=timeout_ms))
    results = await asyncio.gather(*(runtime.call(name) for name in ("long", "short", "middle")))
    assert [result.content[0]["text"] for result in results] == [
        "Error: tool call timed out after 400ms",
        "Error: tool call timed out after 40ms",
        "Error: tool call timed out after 150ms",
    ]
    assert sorted(ended, key=ended.__getitem__) == ["short", "middle", "long"]
    assert ended["short"] >= 0.039 and ended["middle"] >= 0.149 and ended["long"] >= 0.399


async def test_cancelling_a_body_that_awaits_a_task_cancels_that_task_and_drains_it() -> None:
    runtime = ToolRuntime()
    started = asyncio.Event()
    order: list[str] = []

    async def inner() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.01)  # the inner task's own cleanup
            order.append("inner cleaned up")

    async def outer(args: Any, ctx: Any) -> str:
        task = asyncio.ensure_future(inner())
        started.set()
        try:
            await task
        finally:
            order.append(f"outer saw the inner task {'cancelled' if task.cancelled() else 'running'}")
        return "never"

    runtime.register(string_tool("outer", outer))
    call = asyncio.ensure_future(runtime.call("outer"))
    await started.wait()
    await asyncio.sleep(0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert order == ["inner cleaned up", "outer saw the inner task cancelled"]
