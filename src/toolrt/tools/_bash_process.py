"""One shell command as a process group: started in a session of its own, read, and killed whole.

Why a process group and not a process: ``bash -c 'make test'`` is a tree (the shell, make, the
compilers, a server a test started), and killing the shell leaves the tree running, holding the
output pipe open and the workspace busy. Each command is started with ``start_new_session=True``, so
its tree is one process group whose id is the shell's pid; :meth:`ShellProcess.terminate` sends that
group SIGTERM, gives it a short grace, then SIGKILL, and returns only once none of it is left. A
process that left the group (``setsid``; bubblewrap's sandbox, in a session of its own) is killed
too while it is still below the leader; one that was orphaned before the kill escapes, and only the
sandbox's pid namespace (which dies with its first process) catches those.

Why not :mod:`asyncio.subprocess`: on Python 3.11 ``Process.wait()`` resolves only once every pipe
is closed, so a grandchild holding stdout would hide the shell's exit. Here the leader's exit is
watched through a pidfd (a poll on platforms without one) and the output through the event loop's
reader, separately.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KILL_GRACE_S", "ShellProcess", "signal_name"]

KILL_GRACE_S = 1.0
"""Seconds between SIGTERM and SIGKILL: enough for a process to flush and remove its temp files,
short enough that a cancelled turn still drains within the runtime's 5 s grace (TO4)."""

_POLL_S = 0.02
_SETTLE_S = 1.0  # the longest a kill waits for a forking leader's first child
_READ_CHUNK = 1 << 16
_PROC = Path("/proc")


