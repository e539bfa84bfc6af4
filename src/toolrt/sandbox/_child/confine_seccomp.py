"""The sandbox child's seccomp layer: a hand-assembled classic BPF deny-list built from
:mod:`seccomp_tables`, architecture-checked, installed with ``SECCOMP_FILTER_FLAG_TSYNC``.

Part of the child's confinement (:mod:`confine`); loaded by path under ``python -I -S`` before any
thread exists. Standard library only (``ctypes``, ``errno``, ``struct``).
"""

from __future__ import annotations

import ctypes
import errno
import struct

try:  # imported as part of the toolrt.sandbox._child package
    from toolrt.sandbox._child import seccomp_tables as _tables
    from toolrt.sandbox._child.confine_syscalls import (
        PR_SET_DUMPABLE,
        PR_SET_MM,
        PR_SET_PTRACER,
        own_nr,
        syscall,
    )
except ImportError:  # a top-level module: loaded by path in the child, or from a sys.path entry
    import seccomp_tables as _tables  # type: ignore[no-redef,import-not-found]
    from confine_syscalls import (  # type: ignore[no-redef,import-not-found]
        PR_SET_DUMPABLE,
        PR_SET_MM,
        PR_SET_PTRACER,
        own_nr,
        syscall,
    )

__all__ = [
    "SECCOMP_RET_ALLOW",
    "SECCOMP_RET_ERRNO",
    "SECCOMP_RET_KILL_PROCESS",
    "SockFprog",
    "build_seccomp_filter",
    "install_seccomp",
]

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000

# classic BPF opcodes
_BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_BPF_ALU_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
_BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_BPF_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_BPF_RET_K = 0x06  # BPF_RET | BPF_K

# struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
_OFF_NR = 0
_OFF_ARCH = 4


def _arg_lo(index: int) -> int:
    return 16 + 8 * index  # little-endian: low word first (only LE arches are supported)


def _arg_hi(index: int) -> int:
    return 16 + 8 * index + 4


AF_UNIX = 1
SOCK_STREAM = 1
SOCK_TYPE_MASK = 0xF
CLONE_THREAD = 0x00010000
# CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
# (CLONE_NEWTIME is 0x80, inside the exit-signal byte that clone() ignores; only clone3 and unshare
# take it, and both are denied.)
CLONE_NEW_MASK = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000


# Assembler items, all 4-tuples: (op, k, true label, false label); a label is ("label", 0, name, None).
# A jump label of None means "the next instruction".
_Item = tuple[str, int, str | None, str | None]
_JUMPS = {"jeq": _BPF_JEQ_K, "jset": _BPF_JSET_K, "jge": _BPF_JGE_K}
_STMTS = {"ld": _BPF_LD_W_ABS, "and": _BPF_ALU_AND_K, "ret": _BPF_RET_K}


def _ld(offset: int) -> _Item:
    return ("ld", offset, None, None)


def _ret(value: int) -> _Item:
    return ("ret", value, None, None)


def _jump(op: str, k: int, true: str | None = None, false: str | None = None) -> _Item:
    return (op, k, true, false)


def _label(name: str) -> _Item:
    return ("label", 0, name, None)


def _assemble(items: list[_Item]) -> list[tuple[int, int, int, int]]:
    """Resolve labels into classic-BPF ``(code, jt, jf, k)``; jumps are forward and fit in 8 bits."""
    positions: dict[str, int] = {}
    pc = 0
    for op, _k, name, _ in items:
        if op == "label":
            assert name is not None and name not in positions, f"bad label {name!r}"
            positions[name] = pc
        else:
            pc += 1
    out: list[tuple[int, int, int, int]] = []
    for op, k, true, false in items:
        if op == "label":
            continue
        if op in _STMTS:
            out.append((_STMTS[op], 0, 0, k & 0xFFFFFFFF))
            continue
        here = len(out)
        offsets: list[int] = []
        for target in (true, false):
            offset = 0 if target is None else positions[target] - here - 1
            if not 0 <= offset <= 255:
                raise ValueError(f"BPF jump to {target!r} out of range ({offset})")
            offsets.append(offset)
        out.append((_JUMPS[op], offsets[0], offsets[1], k & 0xFFFFFFFF))
    return out


def _errno_ret(code: int) -> int:
    return SECCOMP_RET_ERRNO | (code & 0xFFFF)


