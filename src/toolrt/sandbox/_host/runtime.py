"""``PythonSandboxRuntime``: model-written Python in a fresh, kernel-confined child process per run.

The runtime resolves its backend once (:mod:`~toolrt.sandbox._backends.plan`), keeps a warm pool
of booted, confined children (:mod:`.pool`; each runs one program, then exits), and hands each run
(:mod:`.run`) a warm child when the run's rlimit-relevant limits equal the defaults
(:mod:`.limits`), else a cold one (:mod:`.process`). Protocol: :mod:`.protocol`; the child
itself: ``toolrt.sandbox._child``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolrt._abort import AbortSignal
from toolrt.codemode._code_runtime import (
    CodeBindingNamespace,
    CodeRunError,
    CodeRunLimits,
    CodeRunRequest,
    CodeRunResult,
    IsolationReport,
    RunClock,
    validate_bindings,
)
from toolrt.sandbox._backends.plan import (
    BACKEND_NAMES,
    BOOTSTRAP,
    BackendName,
    Plan,
    ProbeResults,
    probe_host,
    resolve_plan,
)
from toolrt.sandbox._host.limits import DEFAULT_LIMITS, BootSpec, Limits, fill_limits, merge_limits
from toolrt.sandbox._host.pool import WarmPool
from toolrt.sandbox._host.process import BOOT_TIMEOUT, Child
from toolrt.sandbox._host.protocol import LONE_SURROGATE
from toolrt.sandbox._host.run import Run, RunHost

__all__ = ["PythonSandboxRuntime"]

_WARM_PREIMPORT = ("asyncio",)


@dataclass(slots=True)
class _Probe:
    plan: Plan | None = None
    lock: asyncio.Lock | None = None
    results: ProbeResults | None = None


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _request_problem(request: Any) -> str | None:
    """Why ``request`` cannot be run as typed (a structured ``invalid-request``), or ``None``.
    Why here: a request is data, often built from outside input; a mistyped one must fail like a
    program does, as a result, not as an exception out of ``run``."""
    if not isinstance(request, CodeRunRequest):
        return f"request must be a CodeRunRequest, not {_type_name(request)}"
    fields: Any = request  # as built at run time: the field annotations are what is checked here
    if not isinstance(fields.program, str):
        return f"program must be a str, not {_type_name(fields.program)}"
    try:
        fields.program.encode("utf-8")
    except UnicodeEncodeError:
        return f"program is not valid UTF-8 text ({LONE_SURROGATE})"
    bindings = fields.bindings
    if isinstance(bindings, str | bytes) or not isinstance(bindings, Sequence):
        return f"bindings must be a sequence of CodeBindingNamespace, not {_type_name(bindings)}"
    item: Any
    for item in bindings:
        if not isinstance(item, CodeBindingNamespace):
            return f"bindings must hold CodeBindingNamespace items, not {_type_name(item)}"
        namespace: Any = item
        if not isinstance(namespace.functions, Mapping):
            functions = _type_name(namespace.functions)
            return f"binding {namespace.name!r} functions must be a mapping, not {functions}"
    if fields.signal is not None and not isinstance(fields.signal, AbortSignal):
        return f"signal must be an AbortSignal or None, not {_type_name(fields.signal)}"
    if fields.limits is not None and not isinstance(fields.limits, CodeRunLimits):
        return f"limits must be a CodeRunLimits or None, not {_type_name(fields.limits)}"
    if fields.clock is not None and not isinstance(fields.clock, RunClock):
        return f"clock must be a RunClock or None, not {_type_name(fields.clock)}"
    return None


class PythonSandboxRuntime:
    """A :class:`~toolrt.codemode._code_runtime.CodeRuntime` running each program in a fresh, confined child.

    ``pool_size`` warm children are kept booted and confined (each runs one program, then exits);
    ``limits`` are the defaults a request's ``limits`` override field by field; ``backend`` picks
    the confinement ladder rung (``auto`` = bwrap if it works, else Landlock + seccomp, else
    ``sandbox-unavailable``; on macOS ``sandbox-exec`` if it works, always ``partial``, else
    ``sandbox-unavailable``); ``allow_unconfined=True`` is the explicit, loud opt-in to run without a
    sandbox; ``read_paths`` are extra read-only directories for the program; ``disk_bytes`` caps the
    work dir; ``python`` is the child interpreter (default: this interpreter's base executable).

    As root, the ``landlock`` backend drops each child to uid 65534. When that uid cannot run
    ``python`` (e.g. a pyenv under ``/root``), the child runs a system Python >= 3.11 that it can run
    instead (the child needs only the standard library), and the isolation report's notes name it;
    only without one does the child stay root (``partial``).
    """

    def __init__(
        self,
        *,
        pool_size: int = 2,
        limits: CodeRunLimits = DEFAULT_LIMITS,
        backend: BackendName = "auto",
        allow_unconfined: bool = False,
        read_paths: Sequence[str] = (),
        max_in_flight_calls: int = 64,
        disk_bytes: int = 64 << 20,
        python: str | None = None,
        _bootstrap_path: str | None = None,
        _probe: Callable[[], ProbeResults] | None = None,
    ) -> None:
        if backend not in BACKEND_NAMES:
            raise ValueError(f"unknown backend {backend!r}")
        if backend == "unconfined" and not allow_unconfined:
            raise ValueError(
                'backend="unconfined" runs programs WITHOUT a sandbox: pass allow_unconfined=True'
            )
        if pool_size < 0 or max_in_flight_calls < 1 or disk_bytes < 0:
            raise ValueError("pool_size >= 0, max_in_flight_calls >= 1 and disk_bytes >= 0 are required")
        for path in read_paths:
            if not os.path.isabs(path):
                raise ValueError(f"read_paths must be absolute: {path!r}")
        self.limits = fill_limits(limits)
        merge_limits(self.limits, None)  # validates
        self.backend: BackendName = backend
        self.allow_unconfined = allow_unconfined
        self.read_paths = tuple(read_paths)
        self.max_in_flight_calls = max_in_flight_calls
        self.disk_bytes = disk_bytes
        self.python = python or os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
        self._bootstrap = _bootstrap_path or BOOTSTRAP
        self._probe_function = _probe or (lambda: probe_host(self.python, self._bootstrap))
        self._probe = _Probe()
        self._isolation: IsolationReport | None = None
        self._pool: WarmPool[Child] | None = None
        self._pool_size = pool_size
        self._runs: set[Run] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._default = merge_limits(self.limits, None)

    # -- CodeRuntime ------------------------------------------------------------------------------

    @property
    def language(self) -> str:
        """The language this runtime runs: ``"python"``."""
        return "python"

    @property
    def isolation(self) -> IsolationReport:
        """What this runtime achieves: the real report of the first child that booted with the
        default backend, else the prediction from the (cached, once-only) probes."""
        if self._isolation is not None:
            return self._isolation
        return self._plan_sync().predicted()

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run one program in a fresh confined child and return its result (never raises for a
        program's failure; ``RuntimeError`` once disposed)."""
        if self._closed:
            raise RuntimeError("runtime disposed")
        problem = _request_problem(request)
        if problem is None:
            validate_bindings(request.bindings)
            try:
                limits = merge_limits(self.limits, request.limits)
            except (TypeError, ValueError) as error:
                problem = f"invalid limits: {error}"
        self._bind_loop()
        plan = await self._plan()
        if problem is not None:
            return CodeRunResult(
                error=CodeRunError("invalid-request", problem),
                meta={"isolation": self.isolation.as_json(), "backend": plan.backend, "warm": False},
            )
        if plan.backend is None:
            return CodeRunResult(
                error=CodeRunError("sandbox-unavailable", plan.unavailable),
                meta={"isolation": plan.predicted().as_json(), "backend": None, "warm": False},
            )
        host = RunHost(self.max_in_flight_calls, self.disk_bytes, self._checkout, self._spawn)
        run = Run(host, request, limits, plan)
        signal = request.signal
        if signal is not None and signal.aborted:
            return CodeRunResult(
                error=CodeRunError("abort", str(signal.reason)),
                meta={"isolation": self.isolation.as_json(), "backend": plan.backend, "warm": False},
            )
        self._runs.add(run)
        try:
            return await run.execute()
        finally:
            self._runs.discard(run)
            self._start_pool()

    async def aclose(self) -> None:
        """Kill every child (pool included); runs in flight end with ``abort``/``runtime disposed``."""
        self._closed = True
        with contextlib.suppress(RuntimeError):  # no running loop: nothing of this loop to close
            self._bind_loop()
        for run in list(self._runs):
            run.dispose()
        if self._pool is not None:
            await self._pool.aclose()
        while self._runs:
            await asyncio.sleep(0.005)

    async def warm(self) -> None:
        """Fill the warm pool now and wait until it is full (optional: the first run does it too)."""
        self._bind_loop()
        plan = await self._plan()
        if plan.backend is None or self._pool_size == 0:
            return
        self._start_pool()
        assert self._pool is not None
        deadline = time.monotonic() + BOOT_TIMEOUT
        while self._pool.idle < self._pool_size and time.monotonic() < deadline:
            if self._pool.last_error is not None and self._pool.spawned == 0:
                break
            await asyncio.sleep(0.01)

    # -- internals --------------------------------------------------------------------------------

    def _plan_sync(self) -> Plan:
        probe = self._probe
        if probe.plan is None:
            probe.results = self._probe_function()
            probe.plan = resolve_plan(self.backend, probe.results, self.allow_unconfined)
        return probe.plan

    async def _plan(self) -> Plan:
        probe = self._probe
        if probe.plan is not None:
            return probe.plan
        if probe.lock is None:
            probe.lock = asyncio.Lock()
        async with probe.lock:
            if probe.plan is None:
                results = await asyncio.to_thread(self._probe_function)
                probe.results = results
                probe.plan = resolve_plan(self.backend, results, self.allow_unconfined)
        return probe.plan

    def _boot_spec(self, limits: Limits, warm: bool) -> BootSpec:
        return BootSpec(
            cpu_seconds=limits.rlimit_cpu,
            memory_bytes=limits.memory,
            preimport=_WARM_PREIMPORT if warm else (),
        )

    async def _spawn(self, limits: Limits, timeout: float, warm: bool = False) -> Child:
        plan = await self._plan()
        child = self.new_child(plan, self._boot_spec(limits, warm), limits)
        await child.start(self.read_paths, timeout)
        if self._isolation is None and child.report is not None and plan is self._probe.plan:
            self._isolation = child.report
        return child

    def new_child(self, plan: Plan, spec: BootSpec, limits: Limits) -> Child:
        """A child of ``plan`` for a run of ``limits``, not started yet: the Python bootstrap's
        (another language's runtime makes its own kind of child)."""
        del limits  # the Python child's limits are all in ``spec``
        bootstrap = plan.bootstrap or self._bootstrap
        python = plan.python or self.python
        return Child(plan, spec, bootstrap, python, self.disk_bytes)

    async def _spawn_warm(self) -> Child:
        return await self._spawn(self._default, BOOT_TIMEOUT, warm=True)

    def _bind_loop(self) -> None:
        """Children, the pool and the probe lock belong to one event loop. A runtime reused from a
        new loop (``asyncio.run`` twice) drops what the old, finished loop left behind."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None and self._pool is not None:
            pool, self._pool = self._pool, None
            for child in pool.abandon():
                child.abandon()
        self._probe.lock = None
        self._loop = loop

    def _start_pool(self) -> None:
        if self._closed or self._pool_size == 0:
            return
        if self._pool is None:
            self._pool = WarmPool(self._pool_size, self._spawn_warm)
        self._pool.fill()

    def _checkout(self, limits: Limits) -> Child | None:
        """A warm child if the run's rlimit-relevant limits match the pool's, else ``None``."""
        if self._pool is None:
            self._start_pool()
            return None
        default = self._default
        if limits.rlimit_cpu != default.rlimit_cpu or limits.memory != default.memory:
            return None
        return self._pool.checkout()
