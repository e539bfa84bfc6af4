"""A scripted OpenAI Chat Completions server on 127.0.0.1, for tests with the real ``openai`` client.

A real HTTP/1.1 server (stdlib ``http.server`` on a background thread, an ephemeral port) that
answers ``POST /v1/chat/completions`` from a queue of scripted replies, as JSON or as an SSE stream
(``data: {...}`` chunks over chunked transfer encoding, then ``data: [DONE]``), whichever the
request asks for. It records every request body, and can delay a reply, hang a stream after some
chunks until the client hangs up (to test cancellation), or send any argument text at all::

    with FakeOpenAIServer() as server:
        model = OpenAIChatModel("fake-model", base_url=server.base_url, api_key="test")
        server.enqueue_text("hi")
        server.enqueue_tool_calls([("call_1", "add", '{"a":1}')], stream=True)
        ...
        server.requests[0]["messages"]

Streams look like OpenAI's: a role chunk, ``reasoning_content`` deltas, content deltas, tool calls
(the first delta of a call carries ``id``/``type``/``name`` and empty arguments, later ones argument
fragments of ``arg_chunk`` characters), a chunk with ``finish_reason``, and, when the request set
``stream_options.include_usage``, a final chunk with empty ``choices`` and the usage.

Not a test module: import it (``from fake_openai_server import FakeOpenAIServer``).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fake_http_server import ScriptedHandler, ScriptedHTTPServer, pieces, split_words

__all__ = ["FakeOpenAIServer", "ScriptedReply", "sse_chunks"]

ToolCallSpec = tuple[str, str, str]
"""``(id, name, raw arguments text)``."""


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer.

    ``stream=None`` answers in whatever form the request asked for; ``True``/``False`` is an
    expectation: a request of the other kind gets a 400 saying so. ``hang_after`` (streams) is the
    number of SSE chunks sent before the server stops writing and waits for the client to hang up;
    for a JSON reply any value hangs before the response. ``deltas`` replaces the generated choice
    deltas with exactly these (for unusual servers, e.g. Ollama's reused tool-call index).
    """

    text: str = ""
    fragments: Sequence[str] | None = None
    reasoning: str | None = None
    reasoning_fragments: Sequence[str] | None = None
    tool_calls: Sequence[ToolCallSpec] = ()
    arg_chunk: int = 4
    interleave: bool = False
    finish_reason: str | None = None
    usage: tuple[int, int] | None = (11, 7)
    stream: bool | None = None
    hang_after: int | None = None
    delay: float = 0.0
    status: int = 200
    error: str | None = None
    deltas: Sequence[Mapping[str, Any]] | None = None
    model: str = "fake-model"

    def final_reason(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


# --- wire format ---------------------------------------------------------------------------------


def _choice_deltas(reply: ScriptedReply) -> list[dict[str, Any]]:
    if reply.deltas is not None:
        return [dict(delta) for delta in reply.deltas]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if reply.reasoning:
        reasoning = reply.reasoning_fragments or split_words(reply.reasoning)
        deltas.extend({"reasoning_content": piece} for piece in reasoning)
    if reply.text:
        deltas.extend({"content": piece} for piece in (reply.fragments or split_words(reply.text)))
    openers = [
        {
            "tool_calls": [
                {"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            ]
        }
        for i, (call_id, name, _) in enumerate(reply.tool_calls)
    ]
    fragments = [
        [
            {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}
            for piece in pieces(args, reply.arg_chunk)
        ]
        for i, (_, _, args) in enumerate(reply.tool_calls)
    ]
    if reply.interleave:
        deltas.extend(openers)
        for row in itertools.zip_longest(*fragments):
            deltas.extend(delta for delta in row if delta is not None)
    else:
        for opener, rest in zip(openers, fragments, strict=True):
            deltas.append(opener)
            deltas.extend(rest)
    return deltas


def sse_chunks(reply: ScriptedReply, completion_id: str, include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` payloads of a streamed reply, in order."""
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": reply.model,
            "choices": choices,
        }
        if include_usage:
            payload["usage"] = None
        return payload

    chunks = [
        chunk([{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}])
        for delta in _choice_deltas(reply)
    ]
    chunks.append(chunk([{"index": 0, "delta": {}, "finish_reason": reply.final_reason(), "logprobs": None}]))
    if include_usage and reply.usage is not None:
        last = chunk([])
        last["usage"] = _usage(reply.usage)
        chunks.append(last)
    return chunks


def _completion(reply: ScriptedReply, completion_id: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in reply.tool_calls
        ]
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": reply.final_reason(), "logprobs": None}
        ],
    }
    if reply.usage is not None:
        body["usage"] = _usage(reply.usage)
    return body


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


# --- server --------------------------------------------------------------------------------------


class _Handler(ScriptedHandler):
    route = "/v1/chat/completions"
    id_prefix = "chatcmpl-fake-"

    def send_error_body(self, status: int, message: str, kind: str | None) -> None:
        error = {"message": message} if kind is None else {"message": message, "type": kind}
        self.send_json(status, {"error": error})

    def stream_events(self, reply: ScriptedReply, reply_id: str, body: dict[str, Any]) -> list[str]:
        options = body.get("stream_options") or {}
        chunks = sse_chunks(reply, reply_id, bool(options.get("include_usage")))
        return [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]

    def complete_body(self, reply: ScriptedReply, reply_id: str) -> dict[str, Any]:
        return _completion(reply, reply_id)


class FakeOpenAIServer(ScriptedHTTPServer):
    """The server; use it as a context manager (or call :meth:`start` / :meth:`close`)."""

    handler = _Handler
    thread_name = "fake-openai"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — what ``AsyncOpenAI(base_url=...)`` wants."""
        return f"{self.origin}/v1"

    # --- scripting ---------------------------------------------------------------------------------

    def enqueue(self, reply: ScriptedReply) -> None:
        self._enqueue(reply)

    def enqueue_text(
        self,
        text: str,
        *,
        fragments: Sequence[str] | None = None,
        reasoning: str | None = None,
        reasoning_fragments: Sequence[str] | None = None,
        stream: bool | None = None,
        usage: tuple[int, int] | None = (11, 7),
        finish_reason: str | None = None,
        hang_after: int | None = None,
        delay: float = 0.0,
    ) -> None:
        """A text reply; ``fragments`` are the streamed content deltas (default: split at spaces)."""
        if fragments is not None:
            assert "".join(fragments) == text, "fragments must join to the text"
        self.enqueue(
            ScriptedReply(
                text=text,
                fragments=fragments,
                reasoning=reasoning,
                reasoning_fragments=reasoning_fragments,
                stream=stream,
                usage=usage,
                finish_reason=finish_reason,
                hang_after=hang_after,
                delay=delay,
            )
        )

    def enqueue_tool_calls(
        self,
        calls: Sequence[ToolCallSpec],
        *,
        text: str = "",
        reasoning: str | None = None,
        stream: bool | None = None,
        arg_chunk: int = 4,
        interleave: bool = False,
        usage: tuple[int, int] | None = (11, 7),
        hang_after: int | None = None,
    ) -> None:
        """A reply with tool calls ``(id, name, raw arguments)``, sent verbatim (malformed too)."""
        self.enqueue(
            ScriptedReply(
                text=text,
                reasoning=reasoning,
                tool_calls=tuple(calls),
                stream=stream,
                arg_chunk=arg_chunk,
                interleave=interleave,
                usage=usage,
                hang_after=hang_after,
            )
        )

    def enqueue_deltas(
        self,
        deltas: Sequence[Mapping[str, Any]],
        *,
        finish_reason: str = "tool_calls",
        usage: tuple[int, int] | None = (11, 7),
    ) -> None:
        """A stream whose choice deltas are exactly ``deltas`` (then ``finish_reason``)."""
        self.enqueue(
            ScriptedReply(deltas=tuple(deltas), finish_reason=finish_reason, usage=usage, stream=True)
        )

    def enqueue_error(self, status: int, message: str) -> None:
        """An OpenAI-style error body ``{"error": {"message": ...}}`` with ``status``."""
        self.enqueue(ScriptedReply(status=status, error=message))
