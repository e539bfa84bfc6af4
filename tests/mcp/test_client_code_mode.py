"""A Code Mode program that combines two MCP servers, in the real sandbox.

The point of putting MCP behind Code Mode: the model writes one program against the SDK of every
server's tools, and only what it prints comes back. Each ``await tools.mcp__...`` still goes
through the pipeline (budgets, deadlines) and out to the real server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from toolrt import ToolRuntime, content_text
from toolrt.mcp import McpConnections
from toolrt.sandbox import PythonSandboxRuntime


@pytest.fixture
async def code_mode() -> AsyncIterator[ToolRuntime]:
    sandbox = PythonSandboxRuntime(pool_size=0)
    runtime = ToolRuntime(mode="code", code_runtime=sandbox)
    yield runtime
    runtime.close()
    await sandbox.aclose()


async def test_one_program_combines_calls_to_two_servers(code_mode, time_server, toolbox):
    async with McpConnections(code_mode, [time_server, toolbox("tb")]):
        program = """
import asyncio
paris, tokyo = await asyncio.gather(
    tools.mcp__time__get_current_time({"timezone": "Europe/Paris"}),
    tools.mcp__time__get_current_time({"timezone": "Asia/Tokyo"}),
)
total = await tools.mcp__tb__add({"a": len(paris["timezone"]), "b": len(tokyo["timezone"])})
echoed = await tools.mcp__tb__echo({"text": paris["day_of_week"]})
print(f"{paris['timezone']} + {tokyo['timezone']}: {total['sum']} letters")
same = echoed["result"] == paris["day_of_week"]
return {"sum": total["sum"], "day": echoed["result"], "same_day_name": same}
"""
        result = await code_mode.call("run_code", {"code": program, "description": "two servers"})
        assert not result.is_error, content_text(result.content)
        text = content_text(result.content)
        assert "Europe/Paris + Asia/Tokyo: 22 letters" in text
        assert '"sum": 22' in text and '"same_day_name": true' in text


async def test_a_server_failure_inside_a_program_is_an_exception_the_program_can_handle(code_mode, toolbox):
    async with McpConnections(code_mode, [toolbox("tb")]):
        program = """
try:
    await tools.mcp__tb__fail({"message": "quota exceeded"})
except Exception as error:
    print("caught:", error)
after = await tools.mcp__tb__echo({"text": "went on"})
print(after["result"])
"""
        result = await code_mode.call("run_code", {"code": program, "description": "handle"})
        text = content_text(result.content)
        assert "caught:" in text and "quota exceeded" in text
        assert "went on" in text
