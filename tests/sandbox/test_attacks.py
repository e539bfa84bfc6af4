"""The sandbox attack suite: contract §5.3 as model-written programs, judged by host-side evidence only.

Every attack in :data:`ATTACKS` is one or more programs run through ``PythonSandboxRuntime.run``,
parametrized over every backend variant on this machine (:data:`VARIANTS`: ``bwrap``, ``landlock``
and, as root with an interpreter the uid drop cannot use, ``landlock-syspython`` plus the degraded
``landlock-rootkept``); a missing backend is skipped with the probe's reason. The verdict never
comes from what the program prints: ``evidence.py`` supplies canaries, listeners, decoys, persistence
paths, an inheritable pipe, a signal counter and a ``/proc`` watcher, and :meth:`Ctx.finish` checks
all of them after *every* attack (plus the canary tokens in every result, the reaping of every child
and the isolation report of every run). Program output is used only as a secondary check (tag
``program``) where the kernel leaves nothing to observe, e.g. ``kill(-1, 0)``.

Known weaknesses are registered per backend as ``FINDING[<evidence tags>]: <what>``: the test xfails
only when exactly those evidence tags fire (any other failure stays a failure) and fails once they no
longer fire (fixed: remove the marker), so the suite stays green while documenting every weakness.

``test_the_evidence_detects_an_escape`` runs a selection of attacks on the explicit
``backend="unconfined"`` opt-in and asserts that the named evidence fires: the harness itself can fail.
``test_zz_a_full_backend_actually_ran`` fails (never skips) on Linux unless a run reported
``enforcement == "full"``, so a green run cannot hide an empty matrix.

Resource limits are short (wall 2-4 s, CPU 1-2 s) and independent runs of one attack are gathered.
Run it as root *and* as an unprivileged user (``.ci/run`` does both): capabilities, RLIMIT_NPROC and
``kill(-1)`` differ.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import attack_programs as P
import pytest
from evidence import (
    ENV_CANARY_NAME,
    IS_ROOT,
    Evidence,
    LaunchedResult,
    TreeWatcher,
    check,
    host_interfaces,
    pid_alive,
)

from toolrt.codemode._code_runtime import (
    NO_VALUE,
    CodeBindingNamespace,
    CodeErrorClass,
    CodeRunLimits,
    CodeRunRequest,
    CodeRunResult,
)
from toolrt.sandbox import ProbeResults, PythonSandboxRuntime
from toolrt.sandbox._backends.plan import probe_host

LINUX = sys.platform == "linux"
X86_64 = os.uname().machine == "x86_64" if hasattr(os, "uname") else False
DEFAULT_LIMITS = CodeRunLimits(
    wall_seconds=8, cpu_seconds=3, memory_bytes=512 << 20, output_bytes=8 << 20, value_bytes=16 << 20
)
DISK_BYTES = 16 << 20
RESULT_TIMEOUT = 90.0

pytestmark = pytest.mark.skipif(not LINUX, reason="the Python sandbox is Linux-only")


# --- backend variants -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way to run the sandbox: a backend, the child interpreter, and the predicted enforcement.

    ``no_fallback`` (root only) hides the fallback interpreter from the runtime, which then keeps the
    child root under Landlock + seccomp (``partial``): the state of a root host with no usable system
    Python, which the suite checks too.
    """

    label: str
    backend: str
    python: str | None
    available: bool
    reason: str = ""
    expected: str = "none"
    """The enforcement a benign run on this variant reported at collection (every attack run must match)."""
    predicted: str = "none"
    """What ``runtime.isolation`` said before any run (from the probes)."""
    no_fallback: bool = False

    @property
    def id(self) -> str:
        return f"{self.label}-{self.expected if self.available else 'unavailable'}"

    def probes(self) -> ProbeResults:
        probes = probe_host(self.python)
        if self.no_fallback:
            probes = dataclasses.replace(
                probes,
                fallback_python=None,
                fallback_bootstrap=None,
                fallback_problem="fallback interpreter disabled by the attack suite",
            )
        return probes

    def runtime(self, **kwargs: Any) -> PythonSandboxRuntime:
        if self.no_fallback:
            probes = self.probes()
            kwargs["_probe"] = lambda: probes
        return PythonSandboxRuntime(
            backend=self.backend,  # type: ignore[arg-type]
            python=self.python,
            allow_unconfined=self.backend == "unconfined",
            **kwargs,
        )


def _variants() -> list[Variant]:
    if not LINUX:
        return [
            Variant("bwrap", "bwrap", None, False, "not Linux"),
            Variant("landlock", "landlock", None, False, "not Linux"),
        ]
    probes = probe_host(None)
    out: list[Variant] = []
    if probes.bwrap_works and probes.bwrap_disable_userns:
        out.append(Variant("bwrap", "bwrap", None, True))
    else:
        why = probes.bwrap_reason or "not found"
        if probes.bwrap_works:
            why = "bwrap cannot --unshare-user --disable-userns here"
        out.append(
            Variant("bwrap", "bwrap", None, False, f"bwrap backend unavailable: {why} ({probes.bwrap_path})")
        )
    if probes.landlock_abi is not None and probes.seccomp:
        # As root with an interpreter uid 65534 cannot run (a pyenv under /root), the runtime itself
        # falls back to a system Python for the dropped child; the degraded no-fallback state is a
        # variant of its own.
        out.append(Variant("landlock", "landlock", None, True))
        if IS_ROOT and probes.drop_problem is not None:
            out.append(Variant("landlock-rootkept", "landlock", None, True, no_fallback=True))
    else:
        missing = []
        if probes.landlock_abi is None:
            missing.append("Landlock")
        if not probes.seccomp:
            missing.append("seccomp")
        out.append(
            Variant(
                "landlock", "landlock", None, False, "landlock backend unavailable: no " + " / ".join(missing)
            )
        )
    return [_measured(variant) if variant.available else variant for variant in out]


def _measured(variant: Variant) -> Variant:
    """The variant with its predicted and its achieved enforcement (one benign run)."""

    async def once() -> tuple[str, str]:
        runtime = variant.runtime(pool_size=0)
        predicted = runtime.isolation.enforcement
        try:
            result = await runtime.run(CodeRunRequest("return 1", []))
        finally:
            await runtime.aclose()
        return predicted, str(result.meta["isolation"]["enforcement"])

    predicted, achieved = asyncio.run(once())
    return dataclasses.replace(variant, expected=achieved, predicted=predicted)


VARIANTS = _variants()
UNCONFINED = Variant("unconfined", "unconfined", None, True, expected="none")
ISOLATION: dict[str, set[str]] = {}
"""Variant label -> enforcement values reported by the runs that actually happened."""


# --- tool bindings (host side) ----------------------------------------------------------------------


