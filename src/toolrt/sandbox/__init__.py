"""A Code Mode runtime for Python: each program runs in a fresh, kernel-confined child process.

The folder is the trust boundary::

    _host/      trusted, imports toolrt: the runtime, one run, the child process and its channel,
                the warm pool, limits, the work dir, the frame protocol, the precompiled code table,
                confined commands (any program behind the child folder's launcher)
    _backends/  trusted, imports toolrt: probing the host, the backend ladder (the plan), the bwrap
                command line, the uid drop of a root host, macOS's Seatbelt profile
    _child/     runs INSIDE the confined child, next to the untrusted program: standard library
                only, never toolrt; the bootstrap run loop and one module per confinement layer

Host code never trusts what a child sends (``_host/protocol.py`` bounds every frame); the child
folder's file list is its own (``_child/bootstrap.py``'s ``CHILD_FILES``), and a test fails if a
module there imports anything outside the standard library and that folder.
"""

from toolrt.sandbox._backends.plan import BackendName, ProbeResults
from toolrt.sandbox._host.command import (
    LAUNCH_REFUSED,
    CommandConfinement,
    ConfinedCommand,
    SandboxUnavailableError,
    confine_command,
)
from toolrt.sandbox._host.deno_runtime import DenoTypeScriptRuntime
from toolrt.sandbox._host.limits import DEFAULT_LIMITS
from toolrt.sandbox._host.runtime import PythonSandboxRuntime

__all__ = [
    "DEFAULT_LIMITS",
    "LAUNCH_REFUSED",
    "BackendName",
    "CommandConfinement",
    "ConfinedCommand",
    "DenoTypeScriptRuntime",
    "ProbeResults",
    "PythonSandboxRuntime",
    "SandboxUnavailableError",
    "confine_command",
]
