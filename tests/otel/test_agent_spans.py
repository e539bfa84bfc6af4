"""The agent loop's spans wrap the calls (contract OT7).

A turn is ``invoke_agent {agent}``; each model step inside it is ``chat {model}`` (kind CLIENT,
with the usage the model reported); the tool calls of a step are ``execute_tool`` children of the
turn, as the GenAI conventions draw an agent's work. A turn that fails or is cancelled still ends its
span, in error.
"""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_support import BrokenProvider, Telemetry, parent_id

from toolrt import ToolRuntime, tool
from toolrt.loop import Agent, AssistantMessage, ScriptedModel, ScriptStep, ToolCall, Usage
from toolrt.otel import instrument


@tool(is_concurrency_safe=lambda args: True)
async def read_note(name: str) -> str:
    """Read a note."""
    await asyncio.sleep(0.01)
    return f"note {name}"


def traced(telemetry: Telemetry) -> ToolRuntime:
    runtime = ToolRuntime()
    runtime.register(read_note)
    instrument(runtime, tracer_provider=telemetry.tracer_provider)
    return runtime


async def test_a_turn_wraps_its_model_steps_and_tool_calls(telemetry: Telemetry) -> None:
    """OT7: invoke_agent > (chat, execute_tool, execute_tool, chat), one trace."""
    runtime = traced(telemetry)
    model = ScriptedModel(
        [
            ScriptStep(
                AssistantMessage(
                    tool_calls=(
                        ToolCall("t1", "read_note", '{"name": "a"}'),
                        ToolCall("t2", "read_note", '{"name": "b"}'),
                    )
                ),
                usage=Usage(input_tokens=120, output_tokens=30),
            ),
            "Both notes read.",
        ]
    )
    agent = Agent(runtime, model, key="helper")
    result = await agent.run_turn("Read a and b")
    assert result.reason == "stop"
    turn = telemetry.span("invoke_agent helper")
    assert turn.kind is SpanKind.INTERNAL
    attributes = turn.attributes or {}
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "helper"
    assert attributes["toolrt.turn.end_reason"] == "stop"
    assert attributes["toolrt.turn.steps"] == 2
    chats = telemetry.spans("chat ScriptedModel")
    assert len(chats) == 2
    assert all(span.kind is SpanKind.CLIENT and parent_id(span) == turn.context.span_id for span in chats)
    first = min(chats, key=lambda span: span.start_time or 0)
    assert (first.attributes or {})["gen_ai.usage.input_tokens"] == 120
    assert (first.attributes or {})["gen_ai.usage.output_tokens"] == 30
    calls = telemetry.spans("execute_tool read_note")
    assert sorted((span.attributes or {})["gen_ai.tool.call.id"] for span in calls) == ["t1", "t2"]
    assert {parent_id(span) for span in calls} == {turn.context.span_id}
    assert {span.context.trace_id for span in [*chats, *calls]} == {turn.context.trace_id}
    assert all((first.end_time or 0) <= (span.start_time or 0) for span in calls)


async def test_a_failing_model_ends_both_spans_in_error(telemetry: Telemetry) -> None:
    """OT7: an exception out of the model fails the chat span and the turn span."""
    runtime = traced(telemetry)

    def broken(request: object) -> AssistantMessage:
        raise RuntimeError("provider down")

    with pytest.raises(RuntimeError, match="provider down"):
        await Agent(runtime, ScriptedModel([broken]), key="helper").run_turn("hi")
    for name in ("invoke_agent helper", "chat ScriptedModel"):
        span = telemetry.span(name)
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "RuntimeError"


async def test_a_cancelled_turn_ends_its_spans(telemetry: Telemetry) -> None:
    """OT7: cancelling the task that awaits a turn ends the turn span and the call spans."""

    @tool
    async def hang() -> str:
        """Wait forever."""
        await asyncio.sleep(60)
        return "never"

    runtime = traced(telemetry)
    runtime.register(hang)
    model = ScriptedModel([AssistantMessage(tool_calls=(ToolCall("h1", "hang", "{}"),))])
    turn = asyncio.ensure_future(Agent(runtime, model, key="helper").run_turn("hang"))
    await asyncio.sleep(0.1)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert (telemetry.span("invoke_agent helper").attributes or {})["error.type"] == "CancelledError"
    assert (telemetry.span("execute_tool hang").attributes or {})["error.type"] == "ABORTED"


async def test_an_untraced_agent_emits_nothing(telemetry: Telemetry) -> None:
    """OT1: without instrument, the loop starts no span."""
    runtime = ToolRuntime()
    runtime.register(read_note)
    await Agent(runtime, ScriptedModel(["hello"]), key="helper").run_turn("hi")
    assert telemetry.spans() == []


async def test_a_broken_tracer_never_breaks_a_turn() -> None:
    """OT1: a tracer whose spans fail to start leaves the turn and its calls as they would be."""
    runtime = ToolRuntime()
    runtime.register(read_note)
    instrument(runtime, tracer_provider=BrokenProvider())
    model = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall("t1", "read_note", '{"name": "a"}'),)), "done"]
    )
    result = await Agent(runtime, model, key="helper").run_turn("read a")
    assert result.reason == "stop" and result.text == "done"
    assert [message.content for message in result.messages if getattr(message, "role", "") == "tool"] == [
        [{"type": "text", "text": "note a"}]
    ]