class Spy:
    """The run's only binding namespace: records every call; ``read_file`` enforces its own policy."""

    def __init__(self, ev: Evidence) -> None:
        self.ev = ev
        self.calls: list[tuple[str, Any]] = []
        self.served: list[str] = []

    def bindings(self) -> list[CodeBindingNamespace]:
        async def record(args: Any) -> Any:
            self.calls.append(("record", args))
            return "recorded"

        async def echo(args: Any) -> Any:
            self.calls.append(("echo", args))
            return args

        async def read_file(args: Any) -> Any:
            self.calls.append(("read_file", args))
            path = args.get("path") if isinstance(args, dict) else None
            if not isinstance(path, str) or not path or "\0" in path or os.path.isabs(path):
                raise ValueError("refused: a relative path is required")
            if ".." in Path(path).parts:
                raise ValueError("refused: '..' is not allowed")
            root = self.ev.tool_root.resolve()
            target = (root / path).resolve()
            if root not in target.parents:
                raise ValueError("refused: the path leaves the tool root")
            text = target.read_text()
            self.served.append(str(target))
            return text

        functions = {"record": record, "echo": echo, "read_file": read_file}
        return [CodeBindingNamespace("tools", functions, CodeErrorClass("ToolCallError", "toolName"))]


# --- the per-test context ---------------------------------------------------------------------------


@dataclass
class Ctx:
    variant: Variant
    ev: Evidence
    watcher: TreeWatcher
    spy: Spy
    request: pytest.FixtureRequest
    runtimes: list[PythonSandboxRuntime] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    allowed_calls: set[str] = field(default_factory=set)
    incomplete: list[str] = field(default_factory=list)
    _default: PythonSandboxRuntime | None = None

    def program(self, body: str, *, ctypes: bool = False, **extra: Any) -> str:
        text = P.PRELUDE + (P.CTYPES if ctypes else "") + body
        return Template(text).substitute({**self.ev.substitutions(), **extra})

    def runtime(self, **kwargs: Any) -> PythonSandboxRuntime:
        kwargs.setdefault("pool_size", 0)
        kwargs.setdefault("limits", DEFAULT_LIMITS)
        kwargs.setdefault("disk_bytes", DISK_BYTES)
        runtime = self.variant.runtime(**kwargs)
        self.runtimes.append(runtime)
        return runtime

    @property
    def default(self) -> PythonSandboxRuntime:
        if self._default is None:
            self._default = self.runtime()
        return self._default

    async def run(
        self,
        body: str,
        *,
        ctypes: bool = False,
        rt: PythonSandboxRuntime | None = None,
        extra: dict[str, Any] | None = None,
        completes: bool = True,
        **limits: Any,
    ) -> CodeRunResult:
        """Run one program. ``completes``: the program must end normally (it catches its own failed
        attempts), so a broken attack program cannot pass vacuously (checked in :meth:`finish`)."""
        program = self.program(body, ctypes=ctypes, **(extra or {}))
        request = CodeRunRequest(
            program, self.spy.bindings(), limits=CodeRunLimits(**limits) if limits else None
        )
        result = await asyncio.wait_for((rt or self.default).run(request), RESULT_TIMEOUT)
        self.note(result)
        if completes and result.error is not None:
            self.incomplete.append(f"{result.error.kind}: {result.error.message[-600:]}")
        return result

    async def launch(self, body: str, **extra: Any) -> LaunchedResult:
        """Run through a launcher process that carries canaries in its initial env and argv."""
        limits = {"wall_seconds": 8, "cpu_seconds": 3, "memory_bytes": 512 << 20}
        result = await self.ev.launch(
            self.watcher,
            self.program(body, **extra),
            backend=self.variant.backend,
            python=self.variant.python,
            probes=dataclasses.asdict(self.variant.probes()),
            limits=limits,
        )
        self.note(result)
        if result.error is not None:
            self.incomplete.append(f"{result.error[0]}: {result.error[1][-600:]}")
        return result

    def note(self, result: Any) -> None:
        self.results.append(result)
        isolation = result.meta.get("isolation", {})
        enforcement = isolation.get("enforcement")
        ISOLATION.setdefault(self.variant.label, set()).add(str(enforcement))
        line = f"isolation[{self.variant.label}]: {enforcement} layers={isolation.get('layers')}"
        print(line)
        self.request.node.user_properties.append(("isolation", line))

    async def finish(self) -> list[str]:
        failures: list[str] = []

        def collect(function: Callable[..., None], *args: Any) -> None:
            try:
                function(*args)
            except AssertionError as error:
                failures.append(str(error))

        for runtime in self.runtimes:
            try:
                await asyncio.wait_for(runtime.aclose(), 30)
            except Exception as error:  # pragma: no cover - reported, not hidden
                failures.append(f"EVIDENCE[runtime] aclose failed: {error!r}")
        await asyncio.sleep(0.12)  # a signalled decoy's trap runs after its current `sleep 0.05`
        self.watcher.stop()
        for result in self.results:
            collect(self.ev.assert_no_leak, result)
        collect(self.ev.assert_intact, self.watcher.program_pids)
        collect(self.watcher.assert_clean)
        collect(self._check_spy)
        collect(self._check_reaped)
        collect(self._check_isolation)
        if self.variant.backend != "unconfined":  # unconfined, an attack may well derail its own program
            collect(
                lambda: check(not self.incomplete, "program-ran", f"attack program failed: {self.incomplete}")
            )
        self.ev.close(self.watcher.program_pids)
        return failures

    def _check_spy(self) -> None:
        unexpected = [call for call in self.spy.calls if call[0] not in self.allowed_calls]
        check(not unexpected, "tool-spy", f"host bindings were invoked: {unexpected[:5]}")

    def _check_reaped(self) -> None:
        for result in self.results:
            pid = result.meta.get("pid")
            if isinstance(pid, int) and not isinstance(result, LaunchedResult):
                check(not pid_alive(pid), "reaped", f"sandbox child {pid} still alive after run() returned")

    def _check_isolation(self) -> None:
        for result in self.results:
            isolation = result.meta.get("isolation", {})
            enforcement = isolation.get("enforcement")
            check(
                enforcement == self.variant.expected,
                "isolation",
                f"run reported enforcement {enforcement!r}, the probes predicted {self.variant.expected!r}",
            )
            if self.variant.backend != "unconfined":
                layers = isolation.get("layers", [])
                for layer in ("rlimits", "no-new-privs", "seccomp"):
                    check(layer in layers, "isolation", f"layer {layer} missing from {layers}")
                if self.variant.expected == "full":
                    check("landlock" in layers, "isolation", f"a full run without landlock: {layers}")


async def execute(name: str, variant: Variant, request: pytest.FixtureRequest) -> None:
    """Run one attack on one variant, then every host-side check; raise one AssertionError with all."""
    attack = ATTACKS[name]
    ev = Evidence()
    watcher = TreeWatcher(
        exclude=[decoy.pid for decoy in ev.decoys],
        decoys=ev.decoys,
        canary_dir=str(ev.base),
        count_cwd=attack.count_cwd,
        watch_keys=attack.watch_keys,
        watch_files=[ev.secret, ev.victim],
        watch_locks=attack.watch_locks,
    ).start()
    ctx = Ctx(variant, ev, watcher, Spy(ev), request, allowed_calls=set(attack.allowed_calls))
    failures: list[str] = []
    try:
        try:
            await attack.fn(ctx)
        except AssertionError as error:
            failures.append(str(error))
    finally:
        failures.extend(await ctx.finish())
    if failures:
        programs = [repr(getattr(result, "value", None))[:1500] for result in ctx.results]
        errors = [getattr(result, "error", None) for result in ctx.results]
        raise AssertionError(
            "\n".join(failures) + f"\n--- program reports (secondary): {programs}\n--- errors: {errors}"
        )


