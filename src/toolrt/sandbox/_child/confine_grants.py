"""Which files the sandbox child's interpreter must still read once it is confined, and whether a
uid could reach them.

:func:`default_read_paths` is the Landlock read(+execute) grant every confined interpreter needs;
:func:`inaccessible_path` is the preflight before the uid drop (an interpreter under ``/root`` stops
working as uid 65534), which the host's probes run too. Part of the child's confinement
(:mod:`confine`); loaded by path under ``python -I -S``. Standard library only (``os``, ``sys``).
"""

from __future__ import annotations

import os
import sys

__all__ = ["default_read_paths", "essential_dirs", "inaccessible_path", "may", "python_library_files"]


def _stdlib_dirs() -> list[str]:
    """The interpreter's stdlib dirs (those holding ``os.py``), from ``sys.base_prefix`` and, when
    different, ``sys.prefix`` (a venv's prefix normally holds only site-packages, so it adds none)."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    found: list[str] = []
    candidates: list[str] = []
    stdlib_dir = getattr(sys, "_stdlib_dir", None)
    if isinstance(stdlib_dir, str):
        candidates.append(stdlib_dir)
    for prefix in (sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix):
        for libdir in (getattr(sys, "platlibdir", "lib"), "lib"):
            candidates.append(os.path.join(prefix, libdir, version))
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if real not in found and os.path.isfile(os.path.join(real, "os.py")):
            found.append(real)
    return found


def _expand_without_site_packages(directory: str) -> list[str]:
    """``directory`` itself, or its entries minus ``site-packages``/``dist-packages`` when it holds
    one (a pyenv or python.org layout keeps site-packages inside the stdlib dir; Landlock can only
    allow, so excluding it means granting the siblings one by one)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return [directory]
    if "site-packages" not in names and "dist-packages" not in names:
        return [directory]
    return [
        os.path.join(directory, name)
        for name in sorted(names)
        if name not in ("site-packages", "dist-packages")
    ]


