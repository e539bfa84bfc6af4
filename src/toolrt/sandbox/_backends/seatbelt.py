"""The macOS backend (``sandbox-exec``): the Seatbelt profile a child runs under, and its probe.

The host starts each child as ``sandbox-exec -p <profile> <python> -I -S -X utf8 bootstrap.py <fd>``:
``sandbox-exec`` applies the profile to itself, then execs the interpreter, which inherits it (and
every process it could start would too). The profile is SBPL (Apple's TinyScheme dialect), deny by
default, and built per child by :func:`build_profile`:

- ``process-exec`` of the interpreter only; ``process-fork`` denied; signals to itself only;
- ``file-read*`` (and ``file-map-executable``, which gates ``dlopen``) of the interpreter, its
  stdlib and lib-dynload without site-packages (:func:`confine_grants.default_read_paths`, the same
  grant the Linux child gives itself through Landlock), its shared libpython, the bootstrap's
  directory, the runtime's ``read_paths`` and the system directories the interpreter needs;
- ``file-read*`` / ``file-write*`` of the private work dir only (no ``file-map-executable``: code
  the program writes cannot be loaded as a library);
- ``file-read-metadata`` of the ancestors of those paths (``realpath`` walks them);
- ``sysctl-read``; AF_UNIX socket creation (asyncio's self-pipe) but ``network*`` denied, so such
  a socket can connect or send to nothing; everything else denied.

Enforcement is **partial**: Seatbelt is deprecated by Apple (``sandbox-exec(1)``), undocumented, and
not kernel-namespaced like Linux (the program sees the host's process table and file-system
metadata outside its grants that the profile does not hide). **None of this is verified on real
macOS by this project's CI**, which runs Linux: the profile's rules, the system directory list and
the socket reasoning below come from public profiles and reports, not from a run; the probe
(:func:`probe_sandbox_exec`) runs the interpreter under the real profile before the backend is
used, so a profile macOS rejects refuses the backend (``sandbox-unavailable``) instead of failing
every run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from toolrt.sandbox._backends.probe import CHILD_DIR, cached, output_tail, run_probe
from toolrt.sandbox._child.confine_grants import default_read_paths, python_library_files

__all__ = [
    "SANDBOX_EXEC",
    "SandboxExecProbe",
    "UnsafePathError",
    "build_profile",
    "interpreter_reads",
    "probe_sandbox_exec",
    "sbpl_string",
]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

# What the interpreter reads on macOS besides its own files (resolved before use: Seatbelt matches
# the resolved path, and /etc, /tmp, /var are symlinks into /private there). UNVERIFIED on real
# macOS: gathered from public profiles (Chromium's, OpenAI Codex's base policy) and reports; the
# probe runs the interpreter under the result before the backend is used.
_SYSTEM_READS = (
    "/usr/lib",  # dyld and the system libraries' stubs (macOS 11+ keeps them in the shared cache)
    "/System/Library",  # frameworks; the dyld shared cache up to macOS 12 (/System/Library/dyld)
    "/System/Volumes/Preboot/Cryptexes/OS",  # the dyld shared cache from macOS 13 on
    "/private/var/db/dyld",  # the dyld shared cache before macOS 11
    "/private/var/db/timezone",  # zoneinfo: /etc/localtime and /usr/share/zoneinfo point here
    "/usr/share/zoneinfo",
    "/etc/localtime",
)
_DEVICES_READ = ("/dev/urandom", "/dev/random")
_DEVICES_READ_WRITE = ("/dev/null",)


class UnsafePathError(ValueError):
    """A path that cannot be written as an SBPL string literal safely (it has a control character)."""


def sbpl_string(text: str) -> str:
    """``text`` as an SBPL string literal: ``\\`` and ``"`` backslash-escaped (TinyScheme's reader,
    which SBPL's is, takes both escapes), so no path can close the literal and add a rule. Control
    characters (newline included) are refused with :class:`UnsafePathError` rather than trusted to
    the reader's other escapes."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
        raise UnsafePathError(f"{text!r} has a control character: not expressible in a Seatbelt profile")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _resolved(path: str) -> list[str]:
    """What Seatbelt would match for ``path``: its real path and, for a symlink, the link itself in
    its resolved directory (the lookup reads the link before it reaches the target)."""
    real = os.path.realpath(path)
    out = [real]
    if os.path.islink(path):
        link = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if link != real:
            out.append(link)
    return out


