"""``build_mcp_server(runtime, mode="native")`` seen by the ``mcp`` SDK's own client (connected
in-process: the real client and server sessions over memory streams). Bad input first.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcp import Client
from toolrt import Accept, Ask, ToolRuntime, content_text, tool
from toolrt.mcp import build_mcp_server
from toolrt.policies import ApprovalRule, Approvals, rule_answerer


@tool(is_concurrency_safe=lambda args: True)
async def lookup(user: str) -> dict:
    """Look up a user record."""
    return {"user": user, "email": f"{user}@example.com"}


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def explode() -> str:
    """Always fails."""
    raise RuntimeError("the disk is on fire")


@tool
async def delete_file(path: str) -> str:
    """Delete a file (asks first)."""
    return f"deleted {path}"


@tool
async def flood() -> str:
    """Returns far more than a model should read."""
    return "x" * 100_000


def make_runtime(**options: Any) -> ToolRuntime:
    runtime = ToolRuntime(**options)
    for definition in (lookup, add, explode, delete_file, flood):
        runtime.register(definition)
    runtime.on(
        "tools/pre-execute",
        lambda call, next: Ask("deleting needs approval") if call.name == "delete_file" else next(),
    )
    return runtime


# --- bad input -------------------------------------------------------------------------------------


async def test_unknown_tool_is_a_json_rpc_invalid_params_error_naming_what_is_served() -> None:
    async with Client(build_mcp_server(make_runtime(), mode="native")) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("lokup", {"user": "ada"})
    assert raised.value.code == -32602
    assert 'unknown tool "lokup"' in raised.value.message
    assert "lookup" in raised.value.message


async def test_invalid_arguments_are_a_tool_error_the_model_can_read() -> None:
    async with Client(build_mcp_server(make_runtime(), mode="native")) as client:
        result = await client.call_tool("add", {"a": "one", "b": 2})
    assert result.is_error
    assert result.content[0].text == 'Error: invalid arguments: "a" must be an integer'


async def test_missing_arguments_are_a_tool_error() -> None:
    async with Client(build_mcp_server(make_runtime(), mode="native")) as client:
        result = await client.call_tool("add", None)
    assert result.is_error
    assert "invalid arguments" in result.content[0].text


async def test_a_failing_body_is_is_error_with_its_message() -> None:
    async with Client(build_mcp_server(make_runtime(), mode="native")) as client:
        result = await client.call_tool("explode", {})
    assert result.is_error
    assert "the disk is on fire" in result.content[0].text
    assert result.structured_content is None


def test_bad_mode_and_missing_code_runtime_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match='serve mode must be "code" or "native", got \'python\''):
        build_mcp_server(make_runtime(), mode="python")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='serving in mode "code" needs a code runtime'):
        build_mcp_server(make_runtime(), mode="code")


# --- listing -----------------------------------------------------------------------------------


async def test_lists_every_visible_tool_with_its_schemas_and_read_only_hint() -> None:
    runtime = make_runtime()
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        tools = {listed.name: listed for listed in (await client.list_tools()).tools}
    assert list(tools) == ["lookup", "add", "explode", "delete_file", "flood"]
    assert tools["lookup"].description == "Look up a user record."
    assert tools["lookup"].input_schema == dict(runtime.schemas()[0]["parameters"])
    assert tools["lookup"].output_schema == {"type": "object"}
    assert tools["lookup"].annotations is not None and tools["lookup"].annotations.read_only_hint is True
    # Not declared safe: no hint at all (not a claim that it writes).
    assert tools["add"].annotations is None
    # An integer is no object: MCP's outputSchema cannot describe it, so none is served.
    assert tools["add"].output_schema is None


async def test_run_code_is_not_listed_natively_even_for_a_code_mode_runtime() -> None:
    from toolrt.sandbox import PythonSandboxRuntime

    sandbox = PythonSandboxRuntime(pool_size=0)
    runtime = make_runtime(mode="code", code_runtime=sandbox)
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        names = [listed.name for listed in (await client.list_tools()).tools]
        # The served scope presents natively, so a direct call is not refused as "code only".
        result = await client.call_tool("add", {"a": 1, "b": 2})
    await sandbox.aclose()
    assert "run_code" not in names
    assert result.content[0].text == "3"


async def test_a_tool_restricted_on_the_parent_scope_is_neither_listed_nor_callable() -> None:
    runtime = make_runtime()
    runtime.scope("team").restrict(deny=["explode"])
    async with Client(build_mcp_server(runtime, mode="native", parent="team")) as client:
        names = [listed.name for listed in (await client.list_tools()).tools]
        with pytest.raises(MCPError):
            await client.call_tool("explode", {})
    assert "explode" not in names


# --- results -----------------------------------------------------------------------------------


async def test_structured_content_is_the_canonical_value() -> None:
    async with Client(build_mcp_server(make_runtime(), mode="native")) as client:
        result = await client.call_tool("lookup", {"user": "ada"})
    assert not result.is_error
    assert result.structured_content == {"user": "ada", "email": "ada@example.com"}
    assert result.content[0].text == '{"user": "ada", "email": "ada@example.com"}'


async def test_a_post_execute_policy_applies_to_served_calls() -> None:
    runtime = make_runtime()
    runtime.on(
        "tools/post-execute",
        lambda call, result, next: Accept(value={"user": "hidden"}) if call.name == "lookup" else next(),
    )
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        result = await client.call_tool("lookup", {"user": "ada"})
    assert result.structured_content == {"user": "hidden"}


async def test_content_blocks_map_to_mcp_blocks_and_unknown_kinds_to_their_json_text() -> None:
    runtime = make_runtime()
    blocks = [
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "hologram", "depth": 3},
    ]
    runtime.on("tools/post-execute", lambda call, result, next: Accept(content=blocks))
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result.content[0].type == "image"
    assert result.content[0].mime_type == "image/png"
    assert result.content[1].type == "text"
    assert result.content[1].text == '{"type": "hologram", "depth": 3}'


async def test_an_oversized_result_is_bounded_and_can_be_paged_with_read_spill() -> None:
    async with Client(build_mcp_server(make_runtime(), mode="native")) as client:
        result = await client.call_tool("flood", {})
        text = result.content[0].text
        assert not result.is_error
        assert len(text) < 25_000
        assert "read_spill" in text
        names = [listed.name for listed in (await client.list_tools()).tools]
        assert "read_spill" in names  # registered by the first spill, served from then on
        locator = text.split('"locator": "', 1)[1].split('"', 1)[0]
        page = await client.call_tool("read_spill", {"locator": locator, "offset": 0})
    assert not page.is_error
    assert "xxxx" in content_text([block.model_dump() for block in page.content])


# --- approvals ---------------------------------------------------------------------------------


async def test_without_an_answerer_an_asking_call_is_denied_with_a_clear_message() -> None:
    runtime = make_runtime()
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        result = await client.call_tool("delete_file", {"path": "notes.txt"})
    assert result.is_error
    assert result.content[0].text == (
        'Error: tool "delete_file" requires approval, but no approval channel is available'
    )
    assert runtime.approval is None  # what serving installed is gone with it


async def test_approvals_go_to_the_configured_answerer() -> None:
    approvals = Approvals()
    approvals.answerer(
        rule_answerer([ApprovalRule("delete_file", "allowed-once", when=lambda a: a["path"] == "tmp")])
    )
    approvals.answerer(rule_answerer([ApprovalRule("delete_file", "rejected")]))
    runtime = make_runtime(approval=approvals)
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        allowed = await client.call_tool("delete_file", {"path": "tmp"})
        rejected = await client.call_tool("delete_file", {"path": "notes.txt"})
    assert allowed.content[0].text == "deleted tmp"
    assert rejected.is_error
    assert rejected.content[0].text == 'Error: the user rejected tool "delete_file"'
    assert runtime.approval is approvals


async def test_served_calls_run_under_the_mcp_agent_so_its_scope_policies_apply() -> None:
    runtime = make_runtime()
    seen: list[object] = []
    runtime.on("tools/result", lambda call, result: seen.append(call.agent))
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    assert seen == ["mcp"]


async def test_an_unknown_tool_among_many_names_the_close_ones_not_all() -> None:
    runtime = make_runtime()
    for index in range(20):
        runtime.register(add.__class__(**{**_fields(add), "name": f"tool_{index}"}))
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("lookupp", {})
    assert raised.value.message == (
        'unknown tool "lookupp": this server serves 25 tools (see tools/list); did you mean lookup?'
    )


def _fields(definition: Any) -> dict[str, Any]:
    import dataclasses

    return {
        field.name: getattr(definition, field.name) for field in dataclasses.fields(definition) if field.init
    }
