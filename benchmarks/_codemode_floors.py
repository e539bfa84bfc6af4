"""Floors for ``codemode.py``: what the sandbox's work costs with nothing (or less) of toolrt in
the way, so the Code Mode figures read as ratios to the cheapest way to do the same.

- ``floor/N-round-trips``: a child process (started once per case, reused) makes N sequential
  ``call`` frames to an asyncio host, which answers each with a ``reply`` frame: the same framing
  (4-byte length + compact JSON) over a socketpair as toolrt's channel, with no validation, no
  pipeline and no confinement. The floor of one binding round trip is ``(1000 − 100) / 900`` of
  these.
- ``floor/spawn-exit``: start ``python -I -S`` on a one-frame program, read its frame and reap it
  (the floor of a cold run: an interpreter's start-up and exit, no confinement, no pool).
- ``floor/warm-exit``: a child already running, with ``asyncio`` imported as toolrt's pooled
  children have it, is sent one frame, answers and exits; timed until it is reaped (the floor of a
  warm trivial run: one round trip plus the exit, which frees the child's memory before the parent
  can reap it). The child is started before each sample, untimed.

- ``toolrt[B]/N-calls-raw``: toolrt's sandbox alone — ``PythonSandboxRuntime.run`` of the
  N-call program with a plain ``async`` binding, no pipeline — warm, like the ``run_code`` cases:
  the pipeline's share of a binding call is the difference.

Per call, every family is read the same way: ``(1000-call sample − 100-call sample) / 900``, which
cancels what a run costs besides its calls.

The floor children run ``sys.executable`` (toolrt's runs may use another interpreter when the host's is
not readable by the sandbox user; ``codemode.py`` prints which).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from _harness import Case, Paced, Timed

__all__ = ["FLOOR_CASES", "PROGRAM_CALLS", "raw_cases"]

_HEADER_BYTES = 4

# The child's loop: wait for {"n": N}; make N calls, one at a time; report the total.
_CALLER = r"""
import json, os, socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
buffer = b""
def frame():
    global buffer
    while len(buffer) < 4 or len(buffer) < 4 + int.from_bytes(buffer[:4], "big"):
        chunk = sock.recv(65536)
        if not chunk:
            os._exit(0)
        buffer += chunk
    size = int.from_bytes(buffer[:4], "big")
    body, buffer = buffer[4:4 + size], buffer[4 + size:]
    return json.loads(body)
def send(value):
    body = json.dumps(value, separators=(",", ":")).encode()
    sock.sendall(len(body).to_bytes(4, "big") + body)
while True:
    n = frame()["n"]
    total = 0
    for i in range(n):
        send({"t": "call", "id": i + 1, "ns": "tools", "name": "add", "args": {"a": i, "b": 1}})
        total += frame()["value"]
    send({"t": "done", "ok": True, "value": total})
"""

# One frame in, one frame out, exit: with asyncio imported first (warm-exit), or not (spawn-exit).
_ONE_SHOT = r"""
import os, socket, sys
if sys.argv[2] == "asyncio":
    import asyncio
sock = socket.socket(fileno=int(sys.argv[1]))
sock.sendall(b"r")  # ready
sock.recv(65536)
sock.sendall(b'\x00\x00\x00\x0b{"value":1}')
os._exit(0)
"""


def _frame(value: Any) -> bytes:
    body = json.dumps(value, separators=(",", ":")).encode()
    return len(body).to_bytes(_HEADER_BYTES, "big") + body


class _Replier(asyncio.Protocol):
    """The host side of ``floor/N-round-trips``: answers every call, resolves ``done`` with the
    child's total."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.done: asyncio.Future[int] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while len(buffer) >= _HEADER_BYTES:
            size = int.from_bytes(buffer[:_HEADER_BYTES], "big")
            if len(buffer) < _HEADER_BYTES + size:
                return
            message = json.loads(buffer[_HEADER_BYTES : _HEADER_BYTES + size])
            del buffer[: _HEADER_BYTES + size]
            if message["t"] == "call":
                args = message["args"]
                reply = {"t": "reply", "id": message["id"], "ok": True, "value": args["a"] + args["b"]}
                assert self.transport is not None
                self.transport.write(_frame(reply))
            elif self.done is not None and not self.done.done():
                self.done.set_result(message["value"])


def _spawn(script: str, *extra: str) -> tuple[subprocess.Popen[bytes], socket.socket]:
    host, child = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", script, str(child.fileno()), *extra],
        pass_fds=[child.fileno()],
        stdin=subprocess.DEVNULL,
    )
    child.close()
    return process, host


