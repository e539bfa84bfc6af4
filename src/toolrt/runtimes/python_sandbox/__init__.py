"""A Code Mode runtime for Python: each program runs in a fresh, kernel-confined child process.

See :mod:`.host` for the runtime, :mod:`.protocol` for the host ↔ child channel, :mod:`.bootstrap`
for the child and :mod:`.pool` for the warm pool. Confinement itself lives in :mod:`.confine`.
"""

from .host import DEFAULT_LIMITS, ProbeResults, PythonSandboxRuntime

__all__ = ["DEFAULT_LIMITS", "ProbeResults", "PythonSandboxRuntime"]
