"""One sandbox child, host side: spawn, boot, its channel and pipes, exit watching and reaping,
teardown.

Each child is ``<python> -I -S -X utf8 bootstrap.py <fd> <table>`` (``<table>``: its modules'
precompiled code, :mod:`.code_table`, on Linux; under bwrap: inside ``bwrap ... --``; on macOS:
``sandbox-exec -p <profile> <python> ...``, the profile from :mod:`~toolrt.sandbox._backends.seatbelt`);
it confines itself, then runs exactly one program (``_child/bootstrap.py``; frames and the
hostile-frame rules: :mod:`.protocol`). The host never trusts it: an empty environment (plus
``MALLOC_ARENA_MAX=1``), ``close_fds``, one ``pass_fds`` socket, ``start_new_session``, stdin from
``/dev/null``, a fresh private work dir as cwd (deleted afterwards: :mod:`.workdir`); kills SIGKILL
the whole process group (killing bwrap takes its pid namespace down: ``--die-with-parent``);
stdout/stderr are drained concurrently (tails kept for diagnostics, sizes to the output ledger);
the child is reaped (``wait4``, via a pidfd on Linux, a thread elsewhere) **before** a result is
reported.

The channel reads into one preallocated buffer and hands each decoded frame to the child's current
listener: :class:`_BootListener` while it boots (``ready`` or ``boot-failed``, anything else is a
violation), :class:`_NullListener` while it idles in the pool (any frame is a violation), or a run
(:mod:`.run`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signal_module
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Sequence
from typing import Any, Protocol

from toolrt.codemode._code_runtime import CodeRunError, IsolationReport
from toolrt.sandbox._backends import seatbelt
from toolrt.sandbox._backends.plan import SANDBOX_WORKDIR, Plan, bwrap_args
from toolrt.sandbox._backends.probe import run_as
from toolrt.sandbox._child.confine_grants import inaccessible_path
from toolrt.sandbox._host import code_table as code_tables
from toolrt.sandbox._host.limits import BootSpec, child_pids, exit_message, tree_cpu
from toolrt.sandbox._host.protocol import (
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
from toolrt.sandbox._host.workdir import aremove_tree, remove_tree

__all__ = ["BOOT_TIMEOUT", "GONE_GRACE", "BootFailure", "Child", "Listener", "frame_name"]

BOOT_TIMEOUT = 20.0
_BOOT_FRAME_BYTES = 64 * 1024
_TAIL_BYTES = 4096

_MAX_TREE = 64
"""Most descendants a child's tree is tracked for (the program cannot fork: a few are expected)."""
_TREE_GONE_TIMEOUT = 5.0
"""Longest wait for SIGKILLed descendants to exit (SIGKILL cannot be caught: only a stuck kernel
makes this wait end by its timeout)."""


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


GONE_GRACE = 2.0
"""How long after channel EOF the host waits for the exit status before killing."""
_READ_BYTES = 256 * 1024
"""The channel's read size (asyncio's own), into one buffer allocated once."""


class Listener(Protocol):
    """Where a child's frames, violations, output sizes and end go (its boot, the pool, a run)."""

    def on_frame(self, child: Child, frame: ChildFrame) -> None:
        """A frame the child sent."""

    def on_violation(self, child: Child, reason: str) -> None:
        """The child broke the protocol (``reason``); it is already marked broken."""

    def on_output(self, child: Child, size: int) -> None:
        """``size`` bytes the child wrote to stdout or stderr."""

    def on_gone(self, child: Child) -> None:
        """The child exited or closed its channel."""


