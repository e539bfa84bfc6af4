"""bash under the sandbox: the system read-only, the workspace read-write, no network unless allowed.

Evidence is taken on the host: a file written from inside is looked for on the host's disk, a
connection is made to a socket the test itself listens on, and a process left behind is found by a
unique marker in ``/proc``. Runs as root and (CI) as an unprivileged user; skipped where the host
has no sandbox backend.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bash_helpers import marker, survivors
from toolrt import ToolRuntime
from toolrt.tools import BashTools, install_bash


def sandboxed(workspace: Path, **options: Any) -> tuple[ToolRuntime, BashTools]:
    runtime = ToolRuntime()
    try:
        bash = install_bash(runtime, workspace, sandbox=True, **options)
    except RuntimeError as error:
        pytest.skip(str(error))
    return runtime, bash


@pytest.fixture(name="confined")
def confined_runtime(tmp_path: Path) -> Iterator[tuple[ToolRuntime, BashTools]]:
    runtime, bash = sandboxed(tmp_path)
    yield runtime, bash
    runtime.close()


@pytest.fixture(name="listener")
def local_listener() -> Iterator[int]:
    """A TCP socket listening on the host's loopback: its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def connect_command(port: int) -> str:
    return f"if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo CONNECTED; else echo REFUSED; fi"


async def test_the_sandbox_is_on_by_default_and_reported(confined: tuple[ToolRuntime, BashTools]) -> None:
    """BA12: sandbox=None confines when the host can; isolation, the result meta and the card say so."""
    runtime, bash = confined
    isolation = bash.isolation
    assert isolation is not None
    assert BashTools(bash.workspace).isolation == isolation  # the default is the sandbox
    assert isolation["enforcement"] in ("full", "partial") and isolation["network"] is False
    result = await runtime.call("bash", {"command": "echo inside"})
    assert (result.value["exitCode"], result.value["output"]) == (0, "inside\n")
    assert result.meta["isolation"] == isolation
    definition = runtime.get("bash")
    assert definition is not None and definition.present_result is not None
    card = definition.present_result(
        {"command": "echo inside"}, {"content": result.content, "is_error": False, "meta": result.meta}
    )
    assert card is not None and card.get("title", "").startswith("bash (sandboxed: ")
    assert "no network" in card.get("title", "")


async def test_the_workspace_is_writable_and_nothing_else_is(
    confined: tuple[ToolRuntime, BashTools], tmp_path: Path
) -> None:
    """BA13: inside the workspace a command writes; /etc and any host path outside stay untouched."""
    runtime, _ = confined
    (tmp_path / "sub").mkdir()
    made = await runtime.call("bash", {"command": "echo data > made.txt && pwd", "cwd": "sub"})
    assert made.value["exitCode"] == 0, made.value
    assert made.value["output"].strip() == str(tmp_path / "sub")
    assert (tmp_path / "sub" / "made.txt").read_text() == "data\n"
    outside = Path("/var/tmp") / f"toolrt-bash-{marker()}"
    beside = tmp_path.parent / f"beside-{marker()}"
    for target in (Path("/etc/toolrt-bash-probe"), outside, beside):
        result = await runtime.call("bash", {"command": f"echo x > {target}; echo status=$?"})
        assert not target.exists(), f"{target} was written on the host"
        if target != beside:  # beside may land in the sandbox's private /tmp: it never reaches the host
            assert "status=1" in result.value["output"], result.value


async def test_no_network_unless_allowed(tmp_path: Path, listener: int) -> None:
    """BA14: a connection to the host's loopback fails inside; allow_network=True lets it through."""
    runtime, bash = sandboxed(tmp_path)
    refused = await runtime.call("bash", {"command": connect_command(listener)})
    assert refused.value["output"].splitlines()[-1] == "REFUSED", refused.value
    runtime.close()
    runtime, bash = sandboxed(tmp_path, allow_network=True)
    assert bash.isolation is not None and bash.isolation["network"] is True
    allowed = await runtime.call("bash", {"command": connect_command(listener)})
    assert allowed.value["output"].splitlines()[-1] == "CONNECTED", allowed.value
    runtime.close()


async def test_the_host_environment_does_not_reach_the_command(
    confined: tuple[ToolRuntime, BashTools], monkeypatch: pytest.MonkeyPatch
) -> None:
    """BA13: the confined command gets a fresh minimal environment (no host secrets)."""
    monkeypatch.setenv("TOOLRT_TEST_SECRET", "hunter2")
    runtime, _ = confined
    result = await runtime.call("bash", {"command": "env"})
    assert "hunter2" not in result.value["output"]
    assert "TERM=dumb" in result.value["output"]


async def test_a_timed_out_confined_command_leaves_nothing_running(
    confined: tuple[ToolRuntime, BashTools],
) -> None:
    """BA2 / BA12: the deadline kills the confined tree, a SIGTERM-ignoring grandchild included."""
    runtime, _ = confined
    mark = marker()
    result = await runtime.call(
        "bash", {"command": f"(trap '' TERM; exec sleep {mark}) & sleep {mark}1; wait", "timeout_ms": 500}
    )
    assert result.value["timedOut"] is True
    assert survivors(mark) == []


async def test_a_confined_job_and_a_setsid_escapee_die_with_their_sandbox(
    confined: tuple[ToolRuntime, BashTools],
) -> None:
    """BA12: with a pid namespace (bwrap) even a process that left the group dies with the command."""
    runtime, bash = confined
    isolation = bash.isolation
    assert isolation is not None
    if "bwrap" not in isolation["layers"]:
        pytest.skip("no pid namespace on this backend: a setsid process could outlive its group")
    mark = marker()
    result = await runtime.call("bash", {"command": f"setsid sleep {mark} & sleep 0.2; echo left"})
    assert result.value["exitCode"] == 0
    deadline = time.monotonic() + 5
    while survivors(mark) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert survivors(mark) == []
    job_mark = marker()
    await runtime.call("bash", {"command": f"setsid sleep {job_mark} & wait", "background": True})
    deadline = time.monotonic() + 5
    while not survivors(job_mark) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    killed = await runtime.call("job_kill", {"job_id": "job-1"})
    assert killed.value["status"] == "killed"
    deadline = time.monotonic() + 5
    while survivors(job_mark) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert survivors(job_mark) == []


async def test_closing_right_after_a_start_leaves_no_sandbox_behind(tmp_path: Path) -> None:
    """BA11 / BA12: a job killed while its sandbox is still being set up dies too (no orphaned init).

    Without the kill waiting for bubblewrap's first fork, about one close in three right after a
    start left the sandbox's init and its command running, reparented to the host's init.
    """
    marks = []
    for _ in range(10):
        runtime, _ = sandboxed(tmp_path)
        mark = marker()
        marks.append(mark)
        await runtime.call("bash", {"command": f"sleep {mark}", "background": True})
        runtime.close()
    await asyncio.sleep(0.3)
    assert [mark for mark in marks if survivors(mark)] == []
