"""Finding the processes a ``bash`` test started, by a marker in their command line.

A process left behind is found by a unique marker in its command line (``sleep <marker>``), read
from ``/proc``: nothing is trusted to say "I died". Shared by the foreground, job and confinement
tests (the last also runs from CI's copy of ``tests/``, which is why this is a top-level module).

Not a test module: import it (``from bash_helpers import marker, survivors, until_running``).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from pathlib import Path

__all__ = ["marker", "survivors", "until_running"]

_markers = itertools.count(1)


def marker() -> str:
    """A sleep duration no other process uses: ``sleep <marker>`` names a process of this test."""
    return f"{4_000_000 + os.getpid() % 100_000}.{next(_markers)}{int(time.time() * 1000) % 1000}"


def survivors(mark: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``mark``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if mark.encode() in cmdline and stat[stat.rindex(")") + 2] not in "ZX":
            found.append(int(entry))
    return found


async def until_running(mark: str, timeout: float = 5.0) -> None:
    """Wait until a process with ``mark`` is running (a failed assertion after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while not survivors(mark):
        assert time.monotonic() < deadline, f"no process with {mark} started"
        await asyncio.sleep(0.02)
