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

import contextlib
import itertools
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, cast

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


@dataclass
class _State:
    replies: deque[ScriptedReply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    disconnects: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    disconnected: threading.Condition = field(init=False)
    stopping: threading.Event = field(default_factory=threading.Event)
    connections: set[socket.socket] = field(default_factory=set)
    ids: Iterator[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.disconnected = threading.Condition(self.lock)


class FakeOpenAIServer:
    """The server; use it as a context manager (or call :meth:`start` / :meth:`close`)."""

    def __init__(self) -> None:
        self._state = _State()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.state = self._state
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        state = self._state
        state.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            with state.lock:
                open_connections = list(state.connections)
            for connection in open_connections:  # unblock handlers parked on a keep-alive read
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — what ``AsyncOpenAI(base_url=...)`` wants."""
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # --- scripting ---------------------------------------------------------------------------------

    def enqueue(self, reply: ScriptedReply) -> None:
        with self._state.lock:
            self._state.replies.append(reply)

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

    # --- observations ------------------------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received (parsed JSON), in arrival order."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of every request (lower-cased names), in arrival order."""
        with self._state.lock:
            return list(self._state.headers)

    @property
    def pending(self) -> int:
        """Scripted replies not yet served."""
        with self._state.lock:
            return len(self._state.replies)

    @property
    def disconnects(self) -> int:
        """How many times a client hung up while a reply was hanging or being written."""
        with self._state.lock:
            return self._state.disconnects

    def wait_for_disconnect(self, timeout: float = 5.0, count: int = 1) -> bool:
        """Block until ``count`` disconnects were seen (``False`` on timeout). Call via a thread."""
        deadline = time.monotonic() + timeout
        with self._state.disconnected:
            while self._state.disconnects < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._state.disconnected.wait(remaining)
            return True


# --- wire format ---------------------------------------------------------------------------------


def _split_words(text: str) -> list[str]:
    parts: list[str] = []
    current = ""
    for char in text:
        if char == " " and current:
            parts.append(current)
            current = ""
        current += char
    if current:
        parts.append(current)
    return parts


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


def _choice_deltas(reply: ScriptedReply) -> list[dict[str, Any]]:
    if reply.deltas is not None:
        return [dict(delta) for delta in reply.deltas]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if reply.reasoning:
        reasoning = reply.reasoning_fragments or _split_words(reply.reasoning)
        deltas.extend({"reasoning_content": piece} for piece in reasoning)
    if reply.text:
        deltas.extend({"content": piece} for piece in (reply.fragments or _split_words(reply.text)))
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
            for piece in _pieces(args, reply.arg_chunk)
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class _ClientGone(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def state(self) -> _State:
        return cast(_Server, self.server).state

    def setup(self) -> None:
        super().setup()
        with self.state.lock:
            self.state.connections.add(self.connection)

    def finish(self) -> None:
        with self.state.lock:
            self.state.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: dict[str, Any] = json.loads(raw or b"{}")
        except ValueError:
            self._json(
                400, {"error": {"message": "fake server: body is not JSON", "type": "invalid_request"}}
            )
            return
        state = self.state
        with state.lock:
            state.requests.append(body)
            state.headers.append({name.lower(): value for name, value in self.headers.items()})
            reply = state.replies.popleft() if state.replies else None
            completion_id = f"chatcmpl-fake-{next(state.ids)}"
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"fake server: no route {self.path}", "type": "not_found"}})
            return
        if reply is None:
            self._json(400, {"error": {"message": "fake server: no scripted reply left", "type": "script"}})
            return
        if reply.error is not None:
            self._json(reply.status, {"error": {"message": reply.error, "type": "scripted_error"}})
            return
        wants_stream = bool(body.get("stream"))
        if reply.stream is not None and reply.stream != wants_stream:
            expected = "a streaming" if reply.stream else "a non-streaming"
            self._json(400, {"error": {"message": f"fake server: script expected {expected} request"}})
            return
        if reply.delay and state.stopping.wait(reply.delay):
            return
        try:
            if wants_stream:
                options = body.get("stream_options") or {}
                self._stream(reply, completion_id, bool(options.get("include_usage")))
            else:
                if reply.hang_after is not None:
                    self._hang()
                    return
                self._json(200, _completion(reply, completion_id))
        except _ClientGone:
            self.close_connection = True
            self._note_disconnect()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: ScriptedReply, completion_id: str, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [
            f"data: {json.dumps(chunk)}\n\n" for chunk in sse_chunks(reply, completion_id, include_usage)
        ]
        events.append("data: [DONE]\n\n")
        for sent, event in enumerate(events):
            if reply.hang_after is not None and sent == reply.hang_after:
                self._hang()
                return
            self._write_chunk(event.encode())
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise _ClientGone from exc

    def _hang(self) -> None:
        """Send nothing more until the client hangs up (recorded) or the server stops."""
        self.close_connection = True
        while not self.state.stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if not readable:
                continue
            try:
                data = self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                data = b""
            if not data:
                self._note_disconnect()
                return
            time.sleep(0.02)

    def _note_disconnect(self) -> None:
        state = self.state
        with state.disconnected:
            state.disconnects += 1
            state.disconnected.notify_all()