# --- the attack registry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Attack:
    name: str
    items: str
    fn: Callable[[Ctx], Awaitable[None]]
    detect: str | None
    tags: tuple[str, ...]
    known: tuple[tuple[str, str], ...]
    count_cwd: bool
    watch_keys: bool
    allowed_calls: tuple[str, ...]
    watch_locks: bool = False

    def finding(self, variant: Variant) -> str | None:
        """The known weakness on this variant: keys are ``backend`` or ``backend:enforcement``."""
        for key, reason in self.known:
            backend, _, enforcement = key.partition(":")
            if variant.backend == backend and enforcement in ("", variant.expected):
                return reason
        return None


ATTACKS: dict[str, Attack] = {}


def attack(
    name: str,
    items: str,
    *,
    detect: str | None = None,
    tags: tuple[str, ...] = (),
    known: dict[str, str] | None = None,
    count_cwd: bool = False,
    watch_keys: bool = False,
    allowed_calls: tuple[str, ...] = (),
    watch_locks: bool = False,
) -> Callable[[Callable[[Ctx], Awaitable[None]]], Callable[[Ctx], Awaitable[None]]]:
    """Register an attack. ``detect`` ("any"/"root"): the self-test runs it unconfined and expects one
    of ``tags`` to fire; ``known``: backend -> FINDING reason (strict xfail on that backend)."""

    def register(function: Callable[[Ctx], Awaitable[None]]) -> Callable[[Ctx], Awaitable[None]]:
        assert name not in ATTACKS, name
        ATTACKS[name] = Attack(
            name,
            items,
            function,
            detect,
            tags,
            tuple((known or {}).items()),
            count_cwd,
            watch_keys,
            allowed_calls,
            watch_locks,
        )
        return function

    return register


def kind(result: Any) -> str | None:
    error = result.error
    if error is None:
        return None
    return error[0] if isinstance(error, list) else error.kind


def message(result: Any) -> str:
    error = result.error
    if error is None:
        return ""
    return error[1] if isinstance(error, list) else error.message


def report(result: Any) -> dict[str, Any]:
    return result.value if isinstance(result.value, dict) else {}


def program_denied(result: Any, *prefixes: str) -> None:
    """Secondary check on the program's own report: every attempt under ``prefixes`` failed."""
    entries = report(result)
    for key, entry in entries.items():
        if any(key.startswith(prefix) for prefix in prefixes):
            check(isinstance(entry, list) and entry[:1] == ["err"], "program", f"{key} succeeded: {entry}")


def expect_kind(result: Any, *kinds: str, tag: str = "result-kind") -> None:
    check(kind(result) in kinds, tag, f"expected {kinds}, got {kind(result)!r}: {message(result)[:300]}")


def seconds(result: Any) -> float:
    return float(result.meta.get("durationMs", 0)) / 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


# --- filesystem (contract SA1–SA7) --------------------------------------------------------------------


@attack("fs-read-secret", "1", detect="any", tags=("leak-secret-file", "leak-passwd"))
async def _fs_read_secret(ctx: Ctx) -> None:
    result = await ctx.run(P.READ_SECRET)
    program_denied(result, f"open:{ctx.ev.secret}", "open:/etc/passwd")


@attack("fs-list-home-dotfiles", "2", detect="any", tags=("leak-ssh-key-name", "leak-ssh-key"))
async def _fs_list_home(ctx: Ctx) -> None:
    await ctx.run(P.LIST_HOME)


@attack("fs-write-outside-workdir", "3", detect="any", tags=("fs-write",))
async def _fs_write(ctx: Ctx) -> None:
    await ctx.run(P.WRITE_OUTSIDE)


@attack("fs-persist-tmp-devshm", "3", detect="any", tags=("fs-persist",))
async def _fs_persist(ctx: Ctx) -> None:
    first = await ctx.run(P.PERSIST_WRITE)
    for path in ctx.ev.persist:
        check(not path.exists(), "fs-persist", f"{path} exists on the host after the run")
    value = first.value
    if ctx.variant.backend != "bwrap" and isinstance(value, list) and len(value) == 2:
        check(not os.path.exists(str(value[1])), "fs-persist", f"the work dir {value[1]} survived the run")
    second = await ctx.run(P.PERSIST_READ)
    check(
        second.error is None and second.value == {"exists": [], "workdir": []},
        "fs-persist-second-run",
        f"a second run saw state of the first: {second.value!r} {second.error}",
    )


@attack("fs-symlink-to-secret", "4", detect="any", tags=("leak-secret-file", "leak-passwd"))
async def _fs_symlink(ctx: Ctx) -> None:
    await ctx.run(P.SYMLINK)


@attack("fs-hardlink-to-secret", "4", detect="any", tags=("fs-hardlink", "watcher-link"))
async def _fs_hardlink(ctx: Ctx) -> None:
    await ctx.run(P.HARDLINK)


@attack("fs-rename-refer", "4", detect="any", tags=("fs-rename",))
async def _fs_rename(ctx: Ctx) -> None:
    await ctx.run(P.RENAME)


@attack("fs-metadata-chmod-chown-utime-xattr", "3, 26", detect="any", tags=("fs-metadata",))
async def _fs_metadata(ctx: Ctx) -> None:
    await ctx.run(P.METADATA)


@attack(
    "fs-stat-metadata-probe",
    "5",
    detect="any",
    tags=("leak-secret-mtime",),
    known={
        "landlock": (
            "FINDING[leak-secret-mtime,leak-secret-mtime-s] (documented as contract SA5 / SW1): "
            "Landlock does not cover stat(); a confined program learns the existence, size and mtime of any "
            "host path"
        )
    },
)
async def _fs_stat(ctx: Ctx) -> None:
    await ctx.run(P.STAT_PROBE)


@attack("fs-disk-fill", "6")
async def _fs_disk_fill(ctx: Ctx) -> None:
    many, one, sparse = await asyncio.gather(
        ctx.run(P.DISK_MANY, wall_seconds=4, completes=False),
        ctx.run(P.DISK_ONE, wall_seconds=4, completes=False),
        ctx.run(P.DISK_SPARSE, wall_seconds=4, completes=False),
    )
    for result in (many, one, sparse):
        expect_kind(result, "disk-limit")
        check(result.value != "finished", "disk", "the disk fill completed")


@attack(
    "fs-inode-exhaustion",
    "6",
    count_cwd=True,
)
async def _fs_inodes(ctx: Ctx) -> None:
    result = await ctx.run(P.INODE_FILL, wall_seconds=4, completes=False)
    created = result.value[1] if isinstance(result.value, list) and len(result.value) > 1 else 0
    check(
        kind(result) == "disk-limit" or (isinstance(created, int) and created <= 20_000),
        "disk-inodes",
        f"created {created} files ({kind(result)})",
    )
    if "work dir entries" not in ctx.watcher.unobservable:
        check(
            ctx.watcher.max_cwd_entries <= 20_000,
            "disk-inodes",
            f"the host saw {ctx.watcher.max_cwd_entries} entries in the work dir",
        )


