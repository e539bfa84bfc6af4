"""Kernel confinement the sandbox child applies to itself before it runs a program.

The child bootstrap runs under ``python -I -S`` and loads this module (by path or as part of the
package) before any thread exists, then calls :func:`confine` once. Layers, in this order
(contract §5.1, SX4):

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

Off Linux (macOS, where the host starts the child under ``sandbox-exec``) only layer 1 exists
in-process: :func:`confine` applies the rlimits the platform accepts and reports ``partial``; the
boundary there is the outer sandbox. Nothing here touches ``prctl`` or a Linux syscall at import.

This module holds the order and the enforcement report; each layer has a module of its own, and
imports flow one way (this module → layers → helpers → :mod:`seccomp_tables`):

- :mod:`confine_process`: rlimits, the uid drop, no_new_privs (layers 1-3);
- :mod:`confine_landlock`: the Landlock ruleset (layer 4), granting :mod:`confine_grants`'s paths;
- :mod:`confine_seccomp`: the BPF assembler, the filter and its installation (layer 5);
- :mod:`confine_policy`: :class:`ConfinementPolicy` and :class:`ConfinementError`;
- :mod:`confine_grants`: the paths the interpreter must read, and the uid-drop preflight;
- :mod:`confine_syscalls`: ``syscall(2)`` / ``prctl(2)`` through ``ctypes``, the syscall ABI.

Lean by contract: standard library only (``ctypes``, ``os``, ``struct``, ``resource``, ``errno``,
``sys``, ``time``), no ``toolrt`` import, no ``dataclasses``/``json``/``re``. All kernel calls go
through ``ctypes`` (``syscall(2)`` with numbers from :mod:`seccomp_tables`, ``prctl(2)``).

Each of these modules imports its siblings by their package path inside ``toolrt.sandbox._child``
and by bare name otherwise: the bootstrap loads every one of them by path, in dependency order,
before this one (``bootstrap._CONFINE_MODULES``: the folder's one load order, which
``tests/sandbox/test_child_folder.py`` checks against the folder and the modules' imports); a
caller that imports this module from a ``sys.path`` entry (the probe children) gets them from the
same directory.
"""

from __future__ import annotations

import os
import sys
import time

try:  # imported as toolrt.sandbox._child.confine
    from toolrt.sandbox._child.confine_landlock import apply_landlock, landlock_abi, landlock_rules
    from toolrt.sandbox._child.confine_policy import ConfinementError, ConfinementPolicy
    from toolrt.sandbox._child.confine_process import (
        apply_process_budget,
        apply_rlimits,
        drop_privileges,
        in_initial_userns,
        no_new_privs,
        private_task_count,
    )
    from toolrt.sandbox._child.confine_seccomp import build_seccomp_filter, install_seccomp
    from toolrt.sandbox._child.confine_syscalls import seccomp_arch
except ImportError:  # a top-level module: loaded by path in the child bootstrap, or from sys.path
    # Loaded by path without the bootstrap (which preloads the siblings), the siblings are found
    # beside this file.
    _here = os.path.dirname(os.path.abspath(__file__))
    if _here not in sys.path:
        sys.path.insert(0, _here)
    from confine_landlock import (  # type: ignore[no-redef,import-not-found]
        apply_landlock,
        landlock_abi,
        landlock_rules,
    )
    from confine_policy import (  # type: ignore[no-redef,import-not-found]
        ConfinementError,
        ConfinementPolicy,
    )
    from confine_process import (  # type: ignore[no-redef,import-not-found]
        apply_process_budget,
        apply_rlimits,
        drop_privileges,
        in_initial_userns,
        no_new_privs,
        private_task_count,
    )
    from confine_seccomp import build_seccomp_filter, install_seccomp  # type: ignore[no-redef,import-not-found]
    from confine_syscalls import seccomp_arch  # type: ignore[no-redef,import-not-found]

__all__ = ["confine"]

_FULL_LANDLOCK_ABI = 3  # "full" enforcement needs TRUNCATE handled
_MAX_NOTES = 60


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


# Off Linux, the rlimits the kernel may refuse without failing the boot (noted instead): macOS
# refuses RLIMIT_AS (EINVAL), and its sandbox profile denies process-fork, which RLIMIT_NPROC backs.
_OPTIONAL_RLIMITS_ELSEWHERE = ("as", "nproc")


