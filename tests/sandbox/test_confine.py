"""Confinement layers and capability probes of the Python sandbox, checked with real child processes.

Every behavioural test starts a fresh ``python -I -S`` child that imports ``confine.py`` by path (as
the bootstrap does), confines itself and then attempts something. The verdict rests on host-side
evidence wherever there is any: a canary file that must not be read or created, listeners that must
record nothing, a decoy process that must not be signalled. Children run in two modes: as the
test's own user (root here, so the uid drop is exercised) and, when the tests run as root with
``setpriv`` available, as an unprivileged uid from the start.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolrt.sandbox._backends import probe, uid_drop
from toolrt.sandbox._child import (
    confine,
    confine_grants,
    confine_landlock,
    confine_policy,
    confine_seccomp,
    confine_syscalls,
    seccomp_tables,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux-only confinement")

SANDBOX_DIR = str(Path(confine.__file__).resolve().parent)
NOBODY = 65534
IS_ROOT = os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
RUNUSER = shutil.which("runuser")
HOST_ABI = confine_landlock.landlock_abi()
# Where a child started as uid 65534 loads the confinement modules: the package itself, or, for a
# checkout under a directory that uid cannot enter (a clone in /root or in a mode-0700 temporary
# folder), the copy the runtime stages for such children (uid_drop.drop_readable_bootstrap).
CHILD_DIR = (
    os.path.dirname(
        uid_drop.drop_readable_bootstrap(os.path.join(SANDBOX_DIR, "bootstrap.py"), NOBODY, NOBODY)
    )
    if IS_ROOT
    else SANDBOX_DIR
)
ARCH = confine_syscalls.seccomp_arch()

needs_kernel = pytest.mark.skipif(
    HOST_ABI is None or ARCH is None, reason="needs Landlock and a supported seccomp architecture"
)


# ---- choosing the child interpreter and the mode ---------------------------------------------------


@functools.cache
def _works(executable: str) -> bool:
    try:
        done = subprocess.run(
            [executable, "-I", "-S", "-c", "import sys; assert sys.version_info >= (3, 11)"],
            env={},
            capture_output=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0


@functools.cache
def child_python() -> str | None:
    """An interpreter the confined child can use: when root, one whose stdlib uid 65534 can read
    (a pyenv under /root cannot be used after the uid drop)."""
    base = getattr(sys, "_base_executable", None)
    candidates = [sys.executable, base, "/usr/bin/python3", shutil.which("python3")]
    for candidate in candidates:
        if not isinstance(candidate, str) or not os.path.exists(candidate) or not _works(candidate):
            continue
        if IS_ROOT and uid_drop.drop_target_problem(NOBODY, NOBODY, executable=candidate) is not None:
            continue
        return candidate
    return None


def _user_prefix() -> list[str] | None:
    if not IS_ROOT:
        return None
    if SETPRIV:
        return [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    if RUNUSER:
        try:
            import pwd

            name = pwd.getpwuid(NOBODY).pw_name
        except (KeyError, ImportError):
            return None
        return [RUNUSER, "-u", name, "--"]
    return None


MODES = ["self", "user"]


def _mode_skip(mode: str) -> None:
    if child_python() is None:
        pytest.skip("no interpreter usable by the confined child (root needs one readable by uid 65534)")
    if mode == "user" and _user_prefix() is None:
        pytest.skip("needs root and setpriv or runuser to start the child as an unprivileged user")


# ---- the sandbox fixture ----------------------------------------------------------------------------


@dataclass
class Box:
    base: Path
    work: Path
    outside: Path
    canary: Path
    canary_text: str
    token: str

    def owner(self) -> int:
        return NOBODY if IS_ROOT else os.geteuid()


@pytest.fixture
def box() -> Iterator[Box]:
    base = Path(tempfile.mkdtemp(prefix="toolrt-confine-"))
    base.chmod(0o755)
    work = base / "work"
    work.mkdir(mode=0o700)
    outside = base / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # the file-mode bits would let anyone write here: only Landlock stops it
    canary = outside / "secret.txt"
    canary_text = "CANARY-" + secrets.token_hex(8)
    canary.write_text(canary_text)
    canary.chmod(0o644)  # readable by anyone as far as the mode bits go
    if IS_ROOT:
        os.chown(work, NOBODY, NOBODY)
    token = secrets.token_hex(6)
    try:
        yield Box(base, work, outside, canary, canary_text, token)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        for stray in (Path("/tmp") / f"toolrt-escape-{token}", Path("/dev/shm") / f"toolrt-escape-{token}"):
            stray.unlink(missing_ok=True)


PRELUDE = """
import os, sys
sys.path.insert(0, {sandbox_dir!r})
import confine
import confine_policy
policy = confine_policy.ConfinementPolicy(
    cpu_seconds=20, memory_bytes=1 << 30, read_write_paths=({work!r},), **{extra!r}
)
try:
    report = confine.confine(policy)
except confine_policy.ConfinementError as error:
    import json
    print("ERROR " + json.dumps({{"message": str(error), "report": error.report}}), flush=True)
    raise SystemExit(3)
import json
print("REPORT " + json.dumps(report), flush=True)

def out(name, status, detail=""):
    print("RESULT " + json.dumps([name, status, str(detail)[:300]]), flush=True)

def attempt(name, fn):
    try:
        value = fn()
    except BaseException as error:
        out(name, "denied", type(error).__name__ + ": " + str(error))
        return None
    out(name, "allowed", repr(value))
    return value

