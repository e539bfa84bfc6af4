"""Kernel confinement the sandbox child applies to itself before it runs a program.

The child bootstrap runs under ``python -I -S`` and imports this module (by path or as part of the
package) before any thread exists, then calls :func:`confine` once. Layers, in this order
(sandbox.md §5.1):

1. **rlimits**: CPU (soft; hard = soft + 1), address space, open files, file size, no core dumps,
   and processes when the child will not be root.
2. **uid drop**: real root in the initial user namespace switches to ``drop_to`` (``setgroups([])``,
   then ``setresgid``, then ``setresuid``), so no capability survives. Root mapped inside a user
   namespace needs no drop.
3. **no_new_privs**, ``PR_SET_DUMPABLE 0`` and ``PR_SET_PDEATHSIG SIGKILL`` (after the drop, because a
   credential change resets both dumpable and the death signal).
4. **Landlock**, ABI-adaptive: deny-by-default file access with read(+execute) grants for the
   interpreter and system libraries and read-write grants for the work dir; TCP bind/connect handled
   with no rule (ABI ≥ 4); abstract UNIX sockets and signals scoped (ABI ≥ 6).
5. **seccomp**: a hand-assembled classic BPF deny-list (:mod:`seccomp_tables`), architecture-checked,
   installed with ``SECCOMP_FILTER_FLAG_TSYNC``.

Lean by contract: standard library only (``ctypes``, ``os``, ``struct``, ``resource``, ``errno``,
``sys``, ``time``), no ``toolrt`` import, no ``dataclasses``/``json``/``re``. All kernel calls go
through ``ctypes`` (``syscall(2)`` with numbers from :mod:`seccomp_tables`, ``prctl(2)``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import struct
import sys
import time

try:  # imported as toolrt.runtimes.python_sandbox.confine
    from . import seccomp_tables as _tables
except ImportError:  # imported by path as a top-level module in the child bootstrap
    _here = os.path.dirname(os.path.abspath(__file__))
    if _here not in sys.path:
        sys.path.insert(0, _here)
    import seccomp_tables as _tables  # type: ignore[no-redef,import-not-found]

__all__ = [
    "ConfinementError",
    "ConfinementPolicy",
    "build_seccomp_filter",
    "confine",
    "default_read_paths",
    "inaccessible_path",
    "install_seccomp",
    "landlock_abi",
    "landlock_rules",
    "seccomp_arch",
]

# ---- constants ------------------------------------------------------------------------------------

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_MM = 35
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_SET_PTRACER = 0x59616D61

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

_FULL_LANDLOCK_ABI = 3  # "full" enforcement needs TRUNCATE handled
_MAX_NOTES = 60


# ---- the policy -----------------------------------------------------------------------------------


class ConfinementError(Exception):
    """A layer that was required could not be applied (the host decides whether to refuse the run).

    ``report`` is the enforcement report as far as confinement got (layers actually applied).
    """

    def __init__(self, message: str, report: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.report = report


_FIELDS = (
    "cpu_seconds",
    "memory_bytes",
    "max_open_files",
    "max_file_bytes",
    "max_processes",
    "read_paths",
    "read_write_paths",
    "drop_to",
    "landlock",
    "seccomp",
)


def _check_int(name: str, value: object, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return value


def _check_paths(name: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"{name} must be a tuple of absolute paths, not {type(value).__name__}")
    for item in value:
        if type(item) is not str or not item.startswith("/") or "\0" in item:
            raise ValueError(f"{name} entries must be absolute paths, not {item!r}")
    return tuple(value)


class ConfinementPolicy:
    """What :func:`confine` applies. A frozen value object with dataclass semantics (keyword or
    positional construction, ``==``, ``hash``, ``repr``, immutability), written by hand because
    importing :mod:`dataclasses` costs the child ~25 ms (it pulls in ``inspect`` and ``re``).

    ``as_dict`` / ``from_dict`` round-trip it through JSON (for the host's boot frame).
    """

    __slots__ = _FIELDS

    cpu_seconds: int
    """RLIMIT_CPU soft limit; the hard limit is one second more (SIGXCPU, then SIGKILL)."""
    memory_bytes: int
    """RLIMIT_AS."""
    max_open_files: int
    """RLIMIT_NOFILE."""
    max_file_bytes: int
    """RLIMIT_FSIZE (one file; the host still needs a disk quota for many files)."""
    max_processes: int | None
    """RLIMIT_NPROC, applied only when the child will not be root. The kernel counts every task
    (threads included) of the real uid, system-wide; ``None`` leaves it unset."""
    read_paths: tuple[str, ...]
    """Extra Landlock read(+execute) grants on top of :func:`default_read_paths`."""
    read_write_paths: tuple[str, ...]
    """Landlock read-write grants (the private work dir)."""
    drop_to: tuple[int, int] | None
    """(uid, gid) to switch to when real root in the initial user namespace; ``None`` keeps root."""
    landlock: bool
    seccomp: bool

    def __init__(  # noqa: PLR0917 (positional construction, as with the dataclass it mirrors)
        self,
        cpu_seconds: int,
        memory_bytes: int,
        max_open_files: int = 64,
        max_file_bytes: int = 64 << 20,
        max_processes: int | None = 64,
        read_paths: tuple[str, ...] = (),
        read_write_paths: tuple[str, ...] = (),
        drop_to: tuple[int, int] | None = (65534, 65534),
        landlock: bool = True,
        seccomp: bool = True,
    ) -> None:
        values: dict[str, object] = {
            "cpu_seconds": _check_int("cpu_seconds", cpu_seconds, 1),
            "memory_bytes": _check_int("memory_bytes", memory_bytes, 1),
            "max_open_files": _check_int("max_open_files", max_open_files, 4),
            "max_file_bytes": _check_int("max_file_bytes", max_file_bytes, 0),
            "max_processes": None if max_processes is None else _check_int("max_processes", max_processes, 1),
            "read_paths": _check_paths("read_paths", read_paths),
            "read_write_paths": _check_paths("read_write_paths", read_write_paths),
            "landlock": landlock,
            "seccomp": seccomp,
        }
        if drop_to is not None:
            if not isinstance(drop_to, (tuple, list)) or len(drop_to) != 2:
                raise ValueError(f"drop_to must be (uid, gid) or None, not {drop_to!r}")
            drop_to = (_check_int("drop_to uid", drop_to[0], 1), _check_int("drop_to gid", drop_to[1], 1))
        values["drop_to"] = drop_to
        if type(landlock) is not bool or type(seccomp) is not bool:
            raise ValueError("landlock and seccomp must be booleans")
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: ConfinementPolicy is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: ConfinementPolicy is frozen")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ConfinementPolicy)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"ConfinementPolicy({inner})"

    def __reduce__(self) -> tuple[object, ...]:
        return (ConfinementPolicy, self._values())

    def replace(self, **changes: object) -> ConfinementPolicy:
        """A copy with some fields changed (like ``dataclasses.replace``)."""
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise TypeError(f"unknown ConfinementPolicy field(s): {sorted(unknown)}")
        merged = {name: changes.get(name, getattr(self, name)) for name in _FIELDS}
        return ConfinementPolicy(**merged)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields (tuples become lists)."""
        out: dict[str, object] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: object) -> ConfinementPolicy:
        """Rebuild from :meth:`as_dict` output; unknown or mistyped fields raise ``ValueError``."""
        if type(data) is not dict:
            raise ValueError("policy must be a JSON object")
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise ValueError(f"unknown policy field(s): {sorted(unknown)}")
        if "cpu_seconds" not in data or "memory_bytes" not in data:
            raise ValueError("policy needs cpu_seconds and memory_bytes")
        return cls(**data)


