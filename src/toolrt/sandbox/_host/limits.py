"""Run limits: defaults, merging and validation, what a child boots with, what a run used, and what
a killed child's exit status means.

Limits (runtime defaults, overridden per run by ``request.limits``): wall → ``timeout``; CPU →
``cpu-limit`` (RLIMIT_CPU; whole seconds, so the budget is rounded up and includes the child's boot
CPU); memory → ``memory-limit`` (RLIMIT_AS: a ``MemoryError`` or the kernel killing the child);
output → ``output-limit``; completion value → ``value-limit``; ``disk_bytes`` (runtime-wide) →
``disk-limit``. The seccomp filter forbids changing rlimits after confinement, so a warm child can
serve only runs whose CPU and memory limits equal the runtime's defaults; other runs boot a cold
child with their own limits.

Usage is measured host-side from ``/proc`` (the child's process tree's CPU time) and by walking the
work dir (its allocated bytes and entry count).
"""

from __future__ import annotations

import errno
import math
import os
import signal as signal_module
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from toolrt.codemode._code_runtime import CodeRunError, CodeRunLimits

__all__ = [
    "DEFAULT_LIMITS",
    "DISK_MAX_ENTRIES",
    "MAX_DEPTH",
    "BootSpec",
    "Limits",
    "Usage",
    "child_pids",
    "classify_exit",
    "dir_usage",
    "disk_bytes_exceeded",
    "exit_message",
    "fill_limits",
    "merge_limits",
    "tree_cpu",
]

DEFAULT_LIMITS: Final = CodeRunLimits(
    wall_seconds=30, cpu_seconds=10, memory_bytes=512 << 20, output_bytes=64 << 20, value_bytes=16 << 20
)
_CPU_BOOT_ALLOWANCE = 0.25
"""Seconds of CPU added before rounding up RLIMIT_CPU, for the child's own boot."""
DISK_MAX_ENTRIES = 10_000
"""The most files and directories a run's work dir may hold."""


# --- merging and validation ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Limits:
    """One run's limits, every field filled in: seconds of wall clock and CPU, bytes of memory,
    output and completion value."""

    wall: float
    cpu: float
    memory: int
    output: int
    value: int

    @property
    def rlimit_cpu(self) -> int:
        """The RLIMIT_CPU a child gets for this budget (whole seconds, with its boot's allowance)."""
        return max(1, math.ceil(self.cpu + _CPU_BOOT_ALLOWANCE))


