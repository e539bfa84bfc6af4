"""The confined-command launcher: confine this process, then ``execve`` the command in its place.

Run as ``<python> -I -S command_launcher.py <config JSON> <argv...>`` (the host builds the line:
``toolrt.sandbox._host.command``). A command is any program (a shell, Deno), so it cannot confine
itself the way the Python bootstrap does; this launcher applies the same layers in the same order
(rlimits, uid drop, no_new_privs, Landlock, seccomp) and then becomes the command, whose every
descendant inherits them. Two things differ from the bootstrap's policy, both because a command
is a program tree, not one interpreter:

- the Landlock grants are the host's list (the read-only system and the workspace), not the
  interpreter's files;
- the seccomp profile is the same table with ``seccomp_tables.COMMAND_ACTIONS`` relaxed (fork and
  exec allowed; ``clone`` still never makes a namespace), signals to its own children allowed only
  where the kernel scopes them (``COMMAND_SIGNAL_ACTIONS``), sockets only when the network was
  granted (``COMMAND_NETWORK_ACTIONS``).

A layer that was asked for and cannot be applied ends the launch: exit status 125, one
``toolrt-confine: <reason>`` line on stderr, and the command never runs. With ``reportFd`` in the
config, the enforcement report (or the failure) is written there as one JSON line first, so a host
that speaks a protocol on that fd learns what the command runs under.

A root host with a bwrap that must not run as root uses ``"mode": "drop"``: switch to the given
uid/gid (no supplementary groups) and exec the rest (bwrap), nothing else.

Standard library only (the child folder's rule); the confine modules come from this file's folder.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)

try:  # imported as toolrt.sandbox._child.command_launcher (tests)
    from toolrt.sandbox._child import seccomp_tables as _tables
    from toolrt.sandbox._child.confine_landlock import apply_landlock, landlock_abi
    from toolrt.sandbox._child.confine_policy import ConfinementError, ConfinementPolicy
    from toolrt.sandbox._child.confine_process import (
        apply_process_budget,
        apply_rlimits,
        drop_privileges,
        no_new_privs,
        private_task_count,
    )
    from toolrt.sandbox._child.confine_seccomp import build_seccomp_filter, install_seccomp
    from toolrt.sandbox._child.confine_syscalls import seccomp_arch
except ImportError:  # run as a script: its siblings from its folder
    import seccomp_tables as _tables  # type: ignore[no-redef,import-not-found]
    from confine_landlock import apply_landlock, landlock_abi  # type: ignore[no-redef,import-not-found]
    from confine_policy import (  # type: ignore[no-redef,import-not-found]
        ConfinementError,
        ConfinementPolicy,
    )
    from confine_process import (  # type: ignore[no-redef,import-not-found]
        apply_process_budget,
        apply_rlimits,
        drop_privileges,
        no_new_privs,
        private_task_count,
    )
    from confine_seccomp import build_seccomp_filter, install_seccomp  # type: ignore[no-redef,import-not-found]
    from confine_syscalls import seccomp_arch  # type: ignore[no-redef,import-not-found]

__all__ = ["REFUSED", "confine_command_process", "main"]

REFUSED = 125
"""The exit status of a launch that was refused (a required layer could not be applied)."""
_FULL_LANDLOCK_ABI = 3
_READ_FILE = 1 << 2  # LANDLOCK_ACCESS_FS_READ_FILE
_SIGNAL_SCOPE_ABI = 6


def confine_command_process(
    config: dict[str, object], before_filters: Callable[[], None] | None = None
) -> dict[str, object]:
    """Apply the layers ``config`` asks for to this process and return the enforcement report
    (the bootstrap's shape: ``layers``, ``landlockAbi``, ``enforcement``, ``notes``). Raises
    :class:`ConfinementError` when a required layer could not be applied. ``before_filters``
    runs after no_new_privs and before Landlock and seccomp (the memory warden's fork)."""
    policy = ConfinementPolicy.from_dict(config["policy"])
    rules = [(str(path), int(rights)) for path, rights in config.get("rules", [])]  # type: ignore[attr-defined]
    allow_network = config.get("allowNetwork") is True
    pid_namespace = config.get("pidNamespace") is True
    layers: list[str] = []
    notes: list[str] = []
    ppid = os.getppid()
    root = os.geteuid() == 0 or os.getuid() == 0
    abi: int | None = None

    def report() -> dict[str, object]:
        full = (
            "landlock" in layers
            and "seccomp" in layers
            and abi is not None
            and abi >= _FULL_LANDLOCK_ABI
            and not root
        )
        return {
            "layers": layers,
            "landlockAbi": abi,
            "enforcement": "full" if full else "partial",
            "notes": [note[:500] for note in notes],
        }

    def fail(message: str) -> ConfinementError:
        return ConfinementError(message, report())

    unprivileged = not root or policy.drop_to is not None
    try:
        apply_rlimits(policy, unprivileged=unprivileged, notes=notes, processes=False)
    except (OSError, ValueError) as error:
        raise fail(f"rlimits could not be applied: {error}") from None
    layers.append("rlimits")
    try:
        root = drop_privileges(policy, layers, notes)
        if policy.private_task_count and not root:
            private_task_count(notes)
        apply_process_budget(policy, unprivileged=not root, notes=notes)
        no_new_privs(ppid)
    except (OSError, ValueError) as error:
        raise fail(f"process confinement could not be applied: {error}") from None
    except ConfinementError as error:
        raise fail(str(error)) from None
    layers.append("no-new-privs")
    if before_filters is not None:
        before_filters()
    if config.get("ownMemoryMap") is True:
        # Read-only, this process's own map (glibc's pthread_getattr_np reads it for the main
        # thread's stack; Deno panics without it). The pid is the command's (after the warden's
        # fork; exec keeps it).
        rules.append((f"/proc/{os.getpid()}/maps", _READ_FILE))
    arch = seccomp_arch()
    if policy.landlock:
        detected = landlock_abi() if arch is not None else None
        if arch is None or detected is None:
            raise fail("required confinement unavailable: landlock (not supported by this kernel)")
        try:
            apply_landlock(rules, arch, detected, notes, allow_network=allow_network)
        except (ConfinementError, OSError) as error:
            raise fail(f"required confinement unavailable: landlock ({error})") from None
        abi = detected
        layers.append("landlock")
    if policy.seccomp:
        if arch is None:
            raise fail("required confinement unavailable: seccomp (unsupported architecture)")
        # Without processes only the launcher's own exec is needed: clone stays threads-only.
        processes = config.get("processes") is not False
        overrides = dict(_tables.COMMAND_ACTIONS) if processes else {"execve": "allow"}
        if not processes:
            notes.append("seccomp: no child processes (threads only); exec allowed for the launch")
        if pid_namespace or (abi is not None and abi >= _SIGNAL_SCOPE_ABI):
            overrides.update(_tables.COMMAND_SIGNAL_ACTIONS)
        else:
            notes.append("seccomp: signals only to the launcher's own pid (no kernel signal scope)")
        if allow_network:
            overrides.update(_tables.COMMAND_NETWORK_ACTIONS)
        try:
            install_seccomp(build_seccomp_filter(arch, os.getpid(), overrides), arch)
        except (OSError, ValueError) as error:
            raise fail(f"required confinement unavailable: seccomp ({error})") from None
        layers.append("seccomp")
    return report()


def _address_space(pid: int) -> int:
    with open(f"/proc/{pid}/status", "rb") as handle:
        for line in handle:
            if line.startswith(b"VmSize:"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no VmSize for {pid}")


def _warden(child: int, fd: int) -> None:
    """The memory warden: the command's parent, as its uid, outside its Landlock domain and seccomp
    filter. On the host's request (8 bytes: the memory limit) it lowers the command's RLIMIT_AS to
    what the command holds plus that limit, and answers with what it held (8 bytes; 0 on failure):
    V8 must reserve ~34 GiB of address space to start, so its limit can only come after the start,
    and the command cannot lower its own (the seccomp filter forbids it) while the host may lack
    CAP_SYS_RESOURCE over another uid. Then it waits for the command and exits as it did."""
    try:
        request = os.read(fd, 8)
        if len(request) == 8:
            held = 0
            try:
                held = _address_space(child)
                limit = held + int.from_bytes(request, "big")
                resource.prlimit(child, resource.RLIMIT_AS, (limit, limit))
            except (OSError, ValueError):
                held = 0
            os.write(fd, held.to_bytes(8, "big"))
    except OSError:
        pass
    os.close(fd)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _say(fd: int | None, message: dict[str, object], framed: bool = False) -> None:
    """One JSON line on ``fd``, or (``framed``) one frame of the sandbox protocol: a 4-byte
    big-endian length, then the JSON (``_host/protocol.py``)."""
    if fd is None:
        return
    data = json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    data = len(data).to_bytes(4, "big") + data if framed else data + b"\n"
    while data:
        data = data[os.write(fd, data) :]


def _refused(report_fd: int | None, channel_fd: int | None, reason: str, report: object) -> None:
    _say(report_fd, {"refused": reason, "report": report})
    if channel_fd is not None:
        _say(channel_fd, {"t": "boot-failed", "message": reason}, framed=True)
    sys.stderr.write(f"toolrt-confine: {reason}\n")


def main(argv: list[str]) -> int:
    """Parse the config, confine, exec; returns (exits with) :data:`REFUSED` only on failure."""
    if len(argv) < 3:
        sys.stderr.write("toolrt-confine: usage: command_launcher.py <config JSON> <argv...>\n")
        return REFUSED
    report_fd: int | None = None
    channel_fd: int | None = None
    try:
        config = json.loads(argv[1])
        if type(config) is not dict:
            raise ValueError("config must be a JSON object")
        target = argv[2:]
        if config.get("mode") == "drop":
            uid, gid = config["dropTo"]
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.execv(target[0], target)
        fd = config.get("reportFd")
        report_fd = fd if type(fd) is int else None
        channel = config.get("channelFd")
        channel_fd = channel if type(channel) is int else None
        workdir = config.get("chdir")
        if isinstance(workdir, str):
            os.chdir(workdir)
        warden = config.get("wardenFd")
        before: Callable[[], None] | None = None
        if type(warden) is int:
            warden_fd = warden

            def before() -> None:
                pid = os.fork()
                if pid:
                    if channel_fd is not None:
                        os.close(channel_fd)
                    _warden(pid, warden_fd)
                os.close(warden_fd)

        report = confine_command_process(config, before)
        if channel_fd is not None:
            # A sandbox child that cannot name an inherited fd (Deno without permissions) speaks the
            # protocol on its stdin and stdout: both become the channel, and the report its argument.
            os.dup2(channel_fd, 0)
            os.dup2(channel_fd, 1)
            os.close(channel_fd)
            target = [*target, json.dumps(report, separators=(",", ":"))]
        _say(report_fd, {"confined": report})
        if report_fd is not None:
            os.close(report_fd)
        os.execv(target[0], target)
    except ConfinementError as error:
        _refused(report_fd, channel_fd, str(error), error.report)
    except (OSError, ValueError, KeyError, TypeError) as error:
        _refused(report_fd, channel_fd, f"{type(error).__name__}: {error}", None)
    sys.stderr.flush()
    return REFUSED


if __name__ == "__main__":
    os._exit(main(sys.argv))
