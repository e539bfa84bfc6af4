"""Native tool search through the real Agent loop (contract RS5–RS8).

What a user does: keeps 40 tools out of every request, lets the model load the two it needs with
``tool_search``, and expects them gone again at the next turn — with restrictions still in force.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolrt import ToolDefinition, ToolOutput, ToolRuntime, content_text
from toolrt.loop._agent import Agent
from toolrt.loop._messages import AssistantMessage, ModelRequest, ToolCall
from toolrt.loop._scripted_model import ScriptedModel
from toolrt.loop._tool_search import TOOL_SEARCH_NAME, NativeToolSearch

ORDER_ARGS = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
    "additionalProperties": False,
}


def definition(name: str, description: str) -> ToolDefinition:
    async def execute(args: Any, _: Any) -> Any:
        return {"tool": name, **args}

    return ToolDefinition(
        name=name,
        description=description,
        parameters=ORDER_ARGS,
        output=ToolOutput(schema={"type": "object"}),
        execute=execute,
    )


DEFERRED = [
    definition("orders_refund", "Refund an order to its payment method."),
    definition("orders_get", "Get one order with its refunds."),
    *(definition(f"widget_{i:02}", f"Unrelated widget tool {i}.") for i in range(40)),
]


def call(name: str, arguments: dict[str, Any], call_id: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(call_id, name, json.dumps(arguments)),))


def names(request: ModelRequest) -> list[str]:
    return [tool["name"] for tool in request.tools]


def tool_text(request: ModelRequest, index: int = -1) -> str:
    return content_text(request.messages[index].content)  # type: ignore[union-attr]


async def test_a_search_loads_the_matches_for_the_rest_of_the_turn_only() -> None:
    """RS5/RS6: the first request carries only tool_search (its description lists every deferred
    tool and says how loading works); the match is in the next step's tools and callable; the next
    turn starts without it."""
    runtime = ToolRuntime()
    model = ScriptedModel(
        [
            call(TOOL_SEARCH_NAME, {"query": "refund an order"}, "c1"),
            call("orders_refund", {"order_id": "o7"}, "c2"),
            "Refunded.",
            "Nothing to do.",
        ]
    )
    agent = Agent(runtime, model)
    NativeToolSearch(DEFERRED, limit=2).attach(agent)
    result = await agent.run_turn("Refund order o7.")
    assert result.reason == "stop"
    first, second, third = model.requests
    assert names(first) == [TOOL_SEARCH_NAME]
    description = first.tools[0]["description"]
    assert "- orders_refund: Refund an order to its payment method." in description
    assert "until the end of this turn" in description
    assert set(names(second)) == {TOOL_SEARCH_NAME, "orders_refund", "orders_get"}
    loaded = json.loads(tool_text(second))
    assert loaded["loaded"][0]["name"] == "orders_refund"
    assert loaded["loaded"][0]["parameters"] == ORDER_ARGS
    assert json.loads(tool_text(third)) == {"tool": "orders_refund", "order_id": "o7"}
    await agent.run_turn("Anything else?")
    assert names(model.requests[-1]) == [TOOL_SEARCH_NAME]
    assert runtime.get("orders_refund", agent.key) is None


async def test_the_per_request_tool_prompt_is_far_below_the_full_schemas() -> None:
    """RS5: 42 deferred tools cost one line each instead of a schema each."""
    runtime = ToolRuntime()
    model = ScriptedModel(["ok"])
    agent = Agent(runtime, model)
    NativeToolSearch(DEFERRED).attach(agent)
    await agent.run_turn("hi")
    sent = len(json.dumps(list(model.requests[0].tools)))
    full = len(
        json.dumps(
            [{"name": d.name, "description": d.description, "parameters": ORDER_ARGS} for d in DEFERRED]
        )
    )
    assert sent < full / 2


async def test_a_restricted_deferred_tool_is_never_found_loaded_or_callable() -> None:
    """RS7: the deferred names are reserved, so restrict() may name them; is_admitted decides."""
    runtime = ToolRuntime()
    model = ScriptedModel(
        [
            call(TOOL_SEARCH_NAME, {"names": ["orders_refund", "orders_get"], "query": "refund"}, "c1"),
            call("orders_refund", {"order_id": "o7"}, "c2"),
            "done",
        ]
    )
    agent = Agent(runtime, model)
    NativeToolSearch(DEFERRED).attach(agent)
    agent.scope.restrict(deny=["orders_refund"])
    await agent.run_turn("Refund o7.")
    _, second, third = model.requests
    answer = json.loads(tool_text(second))
    assert [tool["name"] for tool in answer["loaded"]] == ["orders_get"]
    assert answer["not_found"] == ["orders_refund"]
    assert "orders_refund" not in names(second)
    assert third.messages[-1].is_error  # type: ignore[union-attr]


async def test_bad_arguments_get_a_structured_error_and_the_turn_goes_on() -> None:
    """RS8: no query and no names is an error result naming what is accepted; nothing loads."""
    runtime = ToolRuntime()
    model = ScriptedModel([call(TOOL_SEARCH_NAME, {}, "c1"), "sorry"])
    agent = Agent(runtime, model)
    NativeToolSearch(DEFERRED).attach(agent)
    result = await agent.run_turn("?")
    assert result.reason == "stop"
    last = model.requests[-1].messages[-1]
    assert last.is_error  # type: ignore[union-attr]
    assert 'needs a "query"' in tool_text(model.requests[-1])
    assert names(model.requests[-1]) == [TOOL_SEARCH_NAME]


def test_settings_and_definitions_are_checked() -> None:
    with pytest.raises(ValueError, match="limit must be an int >= 1"):
        NativeToolSearch(DEFERRED, limit=0)
    with pytest.raises(ValueError, match="given twice"):
        NativeToolSearch([DEFERRED[0], DEFERRED[0]])
