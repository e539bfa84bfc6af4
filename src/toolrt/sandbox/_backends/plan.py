"""The backend ladder: what the host can do (probes), which rung a runtime uses (the plan), what a
child of that plan reports, and the bubblewrap command line.

A runtime picks its backend once (probing is cached). On Linux: ``bwrap`` + in-child confinement,
else in-child confinement alone (``landlock``: rlimits, uid drop, no_new_privs, Landlock, seccomp),
else it refuses with ``sandbox-unavailable``. On macOS: ``sandbox-exec`` (a Seatbelt profile,
:mod:`.seatbelt`, plus rlimits; always ``partial``) where it works, else the same refusal.
``unconfined`` (rlimits only) needs ``allow_unconfined=True``. Every result's ``meta["isolation"]``
says what that run achieved.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal, Protocol

from toolrt.codemode._code_runtime import IsolationReport
from toolrt.sandbox._backends import probe, seatbelt, uid_drop
from toolrt.sandbox._backends.probe import CHILD_DIR
from toolrt.sandbox._child.bootstrap import CHILD_FILES

__all__ = [
    "BACKEND_NAMES",
    "BOOTSTRAP",
    "DROP_TO",
    "SANDBOX_WORKDIR",
    "BackendName",
    "ChildReport",
    "Plan",
    "ProbeResults",
    "bwrap_args",
    "probe_host",
    "resolve_plan",
]

BackendName = Literal["auto", "bwrap", "landlock", "sandbox-exec", "unconfined"]
BACKEND_NAMES: Final = ("auto", "bwrap", "landlock", "sandbox-exec", "unconfined")

BOOTSTRAP = os.path.join(CHILD_DIR, CHILD_FILES[0])
"""The package's child script (``bootstrap.py``), which the host starts as the child."""
SANDBOX_WORKDIR = "/tmp/work"
"""The work dir's path inside a bwrap sandbox (a size-capped tmpfs)."""
DROP_TO: Final = (65534, 65534)
"""The uid and gid a root host drops its children (or bwrap) to."""


# --- probing -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProbeResults:
    """What the host found: Landlock ABI, seccomp support, and a working bwrap (if any).

    ``drop_problem`` says why children could not run as uid 65534 after the uid drop of a root host
    (``None``: they can); ``bwrap_disable_userns``: whether bwrap accepts ``--unshare-user
    --disable-userns``, which the bwrap rung requires. When ``drop_problem`` is set,
    ``fallback_python`` is a Python >= 3.11 that does work as uid 65534 (with ``fallback_bootstrap``,
    a bootstrap readable by that uid), or ``None`` with ``fallback_problem`` saying why there is none.
    ``bwrap_drop_problem`` (root hosts with a working bwrap) says why bwrap cannot be started as uid
    65534, which is how a root host keeps the sandbox off host uid 0 (``None``: it can).

    macOS: ``sandbox_exec_path`` / ``sandbox_exec_works`` / ``sandbox_exec_reason`` are the verdict
    on ``sandbox-exec`` (:func:`.seatbelt.probe_sandbox_exec`), ``interpreter_reads`` the files the
    child interpreter reads, which its Seatbelt profile grants.
    """

    landlock_abi: int | None
    seccomp: bool
    bwrap_path: str | None
    bwrap_works: bool
    bwrap_reason: str = ""
    bwrap_disable_userns: bool = True
    drop_problem: str | None = None
    fallback_python: str | None = None
    fallback_bootstrap: str | None = None
    fallback_problem: str = ""
    bwrap_drop_problem: str | None = None
    sandbox_exec_path: str | None = None
    sandbox_exec_works: bool = False
    sandbox_exec_reason: str = ""
    interpreter_reads: tuple[str, ...] = ()


