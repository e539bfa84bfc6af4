"""The Anthropic :class:`~toolrt.loop.ChatModel`: the official ``anthropic`` client, Messages API.

:class:`AnthropicModel` is the Claude counterpart of :class:`~toolrt.loop.OpenAIChatModel`, with the
same shape: ``complete(request, signal=..., on_text=...)``, an already-aborted signal raising
``AbortError("model call aborted", "ABORTED")`` before anything is sent, an abort during the call
cancelling it (closing the HTTP stream) and raising the same error once the request has ended, and
``aclose()`` / ``async with``. ``anthropic`` is imported only when an :class:`AnthropicModel` is built.

Why it streams the raw events (``messages.create(stream=True)``) rather than using the SDK's
``messages.stream`` helper: the helper parses every tool input as JSON while it streams, and a model
that emits malformed input JSON would fail the whole call. Here the input text is kept verbatim as
the call's raw arguments, so the pipeline answers ``INVALID_ARGS`` and the model can retry.

Why the cache breakpoints: toolrt renders the tool schemas and the system prompt byte-stably, so
marking the end of each (``cache_control: {"type": "ephemeral"}`` on the last tool and on the system
text) lets every later call of a session read that prefix from Anthropic's prompt cache. The cache
reads and writes the API reports reach :class:`~toolrt.loop.Usage` and the session log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt.loop._anthropic_format import from_anthropic_message, to_anthropic_messages, to_anthropic_tools
from toolrt.loop._chat_model import ModelResponse, TextDelta, raise_if_aborted
from toolrt.loop._messages import AssistantMessage, ModelRequest, ToolCall, Usage
from toolrt.loop._model_call import call_abortably
from toolrt.loop._sdk_client_model import SdkClientModel

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import RawMessageStreamEvent

__all__ = ["AnthropicModel"]

_NO_KEY_PLACEHOLDER = "toolrt-no-key"
_EPHEMERAL = {"type": "ephemeral"}


class AnthropicModel(SdkClientModel):
    """A :class:`~toolrt.loop._chat_model.ChatModel` over the Messages API (``anthropic.AsyncAnthropic``).

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``; ``base_url`` to the client's own default
    (``$ANTHROPIC_BASE_URL`` or Anthropic). A custom ``base_url`` with no key at all (a local proxy)
    sends a placeholder key. Pass ``client`` to use a preconfigured ``AsyncAnthropic`` instead
    (``base_url``/``api_key``/``max_retries`` are then ignored, and :meth:`aclose` leaves it open).

    ``max_tokens`` is required by the API, so it has a default here. ``cache=True`` (the default)
    places the two prompt-cache breakpoints (after the tools, after the system prompt).
    ``stream=True`` (the default) streams text to ``on_text`` as it arrives. ``extra_body`` is merged
    into every request body (``{"thinking": {...}}``, ...); ``timeout`` is the per-request timeout in
    seconds; ``max_retries`` is the client's retry count for 429/5xx/529. Provider errors
    (``anthropic.AuthenticationError``, ``RateLimitError``, ``OverloadedError``, ...) propagate as is.

    >>> model = AnthropicModel("claude-sonnet-4-5", base_url="http://127.0.0.1:9", api_key="k")
    >>> model.max_tokens
    8192
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 8192,
        cache: bool = True,
        stream: bool = True,
        client: AsyncAnthropic | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError("max_tokens must be a positive integer")
        self.model = model
        self.max_tokens = max_tokens
        self.cache = cache
        self.stream = stream
        self.extra_body: dict[str, Any] | None = dict(extra_body) if extra_body else None
        self.timeout = timeout
        self._owns_client = client is None
        if client is None:
            from anthropic import AsyncAnthropic

            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                if base_url is None and not os.environ.get("ANTHROPIC_BASE_URL"):
                    raise ValueError(
                        "AnthropicModel needs an API key: pass api_key=..., or set ANTHROPIC_API_KEY"
                        " (a local proxy needs none: pass base_url=... instead)"
                    )
                key = _NO_KEY_PLACEHOLDER
            client = AsyncAnthropic(api_key=key, base_url=base_url, max_retries=max_retries)
        self.client: AsyncAnthropic = client

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request`` (without ``stream``).

        Public so a caller can see exactly what is sent, cache breakpoints included.
        """
        system, messages = to_anthropic_messages(request.messages, system=request.system)
        tools: list[dict[str, Any]] = [dict(tool) for tool in to_anthropic_tools(request.tools)]
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": messages}
        if system:
            if self.cache:
                body["system"] = [{"type": "text", "text": system, "cache_control": dict(_EPHEMERAL)}]
            else:
                body["system"] = system
        if tools:
            if self.cache:
                # One breakpoint on the last tool caches the whole tool list (the prefix before it).
                tools[-1]["cache_control"] = dict(_EPHEMERAL)
            body["tools"] = tools
        return body

    async def complete(
        self, request: ModelRequest, *, signal: AbortSignal, on_text: TextDelta | None = None
    ) -> ModelResponse:
        """Run one model call; see :class:`~toolrt.loop._chat_model.ChatModel`."""
        raise_if_aborted(signal)
        body = self.request_body(request)
        return await call_abortably(self._call(body, on_text), signal)

    async def _call(self, body: dict[str, Any], on_text: TextDelta | None) -> ModelResponse:
        messages = self.client.messages
        options: dict[str, Any] = {}
        if self.extra_body:
            options["extra_body"] = self.extra_body
        if self.timeout is not None:
            options["timeout"] = self.timeout
        if not self.stream:
            reply = await messages.create(**body, **options, stream=False)
            message = from_anthropic_message(reply)
            if on_text is not None and message.text:
                on_text(message.text)
            return ModelResponse(message, _usage(reply.usage))
        stream = await messages.create(**body, **options, stream=True)
        state = _StreamState(on_text)
        async with stream:  # closes the response however the loop ends (abort included)
            async for event in stream:
                state.add(event)
        return state.response()


@dataclass(slots=True)
class _Block:
    type: str
    id: str = ""
    name: str = ""
    initial_input: Any = None
    parts: list[str] = field(default_factory=list)


class _StreamState:
    """Folds raw Messages stream events into one assistant message and its usage."""

    __slots__ = ("blocks", "on_text", "stop_reason", "usage")

    def __init__(self, on_text: TextDelta | None) -> None:
        self.on_text = on_text
        self.blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None
        self.usage: dict[str, int | None] = {}

    def add(self, event: RawMessageStreamEvent) -> None:
        if event.type == "message_start":
            self._take_usage(event.message.usage)
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.blocks[event.index] = _Block("tool_use", block.id, block.name, block.input)
            elif block.type == "text":
                self.blocks[event.index] = _Block("text")
                if block.text:
                    self._text(event.index, block.text)
            elif block.type == "thinking":
                self.blocks[event.index] = _Block(
                    "thinking", parts=[block.thinking] if block.thinking else []
                )
            else:  # server tools, redacted thinking: not part of the neutral conversation
                self.blocks[event.index] = _Block(block.type)
        elif event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self._text(event.index, delta.text)
            elif delta.type == "input_json_delta":
                self._part(event.index, "tool_use", delta.partial_json)
            elif delta.type == "thinking_delta":
                self._part(event.index, "thinking", delta.thinking)
        elif event.type == "message_delta":
            if event.delta.stop_reason is not None:
                self.stop_reason = event.delta.stop_reason
            self._take_usage(event.usage)

    def _text(self, index: int, text: str) -> None:
        self._part(index, "text", text)
        if self.on_text is not None and text:
            self.on_text(text)

    def _part(self, index: int, kind: str, text: str) -> None:
        block = self.blocks.get(index)
        if block is None:  # a delta before its start: keep it rather than lose it
            block = self.blocks[index] = _Block(kind)
        if block.type == kind:
            block.parts.append(text)

    def _take_usage(self, usage: Any) -> None:
        # message_start carries the input figures, message_delta the cumulative ones: a later
        # reported figure replaces an earlier one, an unreported one (None) keeps it.
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(usage, key, None)
            if isinstance(value, int):
                self.usage[key] = value

    def response(self) -> ModelResponse:
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCall] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.type == "text":
                text.extend(block.parts)
            elif block.type == "thinking":
                reasoning.extend(block.parts)
            elif block.type == "tool_use":
                # The streamed input text, verbatim: malformed JSON stays malformed, so the pipeline
                # answers INVALID_ARGS instead of this call failing or running with ``{}``.
                arguments = "".join(block.parts)
                if not arguments:
                    arguments = json.dumps(block.initial_input if block.initial_input is not None else {})
                calls.append(ToolCall(block.id or f"toolu_{index}", block.name, arguments))
        message = AssistantMessage(
            text="".join(text),
            tool_calls=tuple(calls),
            reasoning="".join(reasoning) if reasoning else None,
            stop_reason=self.stop_reason,
        )
        return ModelResponse(message, Usage(**self.usage))


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    return Usage(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        cache_read_input_tokens=getattr(usage, "cache_read_input_tokens", None),
        cache_creation_input_tokens=getattr(usage, "cache_creation_input_tokens", None),
    )
