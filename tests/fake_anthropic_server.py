"""A scripted Anthropic Messages server on 127.0.0.1, for tests with the real ``anthropic`` client.

A real HTTP/1.1 server (stdlib ``http.server`` on a background thread, an ephemeral port) that
answers ``POST /v1/messages`` from a queue of scripted replies, as JSON or as the Messages API's SSE
stream (``event: <type>`` / ``data: {...}`` over chunked transfer encoding), whichever the request
asks for. It records every request body and its headers, and can hang a stream after some events
until the client hangs up (to test cancellation), send tool input text that is not JSON, answer with
an HTTP error in Anthropic's shape, or send an ``error`` event mid-stream::

    with FakeAnthropicServer() as server:
        model = AnthropicModel("fake-claude", base_url=server.base_url, api_key="test")
        server.enqueue_text("hi", usage=Usage(10, 3, cache_read=90))
        server.enqueue_tool_calls([("toolu_1", "add", '{"a":1}')])
        ...
        server.requests[0]["system"]

Streams look like Anthropic's: ``message_start`` (with the input and cache usage), a ``ping``, then
per content block ``content_block_start`` / deltas (``text_delta`` split at spaces,
``input_json_delta`` fragments of ``arg_chunk`` characters) / ``content_block_stop``, then
``message_delta`` (``stop_reason`` and the output tokens) and ``message_stop``.

Not a test module: import it (``from fake_anthropic_server import FakeAnthropicServer``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fake_http_server import ScriptedHandler, ScriptedHTTPServer, pieces, split_words

__all__ = ["ERROR_TYPES", "AnthropicReply", "FakeAnthropicServer", "Usage", "stream_events"]

ToolUseSpec = tuple[str, str, str]
"""``(id, name, raw input JSON text)`` — the text is streamed verbatim, malformed or not."""

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
"""The ``error.type`` Anthropic sends with each HTTP status."""


@dataclass(frozen=True)
class Usage:
    """The usage figures of one reply (Anthropic's ``input_tokens`` counts only uncached input)."""

    input_tokens: int = 11
    output_tokens: int = 7
    cache_read: int = 0
    cache_creation: int = 0


@dataclass(frozen=True)
class AnthropicReply:
    """One scripted answer.

    ``stream=None`` answers in whatever form the request asked for; ``True``/``False`` is an
    expectation (a request of the other kind gets a 400 saying so). ``hang_after`` (streams) is the
    number of SSE events sent before the server stops writing and waits for the client to hang up.
    ``status``/``error`` answer with an HTTP error instead; ``stream_error`` sends an ``error``
    event of that type after ``message_start``.
    """

    text: str = ""
    fragments: Sequence[str] | None = None
    thinking: str | None = None
    tool_calls: Sequence[ToolUseSpec] = ()
    arg_chunk: int = 4
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    stream: bool | None = None
    hang_after: int | None = None
    delay: float = 0.0
    status: int = 200
    error: str | None = None
    stream_error: str | None = None
    model: str = "fake-claude"

    def final_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


# --- wire format ---------------------------------------------------------------------------------


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation_input_tokens": usage.cache_creation,
    }


def _message(reply: AnthropicReply, message_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(reply.usage),
    }


