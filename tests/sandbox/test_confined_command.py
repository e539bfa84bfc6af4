"""Confined commands (contract §5.5, SK1-SK6): any program behind the sandbox's launcher, judged by
host-side evidence (files the host checks, a listener that records connections), on every confined
backend this machine has, as root and (CI's second pass) as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from listener import Listener
from machine import confined_backends

from toolrt.sandbox import (
    LAUNCH_REFUSED,
    CommandConfinement,
    SandboxUnavailableError,
    confine_command,
)
from toolrt.sandbox._backends.plan import BOOTSTRAP

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="confined commands need Linux")

BACKENDS = confined_backends()
IS_ROOT = os.geteuid() == 0
NOBODY = 65534


def _world_traversable_dir(prefix: str) -> Path:
    """A fresh directory in /tmp that uid 65534 can reach (pytest's tmp_path may be mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    return path


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A workspace the command's uid owns (as root: uid 65534, so the uid drop keeps `full`)."""
    path = _world_traversable_dir("toolrt-cmd-ws-")
    if IS_ROOT:
        os.chown(path, NOBODY, NOBODY)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside every workspace, world-writable (so only confinement stops a write),
    holding a world-readable secret (so only confinement stops a read)."""
    path = _world_traversable_dir("toolrt-cmd-outside-")
    path.chmod(0o777)
    (path / "secret").write_text("SECRET-" + secrets.token_hex(8))
    (path / "secret").chmod(0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(
    argv: list[str], confinement: CommandConfinement, backend: str, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    confined = confine_command(argv, confinement, backend=backend)  # type: ignore[arg-type]
    return subprocess.run(
        confined.argv,
        env=confined.env,
        pass_fds=confined.pass_fds,
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )


needs_backend = pytest.mark.skipif(not BACKENDS, reason="no confined backend works on this machine")


@needs_backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_land_in_the_workspace_and_nowhere_else(backend: str, workspace: Path, outside: Path) -> None:
    """SK1: the workspace is writable (a shell's pipeline, fork and exec included); a world-writable
    directory outside it is not: the host finds no file there."""
    target = outside / "escaped"
    script = f"echo made > inside.txt && ls inside.txt | wc -l > count.txt; echo x > {target}; echo status=$?"
    done = run(["bash", "-c", script], CommandConfinement(workspace), backend)
    assert done.returncode == 0, done.stderr
    assert (workspace / "inside.txt").read_text() == "made\n"
    assert (workspace / "count.txt").read_text().strip() == "1"
    assert not target.exists(), "a confined command wrote outside its workspace"
    assert "status=1" in done.stdout


@needs_backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_read_only_workspace_and_secrets_outside(backend: str, workspace: Path, outside: Path) -> None:
    """SK1: ``writable=False`` makes the workspace read-only; a world-readable file outside every
    grant cannot be read (the secret never reaches the host's output)."""
    (workspace / "given.txt").write_text("given")
    (workspace / "given.txt").chmod(0o644)
    secret = (outside / "secret").read_text()
    script = f"cat given.txt; echo; echo x > new.txt; cat {outside}/secret; ls /root; true"
    done = run(["bash", "-c", script], CommandConfinement(workspace, writable=False), backend)
    assert done.stdout.startswith("given")
    assert not (workspace / "new.txt").exists()
    assert secret not in done.stdout + done.stderr


@needs_backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_readable_paths_are_granted(backend: str, workspace: Path, outside: Path) -> None:
    """SK1: a ``readable`` path is readable (and only readable)."""
    secret = (outside / "secret").read_text()
    done = run(
        ["bash", "-c", f"cat {outside}/secret; echo x > {outside}/w"],
        CommandConfinement(workspace, readable=(outside,)),
        backend,
    )
    assert done.stdout == secret
    assert not (outside / "w").exists()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


@needs_backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_no_network_unless_allowed(backend: str, workspace: Path, listener: Listener) -> None:
    """SK2: without ``allow_network`` a connection to the host's loopback never arrives; with it,
    it does (so the listener is real evidence)."""
    script = f"exec 3<>/dev/tcp/127.0.0.1/{listener.port} && echo connected"
    denied = run(["bash", "-c", script], CommandConfinement(workspace), backend)
    assert "connected" not in denied.stdout
    assert listener.accepted == 0, "a confined command reached a host listener"
    allowed = run(["bash", "-c", script], CommandConfinement(workspace, allow_network=True), backend)
    assert "connected" in allowed.stdout, allowed.stderr
    for _ in range(50):
        if listener.accepted:
            break
        threading.Event().wait(0.05)
    assert listener.accepted == 1


@needs_backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_kernel_surface_stays_closed(backend: str, workspace: Path) -> None:
    """SK3: fork and exec work, the rest of the deny-list holds: no new namespaces (``unshare``),
    no ptrace (``strace``-like tracing through ``/proc/self`` is not needed: the call fails)."""
    script = (
        "unshare -U true 2>/dev/null; echo unshare=$?; "
        "python3 -c 'import ctypes; print(\"ptrace=\", ctypes.CDLL(None, use_errno=True).ptrace(0,0,0,0))' "
        "2>/dev/null || echo ptrace=none"
    )
    done = run(["bash", "-c", script], CommandConfinement(workspace), backend)
    assert "unshare=0" not in done.stdout
    assert "ptrace= 0" not in done.stdout


@needs_backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_environment_is_the_callers_only(backend: str, workspace: Path) -> None:
    """SK4: the command sees the environment ``confine_command`` returns, nothing of the host's."""
    os.environ["TOOLRT_CMD_CANARY"] = canary = secrets.token_hex(8)
    try:
        confined = confine_command(["env"], CommandConfinement(workspace), backend=backend)  # type: ignore[arg-type]
        done = subprocess.run(
            confined.argv, env=confined.env, capture_output=True, text=True, timeout=30, check=False
        )
    finally:
        del os.environ["TOOLRT_CMD_CANARY"]
    assert canary not in done.stdout
    assert f"HOME={os.path.realpath(workspace)}" in done.stdout


@needs_backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_report_is_honest(backend: str, workspace: Path) -> None:
    """SK5: the report names the layers that run; as root with a workspace uid 65534 cannot write,
    the uid drop is skipped and the report says ``partial`` with the reason."""
    report = confine_command(["true"], CommandConfinement(workspace), backend=backend).report  # type: ignore[arg-type]
    assert report.enforcement == "full"
    assert {"landlock", "seccomp", "no-new-privs", "rlimits"} <= set(report.layers)
    assert ("bwrap" in report.layers) == (backend == "bwrap")
    if IS_ROOT:
        root_owned = _world_traversable_dir("toolrt-cmd-rootws-")
        try:
            kept = confine_command(["id", "-u"], CommandConfinement(root_owned), backend=backend)  # type: ignore[arg-type]
            assert kept.report.enforcement == "partial"
            assert "uid-drop" not in kept.report.layers
            assert any("uid drop skipped" in note for note in kept.report.notes)
            done = subprocess.run(
                kept.argv, env=kept.env, capture_output=True, text=True, timeout=30, check=False
            )
            assert done.returncode == 0, done.stderr
        finally:
            shutil.rmtree(root_owned, ignore_errors=True)


def test_a_launch_that_cannot_confine_never_runs_the_command(workspace: Path) -> None:
    """SK6: the launcher refuses (exit status LAUNCH_REFUSED, one ``toolrt-confine:`` line) rather
    than run a command less confined than asked; the host sees no marker file."""
    marker = workspace / "ran"
    launcher = os.path.join(os.path.dirname(BOOTSTRAP), "command_launcher.py")
    config = json.dumps({"policy": {"cpu_seconds": 0, "memory_bytes": 1}})
    done = subprocess.run(
        [sys.executable, "-I", "-S", launcher, config, "/usr/bin/touch", str(marker)],
        capture_output=True,
        text=True,
        timeout=30,
        env={},
        check=False,
    )
    assert done.returncode == LAUNCH_REFUSED
    assert done.stderr.startswith("toolrt-confine: ")
    assert not marker.exists()


def test_bad_input_is_a_clear_error(workspace: Path) -> None:
    """SK6: a string argv, a relative or missing workspace, an unknown command: ``ValueError``;
    a backend that cannot exist here: :class:`SandboxUnavailableError` with the reason."""
    with pytest.raises(ValueError, match="not one string"):
        confine_command("ls -l", CommandConfinement(workspace))
    with pytest.raises(ValueError, match="absolute Path"):
        confine_command(["ls"], CommandConfinement(Path("relative")))
    with pytest.raises(ValueError, match="not a directory"):
        confine_command(["ls"], CommandConfinement(workspace / "missing"))
    with pytest.raises(ValueError, match="not found on PATH"):
        confine_command(["no-such-command-xyz"], CommandConfinement(workspace))
    with pytest.raises(SandboxUnavailableError, match="sandbox-exec"):
        confine_command(["ls"], CommandConfinement(workspace), backend="sandbox-exec")