# ---- ctypes plumbing ------------------------------------------------------------------------------

_libc: ctypes.CDLL | None = None


def _get_libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        lib.prctl.restype = ctypes.c_int
        lib.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        _libc = lib
    return _libc


def _syscall(nr: int, *args: int) -> int:
    """``syscall(nr, ...)`` with every argument passed as a ``long`` (pointers as addresses, via
    ``ctypes.addressof``; LP64 only). Raises ``OSError``."""
    ctypes.set_errno(0)
    result = int(_get_libc().syscall(ctypes.c_long(nr), *(ctypes.c_long(arg) for arg in args)))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"syscall {nr}: {os.strerror(code)}")
    return result


def _prctl(option: int, arg2: int = 0) -> int:
    result = int(_get_libc().prctl(option, arg2, 0, 0, 0))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl({option}): {os.strerror(code)}")
    return result


def seccomp_arch() -> str | None:
    """``"x86_64"`` / ``"aarch64"`` when this process issues that ABI's syscalls, else ``None``.

    A 32-bit or x32 interpreter on a 64-bit kernel, big-endian arm64 and other architectures are
    unsupported (the filter would kill every call, or the table has no numbers for them).
    """
    if sys.platform != "linux" or struct.calcsize("P") != 8 or sys.byteorder != "little":
        return None
    machine = os.uname().machine
    if machine in ("x86_64", "amd64"):
        return "x86_64"
    if machine in ("aarch64", "arm64"):
        return "aarch64"
    return None


