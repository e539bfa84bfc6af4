"""``PythonSandboxRuntime``: model-written Python in a fresh, kernel-confined child process per run.

Each run gets one child (``<python> -I -S -X utf8 bootstrap.py``) that confines itself before it
reads the program and runs exactly one program (see ``bootstrap.py``); the channel is one socket
on fd 3 (see ``protocol.py`` for frames and the hostile-frame rules). The host side, which never
trusts the child:

* spawns with an empty environment (plus ``MALLOC_ARENA_MAX=1``), ``close_fds``, one ``pass_fds``
  socket, ``start_new_session``, stdin from ``/dev/null`` and a fresh private work dir as cwd
  (deleted afterwards);
* enforces the wall clock by SIGKILLing the whole process group (under bwrap, killing bwrap takes
  its pid namespace down with it: ``--die-with-parent``), drains stdout/stderr concurrently into the
  same output ledger as ``log`` frames, polls the work dir against the disk quota (bwrap: a
  ``--size``-capped tmpfs instead), and reaps the child (``wait4``, which also yields its CPU time)
  **before** the result is reported;
* picks a backend once (probing is cached): ``bwrap`` + in-child confinement, else in-child
  confinement alone (``landlock``: rlimits, uid drop, no_new_privs, Landlock, seccomp), else
  refuses with ``sandbox-unavailable`` — ``unconfined`` (rlimits only) needs
  ``allow_unconfined=True``. Every result's ``meta["isolation"]`` says what that run achieved.

Limits (runtime defaults, overridden per run by ``request.limits``): wall → ``timeout``; CPU →
``cpu-limit`` (RLIMIT_CPU; whole seconds, so the budget is rounded up and includes the child's boot
CPU); memory → ``memory-limit`` (RLIMIT_AS: a ``MemoryError`` or the kernel killing the child);
output → ``output-limit``; completion value → ``value-limit``; ``disk_bytes`` (runtime-wide) →
``disk-limit``. The seccomp filter forbids changing rlimits after confinement, so a warm child can
serve only runs whose CPU and memory limits equal the runtime's defaults; other runs boot a cold
child with their own limits.

Binding calls are dispatched concurrently (one task per ``call`` frame), at most
``max_in_flight_calls`` at once: the child applies backpressure, and a child exceeding the bound is a
protocol violation. When a run ends, binding calls still in flight are cancelled and awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import signal as signal_module
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from ..._json import NotLosslessJsonError, snapshot_json
from ..base import (
    NO_VALUE,
    CodeBindingNamespace,
    CodeRunError,
    CodeRunErrorKind,
    CodeRunLimits,
    CodeRunRequest,
    CodeRunResult,
    IsolationReport,
    validate_bindings,
)
from . import probe
from .pool import WarmPool
from .protocol import (
    MAX_JSON_DEPTH,
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
    value_depth_exceeds,
    value_wire_bytes,
)

__all__ = ["DEFAULT_LIMITS", "BackendName", "ProbeResults", "PythonSandboxRuntime", "probe_host"]

DEFAULT_LIMITS: Final = CodeRunLimits(
    wall_seconds=30, cpu_seconds=10, memory_bytes=512 << 20, output_bytes=64 << 20, value_bytes=16 << 20
)
BackendName = Literal["auto", "bwrap", "landlock", "unconfined"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_BOOTSTRAP = os.path.join(_HERE, "bootstrap.py")
_SANDBOX_WORKDIR = "/tmp/work"
"""The work dir's path inside a bwrap sandbox (a size-capped tmpfs)."""
_DROP_TO: Final = (65534, 65534)
_BOOT_TIMEOUT = 20.0
_EXIT_GRACE = 1.0
"""How long a child that sent ``done`` gets to exit by itself (frames meanwhile are still checked)."""
_GONE_GRACE = 2.0
"""How long after channel EOF the host waits for the exit status before killing."""
_WATCH_SECONDS = 0.05
"""Disk quota poll period; the CPU watchdog samples every other tick."""
_DISK_MAX_ENTRIES = 10_000
_BOOT_FRAME_BYTES = 64 * 1024
_MIN_FRAME_BYTES = 16 << 20
_TAIL_BYTES = 4096
_CPU_BOOT_ALLOWANCE = 0.25
"""Seconds of CPU added before rounding up RLIMIT_CPU, for the child's own boot."""
_WARM_PREIMPORT = ("asyncio",)


# --- probing and the backend ladder ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProbeResults:
    """What the host found: Landlock ABI, seccomp support, and a working bwrap (if any).

    ``drop_problem`` says why children could not run as uid 65534 after the uid drop of a root host
    (``None``: they can); ``bwrap_disable_userns``: whether bwrap accepts ``--unshare-user
    --disable-userns``, which the bwrap rung requires.
    """

    landlock_abi: int | None
    seccomp: bool
    bwrap_path: str | None
    bwrap_works: bool
    bwrap_reason: str = ""
    bwrap_disable_userns: bool = True
    drop_problem: str | None = None


