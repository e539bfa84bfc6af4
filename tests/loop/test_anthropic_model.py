"""AnthropicModel against a real local HTTP server, through the real ``anthropic`` client (PF3–PF8).

No mocks of ``anthropic``: :mod:`fake_anthropic_server` speaks the Messages API (JSON and the SSE
event stream) on 127.0.0.1 and records what it received.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import pytest
from model_helpers import ADD_SCHEMA, HANG_GUARD, MUL_SCHEMA, model_request

from fake_anthropic_server import FakeAnthropicServer, Usage
from helpers import text
from toolrt import AbortController, AbortError, AbortSignal, ToolRuntime, tool
from toolrt.loop import Agent, AnthropicModel, SessionLog
from toolrt.loop._chat_model import ChatModel
from toolrt.loop._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from toolrt.loop._messages import Usage as ToolrtUsage


def request(*messages: Message, tools: tuple[Any, ...] = (ADD_SCHEMA, MUL_SCHEMA)) -> ModelRequest:
    return model_request(*messages, tools=tools)


@pytest.fixture
def claude() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
async def model(claude: FakeAnthropicServer) -> AsyncIterator[AnthropicModel]:
    async with AnthropicModel(
        "fake-claude", base_url=claude.base_url, api_key="test-key", max_retries=0
    ) as chat:
        yield chat


@contextmanager
def closing_runtime() -> Iterator[ToolRuntime]:
    runtime = ToolRuntime()
    try:
        yield runtime
    finally:
        runtime.close()


async def complete(chat: AnthropicModel, req: ModelRequest | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("signal", AbortSignal.never())
    return await asyncio.wait_for(chat.complete(req or request(), **kwargs), HANG_GUARD)


async def test_it_is_a_chat_model(model: AnthropicModel) -> None:
    models: list[ChatModel] = [model]  # checked by mypy --strict
    assert len(models) == 1


# --- PF3 streaming text and tool use ---------------------------------------------------------------


async def test_text_streams_fragment_by_fragment(claude: FakeAnthropicServer, model: AnthropicModel) -> None:
    """PF3: text deltas reach ``on_text`` as they arrive and join to the message text."""
    claude.enqueue_text("Hello there, friend.", thinking="Let me greet.")
    seen: list[str] = []
    response = await complete(model, on_text=seen.append)
    assert seen == ["Hello", " there,", " friend."]
    assert response.message == AssistantMessage(
        text="Hello there, friend.", reasoning="Let me greet.", stop_reason="end_turn"
    )
    sent = claude.requests[0]
    assert sent["stream"] is True and sent["model"] == "fake-claude" and sent["max_tokens"] == 8192
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    headers = claude.request_headers[0]  # the key travels as x-api-key or, in newer SDKs, a bearer token
    assert "test-key" in (
        headers.get("x-api-key", ""),
        headers.get("authorization", "").removeprefix("Bearer "),
    )


async def test_a_tool_call_is_reassembled_from_input_json_deltas(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF3: ``input_json_delta`` fragments join into the call's raw arguments text."""
    claude.enqueue_tool_calls([("toolu_1", "add", '{"a": 1, "b": 2}')], text="Adding.", arg_chunk=3)
    response = await complete(model)
    assert response.message.text == "Adding."
    assert response.message.tool_calls == (ToolCall("toolu_1", "add", '{"a": 1, "b": 2}'),)
    assert response.message.stop_reason == "tool_use"


