"""The sandbox child's own modules, compiled once by the host and read by every child at start-up.

A child loads its eleven modules (``bootstrap.CHILD_FILES`` but the script itself) by path and, on
its own, compiled them from source at every start: about half of the CPU a cold child spends before
its program runs on the machine this was written on, paid again by every pooled child the pool
refills. The host compiles them once per process instead (on a worker thread, and again only when
a source file changes), writes the marshalled code objects behind the interpreter's bytecode magic
to a table file, and names it on each child's command line (``bootstrap.py <fd> <table>``). The
child reads it before it loads anything and uses it only when the magic is its own interpreter's;
otherwise (another Python minor version, a corrupt or missing table) it compiles from source as
before.

The table is a file, not an inherited fd, so the protocol keeps its one inherited fd and nothing
outside the child (bwrap's monitor process) holds it. It lives in a host-owned directory of mode
0755 (:func:`~toolrt.sandbox._backends.uid_drop.staging_dir`, removed at exit), bound read-only
under bwrap: a child can read it but not change it, and its program cannot even read it (the
child's Landlock rules leave it out). The table flows host → child only; a child never sends code
back, and the frames stay JSON (:mod:`.protocol`).
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
import tempfile
import threading
from typing import Any

from toolrt.sandbox._backends.probe import cached
from toolrt.sandbox._backends.uid_drop import staging_dir
from toolrt.sandbox._child.bootstrap import CHILD_FILES

__all__ = ["AVAILABLE", "MODULE_FILES", "code_table", "compile_table", "fresh_code_table"]

MODULE_FILES = CHILD_FILES[1:]
"""What the table holds: every child module but the script (``bootstrap.py``), which Python itself
compiles when it starts it."""

AVAILABLE = sys.platform == "linux"
"""Where children get the table. macOS's Seatbelt profile names every readable path up front, and
its children keep compiling their modules."""

_lock = threading.Lock()
_cache: dict[str, tuple[int, tuple[tuple[int, int], ...], str]] = {}
"""Per child directory: (owner pid, the sources' (mtime_ns, size), table path)."""


def compile_table(directory: str) -> bytes:
    """The magic number of this interpreter, then the marshalled ``{file name: code}`` of the child
    modules in ``directory``, each compiled as the child would (its path, no inherited flags, no
    optimisation)."""
    table: dict[str, Any] = {}
    for name in MODULE_FILES:
        path = os.path.join(directory, name)
        with open(path, "rb") as handle:
            source = handle.read()
        table[name] = compile(source, path, "exec", dont_inherit=True, optimize=0)
    return importlib.util.MAGIC_NUMBER + marshal.dumps(table)


def _stamps(directory: str) -> tuple[tuple[int, int], ...]:
    stamps = []
    for name in MODULE_FILES:
        info = os.stat(os.path.join(directory, name))
        stamps.append((info.st_mtime_ns, info.st_size))
    return tuple(stamps)


def _write_table(data: bytes) -> str:
    # One directory per process (a forked host makes its own); a new file per build, because a
    # child being spawned may still be given the previous one. Nobody has the path before it is
    # returned, so the file needs no atomic rename.
    folder = cached("child-code-dir", lambda: staging_dir("toolrt-child-code-"))
    handle, path = tempfile.mkstemp(prefix="table-", suffix=".bin", dir=folder)
    with os.fdopen(handle, "wb") as table:
        table.write(data)
    os.chmod(path, 0o644)
    return path


def fresh_code_table(directory: str) -> str | None:
    """The table built for ``directory`` when its sources have not changed since (a few ``stat``
    calls: cheap enough for the event loop), else ``None``."""
    hit = _cache.get(directory)
    if hit is None or hit[0] != os.getpid():
        return None
    try:
        return hit[2] if hit[1] == _stamps(directory) else None
    except OSError:
        return None


def code_table(directory: str) -> str | None:
    """The path of :func:`compile_table` of ``directory``, written once per process and again when
    a source changes (a forked host writes its own). ``None`` off Linux, or when a source cannot be
    read or compiled, or the table cannot be written: the child then compiles from source.
    Blocking (compiling takes ~15 ms): call it off the event loop."""
    if not AVAILABLE:
        return None
    with _lock:
        fresh = fresh_code_table(directory)
        if fresh is not None:
            return fresh
        try:
            stamps = _stamps(directory)
            path = _write_table(compile_table(directory))
        except (OSError, SyntaxError, ValueError):
            return None
        _cache[directory] = (os.getpid(), stamps, path)
        return path