def probe_host(python: str | None = None, bootstrap: str | None = None) -> ProbeResults:
    """Run the (cached, once per process) capability probes of :mod:`.probe` for children run by
    ``python`` (default: this interpreter) with ``bootstrap`` (default: the package's)."""
    darwin = sys.platform == "darwin"  # (a plain bool: mypy checks the rest on every platform)
    if darwin:
        found = seatbelt.probe_sandbox_exec(python)
        return ProbeResults(
            landlock_abi=None,
            seccomp=False,
            bwrap_path=None,
            bwrap_works=False,
            bwrap_reason="bubblewrap needs Linux",
            sandbox_exec_path=found.path,
            sandbox_exec_works=found.works,
            sandbox_exec_reason=found.reason,
            interpreter_reads=found.reads,
        )
    bwrap = probe.probe_bwrap()
    drop_problem = uid_drop.drop_target_problem(*DROP_TO, executable=python) if os.geteuid() == 0 else None
    fallback: str | None = None
    fallback_bootstrap: str | None = None
    fallback_problem = ""
    if drop_problem is not None:
        fallback, fallback_problem = uid_drop.drop_interpreter(*DROP_TO, exclude=python or sys.executable)
        if fallback is not None:
            fallback_bootstrap = uid_drop.drop_readable_bootstrap(bootstrap or BOOTSTRAP, *DROP_TO)
    bwrap_drop_problem: str | None = None
    if os.geteuid() == 0 and bwrap.works and bwrap.path is not None:
        bwrap_drop_problem = probe.bwrap_as_user_problem(bwrap.path, *DROP_TO)
        if bwrap_drop_problem is None and fallback_bootstrap is None:
            # Started as uid 65534, bwrap itself must reach the bootstrap (nothing reads it as root).
            fallback_bootstrap = uid_drop.drop_readable_bootstrap(bootstrap or BOOTSTRAP, *DROP_TO)
    return ProbeResults(
        landlock_abi=probe.probe_landlock(),
        seccomp=probe.probe_seccomp(),
        bwrap_path=bwrap.path,
        bwrap_works=bwrap.works,
        bwrap_reason=bwrap.reason,
        bwrap_disable_userns=bwrap.disable_userns,
        drop_problem=drop_problem,
        fallback_python=fallback,
        fallback_bootstrap=fallback_bootstrap,
        fallback_problem=fallback_problem,
        bwrap_drop_problem=bwrap_drop_problem,
    )


# --- the plan ------------------------------------------------------------------------------------------


