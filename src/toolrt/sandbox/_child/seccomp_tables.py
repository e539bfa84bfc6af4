"""The sandbox child's seccomp deny-list: one reviewed table for x86_64 and aarch64.

Imported by the child bootstrap under ``python -I -S``: standard library only, nothing but literals.

Each row is ``(name, x86_64 number, aarch64 number, action, why)``. A number of ``None`` means the
architecture has no such system call (aarch64 has no ``fork``; x86-only calls). Numbers come from the
kernel's ``arch/x86/entry/syscalls/syscall_64.tbl`` and ``include/uapi/asm-generic/unistd.h`` (which
aarch64 uses); every call numbered 424 and up has the same number on every architecture.
``tests/sandbox/test_confine.py`` cross-checks the table against the installed kernel headers.

Actions:

``eperm`` / ``eacces`` / ``enosys`` / ``enolck``
    fail with that errno, unconditionally.
``cond:<rule>``
    an argument-checked rule; ``confine_seccomp.py`` assembles one block per rule and refuses to build the
    filter if a rule named here has no block (so the table and the code cannot drift apart silently).

The filter's default is ALLOW (contract SX5: CPython and glibc need too many calls, varying with
the libc version, for an allow-list to stay reliable). A syscall the kernel adds later is therefore
allowed until it is added here: review this table on every kernel release the project supports.
Landlock covers the file system, TCP and abstract-socket/signal scoping; this table covers what
Landlock does not (UDP and UNIX sockets, process creation, namespaces, SysV/POSIX IPC, and the wider
kernel attack surface).
"""

from __future__ import annotations

# Audit architecture tokens (``AUDIT_ARCH_*`` from linux/audit.h): EM_* | __AUDIT_ARCH_64BIT | LE.
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
# x32 ABI syscalls arrive with AUDIT_ARCH_X86_64 and this bit set in the number.
X32_SYSCALL_BIT = 0x40000000

ARCHES: dict[str, int] = {"x86_64": AUDIT_ARCH_X86_64, "aarch64": AUDIT_ARCH_AARCH64}

# System calls the confine modules themselves make through ``syscall(2)`` (no glibc wrapper on every libc),
# as (x86_64, aarch64).
OWN_SYSCALLS: dict[str, tuple[int, int]] = {
    "seccomp": (317, 277),
    "landlock_create_ruleset": (444, 444),
    "landlock_add_rule": (445, 445),
    "landlock_restrict_self": (446, 446),
}

# Argument-checked rules that confine_seccomp.py must implement (one BPF block each).
CONDITIONAL_RULES = frozenset(
    {
        "cond:socketpair",
        "cond:clone",
        "cond:clone-process",
        "cond:self-signal",
        "cond:prlimit64",
        "cond:prctl",
        "cond:utimensat",
        "cond:fcntl",
        "cond:ioctl",
    }
)

# fcntl(2) commands a program may use (the rest fail with EPERM): the fd-flag and status-flag calls
# CPython and asyncio make (traced: F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC), plus F_DUPFD
# (os.dup2 falls back to it) and F_GETPIPE_SZ (a read). Not F_SETLEASE (a lease stalls a host writer of
# a file the child's uid owns for up to lease-break-time), F_NOTIFY (dnotify: watching file activity,
# which inotify's denial already refuses), F_SETOWN/F_SETOWN_EX/F_SETSIG (signals aimed at other
# processes or groups) or F_SETPIPE_SZ (pipe buffers charged to the uid).
FCNTL_ALLOWED: dict[str, int] = {
    "F_DUPFD": 0,
    "F_GETFD": 1,
    "F_SETFD": 2,
    "F_GETFL": 3,
    "F_SETFL": 4,
    "F_DUPFD_CLOEXEC": 1030,
    "F_GETPIPE_SZ": 1032,
}
# Record locks fail with ENOLCK, like flock(2): a lock on a file that two concurrent runs can both open
# (the standard library, any shared read-only grant) is a channel between them that no file permission
# closes, and BPF cannot tell a shared file's fd from a work-dir file's. Cost: sqlite3 on a file needs
# ``sqlite3.connect("file:db?nolock=1", uri=True)`` (or ``:memory:``).
FCNTL_LOCKS: dict[str, int] = {
    "F_GETLK": 5,
    "F_SETLK": 6,
    "F_SETLKW": 7,
    "F_OFD_GETLK": 36,
    "F_OFD_SETLK": 37,
    "F_OFD_SETLKW": 38,
}
# ioctl(2) requests a program may make on any fd (the rest fail with ENOTTY, what a pipe answers):
# what CPython needs (traced: TCGETS for isatty, FIONBIO for setblocking, FIOCLEX; plus FIONCLEX,
# FIONREAD and TIOCGWINSZ for os.get_terminal_size). Every fd, not only the frame socket: an AF_UNIX
# socketpair lives in the same network namespace, and SIOCGIFCONF on either lists the host's
# interfaces and addresses when that namespace is the host's (the landlock backend; under bwrap the
# frame fd is the host's too).
IOCTL_ALLOWED: dict[str, int] = {
    "TCGETS": 0x5401,
    "TIOCGWINSZ": 0x5413,
    "FIONREAD": 0x541B,
    "FIONBIO": 0x5421,
    "FIONCLEX": 0x5450,
    "FIOCLEX": 0x5451,
}