def _own_nr(name: str, arch: str) -> int:
    x86_64, aarch64 = _tables.OWN_SYSCALLS[name]
    return x86_64 if arch == "x86_64" else aarch64


def landlock_abi() -> int | None:
    """The kernel's Landlock ABI version (``landlock_create_ruleset(NULL, 0, VERSION)``), or ``None``
    when Landlock is missing, disabled at boot, or the architecture is unsupported."""
    arch = seccomp_arch()
    if arch is None:
        return None
    try:
        version = _syscall(_own_nr("landlock_create_ruleset", arch), 0, 0, LANDLOCK_CREATE_RULESET_VERSION)
    except OSError:
        return None
    return version if version >= 1 else None


# ---- read grants ----------------------------------------------------------------------------------


def _stdlib_dirs() -> list[str]:
    """The interpreter's stdlib dirs (those holding ``os.py``), from ``sys.base_prefix`` and, when
    different, ``sys.prefix`` (a venv's prefix normally holds only site-packages, so it adds none)."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    found: list[str] = []
    candidates: list[str] = []
    stdlib_dir = getattr(sys, "_stdlib_dir", None)
    if isinstance(stdlib_dir, str):
        candidates.append(stdlib_dir)
    for prefix in (sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix):
        for libdir in (getattr(sys, "platlibdir", "lib"), "lib"):
            candidates.append(os.path.join(prefix, libdir, version))
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if real not in found and os.path.isfile(os.path.join(real, "os.py")):
            found.append(real)
    return found


def _expand_without_site_packages(directory: str) -> list[str]:
    """``directory`` itself, or its entries minus ``site-packages``/``dist-packages`` when it holds
    one (a pyenv or python.org layout keeps site-packages inside the stdlib dir; Landlock can only
    allow, so excluding it means granting the siblings one by one)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return [directory]
    if "site-packages" not in names and "dist-packages" not in names:
        return [directory]
    return [
        os.path.join(directory, name)
        for name in sorted(names)
        if name not in ("site-packages", "dist-packages")
    ]


