"""The host's side of a sandbox child's traffic: the channel and pipe protocols that feed a
:class:`~.child._Child`, and the listeners its frames go to while nobody else owns it.

The channel reads into one preallocated buffer and hands each decoded frame to the child's current
listener: :class:`_BootListener` while it boots (``ready`` or ``boot-failed``, anything else is a
violation), :class:`_NullListener` while it idles in the pool (any frame is a violation), or a run
(:mod:`.run`). The process itself (spawn, exit, reaping, teardown) is :mod:`.child`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from toolrt.codemode._code_runtime import CodeRunError
from toolrt.sandbox.backends import _achieved
from toolrt.sandbox.limits import _exit_message
from toolrt.sandbox.protocol import (
    BootFailed,
    Call,
    ChildFrame,
    Done,
    Log,
    ProtocolViolation,
    Ready,
    parse_child_frame,
)

if TYPE_CHECKING:
    from toolrt.sandbox.child import _Child

_GONE_GRACE = 2.0
"""How long after channel EOF the host waits for the exit status before killing."""
_READ_BYTES = 256 * 1024
"""The channel's read size (asyncio's own), into one buffer allocated once."""


class _Listener(Protocol):
    def on_frame(self, child: _Child, frame: ChildFrame) -> None: ...
    def on_violation(self, child: _Child, reason: str) -> None: ...
    def on_output(self, child: _Child, size: int) -> None: ...
    def on_gone(self, child: _Child) -> None: ...


class _ChannelProtocol(asyncio.BufferedProtocol):
    """Reads into one preallocated buffer: asyncio's plain protocols ``recv(256 KiB)`` a fresh bytes
    object per read, which costs ~10 µs per frame here (the allocation, not the data)."""

    def __init__(self, child: _Child) -> None:
        self.child = child
        self.buffer = memoryview(bytearray(_READ_BYTES))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.buffer

    def buffer_updated(self, nbytes: int) -> None:
        child = self.child
        try:
            for body in child.decoder.feed(self.buffer[:nbytes]):
                if child.is_broken():
                    return
                child.listener.on_frame(child, parse_child_frame(body))
        except ProtocolViolation as violation:
            child.violate(violation.reason)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.child.channel_lost()


class _PipeProtocol(asyncio.Protocol):
    def __init__(self, child: _Child, name: str) -> None:
        self.child = child
        self.name = name

    def data_received(self, data: bytes) -> None:
        self.child.output(self.name, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.child.pipe_closed()


class _NullListener:
    """Frames from a child nobody is listening to (idle in the pool): any frame is a violation."""

    def on_frame(self, child: _Child, frame: ChildFrame) -> None:
        child.violate(f"unexpected {type(frame).__name__.lower()} frame while idle")

    def on_violation(self, child: _Child, reason: str) -> None:
        child.kill()

    def on_output(self, child: _Child, size: int) -> None:
        return None

    def on_gone(self, child: _Child) -> None:
        child.kill()


class _BootListener:
    """Waits for ``ready`` (or ``boot-failed``); anything else ends the boot as a violation."""

    def __init__(self, child: _Child) -> None:
        self.done: asyncio.Future[None] = child.loop.create_future()
        self.failure: CodeRunError | None = None
        self.violation: CodeRunError | None = None
        self.exit_checked = False

    def _finish(self, failure: CodeRunError | None) -> None:
        if not self.done.done():
            self.failure = failure
            self.done.set_result(None)

    def on_frame(self, child: _Child, frame: ChildFrame) -> None:
        if child.ready is not None:
            child.violate(f"{_frame_name(frame)} frame before the program was sent")
        elif isinstance(frame, Ready):
            child.ready = frame
            child.report = _achieved(child.plan, frame, tuple(child.report_notes))
            self._finish(None)
        elif isinstance(frame, BootFailed):
            child.broken = True
            self._finish(
                CodeRunError("sandbox-unavailable", f"confinement failed in the child: {frame.message}")
            )
        else:
            child.violate(f"{_frame_name(frame)} frame before ready")

    def on_violation(self, child: _Child, reason: str) -> None:
        child.kill()
        self.violation = CodeRunError("worker-exit", f"protocol violation: {reason}; worker killed")
        self._finish(self.violation)

    def on_output(self, child: _Child, size: int) -> None:
        return None

    def on_gone(self, child: _Child) -> None:
        if self.done.done():
            return
        self.exit_checked = True

        async def classify() -> None:
            await child._await_exit(_GONE_GRACE)
            child.kill()
            await child._await_exit(_GONE_GRACE)
            self._finish(CodeRunError("worker-exit", _exit_message(child.status, "during boot")))

        _background(classify())


_BACKGROUND: set[asyncio.Future[Any]] = set()


def _background(coroutine: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(coroutine)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


def _frame_name(frame: ChildFrame) -> str:
    return {Ready: "ready", BootFailed: "boot-failed", Log: "log", Call: "call", Done: "done"}[type(frame)]