Row = tuple[str, int | None, int | None, str, str]

# The confined-command launcher's profile (command_launcher.py): the same table with these rows
# relaxed ("allow" skips the row), because a shell must fork and exec; every other row stays.
# Process creation is still bounded by RLIMIT_NPROC and cannot make namespaces (cond:clone-process).
COMMAND_ACTIONS: dict[str, str] = {
    "fork": "allow",
    "vfork": "allow",
    "execve": "allow",
    "execveat": "allow",
    "clone": "cond:clone-process",
}
# Signals to the command's own children (a shell's kill, a pipeline's teardown): only where the
# kernel already keeps them inside the sandbox (Landlock's signal scope, ABI >= 6, or a pid namespace).
COMMAND_SIGNAL_ACTIONS: dict[str, str] = dict.fromkeys(
    ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"), "allow"
)
# allow_network=True: new sockets of any family (the network namespace, or its absence, decides).
COMMAND_NETWORK_ACTIONS: dict[str, str] = {"socket": "allow", "socketpair": "allow"}

# fmt: off
TABLE: tuple[Row, ...] = (
    # ---- network: the only channel is the inherited fd 3 socket ----------------------------------
    ("socket",            41,  198, "eacces", "no new sockets: closes UDP/DNS, pathname and abstract UNIX, "
                                              "netlink, packet, vsock (Landlock <9 covers only TCP)"),
    ("socketpair",        53,  199, "cond:socketpair",
                                    "AF_UNIX + SOCK_STREAM only (asyncio's self-pipe); a DGRAM pair "
                                    "could sendto() any pathname socket, e.g. /dev/log"),
    # ---- process creation ------------------------------------------------------------------------
    ("fork",              57, None, "eperm",  "no child processes (fork bombs, escaping the run)"),
    ("vfork",             58, None, "eperm",  "no child processes (subprocess uses vfork)"),
    ("execve",            59,  221, "eperm",  "no new programs (subprocess, os.system, os.exec*)"),
    ("execveat",         322,  281, "eperm",  "no new programs (memfd + execveat)"),
    ("clone",             56,  220, "cond:clone",
                                    "threads only: CLONE_THREAD set and no CLONE_NEW* flag (arg0)"),
    ("clone3",           435,  435, "enosys", "flags live in memory BPF cannot read; ENOSYS makes "
                                              "glibc fall back to clone(), which is checked"),
    # ---- namespaces and mounts (kernel attack surface; escaping the Landlock view) ----------------
    ("unshare",          272,   97, "eperm",  "no new namespaces (userns widens kernel surface)"),
    ("setns",            308,  268, "eperm",  "no joining other namespaces"),
    ("mount",            165,   40, "eperm",  "no mounts"),
    ("umount2",          166,   39, "eperm",  "no unmounts (e.g. of a masking mount)"),
    ("pivot_root",       155,   41, "eperm",  "no root changes"),
    ("chroot",           161,   51, "eperm",  "no root changes"),
    ("open_tree",        428,  428, "eperm",  "new mount API"),
    ("move_mount",       429,  429, "eperm",  "new mount API"),
    ("fsopen",           430,  430, "eperm",  "new mount API"),
    ("fsconfig",         431,  431, "eperm",  "new mount API"),
    ("fsmount",          432,  432, "eperm",  "new mount API"),
    ("fspick",           433,  433, "eperm",  "new mount API"),
    ("mount_setattr",    442,  442, "eperm",  "new mount API"),
    ("statmount",        457,  457, "eperm",  "mount table disclosure"),
    ("listmount",        458,  458, "eperm",  "mount table disclosure"),
    ("open_tree_attr",   467,  467, "eperm",  "new mount API"),
    ("listns",           470,  470, "eperm",  "namespace enumeration"),
    # ---- other processes -------------------------------------------------------------------------
    ("ptrace",           101,  117, "eperm",  "no tracing (decoys, ptrace(TRACEME) tricks)"),
    ("process_vm_readv", 310,  270, "eperm",  "no reading other processes' memory"),
    ("process_vm_writev", 311, 271, "eperm",  "no writing other processes' memory"),
    ("kcmp",             312,  272, "eperm",  "no comparing other processes' kernel objects"),
    ("pidfd_open",       434,  434, "eperm",  "no handles on other processes"),
    ("pidfd_getfd",      438,  438, "eperm",  "no stealing other processes' fds"),
    ("pidfd_send_signal", 424, 424, "eperm",  "signals only to itself (see kill)"),
    ("process_madvise",  440,  440, "eperm",  "acts on another process's memory"),
    ("process_mrelease", 448,  448, "eperm",  "acts on another process's memory"),
    ("get_robust_list",  274,  100, "eperm",  "reads another process's futex list head"),
    ("migrate_pages",    256,  238, "eperm",  "acts on another process's memory placement"),
    ("move_pages",       279,  239, "eperm",  "acts on another process's memory placement"),
    ("kill",              62,  129, "cond:self-signal", "only toward its own pid (kill(ppid), kill(-1))"),
    ("tkill",            200,  130, "cond:self-signal", "only toward its own pid"),
    ("tgkill",           234,  131, "cond:self-signal", "only toward its own thread group (arg0)"),
    ("rt_sigqueueinfo",  129,  138, "cond:self-signal", "only toward its own pid"),
    ("rt_tgsigqueueinfo", 297, 240, "cond:self-signal", "only toward its own thread group (arg0)"),
    # ---- IPC that bypasses files, so Landlock cannot see it (host-visible channels) ---------------
    ("shmget",            29,  194, "eperm",  "SysV shm: a channel to other processes"),
    ("shmat",             30,  196, "eperm",  "SysV shm: a channel to other processes"),
    ("shmctl",            31,  195, "eperm",  "SysV shm: a channel to other processes"),
    ("semget",            64,  190, "eperm",  "SysV semaphores: a channel to other processes"),
    ("semop",             65,  193, "eperm",  "SysV semaphores: a channel to other processes"),
    ("semctl",            66,  191, "eperm",  "SysV semaphores: a channel to other processes"),
    ("semtimedop",       220,  192, "eperm",  "SysV semaphores: a channel to other processes"),
    ("msgget",            68,  186, "eperm",  "SysV message queues: a channel to other processes"),
    ("msgsnd",            69,  189, "eperm",  "SysV message queues: a channel to other processes"),
    ("msgrcv",            70,  188, "eperm",  "SysV message queues: a channel to other processes"),
    ("msgctl",            71,  187, "eperm",  "SysV message queues: a channel to other processes"),
    ("mq_open",          240,  180, "eperm",  "POSIX message queues: a channel to other processes"),
    ("mq_unlink",        241,  181, "eperm",  "POSIX message queues"),
    ("mq_timedsend",     242,  182, "eperm",  "POSIX message queues"),
    ("mq_timedreceive",  243,  183, "eperm",  "POSIX message queues"),
    ("mq_notify",        244,  184, "eperm",  "POSIX message queues"),
    ("mq_getsetattr",    245,  185, "eperm",  "POSIX message queues"),
    # ---- file metadata outside the grants: Landlock (ABI <= 7) does not cover chmod/chown/utime/xattr,
    #      so a child running as the host's own uid could chmod the user's files anywhere. The fd-based
    #      calls (fchmod, fchown, fsetxattr, fremovexattr, futimens) stay allowed: their fd had to be
    #      opened through Landlock (O_PATH fds are rejected by them). Cost: os.chmod(path),
    #      os.utime(path) and shutil.copy/copy2/copytree (copymode/copystat) fail inside the work dir.
    ("chmod",             90, None, "eperm",  "path-based metadata change, outside Landlock's view"),
    ("fchmodat",         268,   53, "eperm",  "path-based metadata change, outside Landlock's view"),
    ("fchmodat2",        452,  452, "eperm",  "path-based (and AT_EMPTY_PATH on O_PATH fds)"),
    ("chown",             92, None, "eperm",  "path-based metadata change, outside Landlock's view"),
    ("lchown",            94, None, "eperm",  "path-based metadata change, outside Landlock's view"),
    ("fchownat",         260,   54, "eperm",  "path-based (and AT_EMPTY_PATH on O_PATH fds)"),
    ("utime",            132, None, "eperm",  "path-based timestamp change"),
    ("utimes",           235, None, "eperm",  "path-based timestamp change"),
    ("futimesat",        261, None, "eperm",  "path-based timestamp change"),
    ("utimensat",        280,   88, "cond:utimensat",
                                    "only with a NULL path (futimens on an fd opened through Landlock)"),
    ("setxattr",         188,    5, "eperm",  "path-based xattr change, outside Landlock's view"),
    ("lsetxattr",        189,    6, "eperm",  "path-based xattr change, outside Landlock's view"),
    ("removexattr",      197,   14, "eperm",  "path-based xattr change, outside Landlock's view"),
    ("lremovexattr",     198,   15, "eperm",  "path-based xattr change, outside Landlock's view"),
    ("setxattrat",       463,  463, "eperm",  "path-based xattr change, outside Landlock's view"),
    ("removexattrat",    466,  466, "eperm",  "path-based xattr change, outside Landlock's view"),
    # ---- kernel attack surface -------------------------------------------------------------------
    ("io_uring_setup",   425,  425, "eperm",  "io_uring bypasses the socket rule (IORING_OP_SOCKET)"),
    ("io_uring_enter",   426,  426, "eperm",  "io_uring"),
    ("io_uring_register", 427, 427, "eperm",  "io_uring"),
    ("bpf",              321,  280, "eperm",  "eBPF: large kernel attack surface"),
    ("perf_event_open",  298,  241, "eperm",  "perf: side channels, kernel attack surface"),
    ("userfaultfd",      323,  282, "eperm",  "widens kernel race exploitation"),
    ("keyctl",           250,  219, "eperm",  "kernel keyrings (may hold host credentials)"),
    ("add_key",          248,  217, "eperm",  "kernel keyrings"),
    ("request_key",      249,  218, "eperm",  "kernel keyrings"),
    ("memfd_create",     319,  279, "eperm",  "anonymous executable files (memfd + exec)"),
    ("memfd_secret",     447,  447, "eperm",  "kernel attack surface, unused by Python"),
    ("personality",      135,   92, "eperm",  "execution-domain games (READ_IMPLIES_EXEC, ...)"),
    ("modify_ldt",       154, None, "eperm",  "x86 segment games (historic exploit surface)"),
    ("iopl",             172, None, "eperm",  "raw I/O port access"),
    ("ioperm",           173, None, "eperm",  "raw I/O port access"),
    ("uselib",           134, None, "eperm",  "legacy library loading"),
    ("init_module",      175,  105, "eperm",  "kernel modules"),
    ("finit_module",     313,  273, "eperm",  "kernel modules"),
    ("delete_module",    176,  106, "eperm",  "kernel modules"),
    ("kexec_load",       246,  104, "eperm",  "replacing the kernel"),
    ("kexec_file_load",  320,  294, "eperm",  "replacing the kernel"),
    ("reboot",           169,  142, "eperm",  "host power state"),
    ("swapon",           167,  224, "eperm",  "host swap"),
    ("swapoff",          168,  225, "eperm",  "host swap"),
    ("sethostname",      170,  161, "eperm",  "host identity"),
    ("setdomainname",    171,  162, "eperm",  "host identity"),
    ("settimeofday",     164,  170, "eperm",  "host clock"),
    ("clock_settime",    227,  112, "eperm",  "host clock"),
    ("adjtimex",         159,  171, "eperm",  "host clock"),
    ("clock_adjtime",    305,  266, "eperm",  "host clock"),
    ("acct",             163,   89, "eperm",  "process accounting"),
    ("quotactl",         179,   60, "eperm",  "disk quotas"),
    ("quotactl_fd",      443,  443, "eperm",  "disk quotas"),
    ("syslog",           103,  116, "eperm",  "kernel log disclosure"),
    ("vhangup",          153,   58, "eperm",  "terminal hangup"),
    ("lookup_dcookie",   212,   18, "eperm",  "kernel path disclosure (legacy profiling)"),
    ("name_to_handle_at", 303, 264, "eperm",  "file handles bypass path checks"),
    ("open_by_handle_at", 304, 265, "eperm",  "file handles bypass path checks (container escapes)"),
    ("fanotify_init",    300,  262, "eperm",  "watching file activity outside the sandbox"),
    ("inotify_init",     253, None, "eperm",  "watching file names outside Landlock's view"),
    ("inotify_init1",    294,   26, "eperm",  "watching file names outside Landlock's view"),
    ("fcntl",             72,   25, "cond:fcntl",
                                    "commands in FCNTL_ALLOWED only (arg1, both words); locks ENOLCK; "
                                    "no leases, dnotify, signal owners"),
    ("flock",             73,   32, "enolck", "locks on shared read-only files are a channel between runs"),
    ("ioctl",             16,   29, "cond:ioctl",
                                    "requests in IOCTL_ALLOWED only (arg1, both words), else ENOTTY: "
                                    "no SIOCGIFCONF & co on a socket of the host's network namespace"),
    # ---- resources, scheduling and credentials (no raising limits, no niceness games) -------------
    ("setrlimit",        160,  164, "eperm",  "no changing limits (root could raise them)"),
    ("prlimit64",        302,  261, "cond:prlimit64", "reading limits only: new-limit pointer (arg2) NULL"),
    ("setpriority",      141,  140, "eperm",  "no niceness games (nice(-5) as root)"),
    ("sched_setscheduler", 144, 119, "eperm", "no real-time scheduling"),
    ("sched_setparam",   142,  118, "eperm",  "no real-time scheduling"),
    ("sched_setattr",    314,  274, "eperm",  "no real-time/deadline scheduling"),
    ("ioprio_set",       251,   30, "eperm",  "no I/O priority games (also on other processes)"),
    ("setuid",           105,  146, "eperm",  "credentials are fixed after the drop"),
    ("setgid",           106,  144, "eperm",  "credentials are fixed after the drop"),
    ("setreuid",         113,  145, "eperm",  "credentials are fixed after the drop"),
    ("setregid",         114,  143, "eperm",  "credentials are fixed after the drop"),
    ("setresuid",        117,  147, "eperm",  "credentials are fixed after the drop"),
    ("setresgid",        119,  149, "eperm",  "credentials are fixed after the drop"),
    ("setgroups",        116,  159, "eperm",  "credentials are fixed after the drop"),
    ("setfsuid",         122,  151, "eperm",  "credentials are fixed after the drop"),
    ("setfsgid",         123,  152, "eperm",  "credentials are fixed after the drop"),
    ("capset",           126,   91, "eperm",  "capabilities are fixed after the drop"),
    ("prctl",            157,  167, "cond:prctl",
                                    "no PR_SET_DUMPABLE / PR_SET_PTRACER / PR_SET_MM (re-opening "
                                    "ptrace and /proc access); other options allowed"),
)
# fmt: on
