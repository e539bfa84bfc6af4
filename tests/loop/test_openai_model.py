"""OpenAIChatModel against a real local HTTP server, through the real ``openai`` client; ScriptedModel.

No mocks of ``openai``: :mod:`fake_openai_server` speaks Chat Completions (JSON and SSE) on
127.0.0.1 and records what it received.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from model_helpers import ADD_SCHEMA, HANG_GUARD
from model_helpers import model_request as request

from fake_openai_server import FakeOpenAIServer
from helpers import text
from toolrt import AbortController, AbortError, AbortSignal
from toolrt._errors import ScriptExhaustedError
from toolrt.loop import ConversationError
from toolrt.loop._chat_model import ChatModel
from toolrt.loop._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from toolrt.loop._openai_model import OpenAIChatModel
from toolrt.loop._scripted_model import ScriptedModel, ScriptStep


@pytest.fixture
async def model(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    async with OpenAIChatModel("fake-model", base_url=server.base_url, api_key="test-key") as chat:
        yield chat


@pytest.fixture
async def json_model(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    async with OpenAIChatModel(
        "fake-model", base_url=server.base_url, api_key="test-key", stream=False
    ) as chat:
        yield chat


async def complete(chat: OpenAIChatModel, req: ModelRequest | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("signal", AbortSignal.never())
    return await asyncio.wait_for(chat.complete(req or request(), **kwargs), HANG_GUARD)


async def disconnected(server: FakeOpenAIServer) -> bool:
    return await asyncio.to_thread(server.wait_for_disconnect, HANG_GUARD)


async def test_both_models_are_chat_models(model: OpenAIChatModel) -> None:
    models: list[ChatModel] = [model, ScriptedModel([])]  # checked by mypy --strict
    assert len(models) == 2


# --- text -----------------------------------------------------------------------------------------


async def test_streamed_text_reaches_on_text_fragment_by_fragment(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.enqueue_text("Hello, world!", fragments=["Hel", "lo,", " world", "!"], stream=True)
    seen: list[str] = []
    response = await complete(model, on_text=seen.append)
    assert seen == ["Hel", "lo,", " world", "!"]
    assert response.message == AssistantMessage(text="Hello, world!", stop_reason="stop")
    assert response.usage == Usage(input_tokens=11, output_tokens=7)


async def test_non_streaming_text(server: FakeOpenAIServer, json_model: OpenAIChatModel) -> None:
    server.enqueue_text("Hello.", stream=False, usage=(3, 2))
    seen: list[str] = []
    response = await complete(json_model, on_text=seen.append)
    assert response.message == AssistantMessage(text="Hello.", stop_reason="stop")
    assert response.usage == Usage(input_tokens=3, output_tokens=2)
    assert seen == ["Hello."]
    assert server.requests[0]["stream"] is False
    assert "stream_options" not in server.requests[0]


async def test_streaming_requests_usage_and_reports_it(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.enqueue_text("ok", usage=(1234, 56))
    response = await complete(model)
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert response.usage == Usage(input_tokens=1234, output_tokens=56)


async def test_missing_usage_is_reported_as_unknown(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.enqueue_text("ok", usage=None)
    assert (await complete(model)).usage == Usage()


async def test_reasoning_content_is_captured_streaming_and_not(
    server: FakeOpenAIServer, model: OpenAIChatModel, json_model: OpenAIChatModel
) -> None:
    server.enqueue_text("42", reasoning="Six times seven.", reasoning_fragments=["Six ", "times ", "seven."])
    seen: list[str] = []
    streamed = await complete(model, on_text=seen.append)
    assert streamed.message.reasoning == "Six times seven."
    assert seen == ["42"]  # reasoning is not answer text
    server.enqueue_text("42", reasoning="Six times seven.")
    assert (await complete(json_model)).message.reasoning == "Six times seven."


# --- tool calls -----------------------------------------------------------------------------------

PARALLEL = [
    ("call_1", "add", '{"a": 1, "b": 2}'),
    ("call_2", "search", '{"q": "caf\\u00e9 \\"quoted\\"", "tags": ["x", "y"], "n": null}'),
    ("call_3", "now", "{}"),
]


@pytest.mark.parametrize("interleave", [False, True], ids=["sequential", "interleaved"])
async def test_parallel_tool_calls_split_across_chunks_are_reassembled_in_order(
    server: FakeOpenAIServer, model: OpenAIChatModel, interleave: bool
) -> None:
    server.enqueue_tool_calls(PARALLEL, text="Let me check.", stream=True, arg_chunk=3, interleave=interleave)
    response = await complete(model)
    assert response.message.tool_calls == tuple(ToolCall(*spec) for spec in PARALLEL)  # exact raw text
    assert response.message.text == "Let me check."
    assert response.message.stop_reason == "tool_calls"


async def test_non_streaming_tool_calls(server: FakeOpenAIServer, json_model: OpenAIChatModel) -> None:
    server.enqueue_tool_calls(PARALLEL, stream=False)
    response = await complete(json_model)
    assert response.message.tool_calls == tuple(ToolCall(*spec) for spec in PARALLEL)
    assert response.message.text == ""


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_malformed_arguments_are_passed_through_raw(
    server: FakeOpenAIServer, model: OpenAIChatModel, json_model: OpenAIChatModel, streamed: bool
) -> None:
    malformed = '{"a": 1, "b": '
    server.enqueue_tool_calls([("call_1", "add", malformed)], arg_chunk=2)
    response = await complete(model if streamed else json_model)
    # The adapter never parses: the agent loop turns this into an INVALID_ARGS result.
    assert response.message.tool_calls == (ToolCall("call_1", "add", malformed),)


async def test_ollama_style_reused_index_and_missing_ids(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    # Ollama sends every call of a parallel batch at index 0, told apart only by a new id + name.
    server.enqueue_deltas(
        [
            {"role": "assistant", "content": ""},
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "type": "function", "function": {"name": "add", "arguments": "{"}}
                ]
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": '"a":1}'}}]},
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "b",
                        "type": "function",
                        "function": {"name": "now", "arguments": "{}"},
                    }
                ]
            },
            # No id at all: one is made up so the result can be paired with the call.
            {
                "tool_calls": [
                    {"index": 1, "type": "function", "function": {"name": "add", "arguments": "{}"}}
                ]
            },
        ]
    )
    response = await complete(model)
    assert response.message.tool_calls == (
        ToolCall("a", "add", '{"a":1}'),
        ToolCall("b", "now", "{}"),
        ToolCall("call_2", "add", "{}"),
    )


# --- the request on the wire ----------------------------------------------------------------------


async def test_request_body_has_tools_and_messages_in_call_order(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    calls = (ToolCall("call_1", "add", '{"a": 1, "b": 2}'), ToolCall("call_2", "add", '{"a": 3,'))
    conversation: tuple[Message, ...] = (
        UserMessage(text("add twice")),
        AssistantMessage(text="", tool_calls=calls),
        ToolResultMessage("call_2", "add", text("Error: invalid arguments"), is_error=True),  # finished first
        ToolResultMessage("call_1", "add", text("3")),
        UserMessage(text("lint: prefer small numbers"), id="ctx-1"),
    )
    server.enqueue_text("done")
    await complete(model, request(*conversation))
    body = server.requests[0]
    assert body["model"] == "fake-model"
    assert body["tools"] == [{"type": "function", "function": ADD_SCHEMA}]
    assert body["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "add twice"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": '{"a": 3,'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: invalid arguments"},
        {"role": "user", "content": "lint: prefer small numbers"},
    ]


async def test_no_tools_means_no_tools_key_and_extra_body_is_merged(server: FakeOpenAIServer) -> None:
    server.enqueue_text("hi")
    async with OpenAIChatModel(
        "deepseek-test", base_url=server.base_url, api_key="k", extra_body={"thinking": {"type": "enabled"}}
    ) as chat:
        await complete(chat, request(tools=()))
    body = server.requests[0]
    assert "tools" not in body
    assert body["thinking"] == {"type": "enabled"}
    assert body["model"] == "deepseek-test"


async def test_a_broken_conversation_fails_before_any_request(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    dangling = request(UserMessage(text("u")), AssistantMessage(tool_calls=(ToolCall("c", "add", "{}"),)))
    with pytest.raises(ConversationError, match="has no result"):
        await complete(model, dangling)
    assert server.requests == []


async def test_provider_errors_propagate(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.enqueue_error(400, "context too long")
    with pytest.raises(openai.BadRequestError, match="context too long"):
        await complete(model)


# --- cancellation ---------------------------------------------------------------------------------


async def test_pre_aborted_signal_never_reaches_the_server(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.enqueue_text("never sent")
    with pytest.raises(AbortError) as caught:
        await complete(model, signal=AbortSignal.aborted_with("user pressed stop"))
    assert caught.value.code == "ABORTED"
    assert caught.value.message == "model call aborted"
    assert server.requests == []
    assert server.pending == 1


async def test_abort_mid_stream_raises_and_closes_the_connection(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    # Role chunk + first fragment, then the server goes silent until the client hangs up.
    server.enqueue_text("one two three", fragments=["one", " two", " three"], hang_after=2)
    controller = AbortController()
    first = asyncio.Event()
    seen: list[str] = []

    def on_text(fragment: str) -> None:
        seen.append(fragment)
        first.set()

    call = asyncio.create_task(model.complete(request(), signal=controller.signal, on_text=on_text))
    await asyncio.wait_for(first.wait(), HANG_GUARD)
    controller.abort("user pressed stop")
    with pytest.raises(AbortError) as caught:
        await asyncio.wait_for(call, HANG_GUARD)
    assert caught.value.code == "ABORTED"
    assert seen == ["one"]
    assert await disconnected(server)  # the stream was closed, not left dangling


async def test_abort_from_another_thread_while_waiting_for_a_json_reply(
    server: FakeOpenAIServer, json_model: OpenAIChatModel
) -> None:
    server.enqueue_text("late", hang_after=0)  # a JSON reply that never comes
    controller = AbortController()
    call = asyncio.create_task(json_model.complete(request(), signal=controller.signal))
    while not server.requests:  # the request is on the wire
        await asyncio.sleep(0.01)
    await asyncio.to_thread(controller.abort, "stop from a worker thread")
    with pytest.raises(AbortError):
        await asyncio.wait_for(call, HANG_GUARD)
    assert await disconnected(server)


async def test_cancelling_the_caller_cancels_the_call_and_closes_the_stream(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.enqueue_text("a b", hang_after=1)
    controller = AbortController()
    call = asyncio.create_task(model.complete(request(), signal=controller.signal))
    while not server.requests:
        await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):  # a cancellation stays a cancellation
        await asyncio.wait_for(call, HANG_GUARD)
    assert await disconnected(server)


async def test_the_model_is_reusable_after_an_abort(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.enqueue_text("x y", hang_after=1)
    server.enqueue_text("fine")
    controller = AbortController()
    call = asyncio.create_task(model.complete(request(), signal=controller.signal))
    while not server.requests:
        await asyncio.sleep(0.01)
    controller.abort()
    with pytest.raises(AbortError):
        await asyncio.wait_for(call, HANG_GUARD)
    assert (await complete(model)).message.text == "fine"


# --- configuration --------------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("TOOLRT_API_KEY", "TOOLRT_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


async def test_base_url_and_key_come_from_toolrt_env(
    server: FakeOpenAIServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("TOOLRT_BASE_URL", server.base_url)
    clean_env.setenv("TOOLRT_API_KEY", "toolrt-key")
    clean_env.setenv("OPENAI_API_KEY", "openai-key")
    server.enqueue_text("hi")
    async with OpenAIChatModel("fake-model") as chat:
        await complete(chat)
    assert server.request_headers[0]["authorization"] == "Bearer toolrt-key"


async def test_openai_api_key_is_the_fallback(
    server: FakeOpenAIServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("OPENAI_API_KEY", "openai-key")
    server.enqueue_text("hi")
    async with OpenAIChatModel("fake-model", base_url=server.base_url) as chat:
        await complete(chat)
    assert server.request_headers[0]["authorization"] == "Bearer openai-key"


async def test_a_local_server_needs_no_key(server: FakeOpenAIServer, clean_env: pytest.MonkeyPatch) -> None:
    server.enqueue_text("hi")
    async with OpenAIChatModel("llama3", base_url=server.base_url) as chat:
        assert (await complete(chat)).message.text == "hi"


def test_no_key_and_no_endpoint_is_a_clear_error(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="TOOLRT_API_KEY"):
        OpenAIChatModel("gpt-test")


async def test_a_supplied_client_is_used_and_left_open(server: FakeOpenAIServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="own", max_retries=0)
    server.enqueue_text("hi")
    async with OpenAIChatModel("fake-model", client=client, timeout=5) as chat:
        assert (await complete(chat)).message.text == "hi"
    assert not client.is_closed()
    assert server.request_headers[0]["authorization"] == "Bearer own"
    await client.close()


# --- ScriptedModel --------------------------------------------------------------------------------


async def test_scripted_model_replays_steps_and_records_requests() -> None:
    async def later(req: ModelRequest) -> AssistantMessage:
        return AssistantMessage(text=f"saw {len(req.messages)} messages")

    call = ToolCall("c1", "add", '{"a":1,"b":2}')
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=(call,)),
            lambda req: AssistantMessage(text=f"last was {type(req.messages[-1]).__name__}"),
            later,
            "plain text",
        ]
    )
    history: list[Message] = [UserMessage(text("go"))]
    replies: list[str] = []
    first = await model.complete(request(*history), signal=AbortSignal.never())
    assert first.message.tool_calls == (call,)
    history += [first.message, ToolResultMessage("c1", "add", text("3"))]
    for _ in range(3):
        response = await model.complete(
            ModelRequest("s", history, ()), signal=AbortSignal.never(), on_text=replies.append
        )
        history.append(response.message)
    assert replies == ["last was ToolResultMessage", "saw 4 messages", "plain text"]
    assert len(model.requests) == 4
    assert model.requests[1].messages[-1] == ToolResultMessage("c1", "add", text("3"))
    assert len(model.requests[1].messages) == 3  # a snapshot, not the live list
    assert model.remaining == 0


async def test_scripted_model_running_out_is_a_clear_error() -> None:
    model = ScriptedModel(["only"])
    await model.complete(request(), signal=AbortSignal.never())
    with pytest.raises(ScriptExhaustedError, match=r"1 step\(s\) but was asked for reply #2"):
        await model.complete(request(), signal=AbortSignal.never())


async def test_scripted_model_honours_the_signal() -> None:
    model = ScriptedModel([ScriptStep("slow", delay=HANG_GUARD * 2), "next"])
    with pytest.raises(AbortError):
        await model.complete(request(), signal=AbortSignal.aborted_with("x"))
    assert model.requests == []  # a pre-aborted call never reaches the script
    controller = AbortController()
    threading.Timer(0.05, controller.abort).start()
    with pytest.raises(AbortError, match="model call aborted"):
        await asyncio.wait_for(model.complete(request(), signal=controller.signal), HANG_GUARD)
    assert (await model.complete(request(), signal=AbortSignal.never())).message.text == "next"


async def test_scripted_model_reports_step_usage() -> None:
    model = ScriptedModel([ScriptStep(AssistantMessage(text="x"), usage=Usage(5, 1))])
    assert (await model.complete(request(), signal=AbortSignal.never())).usage == Usage(5, 1)