def _mapped_library_dirs(stdlib_parents: set[str]) -> list[str]:
    """Shared objects this process has mapped (libpython, libc, ...): their directory, or only the
    file itself when the directory is a Python prefix's lib dir (it also holds site-packages).
    Extension modules loaded from site-packages/dist-packages are skipped."""
    try:
        fd = os.open("/proc/self/maps", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return []
    chunks: list[bytes] = []
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    out: list[str] = []
    for raw in b"".join(chunks).split(b"\n"):
        fields = raw.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith(b"/"):
            continue
        path = os.fsdecode(fields[5])
        if path.endswith(" (deleted)") or ".so" not in os.path.basename(path):
            continue
        if "/site-packages/" in path or "/dist-packages/" in path:
            continue  # a third-party extension module, not one of the interpreter's libraries
        directory = os.path.dirname(path)
        grant = path if directory in stdlib_parents else directory
        if grant not in out:
            out.append(grant)
    return out


def _multiarch() -> str:
    value = getattr(sys.implementation, "_multiarch", None)
    if isinstance(value, str) and value:
        return value
    return f"{os.uname().machine}-linux-gnu"


def _essential_dirs() -> list[str]:
    """The stdlib dirs and lib-dynload dirs the interpreter cannot work without."""
    out: list[str] = []
    for stdlib in _stdlib_dirs():
        out.append(stdlib)
        dynload = os.path.join(stdlib, "lib-dynload")
        if os.path.isdir(dynload):
            out.append(dynload)
    for entry in sys.path:
        if entry and os.path.basename(entry) == "lib-dynload" and os.path.isdir(entry):
            real = os.path.realpath(entry)
            if real not in out:
                out.append(real)
    return out


def default_read_paths() -> tuple[str, ...]:
    """Read(+execute) grants every confined interpreter needs; only paths that exist.

    The stdlib and lib-dynload (without site-packages/dist-packages), the directories of the shared
    libraries this interpreter has mapped, ``/usr/lib/<multiarch>``, ``/lib``, ``/lib64`` (resolved: on
    a merged-/usr system ``/lib`` is ``/usr/lib``, which holds ``python3/dist-packages``, so only its
    multiarch dir is granted), ``/etc/localtime``, ``/usr/share/zoneinfo``, ``/dev/null``,
    ``/dev/urandom``.
    """
    out: list[str] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        real = os.path.realpath(path)
        if real in seen or not os.path.exists(real):
            return
        seen.add(real)
        # Files keep their given name (/etc/localtime, /dev/null); directories their real path.
        out.append(real if os.path.isdir(real) else path)

    stdlib_dirs = _stdlib_dirs()
    for directory in _essential_dirs():
        if directory in stdlib_dirs:
            # Entries of an already-resolved dir that exist: no realpath per entry (~200 of them).
            for path in _expand_without_site_packages(directory):
                if path not in seen:
                    seen.add(path)
                    out.append(path)
        else:
            add(directory)
    for path in _mapped_library_dirs({os.path.dirname(d) for d in stdlib_dirs}):
        add(path)
    multiarch = _multiarch()
    for path in (f"/usr/lib/{multiarch}", f"/lib/{multiarch}"):
        add(path)
    for path in ("/lib", "/lib64"):
        if os.path.realpath(path) != "/usr/lib":  # merged /usr: the multiarch dir is what is needed
            add(path)
    for path in ("/etc/localtime", "/usr/share/zoneinfo", "/dev/null", "/dev/urandom"):
        add(path)
    return tuple(out)


def _may(st: os.stat_result, uid: int, gid: int, need: int) -> bool:
    if st.st_uid == uid:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid == gid:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    return bits & need == need


def inaccessible_path(uid: int, gid: int, paths: tuple[str, ...] | list[str]) -> str | None:
    """The first component a process with (uid, gid) and no supplementary groups could not traverse
    (search on every ancestor; read + search on each directory in ``paths``), or ``None``.

    Mode bits only (ACLs are ignored). Used before the uid drop: an interpreter installed under a
    directory such as ``/root`` (mode 0700) stops being importable once the child is uid 65534.
    """
    for path in paths:
        real = os.path.realpath(path)
        current = "/"
        parts = [part for part in real.split("/") if part]
        for index, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                st = os.stat(current)
            except OSError:
                return current
            last = index == len(parts) - 1
            need = 5 if last and os.path.isdir(current) else (4 if last else 1)
            if not _may(st, uid, gid, need):
                return current
    return None


# ---- the layers -----------------------------------------------------------------------------------


def _uid_map() -> list[tuple[int, int, int]] | None:
    """``/proc/self/uid_map`` as (inside, outside, count) ranges; ``None`` without ``/proc``."""
    try:
        fd = os.open("/proc/self/uid_map", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 65536)
    finally:
        os.close(fd)
    ranges: list[tuple[int, int, int]] = []
    for line in data.splitlines():
        fields = line.split()
        if len(fields) == 3:
            ranges.append((int(fields[0]), int(fields[1]), int(fields[2])))
    return ranges


def _in_initial_userns() -> bool | None:
    ranges = _uid_map()
    if ranges is None:
        return None
    return ranges == [(0, 0, 4294967295)]


def _maps_to_outer_root(uid: int) -> bool:
    """Whether ``uid`` of this user namespace is uid 0 of the parent namespace (e.g. bwrap started
    by root maps ``0 0 1``): the process then owns every root-owned file it can reach."""
    for inside, outside, count in _uid_map() or []:
        if inside <= uid < inside + count:
            return outside + (uid - inside) == 0
    return False


def _apply_rlimits(policy: ConfinementPolicy, unprivileged: bool, notes: list[str]) -> None:
    cpu = policy.cpu_seconds
    wanted: list[tuple[str, int, int, int]] = [
        ("cpu", resource.RLIMIT_CPU, cpu, cpu + 1),
        ("as", resource.RLIMIT_AS, policy.memory_bytes, policy.memory_bytes),
        ("nofile", resource.RLIMIT_NOFILE, policy.max_open_files, policy.max_open_files),
        ("fsize", resource.RLIMIT_FSIZE, policy.max_file_bytes, policy.max_file_bytes),
        ("core", resource.RLIMIT_CORE, 0, 0),
    ]
    if policy.max_processes is not None and unprivileged:
        wanted.append(("nproc", resource.RLIMIT_NPROC, policy.max_processes, policy.max_processes))
    applied: list[str] = []
    for name, which, wanted_soft, wanted_hard in wanted:
        _current_soft, current_hard = resource.getrlimit(which)
        hard = wanted_hard
        if current_hard != resource.RLIM_INFINITY and wanted_hard > current_hard:
            notes.append(f"rlimits: {name} hard limit already {current_hard}, kept (wanted {wanted_hard})")
            hard = current_hard
        soft = min(wanted_soft, hard)
        resource.setrlimit(which, (soft, hard))
        applied.append(f"{name}={soft}" if soft == hard else f"{name}={soft}/{hard}")
    if policy.max_processes is not None and not unprivileged:
        applied.append("nproc=unset(root)")
    notes.append("rlimits: " + " ".join(applied))


def _drop_privileges(policy: ConfinementPolicy, layers: list[str], notes: list[str]) -> bool:
    """The uid drop. Returns whether the process is (still) real root in the initial namespace."""
    if os.geteuid() != 0 and os.getuid() != 0:
        return False
    initial = _in_initial_userns()
    if initial is False:
        if _maps_to_outer_root(os.geteuid()):
            notes.append(
                "uid-drop: impossible, uid 0 of a user namespace that maps it to the host's root "
                "(owner of root's files; start bwrap as an unprivileged uid instead)"
            )
        else:
            notes.append("uid-drop: root inside a user namespace, no drop needed")
        return False
    if policy.drop_to is None:
        notes.append("uid-drop: not requested; still real root (capabilities kept)")
        return True
    uid, gid = policy.drop_to
    blocked = inaccessible_path(uid, gid, _essential_dirs())
    if blocked is not None:
        raise ConfinementError(
            f"uid drop to {uid}:{gid} would make the interpreter unusable: {blocked} is not readable "
            f"by that uid (interpreter {sys.executable!r}); run an interpreter outside such a "
            "directory, or run the host as an unprivileged user"
        )
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as error:
        if initial is None and error.errno in (errno.EINVAL, errno.EPERM):
            # No /proc to tell; an unmapped id or a denied setgroups means a user namespace.
            notes.append(f"uid-drop: skipped, looks like a user namespace ({error.strerror})")
            return False
        raise ConfinementError(f"uid drop to {uid}:{gid} failed: {error}") from None
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise ConfinementError(f"uid drop to {uid}:{gid} did not take effect")
    layers.append("uid-drop")
    notes.append(f"uid-drop: 0 -> {uid}:{gid}, no supplementary groups")
    return False


def _no_new_privs(ppid: int) -> None:
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if _prctl(PR_GET_NO_NEW_PRIVS) != 1:
        raise OSError(errno.EPERM, "no_new_privs did not stick")
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_PDEATHSIG, 9)  # SIGKILL, after the uid drop (a credential change clears it)
    if os.getppid() != ppid:
        raise ConfinementError("the parent exited while the child was confining itself")


