"""A Code Mode runtime for Python: each program runs in a fresh, kernel-confined child process.

Host side: :mod:`.host` (the runtime), :mod:`.backends` (probe results, the backend ladder, the bwrap
command line), :mod:`.seatbelt` (macOS: the ``sandbox-exec`` profile and its probe), :mod:`.limits`
(limits, usage, what a killed child's exit means), :mod:`.child` (one child process: spawn, boot,
reaping), :mod:`.child_channel` (its channel, pipes and boot/idle listeners), :mod:`.workdir` (work
dir removal), :mod:`.run` (one run: program, binding calls, outcome), :mod:`.pool` (the warm pool) and
:mod:`.probe` (capability probes); :mod:`.protocol` is the host ↔ child channel. Child side:
:mod:`.bootstrap`, with confinement in :mod:`.confine`.
"""

from toolrt.sandbox.host import DEFAULT_LIMITS, ProbeResults, PythonSandboxRuntime

__all__ = ["DEFAULT_LIMITS", "ProbeResults", "PythonSandboxRuntime"]