def probe_host(python: str | None = None) -> ProbeResults:
    """Run the (cached, once per process) capability probes of :mod:`.probe`."""
    bwrap = probe.probe_bwrap()
    drop_problem = probe.drop_target_problem(*_DROP_TO, executable=python) if os.geteuid() == 0 else None
    return ProbeResults(
        landlock_abi=probe.probe_landlock(),
        seccomp=probe.probe_seccomp(),
        bwrap_path=bwrap.path,
        bwrap_works=bwrap.works,
        bwrap_reason=bwrap.reason,
        bwrap_disable_userns=bwrap.disable_userns,
        drop_problem=drop_problem,
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """The resolved backend (or why there is none)."""

    backend: Literal["bwrap", "landlock", "unconfined"] | None
    unavailable: str = ""
    bwrap_path: str | None = None
    landlock: bool = False
    seccomp: bool = False
    landlock_abi: int | None = None
    drop_to: tuple[int, int] | None = None
    notes: tuple[str, ...] = ()

    def predicted(self) -> IsolationReport:
        """What a child of this plan should report (replaced by a real report once one boots)."""
        if self.backend is None:
            return IsolationReport("process", "none", notes=(self.unavailable,))
        if self.backend == "unconfined":
            return IsolationReport("process", "none", ("rlimits",), None, self.notes)
        layers = ["bwrap"] if self.backend == "bwrap" else []
        layers.append("rlimits")
        if self.drop_to is not None:
            layers.append("uid-drop")
        layers.append("no-new-privs")
        if self.landlock:
            layers.append("landlock")
        if self.seccomp:
            layers.append("seccomp")
        root_kept = self.backend == "landlock" and os.geteuid() == 0 and self.drop_to is None
        full = (
            self.landlock
            and self.seccomp
            and self.landlock_abi is not None
            and self.landlock_abi >= 3
            and not root_kept
        )
        return IsolationReport(
            "process", "full" if full else "partial", tuple(layers), self.landlock_abi, self.notes
        )


def _resolve_plan(requested: BackendName, probes: ProbeResults, allow_unconfined: bool) -> _Plan:
    if requested == "unconfined":
        return _Plan(
            "unconfined",
            notes=("unconfined backend (allow_unconfined=True): only rlimits and host-side limits apply",),
        )
    abi = probes.landlock_abi
    bwrap_ok = probes.bwrap_works and probes.bwrap_path is not None and probes.bwrap_disable_userns
    if requested in ("auto", "bwrap") and bwrap_ok:
        return _Plan(
            "bwrap",
            bwrap_path=probes.bwrap_path,
            landlock=abi is not None,
            seccomp=probes.seccomp,
            landlock_abi=abi,
            notes=() if abi is not None else ("Landlock unavailable: bwrap namespaces + seccomp only",),
        )
    bwrap_reason = probes.bwrap_reason or "not found"
    if probes.bwrap_works and not probes.bwrap_disable_userns:
        bwrap_reason = "bwrap cannot use --unshare-user --disable-userns here"
    if requested == "bwrap":
        return _Plan(None, unavailable=f"bwrap backend requested but unavailable: {bwrap_reason}")
    missing = []
    if abi is None:
        missing.append("Landlock (needs Linux >= 5.13 with the landlock LSM enabled)")
    if not probes.seccomp:
        missing.append("seccomp filters (needs x86_64 or aarch64 Linux)")
    if not missing:
        drop_to: tuple[int, int] | None = None
        notes: tuple[str, ...] = ()
        if os.geteuid() == 0:
            if probes.drop_problem is None:
                drop_to = _DROP_TO
            else:
                notes = (
                    f"uid drop skipped ({probes.drop_problem}): the interpreter would break as uid "
                    f"{_DROP_TO[0]}, so the child stays root (capabilities kept) under Landlock and seccomp",
                )
        return _Plan("landlock", landlock=True, seccomp=True, landlock_abi=abi, drop_to=drop_to, notes=notes)
    if requested == "auto" and allow_unconfined:
        return _Plan(
            "unconfined",
            notes=(
                "no confinement available (missing " + "; ".join(missing) + "); running UNCONFINED "
                "because allow_unconfined=True",
            ),
        )
    reason = "no confinement available: missing " + "; ".join(missing)
    if requested == "auto":
        reason += f"; no working bwrap ({bwrap_reason})"
    reason += "; pass allow_unconfined=True to run without a sandbox"
    return _Plan(None, unavailable=reason)


# --- limits -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Limits:
    wall: float
    cpu: float
    memory: int
    output: int
    value: int

    @property
    def rlimit_cpu(self) -> int:
        return max(1, math.ceil(self.cpu + _CPU_BOOT_ALLOWANCE))


def _merge_limits(base: CodeRunLimits, override: CodeRunLimits | None) -> _Limits:
    def pick(name: str) -> Any:
        value = getattr(override, name, None) if override is not None else None
        return value if value is not None else getattr(base, name)

    limits = _Limits(
        wall=float(pick("wall_seconds")),
        cpu=float(pick("cpu_seconds")),
        memory=int(pick("memory_bytes")),
        output=int(pick("output_bytes")),
        value=int(pick("value_bytes")),
    )
    if not (limits.wall > 0 and limits.cpu > 0 and limits.memory > 0 and limits.output >= 0):
        raise ValueError(f"invalid limits: {limits}")
    if limits.value < 0:
        raise ValueError(f"invalid limits: {limits}")
    return limits


def _fill_limits(limits: CodeRunLimits) -> CodeRunLimits:
    return CodeRunLimits(
        wall_seconds=limits.wall_seconds if limits.wall_seconds is not None else DEFAULT_LIMITS.wall_seconds,
        cpu_seconds=limits.cpu_seconds if limits.cpu_seconds is not None else DEFAULT_LIMITS.cpu_seconds,
        memory_bytes=limits.memory_bytes if limits.memory_bytes is not None else DEFAULT_LIMITS.memory_bytes,
        output_bytes=limits.output_bytes if limits.output_bytes is not None else DEFAULT_LIMITS.output_bytes,
        value_bytes=limits.value_bytes if limits.value_bytes is not None else DEFAULT_LIMITS.value_bytes,
    )


@dataclass(frozen=True, slots=True)
class _BootSpec:
    """What a child is booted with (fixed for its life: seccomp forbids changing rlimits later)."""

    cpu_seconds: int
    memory_bytes: int
    preimport: tuple[str, ...] = ()


# --- the child process --------------------------------------------------------------------------------


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


class _ChannelProtocol(asyncio.Protocol):
    def __init__(self, child: _Child) -> None:
        self.child = child

    def data_received(self, data: bytes) -> None:
        child = self.child
        try:
            for body in child.decoder.feed(data):
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
        args = _bwrap_args(self.python, self.bootstrap, self.disk_bytes, read_paths)
        return [plan.bwrap_path, *args, "--", *python]

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
                    cwd=self.workdir,
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
        self._gone()

    def pipe_closed(self) -> None:
        self.pipes_open -= 1
        if self.pipes_open <= 0 and not self.pipes_done.done():
            self.pipes_done.set_result(None)

    async def drained(self, timeout: float = 0.25) -> None:
        """Wait (briefly) for stdout/stderr EOF after exit, so their tails are complete."""
        if self.pipes_open > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.pipes_done), timeout)

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

    def signal_number(self) -> int | None:
        """The signal that ended the child; exit code 128 + n counts as signal n, because that is how
        bwrap's init and the bootstrap's PID-1 reaper relay a signal death."""
        status = self.status
        if status is None:
            return None
        if os.WIFSIGNALED(status):
            return os.WTERMSIG(status)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0
        if 128 < code < 128 + 65:
            return code - 128
        return None

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
        shutil.rmtree(child.workdir, ignore_errors=True)
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
            child.report = _achieved(child.plan, frame)
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
            self._finish(CodeRunError("worker-exit", _exit_message(child, "during boot")))

        _background(classify())


