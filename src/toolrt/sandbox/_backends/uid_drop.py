"""Probes for a root host that drops its sandbox children to an unprivileged uid (contract §5.2).

:func:`drop_target_problem` says whether the host's own interpreter works as that uid; when it does
not (a pyenv under ``/root``), :func:`drop_interpreter` finds a system Python that does, and
:func:`drop_readable_bootstrap` makes sure the bootstrap and its modules are readable by that uid too.
Every verdict is cached per process.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence

from toolrt.sandbox._backends.probe import CHILD_DIR, cached, output_tail, run_probe
from toolrt.sandbox._child.bootstrap import CHILD_FILES
from toolrt.sandbox._child.confine_grants import essential_dirs, inaccessible_path, may

__all__ = ["drop_interpreter", "drop_readable_bootstrap", "drop_target_problem", "staging_dir"]


# ---- uid drop -------------------------------------------------------------------------------------


_DIRS_CHILD = """
import sys
sys.path.insert(0, {directory!r})
import confine_grants
sys.stdout.write("\\0".join(confine_grants.essential_dirs()))
"""


def _essential_dirs_of(executable: str) -> list[str]:
    """The stdlib and lib-dynload dirs of another interpreter (asked by running it)."""
    done = run_probe([executable, "-I", "-S", "-c", _DIRS_CHILD.format(directory=CHILD_DIR)])
    if done.returncode != 0:
        raise OSError(f"{executable} failed: {output_tail(done.stderr)}")
    return [item for item in done.stdout.decode("utf-8", "surrogateescape").split("\0") if item]


def drop_target_problem(uid: int = 65534, gid: int = 65534, executable: str | None = None) -> str | None:
    """Why children run by ``executable`` (default ``sys.executable``) could not work as
    ``uid:gid`` after the uid drop of a root host, or ``None`` when they can.

    Checks (mode bits; ACLs ignored) that the interpreter binary can be executed and that its
    stdlib and lib-dynload are readable by that uid. A pyenv under ``/root`` (mode 0700) fails it,
    and :func:`confine.confine` would refuse with ``ConfinementError`` in such a child. Cached.
    """
    key = ("drop", uid, gid, executable)

    def compute() -> str | None:
        try:
            path = os.path.realpath(executable or sys.executable)
            blocked = inaccessible_path(uid, gid, [os.path.dirname(path)])
            if blocked is None and not may(os.stat(path), uid, gid, 1):
                blocked = path
            if blocked is None:
                same = executable is None or path == os.path.realpath(sys.executable)
                dirs = essential_dirs() if same else _essential_dirs_of(path)
                blocked = inaccessible_path(uid, gid, dirs)
        except Exception as error:
            return f"could not check: {type(error).__name__}: {error}"
        if blocked is None:
            return None
        return f"{blocked} is not accessible to uid {uid} / gid {gid}"

    return cached(key, compute)


# ---- a child interpreter for the uid drop ---------------------------------------------------------

_MIN_CHILD_PYTHON = (3, 11)
_FIXED_CANDIDATES = ("/usr/bin/python3", "/usr/local/bin/python3")
_VERSION_CHILD = "import sys; print(sys.version_info[:2])"


def _interpreter_candidates() -> list[str]:
    """``/usr/bin/python3``, ``/usr/local/bin/python3``, then ``python3.11`` ... ``python3.19`` on
    ``PATH``; existing files only, one per real path."""
    names = list(_FIXED_CANDIDATES)
    for minor in range(_MIN_CHILD_PYTHON[1], 20):
        found = shutil.which(f"python3.{minor}")
        if found:
            names.append(found)
    out: list[str] = []
    seen: set[str] = set()
    for name in names:
        real = os.path.realpath(name)
        if real not in seen and os.path.isfile(real):
            seen.add(real)
            out.append(name)
    return out


def _unusable_as(candidate: str, uid: int, gid: int) -> str | None:
    """Why ``candidate`` cannot serve as the child interpreter of a process that dropped to
    ``uid:gid``, or ``None``: its binary must be reachable and executable by that uid (mode bits,
    checked first, so a pyenv shim under ``/root`` is never run), it must start as that uid and say
    it is Python >= 3.11, and its stdlib and lib-dynload must be readable by that uid."""
    real = os.path.realpath(candidate)
    blocked = inaccessible_path(uid, gid, [os.path.dirname(real)])
    if blocked is None and not may(os.stat(real), uid, gid, 1):
        blocked = real
    if blocked is not None:
        return f"{blocked} is not accessible"
    done = run_probe(
        [real, "-I", "-S", "-c", _VERSION_CHILD], as_user=(uid, gid) if os.geteuid() == 0 else None
    )
    match = re.fullmatch(rb"\((\d+), (\d+)\)", done.stdout.strip())
    if done.returncode != 0 or match is None:
        return f"does not run as uid {uid} (exit {done.returncode}: {output_tail(done.stderr, 120)})"
    version = (int(match.group(1)), int(match.group(2)))
    if version < _MIN_CHILD_PYTHON:
        return f"Python {version[0]}.{version[1]} is older than 3.11"
    return drop_target_problem(uid, gid, executable=real)


def drop_interpreter(
    uid: int = 65534, gid: int = 65534, exclude: str | None = None
) -> tuple[str | None, str]:
    """A Python >= 3.11 that works as ``uid:gid`` (for a root host whose own interpreter does not),
    as ``(path, "")``, or ``(None, why not)``. Candidates: ``/usr/bin/python3``,
    ``/usr/local/bin/python3``, ``python3.1x`` on ``PATH``; ``exclude`` (the host's interpreter) is
    skipped. Each is verified by running it once, as that uid when the host is root. Cached."""
    key = ("drop-python", uid, gid, exclude)

    def compute() -> tuple[str | None, str]:
        excluded = os.path.realpath(exclude) if exclude else None
        tried: list[str] = []
        for candidate in _interpreter_candidates():
            if os.path.realpath(candidate) == excluded:
                continue
            try:
                problem = _unusable_as(candidate, uid, gid)
            except (OSError, subprocess.SubprocessError) as error:
                problem = f"could not check: {type(error).__name__}: {error}"
            if problem is None:
                return candidate, ""
            tried.append(f"{candidate}: {problem}")
        if not tried:
            return None, "no other Python (/usr/bin/python3, /usr/local/bin/python3, python3.1x on PATH)"
        return None, "no other Python works as that uid (" + "; ".join(tried) + ")"

    return cached(key, compute)


def _readable_by(uid: int, gid: int, files: Sequence[str]) -> bool:
    if inaccessible_path(uid, gid, sorted({os.path.dirname(path) for path in files})) is not None:
        return False
    return all(may(os.stat(path), uid, gid, 4) for path in files)


def _remove_at_exit(path: str) -> None:
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not in a forked child that inherited the handler
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(remove)


def staging_dir(prefix: str, uid: int = 65534, gid: int = 65534) -> str:
    """A new directory for files the host hands to its children: in the temporary directory (or
    ``/tmp`` when ``uid:gid`` cannot reach that), mode 0755 and owned by the host, so a child can
    read but not change what is in it; removed when this process exits. Raises ``OSError``."""
    parent = tempfile.gettempdir()
    if inaccessible_path(uid, gid, [parent]) is not None:
        parent = "/tmp"
    staged = tempfile.mkdtemp(prefix=prefix, dir=parent)
    _remove_at_exit(staged)
    os.chmod(staged, 0o755)
    return staged


def drop_readable_bootstrap(bootstrap: str, uid: int = 65534, gid: int = 65534) -> str:
    """The bootstrap a child that drops to ``uid:gid`` should run: ``bootstrap`` itself when it and
    the child's other modules beside it (``bootstrap.CHILD_FILES``; the package's copy of any that
    is missing there) are readable by that uid, else a copy of them all in a private, root-owned,
    mode-0755 temporary directory (removed at exit). The child reads them as root before the drop,
    so this keeps the child independent of the host's private tree rather than fixing a failure.
    Never raises (on error: ``bootstrap``). Cached."""
    key = ("drop-bootstrap", bootstrap, uid, gid)

    def compute() -> str:
        folder = os.path.dirname(os.path.abspath(bootstrap))
        sources = [os.path.abspath(bootstrap)]
        for name in CHILD_FILES[1:]:
            beside = os.path.join(folder, name)
            sources.append(beside if os.path.isfile(beside) else os.path.join(CHILD_DIR, name))
        try:
            if _readable_by(uid, gid, sources):
                return bootstrap
            staged = staging_dir("toolrt-sandbox-", uid, gid)
            for name, source in zip(CHILD_FILES, sources, strict=True):
                target = os.path.join(staged, name)
                shutil.copyfile(source, target)
                os.chmod(target, 0o644)
            copied = os.path.join(staged, CHILD_FILES[0])
            return copied if _readable_by(uid, gid, [copied]) else bootstrap
        except OSError:
            return bootstrap

    return cached(key, compute)