@attack(
    "fs-disk-fill-unlinked-files",
    "6",
    detect="any",
    tags=("disk-unlinked",),
    known={
        "landlock": (
            "FINDING[disk-unlinked]: the host's disk quota polls the work dir's entries, so bytes written to "
            "open-but-unlinked files are invisible: 280 MB against an 8 MB quota here (up to RLIMIT_NOFILE x "
            "RLIMIT_FSIZE = 128 x disk_bytes on the host's /tmp)"
        )
    },
)
async def _fs_unlinked(ctx: Ctx) -> None:
    quota = 8 << 20
    rt = ctx.runtime(disk_bytes=quota)
    result = await ctx.run(P.DISK_UNLINKED, rt=rt, wall_seconds=4, completes=False)
    total = result.value[0] if isinstance(result.value, list) and result.value else 0
    check(
        kind(result) == "disk-limit" or (isinstance(total, int) and total <= 2 * quota),
        "disk-unlinked",
        f"wrote {total} bytes into unlinked files against a {quota}-byte quota ({kind(result)})",
    )
    if "fds" not in ctx.watcher.unobservable:
        check(
            ctx.watcher.max_deleted_bytes <= 2 * quota,
            "disk-unlinked",
            f"the host saw {ctx.watcher.max_deleted_bytes} bytes held in unlinked files",
        )


@attack(
    "fs-workdir-cleanup-deep-tree-locked-dir",
    "3, 6, 33",
    allowed_calls=("record",),
)
async def _fs_cleanup(ctx: Ctx) -> None:
    result = None
    try:
        result = await ctx.run(P.HOST_CLEANUP, completes=False)
    except Exception as error:
        check(False, "host-crash", f"run() raised {error!r} instead of returning a result")
    finally:
        cwds = [
            args.get("cwd") for name, args in ctx.spy.calls if name == "record" and isinstance(args, dict)
        ]
        left = [
            cwd
            for cwd in cwds
            if isinstance(cwd, str) and cwd.startswith("/tmp/toolrt-run-") and os.path.exists(cwd)
        ]
        with ctx.watcher.paused():  # clean up for the next test (shutil.rmtree cannot)
            for cwd in left:
                subprocess.run(["chmod", "-R", "u+rwx", cwd], check=False, capture_output=True)
                subprocess.run(["rm", "-rf", cwd], check=False, capture_output=True)
    check(cwds, "program-ran", "the program did not report its work dir")
    # The 3000-deep tree either finishes before the disk poll's first look or is stopped by its depth
    # cap (128); the host must clean up after it either way.
    error = None if result is None else result.error
    check(error is None or error.kind == "disk-limit", "program-ran", f"the program ended with {error!r}")
    check(not left, "fs-persist", f"the host left the work dir behind: {left}")


@attack("fs-import-site-packages", "7", detect="any", tags=("leak-import", "fs-write"))
async def _fs_import(ctx: Ctx) -> None:
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    result = await ctx.run(P.IMPORT_SITE, extra={"site_paths": paths})
    program_denied(result, "import:pytest", "import:toolrt", f"import:{ctx.ev.module}")


# --- environment and /proc (contract SA8–SA11) --------------------------------------------------------


@attack("env-os-environ-proc-self", "8, 9")
async def _env(ctx: Ctx) -> None:
    result = await ctx.run(P.ENVIRON)
    environ = report(result).get("environ")
    if isinstance(environ, list) and environ[:1] == ["ok"]:
        check(ctx.ev.substitutions()["env_name"] not in environ[1], "program", f"environment: {environ}")


@attack(
    "env-proc-parent-environ-cmdline-fds",
    "10, 11",
    detect="any",
    tags=("leak-launcher-env", "leak-launcher-argv", "leak-secret-file"),
)
async def _env_parent(ctx: Ctx) -> None:
    await ctx.launch(P.PROC_PARENT)


@attack(
    "proc-host-pids-sys-identity", "11", detect="any", tags=("leak-boot_id", "leak-machine-id", "host-pids")
)
async def _host_info(ctx: Ctx) -> None:
    result = await ctx.run(P.HOST_INFO)
    macs = {}
    for name in os.listdir("/sys/class/net") if os.path.isdir("/sys/class/net") else ():
        address = (Path("/sys/class/net") / name / "address").read_text().strip() if name != "lo" else ""
        if address and address != "00:00:00:00:00:00":
            macs[f"mac-{name}"] = address
    ctx.ev.assert_no_leak(result, extra=macs)
    listing = report(result).get("proc-list")
    if isinstance(listing, list) and listing[:1] == ["ok"]:
        visible = [
            pid
            for pid in (os.getpid(), *(d.pid for d in ctx.ev.decoys))
            if re.search(rf"\b{pid}\b", listing[1])
        ]
        check(not visible, "host-pids", f"host pids visible in the sandbox's /proc: {visible}")


# --- network (contract SA12–SA17) ---------------------------------------------------------------------


@attack("net-tcp-loopback", "12, 16", detect="any", tags=("listener",))
async def _tcp(ctx: Ctx) -> None:
    await ctx.run(P.TCP)


@attack("net-udp-dns", "13", detect="any", tags=("listener",))
async def _udp(ctx: Ctx) -> None:
    await ctx.run(P.UDP)


@attack("net-tcp-listen-inbound", "14", detect="any", tags=("inbound-listen",))
async def _listen(ctx: Ctx) -> None:
    port = free_port()

    async def knock() -> list[str]:
        hits: list[str] = []
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline and not hits:
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 0.2)
            except (OSError, TimeoutError):
                await asyncio.sleep(0.05)
                continue
            hits.append(f"connected to 127.0.0.1:{port}")
            writer.close()
        return hits

    _, hits = await asyncio.gather(ctx.run(P.TCP_LISTEN, extra={"listen_port": port}), knock())
    check(not hits, "inbound-listen", f"the host reached a port the program listened on: {hits}")


@attack("net-unix-pathname-abstract-dgram", "15", detect="any", tags=("listener",))
async def _unix(ctx: Ctx) -> None:
    await ctx.run(P.UNIX)


@attack("net-metadata-netlink-packet-vsock", "16", detect="any", tags=("sockets",))
async def _net_other(ctx: Ctx) -> None:
    result = await ctx.run(P.NET_OTHER)
    if "fds" not in ctx.watcher.unobservable:
        check(
            ctx.watcher.max_sockets <= 1,
            "sockets",
            f"the program held {ctx.watcher.max_sockets} sockets (only the channel is allowed)",
        )
    program_denied(result, "metadata", "netlink", "packet", "inet-raw", "vsock", "inet6")


@attack("net-raw-socket-via-ctypes", "17", detect="any", tags=("listener",))
async def _raw_socket(ctx: Ctx) -> None:
    await ctx.run(P.RAW_SOCKET, ctypes=True)
    if "fds" not in ctx.watcher.unobservable:
        check(ctx.watcher.max_sockets <= 1, "sockets", f"{ctx.watcher.max_sockets} socket fds")


@attack("net-io-uring-setup", "17", detect="any", tags=("watcher-kobj",))
async def _io_uring(ctx: Ctx) -> None:
    result = await ctx.run(P.IO_URING, ctypes=True)
    program_denied(result, "io_uring_setup")


# --- processes and the kernel surface (contract SA18–SA22) ---------------------------------------------


