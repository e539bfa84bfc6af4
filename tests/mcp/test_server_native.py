"""``build_mcp_server(runtime, mode="native")`` seen by the ``mcp`` SDK's own client (connected
in-process: the real client and server sessions over memory streams). Bad input first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcp import Client
from toolrt import UNBOUNDED, Accept, Ask, ToolRunContext, ToolRuntime, content_text, tool
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


@tool
async def big_report(rows: int) -> dict:
    """A report object that may be far larger than the output budget."""
    return {"rows": [{"index": index, "label": "row " * 10} for index in range(rows)]}


@tool(max_output_chars=UNBOUNDED)
async def unbounded_report(rows: int) -> dict:
    """The same report, with no budget."""
    return {"rows": [{"index": index, "label": "row " * 10} for index in range(rows)]}


async def test_an_oversized_structured_value_is_cut_not_served_whole_in_structured_content() -> None:
    runtime = make_runtime()
    runtime.register(big_report)
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        small = await client.call_tool("big_report", {"rows": 2})
        assert not small.is_error
        assert small.structured_content is not None and len(small.structured_content["rows"]) == 2
        result = await client.call_tool("big_report", {"rows": 2_000})  # ~130,000 characters of JSON
        # The client's context gets the budget's worth, never the whole value through structuredContent;
        # an error result, so a client validating the outputSchema does not reject it.
        assert result.is_error
        assert result.structured_content is None
        notice = result.content[0].text
        assert "The tool succeeded" in notice
        assert "over the output budget of 20,000" in notice
        assert "Do not retry" in notice
        served = content_text([block.model_dump() for block in result.content])
        assert len(served) < 25_000
        assert "read_spill" in served  # nothing is lost: the full value is spilled and can be paged
        locator = served.split('"locator": "', 1)[1].split('"', 1)[0]
        page = await client.call_tool("read_spill", {"locator": locator, "offset": 0})
    assert not page.is_error
    assert '"index": 0' in content_text([block.model_dump() for block in page.content])


async def test_a_structured_value_without_a_budget_is_served_whole() -> None:
    runtime = make_runtime()
    runtime.register(unbounded_report)
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        result = await client.call_tool("unbounded_report", {"rows": 2_000})
    assert not result.is_error
    assert result.structured_content is not None
    assert len(result.structured_content["rows"]) == 2_000


# --- progress and logs ----------------------------------------------------------------------------


def progress_runtime() -> ToolRuntime:
    runtime = make_runtime()

    @tool
    async def crunch(ctx: ToolRunContext) -> str:
        """Reports progress three times."""
        report = runtime.session_for(ctx.agent)
        assert report is not None  # the server binds the served agent's session sink
        for step in (1, 2, 3):
            report(
                "mcp/progress",
                {"callId": ctx.call_id, "progress": step, "total": 3, "message": f"step {step}"},
            )
            await asyncio.sleep(0.01)
        return "crunched"

    @tool
    def crunch_in_a_thread(ctx: ToolRunContext) -> str:
        """A plain function, run on a worker thread, reporting progress."""
        report = runtime.session_for(ctx.agent)
        assert report is not None
        for step in (1, 2):
            report("mcp/progress", {"callId": ctx.call_id, "progress": step})
        return "done"

    runtime.register(crunch)
    runtime.register(crunch_in_a_thread)
    return runtime


async def test_progress_from_a_tool_body_reaches_the_client_in_order_with_its_token() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(build_mcp_server(progress_runtime(), mode="native")) as client:
        result = await client.call_tool("crunch", {}, progress_callback=on_progress)
        assert result.content[0].text == "crunched"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]  # all before the result
        seen.clear()
        result = await client.call_tool("crunch_in_a_thread", {}, progress_callback=on_progress)
        assert result.content[0].text == "done"
        assert seen == [(1, None, None), (2, None, None)]
        seen.clear()
        # No progress token: the body reports as before, and nothing goes out.
        assert (await client.call_tool("crunch", {})).content[0].text == "crunched"
    assert seen == []


fixture_logger = logging.getLogger("tests.served.tool")
fixture_logger.setLevel(logging.DEBUG)


@tool
async def chatty() -> str:
    """Logs at three levels."""
    fixture_logger.debug("a detail")
    fixture_logger.info("working")
    fixture_logger.warning("disk nearly full")
    return "ok"


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_logs_made_during_a_call_reach_the_client_at_its_level(era: str) -> None:
    runtime = make_runtime()
    runtime.register(chatty)
    received: list[tuple[str, str | None, Any]] = []

    async def on_log(params: Any) -> None:
        received.append((params.level, params.logger, params.data))

    options: dict[str, Any] = {"mode": era, "logging_callback": on_log}
    if era == "auto":
        options["log_level"] = "info"  # 2026-07-28: the request opts in
    async with Client(build_mcp_server(runtime, mode="native"), **options) as client:
        if era == "legacy":
            await client.set_logging_level("info")
        assert (await client.call_tool("chatty", {})).content[0].text == "ok"
        fixture_logger.warning("outside any call")  # not a served call's log: not sent
        await asyncio.sleep(0.05)
    assert received == [
        ("info", "tests.served.tool", "working"),
        ("warning", "tests.served.tool", "disk nearly full"),
    ]


async def test_two_servers_in_one_process_send_each_log_once_to_the_calling_client_only() -> None:
    first, second = make_runtime(), make_runtime()
    first.register(chatty)
    second.register(chatty)
    heard: dict[str, list[str]] = {"first": [], "second": []}

    def collector(key: str) -> Any:
        async def on_log(params: Any) -> None:
            heard[key].append(params.data)

        return on_log

    async with (
        Client(
            build_mcp_server(first, mode="native"), mode="legacy", logging_callback=collector("first")
        ) as one,
        Client(build_mcp_server(second, mode="native"), mode="legacy", logging_callback=collector("second")),
    ):
        await one.call_tool("chatty", {})
        await asyncio.sleep(0.05)
    assert heard == {"first": ["disk nearly full"], "second": []}


async def test_without_set_level_a_handshake_client_gets_warnings_only() -> None:
    runtime = make_runtime()
    runtime.register(chatty)
    received: list[str] = []

    async def on_log(params: Any) -> None:
        received.append(params.level)

    async with Client(
        build_mcp_server(runtime, mode="native"), mode="legacy", logging_callback=on_log
    ) as client:
        await client.call_tool("chatty", {})
        await asyncio.sleep(0.05)
    assert received == ["warning"]


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
