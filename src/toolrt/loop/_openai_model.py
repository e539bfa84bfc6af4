"""The OpenAI-compatible :class:`~toolrt.loop.ChatModel`: the official ``openai`` client.

:class:`OpenAIChatModel` drives ``AsyncOpenAI`` against any OpenAI-compatible Chat Completions
endpoint: OpenAI, DeepSeek, vLLM, Ollama, ... It honours the call's :class:`~toolrt.AbortSignal`:
an already-aborted signal raises ``AbortError("model call aborted", "ABORTED")`` before anything
happens, and an abort during the call cancels it (closing the HTTP stream) and raises the same error
once the request has ended. ``openai`` is imported only when an :class:`OpenAIChatModel` is built.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt.loop._chat_model import ModelResponse, TextDelta, raise_if_aborted
from toolrt.loop._messages import AssistantMessage, ModelRequest, ToolCall, Usage
from toolrt.loop._model_call import call_abortably
from toolrt.loop._openai_format import from_openai_message, reasoning_of, to_openai_messages, to_openai_tools
from toolrt.loop._sdk_client_model import SdkClientModel

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types import CompletionUsage
    from openai.types.chat import (
        ChatCompletionChunk,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageParam,
    )

__all__ = ["OpenAIChatModel"]

_NO_KEY_PLACEHOLDER = "toolrt-no-key"


class OpenAIChatModel(SdkClientModel):
    """A :class:`~toolrt.loop._chat_model.ChatModel` over the Chat Completions API (``openai.AsyncOpenAI``).

    ``api_key`` defaults to ``$TOOLRT_API_KEY``, then ``$OPENAI_API_KEY``; ``base_url`` to
    ``$TOOLRT_BASE_URL``, then the client's own default (``$OPENAI_BASE_URL`` or OpenAI). With a
    custom endpoint and no key at all (a local Ollama or vLLM), a placeholder key is sent. Pass
    ``client`` to use a preconfigured ``AsyncOpenAI`` instead (``base_url``/``api_key`` are then
    ignored, and :meth:`aclose` leaves it open).

    ``stream=True`` (the default) streams: text fragments reach ``on_text`` as they arrive, parallel
    tool calls are reassembled by index, ``reasoning_content``/``reasoning`` deltas are collected and
    usage is requested with ``stream_options={"include_usage": True}``. ``extra_body`` is merged into
    every request body (``{"thinking": {"type": "enabled"}}`` for DeepSeek, ...); ``timeout`` is the
    per-request timeout in seconds. Provider errors (``openai.APIStatusError``, ...) propagate as is.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        stream: bool = True,
        client: AsyncOpenAI | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.model = model
        self.stream = stream
        self.extra_body: dict[str, Any] | None = dict(extra_body) if extra_body else None
        self.timeout = timeout
        self._owns_client = client is None
        if client is None:
            from openai import AsyncOpenAI

            url = base_url or os.environ.get("TOOLRT_BASE_URL") or None
            key = api_key or os.environ.get("TOOLRT_API_KEY") or os.environ.get("OPENAI_API_KEY")
            if not key:
                if url is None and not os.environ.get("OPENAI_BASE_URL"):
                    raise ValueError(
                        "OpenAIChatModel needs an API key: pass api_key=..., or set TOOLRT_API_KEY or"
                        " OPENAI_API_KEY (a local server needs none: pass base_url=... instead)"
                    )
                key = _NO_KEY_PLACEHOLDER
            client = AsyncOpenAI(api_key=key, base_url=url)
        self.client: AsyncOpenAI = client

    async def complete(
        self, request: ModelRequest, *, signal: AbortSignal, on_text: TextDelta | None = None
    ) -> ModelResponse:
        """Run one model call; see :class:`~toolrt.loop._chat_model.ChatModel`."""
        raise_if_aborted(signal)
        messages = to_openai_messages(request.system, request.messages)
        tools = to_openai_tools(request.tools)
        return await call_abortably(self._call(messages, tools, on_text), signal)

    async def _call(
        self,
        messages: list[ChatCompletionMessageParam],
        tools: list[ChatCompletionFunctionToolParam],
        on_text: TextDelta | None,
    ) -> ModelResponse:
        from openai import not_given, omit

        completions = self.client.chat.completions
        timeout = self.timeout if self.timeout is not None else not_given
        if not self.stream:
            completion = await completions.create(
                model=self.model,
                messages=messages,
                tools=tools or omit,
                stream=False,
                extra_body=self.extra_body,
                timeout=timeout,
            )
            if not completion.choices:
                return ModelResponse(AssistantMessage(), _usage(completion.usage))
            choice = completion.choices[0]
            message = from_openai_message(choice.message, finish_reason=choice.finish_reason)
            if on_text is not None and message.text:
                on_text(message.text)
            return ModelResponse(message, _usage(completion.usage))
        stream = await completions.create(
            model=self.model,
            messages=messages,
            tools=tools or omit,
            stream=True,
            stream_options={"include_usage": True},
            extra_body=self.extra_body,
            timeout=timeout,
        )
        state = _StreamState(on_text)
        async with stream:  # closes the response however the loop ends (abort included)
            async for chunk in stream:
                state.add(chunk)
        return state.response()


@dataclass(slots=True)
class _PartialCall:
    index: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _StreamState:
    """Folds ``ChatCompletionChunk``s (choice 0) into one assistant message."""

    __slots__ = ("calls", "finish_reason", "on_text", "reasoning", "slots", "text", "usage")

    def __init__(self, on_text: TextDelta | None) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_PartialCall] = []
        self.slots: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()

    def add(self, chunk: ChatCompletionChunk) -> None:
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = reasoning_of(delta)
            if reasoning:
                self.reasoning.append(reasoning)
            if delta.content:
                self.text.append(delta.content)
                if self.on_text is not None:
                    self.on_text(delta.content)
            for call_delta in delta.tool_calls or ():
                self._add_call(call_delta.index, call_delta.id, call_delta.function)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _add_call(self, index: int | None, call_id: str | None, function: Any) -> None:
        name = getattr(function, "name", None) if function is not None else None
        fragment = getattr(function, "arguments", None) if function is not None else None
        if not isinstance(index, int):  # some servers omit it: a new id starts a call, else continue
            index = len(self.calls) if (call_id and name) or not self.calls else self.calls[-1].index
        partial = self.slots.get(index)
        # Ollama reuses index 0 for every call of a parallel batch; a delta that opens a call (new
        # id *and* a name) at a busy index is a new call, not more arguments for the old one.
        if partial is None or (call_id and name and partial.id and call_id != partial.id):
            partial = _PartialCall(index)
            self.calls.append(partial)
            self.slots[index] = partial
        if call_id and not partial.id:
            partial.id = call_id
        if name and not partial.name:
            partial.name = name
        if fragment:
            partial.arguments.append(fragment)

    def response(self) -> ModelResponse:
        ordered = sorted(enumerate(self.calls), key=lambda item: (item[1].index, item[0]))
        calls = tuple(
            ToolCall(partial.id or f"call_{position}", partial.name, "".join(partial.arguments))
            for position, (_, partial) in enumerate(ordered)
        )
        message = AssistantMessage(
            text="".join(self.text),
            tool_calls=calls,
            reasoning="".join(self.reasoning) if self.reasoning else None,
            stop_reason=self.finish_reason,
        )
        return ModelResponse(message, self.usage)


def _usage(usage: CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    return Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
