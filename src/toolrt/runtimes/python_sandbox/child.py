"""One sandbox child, host side: spawn, channel and pipes, boot, exit watching and reaping, teardown.

Each child is ``<python> -I -S -X utf8 bootstrap.py <fd>`` (under bwrap: inside ``bwrap ... --``); it
confines itself, then runs exactly one program (``bootstrap.py``; frames and the hostile-frame rules:
``protocol.py``). The host never trusts it: an empty environment (plus ``MALLOC_ARENA_MAX=1``),
``close_fds``, one ``pass_fds`` socket, ``start_new_session``, stdin from ``/dev/null``, a fresh
private work dir as cwd (deleted afterwards); kills SIGKILL the whole process group (killing bwrap
takes its pid namespace down: ``--die-with-parent``); stdout/stderr are drained concurrently (tails
kept for diagnostics, sizes to the output ledger); the child is reaped (``wait4``, via a pidfd)
**before** a result is reported. Frames go to the child's current listener: :class:`_BootListener`
while it boots, :class:`_NullListener` while it idles in the pool (any frame is a violation), a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signal_module
import socket
import subprocess
import tempfile
import time
from collections.abc import Coroutine, Sequence
from typing import Any, Protocol

from ..base import CodeRunError, IsolationReport
from .backends import _SANDBOX_WORKDIR, _achieved, _bwrap_args, _Plan
from .confine import inaccessible_path
from .limits import _BootSpec, _exit_message, _tree_cpu
from .protocol import (
    BootFailed,
    Call,
    ChildFrame,
    Done,
    FrameDecoder,
    Log,
    ProtocolViolation,
    Ready,
    encode_frame,
    parse_child_frame,
)

_BOOT_TIMEOUT = 20.0
_GONE_GRACE = 2.0
"""How long after channel EOF the host waits for the exit status before killing."""
_BOOT_FRAME_BYTES = 64 * 1024
_TAIL_BYTES = 4096
_READ_BYTES = 256 * 1024
"""The channel's read size (asyncio's own), into one buffer allocated once."""


class _Listener(Protocol):
    def on_frame(self, child: _Child, frame: ChildFrame) -> None: ...
    def on_violation(self, child: _Child, reason: str) -> None: ...
    def on_output(self, child: _Child, size: int) -> None: ...
    def on_gone(self, child: _Child) -> None: ...


class _BootFailure(Exception):
    def __init__(self, error: CodeRunError, child: _Child | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.meta: dict[str, Any] = child.diagnostics() if child is not None else {}


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


class _Child:
    """One sandbox child on the host side: process, channel, pipes, exit watcher, work dir."""

    def __init__(self, plan: _Plan, spec: _BootSpec, bootstrap: str, python: str, disk_bytes: int) -> None:
        self.plan = plan
        self.spec = spec
        self.bootstrap = bootstrap
        self.python = python
        self.disk_bytes = disk_bytes
        self.loop = asyncio.get_running_loop()
        self.listener: _Listener = _NullListener()
        self.decoder = FrameDecoder(_BOOT_FRAME_BYTES)
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.workdir = ""
        self.channel: asyncio.Transport | None = None
        self.pipe_transports: list[asyncio.BaseTransport] = []
        self.report_notes: list[str] = []
        """What the host decided about this child that its isolation report must say."""
        self.pipes_open = 0
        self.exited: asyncio.Future[None] = self.loop.create_future()
        self.status: int | None = None
        self.cpu_seconds = 0.0
        self.reaped = False
        self.broken = False
        self.gone = False
        self.closed = False
        self.ready: Ready | None = None
        self.report: IsolationReport | None = None
        self.stderr_tail = bytearray()
        self.stdout_tail = bytearray()
        self.started = time.perf_counter()
        self._pidfd: int | None = None
        self._wait_task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None
        self.pipes_done: asyncio.Future[None] = self.loop.create_future()
        self.channel_done: asyncio.Future[None] = self.loop.create_future()

    # -- state ----------------------------------------------------------------------------------

    def is_broken(self) -> bool:
        return self.broken

    def abandon(self) -> None:
        _abandon_child(self)

    @property
    def usable(self) -> bool:
        return self.ready is not None and not (self.broken or self.gone or self.closed or self.reaped)

    def diagnostics(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if self.status is not None:
            meta["exitStatus"] = self.status
            meta["cpuSeconds"] = round(self.cpu_seconds, 4)
        if self.stderr_tail:
            meta["stderr"] = self.stderr_tail.decode("utf-8", "replace")
        if self.stdout_tail:
            meta["stdout"] = self.stdout_tail.decode("utf-8", "replace")
        return meta

    # -- spawning -------------------------------------------------------------------------------

    def _argv(self, child_fd: int, read_paths: Sequence[str]) -> list[str]:
        python = [self.python, "-I", "-S", "-X", "utf8", self.bootstrap, str(child_fd)]
        plan = self.plan
        if plan.backend != "bwrap":
            return python
        assert plan.bwrap_path is not None
        if plan.bwrap_as is not None and os.geteuid() == 0:
            read_paths = self._readable_by(plan.bwrap_as, read_paths)
        args = _bwrap_args(self.python, self.bootstrap, self.disk_bytes, read_paths)
        return [plan.bwrap_path, *args, "--", *python]

    def _readable_by(self, identity: tuple[int, int], read_paths: Sequence[str]) -> list[str]:
        """The read paths bwrap, started as ``identity``, can bind; each one it could not is a note
        (bwrap would refuse to start, and the program could not have read it anyway)."""
        kept: list[str] = []
        for path in read_paths:
            blocked = inaccessible_path(*identity, [path])
            if blocked is None:
                kept.append(path)
            else:
                self.report_notes.append(
                    f"read path {path} not mounted: {blocked} is not accessible to uid {identity[0]}"
                )
        return kept

    def _boot_frame(self, read_paths: Sequence[str]) -> dict[str, Any]:
        plan = self.plan
        workdir = _SANDBOX_WORKDIR if plan.backend == "bwrap" else self.workdir
        return {
            "t": "boot",
            "confine": plan.backend != "unconfined",
            "preimport": list(self.spec.preimport),
            "workDir": workdir,
            "policy": {
                "cpuSeconds": self.spec.cpu_seconds,
                "memoryBytes": self.spec.memory_bytes,
                "maxOpenFiles": 128,
                "maxFileBytes": self.disk_bytes,
                "maxProcesses": 64,
                "readPaths": list(read_paths),
                "readWritePaths": [workdir],
                "dropTo": list(plan.drop_to) if plan.drop_to is not None else None,
                "landlock": plan.landlock,
                "seccomp": plan.seccomp,
            },
        }

    async def start(self, read_paths: Sequence[str], timeout: float) -> None:
        """Spawn, send the boot frame and wait for ``ready``; raises :class:`_BootFailure`."""
        try:
            await self._start(read_paths, timeout)
        except BaseException:
            await self.close()
            raise

    async def _start(self, read_paths: Sequence[str], timeout: float) -> None:
        self.workdir = tempfile.mkdtemp(prefix="toolrt-run-")
        if self.plan.drop_to is not None and os.geteuid() == 0:
            os.chown(self.workdir, *self.plan.drop_to)
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            env = {} if self.plan.backend == "bwrap" else {"MALLOC_ARENA_MAX": "1"}
            # A root host starts bwrap unprivileged: the sandbox's uid then maps to that uid, not
            # to host uid 0 (bwrap's own work dir is a tmpfs inside; it needs no host cwd).
            as_user = self.plan.bwrap_as if os.geteuid() == 0 else None
            identity: dict[str, Any] = (
                {"user": as_user[0], "group": as_user[1], "extra_groups": []} if as_user is not None else {}
            )
            try:
                self.proc = subprocess.Popen(
                    self._argv(child.fileno(), read_paths),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(child.fileno(),),
                    close_fds=True,
                    start_new_session=True,
                    env=env,
                    cwd="/" if as_user is not None else self.workdir,
                    **identity,
                )
            except OSError as error:
                raise _BootFailure(
                    CodeRunError("sandbox-unavailable", f"could not start the sandbox child: {error}")
                ) from None
        finally:
            child.close()
        self.pid = self.proc.pid
        self._watch_exit()
        self._sock = parent
        parent.setblocking(False)
        transport, _ = await self.loop.create_unix_connection(lambda: _ChannelProtocol(self), sock=parent)
        self.channel = transport
        for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            assert pipe is not None
            pipe_transport, _ = await self.loop.connect_read_pipe(lambda n=name: _PipeProtocol(self, n), pipe)  # type: ignore[misc]
            self.pipe_transports.append(pipe_transport)
            self.pipes_open += 1
        transport.write(encode_frame(self._boot_frame(read_paths)))
        waiter = _BootListener(self)
        self.listener = waiter
        try:
            await asyncio.wait_for(asyncio.shield(waiter.done), timeout)
        except TimeoutError:
            raise _BootFailure(
                CodeRunError("worker-exit", f"worker did not become ready within {timeout:g}s"), self
            ) from None
        # Frames that arrived with ``ready`` were processed synchronously, before this resumed.
        failure = waiter.failure or waiter.violation
        if failure is not None:
            if not waiter.exit_checked:
                await self._await_exit(_GONE_GRACE)
            raise _BootFailure(failure, self)
        self.listener = _NullListener()

    # -- exit -----------------------------------------------------------------------------------

    def _watch_exit(self) -> None:
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self._wait_task = asyncio.ensure_future(self._wait_in_thread())
            return
        self.loop.add_reader(self._pidfd, self._on_pidfd)

    def _on_pidfd(self) -> None:
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        # The leader is a zombie until reaped, so its pgid cannot be reused: kill stragglers first.
        self.kill()
        try:
            _, status, usage = os.wait4(self.pid, 0)
        except ChildProcessError:
            status, cpu = 0, 0.0
        else:
            cpu = usage.ru_utime + usage.ru_stime
        self._reaped(status, cpu)

    async def _wait_in_thread(self) -> None:  # pragma: no cover - kernels without pidfd_open
        _, status, usage = await asyncio.to_thread(os.wait4, self.pid, 0)
        self._reaped(status, usage.ru_utime + usage.ru_stime)

    def _reaped(self, status: int, cpu: float) -> None:
        self.reaped = True
        self.status = status
        self.cpu_seconds = cpu
        if self.proc is not None:
            self.proc.returncode = os.waitstatus_to_exitcode(status)
        if not self.exited.done():
            self.exited.set_result(None)
        self._gone()

    def _gone(self) -> None:
        if not self.gone:
            self.gone = True
            self.listener.on_gone(self)

    def channel_lost(self) -> None:
        if not self.channel_done.done():
            self.channel_done.set_result(None)
        self._gone()

    def pipe_closed(self) -> None:
        self.pipes_open -= 1
        if self.pipes_open <= 0 and not self.pipes_done.done():
            self.pipes_done.set_result(None)

    async def drained(self, timeout: float = 0.25, *, channel: bool = False) -> None:
        """Wait (briefly) for stdout/stderr EOF after exit, so their tails are complete; with
        ``channel``, for the channel's EOF too, so that every frame the child sent before it exited
        (a ``done`` behind megabytes of logs) has been processed."""
        waits: list[asyncio.Future[None]] = []
        if self.pipes_open > 0:
            waits.append(self.pipes_done)
        if channel and self.channel is not None:
            waits.append(self.channel_done)
        if waits:
            await asyncio.wait(waits, timeout=timeout)

    def kill(self) -> None:
        """SIGKILL the child's whole process group (a no-op once it has been reaped)."""
        if self.pid and not self.reaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal_module.SIGKILL)

    async def _await_exit(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), timeout)
        except TimeoutError:
            return False
        return True

    def program_cpu(self) -> float | None:
        """CPU seconds used so far by the child's whole process tree (under bwrap: bwrap, its
        pid-namespace init and the program), from ``/proc``; ``None`` once reaped or unreadable."""
        if self.reaped:
            return None
        return _tree_cpu(self.pid)

    # -- traffic --------------------------------------------------------------------------------

    def violate(self, reason: str) -> None:
        if not self.broken:
            self.broken = True
            self.listener.on_violation(self, reason)

    def output(self, name: str, data: bytes) -> None:
        tail = self.stderr_tail if name == "stderr" else self.stdout_tail
        tail += data
        if len(tail) > _TAIL_BYTES:
            del tail[: len(tail) - _TAIL_BYTES]
        self.listener.on_output(self, len(data))

    def send(self, payload: dict[str, Any]) -> None:
        if self.channel is not None and not self.channel.is_closing():
            self.channel.write(encode_frame(payload))

    # -- teardown -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Kill the process group, reap, close the channel and pipes, delete the work dir."""
        if self.closed:
            return
        self.closed = True
        self.kill()
        if self.proc is not None and not await self._await_exit(10.0):  # pragma: no cover
            self.kill()  # SIGKILL cannot be ignored: only a stuck kernel gets here
            await asyncio.shield(self.exited)
        if self._wait_task is not None:
            with contextlib.suppress(Exception):
                await self._wait_task
        await self.drained()
        if self.channel is not None:
            self.channel.close()
        elif self._sock is not None:
            self._sock.close()
        for transport in self.pipe_transports:
            transport.close()
        if self.proc is not None:
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()
        if self.workdir:
            await _remove_tree(self.workdir)


