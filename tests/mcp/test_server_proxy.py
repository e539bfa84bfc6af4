"""The Code Mode proxy end to end: ``toolrt mcp serve --config`` puts two real MCP servers
(mcp-server-time from PyPI, @modelcontextprotocol/server-everything from npm) behind one ``run_code``
tool, and an MCP client's program combines them — through toolrt's client, the pipeline and the sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters
from test_server_support import TOOLRT, child_env

from mcp import Client
from toolrt.mcp import StdioServer


@pytest.fixture
def config(tmp_path: Path, time_server: StdioServer, everything: StdioServer) -> Path:
    path = tmp_path / "claude_desktop_config.json"
    servers = {
        server.name: {"command": server.command, "args": list(server.args)}
        for server in (time_server, everything)
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def serve(config: Path, *extra: str) -> Client:
    return Client(
        StdioServerParameters(
            command=TOOLRT[0], args=["mcp", "serve", "--config", str(config), *extra], env=child_env()
        )
    )


PROGRAM = """
now = await tools.mcp__time__get_current_time({"timezone": "UTC"})
echoed = await tools.mcp__everything__echo({"message": f"today is {now['day_of_week']}"})
try:
    await tools.mcp__time__get_current_time({"timezone": "Mars/Olympus_Mons"})
except ToolCallError as error:
    print("refused:", error.toolName)
return {"timezone": now["timezone"], "echo": echoed}
"""


async def test_a_program_combines_two_mcp_servers_behind_one_tool(config: Path) -> None:
    async with serve(config) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("run_code", {"code": PROGRAM, "description": "combine two servers"})
    assert [tool.name for tool in tools] == ["run_code"]
    sdk = tools[0].description or ""
    assert "async def mcp__time__get_current_time(" in sdk
    assert "async def mcp__everything__echo(" in sdk
    assert not result.is_error, result.content
    text = result.content[0].text
    assert text.startswith("refused: mcp__time__get_current_time\n")
    answer = json.loads(text.split("\n", 1)[1])
    assert answer["timezone"] == "UTC"
    assert answer["echo"].startswith("Echo: today is ")


async def test_natively_the_proxy_serves_every_server_tool_under_its_mcp_name(config: Path) -> None:
    async with serve(config, "--mode", "native") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        now = await client.call_tool("mcp__time__get_current_time", {"timezone": "UTC"})
        bad = await client.call_tool("mcp__time__get_current_time", {"timezone": "Mars/Olympus_Mons"})
    assert {"mcp__time__get_current_time", "mcp__time__convert_time", "mcp__everything__echo"} <= set(tools)
    assert tools["mcp__time__get_current_time"].input_schema["required"] == ["timezone"]
    assert not now.is_error and "UTC" in now.content[0].text
    assert bad.is_error
