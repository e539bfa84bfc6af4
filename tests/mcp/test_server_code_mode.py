"""``build_mcp_server(runtime, mode="code")``: one ``run_code`` tool whose description carries the SDK;
programs run in the real sandbox and their tool calls go through the pipeline and its policies.
Seen by the ``mcp`` SDK's client (in-process). Bad input first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp import Client
from toolrt import Ask, Deny, ToolRuntime, tool
from toolrt.loop import SystemPrompt, connect_runtime, runtime_chain
from toolrt.mcp import build_mcp_server
from toolrt.policies import ApprovalRule, Approvals, rule_answerer
from toolrt.sandbox import PythonSandboxRuntime


@tool(is_concurrency_safe=lambda args: True)
async def weather(city: str) -> dict:
    """Today's weather in a city."""
    return {"city": city, "celsius": 21}


@tool
async def delete_file(path: str) -> str:
    """Delete a file (asks first)."""
    return f"deleted {path}"


@tool
async def secret() -> str:
    """Denied by policy."""
    return "the launch codes"


@pytest.fixture
async def sandbox() -> AsyncIterator[PythonSandboxRuntime]:
    runtime = PythonSandboxRuntime(pool_size=0)
    yield runtime
    await runtime.aclose()


def make_runtime(sandbox: PythonSandboxRuntime, **options: object) -> ToolRuntime:
    runtime = ToolRuntime(code_runtime=sandbox, **options)  # type: ignore[arg-type]
    for definition in (weather, delete_file, secret):
        runtime.register(definition)
    runtime.on(
        "tools/pre-execute",
        lambda call, next: Ask("deleting needs approval") if call.name == "delete_file" else next(),
    )
    runtime.on(
        "tools/pre-execute",
        lambda call, next: Deny("secrets stay secret") if call.name == "secret" else next(),
    )
    return runtime


def run(code: str) -> dict[str, str]:
    return {"code": code, "description": "a test program"}


# --- bad input -------------------------------------------------------------------------------------


async def test_a_program_that_does_not_compile_is_a_structured_tool_error(
    sandbox: PythonSandboxRuntime,
) -> None:
    async with Client(build_mcp_server(make_runtime(sandbox))) as client:
        result = await client.call_tool("run_code", run("def broken(:\n    pass"))
    assert result.is_error
    assert result.content[0].text.startswith("Error: code run failed (exception):")


async def test_run_code_without_its_description_is_invalid_arguments(sandbox: PythonSandboxRuntime) -> None:
    async with Client(build_mcp_server(make_runtime(sandbox))) as client:
        result = await client.call_tool("run_code", {"code": "print(1)"})
    assert result.is_error
    assert "invalid arguments" in result.content[0].text


async def test_tools_behind_the_proxy_are_not_callable_directly(sandbox: PythonSandboxRuntime) -> None:
    from mcp.shared.exceptions import MCPError

    async with Client(build_mcp_server(make_runtime(sandbox))) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("weather", {"city": "Oslo"})
    assert raised.value.code == -32602
    assert raised.value.message == 'unknown tool "weather": this server serves run_code'


# --- the one tool ------------------------------------------------------------------------------


async def test_serves_only_run_code_whose_description_carries_the_code_mode_sdk(
    sandbox: PythonSandboxRuntime,
) -> None:
    runtime = make_runtime(sandbox)
    async with Client(build_mcp_server(runtime)) as client:
        tools = (await client.list_tools()).tools
    assert [listed.name for listed in tools] == ["run_code"]
    description = tools[0].description or ""
    # The very text toolrt's own Code Mode prompt gives a model (same tools, same scope kind).
    twin = ToolRuntime(mode="code", code_runtime=sandbox)
    for definition in (weather, delete_file, secret):
        twin.register(definition)
    prompt = SystemPrompt(chain=runtime_chain(twin))
    connect_runtime(prompt, twin)
    sdk = (await prompt.assemble()).section("tools:sdk").text
    assert sdk and description.endswith(sdk)
    assert "async def weather(self, args: WeatherArgs)" in description
    assert tools[0].input_schema["required"] == ["code", "description"]
    assert tools[0].output_schema is None


async def test_a_program_calls_tools_through_the_pipeline_in_the_sandbox(
    sandbox: PythonSandboxRuntime,
) -> None:
    program = """
import asyncio
days = await asyncio.gather(tools.weather({"city": "Oslo"}), tools.weather({"city": "Lima"}))
try:
    await tools.secret({})
except ToolCallError as error:
    print("refused:", error.toolName, error)
return [day["city"] for day in days]
"""
    async with Client(build_mcp_server(make_runtime(sandbox))) as client:
        result = await client.call_tool("run_code", run(program))
    assert not result.is_error, result.content
    text = result.content[0].text
    assert "refused: secret" in text and "secrets stay secret" in text
    assert text == 'refused: secret secrets stay secret\n[\n  "Oslo",\n  "Lima"\n]'
    assert result.structured_content is None


async def test_an_oversized_program_output_is_bounded(sandbox: PythonSandboxRuntime) -> None:
    async with Client(build_mcp_server(make_runtime(sandbox))) as client:
        result = await client.call_tool("run_code", run('print("y" * 200_000)'))
        text = result.content[0].text
        assert not result.is_error
        assert len(text) < 20_500
        assert "200,000 characters in total, over the budget of 20,000" in text
        locator = text.split('"locator": "', 1)[1].split('"', 1)[0]
        # The rest is a tool call away, from the next program (read_spill joined the SDK).
        (tool,) = (await client.list_tools()).tools
        assert "async def read_spill(" in (tool.description or "")
        again = await client.call_tool(
            "run_code",
            run(f'page = await tools.read_spill({{"locator": "{locator}", "offset": 199_990}})\nprint(page)'),
        )
    assert not again.is_error, again.content
    assert "yyyyyyyyyy" in again.content[0].text


# --- approvals inside a served run ---------------------------------------------------------------


async def test_a_sub_call_that_asks_is_denied_clearly_when_no_answerer_is_configured(
    sandbox: PythonSandboxRuntime,
) -> None:
    program = """
try:
    await tools.delete_file({"path": "notes.txt"})
except ToolCallError as error:
    print(error)
"""
    async with Client(build_mcp_server(make_runtime(sandbox))) as client:
        result = await client.call_tool("run_code", run(program))
    assert (
        'tool "delete_file" requires approval, but no approval channel is available' in result.content[0].text
    )


async def test_a_sub_call_that_asks_goes_to_the_configured_answerer(sandbox: PythonSandboxRuntime) -> None:
    approvals = Approvals()
    approvals.answerer(rule_answerer([ApprovalRule("delete_file", "allowed-once")]))
    program = 'print(await tools.delete_file({"path": "tmp"}))'
    async with Client(build_mcp_server(make_runtime(sandbox, approval=approvals))) as client:
        result = await client.call_tool("run_code", run(program))
    assert not result.is_error, result.content
    assert result.content[0].text == "deleted tmp"
