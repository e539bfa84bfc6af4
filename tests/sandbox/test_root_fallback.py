"""Root hosts whose interpreter uid 65534 cannot run (a pyenv under /root): the landlock backend still
drops the child to uid 65534, by running it with a system Python that works as that uid.

Root only (the uid drop is a root host's), Linux with Landlock and seccomp; real children, no mocks
of the child. The plan-resolution tests feed synthetic probe results to the same code.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import sys
import tempfile
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolrt.codemode._code_runtime import CodeRunRequest, CodeRunResult
from toolrt.sandbox import ProbeResults, PythonSandboxRuntime
from toolrt.sandbox._backends import probe, uid_drop
from toolrt.sandbox._backends.plan import DROP_TO, probe_host, resolve_plan
from toolrt.sandbox._child.bootstrap import CHILD_FILES

IS_ROOT = sys.platform == "linux" and os.geteuid() == 0
PROBES = probe_host() if IS_ROOT else None
CONFINABLE = PROBES is not None and PROBES.landlock_abi is not None and PROBES.seccomp

pytestmark = [
    pytest.mark.skipif(not IS_ROOT, reason="the uid drop (and its fallback) is a root host's"),
    pytest.mark.skipif(IS_ROOT and not CONFINABLE, reason="needs Landlock and seccomp"),
]
PACKAGE = Path(probe.CHILD_DIR)
UID_PROGRAM = "import os\nreturn [os.getuid(), os.geteuid(), os.getgid(), os.getgroups()]"


def fake_probes(**changes: object) -> ProbeResults:
    fields: dict[str, object] = {
        "landlock_abi": 6,
        "seccomp": True,
        "bwrap_path": None,
        "bwrap_works": False,
        "drop_problem": "/root is not accessible to uid 65534 / gid 65534",
    }
    fields.update(changes)
    return ProbeResults(**fields)  # type: ignore[arg-type]


@pytest.fixture
async def landlock() -> AsyncIterator[PythonSandboxRuntime]:
    runtime = PythonSandboxRuntime(backend="landlock", pool_size=0)
    yield runtime
    await runtime.aclose()


async def run(runtime: PythonSandboxRuntime, program: str) -> CodeRunResult:
    result = await runtime.run(CodeRunRequest(textwrap.dedent(program), []))
    assert result.error is None, result.error
    return result


# --- end to end, with this machine's default interpreter ---------------------------------------------


async def test_landlock_as_root_is_full_with_the_uid_drop(landlock: PythonSandboxRuntime) -> None:
    result = await run(landlock, UID_PROGRAM)
    assert result.value == [65534, 65534, 65534, []]
    isolation = result.meta["isolation"]
    assert isolation["enforcement"] == "full", isolation
    assert "uid-drop" in isolation["layers"]
    assert landlock.isolation.enforcement == "full"
    assert "uid-drop" in landlock.isolation.layers
    assert PROBES is not None
    if PROBES.drop_problem is not None:  # the host interpreter is private: the fallback ran the child
        assert PROBES.fallback_python is not None, PROBES.fallback_problem
        assert any(note.startswith("child interpreter ") for note in isolation["notes"]), isolation


async def test_warm_children_drop_too() -> None:
    runtime = PythonSandboxRuntime(backend="landlock", pool_size=1)
    try:
        await runtime.warm()
        result = await run(runtime, UID_PROGRAM)
        assert result.meta["warm"] is True
        assert result.value == [65534, 65534, 65534, []]
        assert result.meta["isolation"]["enforcement"] == "full"
    finally:
        await runtime.aclose()


async def test_the_dropped_child_still_runs_full_programs(landlock: PythonSandboxRuntime) -> None:
    result = await run(
        landlock,
        """
        import asyncio, json, threading
        async def twice(x):
            await asyncio.sleep(0)
            return 2 * x
        values = await asyncio.gather(*(twice(i) for i in range(3)))
        print(json.dumps(values), threading.active_count())
        return values
        """,
    )
    assert result.value == [0, 2, 4]
    assert result.logs == ("[0, 2, 4] 1",)


async def test_the_dropped_child_cannot_read_root_files(landlock: PythonSandboxRuntime) -> None:
    result = await run(
        landlock,
        """
        out = []
        for path in ("/root", "/etc/shadow"):
            try:
                open(path + ("/.bashrc" if path == "/root" else "")).read()
                out.append("read")
            except OSError as error:
                out.append(type(error).__name__)
        return out
        """,
    )
    assert "read" not in result.value


# --- the probes ---------------------------------------------------------------------------------------


def test_fallback_interpreter_probe() -> None:
    assert PROBES is not None
    if PROBES.drop_problem is None:
        pytest.skip("this host's interpreter works as uid 65534: no fallback needed")
    path, problem = uid_drop.drop_interpreter(*DROP_TO, exclude=sys.executable)
    assert (path, problem) == (PROBES.fallback_python, PROBES.fallback_problem)
    if path is not None:
        assert uid_drop.drop_target_problem(*DROP_TO, executable=os.path.realpath(path)) is None
        assert os.path.realpath(path) != os.path.realpath(sys.executable)


def test_a_private_bootstrap_is_copied_somewhere_uid_65534_can_read(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    for name in CHILD_FILES:
        shutil.copyfile(PACKAGE / name, private / name)
    staged = uid_drop.drop_readable_bootstrap(str(private / "bootstrap.py"), *DROP_TO)
    assert staged != str(private / "bootstrap.py")
    folder = Path(staged).parent
    info = folder.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o755)
    for name in CHILD_FILES:
        copied = folder / name
        assert copied.read_bytes() == (private / name).read_bytes()
        assert (copied.stat().st_uid, stat.S_IMODE(copied.stat().st_mode)) == (0, 0o644)
    assert uid_drop.drop_readable_bootstrap(str(private / "bootstrap.py"), *DROP_TO) == staged  # cached


def test_a_readable_bootstrap_is_used_in_place(tmp_path: Path) -> None:
    public = Path("/tmp") / f"toolrt-public-{os.getpid()}-{tmp_path.name}"  # tmp_path's parents are 0700
    public.mkdir()
    try:
        public.chmod(0o755)
        for name in CHILD_FILES:
            shutil.copyfile(PACKAGE / name, public / name)
            (public / name).chmod(0o644)
        bootstrap = str(public / "bootstrap.py")
        assert uid_drop.drop_readable_bootstrap(bootstrap, *DROP_TO) == bootstrap
    finally:
        shutil.rmtree(public, ignore_errors=True)


async def test_a_private_bootstrap_runs_dropped(tmp_path: Path) -> None:
    private = tmp_path / "boot"
    private.mkdir(mode=0o700)
    for name in CHILD_FILES:
        shutil.copyfile(PACKAGE / name, private / name)
    runtime = PythonSandboxRuntime(
        backend="landlock", pool_size=0, _bootstrap_path=str(private / "bootstrap.py")
    )
    try:
        result = await run(runtime, UID_PROGRAM)
        assert result.value[0] == 65534
        assert result.meta["isolation"]["enforcement"] == "full"
    finally:
        await runtime.aclose()


# --- plan resolution ----------------------------------------------------------------------------------


def test_plan_uses_the_fallback_interpreter() -> None:
    plan = resolve_plan(
        "landlock",
        fake_probes(fallback_python="/usr/bin/python3", fallback_bootstrap="/tmp/x/bootstrap.py"),
        allow_unconfined=False,
    )
    assert plan.drop_to == DROP_TO
    assert (plan.python, plan.bootstrap) == ("/usr/bin/python3", "/tmp/x/bootstrap.py")
    report = plan.predicted()
    assert report.enforcement == "full"
    assert "uid-drop" in report.layers
    assert report.notes[0].startswith(
        "child interpreter /usr/bin/python3 (the host interpreter is not readable"
    )


def test_plan_without_a_fallback_stays_root_and_says_why() -> None:
    plan = resolve_plan(
        "auto",
        fake_probes(fallback_problem="no other Python (/usr/bin/python3, ...)"),
        allow_unconfined=False,
    )
    assert plan.backend == "landlock"
    assert plan.drop_to is None and plan.python is None
    report = plan.predicted()
    assert report.enforcement == "partial"
    assert "uid-drop" not in report.layers
    assert "uid drop skipped" in report.notes[0] and "no other Python" in report.notes[0]


def test_plan_with_a_usable_host_interpreter_needs_no_fallback() -> None:
    plan = resolve_plan("landlock", fake_probes(drop_problem=None), allow_unconfined=False)
    assert plan.drop_to == DROP_TO and plan.python is None and plan.notes == ()
    assert plan.predicted().enforcement == "full"


def test_bwrap_as_root_is_started_as_65534_with_the_fallback_interpreter() -> None:
    """A root host starts bwrap as uid 65534 so the sandbox maps to it, not to host uid 0; the
    interpreter must then work as that uid, so the fallback runs the child."""
    probes = fake_probes(
        bwrap_path="/usr/bin/bwrap",
        bwrap_works=True,
        fallback_python="/usr/bin/python3",
        fallback_bootstrap="/tmp/copy/bootstrap.py",
    )
    plan = resolve_plan("bwrap", probes, allow_unconfined=False)
    assert plan.backend == "bwrap" and plan.bwrap_as == DROP_TO and plan.drop_to is None
    assert (plan.python, plan.bootstrap) == ("/usr/bin/python3", "/tmp/copy/bootstrap.py")
    report = plan.predicted()
    assert report.enforcement == "full"
    assert report.layers == ("bwrap", "rlimits", "uid-drop", "no-new-privs", "landlock", "seccomp")
    assert report.notes[0].startswith("child interpreter /usr/bin/python3")


def test_auto_as_root_prefers_bwrap_when_it_can_start_unprivileged() -> None:
    probes = fake_probes(bwrap_path="/usr/bin/bwrap", bwrap_works=True, fallback_python="/usr/bin/python3")
    plan = resolve_plan("auto", probes, allow_unconfined=False)
    assert plan.backend == "bwrap" and plan.bwrap_as == DROP_TO
    assert plan.predicted().enforcement == "full"


def test_auto_as_root_prefers_the_backend_that_reaches_full_enforcement() -> None:
    """Where bwrap cannot be started unprivileged (user namespaces restricted), bwrap started by
    root maps the program to host uid 0 (partial); the in-child layers drop to 65534 (full)."""
    probes = fake_probes(
        bwrap_path="/usr/bin/bwrap",
        bwrap_works=True,
        fallback_python="/usr/bin/python3",
        bwrap_drop_problem="bwrap started as uid 65534: functional run exited 1: uid map: Permission denied",
    )
    plan = resolve_plan("auto", probes, allow_unconfined=False)
    assert plan.backend == "landlock" and plan.drop_to == DROP_TO
    assert plan.predicted().enforcement == "full"
    bwrap = resolve_plan("bwrap", probes, allow_unconfined=False)
    assert bwrap.bwrap_as is None and bwrap.python is None
    report = bwrap.predicted()
    assert report.enforcement == "partial"
    assert "uid-drop" not in report.layers
    assert report.notes[0] == "uid drop skipped: " + str(probes.bwrap_drop_problem)
    assert report.notes[-1].startswith("bwrap started by root: the program runs as host uid 0")


def test_bwrap_as_root_without_an_interpreter_for_65534_stays_root_and_says_why() -> None:
    probes = fake_probes(bwrap_path="/usr/bin/bwrap", bwrap_works=True, fallback_problem="no other Python")
    bwrap = resolve_plan("bwrap", probes, allow_unconfined=False)
    assert bwrap.bwrap_as is None
    report = bwrap.predicted()
    assert report.enforcement == "partial"
    assert "uid drop skipped" in report.notes[0] and "no other Python" in report.notes[0]


BWRAP = PROBES is not None and PROBES.bwrap_works and PROBES.bwrap_disable_userns


@pytest.mark.skipif(not BWRAP, reason="needs a working bwrap with --disable-userns")
async def test_bwrap_as_root_runs_the_program_as_65534_with_full_enforcement() -> None:
    """End to end: bwrap started by root would map the program to host uid 0, the owner of every
    root-owned file in its view; started as 65534 it cannot read a root-only (0600) file under a
    granted read path."""
    assert PROBES is not None
    if PROBES.bwrap_drop_problem is not None:
        pytest.skip(f"bwrap cannot start unprivileged here: {PROBES.bwrap_drop_problem}")
    base = Path(tempfile.mkdtemp(prefix="toolrt-bwrap-root-"))
    granted = base / "granted"
    granted.mkdir()
    (granted / "root-only").write_text("secret")
    (granted / "root-only").chmod(0o600)
    (granted / "public").write_text("public")
    (granted / "public").chmod(0o644)
    for path in (base, granted):
        path.chmod(0o755)
    hidden = base / "hidden"  # not traversable by uid 65534: not mounted, and the report says so
    hidden.mkdir(mode=0o700)
    runtime = PythonSandboxRuntime(backend="bwrap", pool_size=0, read_paths=[str(granted), str(hidden)])
    program = f"""
        import os
        out = [os.getuid(), os.geteuid(), os.getgid(), os.getgroups()]
        out.append(open({str(granted / "public")!r}).read())
        try:
            out.append(open({str(granted / "root-only")!r}).read())
        except PermissionError as error:
            out.append(type(error).__name__)
        return out
    """
    try:
        result = await run(runtime, program)
    finally:
        await runtime.aclose()
        shutil.rmtree(base)
    assert result.value == [65534, 65534, 65534, [], "public", "PermissionError"]
    isolation = result.meta["isolation"]
    assert isolation["enforcement"] == "full", isolation
    assert isolation["layers"][:3] == ["bwrap", "rlimits", "uid-drop"]
    assert f"read path {hidden} not mounted: {hidden} is not accessible to uid 65534" in isolation["notes"]


@pytest.mark.skipif(not BWRAP, reason="needs a working bwrap with --disable-userns")
async def test_bwrap_kept_as_root_still_runs_and_reports_partial_with_the_reason() -> None:
    """Where bwrap cannot start unprivileged (simulated: the probe says so), it is started as root:
    the run still works, and the report says partial and why, instead of claiming full."""
    assert PROBES is not None
    probes = dataclasses.replace(PROBES, bwrap_drop_problem="simulated: user namespaces are restricted")
    runtime = PythonSandboxRuntime(backend="bwrap", pool_size=0, _probe=lambda: probes)
    try:
        result = await run(runtime, "return 6 * 7")
    finally:
        await runtime.aclose()
    assert result.value == 42
    isolation = result.meta["isolation"]
    assert isolation["enforcement"] == "partial", isolation
    assert "uid-drop" not in isolation["layers"]
    assert "uid drop skipped: simulated: user namespaces are restricted" in isolation["notes"]
    assert any(note.startswith("bwrap started by root") for note in isolation["notes"])
