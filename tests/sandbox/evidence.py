"""Host-side evidence for the sandbox attack suite (``test_attacks.py``).

Nothing here trusts what a sandboxed program prints. Every fact is observed on the host, by the test
process, outside the sandbox:

* :class:`Evidence` (one per test): a canary directory outside every work dir with a secret file, a
  fake home with dotfiles, a world-writable directory holding a victim file (content, mode, mtime,
  owner, xattrs, link count recorded) and a movable file; tokens that must never appear in a result
  (secret contents, the canary environment variable, ``boot_id``, ``machine-id``, a decoy's
  environment); loopback TCP/UDP (v4 and v6), pathname stream/datagram and abstract UNIX listeners
  that record every connection or datagram; decoy processes (a ``sh`` loop running ``sleep``; one as
  the test's uid and, as root, one as uid 65534) whose ``trap`` writes a marker on SIGUSR1/TERM/HUP;
  ``/tmp``, ``/var/tmp`` and ``/dev/shm`` persistence paths; an *inheritable* pipe whose read end must
  stay empty; a SIGURG counter for signals aimed at the test process; SysV IPC snapshots.
* :class:`TreeWatcher`: a thread sampling ``/proc`` every few milliseconds for every descendant of
  the test process (and registered launchers): foreign executables (exec), a Python child of the
  sandboxed Python (fork), threads without the seccomp filter once the process was confined, namespace
  changes (unshare/clone), niceness below the host's, real-time scheduling, rlimits raised back to
  unlimited, capabilities, forbidden kernel objects among the fds (io_uring, bpf, perf, userfaultfd,
  memfd, inotify), fds onto the canary directory, sockets, bytes held in unlinked files, work-dir
  entry counts, thread counts, RSS, and the decoys' tracer/stop state. Where ``/proc`` cannot be read
  (an unprivileged host cannot look into a non-dumpable child's fds) the gap is recorded in
  :attr:`TreeWatcher.unobservable` instead of being reported as clean.
* :func:`launch`: runs the runtime inside a *launcher* process whose initial environment and command
  line carry canaries and which holds the secret open, so ``/proc/<ppid>/{environ,cmdline,fd}``
  attacks have something real to steal (``/proc/<pid>/environ`` shows a process's *initial*
  environment, which a test cannot change after start-up).

Every failed check raises ``AssertionError`` whose message starts with ``EVIDENCE[<tag>]``, so the
self-test of the harness (``test_the_evidence_detects_an_escape``) can tell which evidence fired.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import selectors
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IS_ROOT = os.geteuid() == 0
NOBODY = 65534
ENV_CANARY_NAME = "TOOLRT_ATTACK_CANARY"
_HOST_NICE = os.getpriority(os.PRIO_PROCESS, 0)
_RT_POLICIES = {1, 2, 6}  # SCHED_FIFO, SCHED_RR, SCHED_DEADLINE
MARKERS = (
    "fork",
    "fork_thread",
    "survivor",
    "clone",
    "subprocess",
    "system",
    "ctypes_system",
    "posix_spawn",
    "execv",
    "memfd",
    "pickle",
    "eval",
    "reduce",
    "symlink_dir",
)
_WORKDIR_PREFIX = os.path.join(tempfile.gettempdir(), "toolrt-run-")
_FORBIDDEN_ANON = ("io_uring", "bpf", "perf_event", "userfaultfd", "inotify", "fanotify", "pidfd")


def evidence_failure(tag: str, message: str) -> AssertionError:
    return AssertionError(f"EVIDENCE[{tag}] {message}")


def check(condition: object, tag: str, message: str) -> None:
    if not condition:
        raise evidence_failure(tag, message)


def _token(kind: str) -> str:
    return f"{kind}{secrets.token_hex(16)}"


def _read(path: str | Path, limit: int = 1 << 20) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def proc_status(pid: int | str, tid: int | str | None = None) -> dict[str, str] | None:
    path = f"/proc/{pid}/status" if tid is None else f"/proc/{pid}/task/{tid}/status"
    text = _read(path)
    if text is None:
        return None
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def proc_stat_fields(pid: int | str) -> list[str] | None:
    text = _read(f"/proc/{pid}/stat")
    if text is None or ")" not in text:
        return None
    return text[text.rindex(")") + 2 :].split()


def proc_limits(pid: int | str) -> dict[str, tuple[str, str]]:
    text = _read(f"/proc/{pid}/limits") or ""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines()[1:]:
        parts = line[26:].split()
        if len(parts) >= 2:
            out[line[:26].strip()] = (parts[0], parts[1])
    return out


def children_of(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        text = _read(f"/proc/{pid}/task/{tid}/children")
        if text:
            out.extend(int(part) for part in text.split())
    return out


def _is_o_path(pid: int, fd: str) -> bool | None:
    """An O_PATH descriptor names a file without opening it (no read/write): Landlock allows it.
    ``None`` when the fd is gone before its flags could be read (closed since it was listed)."""
    for line in (_read(f"/proc/{pid}/fdinfo/{fd}") or "").splitlines():
        if line.startswith("flags:"):
            return bool(int(line.split()[1], 8) & 0o10000000)
    return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = proc_stat_fields(pid)
    return fields is not None and fields[0] != "Z"


# --- listeners ------------------------------------------------------------------------------------


class Listeners:
    """Loopback listeners that record every connection and datagram (one selector thread)."""

    def __init__(self, base: Path) -> None:
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._sockets: list[socket.socket] = []
        self._stop = threading.Event()
        self.tcp_port = self._stream("tcp4", socket.AF_INET, ("127.0.0.1", 0))
        self.udp_port = self._dgram("udp4", socket.AF_INET, ("127.0.0.1", 0))
        self.tcp6_port = self.udp6_port = 0
        with contextlib.suppress(OSError):
            self.tcp6_port = self._stream("tcp6", socket.AF_INET6, ("::1", 0))
            self.udp6_port = self._dgram("udp6", socket.AF_INET6, ("::1", 0))
        self.unix_path = str(base / "listen.sock")
        self.unix_dgram = str(base / "listen-dgram.sock")
        self.abstract = f"toolrt-attack-{secrets.token_hex(8)}"
        self._stream("unix-path", socket.AF_UNIX, self.unix_path)
        os.chmod(self.unix_path, 0o777)
        self._dgram("unix-dgram", socket.AF_UNIX, self.unix_dgram)
        os.chmod(self.unix_dgram, 0o777)
        self._stream("unix-abstract", socket.AF_UNIX, "\0" + self.abstract)
        self._thread = threading.Thread(target=self._loop, name="attack-listeners", daemon=True)
        self._thread.start()

    def _stream(self, name: str, family: int, address: Any) -> int:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.bind(address)
        sock.listen(64)
        sock.setblocking(False)
        self._sockets.append(sock)
        self._selector.register(sock, selectors.EVENT_READ, ("accept", name))
        return int(sock.getsockname()[1]) if family != socket.AF_UNIX else 0

    def _dgram(self, name: str, family: int, address: Any) -> int:
        sock = socket.socket(family, socket.SOCK_DGRAM)
        sock.bind(address)
        sock.setblocking(False)
        self._sockets.append(sock)
        self._selector.register(sock, selectors.EVENT_READ, ("dgram", name))
        return int(sock.getsockname()[1]) if family != socket.AF_UNIX else 0

    def _record(self, name: str, what: str) -> None:
        with self._lock:
            self.events.append((name, what))

    def _loop(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(0.05):
                kind, name = key.data
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    if kind == "accept":
                        conn, peer = sock.accept()
                        self._record(name, f"connection from {peer!r}")
                        conn.close()
                    else:
                        data, peer = sock.recvfrom(65536)
                        self._record(name, f"datagram {data[:60]!r} from {peer!r}")
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for sock in self._sockets:
            with contextlib.suppress(Exception):
                self._selector.unregister(sock)
            sock.close()
        self._selector.close()
        for path in (self.unix_path, self.unix_dgram):
            with contextlib.suppress(OSError):
                os.unlink(path)


# --- decoys ---------------------------------------------------------------------------------------


@dataclass
class Decoy:
    """A ``sh`` loop (running ``sleep``) that writes ``marker`` when signalled; optionally another uid."""

    name: str
    marker: Path
    secret: str
    uid: int | None = None
    proc: subprocess.Popen[bytes] = field(init=False)
    nofile: tuple[str, str] = field(init=False, default=("", ""))
    nice: str = field(init=False, default="")
    policy: str = field(init=False, default="")

    def start(self) -> None:
        script = (
            f'trap "echo signalled >> {self.marker}" USR1 USR2 TERM HUP INT; while :; do sleep 0.05; done'
        )
        kwargs: dict[str, Any] = {}
        if self.uid is not None:
            kwargs = {"user": self.uid, "group": self.uid, "extra_groups": []}
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", script],
            env={"PATH": "/usr/bin:/bin", "DECOY_SECRET": self.secret},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd="/",
            **kwargs,
        )
        deadline = time.monotonic() + 5
        while proc_status(self.pid) is None or "sh" not in (proc_status(self.pid) or {}).get("Name", ""):
            if time.monotonic() > deadline:
                raise RuntimeError("decoy did not start")
            time.sleep(0.005)
        self.nofile = proc_limits(self.pid).get("Max open files", ("", ""))
        fields = proc_stat_fields(self.pid) or []
        self.nice = fields[16] if len(fields) > 16 else ""
        self.policy = fields[38] if len(fields) > 38 else ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def assert_healthy(self) -> None:
        tag = f"decoy-{self.name}"
        check(self.proc.poll() is None, tag, f"decoy {self.pid} was killed (status {self.proc.returncode})")
        status = proc_status(self.pid) or {}
        check(status.get("TracerPid", "0") == "0", tag, f"decoy is traced by {status.get('TracerPid')}")
        check(status.get("State", "S")[:1] not in ("T", "t"), tag, f"decoy is stopped: {status.get('State')}")
        check(not self.marker.exists(), tag, f"decoy was signalled ({self.marker} written)")
        check(
            proc_limits(self.pid).get("Max open files", ("", "")) == self.nofile,
            tag,
            "decoy's RLIMIT_NOFILE was changed",
        )
        fields = proc_stat_fields(self.pid) or []
        if len(fields) > 38:
            check(fields[16] == self.nice, tag, f"decoy's nice changed {self.nice} -> {fields[16]}")
            check(fields[38] == self.policy, tag, f"decoy's scheduler changed {self.policy} -> {fields[38]}")

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(5)


# --- the process-tree watcher ---------------------------------------------------------------------


@dataclass
class _Seen:
    comm: str
    ppid: int
    confined: bool = False
    fresh: bool = False
    cwd_seen: bool = False
    """First seen as a copy of its host parent (same comm): mid-exec, so one comm change is expected."""
    ns: dict[str, str] = field(default_factory=dict)
    user_ns_fixed: bool = False
    """Whether ``ns["user"]`` is the one of the first confined sample (see _sample_namespaces)."""
    as_limited: bool = False
    cpu_limited: bool = False


def _lock_lines() -> list[str]:
    """``/proc/locks`` without the ordinals (they shift) and waiter arrows:
    ``"POSIX ADVISORY READ <pid> <dev:inode> 0 EOF"``."""
    out: list[str] = []
    for line in (_read("/proc/locks") or "").splitlines():
        parts = line.split()[1:]
        if parts[:1] == ["->"]:
            parts = parts[1:]
        if parts:
            out.append(" ".join(parts))
    return out


def host_interfaces() -> dict[str, str]:
    """The host's network interfaces (SIOCGIFCONF, as the review's program read them): name ->
    IPv4 address, loopback left out (every namespace has one)."""
    import fcntl  # Linux-only, like the whole suite

    entry = 40  # struct ifreq on LP64
    buffer = bytearray(entry * 64)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        address = ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))
        packed = fcntl.ioctl(sock.fileno(), 0x8912, struct.pack("iL", len(buffer), address))  # SIOCGIFCONF
        size = struct.unpack("iL", packed)[0]
    out: dict[str, str] = {}
    for offset in range(0, size, entry):
        name = bytes(buffer[offset : offset + 16]).split(b"\0", 1)[0].decode()
        ip = socket.inet_ntoa(bytes(buffer[offset + 20 : offset + 24]))
        if name != "lo" and not ip.startswith("127."):
            out[name] = ip
    return out


class TreeWatcher:
    """Samples ``/proc`` for the descendants of the test process (see the module docstring)."""

    def __init__(
        self,
        *,
        exclude: Iterable[int] = (),
        decoys: Iterable[Decoy] = (),
        canary_dir: str = "",
        interval: float = 0.01,
        count_cwd: bool = False,
        watch_keys: bool = False,
        watch_files: Iterable[Path] = (),
        watch_locks: bool = False,
    ) -> None:
        self.roots = {os.getpid()}
        self.host_pids = {os.getpid()}
        self.host_cmdlines = {os.getpid(): _read(f"/proc/{os.getpid()}/cmdline")}
        self.exclude = set(exclude)
        self.decoys = list(decoys)
        self.canary_dir = canary_dir
        self.interval = interval
        self.count_cwd = count_cwd
        self.watch_keys = watch_keys
        self.watch_files = list(watch_files)
        self.watch_locks = watch_locks
        self._locks_baseline = set(_lock_lines()) if watch_locks else set()
        self.locks_seen: list[str] = []
        """New ``/proc/locks`` entries of the program's processes (and unowned OFD locks)."""
        self.violations: list[tuple[str, str]] = []
        self.unobservable: set[str] = set()
        """What ``/proc`` did not let the host see, e.g. "fds" of a confined (non-dumpable) child."""
        self.seen: dict[int, _Seen] = {}
        self.program_pids: set[int] = set()
        self.workdirs: set[str] = set()
        """Host work dirs of the sandbox children (their cwd), which must be gone after the run."""
        self.max_sockets = 0
        self.max_deleted_bytes = 0
        self.max_cwd_entries = 0
        self.max_threads = 0
        self.max_rss_kb = 0
        self.credentials: dict[int, tuple[bool, set[tuple[str, str, str]]]] = {}
        """pid -> (confined?, {(host uid, NoNewPrivs, CapEff)}): once a process is seen confined, only
        its confined samples count (its boot, before the uid drop and the filter, is not the program)."""
        """(pid, tid) -> (Seccomp, NoNewPrivs, CapEff) at the last sample: the program's own state."""
        self.nproc: set[str] = set()
        self.samples = 0
        self._keys_baseline = self._key_users() if watch_keys else {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sampling = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="attack-watcher", daemon=True)
        self._tick = 0

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> TreeWatcher:
        self._thread.start()
        return self

    def add_host(self, pid: int) -> None:
        with self._lock:
            self.roots.add(pid)
            self.host_pids.add(pid)
            self.host_cmdlines[pid] = _read(f"/proc/{pid}/cmdline")

    def stop(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(5)
        self._sample()  # one last look

    def _violate(self, kind: str, message: str) -> None:
        if (kind, message) not in self.violations:
            self.violations.append((kind, message))

    # -- sampling -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No sampling inside: for the test's own helper processes (cleanup), never the program's."""
        with self._sampling:
            yield

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                with self._sampling:
                    self._sample()
            except Exception as error:  # pragma: no cover - never kill the watcher
                self._violate("watcher-crash", f"watcher crashed: {error!r}")
            self._stop.wait(self.interval)

    def _descendants(self) -> list[int]:
        with self._lock:
            pending = list(self.roots)
            hosts = set(self.host_pids)
        found: list[int] = []
        visited: set[int] = set()
        while pending:
            pid = pending.pop()
            if pid in visited or pid in self.exclude:
                continue
            visited.add(pid)
            if pid not in hosts:
                found.append(pid)
            pending.extend(children_of(pid))
        return found

    def _sample(self) -> None:
        self.samples += 1
        self._tick += 1
        for decoy in self.decoys:
            status = proc_status(decoy.pid) or {}
            if status.get("TracerPid", "0") != "0":
                self._violate("watcher-decoy", f"decoy {decoy.name} traced by pid {status['TracerPid']}")
            if status.get("State", "S")[:1] in ("T", "t"):
                self._violate("watcher-decoy", f"decoy {decoy.name} stopped ({status.get('State')})")
        for path in self.watch_files:
            with contextlib.suppress(OSError):
                links = os.stat(path).st_nlink
                if links != 1:
                    self._violate("watcher-link", f"{path} has {links} hard links during the run")
        if self.watch_keys:
            for uid, keys in self._key_users().items():
                if keys > self._keys_baseline.get(uid, 0):
                    before = self._keys_baseline.get(uid, 0)
                    self._violate("watcher-keys", f"kernel keys of uid {uid} grew {before} -> {keys}")
        with self._lock:
            hosts = set(self.host_pids)
        descendants = self._descendants()
        for pid in descendants:
            self._sample_process(pid, hosts)
        if self.watch_locks:
            self._sample_locks({str(pid) for pid in [*descendants, *self.program_pids]})

    def _sample_locks(self, program: set[str]) -> None:
        """Leases, flock and record locks the program holds, as the kernel lists them: an OFD lock
        lists no pid (``-1``), so every new one counts (the watcher runs for one attack only)."""
        for line in _lock_lines():
            if line in self._locks_baseline:
                continue
            parts = line.split()
            if len(parts) >= 4 and (parts[3] in program or parts[3] == "-1"):
                if line not in self.locks_seen:
                    self.locks_seen.append(line)
                self._violate("watcher-locks", f"the program holds a lock the host can see: {line}")

    @staticmethod
    def _key_users() -> dict[str, int]:
        out: dict[str, int] = {}
        for line in (_read("/proc/key-users") or "").splitlines():
            parts = line.split()
            if len(parts) >= 3 and "/" in parts[2]:
                out[parts[0].rstrip(":")] = int(parts[2].split("/")[0])
        return out

    def _sample_process(self, pid: int, hosts: set[int]) -> None:
        cmdline = _read(f"/proc/{pid}/cmdline") if pid not in self.seen else None  # before status: exec races
        status = proc_status(pid)
        if status is None:
            return
        comm = status.get("Name", "?")
        ppid = int(status.get("PPid", "0") or 0)
        if ppid in hosts and pid not in self.seen and cmdline == self.host_cmdlines.get(ppid):
            return  # forked by the host but not exec'd yet: still a copy of the host (its fds included)
        seen = self.seen.get(pid)
        if seen is None:
            parent_comm = (proc_status(ppid) or {}).get("Name") if ppid in hosts else None
            seen = self.seen[pid] = _Seen(comm, ppid, fresh=comm == parent_comm)
        if not seen.cwd_seen:
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
                seen.cwd_seen = True
                if cwd.startswith(_WORKDIR_PREFIX):
                    self.workdirs.add(cwd)
            except FileNotFoundError:
                pass  # exited or a zombie: looked at again next tick if it is still there
            except OSError:
                self.unobservable.add("work dirs")
        python = comm.startswith("python")
        if not python and comm != "bwrap":
            self._violate("watcher-exec", f"foreign process {comm!r} (pid {pid}, parent {ppid}) was executed")
            return
        if not python:
            return
        self.program_pids.add(pid)
        parent = self.seen.get(ppid)
        if ppid not in hosts and parent is not None and parent.comm.startswith("python"):
            self._violate(
                "watcher-fork", f"python pid {pid} is a child of python pid {ppid}: the program forked"
            )
        # bwrap's last act is exec'ing the interpreter; a host fork seen mid-exec changes comm once.
        if comm != seen.comm and seen.comm != "bwrap" and not seen.fresh:
            self._violate("watcher-exec", f"pid {pid} changed from {seen.comm!r} to {comm!r}: exec")
        if comm != seen.comm:
            seen.fresh = False
        seen.comm = comm
        uid = status.get("Uid", "?").split()[0] if status.get("Uid") else "?"
        self.max_threads = max(self.max_threads, int(status.get("Threads", "1") or 1))
        self.max_rss_kb = max(self.max_rss_kb, int((status.get("VmRSS", "0 kB").split() or ["0"])[0]))
        # Threads: once any thread of this process carries the filter, every thread must.
        try:
            tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
        except OSError:
            tids = []
        if len(tids) > 64:
            tids = tids[:16] + tids[-48:]
        modes: list[tuple[str, str, str, str]] = []
        for tid in tids:
            task = proc_status(pid, tid)
            if task is not None and task.get("State", "R")[:1] not in ("Z", "X"):  # exiting: filter gone
                modes.append(
                    (tid, task.get("Seccomp", "?"), task.get("NoNewPrivs", "?"), task.get("CapEff", "?"))
                )
        if any(mode == "2" for _, mode, _, _ in modes):
            seen.confined = True
        for tid, mode, nnp, capeff in modes:
            if seen.confined and mode not in ("2", "3"):  # 3: SECCOMP_MODE_DEAD, killed by the filter
                self._violate(
                    "watcher-thread",
                    f"thread {tid} of confined pid {pid} runs without the seccomp filter (Seccomp: {mode})",
                )
            confined, samples = self.credentials.get(pid, (False, set()))
            if seen.confined and not confined:
                confined, samples = True, set()
            samples.add((uid, nnp, capeff))
            self.credentials[pid] = (confined, samples)
        # Scheduling and limits.
        fields = proc_stat_fields(pid)
        if fields is not None and len(fields) > 38:
            if int(fields[16]) < _HOST_NICE:
                self._violate("watcher-nice", f"pid {pid} lowered its nice value to {fields[16]}")
            if int(fields[38]) in _RT_POLICIES:
                self._violate(
                    "watcher-sched", f"pid {pid} switched to real-time scheduling policy {fields[38]}"
                )
        limits = proc_limits(pid)
        nproc = limits.get("Max processes")
        if nproc is not None and seen.confined:
            self.nproc.add(nproc[0])
        address = limits.get("Max address space")
        cpu = limits.get("Max cpu time")
        if address is not None:
            if address[1] != "unlimited":
                seen.as_limited = True
            elif seen.as_limited:
                self._violate("watcher-rlimit", f"pid {pid} raised RLIMIT_AS back to unlimited")
        if cpu is not None:
            if cpu[1] != "unlimited":
                seen.cpu_limited = True
            elif seen.cpu_limited:
                self._violate("watcher-rlimit", f"pid {pid} raised RLIMIT_CPU back to unlimited")
        self._sample_namespaces(pid, seen)
        self._sample_fds(pid, seen)
        if self.count_cwd and self._tick % 10 == 0:
            try:
                self.max_cwd_entries = max(self.max_cwd_entries, len(os.listdir(f"/proc/{pid}/cwd")))
            except FileNotFoundError:
                pass  # exited or a zombie (its cwd link is gone): not a gap in what we can see
            except OSError:
                self.unobservable.add("work dir entries")

    def _sample_namespaces(self, pid: int, seen: _Seen) -> None:
        for kind in ("user", "mnt", "net", "pid_for_children", "ipc", "uts", "cgroup"):
            try:
                target = os.readlink(f"/proc/{pid}/ns/{kind}")
            except FileNotFoundError:
                continue
            except OSError:
                self.unobservable.add("namespaces")
                return
            if kind == "user" and not seen.user_ns_fixed:
                seen.user_ns_fixed = seen.confined
                # The landlock child moves into a user namespace of its own while it confines itself
                # (its RLIMIT_NPROC then counts that run only), before any program code runs: the
                # user namespace counts from the process's first confined sample on. Every other
                # namespace counts from the first sample.
                seen.ns[kind] = target
                continue
            before = seen.ns.setdefault(kind, target)
            if before != target:
                self._violate("watcher-ns", f"pid {pid} changed its {kind} namespace ({before} -> {target})")

    def _sample_fds(self, pid: int, seen: _Seen) -> None:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except FileNotFoundError:
            return  # the process exited between listing and sampling: nothing was hidden
        except OSError:
            # Confinement makes the child non-dumpable, which hides its fds from an unprivileged
            # host: a real gap. A process not (yet) seen confined is refused only in passing (mid-exec,
            # or exiting once its memory is gone), and later or earlier samples see its fds.
            if seen.confined:
                self.unobservable.add("fds")
            return
        sockets = 0
        deleted = 0
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:"):
                sockets += 1
            elif target.startswith(("anon_inode:", "/memfd:")):
                if target.startswith("/memfd:") or any(kind in target for kind in _FORBIDDEN_ANON):
                    self._violate(
                        "watcher-kobj", f"pid {pid} holds a forbidden kernel object: fd {fd} -> {target}"
                    )
            elif self.canary_dir and target.startswith(self.canary_dir) and _is_o_path(pid, fd) is False:
                # (``None``: closed between the listing and the flags, e.g. the O_PATH probe's fd; an
                # fd held open is still there at this or the next sample, and is judged then.)
                self._violate("watcher-canary-fd", f"pid {pid} holds an fd onto the canary dir: {target}")
            if target.endswith(" (deleted)") and target.startswith("/"):
                with contextlib.suppress(OSError):
                    deleted += os.stat(f"/proc/{pid}/fd/{fd}").st_size
        self.max_sockets = max(self.max_sockets, sockets)
        self.max_deleted_bytes = max(self.max_deleted_bytes, deleted)

    # -- verdicts -------------------------------------------------------------------------------

    def _credential_samples(self) -> list[tuple[str, str, str]]:
        """Samples of the processes seen confined (a short-lived child may die before it is seen
        confined: its boot samples are not the program's); with none confined (unconfined), all."""
        confined = [sample for done, samples in self.credentials.values() if done for sample in samples]
        if confined:
            return confined
        return [sample for _, samples in self.credentials.values() for sample in samples]

    @property
    def host_uids(self) -> set[str]:
        return {uid for uid, _, _ in self._credential_samples()}

    @property
    def capeff(self) -> set[str]:
        return {capeff for _, _, capeff in self._credential_samples()}

    @property
    def no_new_privs(self) -> set[str]:
        return {nnp for _, nnp, _ in self._credential_samples()}

    def live_program_pids(self) -> list[int]:
        return [pid for pid in self.program_pids if pid_alive(pid)]

    def assert_clean(self) -> None:
        check(
            not self.violations,
            "watcher",
            "; ".join(f"[{kind}] {message}" for kind, message in self.violations),
        )
        live = self.live_program_pids()
        check(not live, "watcher", f"sandbox processes still alive after the run: {live}")
        left = sorted(path for path in self.workdirs if os.path.exists(path))
        check(not left, "workdir-left", f"the host left work dirs behind: {left}")


# --- launcher -------------------------------------------------------------------------------------

_LAUNCHER = r"""
import asyncio, json, os, sys
held = os.open(sys.argv[2], os.O_RDONLY)  # the secret, open in the parent (for /proc/<ppid>/fd)
spec = json.loads(sys.stdin.read())
from toolrt.codemode._code_runtime import NO_VALUE, CodeRunLimits, CodeRunRequest
from toolrt.sandbox import ProbeResults, PythonSandboxRuntime

async def main():
    probes = ProbeResults(**spec["probes"])
    rt = PythonSandboxRuntime(
        pool_size=0, backend=spec["backend"], python=spec["python"], limits=CodeRunLimits(**spec["limits"]),
        allow_unconfined=spec["backend"] == "unconfined", _probe=lambda: probes,
    )
    try:
        result = await rt.run(CodeRunRequest(spec["program"], []))
    finally:
        await rt.aclose()
    error = None if result.error is None else [result.error.kind, result.error.message]
    value = None if result.value is NO_VALUE else result.value
    print(json.dumps({"logs": list(result.logs), "value": value, "error": error, "meta": result.meta}))

asyncio.run(main())
"""


@dataclass
class LaunchedResult:
    """A launcher run's result (the same fields as ``CodeRunResult``, as JSON)."""

    logs: list[str]
    value: Any
    error: list[str] | None
    meta: dict[str, Any]


# --- the evidence bundle --------------------------------------------------------------------------


class Evidence:
    """Canaries, listeners, decoys and snapshots for one test (see the module docstring)."""

    def __init__(self) -> None:
        self.nonce = secrets.token_hex(6)
        self.base = Path(tempfile.mkdtemp(prefix="toolrt-attack-", dir="/tmp"))
        self.base.chmod(0o755)
        self.tokens: dict[str, str] = {}
        # The secret and the fake home.
        self.secret = self.base / "secret.txt"
        self.secret.write_text(self._new("secret-file") + "\n")
        self.secret.chmod(0o644)
        self.secret_mtime_ns = 1_111_111_111_000_000_000 + secrets.randbelow(10**15) * 1000
        os.utime(self.secret, ns=(self.secret_mtime_ns, self.secret_mtime_ns))
        self.home = self.base / "home"
        ssh = self.home / ".ssh"
        ssh.mkdir(parents=True)
        (self.home / ".aws").mkdir()
        self.key_name = f"id_{secrets.token_hex(8)}"
        self.tokens["ssh-key-name"] = self.key_name
        (ssh / self.key_name).write_text(self._new("ssh-key") + "\n")
        (self.home / ".aws" / "credentials").write_text(self._new("aws-credentials") + "\n")
        (self.home / ".netrc").write_text(self._new("netrc") + "\n")
        for path in (self.home, ssh, self.home / ".aws"):
            path.chmod(0o755)
        for path in (ssh / self.key_name, self.home / ".aws" / "credentials", self.home / ".netrc"):
            path.chmod(0o644)
        # World-writable things a confined program must still not change.
        self.open = self.base / "open"
        self.open.mkdir()
        self.open.chmod(0o777)
        self.victim = self.open / "victim.txt"
        self.victim_text = "victim " + secrets.token_hex(8) + "\n"
        self.victim.write_text(self.victim_text)
        self.victim.chmod(0o666)
        self.movable = self.open / "movable.txt"
        self.movable_text = "movable " + secrets.token_hex(8) + "\n"
        self.movable.write_text(self.movable_text)
        self.movable.chmod(0o666)
        self.victim_stat = os.stat(self.victim)
        self.open_entries = {"victim.txt", "movable.txt"}
        # A third-party package with import-time I/O, and a tool root (for path-traversal).
        self.pkg = self.base / "pkg"
        self.pkg.mkdir()
        self.module = f"canarymod_{self.nonce}"
        (self.pkg / f"{self.module}.py").write_text(
            f"TOKEN = {self._new('import')!r}\n"
            f"open({str(self.open / 'import-side-effect')!r}, 'w').write('imported')\n"
        )
        self.pkg.chmod(0o755)
        self.tool_root = self.base / "tooldata"
        (self.tool_root / "sub").mkdir(parents=True)
        (self.tool_root / "ok.txt").write_text("fine\n")
        (self.tool_root / "escape").symlink_to(self.secret)
        self.tool_root.chmod(0o755)
        # Persistence paths (absent; must stay absent).
        self.persist = [
            Path(f"/tmp/toolrt-persist-{self.nonce}"),
            Path(f"/var/tmp/toolrt-persist-{self.nonce}"),
            Path(f"/dev/shm/toolrt-persist-{self.nonce}"),
            Path(f"/dev/shm/sem.toolrt-persist-{self.nonce}"),
        ]
        # Host identity canaries.
        for name, path in (("boot_id", "/proc/sys/kernel/random/boot_id"), ("machine-id", "/etc/machine-id")):
            text = (_read(path) or "").strip()
            if len(text) >= 16:
                self.tokens[name] = text
        self.passwd_root = "root:x:0:0:"
        self.env_token = self._new("env")
        self.launcher_env_token = self._new("launcher-env")
        self.launcher_argv_token = self._new("launcher-argv")
        self.ipc_key = 0x7A000000 + secrets.randbelow(0xFFFFFF)
        self.ipc_before = self._ipc_ids()
        # Listeners, decoys, the inheritable pipe, the signal counter.
        self.listeners = Listeners(self.base)
        self.base_entries = set(os.listdir(self.base))
        self.decoys = [Decoy("own-uid", self.open / "decoy-own-signalled", self._new("decoy-own"))]
        if IS_ROOT:
            self.decoys.append(
                Decoy("uid65534", self.open / "decoy-nobody-signalled", self._new("decoy-nobody"), NOBODY)
            )
        for decoy in self.decoys:
            decoy.start()
        self.leak_read, self.leak_write = os.pipe()
        os.set_inheritable(self.leak_write, True)
        os.set_blocking(self.leak_read, False)
        self.secret_fd = os.open(self.secret, os.O_RDONLY)
        os.set_inheritable(self.secret_fd, True)
        self.sigurg = 0
        self._old_sigurg = signal.signal(signal.SIGURG, self._on_sigurg)
        self._old_env = os.environ.get(ENV_CANARY_NAME)
        os.environ[ENV_CANARY_NAME] = self.env_token

    def _new(self, kind: str) -> str:
        value = _token(kind.replace("-", "") + "X")
        self.tokens[kind] = value
        return value

    def _on_sigurg(self, signum: int, frame: Any) -> None:
        self.sigurg += 1

    @property
    def same_uid_decoy(self) -> Decoy:
        """The decoy that runs as the uid a confined child ends up with (65534 when root)."""
        return self.decoys[-1]

    def substitutions(self) -> dict[str, Any]:
        return {
            "base": str(self.base),
            "secret": str(self.secret),
            "home": str(self.home),
            "open": str(self.open),
            "victim": str(self.victim),
            "movable": str(self.movable),
            "newfile": str(self.open / "new-file"),
            "pkg": str(self.pkg),
            "module": self.module,
            "tmp_marker": str(self.persist[0]),
            "vartmp_marker": str(self.persist[1]),
            "shm_marker": str(self.persist[2]),
            "shm_marker2": str(self.persist[3]),
            "tcp_port": self.listeners.tcp_port,
            "tcp6_port": self.listeners.tcp6_port,
            "udp_port": self.listeners.udp_port,
            "udp6_port": self.listeners.udp6_port,
            "unix_path": self.listeners.unix_path,
            "unix_dgram": self.listeners.unix_dgram,
            "abstract": self.listeners.abstract,
            "decoy_pids": [decoy.pid for decoy in self.decoys],
            "decoy_pid": self.same_uid_decoy.pid,
            "host_pid": os.getpid(),
            "host_pgid": os.getpgid(0),
            "env_name": ENV_CANARY_NAME,
            "ipc_key": self.ipc_key,
            "nonce": self.nonce,
            **{f"m_{name}": str(self.open / f"marker-{name}") for name in MARKERS},
        }

    # -- checks ---------------------------------------------------------------------------------

    def result_text(self, result: Any) -> str:
        error = result.error
        if error is not None and not isinstance(error, list):
            error = [error.kind, error.message]
        value = result.value
        try:
            value_text = json.dumps(value)
        except (TypeError, ValueError):
            value_text = repr(value)
        meta = {key: result.meta.get(key) for key in ("stdout", "stderr")}
        return "\n".join([json.dumps(list(result.logs)), value_text, json.dumps(error), json.dumps(meta)])

    def assert_no_leak(self, result: Any, *, extra: dict[str, str] | None = None) -> None:
        text = self.result_text(result)
        tokens = dict(self.tokens)
        tokens["env"] = self.env_token
        tokens["passwd"] = self.passwd_root
        tokens["secret-mtime"] = str(self.secret_mtime_ns)
        tokens["secret-mtime-s"] = str(self.secret_mtime_ns // 10**9)
        tokens.update(extra or {})
        leaked = [
            str(evidence_failure(f"leak-{name}", f"{name} canary ({token[:24]}...) reached the result"))
            for name, token in tokens.items()
            if token in text
        ]
        if leaked:
            raise AssertionError("\n".join(leaked))

    def _ipc_ids(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for kind in ("shm", "sem", "msg"):
            lines = (_read(f"/proc/sysvipc/{kind}") or "").splitlines()[1:]
            out[kind] = {" ".join(line.split()[:2]) for line in lines}
        return out

    def assert_intact(self, program_pids: Iterable[int] = ()) -> None:
        """Every host-side canary, all at once (one AssertionError listing every failed check)."""
        failures: list[str] = []

        def check(condition: object, tag: str, message: str) -> None:
            if not condition:
                failures.append(str(evidence_failure(tag, message)))

        check(
            not self.listeners.events,
            "listener",
            f"the sandbox reached a host listener: {self.listeners.events}",
        )
        for decoy in self.decoys:
            try:
                decoy.assert_healthy()
            except AssertionError as error:
                failures.append(str(error))
        check(self.sigurg == 0, "signal-host", f"the test process received {self.sigurg} SIGURG")
        check(self.secret.exists(), "fs-rename", "the secret was moved away")
        if not self.secret.exists():
            raise AssertionError("\n".join(failures))
        check(self.secret.read_text().startswith(self.tokens["secret-file"]), "fs-secret", "secret changed")
        secret_stat = os.stat(self.secret)
        check(secret_stat.st_nlink == 1, "fs-hardlink", f"secret has {secret_stat.st_nlink} links")
        check(stat.S_IMODE(secret_stat.st_mode) == 0o644, "fs-metadata", "secret mode changed")
        check(self.victim.exists(), "fs-write", "victim file was removed or renamed")
        victim = os.stat(self.victim) if self.victim.exists() else self.victim_stat
        check(
            self.victim.exists() and self.victim.read_text() == self.victim_text,
            "fs-write",
            "victim content changed",
        )
        check(victim.st_nlink == 1, "fs-hardlink", f"victim has {victim.st_nlink} links")
        check(stat.S_IMODE(victim.st_mode) == 0o666, "fs-metadata", f"victim mode now {victim.st_mode:o}")
        check(
            (victim.st_uid, victim.st_gid) == (self.victim_stat.st_uid, self.victim_stat.st_gid),
            "fs-metadata",
            "victim owner changed",
        )
        check(victim.st_mtime_ns == self.victim_stat.st_mtime_ns, "fs-metadata", "victim mtime changed")
        with contextlib.suppress(OSError):
            check(not os.listxattr(self.victim), "fs-metadata", "victim gained xattrs")
        check(
            self.movable.exists() and self.movable.read_text() == self.movable_text,
            "fs-rename",
            "movable file was moved or changed",
        )
        check(self.open.is_dir(), "fs-rename", "the world-writable dir was moved")
        if not self.open.is_dir():
            raise AssertionError("\n".join(failures))
        check(stat.S_IMODE(os.stat(self.open).st_mode) == 0o777, "fs-metadata", "open dir mode changed")
        extra = set(os.listdir(self.open)) - self.open_entries
        check(not extra, "fs-write", f"new entries in the world-writable dir: {sorted(extra)}")
        extra = set(os.listdir(self.base)) - self.base_entries
        check(not extra, "fs-write", f"new entries in the canary dir: {sorted(extra)}")
        for path in self.persist:
            check(not path.exists(), "fs-persist", f"{path} exists on the host")
        try:
            leaked = os.read(self.leak_read, 4096)
        except BlockingIOError:
            leaked = b""
        check(not leaked, "fd-inherit", f"the inheritable pipe received {leaked[:40]!r}")
        for kind, _ident, line in self._new_ipc(program_pids):
            check(False, "ipc", f"a SysV {kind} object appeared: {line.strip()}")
        if failures:
            raise AssertionError("\n".join(failures))

    def _new_ipc(self, program_pids: Iterable[int]) -> list[tuple[str, str, str]]:
        """SysV objects created since start-up with our key, or (shm) by one of the program's pids."""
        pids = {str(pid) for pid in program_pids}
        out: list[tuple[str, str, str]] = []
        for kind in ("shm", "sem", "msg"):
            lines = (_read(f"/proc/sysvipc/{kind}") or "").splitlines()[1:]
            for line in lines:
                parts = line.split()
                if len(parts) < 5 or " ".join(parts[:2]) in self.ipc_before[kind]:
                    continue
                creator = parts[4] if kind == "shm" else ""
                if int(parts[0]) == self.ipc_key or creator in pids:
                    out.append((kind, parts[1], line))
        return out

    def _cleanup(self, program_pids: Iterable[int]) -> None:
        """Remove what an *unconfined* self-test run may have left: SysV objects, a user-keyring key."""
        flags = {"shm": "-m", "sem": "-s", "msg": "-q"}
        for kind, ident, _line in self._new_ipc(program_pids):
            subprocess.run(["ipcrm", flags[kind], ident], check=False, capture_output=True)
        keyctl = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
        if keyctl is None:
            return
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        description = f"toolrt-attack-user-{self.nonce}".encode()
        key = libc.syscall(
            ctypes.c_long(keyctl), ctypes.c_long(10), ctypes.c_long(-4), b"user", description, 0
        )
        if key > 0:
            libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(9), ctypes.c_long(key), ctypes.c_long(-4))

    def close(self, program_pids: Iterable[int] = ()) -> None:
        with contextlib.suppress(Exception):
            self._cleanup(program_pids)
        with contextlib.suppress(Exception):
            signal.signal(signal.SIGURG, self._old_sigurg)
        if self._old_env is None:
            os.environ.pop(ENV_CANARY_NAME, None)
        else:
            os.environ[ENV_CANARY_NAME] = self._old_env
        for decoy in self.decoys:
            decoy.close()
        self.listeners.close()
        for fd in (self.leak_read, self.leak_write, self.secret_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        for path in self.persist:
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        shutil.rmtree(self.base, ignore_errors=True)

    # -- launcher -------------------------------------------------------------------------------

    async def launch(
        self,
        watcher: TreeWatcher | None,
        program: str,
        *,
        backend: str,
        python: str | None,
        probes: dict[str, Any],
        limits: dict[str, Any],
    ) -> LaunchedResult:
        """Run ``program`` through the runtime inside a launcher process (see the module docstring)."""
        import asyncio

        spec = {"program": program, "backend": backend, "python": python, "probes": probes, "limits": limits}
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", ENV_CANARY_NAME: self.launcher_env_token}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _LAUNCHER,
            self.launcher_argv_token,
            str(self.secret),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd="/",
        )
        if watcher is not None:
            watcher.add_host(process.pid)
        stdout, stderr = await asyncio.wait_for(process.communicate(json.dumps(spec).encode()), 90)
        if process.returncode != 0:
            raise RuntimeError(f"launcher failed ({process.returncode}): {stderr.decode()[-2000:]}")
        data = json.loads(stdout.decode().strip().splitlines()[-1])
        return LaunchedResult(data["logs"], data["value"], data["error"], data["meta"])

    def launcher_tokens(self) -> dict[str, str]:
        return {"launcher-env": self.launcher_env_token, "launcher-argv": self.launcher_argv_token}