def _mapped_library_dirs(stdlib_parents: set[str]) -> list[str]:
    """Shared objects this process has mapped (libpython, libc, ...): their directory, or only the
    file itself when the directory is a Python prefix's lib dir (it also holds site-packages).
    Extension modules loaded from site-packages/dist-packages are skipped."""
    try:
        fd = os.open("/proc/self/maps", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return []
    chunks: list[bytes] = []
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    out: list[str] = []
    for raw in b"".join(chunks).split(b"\n"):
        fields = raw.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith(b"/"):
            continue
        path = os.fsdecode(fields[5])
        if path.endswith(" (deleted)") or ".so" not in os.path.basename(path):
            continue
        if "/site-packages/" in path or "/dist-packages/" in path:
            continue  # a third-party extension module, not one of the interpreter's libraries
        directory = os.path.dirname(path)
        grant = path if directory in stdlib_parents else directory
        if grant not in out:
            out.append(grant)
    return out


def _multiarch() -> str:
    value = getattr(sys.implementation, "_multiarch", None)
    if isinstance(value, str) and value:
        return value
    return f"{os.uname().machine}-linux-gnu"


def essential_dirs() -> list[str]:
    """The stdlib dirs and lib-dynload dirs the interpreter cannot work without."""
    out: list[str] = []
    for stdlib in _stdlib_dirs():
        out.append(stdlib)
        dynload = os.path.join(stdlib, "lib-dynload")
        if os.path.isdir(dynload):
            out.append(dynload)
    for entry in sys.path:
        if entry and os.path.basename(entry) == "lib-dynload" and os.path.isdir(entry):
            real = os.path.realpath(entry)
            if real not in out:
                out.append(real)
    return out


def default_read_paths() -> tuple[str, ...]:
    """Read(+execute) grants every confined interpreter needs; only paths that exist.

    The stdlib and lib-dynload (without site-packages/dist-packages), the directories of the shared
    libraries this interpreter has mapped, ``/usr/lib/<multiarch>``, ``/lib``, ``/lib64`` (resolved: on
    a merged-/usr system ``/lib`` is ``/usr/lib``, which holds ``python3/dist-packages``, so only its
    multiarch dir is granted), ``/etc/localtime``, ``/usr/share/zoneinfo``, ``/dev/null``,
    ``/dev/urandom``.
    """
    out: list[str] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        real = os.path.realpath(path)
        if real in seen or not os.path.exists(real):
            return
        seen.add(real)
        # Files keep their given name (/etc/localtime, /dev/null); directories their real path.
        out.append(real if os.path.isdir(real) else path)

    stdlib_dirs = _stdlib_dirs()
    for directory in essential_dirs():
        if directory in stdlib_dirs:
            # Entries of an already-resolved dir that exist: no realpath per entry (~200 of them).
            for path in _expand_without_site_packages(directory):
                if path not in seen:
                    seen.add(path)
                    out.append(path)
        else:
            add(directory)
    for path in _mapped_library_dirs({os.path.dirname(d) for d in stdlib_dirs}):
        add(path)
    multiarch = _multiarch()
    for path in (f"/usr/lib/{multiarch}", f"/lib/{multiarch}"):
        add(path)
    for path in ("/lib", "/lib64"):
        if os.path.realpath(path) != "/usr/lib":  # merged /usr: the multiarch dir is what is needed
            add(path)
    for path in ("/etc/localtime", "/usr/share/zoneinfo", "/dev/null", "/dev/urandom"):
        add(path)
    return tuple(out)


def python_library_files() -> list[str]:
    """The shared libpython this interpreter links (a framework's ``Python``, ``libpython3.X.dylib``
    or ``.so``), resolved; empty for a static build. Linux finds it in ``/proc/self/maps``
    (:func:`default_read_paths`); macOS has no such file, so the host's Seatbelt profile asks
    ``sysconfig`` (imported here, on first call: never in the confined child)."""
    import sysconfig

    try:
        settings = sysconfig.get_config_vars()
    except (ImportError, OSError):  # no _sysconfigdata: nothing to go on
        return []
    library = settings.get("LDLIBRARY")
    framework = settings.get("PYTHONFRAMEWORK")
    if not isinstance(library, str) or not library:
        return []
    if not settings.get("Py_ENABLE_SHARED") and not framework:
        return []
    candidates = [os.path.join(sys.base_prefix, os.path.basename(library))]
    for name in ("PYTHONFRAMEWORKPREFIX", "LIBDIR"):
        directory = settings.get(name)
        if isinstance(directory, str) and directory:
            candidates.append(os.path.join(directory, library))
    out: list[str] = []
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if real not in out and os.path.isfile(real):
            out.append(real)
    return out


def may(st: os.stat_result, uid: int, gid: int, need: int) -> bool:
    """Whether the mode bits of ``st`` give ``uid``/``gid`` (no supplementary groups) every bit of
    ``need`` (4 read, 2 write, 1 execute/search). ACLs are ignored."""
    if st.st_uid == uid:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid == gid:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    return bits & need == need


def inaccessible_path(uid: int, gid: int, paths: tuple[str, ...] | list[str]) -> str | None:
    """The first component a process with (uid, gid) and no supplementary groups could not traverse
    (search on every ancestor; read + search on each directory in ``paths``), or ``None``.

    Mode bits only (ACLs are ignored). Used before the uid drop: an interpreter installed under a
    directory such as ``/root`` (mode 0700) stops being importable once the child is uid 65534.
    """
    for path in paths:
        real = os.path.realpath(path)
        current = "/"
        parts = [part for part in real.split("/") if part]
        for index, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                st = os.stat(current)
            except OSError:
                return current
            last = index == len(parts) - 1
            need = 5 if last and os.path.isdir(current) else (4 if last else 1)
            if not may(st, uid, gid, need):
                return current
    return None