def _confine_elsewhere(policy: ConfinementPolicy) -> dict[str, object]:
    """Confinement off Linux: rlimits only (no uid drop, no_new_privs, Landlock or seccomp exist
    here), always ``partial``. Landlock or seccomp requested is a :class:`ConfinementError`, raised
    after the rlimits are applied."""
    started = time.perf_counter()
    layers: list[str] = []
    notes: list[str] = []
    root = os.geteuid() == 0 or os.getuid() == 0

    def fail(message: str) -> ConfinementError:
        return ConfinementError(message, _report(layers, None, notes, root_kept=root))

    try:
        apply_rlimits(policy, unprivileged=not root, notes=notes, optional=_OPTIONAL_RLIMITS_ELSEWHERE)
    except (OSError, ValueError) as error:
        raise fail(f"rlimits could not be applied: {error}") from None
    layers.append("rlimits")
    if root:
        notes.append(f"uid-drop: not implemented on {sys.platform}; still root")
    notes.append(
        f"confine: {sys.platform} has no no_new_privs, Landlock or seccomp; only rlimits apply "
        "in-process, the boundary is the sandbox the host started this child in"
    )
    wanted = (("landlock", policy.landlock), ("seccomp", policy.seccomp))
    requested = [name for name, asked in wanted if asked]
    if requested:
        raise fail(f"required confinement unavailable on {sys.platform}: {', '.join(requested)} (Linux only)")
    notes.append(f"confine: {1000 * (time.perf_counter() - started):.2f} ms")
    return _report(layers, None, notes, root_kept=root)


def confine(policy: ConfinementPolicy) -> dict[str, object]:
    """Apply the layers in order and return the enforcement report::

        {"layers": [...applied, in order...], "landlockAbi": int | None,
         "enforcement": "full" | "partial", "notes": [...]}

    ``full`` needs rlimits, no-new-privs, Landlock ABI >= 3 and seccomp, and the child not left as
    real root. Raises :class:`ConfinementError` (carrying the report so far) when a requested
    layer could not be applied: rlimits, the uid drop and no_new_privs fail immediately; when
    Landlock is unavailable, seccomp is still applied before the error is raised, so a child that
    goes on anyway is as confined as it can be. Call once, before any thread exists.

    Off Linux: rlimits only, ``partial`` (see :func:`_confine_elsewhere`).
    """
    linux = sys.platform == "linux"  # (a plain bool: mypy checks the rest on every platform)
    if not linux:
        return _confine_elsewhere(policy)
    started = time.perf_counter()
    layers: list[str] = []
    notes: list[str] = []
    abi: int | None = None
    ppid = os.getppid()
    root = os.geteuid() == 0 or os.getuid() == 0

    def fail(message: str) -> ConfinementError:
        return ConfinementError(message, _report(layers, abi, notes, root_kept=root))

    will_drop = root and policy.drop_to is not None and in_initial_userns() is not False
    # Computed while /proc/self/maps and every path are still visible with the original credentials.
    rules = landlock_rules(policy) if policy.landlock else []
    unprivileged = not root or will_drop
    try:
        apply_rlimits(policy, unprivileged=unprivileged, notes=notes, processes=False)
    except (OSError, ValueError) as error:
        raise fail(f"rlimits could not be applied: {error}") from None
    layers.append("rlimits")

    try:
        root = drop_privileges(policy, layers, notes)
    except ConfinementError as error:
        raise fail(str(error)) from None

    # After the drop (the namespace is the dropped uid's) and before RLIMIT_NPROC is lowered (the
    # initial namespace's level of the count keeps the limit its creator had: see the function).
    try:
        if policy.private_task_count and not root:
            private_task_count(notes)
        apply_process_budget(policy, unprivileged=unprivileged, notes=notes)
    except (OSError, ValueError) as error:
        raise fail(f"rlimits could not be applied: nproc: {error}") from None
    except ConfinementError as error:
        raise fail(str(error)) from None

    try:
        no_new_privs(ppid)
    except OSError as error:
        raise fail(f"no_new_privs could not be set: {error}") from None
    except ConfinementError as error:
        raise fail(str(error)) from None
    layers.append("no-new-privs")

    # seccomp_arch and landlock_abi are looked up in this module's globals on purpose: a caller that
    # stubs confine.seccomp_arch or confine.landlock_abi (the tests do) changes what happens here.
    arch = seccomp_arch()
    missing: list[str] = []
    if policy.landlock:
        detected = landlock_abi() if arch is not None else None
        if arch is None or detected is None:
            missing.append("landlock (not supported by this kernel, disabled, or unsupported arch)")
        else:
            try:
                apply_landlock(rules, arch, detected, notes)
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