@attack("proc-exec-subprocess-system-spawn-execv", "18", detect="any", tags=("fs-write", "watcher-exec"))
async def _exec(ctx: Ctx) -> None:
    # os.system() and libc system() report a failed fork as -1, not as an exception: the markers
    # and the watcher are the evidence here.
    await asyncio.gather(*(ctx.run(body) for body in P.EXEC_VARIANTS.values()))


@attack("proc-memfd-execveat", "18", detect="any", tags=("fs-write", "watcher-exec", "watcher-kobj"))
async def _memfd_exec(ctx: Ctx) -> None:
    await ctx.run(P.MEMFD_EXEC, ctypes=True)


@attack("proc-fork-once", "19", detect="any", tags=("tool-spy", "watcher-fork", "fs-write"))
async def _fork(ctx: Ctx) -> None:
    result = await ctx.run(P.FORK)
    program_denied(result, "fork")


@attack("proc-fork-bomb-bounded", "19", detect="any", tags=("watcher-fork",))
async def _fork_bomb(ctx: Ctx) -> None:
    result = await ctx.run(P.FORK_BOMB)
    check(report(result).get("forked") in (0, None), "program", f"forked: {report(result)}")


@attack("proc-double-fork-setsid-survivor", "19", detect="any", tags=("fs-write", "survivor", "watcher-fork"))
async def _double_fork(ctx: Ctx) -> None:
    started = time.monotonic()
    await ctx.run(P.DOUBLE_FORK)
    await asyncio.sleep(max(0.0, 1.8 - (time.monotonic() - started)))
    marker = Path(ctx.ev.substitutions()["m_survivor"])
    check(not marker.exists(), "survivor", "a double-forked process survived the run and wrote its marker")


@attack("ns-unshare-clone-setns", "20", detect="any", tags=("watcher-ns", "watcher-fork", "fs-write"))
async def _namespaces(ctx: Ctx) -> None:
    result = await ctx.run(P.NAMESPACES, ctypes=True)
    program_denied(result, "unshare", "clone", "setns")


@attack(
    "kernel-bpf-perf-keyctl-userfaultfd-mount", "21", detect="any", tags=("watcher-kobj",), watch_keys=True
)
async def _kernel_surface(ctx: Ctx) -> None:
    result = await ctx.run(P.KERNEL_SURFACE, ctypes=True)
    program_denied(
        result,
        "bpf",
        "perf",
        "userfaultfd",
        "add_key",
        "keyctl",
        "mount-syscall",
        "ptrace",
        "personality",
        "memfd",
    )


@attack("ipc-sysv-posix-shm", "3, 21", detect="any", tags=("ipc", "fs-persist"))
async def _ipc(ctx: Ctx) -> None:
    await ctx.run(P.IPC, ctypes=True)


@attack("abi-int80-and-x32-syscalls", "21", detect="any", tags=("decoy-",))
async def _abi(ctx: Ctx) -> None:
    if not X86_64:
        pytest.skip("int 0x80 and x32 are x86_64 ABIs")
    started = time.monotonic()
    int80, x32 = await asyncio.gather(
        ctx.run(P.INT80_KILL, completes=False), ctx.run(P.X32_KILL, completes=False)
    )
    await asyncio.sleep(max(0.0, started + 0.5 - time.monotonic()))  # a signalled decoy's trap: give it time
    if ctx.variant.backend != "unconfined":
        for result in (int80, x32):
            # The exit status comes from the host's wait4 (bwrap's init relays it as 128 + n).
            expect_kind(result, "worker-exit", tag="seccomp-kill")
            check("SIGSYS" in message(result), "seccomp-kill", f"not killed by the filter: {message(result)}")


THREAD_TAGS = ("listener", "leak-secret-file", "decoy-", "watcher-fork", "watcher-thread")


@attack("threads-all-carry-the-filter", "22", detect="any", tags=THREAD_TAGS)
async def _threads(ctx: Ctx) -> None:
    await ctx.run(P.THREADS)


@attack("threads-on-a-warm-pool-child", "22")
async def _threads_warm(ctx: Ctx) -> None:
    rt = ctx.runtime(pool_size=1)
    await rt.warm()
    result = await ctx.run(P.THREADS, rt=rt)
    check(result.meta.get("warm") is True, "warm", "the run did not use a warm (pre-imported) child")


# --- other processes and the host (contract SA23–SA26) --------------------------------------------------


@attack("signals-parent-minus1-decoy", "23", detect="any", tags=("signal-host", "decoy-", "kill-minus1"))
async def _signals(ctx: Ctx) -> None:
    result = await ctx.run(P.SIGNALS, ctypes=True)
    entry = report(result).get("kill-minus1-0")
    # kill(-1, 0) has no observable effect by design (never send a real signal to -1): program report.
    check(isinstance(entry, list) and entry[:1] == ["err"], "kill-minus1", f"kill(-1, 0) succeeded: {entry}")


@attack("ptrace-procmem-vmreadv-decoy", "24", detect="any", tags=("watcher-decoy", "leak-decoy-"))
async def _ptrace(ctx: Ctx) -> None:
    result = await ctx.run(P.PTRACE, ctypes=True)
    program_denied(result, "seize", "attach", "process_vm_readv", "peek")


@attack("fd-inherited-scan", "25")
async def _fds(ctx: Ctx) -> None:
    result = await ctx.run(P.FD_INHERIT)
    check(sorted(report(result)) == ["3"], "program-fds", f"fds open in the sandbox: {report(result)}")


@attack(
    "rlimits-raise-nice-realtime",
    "26",
    detect="any",
    tags=("watcher-rlimit", "watcher-nice", "watcher-sched", "decoy-"),
)
async def _rlimits(ctx: Ctx) -> None:
    result = await ctx.run(P.RLIMITS)
    program_denied(result, "setrlimit", "prlimit", "nice", "setpriority", "sched")


@attack("capabilities-and-credentials", "26", detect="root", tags=("capabilities",))
async def _capabilities(ctx: Ctx) -> None:
    await ctx.run(P.CAPABILITIES)
    watcher = ctx.watcher
    print(
        f"capabilities[{ctx.variant.label}]: CapEff={sorted(watcher.capeff)}"
        f" NoNewPrivs={sorted(watcher.no_new_privs)} host-uids={sorted(watcher.host_uids)}"
        f" nproc={sorted(watcher.nproc)}"
    )
    has_caps = any(cap.strip("0") for cap in watcher.capeff)
    if ctx.variant.expected == "full" or ctx.variant.backend == "unconfined":
        check(not has_caps, "capabilities", f"a sandboxed task holds capabilities: {sorted(watcher.capeff)}")
    elif has_caps:  # a partial report must be honest: a child that kept capabilities says so
        notes = " ".join(" ".join(r.meta["isolation"].get("notes", [])) for r in ctx.results)
        check("capabilities" in notes, "capabilities", f"CapEff {watcher.capeff} but notes: {notes[:300]}")
    if ctx.variant.backend != "unconfined":
        check(watcher.no_new_privs <= {"1"}, "capabilities", f"NoNewPrivs {watcher.no_new_privs}")
        if watcher.host_uids and "0" not in watcher.host_uids:
            check(
                all(limit.isdigit() and int(limit) <= 64 for limit in watcher.nproc),
                "nproc",
                f"an unprivileged sandbox without RLIMIT_NPROC: {watcher.nproc}",
            )