class ChildReport(Protocol):
    """What a booted child says it achieved (the host's ``Ready`` frame)."""

    @property
    def layers(self) -> tuple[str, ...]:
        """The confinement layers the child applied, in order."""

    @property
    def landlock_abi(self) -> int | None:
        """The Landlock ABI it enforced, or ``None``."""

    @property
    def enforcement(self) -> Literal["full", "partial", "none"]:
        """Its own verdict: ``full``, ``partial`` or ``none``."""

    @property
    def notes(self) -> tuple[str, ...]:
        """What it has to say about its confinement."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The resolved backend (or why there is none)."""

    backend: Literal["bwrap", "landlock", "sandbox-exec", "unconfined"] | None
    unavailable: str = ""
    bwrap_path: str | None = None
    landlock: bool = False
    seccomp: bool = False
    landlock_abi: int | None = None
    drop_to: tuple[int, int] | None = None
    notes: tuple[str, ...] = ()
    python: str | None = None
    """The child interpreter, when not the runtime's own (a root host's fallback for the uid drop)."""
    bootstrap: str | None = None
    """The bootstrap to run with ``python`` (``None``: the runtime's)."""
    bwrap_as: tuple[int, int] | None = None
    """The uid/gid a root host starts bwrap as (the sandbox's uid then maps to it, not to root)."""
    sandbox_exec: str | None = None
    """``sandbox-exec`` (macOS), which starts the child under its Seatbelt profile."""
    interpreter_reads: tuple[str, ...] = ()
    """The child interpreter's own files, which its Seatbelt profile grants."""

    @property
    def root_kept(self) -> bool:
        """A root host whose child keeps host uid 0: bwrap started as root maps the sandbox to it;
        a landlock child without the uid drop stays it."""
        if os.geteuid() != 0 or self.backend not in ("bwrap", "landlock"):
            return False
        return (self.bwrap_as if self.backend == "bwrap" else self.drop_to) is None

    def predicted(self) -> IsolationReport:
        """What a child of this plan should report (replaced by a real report once one boots)."""
        if self.backend is None:
            return IsolationReport("process", "none", notes=(self.unavailable,))
        if self.backend == "unconfined":
            return IsolationReport("process", "none", ("rlimits",), None, self.notes)
        if self.backend == "sandbox-exec":
            return IsolationReport("process", "partial", ("sandbox-exec", "rlimits"), None, self.notes)
        layers = ["bwrap"] if self.backend == "bwrap" else []
        layers.append("rlimits")
        if self.drop_to is not None or self.bwrap_as is not None:
            layers.append("uid-drop")
        layers.append("no-new-privs")
        if self.landlock:
            layers.append("landlock")
        if self.seccomp:
            layers.append("seccomp")
        # As root, a child that keeps host uid 0 is partial: see achieved.
        full = (
            self.landlock
            and self.seccomp
            and self.landlock_abi is not None
            and self.landlock_abi >= 3
            and not self.root_kept
        )
        notes = self.notes
        if self.backend == "bwrap" and self.root_kept:
            notes += (_BWRAP_ROOT_NOTE,)
        return IsolationReport(
            "process", "full" if full else "partial", tuple(layers), self.landlock_abi, notes
        )

    def achieved(self, ready: ChildReport, host_notes: tuple[str, ...] = ()) -> IsolationReport:
        """What a child of this plan achieved: its ``ready`` report, with the outer sandbox, the
        host's uid drop and the host's notes added, and never more than this backend can give."""
        outer = self.backend if self.backend in ("bwrap", "sandbox-exec") else None
        layers = ((outer,) if outer is not None else ()) + ready.layers
        if self.bwrap_as is not None and "uid-drop" not in layers:
            # The host dropped the uid before starting bwrap (the child never was root to drop it):
            # listed where the in-child drop would be, as predicted() does.
            at = layers.index("rlimits") + 1 if "rlimits" in layers else 1
            layers = (*layers[:at], "uid-drop", *layers[at:])
        enforcement = "none" if self.backend == "unconfined" else ready.enforcement
        if self.backend == "sandbox-exec" and enforcement == "full":
            enforcement = "partial"  # never full on macOS, whatever the child says (see _SEATBELT_NOTE)
        notes = self.notes + host_notes + ready.notes
        if self.backend == "bwrap" and self.root_kept and enforcement == "full":
            # Honest report: bwrap started by root maps the sandbox's uid to host uid 0, so the program
            # owns every root-owned file it can see (found by the attack suite).
            enforcement = "partial"
            notes += (_BWRAP_ROOT_NOTE,)
        return IsolationReport("process", enforcement, layers, ready.landlock_abi, notes)


def resolve_plan(requested: BackendName, probes: ProbeResults, allow_unconfined: bool) -> Plan:
    """The rung of the ladder a runtime asking for ``requested`` uses on a host that probed as ``probes``
    (a :class:`Plan` whose ``backend`` is ``None``, with the reason, when there is none)."""
    if requested == "unconfined":
        return Plan(
            "unconfined",
            notes=("unconfined backend (allow_unconfined=True): only rlimits and host-side limits apply",),
        )
    darwin = sys.platform == "darwin"  # (a plain bool: mypy checks the rest on every platform)
    if darwin:
        return _darwin_plan(requested, probes, allow_unconfined)
    if requested == "sandbox-exec":
        return Plan(
            None,
            unavailable=f"sandbox-exec backend requested but unavailable: it is macOS's (this is "
            f"{sys.platform}); use backend='auto', 'bwrap' or 'landlock'",
        )
    abi = probes.landlock_abi
    bwrap_ok = probes.bwrap_works and probes.bwrap_path is not None and probes.bwrap_disable_userns
    bwrap: Plan | None = None
    if bwrap_ok:
        bwrap = Plan(
            "bwrap",
            bwrap_path=probes.bwrap_path,
            landlock=abi is not None,
            seccomp=probes.seccomp,
            landlock_abi=abi,
            notes=() if abi is not None else ("Landlock unavailable: bwrap namespaces + seccomp only",),
        )
        if os.geteuid() == 0:
            bwrap = _bwrap_root_plan(bwrap, probes)
    if requested == "auto" and (bwrap is None or bwrap.root_kept) and abi is not None and probes.seccomp:
        # As root, a bwrap that must be started as root maps the sandbox uid to host uid 0 (see
        # achieved), while the in-child layers drop to an unprivileged uid: prefer full enforcement.
        landlock = _landlock_plan(probes, abi)
        if not landlock.root_kept:
            return landlock
    if requested in ("auto", "bwrap") and bwrap is not None:
        return bwrap
    bwrap_reason = probes.bwrap_reason or "not found"
    if probes.bwrap_works and not probes.bwrap_disable_userns:
        bwrap_reason = "bwrap cannot use --unshare-user --disable-userns here"
    if requested == "bwrap":
        return Plan(None, unavailable=f"bwrap backend requested but unavailable: {bwrap_reason}")
    missing = []
    if abi is None:
        missing.append("Landlock (needs Linux >= 5.13 with the landlock LSM enabled)")
    if not probes.seccomp:
        missing.append("seccomp filters (needs x86_64 or aarch64 Linux)")
    if not missing:
        return _landlock_plan(probes, abi)
    if requested == "auto" and allow_unconfined:
        return Plan(
            "unconfined",
            notes=(
                "no confinement available (missing " + "; ".join(missing) + "); running UNCONFINED "
                "because allow_unconfined=True",
            ),
        )
    reason = "no confinement available: missing " + "; ".join(missing)
    if requested == "auto":
        reason += f"; no working bwrap ({bwrap_reason})"
    reason += "; pass allow_unconfined=True to run without a sandbox"
    return Plan(None, unavailable=reason)