def _thread_count() -> int | None:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def _landlock_handled(abi: int) -> tuple[int, int, int, int]:
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
    """The (path, requested rights) rules :func:`confine` adds, before ABI and file-type masking."""
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


def _apply_landlock(rules: list[tuple[str, int]], arch: str, abi: int, notes: list[str]) -> None:
    fs, net, scoped, size = _landlock_handled(abi)
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", fs, net, scoped)[:size], size)
    ruleset = _syscall(_own_nr("landlock_create_ruleset", arch), ctypes.addressof(attr), size, 0)
    added = 0
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError as error:
                notes.append(f"landlock: skipped {path}: {error.strerror}")
                continue
            try:
                is_dir = (os.fstat(fd).st_mode & 0o170000) == 0o040000
                allowed = rights & fs & (~0 if is_dir else _LL_FILE_RIGHTS)
                rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd), 12)
                add_rule = _own_nr("landlock_add_rule", arch)
                _syscall(add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.addressof(rule), 0)
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
        restrict = _own_nr("landlock_restrict_self", arch)
        if abi >= 8:
            try:
                _syscall(restrict, ruleset, LANDLOCK_RESTRICT_SELF_TSYNC)
            except OSError as error:
                if error.errno != errno.EINVAL or (threads is not None and threads > 1):
                    raise
                _syscall(restrict, ruleset, 0)
                notes.append("landlock: TSYNC refused (EINVAL); applied to the calling thread only")
        else:
            _syscall(restrict, ruleset, 0)
    finally:
        os.close(ruleset)
    notes.append(f"landlock: ABI {abi}, fs=0x{fs:x} net=0x{net:x} scoped=0x{scoped:x}, {added} rules")


