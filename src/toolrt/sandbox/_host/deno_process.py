"""One Deno sandbox child, host side: the Python child's process handling (:class:`.process.Child`),
spawned behind the confined-command launcher, with its memory limit set once V8 has started.

The launcher (:mod:`.command`) applies the same layers as the Python child (rlimits, uid drop,
no_new_privs, Landlock, seccomp) and execs ``deno run`` with no permission flags; Landlock grants
only the Deno binary, its C libraries, the bootstrap and the run's work dir, and seccomp keeps the
child to threads (no fork). The frames are the Python child's; Deno speaks them on its stdin and
stdout, which the launcher made the channel socket.

Memory: V8 reserves address space it never uses (its pointer-compression cage, Oilpan's caged heap,
code ranges): ``deno run`` does not start under an RLIMIT_AS below about 34 GiB on the machine this
was written on, and holds about 17 GiB of address space once started, so a limit that lets it boot
would let a 2 GiB ``ArrayBuffer`` through. The host therefore starts the child with RLIMIT_AS
unlimited and, when its ``ready`` arrives (the program has not been sent yet), lowers the child's
RLIMIT_AS with ``prlimit`` to what it holds then plus the run's memory limit: every later
allocation (an ``ArrayBuffer``, WebAssembly memory growth, the JavaScript heap) counts against the
memory limit alone. The heap's own limit (``--max-old-space-size``) is the memory limit too.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from toolrt.codemode._code_runtime import CodeRunError
from toolrt.sandbox._backends.deno import DENO_FLAGS, deno_system_reads
from toolrt.sandbox._backends.plan import DROP_TO, Plan
from toolrt.sandbox._host.command import CommandConfinement, SandboxUnavailableError, command_plan
from toolrt.sandbox._host.limits import BootSpec
from toolrt.sandbox._host.process import BootFailure, Child

__all__ = ["DenoChild"]

_WARDEN_TIMEOUT = 5.0


class DenoChild(Child):
    """A :class:`.process.Child` that runs ``bootstrap.ts`` on Deno behind the launcher."""

    def __init__(
        self, plan: Plan, spec: BootSpec, deno: str, bootstrap: str, *, disk_bytes: int, memory_bytes: int
    ) -> None:
        super().__init__(plan, spec, bootstrap, deno, disk_bytes)
        self.deno = deno
        self.memory_bytes = memory_bytes
        self._warden: socket.socket | None = None
        self._warden_child: socket.socket | None = None

    def launch(
        self, child_fd: int, read_paths: Sequence[str], code_table: str | None
    ) -> tuple[list[str], dict[str, str], tuple[int, int] | None]:
        """``deno run <flags> bootstrap.ts`` behind the launcher, with an environment that names
        nothing of the host's; the launcher drops the uid itself, so the host starts it as root."""
        del code_table  # Python's precompiled modules: the launcher's are few, Deno's none
        if os.geteuid() == 0 and (self.plan.drop_to is not None or self.plan.bwrap_as is not None):
            os.chown(self.workdir, *DROP_TO)
        heap_mib = max(self.memory_bytes >> 20, 16)
        argv = [self.deno, *DENO_FLAGS, f"--v8-flags=--max-old-space-size={heap_mib}", self.bootstrap]
        confinement = CommandConfinement(
            Path(self.workdir),
            writable=False,
            readable=(Path(self.bootstrap), *(Path(path) for path in read_paths)),
            cpu_seconds=self.spec.cpu_seconds,
            max_file_bytes=self.disk_bytes,
            max_open_files=256,
            max_processes=None,
            processes=False,
            own_memory_map=True,
            system_read=deno_system_reads(),
        )
        # The program cannot write files (no permission), and neither can Deno: its DENO_DIR in the
        # read-only work dir cannot be created, so its caches stay in memory. A cache on disk is
        # SQLite, whose record locks the seccomp profile refuses (ENOLCK): it would retry forever.
        env = {"DENO_DIR": os.path.join(self.workdir, ".deno"), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"}
        self._warden, self._warden_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.extra_fds = (self._warden_child.fileno(),)
        try:
            plan, confined = command_plan(
                argv, confinement, self.plan, env=env, channel_fd=child_fd, warden_fd=self.extra_fds[0]
            )
        except (SandboxUnavailableError, ValueError) as error:
            raise BootFailure(CodeRunError("sandbox-unavailable", str(error))) from None
        self.plan = plan
        self.report_notes.extend(note for note in confined.report.notes if note not in plan.notes)
        return confined.argv, confined.env, None

    async def start(self, read_paths: Sequence[str], timeout: float) -> None:
        """Spawn and boot (:meth:`.process.Child.start`); the warden's socket ends here."""
        try:
            await super().start(read_paths, timeout)
        finally:
            if self._warden_child is not None:
                self._warden_child.close()
                self._warden_child = None

    def booted(self) -> CodeRunError | None:
        """Have the warden lower Deno's RLIMIT_AS to what V8 holds now plus the memory limit."""
        warden = self._warden
        failure = "the Deno child's memory could not be limited"
        if warden is None:
            return CodeRunError("sandbox-unavailable", f"{failure}: no warden")
        try:
            warden.settimeout(_WARDEN_TIMEOUT)
            warden.sendall(self.memory_bytes.to_bytes(8, "big"))
            answer = b""
            while len(answer) < 8:
                chunk = warden.recv(8 - len(answer))
                if not chunk:
                    break
                answer += chunk
        except OSError as error:
            return CodeRunError("sandbox-unavailable", f"{failure}: {error}")
        finally:
            warden.close()
            self._warden = None
        held = int.from_bytes(answer, "big") if len(answer) == 8 else 0
        if held == 0:
            return CodeRunError("sandbox-unavailable", f"{failure}: the warden refused")
        if self.report is not None:
            mib = self.memory_bytes >> 20
            note = f"memory: RLIMIT_AS set once V8 started: {held >> 20} MiB held + {mib} MiB"
            self.report = replace(self.report, notes=(*self.report.notes, note))
        return None