@attack(
    "host-uid-of-the-program",
    "26",
    detect="root",
    tags=("host-uid", "leak-root-only-file"),
    # Fixed finding: bwrap started by root mapped the sandbox's uid 65534 to host uid 0 (uid_map
    # '65534 0 1'), owner of every root-owned file in its view; a root host now starts bwrap as uid
    # 65534, and where it cannot, the report says partial.
)
async def _host_uid(ctx: Ctx) -> None:
    await ctx.run(P.CAPABILITIES)
    if IS_ROOT and ctx.variant.expected != "partial":  # a partial (root-kept) child reads it, and says so
        # What kuid 0 means in practice: a root-only (0600) file under a granted read path.
        private = Path(tempfile.mkdtemp(prefix="toolrt-attack-private-"))
        try:
            private.chmod(0o755)
            token = "privateX" + secrets.token_hex(16)
            (private / "root-only").write_text(token)
            (private / "root-only").chmod(0o600)
            rt = ctx.runtime(read_paths=[str(private)])
            result = await ctx.run(
                f"return open({str(private / 'root-only')!r}).read()", rt=rt, completes=False
            )
            ctx.ev.assert_no_leak(result, extra={"root-only-file": token})
        finally:
            shutil.rmtree(private, ignore_errors=True)
    uids = ctx.watcher.host_uids
    print(f"host-uid[{ctx.variant.label}]: {sorted(uids)}")
    if ctx.variant.expected == "full" or ctx.variant.backend == "unconfined":
        check(uids and "0" not in uids, "host-uid", f"the program runs as host uid(s) {sorted(uids)}")
    elif "0" in uids:  # partial: the report must say why
        notes = " ".join(" ".join(r.meta["isolation"].get("notes", [])) for r in ctx.results)
        check("root" in notes, "host-uid", f"a partial run as host uid 0 without saying so: {notes[:300]}")


# --- resources and liveness (contract SA27–SA32) ------------------------------------------------------


@attack("cpu-busy-sigxcpu-threads", "27, 32")
async def _cpu(ctx: Ctx) -> None:
    results = await asyncio.gather(
        *(
            ctx.run(body, cpu_seconds=1, wall_seconds=5, completes=False)
            for body in (P.CPU_BUSY, P.CPU_IGNORE_SIGXCPU, P.CPU_THREADS)
        )
    )
    for result in results:
        expect_kind(result, "cpu-limit")
        check(seconds(result) < 5, "cpu", f"took {seconds(result):.1f}s")


@attack("wall-sleep-select-blocking-read", "27")
async def _wall(ctx: Ctx) -> None:
    results = await asyncio.gather(
        *(ctx.run(body, wall_seconds=2, completes=False) for body in P.WALL_VARIANTS.values())
    )
    for result in results:
        expect_kind(result, "timeout")
        check(1.9 <= seconds(result) < 4, "wall", f"wall kill after {seconds(result):.2f}s")


@attack("memory-bomb", "28")
async def _memory(ctx: Ctx) -> None:
    limit = 256 << 20
    names = list(P.MEMORY_VARIANTS)
    results = await asyncio.gather(
        *(
            ctx.run(P.MEMORY_VARIANTS[name], memory_bytes=limit, wall_seconds=4, completes=False)
            for name in names
        )
    )
    for name, result in zip(names, results, strict=True):
        check(result.error is not None, "memory", f"{name} completed: {result.value!r}")
        if name != "mmap-8GiB":
            expect_kind(result, "memory-limit", tag="memory")
    check(
        ctx.watcher.max_rss_kb * 1024 <= limit + (64 << 20),
        "memory",
        f"the host saw a sandbox RSS of {ctx.watcher.max_rss_kb} kB against a {limit}-byte limit",
    )


@attack("thread-bomb-bounded", "28")
async def _thread_bomb(ctx: Ctx) -> None:
    result = await ctx.run(P.THREAD_BOMB, wall_seconds=4, completes=False)
    print(
        f"thread-bomb[{ctx.variant.label}]: peak threads {ctx.watcher.max_threads}, report {result.value!r}"
    )
    check(ctx.watcher.max_threads < 5000, "threads", f"{ctx.watcher.max_threads} threads")
    started = result.value[0] if isinstance(result.value, list) else 0
    check(started < 5000 or result.error is not None, "threads", f"started {started} threads")


@attack("output-flood", "29")
async def _output(ctx: Ctx) -> None:
    limit = 1 << 20
    results = await asyncio.gather(
        *(
            ctx.run(body, output_bytes=limit, wall_seconds=4, completes=False)
            for body in P.OUTPUT_VARIANTS.values()
        )
    )
    for result in results:
        expect_kind(result, "output-limit")
        check(sum(len(line.encode()) for line in result.logs) <= limit, "output", "logs exceed the cap")
        check(seconds(result) < 3.5, "output", f"took {seconds(result):.1f}s")


@attack("output-binary-ansi-no-newline", "29")
async def _output_binary(ctx: Ctx) -> None:
    result = await ctx.run(P.OUTPUT_BINARY, completes=False)
    check(kind(result) in (None, "exception"), "output", f"{kind(result)}: {message(result)[:200]}")
    assert all(isinstance(line, str) for line in result.logs)


@attack("recursion-bignum-regex", "30")
async def _recursion(ctx: Ctx) -> None:
    names = list(P.RECURSION_VARIANTS)
    results = await asyncio.gather(
        *(
            ctx.run(P.RECURSION_VARIANTS[name], cpu_seconds=1, wall_seconds=4, completes=False)
            for name in names
        )
    )
    for name, result in zip(names, results, strict=True):
        check(result.error is not None, "recursion", f"{name} completed: {result.value!r}")
        expect_kind(result, "worker-exit", "exception", "cpu-limit", "memory-limit")
        check(seconds(result) < 4.5, "recursion", f"{name} took {seconds(result):.1f}s")


@attack("atexit-daemon-thread-hang-after-done", "31, 36")
async def _atexit(ctx: Ctx) -> None:
    hang, bomb = await asyncio.gather(
        ctx.run(P.ATEXIT_HANG, wall_seconds=3), ctx.run(P.DEL_HANG, wall_seconds=3, completes=False)
    )
    check(hang.error is None and hang.value == "done", "hang", f"{hang.value!r} {hang.error}")
    check(seconds(hang) < 2.5, "hang", f"the host waited {seconds(hang):.1f}s for a finished program")
    # A __del__ of a program local runs when the program's coroutine ends, i.e. still inside the
    # run: the wall clock bounds it.
    expect_kind(bomb, "timeout", tag="hang")
    check(seconds(bomb) < 4, "hang", f"took {seconds(bomb):.1f}s")


@attack("pid1-default-action-signals", "32")
async def _pid1(ctx: Ctx) -> None:
    result = await ctx.run(P.PID1_SIGNALS, completes=False)
    expect_kind(result, "worker-exit", tag="pid1")
    check("SIGSEGV" in message(result), "pid1", f"SIGSEGV was ignored: {message(result)} {result.value!r}")


# --- protocol, tools, host parsing, reflection (contract SA33–SA36) ----------------------------------------