# ---- seccomp --------------------------------------------------------------------------------------

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
    raise ValueError(f"seccomp table names {rule!r} but confine.py has no block for it")


_SIMPLE_ACTIONS = {
    "eperm": _errno_ret(errno.EPERM),
    "eacces": _errno_ret(errno.EACCES),
    "enosys": _errno_ret(errno.ENOSYS),
}


def build_seccomp_filter(arch: str, pid: int) -> bytes:
    """The ``struct sock_filter[]`` program for ``arch`` (``"x86_64"``/``"aarch64"``), with the
    self-signal rules bound to ``pid``. Raises ``ValueError``/``KeyError`` on a bad table."""
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
    for index, (name, x86_64, aarch64, action, _why) in enumerate(_tables.TABLE):
        nr = x86_64 if arch == "x86_64" else aarch64
        if nr is None:
            continue
        skip = f"skip{index}"
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


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install_seccomp(program: bytes, arch: str) -> None:
    """Load ``program`` with ``seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC)``.
    Needs no_new_privs (or CAP_SYS_ADMIN). Raises ``OSError``."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    flags = SECCOMP_FILTER_FLAG_TSYNC
    result = _syscall(_own_nr("seccomp", arch), SECCOMP_SET_MODE_FILTER, flags, ctypes.addressof(fprog))
    if result != 0:  # with TSYNC: the id of a thread that could not be synchronized
        raise OSError(errno.EBUSY, f"seccomp TSYNC failed for thread {result}")


# ---- confine --------------------------------------------------------------------------------------


def _report(layers: list[str], abi: int | None, notes: list[str], root_kept: bool) -> dict[str, object]:
    full = (
        "rlimits" in layers
        and "no-new-privs" in layers
        and "landlock" in layers
        and abi is not None
        and abi >= _FULL_LANDLOCK_ABI
        and "seccomp" in layers
        and not root_kept
    )
    if len(notes) > _MAX_NOTES:
        notes = [*notes[: _MAX_NOTES - 1], f"... {len(notes) - _MAX_NOTES + 1} more notes"]
    return {
        "layers": list(layers),
        "landlockAbi": abi,
        "enforcement": "full" if full else "partial",
        "notes": [note[:500] for note in notes],
    }


def confine(policy: ConfinementPolicy) -> dict[str, object]:
    """Apply the layers in order and return the enforcement report::

        {"layers": [...applied, in order...], "landlockAbi": int | None,
         "enforcement": "full" | "partial", "notes": [...]}

    ``full`` needs rlimits, no-new-privs, Landlock ABI >= 3 and seccomp, and the child not left as
    real root. Raises :class:`ConfinementError` (carrying the report so far) when a requested
    layer could not be applied: rlimits, the uid drop and no_new_privs fail immediately; when
    Landlock is unavailable, seccomp is still applied before the error is raised, so a child that
    goes on anyway is as confined as it can be. Call once, before any thread exists.
    """
    started = time.perf_counter()
    layers: list[str] = []
    notes: list[str] = []
    abi: int | None = None
    ppid = os.getppid()
    root = os.geteuid() == 0 or os.getuid() == 0

    def fail(message: str) -> ConfinementError:
        return ConfinementError(message, _report(layers, abi, notes, root_kept=root))

    will_drop = root and policy.drop_to is not None and _in_initial_userns() is not False
    # Computed while /proc/self/maps and every path are still visible with the original credentials.
    rules = landlock_rules(policy) if policy.landlock else []
    try:
        _apply_rlimits(policy, unprivileged=not root or will_drop, notes=notes)
    except (OSError, ValueError) as error:
        raise fail(f"rlimits could not be applied: {error}") from None
    layers.append("rlimits")

    try:
        root = _drop_privileges(policy, layers, notes)
    except ConfinementError as error:
        raise fail(str(error)) from None

    try:
        _no_new_privs(ppid)
    except OSError as error:
        raise fail(f"no_new_privs could not be set: {error}") from None
    except ConfinementError as error:
        raise fail(str(error)) from None
    layers.append("no-new-privs")

    arch = seccomp_arch()
    missing: list[str] = []
    if policy.landlock:
        detected = landlock_abi() if arch is not None else None
        if arch is None or detected is None:
            missing.append("landlock (not supported by this kernel, disabled, or unsupported arch)")
        else:
            try:
                _apply_landlock(rules, arch, detected, notes)
            except ConfinementError as error:
                missing.append(f"landlock ({error})")
            except OSError as error:
                missing.append(f"landlock ({error})")
            else:
                abi = detected
                layers.append("landlock")
    else:
        notes.append("landlock: not requested")

    if policy.seccomp:
        if arch is None:
            missing.append(f"seccomp (unsupported architecture {os.uname().machine!r} or 32-bit ABI)")
        else:
            try:
                program = build_seccomp_filter(arch, os.getpid())
                install_seccomp(program, arch)
            except (OSError, ValueError) as error:
                missing.append(f"seccomp ({error})")
            else:
                layers.append("seccomp")
                notes.append(f"seccomp: {arch}, {len(program) // 8} BPF instructions, default allow")
    else:
        notes.append("seccomp: not requested")

    notes.append(f"confine: {1000 * (time.perf_counter() - started):.2f} ms")
    if missing:
        raise fail("required confinement unavailable: " + "; ".join(missing))
    return _report(layers, abi, notes, root_kept=root)
