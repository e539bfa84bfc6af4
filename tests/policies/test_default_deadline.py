"""The default deadline (issue 12 item 2): ``install_default_deadline`` and ``tool_timeout_ms``.

NOT YET INSTALLED BY DEFAULT: installed on every runtime it broke the task-cancellation drain
(tests/pipeline/test_cancellation.py), so each test installs it by hand until that is resolved. The
runtime's ``tool_timeout_ms`` is set low here so the tests do not wait two minutes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from typing import Any

import pytest

from helpers import string_tool
from toolrt import DEFAULT_TOOL_TIMEOUT_MS, UNBOUNDED, define_tool, tool
from toolrt import ToolRuntime as _Runtime
from toolrt.policies import install_default_deadline


def ToolRuntime(**options: Any) -> _Runtime:  # stands in for the constructor
    runtime = _Runtime(**options)
    install_default_deadline(runtime)
    return runtime


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("deadline", [0, -1, math.inf, math.nan, True, None, "120000"])
def test_a_runtime_deadline_must_be_a_positive_finite_number_or_unbounded(deadline: Any) -> None:
    with pytest.raises(ValueError, match="tool_timeout_ms must be a positive finite number or UNBOUNDED"):
        _Runtime(tool_timeout_ms=deadline)


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