_BACKGROUND: set[asyncio.Future[Any]] = set()


def _background(coroutine: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(coroutine)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


def _frame_name(frame: ChildFrame) -> str:
    return {Ready: "ready", BootFailed: "boot-failed", Log: "log", Call: "call", Done: "done"}[type(frame)]


def _exit_message(child: _Child, when: str = "before completing") -> str:
    signum = child.signal_number()
    if signum is not None:
        return f"worker killed by signal {_signal_name(signum)} {when}"
    status = child.status
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else -1
    return f"worker exited with code {code} {when}"


def _signal_name(signum: int) -> str:
    try:
        return signal_module.Signals(signum).name
    except ValueError:
        return str(signum)


def _achieved(plan: _Plan, ready: Ready) -> IsolationReport:
    layers = (("bwrap",) if plan.backend == "bwrap" else ()) + ready.layers
    enforcement = "none" if plan.backend == "unconfined" else ready.enforcement
    return IsolationReport("process", enforcement, layers, ready.landlock_abi, plan.notes + ready.notes)


def _bwrap_args(python: str, bootstrap: str, disk_bytes: int, read_paths: Sequence[str]) -> list[str]:
    """bwrap arguments: fresh namespaces, minimal read-only binds, a size-capped tmpfs work dir,
    no /proc or /sys; the child's environment is set here because bwrap itself gets none."""
    args = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(_DROP_TO[0]),
        "--gid",
        str(_DROP_TO[1]),
    ]
    bound: list[str] = []

    def bind(path: str) -> None:
        if any(path == done or path.startswith(done.rstrip("/") + "/") for done in bound):
            return
        bound.append(path)
        args.extend(["--ro-bind", path, path])

    bind("/usr")
    for top in ("/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            args.extend(["--symlink", os.readlink(top), top])
        elif os.path.isdir(top):
            bind(top)
    prefix = os.path.realpath(sys.base_prefix)
    bind(prefix)
    bind(os.path.dirname(os.path.realpath(python)))
    bind(os.path.dirname(os.path.realpath(bootstrap)))
    for extra in ("/etc/localtime", "/etc/ld.so.cache"):
        if os.path.exists(extra):
            args.extend(["--ro-bind", extra, extra])
    for path in read_paths:
        if os.path.exists(path):
            bind(path)
    args.extend(
        [
            "--dev",
            "/dev",
            "--size",
            str(max(disk_bytes, 4096)),
            "--tmpfs",
            _SANDBOX_WORKDIR,
            "--remount-ro",
            "/",
            "--chdir",
            _SANDBOX_WORKDIR,
            "--setenv",
            "MALLOC_ARENA_MAX",
            "1",
        ]
    )
    return args


async def _remove_tree(path: str) -> None:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return
    except OSError:
        await asyncio.to_thread(shutil.rmtree, path, True)


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


_MAX_TREE = 64


def _proc_cpu(pid: int) -> float | None:
    """utime + stime + cutime + cstime of ``pid`` in seconds (its own CPU and that of the children
    it reaped), from ``/proc/<pid>/stat``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        fields = data[data.rindex(b")") + 2 :].split()
        return sum(int(field) for field in fields[11:15]) / _CLOCK_TICKS
    except (OSError, ValueError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return [int(part) for part in handle.read().split()]
    except (OSError, ValueError):
        return []


def _tree_cpu(root: int) -> float | None:
    """CPU seconds of ``root`` and its live descendants (reaped ones count through their parent)."""
    total = _proc_cpu(root)
    if total is None:
        return None
    pending = _children(root)
    seen = 1
    while pending and seen < _MAX_TREE:
        pid = pending.pop()
        seen += 1
        cpu = _proc_cpu(pid)
        if cpu is not None:
            total += cpu
            pending.extend(_children(pid))
    return total


def _dir_usage(path: str, max_entries: int) -> tuple[int, int]:
    """(bytes allocated, entries) under ``path``, counting at most ``max_entries + 1`` entries."""
    total = 0
    entries = 0
    stack = [path]
    while stack:
        directory = stack.pop()
        try:
            iterator = os.scandir(directory)
        except OSError:
            continue
        with iterator:
            for entry in iterator:
                entries += 1
                if entries > max_entries:
                    return total, entries
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
    return total, entries


# --- one run ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Outcome:
    error: CodeRunError | None = None
    value: Any = NO_VALUE
    from_done: bool = False


class _Run:
    """The host side of one program run (the listener of its child)."""

    def __init__(
        self,
        runtime: PythonSandboxRuntime,
        request: CodeRunRequest,
        limits: _Limits,
        plan: _Plan,
    ) -> None:
        self.runtime = runtime
        self.request = request
        self.limits = limits
        self.plan = plan
        self.loop = asyncio.get_running_loop()
        self.namespaces: dict[str, CodeBindingNamespace] = {ns.name: ns for ns in request.bindings}
        self.logs: list[str] = []
        self.output_used = 0
        self.outcome: _Outcome | None = None
        self.decided: asyncio.Future[None] = self.loop.create_future()
        self.child: _Child | None = None
        self.calls: set[asyncio.Task[None]] = set()
        self.in_flight = 0
        self.last_call_id = 0
        self.program_sent = False
        self.finalizing = False
        self.helpers: set[asyncio.Task[None]] = set()
        self.warm = False
        self.cpu_base: float | None = None
        self.cpu_used = 0.0

    # -- deciding the outcome -------------------------------------------------------------------

    def decide(self, outcome: _Outcome) -> None:
        """First outcome wins, except that a protocol violation during the post-``done`` grace
        replaces a completion (a second completion, a frame after completion)."""
        current = self.outcome
        if current is not None:
            replace = (
                current.from_done
                and not self.finalizing
                and outcome.error is not None
                and outcome.error.kind == "worker-exit"
            )
            if not replace:
                return
        self.outcome = outcome
        if not self.decided.done():
            self.decided.set_result(None)
        if self.child is not None and not outcome.from_done:
            self.child.kill()

    def fail(self, kind: CodeRunErrorKind, message: str) -> None:
        self.decide(_Outcome(CodeRunError(kind, message)))

    def dispose(self) -> None:
        self.fail("abort", "runtime disposed")

    def _on_abort(self, reason: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop may be closed already
            self.loop.call_soon_threadsafe(self.fail, "abort", str(reason))

    def _on_timeout(self) -> None:
        self.fail("timeout", f"wall-clock ceiling reached ({self.limits.wall:g}s)")

    # -- the listener interface -----------------------------------------------------------------

    def on_violation(self, child: _Child, reason: str) -> None:
        self.fail("worker-exit", f"protocol violation: {reason}; worker killed")

    def on_output(self, child: _Child, size: int) -> None:
        if self.outcome is not None:
            return
        self.output_used += size
        if self.output_used > self.limits.output:
            self.fail("output-limit", f"outer output exceeded {self.limits.output} bytes")

    def on_gone(self, child: _Child) -> None:
        if self.outcome is not None:
            return  # decided already (after a completion, the exit is expected)
        task = asyncio.ensure_future(self._classify_exit(child))
        self.helpers.add(task)
        task.add_done_callback(self.helpers.discard)

    async def _classify_exit(self, child: _Child) -> None:
        if not await child._await_exit(_GONE_GRACE):
            child.kill()
            await child._await_exit(_GONE_GRACE)
        await child.drained()
        limits = self.limits
        signum = child.signal_number()
        used = self.cpu_used
        if self.cpu_base is not None:
            used = max(used, child.cpu_seconds - self.cpu_base)
        # RLIMIT_CPU's hard limit (soft + 1) ends in SIGKILL, as does the kernel's OOM killer. The
        # watchdog's last sample or wait4's rusage tells them apart; when both are blind (bwrap
        # without a readable /proc), a child that lived past its CPU allowance is taken as CPU-bound.
        hard = child.spec.cpu_seconds + 1
        cpu_exhausted = (
            used >= limits.cpu - 0.25
            or child.cpu_seconds >= hard - 0.1
            or (used == 0 and child.cpu_seconds < 0.1 and time.perf_counter() - child.started >= hard)
        )
        stderr = bytes(child.stderr_tail)
        if signum == signal_module.SIGXCPU or (signum == signal_module.SIGKILL and cpu_exhausted):
            self.fail("cpu-limit", f"CPU budget exhausted ({limits.cpu:g}s)")
        elif signum == signal_module.SIGKILL:
            self.fail(
                "memory-limit",
                f"worker was killed by the kernel (SIGKILL), most likely out of memory "
                f"(limit {limits.memory} bytes)",
            )
        elif signum == signal_module.SIGXFSZ:
            self.fail("disk-limit", f"disk quota exceeded ({self.runtime.disk_bytes} bytes)")
        elif signum is None and b"MemoryError" in stderr:
            self.fail("memory-limit", f"memory limit reached ({limits.memory} bytes)")
        else:
            self.fail("worker-exit", _exit_message(child))

    def on_frame(self, child: _Child, frame: ChildFrame) -> None:
        if isinstance(frame, Log):
            self._on_log(child, frame)
        elif isinstance(frame, Call):
            self._on_call(child, frame)
        elif isinstance(frame, Done):
            self._on_done(child, frame)
        else:
            child.violate(f"unexpected {_frame_name(frame)} frame during a run")

    def _check_live(self, child: _Child, kind: str) -> bool:
        if not self.program_sent:
            child.violate(f"{kind} frame before the program was sent")
            return False
        if self.outcome is not None and self.outcome.from_done:
            child.violate("a second completion" if kind == "done" else f"{kind} frame after the completion")
            return False
        return self.outcome is None

    def _on_log(self, child: _Child, frame: Log) -> None:
        if not self._check_live(child, "log"):
            return
        self.output_used += frame.size
        if self.output_used > self.limits.output:
            self.fail("output-limit", f"outer output exceeded {self.limits.output} bytes")
            return
        self.logs.append(frame.text)

    def _on_call(self, child: _Child, frame: Call) -> None:
        if not self._check_live(child, "call"):
            return
        if frame.id <= self.last_call_id:
            child.violate(f"call id {frame.id} is not greater than the previous id {self.last_call_id}")
            return
        self.last_call_id = frame.id
        namespace = self.namespaces.get(frame.namespace)
        if namespace is None:
            child.violate(f"call to unknown binding global {frame.namespace[:60]!r}")
            return
        if self.in_flight >= self.runtime.max_in_flight_calls:
            child.violate(f"more than {self.runtime.max_in_flight_calls} binding calls in flight")
            return
        self.in_flight += 1
        task = asyncio.ensure_future(self._serve(child, namespace, frame))
        self.calls.add(task)
        task.add_done_callback(self.calls.discard)

    async def _serve(self, child: _Child, namespace: CodeBindingNamespace, call: Call) -> None:
        reply: dict[str, Any]
        try:
            reply = await self._invoke(namespace, call)
        finally:
            self.in_flight -= 1
        if self.outcome is None:
            child.send(reply)

    async def _invoke(self, namespace: CodeBindingNamespace, call: Call) -> dict[str, Any]:
        functions: Mapping[str, Any] = namespace.functions
        if call.name not in functions:
            return _error_reply(call.id, f'unknown binding "{namespace.name}.{call.name}"')
        function = functions[call.name]
        try:
            value = await function(call.args)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            return _error_reply(call.id, _message_of(error))
        try:
            snapshot = snapshot_json(value)
            if value_depth_exceeds(snapshot, MAX_JSON_DEPTH):
                raise NotLosslessJsonError(f"nested deeper than {MAX_JSON_DEPTH} levels")
            return {"t": "reply", "id": call.id, "ok": True, "value": snapshot}
        except (NotLosslessJsonError, ValueError, RecursionError):
            return _error_reply(call.id, "binding resolution must be lossless JSON")

    def _on_done(self, child: _Child, frame: Done) -> None:
        if not self._check_live(child, "done"):
            return
        limits = self.limits
        if frame.ok:
            if not frame.has_value:
                self.decide(_Outcome(from_done=True))
                return
            try:
                value = snapshot_json(frame.value)
            except NotLosslessJsonError:
                self.decide(
                    _Outcome(
                        CodeRunError("invalid-output", "program completion must be lossless JSON"),
                        from_done=True,
                    )
                )
                return
            if value_wire_bytes(value) > limits.value:
                self.decide(
                    _Outcome(
                        CodeRunError("value-limit", f"completion value exceeded {limits.value} bytes"),
                        from_done=True,
                    )
                )
                return
            self.decide(_Outcome(value=value, from_done=True))
            return
        kind = frame.kind
        if kind == "exception":
            error = CodeRunError("exception", frame.message)
        elif kind == "invalid-output":
            error = CodeRunError("invalid-output", "program completion must be lossless JSON")
        elif kind == "value-limit":
            error = CodeRunError("value-limit", f"completion value exceeded {limits.value} bytes")
        elif kind == "memory-limit":
            error = CodeRunError(
                "memory-limit", f"memory limit reached ({limits.memory} bytes): {_last_line(frame.message)}"
            )
        else:
            error = CodeRunError("disk-limit", f"disk quota exceeded ({self.runtime.disk_bytes} bytes)")
        self.decide(_Outcome(error, from_done=True))

    # -- running --------------------------------------------------------------------------------

    async def execute(self) -> CodeRunResult:
        started = time.perf_counter()
        timer = self.loop.call_later(self.limits.wall, self._on_timeout)
        signal = self.request.signal
        detach = signal.add_callback(self._on_abort) if signal is not None else None
        child: _Child | None = None
        boot_meta: dict[str, Any] = {}
        try:
            child = self.runtime._checkout(self.limits)
            self.warm = child is not None
            if child is None and self.outcome is None:
                child, boot_meta = await self._cold_start()
            if child is not None and self.outcome is None:
                await self._drive(child)
        finally:
            self.finalizing = True
            timer.cancel()
            if detach is not None:
                detach()
            if child is not None:
                await child.close()
            await self._settle_tasks()
        return self._result(child, boot_meta, started)

    async def _cold_start(self) -> tuple[_Child | None, dict[str, Any]]:
        remaining = max(self.limits.wall, 0.001)
        spawn = asyncio.ensure_future(self.runtime._spawn(self.limits, timeout=min(remaining, _BOOT_TIMEOUT)))
        waiting: set[asyncio.Future[Any]] = {spawn, self.decided}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not spawn.done():
            spawn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await spawn
            return None, {}
        try:
            return spawn.result(), {}
        except _BootFailure as failure:
            self.decide(_Outcome(failure.error))
            return None, failure.meta

    async def _drive(self, child: _Child) -> None:
        self.child = child
        child.decoder.max_frame_bytes = max(self.limits.value, self.limits.output, _MIN_FRAME_BYTES) + 65536
        child.listener = self
        if child.gone or child.broken:
            self.on_gone(child)
        limits = self.limits
        bindings = []
        for namespace in self.request.bindings:
            error_class = namespace.error_class
            bindings.append(
                {
                    "global": namespace.name,
                    "names": [name for name in namespace.functions if isinstance(name, str)],
                    "errorClass": (
                        {"name": error_class.name, "member": error_class.member_name_property}
                        if error_class is not None
                        else None
                    ),
                }
            )
        self.program_sent = True
        child.send(
            {
                "t": "run",
                "program": self.request.program,
                "bindings": bindings,
                "limits": {
                    "outputBytes": limits.output,
                    "valueBytes": limits.value,
                    "maxInFlight": self.runtime.max_in_flight_calls,
                },
            }
        )
        self.cpu_base = child.program_cpu()
        watcher = asyncio.ensure_future(self._watch(child))
        try:
            await self.decided
            if self.outcome is not None and self.outcome.from_done:
                await child._await_exit(_EXIT_GRACE)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch(self, child: _Child) -> None:
        """Host-side CPU watchdog (precise, unlike whole-second RLIMIT_CPU, which stays as the
        backstop) and, without bwrap's size-capped tmpfs, the work-dir disk quota."""
        quota = self.runtime.disk_bytes
        poll_disk = self.plan.backend != "bwrap"
        budget = self.limits.cpu
        ticks = 0
        while self.outcome is None:
            if poll_disk:
                used, entries = _dir_usage(child.workdir, _DISK_MAX_ENTRIES)
                if used > quota or entries > _DISK_MAX_ENTRIES:
                    self.fail("disk-limit", f"disk quota exceeded ({quota} bytes)")
                    return
            if ticks % 2 == 0 and self.cpu_base is not None:
                cpu = child.program_cpu()
                if cpu is not None:
                    self.cpu_used = cpu - self.cpu_base
                    if self.cpu_used > budget:
                        self.fail("cpu-limit", f"CPU budget exhausted ({budget:g}s)")
                        return
            ticks += 1
            await asyncio.sleep(_WATCH_SECONDS)

    async def _settle_tasks(self) -> None:
        pending = [*self.calls, *self.helpers]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _result(self, child: _Child | None, boot_meta: dict[str, Any], started: float) -> CodeRunResult:
        outcome = self.outcome or _Outcome(CodeRunError("worker-exit", "worker ended without a result"))
        if child is not None and child.report is not None:
            isolation = child.report
        else:
            isolation = self.plan.predicted()
        meta: dict[str, Any] = {
            "isolation": isolation.as_json(),
            "backend": self.plan.backend,
            "warm": self.warm,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
        if child is not None:
            meta["pid"] = child.pid
            meta.update(child.diagnostics())
        meta.update(boot_meta)
        return CodeRunResult(logs=tuple(self.logs), value=outcome.value, error=outcome.error, meta=meta)


def _error_reply(call_id: int, message: str) -> dict[str, Any]:
    return {"t": "reply", "id": call_id, "ok": False, "message": message}


def _message_of(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:
        text = ""
    return text or type(error).__name__


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "MemoryError"


# --- the runtime --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Probe:
    plan: _Plan | None = None
    lock: asyncio.Lock | None = None
    results: ProbeResults | None = None


class PythonSandboxRuntime:
    """A :class:`~toolrt.runtimes.base.CodeRuntime` running each program in a fresh, confined child.

    ``pool_size`` warm children are kept booted and confined (each runs one program, then exits);
    ``limits`` are the defaults a request's ``limits`` override field by field; ``backend`` picks
    the confinement ladder rung (``auto`` = bwrap if it works, else Landlock + seccomp, else
    ``sandbox-unavailable``); ``allow_unconfined=True`` is the explicit, loud opt-in to run without a
    sandbox; ``read_paths`` are extra read-only directories for the program; ``disk_bytes`` caps the
    work dir; ``python`` is the child interpreter (default: this interpreter's base executable).
    """

    def __init__(
        self,
        *,
        pool_size: int = 2,
        limits: CodeRunLimits = DEFAULT_LIMITS,
        backend: BackendName = "auto",
        allow_unconfined: bool = False,
        read_paths: Sequence[str] = (),
        max_in_flight_calls: int = 64,
        disk_bytes: int = 64 << 20,
        python: str | None = None,
        _bootstrap_path: str | None = None,
        _probe: Callable[[], ProbeResults] | None = None,
    ) -> None:
        if backend not in ("auto", "bwrap", "landlock", "unconfined"):
            raise ValueError(f"unknown backend {backend!r}")
        if backend == "unconfined" and not allow_unconfined:
            raise ValueError(
                'backend="unconfined" runs programs WITHOUT a sandbox: pass allow_unconfined=True'
            )
        if pool_size < 0 or max_in_flight_calls < 1 or disk_bytes < 0:
            raise ValueError("pool_size >= 0, max_in_flight_calls >= 1 and disk_bytes >= 0 are required")
        for path in read_paths:
            if not os.path.isabs(path):
                raise ValueError(f"read_paths must be absolute: {path!r}")
        self.limits = _fill_limits(limits)
        _merge_limits(self.limits, None)  # validates
        self.backend: BackendName = backend
        self.allow_unconfined = allow_unconfined
        self.read_paths = tuple(read_paths)
        self.max_in_flight_calls = max_in_flight_calls
        self.disk_bytes = disk_bytes
        self.python = python or os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
        self._bootstrap = _bootstrap_path or _BOOTSTRAP
        self._probe_function = _probe or (lambda: probe_host(self.python))
        self._probe = _Probe()
        self._isolation: IsolationReport | None = None
        self._pool: WarmPool[_Child] | None = None
        self._pool_size = pool_size
        self._runs: set[_Run] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._default = _merge_limits(self.limits, None)

    # -- CodeRuntime ------------------------------------------------------------------------------

    @property
    def language(self) -> str:
        return "python"

    @property
    def isolation(self) -> IsolationReport:
        """What this runtime achieves: the real report of the first child that booted with the
        default backend, else the prediction from the (cached, once-only) probes."""
        if self._isolation is not None:
            return self._isolation
        return self._plan_sync().predicted()

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        if self._closed:
            raise RuntimeError("runtime disposed")
        validate_bindings(request.bindings)
        limits = _merge_limits(self.limits, request.limits)
        self._bind_loop()
        plan = await self._plan()
        if plan.backend is None:
            return CodeRunResult(
                error=CodeRunError("sandbox-unavailable", plan.unavailable),
                meta={"isolation": plan.predicted().as_json(), "backend": None, "warm": False},
            )
        run = _Run(self, request, limits, plan)
        signal = request.signal
        if signal is not None and signal.aborted:
            return CodeRunResult(
                error=CodeRunError("abort", str(signal.reason)),
                meta={"isolation": self.isolation.as_json(), "backend": plan.backend, "warm": False},
            )
        self._runs.add(run)
        try:
            return await run.execute()
        finally:
            self._runs.discard(run)
            self._start_pool()

    async def aclose(self) -> None:
        """Kill every child (pool included); runs in flight end with ``abort``/``runtime disposed``."""
        self._closed = True
        with contextlib.suppress(RuntimeError):  # no running loop: nothing of this loop to close
            self._bind_loop()
        for run in list(self._runs):
            run.dispose()
        if self._pool is not None:
            await self._pool.aclose()
        while self._runs:
            await asyncio.sleep(0.005)

    async def warm(self) -> None:
        """Fill the warm pool now and wait until it is full (optional: the first run does it too)."""
        self._bind_loop()
        plan = await self._plan()
        if plan.backend is None or self._pool_size == 0:
            return
        self._start_pool()
        assert self._pool is not None
        deadline = time.monotonic() + _BOOT_TIMEOUT
        while self._pool.idle < self._pool_size and time.monotonic() < deadline:
            if self._pool.last_error is not None and self._pool.spawned == 0:
                break
            await asyncio.sleep(0.01)

    # -- internals --------------------------------------------------------------------------------

    def _plan_sync(self) -> _Plan:
        probe = self._probe
        if probe.plan is None:
            probe.results = self._probe_function()
            probe.plan = _resolve_plan(self.backend, probe.results, self.allow_unconfined)
        return probe.plan

    async def _plan(self) -> _Plan:
        probe = self._probe
        if probe.plan is not None:
            return probe.plan
        if probe.lock is None:
            probe.lock = asyncio.Lock()
        async with probe.lock:
            if probe.plan is None:
                results = await asyncio.to_thread(self._probe_function)
                probe.results = results
                probe.plan = _resolve_plan(self.backend, results, self.allow_unconfined)
        return probe.plan

    def _boot_spec(self, limits: _Limits, warm: bool) -> _BootSpec:
        return _BootSpec(
            cpu_seconds=limits.rlimit_cpu,
            memory_bytes=limits.memory,
            preimport=_WARM_PREIMPORT if warm else (),
        )

    async def _spawn(self, limits: _Limits, timeout: float, warm: bool = False) -> _Child:
        plan = await self._plan()
        child = _Child(plan, self._boot_spec(limits, warm), self._bootstrap, self.python, self.disk_bytes)
        await child.start(self.read_paths, timeout)
        if self._isolation is None and child.report is not None and plan is self._probe.plan:
            self._isolation = child.report
        return child

    async def _spawn_warm(self) -> _Child:
        return await self._spawn(self._default, _BOOT_TIMEOUT, warm=True)

    def _bind_loop(self) -> None:
        """Children, the pool and the probe lock belong to one event loop. A runtime reused from a
        new loop (``asyncio.run`` twice) drops what the old, finished loop left behind."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None and self._pool is not None:
            pool, self._pool = self._pool, None
            for child in pool.abandon():
                child.abandon()
        self._probe.lock = None
        self._loop = loop

    def _start_pool(self) -> None:
        if self._closed or self._pool_size == 0:
            return
        if self._pool is None:
            self._pool = WarmPool(self._pool_size, self._spawn_warm)
        self._pool.fill()

    def _checkout(self, limits: _Limits) -> _Child | None:
        """A warm child if the run's rlimit-relevant limits match the pool's, else ``None``."""
        if self._pool is None:
            self._start_pool()
            return None
        default = self._default
        if limits.rlimit_cpu != default.rlimit_cpu or limits.memory != default.memory:
            return None
        return self._pool.checkout()