import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def raw(nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    if result == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result
"""


@dataclass
class Run:
    returncode: int
    report: dict[str, Any] | None
    error: dict[str, Any] | None
    results: dict[str, tuple[str, str]]
    stdout: str
    stderr: str

    def status(self, name: str) -> str:
        assert name in self.results, f"{name} did not run\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        return self.results[name][0]

    def detail(self, name: str) -> str:
        self.status(name)
        return self.results[name][1]


def run_child(
    box: Box,
    body: str,
    mode: str = "self",
    extra: dict[str, object] | None = None,
    prelude: str = PRELUDE,
    timeout: float = 60,
) -> Run:
    python = child_python()
    assert python is not None
    code = prelude.format(sandbox_dir=CHILD_DIR, work=str(box.work), extra=extra or {})
    code += "\n" + textwrap.dedent(body)
    argv = [python, "-I", "-S", "-c", code]
    if mode == "user":
        prefix = _user_prefix()
        assert prefix is not None
        argv = prefix + argv
    done = subprocess.run(
        argv,
        env={"MALLOC_ARENA_MAX": "1"},
        cwd=str(box.work),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        close_fds=True,
        check=False,
    )
    stdout = done.stdout.decode("utf-8", "replace")
    report = error = None
    results: dict[str, tuple[str, str]] = {}
    for line in stdout.splitlines():
        if line.startswith("REPORT "):
            report = json.loads(line[7:])
        elif line.startswith("ERROR "):
            error = json.loads(line[6:])
        elif line.startswith("RESULT "):
            name, status, detail = json.loads(line[7:])
            results[name] = (status, detail)
    return Run(done.returncode, report, error, results, stdout, done.stderr.decode("utf-8", "replace"))


def expected_uid(mode: str) -> int:
    return NOBODY if IS_ROOT else os.geteuid()


# ---- report -----------------------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_report_lists_the_layers_in_order(box: Box, mode: str) -> None:
    _mode_skip(mode)
    run = run_child(box, "out('uid', 'allowed', os.getresuid())", mode)
    assert run.returncode == 0, run.stderr
    assert run.report is not None
    dropped = IS_ROOT and mode == "self"
    expected = ["rlimits", "uid-drop", "no-new-privs", "landlock", "seccomp"]
    if not dropped:
        expected.remove("uid-drop")
    assert run.report["layers"] == expected
    assert run.report["landlockAbi"] == HOST_ABI
    assert run.report["enforcement"] == ("full" if HOST_ABI and HOST_ABI >= 3 else "partial")
    notes = run.report["notes"]
    assert isinstance(notes, list) and all(isinstance(n, str) and len(n) <= 512 for n in notes)
    assert len(notes) <= 64
    uid = expected_uid(mode)
    assert run.detail("uid") == repr((uid, uid, uid))


# ---- file system ------------------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_files_outside_the_grants_are_neither_read_nor_written(box: Box, mode: str) -> None:
    _mode_skip(mode)
    link = box.work / "link-to-secret"
    link.symlink_to(box.canary)  # planted by the host: the child must not follow it to the secret
    if IS_ROOT:
        os.lchown(link, NOBODY, NOBODY)
    owned = box.outside / "owned.txt"  # the child's own uid owns it: only confinement protects it
    owned.write_text("mine")
    owned.chmod(0o644)
    os.utime(owned, (1_000_000, 1_000_000))
    if IS_ROOT:
        os.chown(owned, NOBODY, NOBODY)
    escape_tmp = Path("/tmp") / f"toolrt-escape-{box.token}"
    escape_shm = Path("/dev/shm") / f"toolrt-escape-{box.token}"
    written_outside = box.outside / "written.txt"
    body = f"""
    def read(path):
        with open(path) as handle:
            return handle.read()
    def write(path):
        with open(path, "w") as handle:
            handle.write("escaped")
    attempt("passwd", lambda: read("/etc/passwd"))
    attempt("canary", lambda: read({str(box.canary)!r}))
    attempt("symlink", lambda: read({str(link)!r}))
    attempt("hardlink", lambda: os.link({str(box.canary)!r}, {str(box.work / "hard")!r}))
    attempt("environ", lambda: read("/proc/self/environ"))
    attempt("parent_environ", lambda: read(f"/proc/{{os.getppid()}}/environ"))
    attempt("list_root", lambda: os.listdir("/"))
    attempt("list_outside", lambda: os.listdir({str(box.outside)!r}))
    attempt("dist_packages", lambda: os.listdir("/usr/lib/python3/dist-packages"))
    attempt("write_outside", lambda: write({str(written_outside)!r}))
    attempt("write_tmp", lambda: write({str(escape_tmp)!r}))
    attempt("write_shm", lambda: write({str(escape_shm)!r}))
    attempt("write_inside", lambda: write("inside.txt"))
    attempt("mkdir_inside", lambda: os.makedirs("sub/dir"))
    attempt("rename_inside", lambda: os.rename("inside.txt", "sub/moved.txt"))
    attempt("read_inside", lambda: read("sub/moved.txt"))
    attempt("symlink_inside", lambda: os.symlink("/etc/passwd", "made-link"))
    attempt("devnull", lambda: write("/dev/null"))
    theirs = {str(box.outside / "owned.txt")!r}
    attempt("chmod_outside", lambda: os.chmod(theirs, 0o777))
    attempt("chown_outside", lambda: os.chown(theirs, os.getuid(), os.getgid()))
    attempt("utime_outside", lambda: os.utime(theirs, (0, 0)))
    attempt("xattr_outside", lambda: os.setxattr(theirs, "user.toolrt", b"1"))
    def fd_metadata():
        fd = os.open("fd-meta.txt", os.O_CREAT | os.O_WRONLY, 0o600)
        os.fchmod(fd, 0o640)
        os.utime(fd, (1, 1))
        os.close(fd)
        return oct(os.stat("fd-meta.txt").st_mode & 0o777), os.stat("fd-meta.txt").st_mtime
    attempt("fd_metadata", fd_metadata)
    attempt("chmod_inside", lambda: os.chmod("fd-meta.txt", 0o600))
    attempt("urandom", lambda: len(open("/dev/urandom", "rb").read(8)))
    """
    run = run_child(box, body, mode)
    assert run.returncode == 0, run.stderr
    for name in ("passwd", "canary", "symlink", "hardlink", "environ", "parent_environ", "list_root"):
        assert run.status(name) == "denied", (name, run.detail(name))
    for name in ("list_outside", "write_outside", "write_tmp", "write_shm", "symlink_inside"):
        assert run.status(name) == "denied", (name, run.detail(name))
    if Path("/usr/lib/python3/dist-packages").is_dir():
        assert run.status("dist_packages") == "denied"
    assert box.canary_text not in run.stdout + run.stderr
    # Host-side evidence: nothing appeared outside, the work dir got exactly what was written.
    assert not written_outside.exists()
    assert not escape_tmp.exists()
    assert not escape_shm.exists()
    assert not (box.work / "hard").exists()
    assert not (box.work / "made-link").is_symlink()
    for name in ("chmod_outside", "chown_outside", "utime_outside", "xattr_outside", "chmod_inside"):
        assert run.status(name) == "denied", (name, run.detail(name))
    assert run.detail("fd_metadata") == "('0o640', 1.0)"
    assert owned.stat().st_mode & 0o777 == 0o644
    assert owned.stat().st_mtime == 1_000_000
    assert not os.listxattr(owned)
    for name in ("write_inside", "mkdir_inside", "rename_inside", "read_inside", "devnull", "urandom"):
        assert run.status(name) == "allowed", (name, run.detail(name))
    assert (box.work / "sub" / "moved.txt").read_text() == "escaped"
    assert (box.work / "sub" / "moved.txt").stat().st_uid == expected_uid(mode)


# ---- network ----------------------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_no_network_reaches_host_listeners(box: Box, mode: str) -> None:
    _mode_skip(mode)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix_path = str(box.outside / "host.sock")
    unix_dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    unix_dgram.bind(unix_path)
    os.chmod(unix_path, 0o777)
    unix_dgram.setblocking(False)
    abstract_name = f"\0toolrt-confine-{box.token}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(abstract_name)
    abstract.listen(8)
    abstract.setblocking(False)
    tcp_port, udp_port = tcp.getsockname()[1], udp.getsockname()[1]
    body = f"""
    import socket
    attempt("socket", lambda: socket.socket())
    attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {tcp_port}), timeout=2))
    attempt("tcp6", lambda: socket.create_connection(("::1", {tcp_port}), timeout=2))
    udp = lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    attempt("udp", lambda: udp().sendto(b"x", ("127.0.0.1", {udp_port})))
    attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", {unix_path!r}))
    attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect({abstract_name!r}))
    attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
    attempt("raw_socket", lambda: raw({_nr("socket")}, 2, 2, 0))
    attempt("dgram_pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
    attempt("inet_pair", lambda: raw({_nr("socketpair")}, 2, 1, 0, 0))
    pair = attempt("stream_pair", lambda: socket.socketpair())
    if pair is not None:
        attempt("pair_works", lambda: (pair[0].send(b"ping"), pair[1].recv(4)))
        attempt("pair_sendto_path", lambda: pair[0].sendto(b"x", {unix_path!r}))
    attempt("io_uring", lambda: raw({_nr("io_uring_setup")}, 8, 0))
    """
    try:
        run = run_child(box, body, mode)
        assert run.returncode == 0, run.stderr
        for name in ("socket", "tcp", "tcp6", "udp", "unix", "abstract", "netlink", "raw_socket"):
            assert run.status(name) == "denied", (name, run.detail(name))
        assert "Permission denied" in run.detail("raw_socket")
        for name in ("dgram_pair", "inet_pair", "pair_sendto_path", "io_uring"):
            assert run.status(name) == "denied", (name, run.detail(name))
        assert run.status("stream_pair") == "allowed"
        assert run.detail("pair_works") == "(4, b'ping')"
        # Host-side evidence: every listener is untouched.
        with pytest.raises(BlockingIOError):
            tcp.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(64)
        with pytest.raises(BlockingIOError):
            unix_dgram.recvfrom(64)
        with pytest.raises(BlockingIOError):
            abstract.accept()
    finally:
        for sock in (tcp, udp, unix_dgram, abstract):
            sock.close()


def _nr(name: str) -> int:
    column = 1 if ARCH == "x86_64" else 2
    for row in seccomp_tables.TABLE:
        if row[0] == name:
            nr = row[column]
            assert isinstance(nr, int)
            return nr
    raise KeyError(name)


# ---- processes and signals -------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_no_process_creation(box: Box, mode: str) -> None:
    _mode_skip(mode)
    markers = {name: box.outside / f"{name}-ran" for name in ("subprocess", "system", "libc_system")}
    body = f"""
    import subprocess
    attempt("fork", lambda: os.fork())
    attempt("subprocess", lambda: subprocess.run(["/usr/bin/touch", {str(markers["subprocess"])!r}]))
    attempt("system", lambda: os.system("touch {markers["system"]}"))
    attempt("libc_system", lambda: libc.system(b"touch {markers["libc_system"]}"))
    attempt("execv", lambda: os.execv("/usr/bin/true", ["true"]))
    attempt("posix_spawn", lambda: os.posix_spawn("/usr/bin/true", ["true"], {{}}))
    attempt("clone3", lambda: raw({_nr("clone3")}, 0, 0))
    attempt("memfd", lambda: os.memfd_create("x"))
    """
    run = run_child(box, body, mode)
    assert run.returncode == 0, run.stderr
    for name in ("fork", "subprocess", "execv", "posix_spawn", "memfd"):
        assert run.status(name) == "denied", (name, run.detail(name))
    assert "Function not implemented" in run.detail("clone3")
    for name in ("system", "libc_system"):  # these report failure as a return value
        assert run.status(name) == "allowed" and run.detail(name) != "0", (name, run.detail(name))
    for marker in markers.values():
        assert not marker.exists(), marker


DECOY = """
import os, signal, sys, time
hit = sys.argv[1]
def on_signal(signum, frame):
    with open(hit, "w") as handle:
        handle.write(str(signum))
signal.signal(signal.SIGUSR1, on_signal)
print("ready", flush=True)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    time.sleep(0.05)
"""


@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_signals_reach_only_the_child_itself(box: Box, mode: str) -> None:
    _mode_skip(mode)
    python = child_python()
    assert python is not None
    hit = box.outside / "decoy-hit"
    # The decoy runs as the same uid as the confined child, so only confinement can stop the signal.
    prefix = _user_prefix() if IS_ROOT else []
    decoy = subprocess.Popen(
        [*(prefix or []), python, "-I", "-S", "-c", DECOY, str(hit)],
        stdout=subprocess.PIPE,
        env={},
        start_new_session=True,
    )
    try:
        assert decoy.stdout is not None
        assert decoy.stdout.readline().strip() == b"ready"
        body = f"""
        import signal
        got = []
        signal.signal(signal.SIGUSR2, lambda signum, frame: got.append(signum))
        attempt("decoy", lambda: os.kill({decoy.pid}, signal.SIGUSR1))
        attempt("parent", lambda: os.kill(os.getppid(), 0))
        attempt("everyone", lambda: os.kill(-1, 0))
        attempt("group", lambda: os.kill(0, 0))
        attempt("tgkill_decoy", lambda: raw({_nr("tgkill")}, {decoy.pid}, {decoy.pid}, 0))
        attempt("sigqueue_decoy", lambda: raw({_nr("rt_sigqueueinfo")}, {decoy.pid}, 0, 0))
        attempt("self", lambda: os.kill(os.getpid(), 0))
        attempt("raise", lambda: (signal.raise_signal(signal.SIGUSR2), got)[1])
        attempt("ptrace", lambda: raw({_nr("ptrace")}, 0x4206, {decoy.pid}, 0, 0))
        attempt("decoy_mem", lambda: open(f"/proc/{decoy.pid}/mem", "rb"))
        """
        run = run_child(box, body, mode)
        assert run.returncode == 0, run.stderr
        for name in ("decoy", "parent", "everyone", "group", "tgkill_decoy", "sigqueue_decoy", "ptrace"):
            assert run.status(name) == "denied", (name, run.detail(name))
        assert run.status("decoy_mem") == "denied"
        assert run.status("self") == "allowed"
        assert run.detail("raise") == f"[{int(signal.SIGUSR2)}]"
        time.sleep(0.2)
        assert not hit.exists(), "the decoy was signalled"
        assert decoy.poll() is None, "the decoy died"
    finally:
        decoy.kill()
        decoy.wait()


# ---- kernel surface, privileges and limits ---------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_kernel_surface_and_privileges_stay_closed(box: Box, mode: str) -> None:
    _mode_skip(mode)
    body = f"""
    import resource
    CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
    attempt("unshare_user", lambda: raw({_nr("unshare")}, CLONE_NEWUSER))
    attempt("unshare_net", lambda: raw({_nr("unshare")}, CLONE_NEWNET))
    attempt("clone_newuser", lambda: raw({_nr("clone")}, CLONE_NEWUSER | 17, 0, 0, 0, 0))
    attempt("setns", lambda: raw({_nr("setns")}, 0, 0))
    attempt("mount", lambda: raw({_nr("mount")}, 0, 0, 0, 0, 0))
    attempt("bpf", lambda: raw({_nr("bpf")}, 0, 0, 0))
    attempt("perf", lambda: raw({_nr("perf_event_open")}, 0, 0, -1, -1, 0))
    attempt("userfaultfd", lambda: raw({_nr("userfaultfd")}, 0))
    attempt("keyctl", lambda: raw({_nr("keyctl")}, 0, 0))
    attempt("personality", lambda: raw({_nr("personality")}, 0xFFFFFFFF))
    attempt("shmget", lambda: raw({_nr("shmget")}, 0, 4096, 0o1666))
    attempt("mq_open", lambda: raw({_nr("mq_open")}, 0, 0, 0, 0))
    attempt("inotify", lambda: raw({_nr("inotify_init1")}, 0))
    attempt("setuid0", lambda: os.setuid(0))
    attempt("raise_as", lambda: resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2))
    attempt("raise_nofile", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096)))
    attempt("prlimit_set", lambda: resource.prlimit(0, resource.RLIMIT_CPU, (1000, 1000)))
    attempt("nice_up", lambda: os.nice(-5))
    attempt("nice_down", lambda: os.nice(1))
    attempt("rt_sched", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)))
    attempt("getrlimit_as", lambda: resource.getrlimit(resource.RLIMIT_AS))
    attempt("getrlimit_cpu", lambda: resource.getrlimit(resource.RLIMIT_CPU))
    attempt("getrlimit_core", lambda: resource.getrlimit(resource.RLIMIT_CORE))
    PR_GET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_GET_NO_NEW_PRIVS = 2, 3, 4, 39
    attempt("no_new_privs", lambda: libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0))
    attempt("dumpable", lambda: libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
    attempt("set_dumpable", lambda: raw({_nr("prctl")}, PR_SET_DUMPABLE, 1, 0, 0, 0))
    sig = ctypes.c_int(0)
    attempt("pdeathsig", lambda: (libc.prctl(PR_GET_PDEATHSIG, ctypes.byref(sig), 0, 0, 0), sig.value)[1])
    attempt("ids", lambda: (os.getresuid(), os.getresgid(), os.getgroups()))
    attempt("capeff", lambda: [l for l in open("/proc/self/status") if l.startswith("CapEff")])
    """
    run = run_child(box, body, mode)
    assert run.returncode == 0, run.stderr
    denied = [
        "unshare_user", "unshare_net", "clone_newuser", "setns", "mount", "bpf", "perf",
        "userfaultfd", "keyctl", "personality", "shmget", "mq_open", "inotify", "setuid0",
        "raise_as", "raise_nofile", "prlimit_set", "nice_up", "nice_down", "rt_sched", "set_dumpable",
    ]  # fmt: skip
    for name in denied:
        assert run.status(name) == "denied", (name, run.detail(name))
    assert run.detail("getrlimit_as") == repr((1 << 30, 1 << 30))
    assert run.detail("getrlimit_cpu") == "(20, 21)"
    assert run.detail("getrlimit_core") == "(0, 0)"
    assert run.detail("no_new_privs") == "1"
    assert run.detail("dumpable") == "0"
    assert run.detail("pdeathsig") == str(int(signal.SIGKILL))
    uid = expected_uid(mode)
    assert run.detail("ids") == repr(((uid,) * 3, (uid,) * 3, []))
    # /proc/self/status is outside the grants as well; capabilities are checked through the uid.
    assert run.status("capeff") == "denied"


# ---- what must keep working ------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_threads_stdlib_and_asyncio_still_work(box: Box, mode: str) -> None:
    _mode_skip(mode)
    body = """
    import threading
    def threads():
        seen = []
        lock = threading.Lock()
        def work(i):
            with lock:
                seen.append(i)
        started = [threading.Thread(target=work, args=(i,)) for i in range(10)]
        for thread in started:
            thread.start()
        for thread in started:
            thread.join()
        return sorted(seen) == list(range(10))
    attempt("threads", threads)

    def stdlib():
        import json, asyncio, datetime, zoneinfo, hashlib, random, decimal, re, collections
        return (
            json.loads(json.dumps({"a": [1, 2]})) == {"a": [1, 2]},
            str(zoneinfo.ZoneInfo("Europe/Paris")),
            datetime.datetime(2024, 1, 1, tzinfo=zoneinfo.ZoneInfo("UTC")).isoformat(),
            datetime.datetime.now().astimezone().tzinfo is not None,
            hashlib.sha256(b"abc").hexdigest()[:8],
            0 <= random.random() < 1,
            len(os.urandom(16)),
        )
    attempt("stdlib", stdlib)

    def event_loop():
        import asyncio
        async def main():
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(None, lambda: 21 * 2)
            await asyncio.sleep(0.01)
            results = await asyncio.gather(*(asyncio.sleep(0, result=i) for i in range(5)))
            loop.call_soon_threadsafe(lambda: None)
            return value, results
        return asyncio.run(main())
    attempt("asyncio", event_loop)
    """
    run = run_child(box, body, mode)
    assert run.returncode == 0, run.stderr
    assert run.detail("threads") == "True"
    assert run.detail("stdlib") == (
        "(True, 'Europe/Paris', '2024-01-01T00:00:00+00:00', True, 'ba7816bf', True, 16)"
    )
    assert run.detail("asyncio") == "(42, [0, 1, 2, 3, 4])"


# ---- architecture checks ---------------------------------------------------------------------------


@needs_kernel
@needs_kernel
@pytest.mark.parametrize("mode", MODES)
def test_a_private_task_count_keeps_the_ids_and_no_capability(box: Box, mode: str) -> None:
    """``private_task_count``: RLIMIT_NPROC counted in a user namespace of the child's own. The ids
    read as before (identity maps), the capabilities the new namespace hands out are gone, and the
    limit is still the policy's (issue 12: concurrent runs of one uid starved each other)."""
    _mode_skip(mode)
    body = """
    import resource, threading, time
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    attempt("capget", lambda: (libc.capget(hdr, data), list(data))[1])
    attempt("ids", lambda: (os.getresuid(), os.getresgid(), os.getgroups()))
    attempt("nproc", lambda: resource.getrlimit(resource.RLIMIT_NPROC))
    attempt("setuid0", lambda: os.setresuid(0, 0, 0))
    def start(n):
        for _ in range(n):
            threading.Thread(target=time.sleep, args=(0.5,), daemon=True).start()
        return n
    attempt("threads", lambda: start(40))
    """
    run = run_child(box, body, mode, extra={"private_task_count": True})
    assert run.returncode == 0, run.stderr + run.stdout
    assert run.report is not None
    notes = " ".join(run.report["notes"])
    assert "counts this run's tasks only" in notes, notes
    assert run.detail("capget") == repr([0, 0, 0, 0, 0, 0])
    uid = expected_uid(mode)
    assert run.detail("ids") == repr(((uid, uid, uid), (uid, uid, uid), []))
    assert run.detail("nproc") == repr((64, 64))
    assert run.status("setuid0") == "denied"
    assert run.status("threads") == "allowed", run.detail("threads")
    assert run.report["enforcement"] == ("full" if HOST_ABI and HOST_ABI >= 3 else "partial")


@needs_kernel
def test_a_private_task_count_whose_id_maps_are_refused_still_drops_the_capabilities(box: Box) -> None:
    """Where an LSM refuses the id maps (AppArmor's restriction of unprivileged user namespaces;
    injected here, this kernel allows them), the run goes on with unmapped ids, noted, and still
    without the namespace's capabilities."""
    _mode_skip("self")
    refuse = "import confine_process\n"
    refuse += "def refused(name, text):\n    raise PermissionError(1, 'refused by the test', name)\n"
    refuse += "confine_process._write_proc = refused\n"
    prelude = PRELUDE.replace("import confine_policy\n", "import confine_policy\n" + refuse, 1)
    body = """
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    attempt("capget", lambda: (libc.capget(hdr, data), list(data))[1])
    attempt("uid", os.getuid)
    """
    run = run_child(box, body, "self", extra={"private_task_count": True}, prelude=prelude)
    assert run.returncode == 0, run.stderr + run.stdout
    assert run.report is not None
    notes = " ".join(run.report["notes"])
    assert "ids unmapped" in notes and "counts this run's tasks only" in notes, notes
    assert run.detail("capget") == repr([0, 0, 0, 0, 0, 0])
    assert run.detail("uid") == repr(65534)


@needs_kernel
def test_without_a_private_task_count_the_uid_shares_it(box: Box) -> None:
    _mode_skip("self")
    run = run_child(box, "out('ok', 'allowed')", "self")
    assert run.returncode == 0, run.stderr
    assert run.report is not None
    assert "counts this run's tasks only" not in " ".join(run.report["notes"])


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 and i386 ABIs exist only on x86_64")
def test_x32_syscall_kills_the_child(box: Box) -> None:
    _mode_skip("self")
    run = run_child(box, "raw(0x40000000 | 39)\nout('survived', 'allowed')")
    assert run.returncode == -signal.SIGSYS, (run.returncode, run.stdout, run.stderr)
    assert "survived" not in run.results


@needs_kernel
@pytest.mark.skipif(platform.machine() != "x86_64", reason="int 0x80 exists only on x86_64")
def test_i386_int80_syscall_kills_the_child(box: Box) -> None:
    _mode_skip("self")
    body = """
    import mmap
    code = b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3"  # mov eax, 20 (i386 getpid); int 0x80; ret
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    ctypes.CFUNCTYPE(ctypes.c_int)(address)()
    out("survived", "allowed")
    """
    run = run_child(box, body)
    if run.returncode == -signal.SIGSEGV:
        pytest.skip("kernel without IA32 emulation: int 0x80 faults before seccomp sees it")
    assert run.returncode == -signal.SIGSYS, (run.returncode, run.stdout, run.stderr)


# ---- failure reporting -----------------------------------------------------------------------------


@needs_kernel
def test_unavailable_landlock_raises_after_applying_seccomp(box: Box) -> None:
    _mode_skip("self")
    prelude = PRELUDE.replace("import confine\n", "import confine\nconfine.landlock_abi = lambda: None\n", 1)
    run = run_child(box, "out('after', 'allowed')", prelude=prelude)
    assert run.returncode == 3, run.stderr
    assert run.error is not None
    assert "landlock" in str(run.error["message"])
    report = run.error["report"]
    assert isinstance(report, dict)
    layers = report["layers"]
    assert isinstance(layers, list)
    assert "landlock" not in layers and "seccomp" in layers
    assert report["landlockAbi"] is None
    assert report["enforcement"] == "partial"


@needs_kernel
def test_unsupported_arch_raises_for_seccomp(box: Box) -> None:
    _mode_skip("self")
    prelude = PRELUDE.replace("import confine\n", "import confine\nconfine.seccomp_arch = lambda: None\n", 1)
    run = run_child(box, "", prelude=prelude)
    assert run.returncode == 3
    assert run.error is not None
    assert "seccomp" in str(run.error["message"])


@needs_kernel
def test_layers_not_requested_give_partial_enforcement(box: Box) -> None:
    _mode_skip("self")
    run = run_child(
        box,
        "attempt('passwd', lambda: len(open('/etc/passwd').read()))",
        extra={"landlock": False, "seccomp": False},
    )
    assert run.returncode == 0, run.stderr
    assert run.report is not None
    assert run.report["enforcement"] == "partial"
    assert "landlock" not in run.report["layers"] and "seccomp" not in run.report["layers"]
    assert run.status("passwd") == "allowed"


@pytest.mark.skipif(not IS_ROOT, reason="the uid-drop preflight concerns root hosts")
def test_uid_drop_refuses_an_interpreter_the_target_uid_cannot_read(box: Box) -> None:
    problem = uid_drop.drop_target_problem(NOBODY, NOBODY, executable=sys.executable)
    if problem is None:
        pytest.skip("this interpreter is readable by uid 65534")
    code = PRELUDE.format(sandbox_dir=SANDBOX_DIR, work=str(box.work), extra={})
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], env={}, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 3
    line = next(x for x in done.stdout.decode().splitlines() if x.startswith("ERROR "))
    error = json.loads(line[6:])
    assert "uid drop" in error["message"] and "not readable" in error["message"]
    assert error["report"]["layers"] == ["rlimits"]


