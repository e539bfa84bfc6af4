"""The sandbox child's process-wide confinement layers, in the order :func:`confine.confine` applies
them: rlimits, the uid drop (real root in the initial user namespace only), then no_new_privs with
``PR_SET_DUMPABLE 0`` and ``PR_SET_PDEATHSIG SIGKILL``.

Part of the child's confinement; loaded by path under ``python -I -S`` before any thread exists.
Standard library only (``errno``, ``os``, ``resource``, ``sys``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import struct
import sys

try:  # imported as part of the toolrt.sandbox._child package
    from toolrt.sandbox._child.confine_grants import essential_dirs, inaccessible_path
    from toolrt.sandbox._child.confine_policy import ConfinementError, ConfinementPolicy
    from toolrt.sandbox._child.confine_syscalls import (
        PR_GET_NO_NEW_PRIVS,
        PR_SET_DUMPABLE,
        PR_SET_NO_NEW_PRIVS,
        PR_SET_PDEATHSIG,
        prctl,
    )
except ImportError:  # a top-level module: loaded by path in the child, or from a sys.path entry
    from confine_grants import essential_dirs, inaccessible_path  # type: ignore[no-redef,import-not-found]
    from confine_policy import (  # type: ignore[no-redef,import-not-found]
        ConfinementError,
        ConfinementPolicy,
    )
    from confine_syscalls import (  # type: ignore[no-redef,import-not-found]
        PR_GET_NO_NEW_PRIVS,
        PR_SET_DUMPABLE,
        PR_SET_NO_NEW_PRIVS,
        PR_SET_PDEATHSIG,
        prctl,
    )

__all__ = [
    "apply_process_budget",
    "apply_rlimits",
    "drop_privileges",
    "in_initial_userns",
    "no_new_privs",
    "private_task_count",
]


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


def in_initial_userns() -> bool | None:
    """Whether this process is in the initial user namespace (identity uid map); ``None`` without
    ``/proc``."""
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


def apply_rlimits(
    policy: ConfinementPolicy,
    unprivileged: bool,
    notes: list[str],
    optional: tuple[str, ...] = (),
    processes: bool = True,
) -> None:
    """Set the policy's rlimits, never raising a hard limit that is already lower (noted instead).
    RLIMIT_NPROC only when ``unprivileged``: root ignores it, and it counts the uid system-wide.

    A limit named in ``optional`` that the kernel refuses with ``EINVAL`` (which Python's
    ``resource`` reports as ``ValueError``) is skipped with a note instead of failing: macOS refuses
    RLIMIT_AS below its current value (python/cpython#78783), so there the memory limit is not the
    kernel's. Any other failure raises.

    ``processes=False`` leaves RLIMIT_NPROC to :func:`apply_process_budget` (Linux: it must come
    after :func:`private_task_count`)."""
    cpu = policy.cpu_seconds
    wanted: list[tuple[str, int, int, int]] = [
        ("cpu", resource.RLIMIT_CPU, cpu, cpu + 1),
        ("as", resource.RLIMIT_AS, policy.memory_bytes, policy.memory_bytes),
        ("nofile", resource.RLIMIT_NOFILE, policy.max_open_files, policy.max_open_files),
        ("fsize", resource.RLIMIT_FSIZE, policy.max_file_bytes, policy.max_file_bytes),
        ("core", resource.RLIMIT_CORE, 0, 0),
    ]
    if processes and policy.max_processes is not None and unprivileged:
        wanted.append(("nproc", resource.RLIMIT_NPROC, policy.max_processes, policy.max_processes))
    applied: list[str] = []
    for name, which, wanted_soft, wanted_hard in wanted:
        _current_soft, current_hard = resource.getrlimit(which)
        hard = wanted_hard
        if current_hard != resource.RLIM_INFINITY and wanted_hard > current_hard:
            notes.append(f"rlimits: {name} hard limit already {current_hard}, kept (wanted {wanted_hard})")
            hard = current_hard
        soft = min(wanted_soft, hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError) as error:
            refused = isinstance(error, ValueError) or error.errno == errno.EINVAL
            if name not in optional or not refused:
                raise
            notes.append(
                f"rlimits: {name} not supported here ({error}): the kernel does not enforce that limit"
            )
            continue
        applied.append(f"{name}={soft}" if soft == hard else f"{name}={soft}/{hard}")
    if processes and policy.max_processes is not None and not unprivileged:
        applied.append("nproc=unset(root)")
    notes.append("rlimits: " + " ".join(applied))


# ---- the per-run process and thread budget -------------------------------------------------------

_CLONE_NEWUSER = 0x10000000
_CAP_VERSION_3 = 0x20080522


def _write_proc(name: str, text: str) -> None:
    fd = os.open(f"/proc/self/{name}", os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def private_task_count(notes: list[str]) -> bool:
    """Move this process into a user namespace of its own, so that RLIMIT_NPROC counts this run's
    tasks only. Returns whether it did; when the kernel refuses the namespace, the budget stays
    the uid's (noted). Raises :class:`ConfinementError` only if the namespace's capabilities could
    not be dropped.

    The kernel counts RLIMIT_NPROC per (user namespace, uid) since Linux 5.14, and checks every
    level up to the initial namespace against the limit its creator had. Every run of the landlock
    backend runs as the same uid (the host's own, or 65534 under a root host), so a limit counted
    there is shared: one run holding threads made a concurrent run fail with "can't start new thread".
    In a namespace of its own, made *before* RLIMIT_NPROC is lowered, the run's limit applies to its
    own tasks, and the initial namespace's level keeps the uid's ordinary limit.

    The namespace maps this uid and gid to themselves, so ids read as before (where an LSM refuses
    the maps, e.g. AppArmor's restriction of unprivileged namespaces, they read as the overflow id
    65534 inside; noted). The full capability set a new namespace hands out is dropped at once: it
    could only act on objects this namespace owns (none) or on files of the mapped uid, this
    process's own. Nothing else changes: the mount, network and pid namespaces stay the host's,
    and the seccomp filter denies ``unshare`` and ``setns`` to the program. Call before any thread
    exists.
    """
    uid, gid = os.geteuid(), os.getegid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWUSER) != 0:
        code = ctypes.get_errno()
        notes.append(
            f"process-budget: shared by every task of uid {uid} (no user namespace: {os.strerror(code)}); "
            "concurrent runs can exhaust each other's RLIMIT_NPROC"
        )
        return False
    try:
        # A credential change leaves the process non-dumpable, which makes its /proc files root's
        # and its own id maps unwritable; no_new_privs() makes it non-dumpable again right after.
        prctl(PR_SET_DUMPABLE, 1)
        _write_proc("uid_map", f"{uid} {uid} 1")
        _write_proc("setgroups", "deny")
        _write_proc("gid_map", f"{gid} {gid} 1")
    except OSError as error:
        notes.append(f"process-budget: ids unmapped in the run's user namespace (read as 65534): {error}")
    header = ctypes.create_string_buffer(struct.pack("=Ii", _CAP_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(24)  # two __user_cap_data_struct, all zero
    if libc.capset(header, data) != 0:
        code = ctypes.get_errno()
        raise ConfinementError(
            f"process-budget: capabilities of the run's user namespace kept: {os.strerror(code)}"
        )
    notes.append(f"process-budget: RLIMIT_NPROC counts this run's tasks only (user namespace of {uid}:{gid})")
    return True


def apply_process_budget(policy: ConfinementPolicy, unprivileged: bool, notes: list[str]) -> None:
    """RLIMIT_NPROC (soft = hard = ``policy.max_processes``) when ``unprivileged``; root ignores it.
    Never raises a lower hard limit. Raises ``OSError``/``ValueError``."""
    if policy.max_processes is None:
        return
    if not unprivileged:
        notes.append("process-budget: nproc unset (root)")
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    wanted = policy.max_processes
    if hard != resource.RLIM_INFINITY and wanted > hard:
        notes.append(f"process-budget: nproc hard limit already {hard}, kept (wanted {wanted})")
        wanted = hard
    resource.setrlimit(resource.RLIMIT_NPROC, (wanted, wanted))
    notes.append(f"process-budget: nproc={wanted}")


def drop_privileges(policy: ConfinementPolicy, layers: list[str], notes: list[str]) -> bool:
    """The uid drop. Returns whether the process is (still) real root in the initial namespace."""
    if os.geteuid() != 0 and os.getuid() != 0:
        return False
    initial = in_initial_userns()
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
    blocked = inaccessible_path(uid, gid, essential_dirs())
    if blocked is not None:
        raise ConfinementError(
            f"uid drop to {uid}:{gid} would make the interpreter unusable: {blocked} is not readable "
            f"by that uid (interpreter {sys.executable!r}); run an interpreter outside such a "
            "directory, or run the host as an unprivileged user"
        )
    try:
        _switch_ids(uid, gid)
    except OSError as error:
        if initial is None and error.errno in (errno.EINVAL, errno.EPERM):
            # No /proc to tell; an unmapped id or a denied setgroups means a user namespace.
            notes.append(f"uid-drop: skipped, looks like a user namespace ({error.strerror})")
            return False
        raise ConfinementError(f"uid drop to {uid}:{gid} failed: {error}") from None
    if not _ids_are(uid, gid):
        raise ConfinementError(f"uid drop to {uid}:{gid} did not take effect")
    layers.append("uid-drop")
    notes.append(f"uid-drop: 0 -> {uid}:{gid}, no supplementary groups")
    return False


def _switch_ids(uid: int, gid: int) -> None:
    """No supplementary groups, then real, effective and saved gid and uid (``setresgid`` /
    ``setresuid`` are Linux's; :func:`confine` never drops elsewhere, where this raises ``ENOSYS``)."""
    if sys.platform == "linux":
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    else:
        raise OSError(errno.ENOSYS, f"uid drop not implemented on {sys.platform}")


def _ids_are(uid: int, gid: int) -> bool:
    """Whether real, effective and saved ids are ``uid``/``gid`` and no supplementary group is left."""
    if sys.platform == "linux":
        same = os.getresuid() == (uid, uid, uid) and os.getresgid() == (gid, gid, gid)
    else:
        same = False
    return same and not os.getgroups()


def no_new_privs(ppid: int) -> None:
    """no_new_privs, not dumpable, SIGKILL on parent death; ``ppid`` detects a parent that exited
    before the death signal was armed."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if prctl(PR_GET_NO_NEW_PRIVS) != 1:
        raise OSError(errno.EPERM, "no_new_privs did not stick")
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_PDEATHSIG, 9)  # SIGKILL, after the uid drop (a credential change clears it)
    if os.getppid() != ppid:
        raise ConfinementError("the parent exited while the child was confining itself")