_SEATBELT_NOTE = (
    "sandbox-exec: a Seatbelt profile (deny by default; the interpreter, its stdlib and the read paths "
    "readable, the work dir writable, no network, no fork) plus rlimits; partial: Seatbelt is "
    "deprecated by Apple and not kernel-namespaced like Linux (the host's process table and the "
    "metadata of granted paths' parents stay visible), and the profile is unverified on real macOS "
    "in this project's CI"
)


def _darwin_plan(requested: BackendName, probes: ProbeResults, allow_unconfined: bool) -> Plan:
    """macOS: ``sandbox-exec`` where it works (``partial``), else ``sandbox-unavailable`` (or, for
    ``auto`` with ``allow_unconfined``, unconfined)."""
    if requested in ("bwrap", "landlock"):
        return Plan(
            None,
            unavailable=f"{requested} backend requested but unavailable: it needs Linux (this is macOS); "
            "use backend='auto' or 'sandbox-exec'",
        )
    if probes.sandbox_exec_works and probes.sandbox_exec_path is not None:
        notes: tuple[str, ...] = (_SEATBELT_NOTE,)
        if os.geteuid() == 0:
            notes += ("host is root: the program runs as root under the profile (no uid drop on macOS)",)
        return Plan(
            "sandbox-exec",
            sandbox_exec=probes.sandbox_exec_path,
            interpreter_reads=probes.interpreter_reads,
            notes=notes,
        )
    missing = f"sandbox-exec ({probes.sandbox_exec_reason or 'not found'})"
    if requested == "auto" and allow_unconfined:
        note = (
            f"no confinement available (missing {missing}); running UNCONFINED because allow_unconfined=True"
        )
        return Plan("unconfined", notes=(note,))
    if requested == "sandbox-exec":
        return Plan(None, unavailable=f"sandbox-exec backend requested but unavailable: {missing}")
    return Plan(
        None,
        unavailable=f"no confinement available on macOS: missing {missing}; pass allow_unconfined=True "
        "to run without a sandbox",
    )


def _bwrap_root_plan(plan: Plan, probes: ProbeResults) -> Plan:
    """A root host starts bwrap as uid 65534, so the sandbox maps to that uid instead of host uid 0;
    the interpreter (or the fallback one) and the bootstrap must then work as that uid. When either
    cannot, bwrap is started as root and the plan says so (``partial``)."""
    if probes.bwrap_drop_problem is not None:
        return replace(plan, notes=(*plan.notes, f"uid drop skipped: {probes.bwrap_drop_problem}"))
    if probes.drop_problem is None:
        return replace(plan, bwrap_as=DROP_TO, bootstrap=probes.fallback_bootstrap)
    if probes.fallback_python is None:
        why = f"; {probes.fallback_problem}" if probes.fallback_problem else ""
        note = f"uid drop skipped ({probes.drop_problem}): no interpreter works as uid {DROP_TO[0]}{why}"
        return replace(plan, notes=(*plan.notes, note))
    note = (
        f"child interpreter {probes.fallback_python} (the host interpreter is not readable by uid "
        f"{DROP_TO[0]}: {probes.drop_problem})"
    )
    return replace(
        plan,
        bwrap_as=DROP_TO,
        python=probes.fallback_python,
        bootstrap=probes.fallback_bootstrap,
        notes=(*plan.notes, note),
    )


