"""Finding the Deno binary the TypeScript runtime runs, and what it must read once confined.

The binary comes from the ``deno`` package on PyPI (the ``toolrt[typescript]`` extra): its wheel
installs ``deno`` into the environment's scripts directory, and ``deno.find_deno_bin()`` says
where. The package is imported here, on first use, never at ``import toolrt``. ``TOOLRT_DENO`` is
not consulted: the binary is part of the trusted computing base, so it is the one the extra pinned
or the one a caller passes explicitly.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

from toolrt.sandbox._backends.probe import cached, output_tail, run_probe

__all__ = ["DENO_FLAGS", "deno_system_reads", "deno_version", "find_deno"]

DENO_FLAGS = ("run", "--no-prompt", "--no-remote", "--no-npm", "--cached-only")
"""How every program runs: no permission flags (so every permission is denied), no prompt, no
remote or npm modules (plain ``deno run`` still fetched ``import("https://esm.sh/...")``), nothing
but what is cached. Never ``deno eval``: it grants every permission."""

MISSING = "the TypeScript runtime needs Deno: pip install 'toolrt[typescript]' (the deno package)"


def find_deno() -> str:
    """The ``deno`` binary of the ``deno`` package (resolved); raises ``FileNotFoundError`` with
    the install hint when the extra is missing."""
    try:
        package = importlib.import_module("deno")
    except ImportError:
        raise FileNotFoundError(MISSING) from None
    try:
        found = str(package.find_deno_bin())
    except (FileNotFoundError, OSError) as error:
        raise FileNotFoundError(f"{MISSING} ({error})") from None
    return os.path.realpath(found)


def deno_version(binary: str) -> str:
    """``deno --version``'s first line (cached; raises ``OSError`` when it does not run)."""

    def compute() -> str:
        try:
            done = run_probe([binary, "--version"])
        except (OSError, subprocess.SubprocessError) as error:
            return f"error: {error}"
        if done.returncode != 0:
            return f"error: exit {done.returncode}: {output_tail(done.stderr)}"
        return done.stdout.decode("utf-8", "replace").splitlines()[0] if done.stdout else "deno"

    version = cached(("deno-version", binary), compute)
    if version.startswith("error: "):
        raise OSError(version.removeprefix("error: "))
    return version


def _multiarch() -> str:
    value = getattr(sys.implementation, "_multiarch", None)
    return value if isinstance(value, str) and value else f"{os.uname().machine}-linux-gnu"


def deno_system_reads() -> tuple[str, ...]:
    """What of the system a confined Deno reads: the dynamic loader and the C libraries it links
    (``ldd`` of the wheel's binary: libc, libm, libgcc_s, libdl, libpthread, librt), the loader's
    cache and the time zone. Not ``/etc`` (``import("file:///etc/passwd")`` parses the file and
    echoes its first line in the error), not ``/usr/bin``, not ``/proc``."""
    arch = _multiarch()
    paths = (f"/usr/lib/{arch}", f"/lib/{arch}", "/lib64", "/usr/lib64", "/etc/ld.so.cache", "/etc/localtime")
    return tuple(path for path in paths if os.path.exists(path))