class BootFailure(Exception):
    """A child that could not be started or did not become ready, with the run error to report."""

    def __init__(self, error: CodeRunError, child: Child | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.meta: dict[str, Any] = child.diagnostics() if child is not None else {}


class Child:
    """One sandbox child on the host side: process, channel, pipes, exit watcher, work dir."""

    def __init__(self, plan: Plan, spec: BootSpec, bootstrap: str, python: str, disk_bytes: int) -> None:
        self.plan = plan
        self.spec = spec
        self.bootstrap = bootstrap
        self.python = python
        self.disk_bytes = disk_bytes
        self.loop = asyncio.get_running_loop()
        self.listener: Listener = _NullListener()
        self.decoder = FrameDecoder(_BOOT_FRAME_BYTES)
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.workdir = ""
        self.channel: asyncio.Transport | None = None
        self.pipe_transports: list[asyncio.BaseTransport] = []
        self.extra_fds: tuple[int, ...] = ()
        """Further fds the child inherits (a Deno child's memory warden socket)."""
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
        self._tree: dict[int, int] = {}
        """pid → pidfd of every descendant seen (:meth:`remember_tree`), killed and awaited at close."""
        self._wait_task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None
        self.pipes_done: asyncio.Future[None] = self.loop.create_future()
        self.channel_done: asyncio.Future[None] = self.loop.create_future()

    # -- state ----------------------------------------------------------------------------------

    def is_broken(self) -> bool:
        """Whether the child broke the protocol (its frames are then ignored)."""
        return self.broken

    def abandon(self) -> None:
        """Synchronous teardown for a child whose event loop is gone: SIGKILL, reap, close, delete."""
        if self.pid and not self.reaped:
            self.kill()
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.reaped = True
            if self.proc is not None:
                self.proc.returncode = -signal_module.SIGKILL
        with contextlib.suppress(OSError):
            if self._pidfd is not None:
                os.close(self._pidfd)
        tree, self._tree = self._tree, {}
        for pidfd in tree.values():
            with contextlib.suppress(OSError):
                signal_module.pidfd_send_signal(pidfd, signal_module.SIGKILL)
            with contextlib.suppress(OSError):
                os.close(pidfd)
        for transport in [self.channel, *self.pipe_transports]:
            if transport is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: close() half-works
                    transport.close()
        if self._sock is not None:
            self._sock.close()
        if self.proc is not None:
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()
        if self.workdir:
            remove_tree(self.workdir)
        self.closed = True

    @property
    def usable(self) -> bool:
        """Booted, confined, idle and still alive (the pool may hand it out)."""
        return self.ready is not None and not (self.broken or self.gone or self.closed or self.reaped)

    def diagnostics(self) -> dict[str, Any]:
        """The child's exit status, CPU and output tails, for a result's ``meta``."""
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

    def launch(
        self, child_fd: int, read_paths: Sequence[str], code_table: str | None
    ) -> tuple[list[str], dict[str, str], tuple[int, int] | None]:
        """How to spawn this child: its argv, its whole environment, and the uid/gid to start it as
        (``None``: the host's). Another kind of child (a Deno one) is spawned differently."""
        env = {} if self.plan.backend == "bwrap" else {"MALLOC_ARENA_MAX": "1"}
        # A root host starts bwrap unprivileged: the sandbox's uid then maps to that uid, not
        # to host uid 0 (bwrap's own work dir is a tmpfs inside; it needs no host cwd).
        as_user = self.plan.bwrap_as if os.geteuid() == 0 else None
        return self._argv(child_fd, read_paths, code_table), env, as_user

    def booted(self) -> CodeRunError | None:
        """Called once the child reported ``ready``: the host's last step of its boot (a Deno
        child's memory limit), or the failure that ends the boot."""
        return None

    def _argv(self, child_fd: int, read_paths: Sequence[str], code_table: str | None = None) -> list[str]:
        python = [self.python, "-I", "-S", "-X", "utf8", self.bootstrap, str(child_fd)]
        if code_table is not None:
            python.append(code_table)
        plan = self.plan
        if plan.backend == "sandbox-exec":
            return self._seatbelt_argv(python, read_paths)
        if plan.backend != "bwrap":
            return python
        assert plan.bwrap_path is not None
        if plan.bwrap_as is not None and os.geteuid() == 0:
            read_paths = self._readable_by(plan.bwrap_as, read_paths)
        boot_files = () if code_table is None else (code_table,)
        args = bwrap_args(self.python, self.bootstrap, self.disk_bytes, read_paths, boot_files)
        return [plan.bwrap_path, *args, "--", *python]

    def _seatbelt_argv(self, python: list[str], read_paths: Sequence[str]) -> list[str]:
        """``sandbox-exec -p <profile> <python> ...``: the profile grants this child's work dir (it
        must exist by now), the interpreter's files, the bootstrap's directory and the read paths;
        a read path it cannot express is a note. Raises :class:`BootFailure` when the interpreter,
        the bootstrap's directory or the work dir cannot be written into a profile safely."""
        assert self.plan.sandbox_exec is not None
        try:
            profile, notes = seatbelt.build_profile(
                self.python,
                self.plan.interpreter_reads,
                self.workdir,
                bootstrap_dir=os.path.dirname(os.path.realpath(self.bootstrap)),
                read_paths=read_paths,
            )
        except seatbelt.UnsafePathError as error:
            raise BootFailure(
                CodeRunError("sandbox-unavailable", f"no Seatbelt profile for this child: {error}")
            ) from None
        self.report_notes.extend(notes)
        return [self.plan.sandbox_exec, "-p", profile, *python]

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
        workdir = SANDBOX_WORKDIR if plan.backend == "bwrap" else self.workdir
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
                # bwrap already gives every run a user namespace of its own; a landlock child
                # would share its uid's RLIMIT_NPROC count with every other run.
                "privateTaskCount": plan.backend == "landlock",
            },
        }

    async def start(self, read_paths: Sequence[str], timeout: float) -> None:
        """Spawn, send the boot frame and wait for ``ready``; raises :class:`BootFailure`."""
        try:
            await self._start(read_paths, timeout)
        except BaseException:
            await self.close()
            raise

    async def _start(self, read_paths: Sequence[str], timeout: float) -> None:
        self.workdir = tempfile.mkdtemp(prefix="toolrt-run-")
        if self.plan.drop_to is not None and os.geteuid() == 0:
            os.chown(self.workdir, *self.plan.drop_to)
        code_table = await _code_table(self.bootstrap)
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                argv, env, as_user = self.launch(child.fileno(), read_paths, code_table)
                self.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(child.fileno(), *self.extra_fds),
                    close_fds=True,
                    start_new_session=True,
                    env=env,
                    cwd="/" if as_user is not None else self.workdir,
                    **run_as(as_user),
                )
            except OSError as error:
                raise BootFailure(
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
            raise BootFailure(
                CodeRunError("worker-exit", f"worker did not become ready within {timeout:g}s"), self
            ) from None
        # Frames that arrived with ``ready`` were processed synchronously, before this resumed.
        failure = waiter.failure or waiter.violation
        if failure is not None:
            if not waiter.exit_checked:
                await self.await_exit(GONE_GRACE)
            raise BootFailure(failure, self)
        self.listener = _NullListener()

    # -- exit -----------------------------------------------------------------------------------

    def _watch_exit(self) -> None:
        if sys.platform == "linux":  # pidfd_open is Linux's (5.3+); elsewhere a thread waits
            with contextlib.suppress(AttributeError, OSError):
                self._pidfd = os.pidfd_open(self.pid)
        if self._pidfd is None:
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
        """The channel closed (EOF or error)."""
        if not self.channel_done.done():
            self.channel_done.set_result(None)
        self._gone()

    def pipe_closed(self) -> None:
        """stdout or stderr closed."""
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

    async def await_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the child to be reaped; whether it was."""
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
        return tree_cpu(self.pid)

    def workdir_view(self) -> str | None:
        """Where the host can read the program's work dir, to poll the disk quota; ``None`` when it
        cannot (yet, or any more).

        Under bwrap the work dir is a tmpfs inside the child's mount namespace, which the host sees
        through ``/proc/<pid>/root`` of bwrap's namespace init (the bwrap process's one child). The
        host may look: as root, or as the owner of the child's user namespace. The tmpfs already
        caps the bytes; the poll adds the entry cap, which a size cap does not give (empty files
        cost no blocks).
        """
        if self.plan.backend != "bwrap":
            return self.workdir or None
        if self.reaped:
            return None
        namespace_init = child_pids(self.pid)
        if len(namespace_init) != 1:
            return None
        return f"/proc/{namespace_init[0]}/root{SANDBOX_WORKDIR}"

    # -- traffic --------------------------------------------------------------------------------

    def violate(self, reason: str) -> None:
        """The child broke the protocol: mark it broken and tell the listener (once)."""
        if not self.broken:
            self.broken = True
            self.listener.on_violation(self, reason)

    def output(self, name: str, data: bytes) -> None:
        """Keep the tail of what the child wrote to ``name`` (stdout or stderr) and count it."""
        tail = self.stderr_tail if name == "stderr" else self.stdout_tail
        tail += data
        if len(tail) > _TAIL_BYTES:
            del tail[: len(tail) - _TAIL_BYTES]
        self.listener.on_output(self, len(data))

    def send(self, payload: dict[str, Any]) -> None:
        """Send ``payload`` to the child as one frame (dropped once the channel is closing)."""
        if self.channel is not None and not self.channel.is_closing():
            self.channel.write(encode_frame(payload))

    # -- teardown -------------------------------------------------------------------------------

    def remember_tree(self) -> None:
        """Hold a pidfd on each of the child's live descendants (under bwrap: its namespace init
        and the program, which are in other sessions), so that :meth:`close` can kill them and
        wait for them even after the child itself is gone. Why pidfds: a pid may be reused once its
        process is reaped; a pidfd names one process for good."""
        if not self.pid or self.reaped or not hasattr(os, "pidfd_open"):
            return
        pending = child_pids(self.pid)
        while pending and len(self._tree) < _MAX_TREE:
            pid = pending.pop()
            if pid in self._tree:
                continue
            try:
                self._tree[pid] = os.pidfd_open(pid)
            except OSError:
                continue  # gone already
            pending.extend(child_pids(pid))

    async def _end_tree(self) -> None:
        """SIGKILL every remembered descendant and wait (bounded) until each has exited."""
        tree, self._tree = self._tree, {}
        waits: list[asyncio.Future[None]] = []
        for pidfd in tree.values():
            with contextlib.suppress(OSError):
                signal_module.pidfd_send_signal(pidfd, signal_module.SIGKILL)
            exited: asyncio.Future[None] = self.loop.create_future()
            try:
                self.loop.add_reader(pidfd, _settle, exited)  # a pidfd is readable once it exited
            except (OSError, ValueError):
                continue
            waits.append(exited)
        try:
            if waits:
                await asyncio.wait(waits, timeout=_TREE_GONE_TIMEOUT)
        finally:
            for pidfd in tree.values():
                with contextlib.suppress(OSError, ValueError):
                    self.loop.remove_reader(pidfd)
                with contextlib.suppress(OSError):
                    os.close(pidfd)

    async def close(self) -> None:
        """Kill the process group and every remembered descendant, reap, wait until all are gone,
        close the channel and pipes, delete the work dir."""
        if self.closed:
            return
        self.closed = True
        self.remember_tree()
        self.kill()
        if self.proc is not None and not await self.await_exit(10.0):  # pragma: no cover
            self.kill()  # SIGKILL cannot be ignored: only a stuck kernel gets here
            await asyncio.shield(self.exited)
        await self._end_tree()
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
            await aremove_tree(self.workdir)


async def _code_table(bootstrap: str) -> str | None:
    """The file of the child modules' precompiled code for ``bootstrap``'s directory
    (:mod:`.code_table`), or ``None`` (the child compiles them itself). Compiling runs on a worker
    thread, the first time and after a source changed; otherwise this is a few ``stat`` calls."""
    if not code_tables.AVAILABLE:
        return None
    directory = os.path.dirname(os.path.abspath(bootstrap))
    table = code_tables.fresh_code_table(directory)
    if table is None:
        table = await asyncio.to_thread(code_tables.code_table, directory)
    return table


# --- the channel, the pipes and the listeners nobody else owns ----------------------------------------


class _ChannelProtocol(asyncio.BufferedProtocol):
    """Reads into one preallocated buffer: asyncio's plain protocols ``recv(256 KiB)`` a fresh bytes
    object per read, which costs ~10 µs per frame here (the allocation, not the data)."""

    def __init__(self, child: Child) -> None:
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
    def __init__(self, child: Child, name: str) -> None:
        self.child = child
        self.name = name

    def data_received(self, data: bytes) -> None:
        self.child.output(self.name, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.child.pipe_closed()


class _NullListener:
    """Frames from a child nobody is listening to (idle in the pool): any frame is a violation."""

    def on_frame(self, child: Child, frame: ChildFrame) -> None:
        child.violate(f"unexpected {type(frame).__name__.lower()} frame while idle")

    def on_violation(self, child: Child, reason: str) -> None:
        child.kill()

    def on_output(self, child: Child, size: int) -> None:
        return None

    def on_gone(self, child: Child) -> None:
        child.kill()


class _BootListener:
    """Waits for ``ready`` (or ``boot-failed``); anything else ends the boot as a violation."""

    def __init__(self, child: Child) -> None:
        self.done: asyncio.Future[None] = child.loop.create_future()
        self.failure: CodeRunError | None = None
        self.violation: CodeRunError | None = None
        self.exit_checked = False

    def _finish(self, failure: CodeRunError | None) -> None:
        if not self.done.done():
            self.failure = failure
            self.done.set_result(None)

    def on_frame(self, child: Child, frame: ChildFrame) -> None:
        if child.ready is not None:
            child.violate(f"{frame_name(frame)} frame before the program was sent")
        elif isinstance(frame, Ready):
            child.ready = frame
            child.report = child.plan.achieved(frame, tuple(child.report_notes))
            failure = child.booted()
            if failure is not None:
                child.broken = True
                child.kill()
            self._finish(failure)
        elif isinstance(frame, BootFailed):
            child.broken = True
            self._finish(
                CodeRunError("sandbox-unavailable", f"confinement failed in the child: {frame.message}")
            )
        else:
            child.violate(f"{frame_name(frame)} frame before ready")

    def on_violation(self, child: Child, reason: str) -> None:
        child.kill()
        self.violation = CodeRunError("worker-exit", f"protocol violation: {reason}; worker killed")
        self._finish(self.violation)

    def on_output(self, child: Child, size: int) -> None:
        return None

    def on_gone(self, child: Child) -> None:
        if self.done.done():
            return
        self.exit_checked = True

        async def classify() -> None:
            await child.await_exit(GONE_GRACE)
            child.kill()
            await child.await_exit(GONE_GRACE)
            self._finish(CodeRunError("worker-exit", exit_message(child.status, "during boot")))

        _background(classify())


_BACKGROUND: set[asyncio.Future[Any]] = set()


def _background(coroutine: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(coroutine)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


def frame_name(frame: ChildFrame) -> str:
    """A frame's protocol name (``t``), for messages."""
    return {Ready: "ready", BootFailed: "boot-failed", Log: "log", Call: "call", Done: "done"}[type(frame)]