def _abandon_child(child: _Child) -> None:
    """Synchronous teardown for a child whose event loop is gone: SIGKILL, reap, close, delete."""
    if child.pid and not child.reaped:
        child.kill()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, 0)
        child.reaped = True
        if child.proc is not None:
            child.proc.returncode = -signal_module.SIGKILL
    with contextlib.suppress(OSError):
        if child._pidfd is not None:
            os.close(child._pidfd)
    for transport in [child.channel, *child.pipe_transports]:
        if transport is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: close() half-works
                transport.close()
    if child._sock is not None:
        child._sock.close()
    if child.proc is not None:
        for pipe in (child.proc.stdout, child.proc.stderr):
            if pipe is not None:
                pipe.close()
    if child.workdir:
        remove_tree(child.workdir)
    child.closed = True


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


async def _remove_tree(path: str) -> None:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return
    except OSError:
        await asyncio.to_thread(remove_tree, path)


def remove_tree(root: str) -> None:
    """Delete a work dir whatever the program left in it, without recursion or long paths.

    ``shutil.rmtree`` recurses on Python 3.11, so a program leaving a 3000-level tree made the host
    raise ``RecursionError`` (found by the attack suite). This walks with one directory fd at a
    time (``openat``, never a path longer than one name), reopens directories the program locked
    (mode 000), and never raises: what cannot be removed is left, not fatal. The child is dead by
    the time this runs, so nothing changes under the walk.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(root, flags)
    except OSError:
        return
    names: list[str] = []  # the path from root to the current directory
    skipped: list[set[str]] = [set()]  # per level: subdirectories that could not be removed
    try:
        while True:
            descend = None
            try:
                entries = list(os.scandir(fd))
            except OSError:
                entries = []
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if not is_dir:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.name, dir_fd=fd)
                elif entry.name not in skipped[-1] and descend is None:
                    descend = entry.name
            if descend is not None:
                try:
                    os.chmod(descend, 0o700, dir_fd=fd)
                    child = os.open(descend, flags, dir_fd=fd)
                except OSError:
                    skipped[-1].add(descend)
                    continue
                os.close(fd)
                fd = child
                names.append(descend)
                skipped.append(set())
                continue
            if not names:
                break
            name = names.pop()
            skipped.pop()
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                skipped[-1].add(name)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)