def _landlock_plan(probes: ProbeResults, abi: int | None) -> Plan:
    """In-child confinement alone. A root host drops the child to uid 65534; when its own
    interpreter would break as that uid, the child runs a fallback interpreter that does not, and
    only without one does it stay root (capabilities kept, ``partial``)."""
    plan = Plan("landlock", landlock=True, seccomp=True, landlock_abi=abi)
    if os.geteuid() != 0:
        return plan
    if probes.drop_problem is None:
        return replace(plan, drop_to=DROP_TO)
    uid = DROP_TO[0]
    if probes.fallback_python is not None:
        note = (
            f"child interpreter {probes.fallback_python} (the host interpreter is not readable by uid "
            f"{uid}: {probes.drop_problem})"
        )
        return replace(
            plan,
            drop_to=DROP_TO,
            python=probes.fallback_python,
            bootstrap=probes.fallback_bootstrap,
            notes=(note,),
        )
    why = f"; {probes.fallback_problem}" if probes.fallback_problem else ""
    note = (
        f"uid drop skipped ({probes.drop_problem}): the interpreter would break as uid {uid} and no "
        f"fallback interpreter works as that uid{why}; so the child stays root (capabilities kept) "
        "under Landlock and seccomp"
    )
    return replace(plan, notes=(note,))


# --- the bwrap command line ----------------------------------------------------------------


_BWRAP_ROOT_NOTE = (
    "bwrap started by root: the program runs as host uid 0 without capabilities and owns root-owned "
    "files in its view; run the host unprivileged or use backend='landlock' for full enforcement"
)


def bwrap_args(
    python: str, bootstrap: str, disk_bytes: int, read_paths: Sequence[str], boot_files: Sequence[str] = ()
) -> list[str]:
    """bwrap arguments: fresh namespaces, minimal read-only binds (the child's folder: the
    ``CHILD_FILES`` beside ``bootstrap``), a size-capped tmpfs work dir, no /proc or /sys; the
    child's environment is set here because bwrap itself gets none.
    ``boot_files`` are bound read-only for the child's boot only (the code table): its Landlock
    rules leave them out, so the program cannot read them."""
    args = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(DROP_TO[0]),
        "--gid",
        str(DROP_TO[1]),
    ]
    bound: list[str] = []

    def bind(path: str) -> None:
        if any(path == done or path.startswith(done.rstrip("/") + "/") for done in bound):
            return
        bound.append(path)
        args.extend(["--ro-bind", path, path])

    bind("/usr")
    for top in ("/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            args.extend(["--symlink", os.readlink(top), top])
        elif os.path.isdir(top):
            bind(top)
    executable = os.path.realpath(python)
    if executable == os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable):
        # This interpreter's stdlib may live outside /usr (a pyenv); a fallback interpreter's is
        # its own business, and this prefix may not even be readable by the uid bwrap runs as.
        bind(os.path.realpath(sys.base_prefix))
    bind(os.path.dirname(executable))
    # The child's folder, whose modules are CHILD_FILES (a test holds them equal; a uid-dropped
    # child's staged copy holds exactly them). One bind of the folder, not one per file: twelve
    # file binds cost a cold child 4-8 ms more here, and the folder holds nothing else but the
    # host-side package __init__ and its bytecode cache, which the child never loads.
    bind(os.path.dirname(os.path.realpath(bootstrap)))
    for extra in ("/etc/localtime", "/etc/ld.so.cache", *boot_files):
        if os.path.exists(extra):
            args.extend(["--ro-bind", extra, extra])
    for path in read_paths:
        if os.path.exists(path):
            bind(path)
    args.extend(
        [
            "--dev",
            "/dev",
            "--size",
            str(max(disk_bytes, 4096)),
            "--tmpfs",
            SANDBOX_WORKDIR,
            "--remount-ro",
            "/",
            "--chdir",
            SANDBOX_WORKDIR,
            "--setenv",
            "MALLOC_ARENA_MAX",
            "1",
        ]
    )
    return args