def stream_events(reply: AnthropicReply, message_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event type, data)`` pairs of a streamed reply, in order."""
    start = _message(reply, message_id, [])
    start["usage"] = {**_usage(reply.usage), "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    if reply.stream_error is not None:
        events.append(
            ("error", {"type": "error", "error": {"type": reply.stream_error, "message": reply.error}})
        )
        return events
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.thinking:
        blocks.append(
            (
                {"type": "thinking", "thinking": "", "signature": ""},
                [{"type": "thinking_delta", "thinking": piece} for piece in split_words(reply.thinking)],
            )
        )
    if reply.text:
        blocks.append(
            (
                {"type": "text", "text": ""},
                [
                    {"type": "text_delta", "text": piece}
                    for piece in (reply.fragments or split_words(reply.text))
                ],
            )
        )
    for call_id, name, arguments in reply.tool_calls:
        blocks.append(
            (
                {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in pieces(arguments, reply.arg_chunk)
                ],
            )
        )
    for index, (opener, deltas) in enumerate(blocks):
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opener})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.final_reason(), "stop_sequence": None},
                "usage": {"output_tokens": reply.usage.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _complete_message(reply: AnthropicReply, message_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.thinking:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": "sig"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call_id, name, arguments in reply.tool_calls:
        try:
            value = json.loads(arguments) if arguments else {}
        except ValueError:
            value = {}  # a complete message can only carry an object
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": value})
    body = _message(reply, message_id, content)
    body["stop_reason"] = reply.final_reason()
    return body


# --- server --------------------------------------------------------------------------------------


class _Handler(ScriptedHandler):
    route = "/v1/messages"
    id_prefix = "msg_fake_"

    def send_error_body(self, status: int, message: str, kind: str | None) -> None:
        error_type = ERROR_TYPES.get(status, "api_error")
        self.send_json(status, {"type": "error", "error": {"type": error_type, "message": message}})

    def is_http_error(self, reply: AnthropicReply) -> bool:
        return reply.error is not None and reply.stream_error is None

    def extra_headers(self, status: int) -> list[tuple[str, str]]:
        headers = [("request-id", "req_fake")]
        if status >= 400:
            # The SDK retries 429/5xx after this many seconds; 0 keeps retrying tests fast.
            headers += [("retry-after", "0"), ("x-should-retry", "false")]
        return headers

    def stream_events(self, reply: AnthropicReply, reply_id: str, body: dict[str, Any]) -> list[str]:
        return [
            f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in stream_events(reply, reply_id)
        ]

    def complete_body(self, reply: AnthropicReply, reply_id: str) -> dict[str, Any]:
        return _complete_message(reply, reply_id)


class FakeAnthropicServer(ScriptedHTTPServer):
    """The server; use it as a context manager (or call :meth:`start` / :meth:`close`)."""

    handler = _Handler
    thread_name = "fake-anthropic"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` — what ``AsyncAnthropic(base_url=...)`` wants (it adds ``/v1``)."""
        return self.origin

    # --- scripting ---------------------------------------------------------------------------------

    def enqueue(self, reply: AnthropicReply) -> None:
        self._enqueue(reply)

    def enqueue_text(
        self,
        text: str,
        *,
        fragments: Sequence[str] | None = None,
        thinking: str | None = None,
        usage: Usage | None = None,
        stream: bool | None = None,
        hang_after: int | None = None,
        delay: float = 0.0,
        stop_reason: str | None = None,
    ) -> None:
        """A text reply; ``fragments`` are the streamed text deltas (default: split at spaces)."""
        if fragments is not None:
            assert "".join(fragments) == text, "fragments must join to the text"
        self.enqueue(
            AnthropicReply(
                text=text,
                fragments=fragments,
                thinking=thinking,
                usage=usage or Usage(),
                stream=stream,
                hang_after=hang_after,
                delay=delay,
                stop_reason=stop_reason,
            )
        )

    def enqueue_tool_calls(
        self,
        calls: Sequence[ToolUseSpec],
        *,
        text: str = "",
        usage: Usage | None = None,
        stream: bool | None = None,
        arg_chunk: int = 4,
        hang_after: int | None = None,
    ) -> None:
        """A reply with ``tool_use`` blocks ``(id, name, raw input text)``, sent verbatim."""
        self.enqueue(
            AnthropicReply(
                text=text,
                tool_calls=tuple(calls),
                usage=usage or Usage(),
                stream=stream,
                arg_chunk=arg_chunk,
                hang_after=hang_after,
            )
        )

    def enqueue_error(self, status: int, message: str) -> None:
        """An Anthropic-style error ``{"type": "error", "error": {"type", "message"}}`` with ``status``."""
        self.enqueue(AnthropicReply(status=status, error=message))

    def enqueue_stream_error(self, error_type: str, message: str) -> None:
        """A 200 stream that sends an ``error`` event (``overloaded_error``, ...) after ``message_start``."""
        self.enqueue(AnthropicReply(text="never sent", stream_error=error_type, error=message, stream=True))
