"""What the file-tool tests share: a runtime over a workspace, a result's text and code, and the
peak-memory probe that shows a tool reads only what it returns.

Not a test module: import it (``from fs_helpers import runtime_for, text_of``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from toolrt import ToolRuntime
from toolrt.tools import fs_tools

__all__ = ["PEAK_KIB", "code_of", "peak_growth_kib", "runtime_for", "text_of"]


def runtime_for(root: Path, **options: Any) -> ToolRuntime:
    """A runtime with the file tools over ``root`` (``options`` go to ``fs_tools``)."""
    runtime = ToolRuntime()
    for definition in fs_tools(root, **options):
        runtime.register(definition)
    return runtime


def text_of(result: Any) -> str:
    """The text the model reads from ``result``."""
    return "".join(block.get("text", "") for block in result.content)


def code_of(result: Any) -> str | None:
    """``result``'s error code, ``None`` when it succeeded."""
    info = result.error.info if result.is_error else None
    return None if info is None else info.code


PEAK_KIB = r"""
def peak_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
"""
"""Source of ``peak_kib()``, the child's peak resident size so far (KiB), for a probe to include."""


def peak_growth_kib(probe: str, root: Path) -> int:
    """Run ``probe`` (a script printing its peak-RSS growth in KiB) on ``root`` in a real child.

    A child process, because the test process's own peak already holds whatever earlier tests
    allocated; the number measured is the growth across the probe's reads only.
    """
    script = root / "probe.py"
    script.write_text(probe, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(root)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())