def _round_trips(n: int) -> Callable[[], Awaitable[Timed]]:
    async def make() -> Timed:
        loop = asyncio.get_running_loop()
        _process, host = _spawn(_CALLER)  # lives until the case's process exits
        _, replier = await loop.connect_accepted_socket(_Replier, host)
        expected = n * (n + 1) // 2

        async def once() -> None:
            replier.done = loop.create_future()
            assert replier.transport is not None
            replier.transport.write(_frame({"n": n}))
            total = await replier.done
            if total != expected:
                raise AssertionError(f"floor child summed {total}, expected {expected}")

        await once()
        return once

    return make


async def _reap_after_one_frame(process: subprocess.Popen[bytes], host: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    exited = loop.create_future()
    pidfd = os.pidfd_open(process.pid)
    loop.add_reader(pidfd, lambda: exited.done() or exited.set_result(None))
    try:
        await loop.sock_sendall(host, b"\x00\x00\x00\x02{}")
        reply = await loop.sock_recv(host, 65536)
        if not reply.endswith(b'{"value":1}'):
            raise AssertionError(f"floor child answered {reply!r}")
        await exited
        process.wait()  # the zombie is reaped here, after the pidfd said it exited
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        host.close()


async def _started(mode: str) -> tuple[subprocess.Popen[bytes], socket.socket]:
    process, host = _spawn(_ONE_SHOT, mode)
    host.setblocking(False)
    ready = await asyncio.get_running_loop().sock_recv(host, 1)
    if ready != b"r":
        raise AssertionError(f"floor child said {ready!r}, not ready")
    return process, host


async def _spawn_exit() -> Timed:
    async def once() -> None:
        await _reap_after_one_frame(*await _started("bare"))

    await once()
    return once


async def _warm_exit() -> Timed:
    started: list[tuple[subprocess.Popen[bytes], socket.socket]] = []

    async def before() -> None:
        started.append(await _started("asyncio"))

    async def once() -> None:
        process, host = started.pop()
        await _reap_after_one_frame(process, host)

    await before()
    await once()
    return Paced(once, before)


PROGRAM_CALLS = (
    'total = 0\nfor i in range({n}):\n    total += await tools.add({{"a": i, "b": 1}})\nprint(total)'
)
"""The N-call program of every toolrt case, raw or through ``run_code``: the same source (and the same
one log frame) on both sides, so their difference is the pipeline's alone."""


async def _raw(backend: str, n: int) -> Timed:
    from toolrt.codemode._code_runtime import CodeBindingNamespace, CodeErrorClass, CodeRunRequest
    from toolrt.sandbox import PythonSandboxRuntime

    async def add(arguments: Any) -> Any:
        return arguments["a"] + arguments["b"]

    runtime = PythonSandboxRuntime(backend=backend, pool_size=2)  # type: ignore[arg-type]
    request = CodeRunRequest(
        program=PROGRAM_CALLS.format(n=n),
        bindings=[CodeBindingNamespace("tools", {"add": add}, CodeErrorClass("ToolCallError", "toolName"))],
    )
    expected = (str(n * (n + 1) // 2),)

    async def once() -> None:
        result = await runtime.run(request)
        if result.error is not None or result.logs != expected or result.meta.get("warm") is not True:
            raise AssertionError(f"toolrt[{backend}] raw run went wrong: {result!r}")
        if result.meta.get("backend") != backend:
            raise AssertionError(f"raw run on {result.meta.get('backend')!r}, not {backend!r}")

    async def refilled() -> None:
        await runtime.warm()

    await refilled()
    await once()
    return Paced(once, refilled)


def raw_cases(backend: str) -> list[Case]:
    """``toolrt[backend]/{100,1000}-calls-raw`` (see the module docstring)."""

    def setup(n: int) -> Callable[[], Awaitable[Timed]]:
        async def make() -> Timed:
            return await _raw(backend, n)

        return make

    group = f"toolrt[{backend}]"
    return [
        Case(
            f"{group}/{n}-calls-raw",
            f"sandbox only: {n} `await tools.add`, no pipeline, warm",
            setup(n),
            group,
        )
        for n in (100, 1000)
    ]


FLOOR_CASES = [
    Case(
        "floor/100-round-trips",
        "stdlib: 100 sequential call→reply frames, asyncio host",
        _round_trips(100),
        "floor",
    ),
    Case("floor/1000-round-trips", "stdlib: 1000 sequential call→reply frames", _round_trips(1000), "floor"),
    Case("floor/spawn-exit", "stdlib: start python -I -S, one frame, reap", _spawn_exit, "floor"),
    Case(
        "floor/warm-exit",
        "stdlib: running child (asyncio imported): one frame, exit, reap",
        _warm_exit,
        "floor",
    ),
]
