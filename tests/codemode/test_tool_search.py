"""Code Mode tool search (contract TS7–TS10): a large tool set as one line per tool, full typed
signatures on demand from ``tools.describe`` / ``tools.search``, run in the real Python sandbox.

What a user does: registers 150 MCP-style tools, turns search on, and the model first prints the
signatures it needs, then calls the tools in its next program.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolrt import ToolDefinition, ToolOutput, ToolRuntime, content_text
from toolrt.codemode import ToolSearch, enable_tool_search
from toolrt.codemode._prompt_sections import render_sdk
from toolrt.codemode._tool_search import rank_tools, summary_line
from toolrt.sandbox import PythonSandboxRuntime

AGENT = "agent-1"


async def _execute(args: Any, _: Any) -> Any:
    return {"echo": args}


def definition(name: str, description: str) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "The order."}},
            "required": ["order_id"],
            "additionalProperties": False,
        },
        output=ToolOutput(
            schema={
                "type": "object",
                "properties": {"echo": {"type": "object"}},
                "required": ["echo"],
            }
        ),
        execute=_execute,
    )


TOOLS = {
    "orders_refund": "Refund an order. The money goes back to the original payment method.",
    "orders_get": "Get one order by id, with its line items and refunds.",
    "users_get": "Get a user profile.",
    "billing_invoice": "Create an invoice for an order.",
    **{f"filler_{index:03}": f"Unrelated tool number {index} about widgets." for index in range(40)},
}


@pytest.fixture
async def runtime() -> AsyncIterator[ToolRuntime]:
    sandbox = PythonSandboxRuntime(pool_size=0)
    runtime = ToolRuntime(mode="code", code_runtime=sandbox)
    for name, description in TOOLS.items():
        runtime.register(definition(name, description))
    yield runtime
    await sandbox.aclose()


async def run(runtime: ToolRuntime, program: str, agent: str | None = None) -> tuple[bool, str]:
    result = await runtime.call("run_code", {"code": program, "description": "test"}, agent=agent)
    return result.is_error, content_text(result.content)


def test_bm25_ranks_by_name_and_description_and_leaves_out_non_matches() -> None:
    """TS9: the name's words weigh more than the description's; no shared word, no result."""
    ranked = rank_tools(TOOLS, "refund an order")
    assert ranked[0] == "orders_refund"
    assert set(ranked) <= {"orders_refund", "orders_get", "billing_invoice"}
    assert rank_tools(TOOLS, "zebra") == []
    assert rank_tools(TOOLS, "   ") == []


def test_bad_settings_fail_loudly() -> None:
    with pytest.raises(ValueError, match="after must be an int >= 0"):
        ToolSearch(after=-1)
    with pytest.raises(ValueError, match="limit must be an int >= 1"):
        ToolSearch(limit=0)


async def test_past_the_threshold_the_sdk_lists_each_tool_on_one_line(runtime: ToolRuntime) -> None:
    """TS7: past ``after`` tools, one line per tool and no declarations; at or below it, the
    full SDK as before."""
    full = render_sdk(runtime, None)
    off = enable_tool_search(runtime, after=len(TOOLS))
    assert render_sdk(runtime, None) == full  # not past the threshold
    off()
    enable_tool_search(runtime, after=10)
    text = render_sdk(runtime, None)
    assert "(TypedDict):" not in text
    assert "    # orders_refund: Refund an order.\n" in text
    assert "async def describe(self, names: list[str]) -> str: ..." in text
    assert "print(await tools.describe([" in text
    assert len(text) < len(full)
    assert summary_line(TOOLS["orders_get"]) in text


async def test_describe_and_search_return_typed_signatures_and_deferred_tools_stay_callable(
    runtime: ToolRuntime,
) -> None:
    """TS8: what the program prints is the full declaration; the listed tool runs as before."""
    enable_tool_search(runtime, after=10)
    failed, text = await run(runtime, 'print(await tools.describe(["orders_refund"]))')
    assert not failed, text
    assert "async def orders_refund(self, args: OrdersRefundArgs) -> OrdersRefundOutput:" in text
    assert "order_id: str" in text and "filler_" not in text
    failed, text = await run(runtime, 'print(await tools.search("refund the order"))')
    assert not failed, text
    assert text.startswith("# best matches: orders_refund")
    assert text.count("async def ") <= 5
    failed, text = await run(runtime, 'r = await tools.orders_refund({"order_id": "o1"})\nprint(r)')
    assert not failed and "'order_id': 'o1'" in text


async def test_bad_helper_arguments_fail_the_call_with_a_clear_message(runtime: ToolRuntime) -> None:
    """TS8: a wrong argument or an unknown name raises in the program; nothing else is lost."""
    enable_tool_search(runtime, after=10)
    program = (
        "for call in (lambda: tools.describe(42), lambda: tools.describe(['nope']),"
        " lambda: tools.search('')):\n"
        "    try:\n        await call()\n    except ToolCallError as error:\n        print(error)\n"
        "print((await tools.users_get({'order_id': 'x'}))['echo'])"
    )
    failed, text = await run(runtime, program)
    assert not failed, text
    assert "tools.describe takes a list of tool names" in text
    assert "no such tool: nope" in text
    assert "tools.search takes a non-empty query string" in text
    assert "{'order_id': 'x'}" in text


async def test_restrictions_apply_to_deferred_tools_as_to_visible_ones(runtime: ToolRuntime) -> None:
    """TS10: a tool denied to a scope is not listed, not described, not found, not callable."""
    enable_tool_search(runtime, after=10)
    scope = runtime.scope(AGENT)
    scope.restrict(deny=["orders_refund"])
    assert not runtime.is_admitted("orders_refund", AGENT)
    assert "orders_refund" not in render_sdk(runtime, AGENT)
    failed, text = await run(runtime, 'print(await tools.describe(["orders_refund"]))', AGENT)
    assert failed and "no such tool: orders_refund" in text
    failed, text = await run(runtime, 'print(await tools.search("refund"))', AGENT)
    assert not failed and "orders_refund" not in text
    failed, text = await run(runtime, 'await tools.orders_refund({"order_id": "o1"})', AGENT)
    assert failed


async def test_a_real_tool_named_search_keeps_its_name(runtime: ToolRuntime) -> None:
    """TS8: the helper yields to a registered tool of the same name."""
    runtime.register(definition("search", "Search orders by text."))
    enable_tool_search(runtime, after=10)
    text = render_sdk(runtime, None)
    assert "async def search(" not in text and "    # search: Search orders by text." in text
    failed, output = await run(runtime, 'print(await tools.search({"order_id": "q"}))')
    assert not failed and "'order_id': 'q'" in output


async def test_a_prompt_assembled_before_search_turns_on_shows_the_new_sdk(runtime: ToolRuntime) -> None:
    """TS7 with the prompt cache (contract CS1): turning search on or off is a change of what the
    model is shown, so a long-lived prompt assembles the one-line listing at its next step, and the
    full SDK again once search is off."""
    from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain

    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    full = (await prompt.assemble(None)).render()
    assert "(TypedDict):" in full
    off = enable_tool_search(runtime, after=10)
    listed = (await prompt.assemble(None)).render()
    assert "(TypedDict):" not in listed
    assert "    # orders_refund: Refund an order.\n" in listed
    off()
    assert (await prompt.assemble(None)).render() == full