def merge_limits(base: CodeRunLimits, override: CodeRunLimits | None) -> Limits:
    """``base`` overridden field by field by ``override``, validated (raises ``ValueError``)."""

    def pick(name: str) -> Any:
        value = getattr(override, name, None) if override is not None else None
        return value if value is not None else getattr(base, name)

    limits = Limits(
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


def fill_limits(limits: CodeRunLimits) -> CodeRunLimits:
    """``limits`` with every unset field taken from :data:`DEFAULT_LIMITS`."""
    return CodeRunLimits(
        wall_seconds=limits.wall_seconds if limits.wall_seconds is not None else DEFAULT_LIMITS.wall_seconds,
        cpu_seconds=limits.cpu_seconds if limits.cpu_seconds is not None else DEFAULT_LIMITS.cpu_seconds,
        memory_bytes=limits.memory_bytes if limits.memory_bytes is not None else DEFAULT_LIMITS.memory_bytes,
        output_bytes=limits.output_bytes if limits.output_bytes is not None else DEFAULT_LIMITS.output_bytes,
        value_bytes=limits.value_bytes if limits.value_bytes is not None else DEFAULT_LIMITS.value_bytes,
    )


@dataclass(frozen=True, slots=True)
class BootSpec:
    """What a child is booted with (fixed for its life: seccomp forbids changing rlimits later)."""

    cpu_seconds: int
    memory_bytes: int
    preimport: tuple[str, ...] = ()


# --- what a child's exit means ---------------------------------------------------------------------------


def _signal_number(status: int | None) -> int | None:
    """The signal that ended a child with wait status ``status``; exit code 128 + n counts as signal
    n, because that is how bwrap's init and the bootstrap's PID-1 reaper relay a signal death."""
    if status is None:
        return None
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0
    if 128 < code < 128 + 65:
        return code - 128
    return None


def _signal_name(signum: int) -> str:
    try:
        return signal_module.Signals(signum).name
    except ValueError:
        return str(signum)


def exit_message(status: int | None, when: str = "before completing") -> str:
    """How a child that ended with wait status ``status`` ended, for an error message."""
    signum = _signal_number(status)
    if signum is not None:
        return f"worker killed by signal {_signal_name(signum)} {when}"
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else -1
    return f"worker exited with code {code} {when}"


def classify_exit(
    status: int | None,
    *,
    limits: Limits,
    boot: BootSpec,
    program_cpu: float,
    child_cpu: float,
    lifetime: float,
    stderr: bytes,
    disk_bytes: int,
) -> CodeRunError:
    """Why a child that exited before completing did so.

    ``program_cpu`` is the CPU the program used (the watchdog's last sample or wait4's rusage minus
    the boot CPU), ``child_cpu`` the child's total from wait4, ``lifetime`` its age in seconds.
    RLIMIT_CPU's hard limit (soft + 1) ends in SIGKILL, as does the kernel's OOM killer: the CPU
    figures tell them apart; when both are blind (bwrap without a readable /proc), a child that lived
    past its CPU allowance is taken as CPU-bound.
    """
    signum = _signal_number(status)
    hard = boot.cpu_seconds + 1
    cpu_exhausted = (
        program_cpu >= limits.cpu - 0.25
        or child_cpu >= hard - 0.1
        or (program_cpu == 0 and child_cpu < 0.1 and lifetime >= hard)
    )
    if signum == signal_module.SIGXCPU or (signum == signal_module.SIGKILL and cpu_exhausted):
        return CodeRunError("cpu-limit", f"CPU budget exhausted ({limits.cpu:g}s)")
    if signum == signal_module.SIGKILL:
        return CodeRunError(
            "memory-limit",
            f"worker was killed by the kernel (SIGKILL), most likely out of memory "
            f"(limit {limits.memory} bytes)",
        )
    if signum == signal_module.SIGXFSZ:
        return CodeRunError("disk-limit", disk_bytes_exceeded(disk_bytes))
    if signum is None and b"MemoryError" in stderr:
        return CodeRunError("memory-limit", f"memory limit reached ({limits.memory} bytes)")
    if b"Fatal JavaScript out of memory" in stderr or b"Fatal process out of memory" in stderr:
        # V8 ends the process (SIGTRAP) when its heap or an isolate's reservation cannot grow.
        return CodeRunError("memory-limit", f"memory limit reached ({limits.memory} bytes)")
    return CodeRunError("worker-exit", exit_message(status))


# --- what a run used -------------------------------------------------------------------------------------


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


def child_pids(pid: int) -> list[int]:
    """The pids of ``pid``'s children, from ``/proc`` (none when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return [int(part) for part in handle.read().split()]
    except (OSError, ValueError):
        return []


def tree_cpu(root: int) -> float | None:
    """CPU seconds of ``root`` and its live descendants (reaped ones count through their parent)."""
    total = _proc_cpu(root)
    if total is None:
        return None
    pending = child_pids(root)
    seen = 1
    while pending and seen < _MAX_TREE:
        pid = pending.pop()
        seen += 1
        cpu = _proc_cpu(pid)
        if cpu is not None:
            total += cpu
            pending.extend(child_pids(pid))
    return total


MAX_DEPTH = 128
"""How deep the disk poll follows the work dir; a deeper tree counts as over the quota (the walk
holds one directory fd per level, so it must stop somewhere, and must not stop by under-counting)."""

_WALK_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Usage(NamedTuple):
    """What the disk poll found: bytes allocated, entries counted (at most the cap + 1), whether
    the tree was nested deeper than :data:`MAX_DEPTH`, and the first directory (relative to the
    work dir) the host could not look into.

    An unreadable directory is a violation, never a skip: the program owns its tree and can
    ``fchmod`` a directory to 000, and a walk that skipped it would count nothing of what it holds
    (a review wrote 112 MiB past a 64 MiB quota that way)."""

    bytes: int
    entries: int
    too_deep: bool = False
    unreadable: str | None = None

    def excess(self, quota: int) -> str | None:
        """Why this usage breaks the disk quota (``disk_bytes`` = ``quota``), or ``None``."""
        if self.unreadable is not None:
            return f"disk quota cannot be checked: the program made {self.unreadable!r} unreadable"
        if self.bytes > quota:
            return disk_bytes_exceeded(quota)
        if self.entries > DISK_MAX_ENTRIES:
            return f"disk quota exceeded ({DISK_MAX_ENTRIES} files and directories)"
        if self.too_deep:
            return f"disk quota exceeded (directories nested over {MAX_DEPTH} deep)"
        return None


def disk_bytes_exceeded(quota: int) -> str:
    """The message of a run that went over the work dir's byte quota."""
    return f"disk quota exceeded ({quota} bytes)"


def _denied(error: OSError) -> bool:
    """Whether ``error`` is a permission refusal (the program's doing) rather than a race with it
    (an entry gone, or swapped for a symlink or a file)."""
    return error.errno in (errno.EACCES, errno.EPERM)


def dir_usage(path: str, max_entries: int) -> Usage:
    """Bytes allocated and entries under ``path``, counting at most ``max_entries + 1`` entries.

    The walk goes one component at a time from directory fds opened with ``O_NOFOLLOW``: the program
    owns everything below ``path`` and may swap a directory for a symlink while the host walks. A
    walk by path names would then follow it, and an absolute symlink resolves against the host's
    root even below ``/proc/<pid>/root``; this one only ever reads the program's own tree.

    A directory the host may not open or search (mode 000, or readable without ``x``) ends the walk
    with :attr:`Usage.unreadable` set. So does ``path`` itself when the host can stat it but not
    open it; when even the stat fails (the run is ending, ``/proc/<pid>/root`` is gone), the poll
    sees nothing, as before.
    """
    try:
        root = os.open(path, _WALK_FLAGS)
    except OSError as error:
        return Usage(0, 0, unreadable="." if _denied(error) and _visible(path) else None)
    stack: list[tuple[int, Iterator[os.DirEntry[str]]]] = []
    names: list[str] = []
    total = 0
    entries = 0
    try:
        stack.append((root, os.scandir(root)))
    except OSError as error:
        os.close(root)
        return Usage(0, 0, unreadable="." if _denied(error) else None)
    try:
        while stack:
            directory, iterator = stack[-1]
            try:
                entry = next(iterator, None)
            except OSError:
                entry = None
            if entry is None:
                stack.pop()
                if names:
                    names.pop()
                iterator.close()  # type: ignore[attr-defined]  # a ScandirIterator
                os.close(directory)
                continue
            entries += 1
            if entries > max_entries:
                break
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as error:
                if _denied(error):  # a directory listed but not searchable: nothing in it is counted
                    return Usage(total, entries, unreadable="/".join(names) or ".")
                continue
            total += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size
            if not stat.S_ISDIR(info.st_mode):
                continue
            if len(stack) >= MAX_DEPTH:
                return Usage(total, entries, too_deep=True)
            try:
                child = os.open(entry.name, _WALK_FLAGS, dir_fd=directory)
            except OSError as error:
                if _denied(error):
                    return Usage(total, entries, unreadable="/".join([*names, entry.name]))
                continue  # gone, or swapped for something that is not a directory
            try:
                stack.append((child, os.scandir(child)))
            except OSError as error:
                os.close(child)
                if _denied(error):
                    return Usage(total, entries, unreadable="/".join([*names, entry.name]))
            else:
                names.append(entry.name)
    finally:
        for directory, iterator in stack:
            iterator.close()  # type: ignore[attr-defined]
            os.close(directory)
    return Usage(total, entries)


def _visible(path: str) -> bool:
    try:
        os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return True