def signal_name(number: int) -> str:
    """``9`` → ``"SIGKILL"`` (``"SIG<n>"`` for a number this platform does not name)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


class ShellProcess:
    """A started command: its leader's exit, its output stream, and its whole group's death.

    ``sink(chunk)`` receives every chunk of combined stdout and stderr as it arrives, in the event
    loop's thread; ``sink(b"")`` once, at end of output.
    """

    def __init__(
        self, popen: subprocess.Popen[bytes], sink: Callable[[bytes], None], *, forks: bool = False
    ) -> None:
        self._popen = popen
        self._forks = forks
        self._sink = sink
        self._loop = asyncio.get_running_loop()
        assert popen.stdout is not None
        self._stdout = popen.stdout
        self._fd = popen.stdout.fileno()
        os.set_blocking(self._fd, False)
        self._output_closed = asyncio.Event()
        self._exited = asyncio.Event()
        self._known: dict[int, str] = {}  # pid -> start time: every process of the command seen so far
        self._loop.add_reader(self._fd, self._on_readable)
        self._pidfd: int | None = None
        self._poller: asyncio.Task[None] | None = None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):
            self._poller = self._loop.create_task(self._poll_exit())
        else:
            self._loop.add_reader(self._pidfd, self._on_exit)

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        sink: Callable[[bytes], None],
        pass_fds: Sequence[int] = (),
        forks: bool = False,
    ) -> ShellProcess:
        """Start ``argv`` in a new session (its own process group), stdin from ``/dev/null``.

        ``forks``: the leader is a launcher that forks the real command (bubblewrap): a kill waits
        (briefly) for that fork, so it is never orphaned half set up. Raises ``OSError`` when it
        cannot start (no such program, no such directory).
        """
        popen = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
        return cls(popen, sink, forks=forks)

    @property
    def pid(self) -> int:
        """The leader's pid, which is also the group's id."""
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The leader's exit status once it has exited (negative: killed by that signal)."""
        return self._popen.returncode

    @property
    def exited(self) -> bool:
        """Whether the leader has exited (and been reaped)."""
        return self._exited.is_set()

    @property
    def output_closed(self) -> bool:
        """Whether the output reached its end (every writer gone) or was closed."""
        return self._output_closed.is_set()

    async def wait_exit(self) -> int:
        """The leader's exit status, once it exits."""
        await self._exited.wait()
        code = self._popen.returncode
        assert code is not None
        return code

    async def wait_output(self, timeout_s: float | None = None) -> bool:
        """Wait for the end of output (``timeout_s``: at most that long); ``True`` if it came."""
        if timeout_s is None:
            await self._output_closed.wait()
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._output_closed.wait(), timeout_s)
        return self._output_closed.is_set()

    def alive(self) -> bool:
        """Whether any process of the command is left: its group, or a descendant seen so far.

        Why descendants too: a process may leave the group (``setsid``; bubblewrap's sandbox runs
        in a session of its own), and while it is still below the leader it is found here and
        killed with the rest. Members are read from ``/proc`` (zombies skipped: a container's init
        may never reap them), each remembered with its start time so a reused pid is never hit.
        """
        if not _PROC.is_dir():
            try:
                os.killpg(self._popen.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        table = _process_table()
        self._remember(table)
        return bool(self._living(table))

    def signal_all(self, number: int) -> None:
        """Send ``number`` to the group and to every remembered descendant still alive."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._popen.pid, number)
        if _PROC.is_dir():
            table = _process_table()
            self._remember(table)
            for pid in self._living(table):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, number)

    async def terminate(self, grace_s: float = KILL_GRACE_S) -> None:
        """SIGTERM the command's processes, SIGKILL what is left after ``grace_s``, return once none is.

        Safe to call more than once and after the leader exited (survivors are still killed).
        """
        for pause in self._stop_pauses(grace_s, kill_rounds=250):
            await asyncio.sleep(pause)

    def kill_now(self, grace_s: float = 0.2) -> None:
        """Synchronous :meth:`terminate` for a runtime's ``close()``: TERM, a short poll, KILL."""
        for pause in self._stop_pauses(grace_s, kill_rounds=100):
            time.sleep(pause)

    def _stop_pauses(self, grace_s: float, kill_rounds: int) -> Iterator[float]:
        """The TERM-then-KILL sequence, yielding each pause so the async and sync stops share it."""
        self._reap()
        deadline = time.monotonic() + _SETTLE_S
        while self._unsettled() and time.monotonic() < deadline:
            yield _POLL_S / 4
            self._reap()
        if not self.alive():
            return
        self.signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            yield _POLL_S
            self._reap()
            if not self.alive():
                return
        self.signal_all(signal.SIGKILL)
        # SIGKILL cannot be ignored; what remains is the kernel tearing processes down.
        for _ in range(kill_rounds):
            self._reap()
            if not self.alive():
                return
            self.signal_all(signal.SIGKILL)  # a fork that raced the first SIGKILL
            yield _POLL_S

    def _unsettled(self) -> bool:
        """Whether a forking leader is alive and has not forked yet.

        Why wait: bubblewrap's first child is the sandbox's init, and a leader killed just as it forks
        leaves that child orphaned before its parent-death signal holds (seen as a surviving
        sandbox in one close out of three right after a start). Once the child is known, it is
        killed by pid whatever happens to its parent.
        """
        if not self._forks or self._popen.returncode is not None or not _PROC.is_dir():
            return False
        leader = self._popen.pid
        return not any(entry.ppid == leader for entry in _process_table().values())

    def _remember(self, table: Mapping[int, _Entry]) -> None:
        """Add the group's members and the descendants of every known process to the known ones.

        Walking from every known process, not only the leader: a child orphaned by its parent's
        death is still known, and so are the processes it starts afterwards.
        """
        leader = self._popen.pid
        children: dict[int, list[int]] = {}
        for pid, entry in table.items():
            children.setdefault(entry.ppid, []).append(pid)
            if entry.pgid == leader:
                self._known.setdefault(pid, entry.start)
        stack = [child for pid in list(self._known) for child in children.get(pid, ())]
        while stack:
            pid = stack.pop()
            self._known.setdefault(pid, table[pid].start)
            stack.extend(children.get(pid, ()))

    def _living(self, table: Mapping[int, _Entry]) -> list[int]:
        return [
            pid
            for pid, start in self._known.items()
            if (entry := table.get(pid)) is not None and entry.start == start and entry.state not in "ZX"
        ]

    def close(self) -> None:
        """Stop watching: remove the readers and close the pipe and the pidfd (idempotent)."""
        if not self._output_closed.is_set():
            self._close_output()
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None

    # --- event loop callbacks --------------------------------------------------------------------

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self._fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self._sink(chunk)
        else:
            self._close_output()

    def _close_output(self) -> None:
        self._loop.remove_reader(self._fd)
        self._stdout.close()
        self._output_closed.set()
        self._sink(b"")

    def _on_exit(self) -> None:
        self._reap()
        if self._popen.returncode is not None and self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)

    def _reap(self) -> None:
        if self._popen.returncode is None:
            self._popen.poll()
        if self._popen.returncode is not None:
            self._exited.set()

    async def _poll_exit(self) -> None:
        while self._popen.poll() is None:
            await asyncio.sleep(0.05)
        self._exited.set()


@dataclass(frozen=True, slots=True)
class _Entry:
    ppid: int
    pgid: int
    state: str
    start: str


def _process_table() -> dict[int, _Entry]:
    """Every process in ``/proc``: its parent, group, state and start time (a pid's identity)."""
    table: dict[int, _Entry] = {}
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        try:
            with open(_PROC / name / "stat", encoding="utf-8", errors="replace") as stream:
                stat = stream.read()
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid pgrp session ... starttime (20th).
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 19:
            table[int(name)] = _Entry(int(fields[1]), int(fields[2]), fields[0], fields[19])
    return table