def _ancestors(paths: Iterable[str]) -> list[str]:
    """Every directory above ``paths`` (``/`` included), shortest first."""
    found: set[str] = set()
    for path in paths:
        current = os.path.dirname(path)
        while True:
            found.add(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return sorted(found, key=lambda item: (item.count("/"), item))


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without those another one's ``subpath`` already covers, shortest first."""
    kept: list[str] = []
    for path in sorted(set(paths), key=lambda item: (len(item), item)):
        if not any(path == done or path.startswith(done.rstrip("/") + "/") for done in kept):
            kept.append(path)
    return kept


def interpreter_reads() -> tuple[str, ...]:
    """What this interpreter reads once confined: :func:`confine_grants.default_read_paths` (stdlib
    without site-packages, lib-dynload, the libraries Linux shows in ``/proc/self/maps``, zoneinfo,
    ``/dev/null``, ``/dev/urandom``) and its shared libpython. For another interpreter, see
    :func:`interpreter_reads_of`."""
    return tuple(dict.fromkeys([*default_read_paths(), *python_library_files()]))


_READS_CHILD = """
import sys
sys.path.insert(0, {directory!r})
import confine_grants
sys.stdout.write("\\0".join([*confine_grants.default_read_paths(), *confine_grants.python_library_files()]))
"""


def interpreter_reads_of(python: str) -> tuple[str, ...]:
    """:func:`interpreter_reads` of ``python``: computed here for this process's own interpreter,
    else by running ``python`` once (cached). Raises ``OSError`` when it cannot be run."""
    own = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    if os.path.realpath(python) in (own, os.path.realpath(sys.executable)):
        return interpreter_reads()

    def compute() -> tuple[str, ...]:
        done = run_probe([python, "-I", "-S", "-c", _READS_CHILD.format(directory=CHILD_DIR)])
        if done.returncode != 0:
            raise OSError(f"{python} failed: {output_tail(done.stderr)}")
        return tuple(item for item in done.stdout.decode("utf-8", "surrogateescape").split("\0") if item)

    return cached(("seatbelt-reads", os.path.realpath(python)), compute)


def build_profile(
    python: str,
    reads: Sequence[str],
    workdir: str,
    bootstrap_dir: str | None = None,
    read_paths: Sequence[str] = (),
) -> tuple[str, list[str]]:
    """The SBPL profile of one child and the notes it needs (grants that were left out).

    ``python`` is the interpreter (the only program), ``reads`` its own files
    (:func:`interpreter_reads_of`), ``workdir`` the private work dir (the only writable place),
    ``bootstrap_dir`` the bootstrap's directory and ``read_paths`` the runtime's extra read-only
    paths (missing ones are skipped, as bwrap skips them). Raises :class:`UnsafePathError` when the
    interpreter, the work dir or the bootstrap's directory cannot be written safely; any other path
    that cannot is left out with a note.
    """
    notes: list[str] = []
    executable = os.path.realpath(python)
    work = os.path.realpath(workdir)
    essential = [executable, work] + ([os.path.realpath(bootstrap_dir)] if bootstrap_dir else [])
    for path in essential:
        sbpl_string(path)  # raises for a path that cannot be written safely

    def usable(paths: Iterable[str], what: str) -> list[str]:
        kept: list[str] = []
        for path in paths:
            for resolved in _resolved(path):
                try:
                    sbpl_string(resolved)
                except UnsafePathError as error:
                    notes.append(f"{what} {path!r} not granted: {error}")
                    continue
                if resolved not in kept:
                    kept.append(resolved)
        return kept

    system = usable([path for path in _SYSTEM_READS if os.path.lexists(path)], "system path")
    own = usable(reads, "interpreter path")
    extra = usable([path for path in read_paths if os.path.exists(path)], "read path")
    code = [executable, *own, *system]
    if bootstrap_dir:
        code.append(os.path.realpath(bootstrap_dir))
    code += extra
    code = _outermost(path for path in code if path not in _DEVICES_READ + _DEVICES_READ_WRITE)
    devices_read = [path for path in _DEVICES_READ if os.path.exists(path)]
    devices_write = [path for path in _DEVICES_READ_WRITE if os.path.exists(path)]
    metadata = _ancestors([*code, *devices_read, *devices_write, work, *essential])

    def filters(kind: str, paths: Iterable[str]) -> str:
        return "".join(f"\n  ({kind} {sbpl_string(path)})" for path in paths)

    lines = [
        "(version 1)",
        "(deny default)",
        "; The interpreter is the only program: sandbox-exec applies this profile, then execs it.",
        f"(allow process-exec (literal {sbpl_string(executable)}))",
        "(deny process-fork)",
        "(allow signal (target self))",
        "(allow sysctl-read)",
        # Sockets. The channel to the host is a connected AF_UNIX socket the child inherits as an fd:
        # sandbox(7) says restrictions apply when a resource is acquired (open, connect, bind), not
        # to using a descriptor already held, so it needs no rule. Creating an AF_UNIX socket is
        # the system-socket operation (asyncio's self-pipe is a socketpair); connecting one, binding
        # one or sending to a path is network-outbound / network-bind, which stays denied
        # (nolabs-ai/nono#488, qntx/bux#76). UNVERIFIED on real macOS.
        "(allow system-socket (socket-domain AF_UNIX))",
        "(deny network*)",
        f"(allow file-read* file-map-executable{filters('subpath', code)})",
    ]
    if devices_read:
        lines.append(f"(allow file-read*{filters('literal', devices_read)})")
    if devices_write:
        lines.append(f"(allow file-read* file-write-data{filters('literal', devices_write)})")
    lines += [
        f"(allow file-read-metadata{filters('literal', metadata)})",
        f"(allow file-read* file-write* (subpath {sbpl_string(work)}))",
    ]
    return "\n".join(lines) + "\n", notes


# ---- the probe ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SandboxExecProbe:
    """Verdict on ``sandbox-exec``: ``works`` means it ran ``/usr/bin/true`` under an allow-all
    profile *and* the interpreter started under a real profile, wrote in its work dir, and could
    neither read ``/etc/passwd`` nor fork. ``reads`` are the interpreter's grants."""

    path: str | None
    works: bool
    reason: str
    reads: tuple[str, ...] = ()


_FUNCTIONAL_CHILD = """
import os
with open("probe", "w") as handle:
    handle.write("ok")
try:
    open("/etc/passwd", "rb").close()
except OSError:
    pass
else:
    raise SystemExit("the profile is not enforced: /etc/passwd is readable")
try:
    pid = os.fork()
except OSError:
    pass
else:
    if pid == 0:
        os._exit(0)
    raise SystemExit("the profile is not enforced: fork() succeeded")
print("seatbelt-ok")
"""


def probe_sandbox_exec(python: str | None = None, path: str = SANDBOX_EXEC) -> SandboxExecProbe:
    """Whether ``sandbox-exec`` (macOS) can confine children run by ``python`` (default: this
    interpreter's base executable). Cached; never raises."""
    executable = os.path.realpath(python or getattr(sys, "_base_executable", None) or sys.executable)
    key = ("sandbox-exec", executable, path)

    def compute() -> SandboxExecProbe:
        darwin = sys.platform == "darwin"  # (a plain bool: mypy checks the rest on every platform)
        if not darwin:
            return SandboxExecProbe(None, False, f"sandbox-exec is macOS's (this is {sys.platform})")
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            return SandboxExecProbe(None, False, f"no executable {path}")
        try:
            done = run_probe([path, "-p", "(version 1)(allow default)", "/usr/bin/true"])
            if done.returncode != 0:
                why = f"exited {done.returncode}: {output_tail(done.stderr)}"
                return SandboxExecProbe(path, False, f"{path} with an allow-all profile {why}")
            reads = interpreter_reads_of(executable)
        except (OSError, subprocess.SubprocessError) as error:
            return SandboxExecProbe(path, False, f"{path} could not be run: {error}")
        return _functional(path, executable, reads)

    return cached(key, compute)


def _functional(path: str, python: str, reads: tuple[str, ...]) -> SandboxExecProbe:
    workdir = tempfile.mkdtemp(prefix="toolrt-seatbelt-probe-")
    try:
        profile, _ = build_profile(python, reads, workdir)
        argv = [path, "-p", profile, python, "-I", "-S", "-X", "utf8", "-c", _FUNCTIONAL_CHILD]
        done = subprocess.run(
            argv,
            env={},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10.0,
            close_fds=True,
            start_new_session=True,
            cwd=workdir,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        return SandboxExecProbe(path, False, f"the interpreter could not be run under the profile: {error}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if done.returncode != 0 or done.stdout.strip() != b"seatbelt-ok":
        why = output_tail(done.stderr) or output_tail(done.stdout) or f"exit {done.returncode}"
        return SandboxExecProbe(
            path, False, f"the interpreter does not run under its Seatbelt profile: {why}"
        )
    return SandboxExecProbe(path, True, "functional run succeeded", reads)
