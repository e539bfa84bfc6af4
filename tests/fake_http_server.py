"""The shared body of the scripted model servers (``fake_openai_server``, ``fake_anthropic_server``).

Both fakes are a real HTTP/1.1 server on 127.0.0.1 (stdlib ``http.server`` on a background thread,
an ephemeral port) that answers one route from a queue of scripted replies, as JSON or as an SSE
stream over chunked transfer encoding, records every request, and can delay a reply or hang after
some events until the client hangs up. The hang/disconnect bookkeeping is the subtle part that
cancellation tests lean on, so it lives here once; each fake supplies only its wire format through
the hooks of :class:`ScriptedHandler`.

Not a test module: the fakes import it (``from fake_http_server import ScriptedHTTPServer``).
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self, cast

__all__ = ["ScriptedAnswer", "ScriptedHTTPServer", "ScriptedHandler", "pieces", "split_words"]


class ScriptedAnswer(Protocol):
    """What the shared request flow reads from a fake's reply dataclass."""

    @property
    def stream(self) -> bool | None: ...
    @property
    def hang_after(self) -> int | None: ...
    @property
    def delay(self) -> float: ...
    @property
    def status(self) -> int: ...
    @property
    def error(self) -> str | None: ...


def split_words(text: str) -> list[str]:
    """``text`` cut before each space, the way real servers stream words (joins back to ``text``)."""
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


def pieces(text: str, size: int) -> list[str]:
    """``text`` in fragments of ``size`` characters (argument streaming)."""
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


@dataclass
class _State:
    replies: deque[Any] = field(default_factory=deque)
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class _ClientGone(Exception):
    pass


class ScriptedHandler(BaseHTTPRequestHandler):
    """The request flow both fakes share; subclasses fill in the wire format.

    A POST is parsed and recorded, then answered in order of precedence: wrong route (404), empty
    script (400), scripted HTTP error, stream/non-stream mismatch (400), then the reply itself,
    after ``delay``. ``hang_after`` on a JSON reply hangs before any response.
    """

    protocol_version = "HTTP/1.1"
    route: ClassVar[str] = ""
    id_prefix: ClassVar[str] = ""

    # --- hooks ----------------------------------------------------------------------------------

    def send_error_body(self, status: int, message: str, kind: str | None) -> None:
        """Answer ``status`` with the provider's error shape (``kind`` is the fake's own label)."""
        raise NotImplementedError

    def is_http_error(self, reply: Any) -> bool:
        """Whether the scripted reply is answered with an HTTP error instead of a body."""
        return cast(ScriptedAnswer, reply).error is not None

    def stream_events(self, reply: Any, reply_id: str, body: dict[str, Any]) -> list[str]:
        """The SSE events of a streamed reply, each a complete ``...\\n\\n`` block."""
        raise NotImplementedError

    def complete_body(self, reply: Any, reply_id: str) -> dict[str, Any]:
        """The JSON body of a non-streamed reply."""
        raise NotImplementedError

    def extra_headers(self, status: int) -> list[tuple[str, str]]:
        """Headers the provider adds to JSON answers."""
        return []

    # --- shared flow ----------------------------------------------------------------------------

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
            self.send_error_body(400, "fake server: body is not JSON", "invalid_request")
            return
        state = self.state
        with state.lock:
            state.requests.append(body)
            state.headers.append({name.lower(): value for name, value in self.headers.items()})
            reply = state.replies.popleft() if state.replies else None
            reply_id = f"{self.id_prefix}{next(state.ids)}"
        if self.path.split("?")[0].rstrip("/") != self.route:
            self.send_error_body(404, f"fake server: no route {self.path}", "not_found")
            return
        if reply is None:
            self.send_error_body(400, "fake server: no scripted reply left", "script")
            return
        scripted = cast(ScriptedAnswer, reply)
        if self.is_http_error(reply):
            self.send_error_body(scripted.status, cast(str, scripted.error), "scripted_error")
            return
        wants_stream = bool(body.get("stream"))
        if scripted.stream is not None and scripted.stream != wants_stream:
            expected = "a streaming" if scripted.stream else "a non-streaming"
            self.send_error_body(400, f"fake server: script expected {expected} request", None)
            return
        if scripted.delay and state.stopping.wait(scripted.delay):
            return
        try:
            if wants_stream:
                self._stream(scripted.hang_after, self.stream_events(reply, reply_id, body))
            elif scripted.hang_after is not None:
                self._hang()
            else:
                self.send_json(200, self.complete_body(reply, reply_id))
        except _ClientGone:
            self.close_connection = True
            self._note_disconnect()

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in self.extra_headers(status):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, hang_after: int | None, events: list[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for sent, event in enumerate(events):
            if hang_after is not None and sent == hang_after:
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


class ScriptedHTTPServer:
    """Lifecycle, scripting queue and observations; a fake sets ``handler`` and ``thread_name``."""

    handler: ClassVar[type[ScriptedHandler]]
    thread_name: ClassVar[str] = "fake-http"

    def __init__(self) -> None:
        self._state = _State()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> Self:
        httpd = _Server(("127.0.0.1", 0), self.handler)
        httpd.state = self._state
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    # --- scripting ---------------------------------------------------------------------------------

    def _enqueue(self, reply: object) -> None:
        with self._state.lock:
            self._state.replies.append(reply)

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