PROTOCOL_EXPECTED = {
    "fake-done": (None, ""),
    "second-completion": ("worker-exit", "a second completion"),
    "reply-from-child": ("worker-exit", "protocol violation"),
    "second-ready": ("worker-exit", "protocol violation"),
    "junk-json": ("worker-exit", "protocol violation"),
    "oversized-length": ("worker-exit", "protocol violation"),
    "deep-json": ("worker-exit", "protocol violation"),
    "unknown-namespace": ("worker-exit", "unknown binding global"),
    "dunder-names": (None, ""),
    "reused-id": ("worker-exit", "protocol violation"),
    "nan-args": ("worker-exit", "protocol violation"),
    "extra-field": ("worker-exit", "protocol violation"),
    "partial-frame": ("worker-exit", ""),
    "huge-log": ("output-limit", ""),
    "done-invalid-kind": ("worker-exit", "protocol violation"),
}


@attack("protocol-forged-frames", "33")
async def _protocol(ctx: Ctx) -> None:
    names = list(P.PROTOCOL_VARIANTS)
    assert set(names) == set(PROTOCOL_EXPECTED)
    results = await asyncio.gather(
        *(
            ctx.run(
                P.FRAME + P.PROTOCOL_VARIANTS[name], wall_seconds=6, output_bytes=1 << 20, completes=False
            )
            for name in names
        )
    )
    for name, result in zip(names, results, strict=True):
        expected_kind, fragment = PROTOCOL_EXPECTED[name]
        check(
            kind(result) == expected_kind and fragment in message(result),
            "protocol",
            f"{name}: expected {expected_kind} ({fragment!r}), got {kind(result)}: {message(result)[:200]}",
        )
    check(
        results[names.index("fake-done")].value == "forged", "protocol", "a forged done was not taken as-is"
    )
    replies = results[names.index("dunder-names")].value
    check(
        isinstance(replies, list)
        and len(replies) == 5
        and all("unknown binding" in reply for reply in replies),
        "protocol",
        f"dunder/NUL binding names were not refused: {replies!r}",
    )
    after = await ctx.run("return 41 + 1")
    check(after.value == 42, "protocol", f"the runtime broke after hostile frames: {after.error}")


@attack("tool-unknown-names", "34")
async def _tool_unknown(ctx: Ctx) -> None:
    result = await ctx.run(P.TOOL_UNKNOWN)
    entries = report(result)
    check(
        entries and all(entry[0] == "err" for key, entry in entries.items() if key != "getattr-dunder"),
        "tool-names",
        f"an unknown binding name resolved: {entries}",
    )


@attack("tool-path-traversal", "34", allowed_calls=("read_file",))
async def _tool_traversal(ctx: Ctx) -> None:
    result = await ctx.run(P.TOOL_TRAVERSAL)
    served = ctx.spy.served
    check(
        served == [str((ctx.ev.tool_root / "ok.txt").resolve())],
        "tool-policy",
        f"the tool served {served}",
    )
    check(report(result).get("'ok.txt'") == ["ok", "fine\n"], "tool-policy", "the legitimate read failed")


@attack("no-pickle-or-eval-of-results", "35")
async def _pickle(ctx: Ctx) -> None:
    plain, evil = await asyncio.gather(ctx.run(P.PICKLE_EVAL), ctx.run(P.PICKLE_OBJECT, completes=False))
    value = plain.value
    check(isinstance(value, dict) and plain.error is None, "pickle", f"{plain.error}")
    check(
        isinstance(value["pickle"], str) and value["pickle"].startswith("cos\nsystem\n"),
        "pickle",
        repr(value),
    )
    check(isinstance(value["eval"], str), "pickle", repr(value))
    expect_kind(evil, "invalid-output", tag="pickle")
    check(evil.value is NO_VALUE, "pickle", repr(evil.value))


@attack("reflection-gc-frames-format", "36")
async def _reflection(ctx: Ctx) -> None:
    result = await ctx.run(P.REFLECTION)
    modules = report(result).get("modules", [])
    host_modules = [
        name for name in modules if name.split(".")[0] in ("pytest", "_pytest", "toolrt", "evidence")
    ]
    check(result.error is None and modules, "reflection", f"{result.error}")
    check(not host_modules, "reflection", f"host modules reachable in the sandbox: {host_modules}")


@attack("del-time-bomb-after-done", "36")
async def _del_bomb(ctx: Ctx) -> None:
    result = await ctx.run(P.DEL_TIME_BOMB)
    check(
        result.value == "done" or kind(result) == "worker-exit",
        "time-bomb",
        f"{result.value!r} {result.error}",
    )


# --- issue 12: host-side weaknesses a security review reproduced --------------------------------------


@attack("fs-disk-fill-unreadable-dir", "6")
async def _fs_unreadable_dir(ctx: Ctx) -> None:
    """A directory the program makes unreadable to the host (it owns it; ``fchmod`` is allowed on an
    fd Landlock opened) must stop the run, not hide its bytes from the disk poll. Root hosts read it
    anyway; the unprivileged run is the one that found it (112 MiB past a 64 MiB quota)."""
    quota = 8 << 20
    rt = ctx.runtime(disk_bytes=quota)
    results = await asyncio.gather(
        *(
            ctx.run(P.DISK_UNREADABLE_DIR, rt=rt, extra={"mode": mode}, wall_seconds=6, completes=False)
            for mode in ("300", "000")
        )
    )
    for result in results:
        expect_kind(result, "disk-limit", tag="disk-unreadable")
        check(
            report_list(result)[:1] != ["finished"], "disk-unreadable", f"the fill completed: {result.value}"
        )


@attack(
    "fd-leases-dnotify-locks-sigio-owner",
    "5, 21, 23",
    detect="any",
    tags=("watcher-locks", "signal-host"),
    watch_locks=True,
)
async def _locks(ctx: Ctx) -> None:
    """``fcntl`` takes an allow-list of commands: no lease (it stalls a host writer), no dnotify
    (inotify is denied too), no signal owner (SIGIO aimed at the host), and no locks at all, flock
    included: a lock on a file every run can open is a channel between concurrent runs. Judged by
    ``/proc/locks`` (the host's watcher) and the host's SIGURG counter; dnotify and F_SETPIPE_SZ
    leave no trace outside the program, so its own report is the (secondary) check for them."""
    result = await ctx.run(P.LOCKS_LEASES_OWNERS)
    program_denied(result, "lease:", "notify:", "lock:", "owner:", "pipe:")
    entries = report(result)
    for name in ("ok:F_GETFL", "ok:F_DUPFD_CLOEXEC"):
        check(
            entries.get(name, ["err"])[:1] == ["ok"],
            "program",
            f"{name} must stay allowed: {entries.get(name)}",
        )
    print(f"locks[{ctx.variant.label}]: {ctx.watcher.locks_seen}")


@attack("net-ioctl-host-interfaces", "11, 16", detect="any", tags=("leak-interfaces",))
async def _ioctl(ctx: Ctx) -> None:
    """``ioctl(SIOCGIFCONF)`` on the frame fd (or any socket: a socketpair lives in the same network
    namespace) listed the host's interfaces and addresses. The host knows its own: none may appear
    in the result. Only the requests CPython makes are allowed (FIONREAD, isatty's TCGETS...)."""
    result = await ctx.run(P.IOCTL_HOST_NETWORK)
    host = host_interfaces()
    if not host:
        print(
            "net-ioctl-host-interfaces: the host has no interface besides loopback; only the program's report"
        )
    text = ctx.ev.result_text(result)
    leaked = sorted(f"{name}={ip}" for name, ip in host.items() if ip in text or name in text)
    check(not leaked, "leak-interfaces", f"the program read the host's interfaces: {leaked}")
    program_denied(result, "ifconf:", "ifaddr:", "ifname:")
    entries = report(result)
    check(
        entries.get("ok:FIONREAD", ["err"])[:1] == ["ok"],
        "program",
        f"FIONREAD: {entries.get('ok:FIONREAD')}",
    )