# ---- import cost and leanness ----------------------------------------------------------------------


def test_child_import_is_lean() -> None:
    python = child_python() or sys.executable
    code = textwrap.dedent(
        f"""
        import sys, time
        before = set(sys.modules)
        started = time.perf_counter()
        sys.path.insert(0, {SANDBOX_DIR!r})
        import confine
        elapsed = time.perf_counter() - started
        new = sorted(set(sys.modules) - before)
        print(repr((elapsed, new)))
        """
    )
    argv = [python, "-I", "-S", "-c", code]
    done = subprocess.run(argv, env={}, capture_output=True, timeout=60, check=True)
    elapsed, new = eval(done.stdout.decode())  # our own child's repr of a float and a list of str
    forbidden = {"json", "re", "dataclasses", "inspect", "typing", "toolrt", "platform", "enum", "subprocess"}
    assert not forbidden & set(new), new
    assert "seccomp_tables" in new and "ctypes" in new
    assert elapsed < 1.0  # generous: ~5 ms measured; a regression to seconds would mean a subprocess


# ---- policy value object ----------------------------------------------------------------------------


def test_policy_behaves_like_a_frozen_dataclass() -> None:
    policy = confine_policy.ConfinementPolicy(5, 1 << 28, read_write_paths=("/tmp/w",))
    assert policy.cpu_seconds == 5 and policy.max_open_files == 64 and policy.drop_to == (NOBODY, NOBODY)
    same = confine_policy.ConfinementPolicy(cpu_seconds=5, memory_bytes=1 << 28, read_write_paths=("/tmp/w",))
    assert policy == same
    assert hash(policy) == hash(confine_policy.ConfinementPolicy(5, 1 << 28, read_write_paths=("/tmp/w",)))
    assert policy != policy.replace(cpu_seconds=6)
    assert "cpu_seconds=5" in repr(policy)
    with pytest.raises(AttributeError):
        policy.cpu_seconds = 9
    data = policy.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert confine_policy.ConfinementPolicy.from_dict(json.loads(json.dumps(data))) == policy
    with pytest.raises(ValueError):
        confine_policy.ConfinementPolicy.from_dict({**data, "unknown": 1})
    with pytest.raises(ValueError):
        confine_policy.ConfinementPolicy(0, 1)
    with pytest.raises(ValueError):
        confine_policy.ConfinementPolicy(True, 1)
    with pytest.raises(ValueError):
        confine_policy.ConfinementPolicy(1, 1, read_paths=("relative",))
    with pytest.raises(ValueError):
        confine_policy.ConfinementPolicy(1, 1, drop_to=(0, 0))
    with pytest.raises(ValueError):
        confine_policy.ConfinementPolicy(1, 1, landlock=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        policy.replace(nope=1)


def test_default_read_paths_exist_and_exclude_third_party_packages() -> None:
    paths = confine_grants.default_read_paths()
    assert paths and all(os.path.exists(path) for path in paths)
    assert not any(part in ("site-packages", "dist-packages") for path in paths for part in path.split("/"))
    assert "/dev/null" in paths and "/dev/urandom" in paths
    assert any(os.path.isfile(os.path.join(path, "os.py")) for path in paths) or any(
        path.endswith("/os.py") for path in paths
    )
    assert any(path.endswith("lib-dynload") for path in paths)
    assert "/usr/lib" not in paths  # on merged-/usr that would grant /usr/lib/python3/dist-packages


# ---- the seccomp program -----------------------------------------------------------------------------

RET_ALLOW = confine_seccomp.SECCOMP_RET_ALLOW
RET_KILL = confine_seccomp.SECCOMP_RET_KILL_PROCESS


def _errno(code: int) -> int:
    return confine_seccomp.SECCOMP_RET_ERRNO | code


def run_bpf(program: bytes, arch_token: int, nr: int, *args: int) -> int:
    """A classic-BPF interpreter for the opcodes the assembler emits."""
    values = [*args, 0, 0, 0, 0, 0, 0][:6]
    data = struct.pack("=iIQ6Q", nr, arch_token, 0, *(v & 0xFFFFFFFFFFFFFFFF for v in values))
    insns = [struct.unpack_from("=HBBI", program, offset) for offset in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    for _ in range(len(insns) + 1):
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            (accumulator,) = struct.unpack_from("=I", data, k)
        elif code == 0x54:
            accumulator &= k
        elif code == 0x06:
            return int(k)
        elif code in (0x15, 0x35, 0x45):
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            pc += jt if taken else jf
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")
        pc += 1
    raise AssertionError("program did not return")


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_seccomp_program_decisions(arch: str) -> None:
    pid = 4242
    program = confine_seccomp.build_seccomp_filter(arch, pid)
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
    token = seccomp_tables.ARCHES[arch]
    column = 1 if arch == "x86_64" else 2
    nr = {row[0]: row[1] if column == 1 else row[2] for row in seccomp_tables.TABLE}

    def decide(name: str, *args: int) -> int:
        number = nr[name]
        assert number is not None
        return run_bpf(program, token, number, *args)

    # Architecture and ABI checks.
    assert run_bpf(program, 0x40000003, 20) == RET_KILL  # i386
    assert run_bpf(program, token ^ 0xFF, 0) == RET_KILL
    if arch == "x86_64":
        assert run_bpf(program, token, 0x40000000 | 39) == RET_KILL
    # Unlisted calls are allowed (read/write/mmap/futex...).
    for number in (0, 1, 9, 202) if arch == "x86_64" else (63, 64, 222, 98):
        assert run_bpf(program, token, number) == RET_ALLOW
    # Every unconditional row does what it says.
    actions = {"eperm": errno.EPERM, "eacces": errno.EACCES, "enosys": errno.ENOSYS, "enolck": errno.ENOLCK}
    for name, *_numbers, action, _why in seccomp_tables.TABLE:
        if action in actions and nr[name] is not None:
            assert decide(name, 0, 0, 0) == _errno(actions[action]), name
    # socketpair: AF_UNIX + SOCK_STREAM (flags allowed) only.
    sock_cloexec, sock_nonblock = 0o2000000, 0o4000
    assert decide("socketpair", 1, 1 | sock_cloexec | sock_nonblock, 0, 0) == RET_ALLOW
    assert decide("socketpair", 1, 2, 0, 0) == _errno(errno.EACCES)  # SOCK_DGRAM
    assert decide("socketpair", 1, 5, 0, 0) == _errno(errno.EACCES)  # SOCK_SEQPACKET
    assert decide("socketpair", 2, 1, 0, 0) == _errno(errno.EACCES)  # AF_INET
    assert decide("socketpair", 1 | (1 << 32), 1, 0, 0) == RET_ALLOW  # int argument: high word ignored
    # clone: threads only.
    thread_flags = 0x3D0F00  # glibc pthread_create: VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|*TID
    assert decide("clone", thread_flags) == RET_ALLOW
    assert decide("clone", 17) == _errno(errno.EPERM)  # fork(): SIGCHLD
    assert decide("clone", 0x4111) == _errno(errno.EPERM)  # posix_spawn: VM|VFORK|SIGCHLD
    for new_flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000):
        assert decide("clone", thread_flags | new_flag) == _errno(errno.EPERM), hex(new_flag)
    # Signals only to itself.
    for name in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        assert decide(name, pid, 0) == RET_ALLOW, name
        assert decide(name, pid + 1, 0) == _errno(errno.EPERM), name
        assert decide(name, -1, 0) == _errno(errno.EPERM), name
        assert decide(name, 0, 0) == _errno(errno.EPERM), name
    # prlimit64: reading only.
    assert decide("prlimit64", 0, 9, 0, 0x7FFF0000) == RET_ALLOW
    assert decide("prlimit64", 0, 9, 0x7FFF0000, 0) == _errno(errno.EPERM)
    assert decide("prlimit64", 0, 9, 1 << 40, 0) == _errno(errno.EPERM)  # high word only
    # utimensat: only futimens (NULL path).
    assert decide("utimensat", 3, 0, 0, 0) == RET_ALLOW
    assert decide("utimensat", -100, 0x7FFF1000, 0, 0) == _errno(errno.EPERM)
    assert decide("utimensat", 3, 1 << 40, 0, 0) == _errno(errno.EPERM)
    # prctl: everything but re-opening dumpable / ptracer / mm.
    assert decide("prctl", 39) == RET_ALLOW  # PR_GET_NO_NEW_PRIVS
    assert decide("prctl", 15) == RET_ALLOW  # PR_SET_NAME
    for option in (4, 0x59616D61, 35):
        assert decide("prctl", option) == _errno(errno.EPERM)
    # fcntl: the allow-list only (arg1; a high word that is not zero is refused); locks ENOLCK.
    for command in seccomp_tables.FCNTL_ALLOWED.values():
        assert decide("fcntl", 3, command, 0) == RET_ALLOW, command
        assert decide("fcntl", 3, command | (1 << 32), 0) == _errno(errno.EPERM), command
    for command in seccomp_tables.FCNTL_LOCKS.values():
        assert decide("fcntl", 3, command, 0) == _errno(errno.ENOLCK), command
    # F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETLEASE, F_GETLEASE, F_NOTIFY, F_SETPIPE_SZ, F_ADD_SEALS
    for command in (8, 10, 15, 1024, 1025, 1026, 1031, 1033):
        assert decide("fcntl", 3, command, 0) == _errno(errno.EPERM), command
    assert decide("fcntl", 3, 1024 | (1 << 32), 1) == _errno(errno.EPERM)  # F_SETLEASE, high word set
    assert decide("flock", 3, 1) == _errno(errno.ENOLCK)
    # ioctl: what CPython makes, on any fd; SIOCGIFCONF and the rest answer ENOTTY.
    for request in seccomp_tables.IOCTL_ALLOWED.values():
        assert decide("ioctl", 3, request, 0) == RET_ALLOW, hex(request)
        assert decide("ioctl", 0, request | (1 << 32), 0) == _errno(errno.ENOTTY), hex(request)
    # SIOCGIFCONF, SIOCGIFADDR, SIOCGIFNAME, SIOCGIFHWADDR, TIOCSTI, FIOASYNC, FIOSETOWN
    for request in (0x8912, 0x8915, 0x8910, 0x8927, 0x5412, 0x5452, 0x8901):
        for fd in (0, 3, 7):
            assert decide("ioctl", fd, request, 0) == _errno(errno.ENOTTY), hex(request)


def test_seccomp_table_is_consistent() -> None:
    names = [row[0] for row in seccomp_tables.TABLE]
    assert len(names) == len(set(names))
    for name, x86_64, aarch64, action, why in seccomp_tables.TABLE:
        assert action in {"eperm", "eacces", "enosys", "enolck"} | seccomp_tables.CONDITIONAL_RULES, name
        assert why.strip(), name
        assert x86_64 is not None or aarch64 is not None, name
        if x86_64 is not None and x86_64 >= 424:
            assert aarch64 == x86_64, f"{name}: numbers >= 424 are shared by all architectures"
    for arch in seccomp_tables.ARCHES:
        confine_seccomp.build_seccomp_filter(arch, 1)  # every conditional rule has a block


def _header_numbers(path: str, pattern: str) -> dict[str, int]:
    import re

    text = Path(path).read_text()
    return {name: int(number) for name, number in re.findall(pattern, text)}


@pytest.mark.parametrize(
    ("column", "header", "pattern"),
    [
        (1, "/usr/include/x86_64-linux-gnu/asm/unistd_64.h", r"#define __NR_(\w+)\s+(\d+)"),
        (1, "/usr/include/asm/unistd_64.h", r"#define __NR_(\w+)\s+(\d+)"),
        (2, "/usr/include/asm-generic/unistd.h", r"#define __NR(?:3264)?_(\w+)\s+(\d+)"),
    ],
)
def test_seccomp_table_matches_kernel_headers(column: int, header: str, pattern: str) -> None:
    if not os.path.exists(header):
        pytest.skip(f"{header} not installed (linux-libc-dev)")
    numbers = _header_numbers(header, pattern)
    checked = 0
    for row in seccomp_tables.TABLE:
        name, number = row[0], row[1] if column == 1 else row[2]
        if name in numbers:
            assert number == numbers[name], f"{name}: table {number}, {header} {numbers[name]}"
            checked += 1
        elif number is not None:
            # Only calls newer than the installed headers may be missing from them.
            assert number > max(numbers.values()) - 10 or number >= 450, f"{name} missing from {header}"
    assert checked > 80
    for name, (x86_64, aarch64) in seccomp_tables.OWN_SYSCALLS.items():
        if name in numbers:
            assert (x86_64, aarch64)[column - 1] == numbers[name], name


# ---- probes ------------------------------------------------------------------------------------------


def test_probe_landlock_matches_the_kernel_and_is_cached() -> None:
    probe.clear_cache()
    assert probe.probe_landlock() == confine_landlock.landlock_abi()
    assert probe.probe_landlock() == probe.probe_landlock()


@needs_kernel
def test_probe_seccomp_runs_the_real_filter() -> None:
    probe.clear_cache()
    assert probe.probe_seccomp() is True
    started = time.perf_counter()
    assert probe.probe_seccomp() is True
    assert time.perf_counter() - started < 0.01  # cached


def test_probe_userns_is_a_bool() -> None:
    probe.clear_cache()
    assert isinstance(probe.probe_userns(), bool)


def test_probe_bwrap_reports_missing_and_broken_binaries(tmp_path: Path) -> None:
    probe.clear_cache()
    missing = probe.probe_bwrap([str(tmp_path / "nope")])
    assert missing.works is False and missing.path == str(tmp_path / "nope")
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'bubblewrap 9.9.9' && exit 0\nexit 1\n")
    fake.chmod(0o755)
    broken = probe.probe_bwrap([str(fake)])
    assert broken.works is False and broken.version == "9.9.9" and "exited 1" in broken.reason
    # The fake bwrap also shows the functional run gets an empty environment.
    envdump = tmp_path / "env-bwrap"
    envfile = tmp_path / "env.txt"
    envdump.write_text(f"#!/bin/sh\nenv > {envfile}\nexit 1\n")
    envdump.chmod(0o755)
    probe.probe_bwrap([str(envdump)])
    leaked = {line.split("=", 1)[0] for line in envfile.read_text().splitlines()} - {"PWD", "SHLVL", "_"}
    assert not leaked, leaked


def test_probe_bwrap_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    probe.clear_cache()

    def explode(*_args: object, **_kwargs: object) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(shutil, "which", explode)
    result = probe.probe_bwrap()
    assert result.works is False and "boom" in result.reason
    probe.clear_cache()


def test_probe_bwrap_finds_a_working_binary_when_installed() -> None:
    probe.clear_cache()
    result = probe.probe_bwrap()
    if result.path is None:
        pytest.skip(result.reason)
    if not result.works:
        pytest.skip(f"bwrap present but not usable here: {result.reason}")
    assert result.version and result.version[0].isdigit()
    assert os.path.isabs(result.path)


def test_drop_target_problem_names_the_blocking_directory(tmp_path: Path) -> None:
    probe.clear_cache()
    assert uid_drop.drop_target_problem(os.geteuid(), os.getegid(), executable=sys.executable) is None
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    blocked = confine_grants.inaccessible_path(NOBODY if IS_ROOT else os.geteuid() + 1, NOBODY, [str(locked)])
    assert blocked is not None


def test_ctypes_struct_sizes_match_the_kernel_abi() -> None:
    assert ctypes.sizeof(confine_seccomp.SockFprog) == 16
    assert [confine_landlock.landlock_handled(abi)[3] for abi in range(1, 9)] == [8, 8, 8, 16, 16, 24, 24, 24]
    fs, net, scoped, _ = confine_landlock.landlock_handled(7)
    assert (fs, net, scoped) == (0xFFFF, 0x3, 0x3)
    assert confine_landlock.landlock_handled(1)[:3] == (0x1FFF, 0, 0)
    assert confine_landlock.landlock_handled(3)[0] == 0x7FFF


# ---- inside bubblewrap (backend rank 1) -----------------------------------------------------------


@needs_kernel
def test_confine_works_inside_bubblewrap_without_proc(box: Box) -> None:
    """The rank-1 backend runs the same child inside bwrap with no /proc: the layers must still
    apply (the uid-map and thread checks degrade to notes)."""
    probe.clear_cache()
    bwrap = probe.probe_bwrap()
    if not bwrap.works or bwrap.path is None:
        pytest.skip(f"no working bwrap: {bwrap.reason}")
    python = "/usr/bin/python3"
    if not _works(python) or not os.path.realpath(python).startswith("/usr/"):
        pytest.skip("needs a /usr interpreter to bind into the sandbox")
    code = PRELUDE.format(sandbox_dir=CHILD_DIR, work="/wd", extra={}) + textwrap.dedent(
        """
        attempt("write", lambda: open("/wd/x", "w").write("ok"))
        attempt("read_src", lambda: open(confine.__file__).read(10))
        attempt("threads", lambda: __import__("threading").Thread(target=print).start())
        """
    )
    binds = ["--ro-bind", "/usr", "/usr", "--ro-bind", CHILD_DIR, CHILD_DIR]
    for path in ("/bin", "/lib", "/lib64"):
        if os.path.islink(path):
            binds += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            binds += ["--ro-bind", path, path]
    argv = [bwrap.path, "--unshare-all", "--die-with-parent", "--new-session", *binds]
    argv += ["--dev", "/dev", "--tmpfs", "/wd", "--chdir", "/wd", python, "-I", "-S", "-c", code]
    prefix = _user_prefix() if IS_ROOT else []
    done = subprocess.run([*(prefix or []), *argv], env={}, capture_output=True, timeout=60, check=False)
    stdout = done.stdout.decode()
    assert done.returncode == 0, (stdout, done.stderr.decode())
    report = json.loads(next(line for line in stdout.splitlines() if line.startswith("REPORT "))[7:])
    assert report["layers"] == ["rlimits", "no-new-privs", "landlock", "seccomp"]
    assert report["enforcement"] == "full"
    results = {
        json.loads(line[7:])[0]: json.loads(line[7:])[1]
        for line in stdout.splitlines()
        if line.startswith("RESULT ")
    }
    assert results == {"write": "allowed", "read_src": "denied", "threads": "allowed"}