async def test_parallel_tool_calls_keep_the_model_order(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF3: several ``tool_use`` blocks in one message become calls in block order."""
    claude.enqueue_tool_calls(
        [("toolu_a", "add", '{"a":1,"b":2}'), ("toolu_m", "mul", '{"a":3,"b":4}'), ("toolu_z", "add", "")]
    )
    response = await complete(model)
    assert response.message.tool_calls == (
        ToolCall("toolu_a", "add", '{"a":1,"b":2}'),
        ToolCall("toolu_m", "mul", '{"a":3,"b":4}'),
        ToolCall("toolu_z", "add", "{}"),  # no input deltas: the start block's (empty) input
    )


async def test_the_results_go_back_in_one_user_message(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF3: a follow-up request carries the calls and their results in Anthropic's shape."""
    claude.enqueue_text("3 and 12")
    calls = (ToolCall("toolu_a", "add", '{"a":1,"b":2}'), ToolCall("toolu_m", "mul", '{"a":3,"b":4}'))
    await complete(
        model,
        request(
            UserMessage(text("go")),
            AssistantMessage(tool_calls=calls),
            ToolResultMessage("toolu_a", "add", text("3")),
            ToolResultMessage("toolu_m", "mul", text("boom"), is_error=True),
        ),
    )
    assistant, results = claude.requests[0]["messages"][1:]
    assert [block["id"] for block in assistant["content"]] == ["toolu_a", "toolu_m"]
    assert results["role"] == "user"
    assert [(block["tool_use_id"], block.get("is_error", False)) for block in results["content"]] == [
        ("toolu_a", False),
        ("toolu_m", True),
    ]


async def test_a_non_streaming_model_reads_the_complete_message(claude: FakeAnthropicServer) -> None:
    """PF3: ``stream=False`` sends a JSON request and reads the message and its usage."""
    claude.enqueue_tool_calls([("toolu_1", "add", '{"a":1,"b":2}')], text="ok", stream=False)
    async with AnthropicModel("fake-claude", base_url=claude.base_url, api_key="k", stream=False) as chat:
        seen: list[str] = []
        response = await complete(chat, on_text=seen.append)
    assert seen == ["ok"]
    assert response.message.tool_calls == (ToolCall("toolu_1", "add", '{"a": 1, "b": 2}'),)
    assert response.usage == ToolrtUsage(11, 7, 0, 0)
    assert "stream" not in claude.requests[0] or claude.requests[0]["stream"] is False


# --- PF4 malformed tool input ---------------------------------------------------------------------


async def test_malformed_input_json_is_kept_verbatim(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF4: tool input text that is not JSON does not fail the call: it stays the raw arguments."""
    claude.enqueue_tool_calls([("toolu_1", "add", '{"a": 1, "b": ')])
    response = await complete(model)
    assert response.message.tool_calls == (ToolCall("toolu_1", "add", '{"a": 1, "b": '),)


async def test_malformed_input_json_becomes_invalid_args_in_the_loop(claude: FakeAnthropicServer) -> None:
    """PF4: through the agent, the broken call is an INVALID_ARGS result the model reads, and the
    model is shown its own text back under RAW_ARGUMENTS_KEY."""

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    claude.enqueue_tool_calls([("toolu_1", "add", '{"a": 1, "b": ')])
    claude.enqueue_text("Sorry.")
    with closing_runtime() as runtime:
        runtime.register(add)
        async with AnthropicModel("fake-claude", base_url=claude.base_url, api_key="k") as chat:
            agent = Agent(runtime, chat)
            result = await asyncio.wait_for(agent.run_turn("add"), HANG_GUARD)
    assert result.reason == "stop" and result.text == "Sorry."
    tool_use, tool_result = (msg["content"][0] for msg in claude.requests[1]["messages"][1:])
    assert tool_use["input"] == {"_raw_arguments": '{"a": 1, "b": '}
    assert tool_result["is_error"] is True
    assert "invalid arguments" in tool_result["content"][0]["text"]


# --- PF5 cache breakpoints ------------------------------------------------------------------------


async def test_cache_breakpoints_follow_the_last_tool_and_the_system_prompt(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF5: ``cache_control`` sits on the last tool (only) and on the system text block."""
    claude.enqueue_text("ok")
    await complete(model)
    sent = claude.requests[0]
    assert sent["system"] == [
        {"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}
    ]
    assert [tool.get("cache_control") for tool in sent["tools"]] == [None, {"type": "ephemeral"}]
    assert [tool["name"] for tool in sent["tools"]] == ["add", "mul"]
    assert sent["tools"][0]["input_schema"] == ADD_SCHEMA["parameters"]


async def test_the_cached_prefix_is_byte_identical_from_call_to_call(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF5: two calls of one session send the same tools and system bytes, so the cache can hit."""
    claude.enqueue_text("one")
    claude.enqueue_text("two")
    first = request(UserMessage(text("a")))
    await complete(model, first)
    await complete(model, request(UserMessage(text("a")), AssistantMessage("one"), UserMessage(text("b"))))
    a, b = claude.requests
    assert json.dumps([a["tools"], a["system"]]) == json.dumps([b["tools"], b["system"]])


async def test_cache_false_sends_no_breakpoints(claude: FakeAnthropicServer) -> None:
    """PF5: ``cache=False`` sends the system prompt as plain text and the tools unmarked."""
    claude.enqueue_text("ok")
    async with AnthropicModel("fake-claude", base_url=claude.base_url, api_key="k", cache=False) as chat:
        await complete(chat)
    sent = claude.requests[0]
    assert sent["system"] == "You are a test."
    assert all("cache_control" not in tool for tool in sent["tools"])


async def test_no_tools_and_no_system_send_neither(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF5: nothing to cache: no empty ``tools`` list or ``system`` block (the API rejects them)."""
    claude.enqueue_text("ok")
    await complete(model, ModelRequest(system="", messages=(UserMessage(text("hi")),), tools=()))
    assert "tools" not in claude.requests[0] and "system" not in claude.requests[0]


# --- PF6 usage ------------------------------------------------------------------------------------


async def test_usage_carries_the_cache_figures(claude: FakeAnthropicServer, model: AnthropicModel) -> None:
    """PF6: input from ``message_start``, output from ``message_delta``, cache reads and writes."""
    claude.enqueue_text(
        "ok", usage=Usage(input_tokens=5, output_tokens=9, cache_read=1200, cache_creation=40)
    )
    response = await complete(model)
    assert response.usage == ToolrtUsage(
        input_tokens=5, output_tokens=9, cache_read_input_tokens=1200, cache_creation_input_tokens=40
    )


async def test_usage_with_cache_figures_reaches_the_session_log(
    claude: FakeAnthropicServer, tmp_path: Path
) -> None:
    """PF6: the ``model/assistant`` event logs the cache reads and writes beside the token counts."""
    claude.enqueue_text("first", usage=Usage(input_tokens=900, output_tokens=3, cache_creation=900))
    claude.enqueue_text("second", usage=Usage(input_tokens=4, output_tokens=2, cache_read=900))
    path = tmp_path / "session.jsonl"
    with closing_runtime() as runtime:
        async with AnthropicModel("fake-claude", base_url=claude.base_url, api_key="k") as chat:
            with SessionLog.create(path) as log:
                agent = Agent(runtime, chat, session=log)
                await asyncio.wait_for(agent.run_turn("one"), HANG_GUARD)
                await asyncio.wait_for(agent.run_turn("two"), HANG_GUARD)
    usages = [
        json.loads(line)["data"]["usage"]
        for line in path.read_text().splitlines()
        if json.loads(line)["type"] == "model/assistant"
    ]
    assert usages == [
        {
            "input_tokens": 900,
            "output_tokens": 3,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 900,
        },
        {
            "input_tokens": 4,
            "output_tokens": 2,
            "cache_read_input_tokens": 900,
            "cache_creation_input_tokens": 0,
        },
    ]
    assert SessionLog.read(path).events  # the log, cache figures and all, reads back


# --- PF7 cancellation -----------------------------------------------------------------------------


async def test_an_abort_mid_stream_closes_the_connection(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF7: aborting the signal mid-stream raises ABORTED and the server sees the client hang up."""
    claude.enqueue_text("one two three four five", hang_after=4)  # stops after "one"
    controller = AbortController()
    seen: list[str] = []

    def on_text(fragment: str) -> None:
        seen.append(fragment)
        controller.abort("user pressed Ctrl-C")

    with pytest.raises(AbortError) as caught:
        await complete(model, signal=controller.signal, on_text=on_text)
    assert caught.value.code == "ABORTED"
    assert seen == ["one"]
    assert await asyncio.to_thread(claude.wait_for_disconnect, HANG_GUARD)


async def test_task_cancel_mid_stream_closes_the_connection(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF7: cancelling the awaiting task propagates CancelledError and closes the stream too."""
    claude.enqueue_text("one two", hang_after=4)
    started = asyncio.Event()
    task = asyncio.create_task(complete(model, on_text=lambda _fragment: started.set()))
    await asyncio.wait_for(started.wait(), HANG_GUARD)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(claude.wait_for_disconnect, HANG_GUARD)


async def test_an_aborted_signal_sends_nothing(claude: FakeAnthropicServer, model: AnthropicModel) -> None:
    """PF7: an already-aborted signal raises before any request."""
    controller = AbortController()
    controller.abort()
    with pytest.raises(AbortError):
        await complete(model, signal=controller.signal)
    assert claude.requests == []


# --- PF8 errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, anthropic.AuthenticationError),
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.OverloadedError),
    ],
)
async def test_http_errors_are_the_sdks_typed_errors(
    claude: FakeAnthropicServer, model: AnthropicModel, status: int, error: type[anthropic.APIStatusError]
) -> None:
    """PF8: an HTTP error is the SDK's error for that status, naming the status and the message."""
    claude.enqueue_error(status, f"scripted {status}")
    with pytest.raises(error) as caught:
        await complete(model)
    assert caught.value.status_code == status
    assert f"scripted {status}" in str(caught.value) and str(status) in str(caught.value)


async def test_an_error_event_mid_stream_is_an_overloaded_error(
    claude: FakeAnthropicServer, model: AnthropicModel
) -> None:
    """PF8: an ``error`` event inside a 200 stream (Anthropic's overload signal) is an APIStatusError."""
    claude.enqueue_stream_error("overloaded_error", "Overloaded")
    with pytest.raises(anthropic.APIStatusError) as caught:
        await complete(model)
    assert "Overloaded" in str(caught.value)


async def test_an_error_in_the_loop_ends_the_turn_with_error(claude: FakeAnthropicServer) -> None:
    """PF8: through the agent a provider error ends the turn ``error`` in the log and propagates."""
    claude.enqueue_error(401, "invalid x-api-key")
    with closing_runtime() as runtime:
        async with AnthropicModel(
            "fake-claude", base_url=claude.base_url, api_key="k", max_retries=0
        ) as chat:
            agent = Agent(runtime, chat)
            with pytest.raises(anthropic.AuthenticationError):
                await asyncio.wait_for(agent.run_turn("hi"), HANG_GUARD)
    assert agent.session.events()[-1].data["reason"] == "error"


def test_a_missing_key_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """PF8: no key and no endpoint of one's own fails at construction, naming the variable."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude")