@attack("threads-concurrent-runs-keep-their-budgets", "19, 28")
async def _thread_budgets(ctx: Ctx) -> None:
    """One run holding every thread its budget allows must not starve a concurrent run of the same
    runtime (same uid): RLIMIT_NPROC is counted per uid, so each run counts in a user namespace of
    its own. Judged by the benign run's outcome, which the host wrote, and the hog's thread count."""
    hog, benign = await asyncio.gather(
        ctx.run(P.THREAD_HOG, wall_seconds=8, completes=False),
        ctx.run(P.THREAD_BENIGN, wall_seconds=8, completes=False),
    )
    print(
        f"thread budgets[{ctx.variant.label}]: hog {hog.value!r} {kind(hog)}, peak {ctx.watcher.max_threads}"
    )
    check(ctx.watcher.max_threads <= 200, "threads", f"the hog reached {ctx.watcher.max_threads} threads")
    notes = [note for result in (hog, benign) for note in result.meta.get("isolation", {}).get("notes", [])]
    shared = [note for note in notes if note.startswith("process-budget: shared")]
    if shared:
        # The documented fallback of a host that refuses user namespaces: the weakness is real
        # there, and the report must say so (the rest of the evidence is still checked).
        print(f"thread budgets[{ctx.variant.label}]: fallback in effect: {shared[0]}")
        return
    check(benign.value == "benign ok", "thread-starved", f"the concurrent run failed: {benign.error}")


def report_list(result: Any) -> list[Any]:
    return result.value if isinstance(result.value, list) else []


# --- the tests ----------------------------------------------------------------------------------------

CASES = [(name, variant) for variant in VARIANTS for name in ATTACKS]


@pytest.mark.parametrize(("name", "variant"), CASES, ids=[f"{name}@{variant.id}" for name, variant in CASES])
async def test_attack(name: str, variant: Variant, request: pytest.FixtureRequest) -> None:
    if not variant.available:
        pytest.skip(variant.reason)
    finding = ATTACKS[name].finding(variant)
    if finding is None:
        await execute(name, variant, request)
        return
    # A known weakness: xfail only when exactly its evidence fires (anything else is a real failure),
    # and fail when it no longer fires (fixed: remove the marker).
    expected = set(re.match(r"FINDING\[([^\]]+)\]", finding).group(1).split(","))  # type: ignore[union-attr]
    try:
        await execute(name, variant, request)
    except AssertionError as error:
        fired = set(re.findall(r"EVIDENCE\[([^\]]+)\]", str(error)))
        if fired and fired <= expected:
            pytest.xfail(finding)
        raise
    pytest.fail(f"XPASS(strict): this known weakness no longer shows; remove its marker: {finding}")


DETECTABLE = [a.name for a in ATTACKS.values() if a.detect == "any" or (a.detect == "root" and IS_ROOT)]


@pytest.mark.parametrize("name", DETECTABLE)
async def test_the_evidence_detects_an_escape(name: str, request: pytest.FixtureRequest) -> None:
    """The harness can fail: the same attack, run with the explicit unconfined opt-in, trips the
    evidence named in its registration."""
    attack_ = ATTACKS[name]
    with pytest.raises(AssertionError) as caught:
        await execute(name, UNCONFINED, request)
    text = str(caught.value)
    fired = [tag for tag in attack_.tags if f"EVIDENCE[{tag}" in text or f"[{tag}]" in text]
    assert fired, f"unconfined {name} failed, but not on its evidence {attack_.tags}:\n{text[:3000]}"


def test_the_evidence_detects_what_the_runtime_never_allows() -> None:
    """Two canaries no unconfined run can trip (the host always closes fds and empties the
    environment), proven here with a plain child that inherits both."""
    ev = Evidence()
    try:
        code = (
            "import os, sys; os.write(int(sys.argv[1]), b'leak'); "
            f"print(os.environ[{ENV_CANARY_NAME!r}], os.read(int(sys.argv[2]), 100).decode())"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(ev.leak_write), str(ev.secret_fd)],
            pass_fds=(ev.leak_write, ev.secret_fd),
            capture_output=True,
            text=True,
            check=True,
        )
        fake = CodeRunResult(logs=(done.stdout,), meta={})
        with pytest.raises(AssertionError, match=r"EVIDENCE\[leak-env\]"):
            ev.assert_no_leak(fake)
        with pytest.raises(AssertionError, match=r"EVIDENCE\[leak-secret-file\]"):
            ev.assert_no_leak(fake)
        with pytest.raises(AssertionError, match=r"EVIDENCE\[fd-inherit\]"):
            ev.assert_intact()
    finally:
        ev.close()


@pytest.mark.parametrize("variant", VARIANTS, ids=[variant.id for variant in VARIANTS])
def test_the_isolation_prediction_matches_the_runs(variant: Variant) -> None:
    """``runtime.isolation`` (from the probes, before any run) must say what the runs then report."""
    if not variant.available:
        pytest.skip(variant.reason)
    assert variant.predicted == variant.expected, (
        f"{variant.label}: runtime.isolation predicted {variant.predicted!r}, "
        f"runs report {variant.expected!r}"
    )


def test_the_catalogue_is_covered() -> None:
    """Every item of the attack catalogue (contract SA1–SA36) has at least one attack."""
    covered: set[int] = set()
    for attack_ in ATTACKS.values():
        covered.update(int(item) for item in attack_.items.replace(",", " ").split())
    assert covered >= set(range(1, 37)), sorted(set(range(1, 37)) - covered)
    assert len(ATTACKS) >= 36


async def test_zz_a_full_backend_actually_ran(request: pytest.FixtureRequest) -> None:
    """On Linux, at least one backend reporting ``enforcement == "full"`` must have run programs:
    FAIL (not skip) otherwise, so that a green run cannot hide an empty matrix."""
    if not any("full" in seen for seen in ISOLATION.values()):
        # Deselected attacks (``-k``): run a benign program on every available variant now.
        for variant in VARIANTS:
            if not variant.available:
                continue
            runtime = variant.runtime(pool_size=0)
            try:
                result = await runtime.run(CodeRunRequest("return 1", []))
            finally:
                await runtime.aclose()
            ISOLATION.setdefault(variant.label, set()).add(str(result.meta["isolation"]["enforcement"]))
    summary = {label: sorted(seen) for label, seen in ISOLATION.items()}
    print(f"isolation achieved per variant: {summary}")
    reasons = {variant.label: variant.reason for variant in VARIANTS if not variant.available}
    assert any("full" in seen for seen in ISOLATION.values()), (
        f"no backend reached full enforcement on this Linux host: ran {summary}, unavailable {reasons}"
    )
    if shutil.which("bwrap") is None:
        print("note: no bwrap on PATH; only the landlock backend ran")
