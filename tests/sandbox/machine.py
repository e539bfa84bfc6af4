"""What this machine's sandbox can run, probed once and shared by the sandbox tests."""

from __future__ import annotations

import sys

from toolrt.sandbox import ProbeResults
from toolrt.sandbox._backends.plan import probe_host

PROBES: ProbeResults | None = probe_host() if sys.platform == "linux" else None


def confined_backends() -> list[str]:
    """The full backends that work here, in the order ``auto`` prefers them: ``bwrap`` (only where
    it can also disable user namespaces), then ``landlock`` (with seccomp)."""
    backends: list[str] = []
    if PROBES is not None and PROBES.bwrap_works and PROBES.bwrap_disable_userns:
        backends.append("bwrap")
    if PROBES is not None and PROBES.landlock_abi is not None and PROBES.seccomp:
        backends.append("landlock")
    return backends
