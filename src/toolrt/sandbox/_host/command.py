"""Any command under the sandbox's confinement: :func:`confine_command` turns an argv into the argv
(and environment) that runs it confined, for a caller that spawns and watches it itself.

The Python runtime's child confines itself; a command (a shell, ``git``, Deno) cannot, so the
command runs behind the child folder's launcher (``_child/command_launcher.py``), which applies the
same layers in the same order and then ``execve``s the command. The backend ladder is the
runtime's (:func:`~toolrt.sandbox._backends.plan.resolve_plan`): bwrap namespaces outside the
launcher where they work (read-only system, the workspace bound read-write, no network namespace
unless allowed, a private ``/proc`` and ``/tmp``), else the launcher's layers alone; without either
it refuses (:class:`SandboxUnavailableError`) unless ``allow_unconfined=True``.

What the command may touch: the read-only system (``/usr``, ``/bin``, ``/lib*``, ``/etc``), the
``readable`` paths, the workspace (read-write or read-only), ``/dev/null`` and the random devices;
nothing else. What it may do beyond the Python profile: fork and exec (a shell's job), with no new
namespace; its other system calls are the Python child's deny-list (no ptrace, bpf, mount, unshare,
io_uring, keyrings...). Spawning, the wall clock, output caps and killing the process group remain
the caller's, as for any child: use ``start_new_session=True`` and kill the group.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from toolrt.codemode._code_runtime import IsolationReport
from toolrt.sandbox._backends.plan import (
    BOOTSTRAP,
    DROP_TO,
    BackendName,
    Plan,
    probe_host,
    resolve_plan,
)
from toolrt.sandbox._child import confine_landlock as _ll
from toolrt.sandbox._child.command_launcher import REFUSED
from toolrt.sandbox._child.confine_grants import inaccessible_path, may

__all__ = [
    "LAUNCH_REFUSED",
    "SYSTEM_READ",
    "CommandConfinement",
    "ConfinedCommand",
    "SandboxUnavailableError",
    "command_plan",
    "confine_command",
]

LAUNCH_REFUSED = REFUSED
"""The exit status of a confined command whose confinement could not be applied (it never ran;
stderr has one ``toolrt-confine: <reason>`` line)."""

_LAUNCHER = "command_launcher.py"
SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc")
"""What a confined command reads (and executes) of the system unless told otherwise."""
_DEVICES_READ = ("/dev/zero", "/dev/urandom", "/dev/random", "/dev/full")
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# "As high as the hard limit allows" (confine never raises a hard limit): RLIMIT_AS in bytes, and
# RLIMIT_CPU in seconds, which the kernel turns into nanoseconds (1 << 62 s overflows into a tiny one).
_UNLIMITED_BYTES = 1 << 62
_UNLIMITED_SECONDS = 1 << 30

_READ = _ll.LL_EXECUTE | _ll.LL_READ_FILE | _ll.LL_READ_DIR
# A command's workspace is a working tree: it executes its scripts and makes symlinks (the Python
# child's work dir refuses both, to keep traps from its host).
_WRITE = (
    _READ
    | _ll.LL_WRITE_FILE
    | _ll.LL_REMOVE_DIR
    | _ll.LL_REMOVE_FILE
    | _ll.LL_MAKE_DIR
    | _ll.LL_MAKE_REG
    | _ll.LL_MAKE_SYM
    | _ll.LL_MAKE_FIFO
    | _ll.LL_REFER
    | _ll.LL_TRUNCATE
)


class SandboxUnavailableError(RuntimeError):
    """No confinement backend works here and running unconfined was not allowed.

    ``reason`` says what is missing (the same text a Code Mode run reports as
    ``sandbox-unavailable``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CommandConfinement:
    """What a confined command may touch: ``workspace`` (read-write unless ``writable=False``), the
    ``readable`` paths (read and execute), the read-only system; the network only with
    ``allow_network=True``.

    The rlimits default to "no tighter than the host's" except files (``max_file_bytes``), open
    files and processes, which bound a runaway tree; ``cpu_seconds`` and ``memory_bytes``
    (RLIMIT_AS, per process) are there for callers with a budget (the Deno runtime)::

        CommandConfinement(Path("/srv/repo"), readable=(Path("/opt/tools"),))
    """

    workspace: Path
    writable: bool = True
    allow_network: bool = False
    readable: tuple[Path, ...] = ()
    cpu_seconds: int | None = None
    memory_bytes: int | None = None
    max_file_bytes: int = 1 << 30
    max_open_files: int = 1024
    max_processes: int | None = 256
    processes: bool = True
    """Whether the command may fork (a shell must; Deno needs threads only)."""
    system_read: tuple[str, ...] = SYSTEM_READ
    """The system paths it reads and executes (bound read-only under bwrap)."""
    own_memory_map: bool = False
    """Whether it may read its own ``/proc/<pid>/maps`` and nothing else of ``/proc`` (glibc reads
    it to find the main thread's stack; Deno panics without it)."""


@dataclass(frozen=True, slots=True)
class ConfinedCommand:
    """How to spawn a confined command: ``argv`` (the launcher, or bwrap, in front of the command),
    ``env`` (the command's whole environment: nothing of the host's), ``pass_fds`` (to inherit),
    and ``report``, the enforcement it runs under (the launcher refuses to run the command with
    less: exit status :data:`LAUNCH_REFUSED`)."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    report: IsolationReport


def _resolve_executable(name: str, path: str) -> str:
    if "/" in name:
        found = os.path.abspath(name)
        if not os.access(found, os.X_OK) or os.path.isdir(found):
            raise ValueError(f"command {name!r} is not an executable file")
        return found
    which = shutil.which(name, path=path)
    if which is None:
        raise ValueError(f"command {name!r} not found on PATH {path!r}")
    return which


def _existing(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if os.path.exists(real) and real not in out:
            out.append(real)
    return out


def _check(argv: Sequence[str], confinement: CommandConfinement) -> None:
    if isinstance(argv, str) or not argv or not all(isinstance(arg, str) for arg in argv):
        raise ValueError("argv must be a non-empty sequence of str (not one string)")
    if any("\0" in arg for arg in argv):
        raise ValueError("argv must not contain NUL characters")
    workspace = confinement.workspace
    if not isinstance(workspace, Path) or not workspace.is_absolute():
        raise ValueError(f"workspace must be an absolute Path, not {workspace!r}")
    if not workspace.is_dir():
        raise ValueError(f"workspace {str(workspace)!r} is not a directory")
    for path in confinement.readable:
        if not isinstance(path, Path) or not path.is_absolute():
            raise ValueError(f"readable entries must be absolute Paths, not {path!r}")


def _drop_blocker(confinement: CommandConfinement, paths: Sequence[str]) -> str | None:
    """Why a root host cannot run this command as uid 65534 (``None``: it can)."""
    uid, gid = DROP_TO
    workspace = os.path.realpath(confinement.workspace)
    blocked = inaccessible_path(uid, gid, [workspace])
    if blocked is None and confinement.writable and not may(os.stat(workspace), uid, gid, 3):
        blocked = workspace
    if blocked is not None:
        need = "writable" if confinement.writable else "readable"
        return f"the workspace is not {need} by uid {uid} ({blocked})"
    blocked = inaccessible_path(uid, gid, [os.path.dirname(path) for path in paths])
    if blocked is not None:
        return f"{blocked} is not accessible to uid {uid}"
    return None


def _bwrap_argv(
    plan: Plan, python: str, launcher: str, grants: Sequence[str], confinement: CommandConfinement
) -> list[str]:
    assert plan.bwrap_path is not None
    args = [plan.bwrap_path, "--unshare-all"]
    if confinement.allow_network:
        args.append("--share-net")
    args += ["--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
    args += ["--cap-drop", "ALL", "--uid", str(DROP_TO[0]), "--gid", str(DROP_TO[1])]
    # The private /dev, /proc and /tmp first: a bind below /tmp made before the tmpfs would vanish.
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    bound: list[str] = []
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
    # /usr is the launcher's interpreter's (bound read-only); Landlock narrows it to system_read.
    for path in (
        "/usr",
        *confinement.system_read,
        *grants,
        os.path.dirname(os.path.realpath(python)),
        os.path.dirname(launcher),
    ):
        real = os.path.realpath(path)
        if not os.path.exists(real) or any(real == b or real.startswith(b.rstrip("/") + "/") for b in bound):
            continue
        if os.path.islink(path) and path in ("/bin", "/sbin", "/lib", "/lib64"):
            continue
        bound.append(real)
        args += ["--ro-bind", real, real]
    if os.path.realpath(python) == os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable):
        args += ["--ro-bind", os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_prefix)]
    workspace = os.path.realpath(confinement.workspace)
    args += ["--bind" if confinement.writable else "--ro-bind", workspace, workspace]
    args += ["--chdir", workspace, "--remount-ro", "/"]
    return args


def confine_command(
    argv: Sequence[str],
    confinement: CommandConfinement,
    *,
    backend: BackendName = "auto",
    allow_unconfined: bool = False,
    env: dict[str, str] | None = None,
    report_fd: int | None = None,
) -> ConfinedCommand:
    """The argv that runs ``argv`` under ``confinement`` on the best backend here (or ``backend``).

    ``env`` replaces the command's default environment (``PATH``, ``HOME`` = the workspace,
    ``TMPDIR``, ``LANG``); ``report_fd`` (an fd the caller passes) receives the launcher's
    enforcement report as one JSON line before the command starts. Raises
    :class:`SandboxUnavailableError` when nothing can confine it (unless ``allow_unconfined``) and
    ``ValueError`` for a bad argv or confinement::

        confined = confine_command(["bash", "-c", "make"], CommandConfinement(Path("/srv/repo")))
        subprocess.run(confined.argv, env=confined.env, pass_fds=confined.pass_fds, cwd="/srv/repo")
    """
    plan = resolve_plan(backend, probe_host(), allow_unconfined)
    return command_plan(argv, confinement, plan, env=env, report_fd=report_fd)[1]


def command_plan(
    argv: Sequence[str],
    confinement: CommandConfinement,
    plan: Plan,
    *,
    env: dict[str, str] | None = None,
    report_fd: int | None = None,
    channel_fd: int | None = None,
    warden_fd: int | None = None,
) -> tuple[Plan, ConfinedCommand]:
    """:func:`confine_command` on a resolved ``plan``, with the plan the command really runs
    under (a root host may keep uid 0: see the report's notes). ``channel_fd`` makes the
    command's stdin and stdout that fd and appends the launcher's report to its argv (a sandbox
    child speaking the frame protocol, :mod:`.deno_process`); ``warden_fd`` keeps the launcher as
    the command's parent, which lowers its RLIMIT_AS on request (``_child/command_launcher.py``)."""
    _check(argv, confinement)
    workspace = os.path.realpath(confinement.workspace)
    base_env = dict(env) if env is not None else {"PATH": _DEFAULT_PATH, "HOME": workspace, "LANG": "C.UTF-8"}
    target = [_resolve_executable(argv[0], base_env.get("PATH", _DEFAULT_PATH)), *argv[1:]]
    pass_fds = tuple(fd for fd in (report_fd, channel_fd, warden_fd) if fd is not None)
    if plan.backend is None:
        raise SandboxUnavailableError(plan.unavailable)
    if plan.backend == "unconfined" and channel_fd is None and warden_fd is None:
        return plan, ConfinedCommand(target, base_env, pass_fds, plan.predicted())
    if plan.backend == "sandbox-exec":
        raise SandboxUnavailableError("confined commands need Linux (bwrap or Landlock + seccomp)")
    readable = _existing([str(path) for path in confinement.readable])
    executable = os.path.realpath(target[0])
    grants = [*readable, *([] if executable.startswith("/usr/") else [executable])]
    processes = "fork and exec allowed (no new namespaces)" if confinement.processes else "threads only"
    network = "network allowed" if confinement.allow_network else "no network"
    notes = [f"confined command: {processes}; {network}"]
    if os.geteuid() == 0:
        blocker = _drop_blocker(confinement, [executable, *readable])
        if blocker is not None:
            plan = replace(plan, drop_to=None, bwrap_as=None, python=None, bootstrap=None)
            notes.append(f"uid drop skipped: {blocker}; the command runs as root (capabilities dropped")
            notes[-1] += " by bwrap)" if plan.backend == "bwrap" else " only by no_new_privs: partial)"
    python = plan.python or getattr(sys, "_base_executable", None) or sys.executable
    launcher = os.path.join(os.path.dirname(plan.bootstrap or BOOTSTRAP), _LAUNCHER)
    in_bwrap = plan.backend == "bwrap"
    base_env.setdefault("TMPDIR", "/tmp" if in_bwrap else workspace)
    rules = [(path, _READ) for path in _existing([*confinement.system_read, *_DEVICES_READ])]
    rules.append(("/dev/null", _READ | _ll.LL_WRITE_FILE))
    rules += [(path, _READ) for path in grants]
    if in_bwrap:
        rules += [("/proc", _READ), ("/tmp", _WRITE)]  # the sandbox's own (pid namespace, tmpfs)
    rules.append((workspace, _WRITE if confinement.writable else _READ))
    policy = {
        "cpu_seconds": confinement.cpu_seconds or _UNLIMITED_SECONDS,
        "memory_bytes": confinement.memory_bytes or _UNLIMITED_BYTES,
        "max_open_files": confinement.max_open_files,
        "max_file_bytes": confinement.max_file_bytes,
        "max_processes": confinement.max_processes,
        "drop_to": list(plan.drop_to) if plan.drop_to is not None else None,
        "landlock": plan.landlock,
        "seccomp": plan.seccomp,
        "private_task_count": not in_bwrap,
    }
    config = {
        "policy": policy,
        "rules": rules,
        "allowNetwork": confinement.allow_network,
        "pidNamespace": in_bwrap,
        "chdir": workspace,
        "reportFd": report_fd,
        "channelFd": channel_fd,
        "wardenFd": warden_fd,
        "processes": confinement.processes,
        "ownMemoryMap": confinement.own_memory_map,
    }
    launch = [python, "-I", "-S", launcher, json.dumps(config, separators=(",", ":")), *target]
    if in_bwrap:
        launch = [*_bwrap_argv(plan, python, launcher, grants, confinement), *launch]
        if plan.bwrap_as is not None:
            # bwrap started by root maps the sandbox to host uid 0: the launcher drops first, then
            # execs bwrap (which then maps the sandbox to uid 65534).
            drop = {"mode": "drop", "dropTo": list(plan.bwrap_as)}
            launch = [python, "-I", "-S", launcher, json.dumps(drop), *launch]
    predicted = plan.predicted()
    report = replace(predicted, notes=(*predicted.notes, *notes))
    if plan.backend == "landlock" and plan.root_kept and report.enforcement == "full":
        report = replace(report, enforcement="partial")
    return plan, ConfinedCommand(launch, base_env, pass_fds, report)