def _conditional_block(rule: str, pid: int, deny: str) -> list[_Item]:
    """The argument check for one ``cond:`` rule. Entered once the syscall number matched; every
    path returns. ``deny`` is a label name unique to this block."""
    allow = _ret(SECCOMP_RET_ALLOW)
    eperm = _ret(_errno_ret(errno.EPERM))
    if rule == "cond:socketpair":
        return [
            _ld(_arg_lo(0)),
            _jump("jeq", AF_UNIX, None, deny),
            _ld(_arg_lo(1)),
            ("and", SOCK_TYPE_MASK, None, None),  # strip SOCK_NONBLOCK / SOCK_CLOEXEC
            _jump("jeq", SOCK_STREAM, None, deny),
            allow,
            _label(deny),
            _ret(_errno_ret(errno.EACCES)),
        ]
    if rule == "cond:clone":
        return [
            _ld(_arg_lo(0)),  # flags are arg0 on x86_64 and aarch64; clone() ignores the high word
            _jump("jset", CLONE_NEW_MASK, deny, None),
            _jump("jset", CLONE_THREAD, None, deny),
            allow,
            _label(deny),
            eperm,
        ]
    if rule == "cond:clone-process":
        return [
            _ld(_arg_lo(0)),  # threads and processes, but never a new namespace
            _jump("jset", CLONE_NEW_MASK, deny, None),
            allow,
            _label(deny),
            eperm,
        ]
    if rule == "cond:self-signal":
        return [
            _ld(_arg_lo(0)),  # pid_t is an int: the kernel ignores the high word
            _jump("jeq", pid, None, deny),
            allow,
            _label(deny),
            eperm,
        ]
    if rule == "cond:prlimit64":
        return [
            _ld(_arg_lo(2)),  # new_limit is a pointer: both words must be zero
            _jump("jeq", 0, None, deny),
            _ld(_arg_hi(2)),
            _jump("jeq", 0, None, deny),
            allow,
            _label(deny),
            eperm,
        ]
    if rule == "cond:utimensat":
        return [
            _ld(_arg_lo(1)),  # the path is a pointer: NULL (futimens) in both words, or denied
            _jump("jeq", 0, None, deny),
            _ld(_arg_hi(1)),
            _jump("jeq", 0, None, deny),
            allow,
            _label(deny),
            eperm,
        ]
    if rule == "cond:prctl":
        return [
            _ld(_arg_lo(0)),  # the option is an int
            _jump("jeq", PR_SET_DUMPABLE, deny, None),
            _jump("jeq", PR_SET_PTRACER, deny, None),
            _jump("jeq", PR_SET_MM, deny, None),
            allow,
            _label(deny),
            eperm,
        ]
    if rule in ("cond:fcntl", "cond:ioctl"):
        # The command is an unsigned int (the kernel ignores the high word); a high word that is not
        # zero is refused anyway, so a later kernel that reads all 64 bits cannot widen the list.
        allowed, locks, refused = (
            (_tables.FCNTL_ALLOWED, _tables.FCNTL_LOCKS, errno.EPERM)
            if rule == "cond:fcntl"
            else (_tables.IOCTL_ALLOWED, {}, errno.ENOTTY)
        )
        items: list[_Item] = [_ld(_arg_hi(1)), _jump("jeq", 0, None, deny), _ld(_arg_lo(1))]
        items += [_jump("jeq", cmd, f"{deny}_allow", None) for cmd in allowed.values()]
        items += [_jump("jeq", cmd, f"{deny}_nolock", None) for cmd in locks.values()]
        items += [_label(deny), _ret(_errno_ret(refused)), _label(f"{deny}_allow"), allow]
        if locks:
            items += [_label(f"{deny}_nolock"), _ret(_errno_ret(errno.ENOLCK))]
        return items
    # The wording predates this module (the blocks used to live in confine.py); kept as it was.
    raise ValueError(f"seccomp table names {rule!r} but confine.py has no block for it")


_SIMPLE_ACTIONS = {
    "eperm": _errno_ret(errno.EPERM),
    "eacces": _errno_ret(errno.EACCES),
    "enosys": _errno_ret(errno.ENOSYS),
    "enolck": _errno_ret(errno.ENOLCK),
}


def build_seccomp_filter(arch: str, pid: int, overrides: dict[str, str] | None = None) -> bytes:
    """The ``struct sock_filter[]`` program for ``arch`` (``"x86_64"``/``"aarch64"``), with the
    self-signal rules bound to ``pid``. ``overrides`` replaces the action of the rows it names
    (``"allow"`` drops the row): the confined-command launcher's profile. Raises
    ``ValueError``/``KeyError`` on a bad table."""
    items: list[_Item] = [
        _ld(_OFF_ARCH),
        _jump("jeq", _tables.ARCHES[arch], "arch_ok", None),
        _ret(SECCOMP_RET_KILL_PROCESS),  # i386 int 0x80 on x86_64, arm32 compat on aarch64
        _label("arch_ok"),
        _ld(_OFF_NR),
    ]
    if arch == "x86_64":
        items += [
            _jump("jge", _tables.X32_SYSCALL_BIT, None, "native"),
            _ret(SECCOMP_RET_KILL_PROCESS),  # x32 ABI (and any number >= 0x40000000)
            _label("native"),
        ]
    for index, (name, x86_64, aarch64, listed, _why) in enumerate(_tables.TABLE):
        nr = x86_64 if arch == "x86_64" else aarch64
        if nr is None:
            continue
        skip = f"skip{index}"
        action = (overrides or {}).get(name, listed)
        if action == "allow":
            continue
        if action in _SIMPLE_ACTIONS:
            items += [_jump("jeq", nr, None, skip), _ret(_SIMPLE_ACTIONS[action]), _label(skip)]
        elif action in _tables.CONDITIONAL_RULES:
            items += [
                _jump("jeq", nr, None, skip),
                *_conditional_block(action, pid, f"deny{index}"),
                _label(skip),
            ]
        else:
            raise ValueError(f"unknown seccomp action {action!r} for {name}")
    items.append(_ret(SECCOMP_RET_ALLOW))
    return b"".join(struct.pack("=HBBI", *insn) for insn in _assemble(items))


class SockFprog(ctypes.Structure):
    """The kernel's ``struct sock_fprog``: the program's length in instructions and its address."""

    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install_seccomp(program: bytes, arch: str) -> None:
    """Load ``program`` with ``seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC)``.
    Needs no_new_privs (or CAP_SYS_ADMIN). Raises ``OSError``."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    flags = SECCOMP_FILTER_FLAG_TSYNC
    result = syscall(own_nr("seccomp", arch), SECCOMP_SET_MODE_FILTER, flags, ctypes.addressof(fprog))
    if result != 0:  # with TSYNC: the id of a thread that could not be synchronized
        raise OSError(errno.EBUSY, f"seccomp TSYNC failed for thread {result}")
