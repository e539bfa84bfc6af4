"""``DenoTypeScriptRuntime``: model-written TypeScript in a fresh, kernel-confined Deno per run.

The Python runtime's machinery, another child: the backend ladder and its honest report, the
limits and their failure kinds, the output budget, the warm pool and the frame protocol are
:class:`~toolrt.sandbox._host.runtime.PythonSandboxRuntime`'s, inherited; what differs is the child
(:class:`~toolrt.sandbox._host.deno_process.DenoChild`: the confined-command launcher in front of
``deno run``, no permission flags) and the language (``typescript``, which makes the prompt carry
the TypeScript SDK). Programs run as the body of an async function; ``enum`` and ``namespace`` are
refused before they run (:mod:`.typescript_program`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from toolrt.codemode._code_runtime import (
    CodeRunError,
    CodeRunLimits,
    CodeRunRequest,
    CodeRunResult,
)
from toolrt.sandbox._backends.deno import find_deno
from toolrt.sandbox._backends.plan import BackendName, Plan
from toolrt.sandbox._backends.probe import CHILD_DIR
from toolrt.sandbox._host.deno_process import DenoChild
from toolrt.sandbox._host.limits import DEFAULT_LIMITS, BootSpec, Limits
from toolrt.sandbox._host.process import BootFailure, Child
from toolrt.sandbox._host.runtime import PythonSandboxRuntime
from toolrt.sandbox._host.typescript_program import typescript_problem

__all__ = ["DenoTypeScriptRuntime"]

BOOTSTRAP_TS = os.path.join(CHILD_DIR, "bootstrap.ts")


class _MissingDeno(Child):
    """A child that cannot start because there is no Deno: its boot fails with the install hint."""

    def __init__(self, reason: str, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.reason = reason

    async def start(self, read_paths: Sequence[str], timeout: float) -> None:
        raise BootFailure(CodeRunError("sandbox-unavailable", self.reason))


class DenoTypeScriptRuntime(PythonSandboxRuntime):
    """A :class:`~toolrt.codemode._code_runtime.CodeRuntime` for TypeScript, on Deno.

    Install with ``pip install 'toolrt[typescript]'`` (the ``deno`` package's binary; ``deno``
    overrides it). The arguments are the Python runtime's: ``backend`` / ``allow_unconfined`` pick
    the confinement (it refuses to run unconfined unless told to), ``limits`` the defaults a
    request overrides (memory is the program's own: what V8 reserves to start is not counted),
    ``pool_size`` the warm children::

        runtime = ToolRuntime(mode="code", code_runtime=DenoTypeScriptRuntime())
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
        deno: str | None = None,
    ) -> None:
        super().__init__(
            pool_size=pool_size,
            limits=limits,
            backend=backend,
            allow_unconfined=allow_unconfined,
            read_paths=read_paths,
            max_in_flight_calls=max_in_flight_calls,
            disk_bytes=16 << 20,
        )
        self.deno = deno

    @property
    def language(self) -> str:
        """The language this runtime runs: ``"typescript"`` (the prompt's TypeScript SDK)."""
        return "typescript"

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run one TypeScript program in a fresh confined Deno (never raises for a program's
        failure); ``enum`` and ``namespace`` fail as ``exception`` before anything starts."""
        program = getattr(request, "program", None)
        problem = typescript_problem(program) if isinstance(program, str) else None
        if problem is not None:
            isolation = self.isolation.as_json()
            return CodeRunResult(error=CodeRunError("exception", problem), meta={"isolation": isolation})
        return await super().run(request)

    def new_child(self, plan: Plan, spec: BootSpec, limits: Limits) -> Child:
        """A Deno child (:class:`~toolrt.sandbox._host.deno_process.DenoChild`)."""
        try:
            deno = self.deno or find_deno()
        except FileNotFoundError as error:
            return _MissingDeno(str(error), plan, spec, BOOTSTRAP_TS, "deno", self.disk_bytes)
        memory = limits.memory
        return DenoChild(plan, spec, deno, BOOTSTRAP_TS, disk_bytes=self.disk_bytes, memory_bytes=memory)
