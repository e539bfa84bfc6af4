"""The sandbox child's Landlock layer, ABI-adaptive: deny-by-default file access with read(+execute)
grants (:mod:`confine_grants`) and read-write grants for the work dir; TCP bind/connect handled with
no rule (ABI >= 4); abstract UNIX sockets and signals scoped (ABI >= 6).

Part of the child's confinement (:mod:`confine`); loaded by path under ``python -I -S`` before any
thread exists. Standard library only (``ctypes``, ``errno``, ``os``, ``struct``, ``sys``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

try:  # imported as part of the toolrt.sandbox._child package
    from toolrt.sandbox._child.confine_grants import default_read_paths
    from toolrt.sandbox._child.confine_policy import ConfinementError, ConfinementPolicy
    from toolrt.sandbox._child.confine_syscalls import own_nr, seccomp_arch, syscall
except ImportError:  # a top-level module: loaded by path in the child, or from a sys.path entry
    from confine_grants import default_read_paths  # type: ignore[no-redef,import-not-found]
    from confine_policy import (  # type: ignore[no-redef,import-not-found]
        ConfinementError,
        ConfinementPolicy,
    )
    from confine_syscalls import own_nr, seccomp_arch, syscall  # type: ignore[no-redef,import-not-found]

__all__ = ["apply_landlock", "landlock_abi", "landlock_handled", "landlock_rules"]

LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RESTRICT_SELF_TSYNC = 1 << 3  # ABI 8: the domain applies to every thread

LL_EXECUTE = 1 << 0
LL_WRITE_FILE = 1 << 1
LL_READ_FILE = 1 << 2
LL_READ_DIR = 1 << 3
LL_REMOVE_DIR = 1 << 4
LL_REMOVE_FILE = 1 << 5
LL_MAKE_CHAR = 1 << 6
LL_MAKE_DIR = 1 << 7
LL_MAKE_REG = 1 << 8
LL_MAKE_SOCK = 1 << 9
LL_MAKE_FIFO = 1 << 10
LL_MAKE_BLOCK = 1 << 11
LL_MAKE_SYM = 1 << 12
LL_REFER = 1 << 13  # ABI 2
LL_TRUNCATE = 1 << 14  # ABI 3
LL_IOCTL_DEV = 1 << 15  # ABI 5
LL_NET_BIND_TCP = 1 << 0  # ABI 4
LL_NET_CONNECT_TCP = 1 << 1  # ABI 4
LL_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
LL_SCOPE_SIGNAL = 1 << 1  # ABI 6

_LL_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
# Rights that make sense on a file (a rule on a file with any other right is EINVAL).
_LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV
_LL_READ = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
# The work dir: everything except executing, device nodes, sockets, FIFOs and symlinks (a symlink or
# FIFO left behind is a trap for a host that later reads the work dir).
_LL_READ_WRITE = (
    LL_READ_FILE
    | LL_READ_DIR
    | LL_WRITE_FILE
    | LL_REMOVE_DIR
    | LL_REMOVE_FILE
    | LL_MAKE_DIR
    | LL_MAKE_REG
    | LL_REFER
    | LL_TRUNCATE
)
# Files that also need writing although they sit in the read-only defaults.
_WRITABLE_DEVICES = ("/dev/null",)
# Landlock is Linux's, but this module is imported on every platform.
if sys.platform == "linux":
    _O_PATH = os.O_PATH
else:
    _O_PATH = 0


def landlock_abi() -> int | None:
    """The kernel's Landlock ABI version (``landlock_create_ruleset(NULL, 0, VERSION)``), or ``None``
    when Landlock is missing, disabled at boot, or the architecture is unsupported."""
    arch = seccomp_arch()
    if arch is None:
        return None
    try:
        version = syscall(own_nr("landlock_create_ruleset", arch), 0, 0, LANDLOCK_CREATE_RULESET_VERSION)
    except OSError:
        return None
    return version if version >= 1 else None


def _thread_count() -> int | None:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def landlock_handled(abi: int) -> tuple[int, int, int, int]:
    """(handled fs rights, handled net rights, scopes, ruleset attr size) for an ABI."""
    fs = _LL_FS_ABI1
    if abi >= 2:
        fs |= LL_REFER
    if abi >= 3:
        fs |= LL_TRUNCATE
    if abi >= 5:
        fs |= LL_IOCTL_DEV
    net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP if abi >= 4 else 0
    scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL if abi >= 6 else 0
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    return fs, net, scoped, size


def landlock_rules(policy: ConfinementPolicy) -> list[tuple[str, int]]:
    """The (path, requested rights) rules :func:`confine.confine` adds, before ABI and file-type masking."""
    rules: list[tuple[str, int]] = []
    seen: set[str] = set()
    for path in default_read_paths() + policy.read_paths:
        if path in seen:  # callers may pass the defaults again; one rule each is enough
            continue
        seen.add(path)
        rights = _LL_READ
        if path in _WRITABLE_DEVICES:
            rights |= LL_WRITE_FILE
        rules.append((path, rights))
    rules.extend((path, _LL_READ_WRITE) for path in policy.read_write_paths)
    return rules


def apply_landlock(
    rules: list[tuple[str, int]], arch: str, abi: int, notes: list[str], allow_network: bool = False
) -> None:
    """Build the ruleset ``abi`` handles from ``rules`` (a path that cannot be opened, or a rule the
    kernel refuses, becomes a note) and restrict this process with it: every thread from ABI 8,
    else the calling thread only, which is why other threads make it refuse. ``allow_network``
    leaves TCP unhandled (a confined command that was granted the network). Raises
    ``ConfinementError`` or ``OSError``."""
    fs, net, scoped, size = landlock_handled(abi)
    if allow_network:
        net = 0
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", fs, net, scoped)[:size], size)
    ruleset = syscall(own_nr("landlock_create_ruleset", arch), ctypes.addressof(attr), size, 0)
    added = 0
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, _O_PATH | os.O_CLOEXEC)
            except OSError as error:
                notes.append(f"landlock: skipped {path}: {error.strerror}")
                continue
            try:
                is_dir = (os.fstat(fd).st_mode & 0o170000) == 0o040000
                allowed = rights & fs & (~0 if is_dir else _LL_FILE_RIGHTS)
                rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd), 12)
                add_rule = own_nr("landlock_add_rule", arch)
                syscall(add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.addressof(rule), 0)
                added += 1
            except OSError as error:
                notes.append(f"landlock: rule for {path} failed: {error.strerror}")
            finally:
                os.close(fd)
        threads = _thread_count()
        if abi < 8 and threads is not None and threads > 1:
            raise ConfinementError(
                f"{threads} threads exist; Landlock ABI {abi} would confine only the calling thread"
            )
        if threads is None:
            notes.append("landlock: no /proc to count threads; confine() must run before any thread")
        restrict = own_nr("landlock_restrict_self", arch)
        if abi >= 8:
            try:
                syscall(restrict, ruleset, LANDLOCK_RESTRICT_SELF_TSYNC)
            except OSError as error:
                if error.errno != errno.EINVAL or (threads is not None and threads > 1):
                    raise
                syscall(restrict, ruleset, 0)
                notes.append("landlock: TSYNC refused (EINVAL); applied to the calling thread only")
        else:
            syscall(restrict, ruleset, 0)
    finally:
        os.close(ruleset)
    notes.append(f"landlock: ABI {abi}, fs=0x{fs:x} net=0x{net:x} scoped=0x{scoped:x}, {added} rules")
