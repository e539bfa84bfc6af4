"""The sandbox child's raw kernel calls: ``syscall(2)`` and ``prctl(2)`` through ``ctypes``, and
which system-call ABI this process speaks.

Part of the child's confinement (:mod:`confine`); loaded by path under ``python -I -S`` before any
thread exists. Standard library only (``ctypes``, ``errno``, ``os``, ``struct``, ``sys``); system-call numbers
come from :mod:`seccomp_tables`, because the calls made here have no glibc wrapper on every libc.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

try:  # imported as part of the toolrt.sandbox._child package
    from toolrt.sandbox._child import seccomp_tables as _tables
except ImportError:  # a top-level module: loaded by path in the child, or from a sys.path entry
    import seccomp_tables as _tables  # type: ignore[no-redef,import-not-found]

__all__ = [
    "PR_GET_NO_NEW_PRIVS",
    "PR_SET_DUMPABLE",
    "PR_SET_MM",
    "PR_SET_NO_NEW_PRIVS",
    "PR_SET_PDEATHSIG",
    "PR_SET_PTRACER",
    "own_nr",
    "prctl",
    "seccomp_arch",
    "syscall",
]

# prctl(2) options: the no_new_privs layer sets some, the seccomp filter denies some to the program.
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_MM = 35
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_SET_PTRACER = 0x59616D61


_libc: ctypes.CDLL | None = None


def _get_libc() -> ctypes.CDLL:
    """libc, looked up on first use (never at import: the child imports this module on every
    platform). ``prctl`` is Linux's: elsewhere it is not configured, and :func:`prctl` says so."""
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        if sys.platform == "linux":
            lib.prctl.restype = ctypes.c_int
            ulong = ctypes.c_ulong
            lib.prctl.argtypes = [ctypes.c_int, ulong, ulong, ulong, ulong]
        _libc = lib
    return _libc


def syscall(nr: int, *args: int) -> int:
    """``syscall(nr, ...)`` with every argument passed as a ``long`` (pointers as addresses, via
    ``ctypes.addressof``; LP64 only). Raises ``OSError``."""
    ctypes.set_errno(0)
    result = int(_get_libc().syscall(ctypes.c_long(nr), *(ctypes.c_long(arg) for arg in args)))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"syscall {nr}: {os.strerror(code)}")
    return result


def prctl(option: int, arg2: int = 0) -> int:
    """``prctl(option, arg2, 0, 0, 0)``. Raises ``OSError`` (``ENOSYS`` off Linux, where there is
    no ``prctl``)."""
    function = getattr(_get_libc(), "prctl", None) if sys.platform == "linux" else None
    if function is None:
        raise OSError(errno.ENOSYS, f"prctl({option}): not available on {sys.platform}")
    result = int(function(option, arg2, 0, 0, 0))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl({option}): {os.strerror(code)}")
    return result


def seccomp_arch() -> str | None:
    """``"x86_64"`` / ``"aarch64"`` when this process issues that ABI's syscalls, else ``None``.

    A 32-bit or x32 interpreter on a 64-bit kernel, big-endian arm64 and other architectures are
    unsupported (the filter would kill every call, or the table has no numbers for them).
    """
    linux = sys.platform == "linux"  # (a plain bool: mypy checks the rest on every platform)
    if not linux or struct.calcsize("P") != 8 or sys.byteorder != "little":
        return None
    machine = os.uname().machine
    if machine in ("x86_64", "amd64"):
        return "x86_64"
    if machine in ("aarch64", "arm64"):
        return "aarch64"
    return None


def own_nr(name: str, arch: str) -> int:
    """The number on ``arch`` of a call the confinement makes itself (``seccomp_tables.OWN_SYSCALLS``)."""
    x86_64, aarch64 = _tables.OWN_SYSCALLS[name]
    return x86_64 if arch == "x86_64" else aarch64
