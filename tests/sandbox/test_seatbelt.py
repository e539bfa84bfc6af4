"""The macOS backend (``sandbox-exec``): plan resolution, the Seatbelt profile, the child command line,
the child's confinement off Linux, and (on macOS only) real runs.

This project's CI is Linux: resolution and the command line run here with ``sys.platform``
monkeypatched and synthetic probes; the profile is generated for real and read back with a small
SBPL reader (TinyScheme's string rules), so hostile path names are checked against the text
``sandbox-exec`` would parse; the child's off-Linux confinement runs in a real child that believes it
is on macOS; a fake ``sandbox-exec`` (which applies nothing) carries a real child through the host's
spawn path. Only the last section runs under real Seatbelt, and it is skipped off macOS.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolrt.codemode._code_runtime import CodeRunRequest, CodeRunResult
from toolrt.sandbox import ProbeResults, PythonSandboxRuntime
from toolrt.sandbox._backends import probe, seatbelt
from toolrt.sandbox._backends.plan import Plan, probe_host, resolve_plan
from toolrt.sandbox._host.limits import BootSpec
from toolrt.sandbox._host.process import BootFailure, Child
from toolrt.sandbox._host.protocol import Ready

SANDBOX_DIR = Path(probe.CHILD_DIR).resolve()
sysconfig.get_config_vars()  # loaded now: it picks its data module by sys.platform, which tests patch
PYTHON = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
IS_DARWIN = sys.platform == "darwin"


# ---- a small SBPL reader ------------------------------------------------------------------------


class Str(str):
    """A string literal of the profile (as opposed to a symbol)."""


def parse_sbpl(text: str) -> list[Any]:
    """The profile's top-level forms as nested lists: symbols as ``str``, string literals as
    :class:`Str`, decoded as TinyScheme's reader does (a backslash takes the next character
    literally, ``\\n`` / ``\\t`` / ``\\r`` aside); ``;`` comments skipped. Raises on unbalanced input."""
    stack: list[list[Any]] = [[]]
    index = 0
    while index < len(text):
        char = text[index]
        if char == ";":
            end = text.find("\n", index)
            index = len(text) if end < 0 else end + 1
        elif char.isspace():
            index += 1
        elif char == "(":
            stack.append([])
            index += 1
        elif char == ")":
            if len(stack) == 1:
                raise ValueError(f"unbalanced ')' at {index}")
            done = stack.pop()
            stack[-1].append(done)
            index += 1
        elif char == '"':
            out: list[str] = []
            index += 1
            while True:
                if index >= len(text):
                    raise ValueError("unterminated string")
                char = text[index]
                if char == "\\":
                    nxt = text[index + 1]
                    out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
                    index += 2
                elif char == '"':
                    index += 1
                    break
                else:
                    out.append(char)
                    index += 1
            stack[-1].append(Str("".join(out)))
        else:
            start = index
            while index < len(text) and not text[index].isspace() and text[index] not in '()";':
                index += 1
            stack[-1].append(text[start:index])
    if len(stack) != 1:
        raise ValueError("unbalanced '('")
    return stack[0]


@dataclass(frozen=True)
class Rule:
    action: str
    ops: tuple[str, ...]
    filters: tuple[tuple[Any, ...], ...]


def rules(profile: str) -> list[Rule]:
    forms = parse_sbpl(profile)
    assert forms[0] == ["version", "1"], forms[0]
    out = []
    for form in forms[1:]:
        assert isinstance(form, list) and form[0] in ("allow", "deny"), form
        ops = tuple(item for item in form[1:] if isinstance(item, str) and not isinstance(item, Str))
        filters = tuple(tuple(item) for item in form[1:] if isinstance(item, list))
        assert len(ops) + len(filters) == len(form) - 1, form
        out.append(Rule(form[0], ops, filters))
    return out


def _covers(kind: str, value: str, path: str) -> bool:
    if kind == "literal":
        return path == value
    if kind == "subpath":
        return path == value or path.startswith(value.rstrip("/") + "/")
    return False


def granted(profile: str, op: str, path: str) -> bool:
    """Whether an ``allow`` rule for ``op`` (or a wildcard covering it) matches ``path``."""
    for rule in rules(profile):
        if rule.action != "allow":
            continue
        if not any(op == have or (have.endswith("*") and op.startswith(have[:-1])) for have in rule.ops):
            continue
        if any(len(f) == 2 and _covers(f[0], f[1], path) for f in rule.filters):
            return True
    return False


# ---- fixtures ------------------------------------------------------------------------------------


@dataclass
class Layout:
    work: Path
    extra: Path
    outside: Path
    bootstrap_dir: str


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    for name in ("work", "extra", "outside"):
        (tmp_path / name).mkdir()
    (tmp_path / "extra" / "data.txt").write_text("x")
    return Layout(
        work=(tmp_path / "work").resolve(),
        extra=(tmp_path / "extra").resolve(),
        outside=(tmp_path / "outside").resolve(),
        bootstrap_dir=str(SANDBOX_DIR),
    )


def profile_for(layout: Layout, read_paths: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    return seatbelt.build_profile(
        PYTHON,
        seatbelt.interpreter_reads(),
        str(layout.work),
        bootstrap_dir=layout.bootstrap_dir,
        read_paths=read_paths or (str(layout.extra),),
    )


@pytest.fixture
def darwin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "platform", "darwin")
    yield


def darwin_probes(**changes: object) -> ProbeResults:
    fields: dict[str, object] = {
        "landlock_abi": None,
        "seccomp": False,
        "bwrap_path": None,
        "bwrap_works": False,
        "bwrap_reason": "bubblewrap needs Linux",
        "sandbox_exec_path": seatbelt.SANDBOX_EXEC,
        "sandbox_exec_works": True,
        "sandbox_exec_reason": "functional run succeeded",
        "interpreter_reads": ("/stdlib",),
    }
    fields.update(changes)
    return ProbeResults(**fields)  # type: ignore[arg-type]


ABSENT = {"sandbox_exec_path": None, "sandbox_exec_works": False, "sandbox_exec_reason": "no executable /x"}


# ---- plan resolution -----------------------------------------------------------------------------


@pytest.mark.parametrize("requested", ["auto", "sandbox-exec"])
def test_darwin_with_sandbox_exec_picks_it_as_partial(darwin: None, requested: Any) -> None:
    plan = resolve_plan(requested, darwin_probes(), allow_unconfined=False)
    assert plan.backend == "sandbox-exec"
    assert plan.sandbox_exec == seatbelt.SANDBOX_EXEC
    assert plan.interpreter_reads == ("/stdlib",)
    report = plan.predicted()
    assert report.enforcement == "partial"
    assert report.layers == ("sandbox-exec", "rlimits")
    assert any("deprecated by Apple" in note and "not kernel-namespaced" in note for note in report.notes)
    assert any("unverified on real macOS" in note for note in report.notes)


@pytest.mark.parametrize("requested", ["auto", "sandbox-exec"])
def test_darwin_without_sandbox_exec_is_refused_with_the_reason(darwin: None, requested: Any) -> None:
    plan = resolve_plan(requested, darwin_probes(**ABSENT), allow_unconfined=False)
    assert plan.backend is None
    assert "sandbox-exec (no executable /x)" in plan.unavailable
    if requested == "auto":
        assert "allow_unconfined=True" in plan.unavailable
    assert plan.predicted().enforcement == "none"


def test_darwin_with_a_sandbox_exec_that_fails_its_probe_is_refused(darwin: None) -> None:
    broken = darwin_probes(sandbox_exec_works=False, sandbox_exec_reason="the interpreter does not run")
    plan = resolve_plan("auto", broken, allow_unconfined=False)
    assert plan.backend is None and "the interpreter does not run" in plan.unavailable


def test_darwin_without_sandbox_exec_runs_unconfined_only_on_opt_in(darwin: None) -> None:
    plan = resolve_plan("auto", darwin_probes(**ABSENT), allow_unconfined=True)
    assert plan.backend == "unconfined"
    assert any("UNCONFINED" in note and "no executable /x" in note for note in plan.notes)
    assert plan.predicted().enforcement == "none"
    # An explicit request is never downgraded.
    forced = resolve_plan("sandbox-exec", darwin_probes(**ABSENT), allow_unconfined=True)
    assert forced.backend is None and "sandbox-exec backend requested" in forced.unavailable


@pytest.mark.parametrize("requested", ["bwrap", "landlock"])
def test_darwin_refuses_linux_backends(darwin: None, requested: Any) -> None:
    plan = resolve_plan(requested, darwin_probes(), allow_unconfined=True)
    assert plan.backend is None and "needs Linux" in plan.unavailable


def test_darwin_root_host_says_the_program_stays_root(darwin: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    plan = resolve_plan("auto", darwin_probes(), allow_unconfined=False)
    assert any("host is root" in note for note in plan.notes)


def test_linux_refuses_sandbox_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    # Even with probes that claim a working sandbox-exec, it is macOS's.
    plan = resolve_plan("sandbox-exec", darwin_probes(landlock_abi=6, seccomp=True), allow_unconfined=True)
    assert plan.backend is None
    assert "sandbox-exec backend requested but unavailable" in plan.unavailable
    assert "macOS" in plan.unavailable and "linux" in plan.unavailable
    auto = resolve_plan("auto", darwin_probes(landlock_abi=6, seccomp=True), allow_unconfined=False)
    assert auto.backend == "landlock"


async def test_runtime_accepts_the_backend_name_and_reports_the_refusal() -> None:
    runtime = PythonSandboxRuntime(backend="sandbox-exec", pool_size=0, _probe=darwin_probes)
    try:
        result = await runtime.run(CodeRunRequest("return 1", []))
    finally:
        await runtime.aclose()
    if IS_DARWIN:  # the synthetic probe says it works; this host really is macOS
        return
    assert result.error is not None and result.error.kind == "sandbox-unavailable"
    assert "macOS" in result.error.message
    with pytest.raises(ValueError, match="unknown backend"):
        PythonSandboxRuntime(backend="seatbelt")  # type: ignore[arg-type]


def test_achieved_report_names_the_layer_and_is_never_full() -> None:
    plan = Plan("sandbox-exec", sandbox_exec="/usr/bin/sandbox-exec", notes=("plan note",))
    ready = Ready(layers=("rlimits",), landlock_abi=None, enforcement="full", notes=("child note",))
    report = plan.achieved(ready, ("host note",))
    assert report.layers == ("sandbox-exec", "rlimits")
    assert report.enforcement == "partial"
    assert report.notes == ("plan note", "host note", "child note")


def test_probe_host_on_darwin_reports_the_sandbox_exec_probe(
    darwin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdict = seatbelt.SandboxExecProbe("/usr/bin/sandbox-exec", True, "ok", ("/lib/py",))
    monkeypatch.setattr(seatbelt, "probe_sandbox_exec", lambda python=None: verdict)
    monkeypatch.setattr(probe, "probe_bwrap", lambda: pytest.fail("bwrap is not probed on macOS"))
    found = probe_host(PYTHON)
    assert (found.sandbox_exec_path, found.sandbox_exec_works, found.interpreter_reads) == (
        "/usr/bin/sandbox-exec",
        True,
        ("/lib/py",),
    )
    assert found.landlock_abi is None and not found.seccomp and not found.bwrap_works


# ---- the probe -----------------------------------------------------------------------------------


@pytest.fixture
def fresh_probes() -> Iterator[None]:
    probe.clear_cache()
    yield
    probe.clear_cache()


def fake_sandbox_exec(directory: Path, body: str) -> str:
    path = directory / "sandbox-exec"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(IS_DARWIN, reason="checks the refusal off macOS")
def test_probe_off_macos_names_the_platform(fresh_probes: None) -> None:
    found = seatbelt.probe_sandbox_exec()
    assert found.path is None and not found.works and "macOS" in found.reason


def test_probe_missing_binary(darwin: None, fresh_probes: None, tmp_path: Path) -> None:
    found = seatbelt.probe_sandbox_exec(path=str(tmp_path / "nope"))
    assert found.path is None and not found.works and "no executable" in found.reason


def test_probe_failing_binary(darwin: None, fresh_probes: None, tmp_path: Path) -> None:
    fake = fake_sandbox_exec(tmp_path, "echo denied >&2\nexit 1\n")
    found = seatbelt.probe_sandbox_exec(path=fake)
    assert not found.works and "allow-all profile exited 1: denied" in found.reason


@pytest.mark.skipif(not Path("/usr/bin/true").exists(), reason="needs /usr/bin/true")
def test_probe_refuses_a_sandbox_exec_that_does_not_enforce(
    darwin: None, fresh_probes: None, tmp_path: Path
) -> None:
    # Runs whatever it is given, profile ignored: the functional run must notice.
    fake = fake_sandbox_exec(tmp_path, '[ "$1" = "-p" ] || exit 97\nshift 2\nexec "$@"\n')
    found = seatbelt.probe_sandbox_exec(path=fake)
    assert not found.works
    assert "does not run under its Seatbelt profile" in found.reason
    assert "not enforced" in found.reason


def test_interpreter_reads_of_another_interpreter_match(fresh_probes: None) -> None:
    # Asked by running it (a copy of the path that is not this process's executable string).
    own = seatbelt.interpreter_reads()
    other = seatbelt._READS_CHILD.format(directory=str(SANDBOX_DIR))
    done = subprocess.run([PYTHON, "-I", "-S", "-c", other], capture_output=True, check=True, env={})
    asked = tuple(item for item in done.stdout.decode().split("\0") if item)
    assert set(asked) == set(own)
    # The stdlib is read: os.py itself (its dir expanded around a site-packages inside it, as in a
    # pyenv or python.org layout) or the dir that holds it (Debian's, with no site-packages inside).
    assert any(path.endswith("os.py") or os.path.isfile(os.path.join(path, "os.py")) for path in own)


# ---- the profile ---------------------------------------------------------------------------------


def test_profile_denies_by_default_first(layout: Layout) -> None:
    profile, notes = profile_for(layout)
    assert notes == []
    forms = parse_sbpl(profile)
    assert forms[:2] == [["version", "1"], ["deny", "default"]]
    assert ["allow", "default"] not in forms


def test_profile_exec_is_the_interpreter_only(layout: Layout) -> None:
    profile, _ = profile_for(layout)
    execs = [rule for rule in rules(profile) if "process-exec" in rule.ops or "process*" in rule.ops]
    assert execs == [Rule("allow", ("process-exec",), (("literal", PYTHON),))]


def test_profile_denies_fork(layout: Layout) -> None:
    profile, _ = profile_for(layout)
    assert Rule("deny", ("process-fork",), ()) in rules(profile)
    assert not any(
        rule.action == "allow" and ("process-fork" in rule.ops or "process*" in rule.ops)
        for rule in rules(profile)
    )


def test_profile_signals_only_itself_and_reads_sysctls(layout: Layout) -> None:
    found = rules(profile_for(layout)[0])
    assert Rule("allow", ("signal",), (("target", "self"),)) in found
    assert Rule("allow", ("sysctl-read",), ()) in found


def test_profile_denies_network_and_creates_only_unix_sockets(layout: Layout) -> None:
    found = rules(profile_for(layout)[0])
    assert Rule("deny", ("network*",), ()) in found
    assert not any(
        rule.action == "allow" and any(op.startswith("network") for op in rule.ops) for rule in found
    )
    sockets = [rule for rule in found if "system-socket" in rule.ops]
    assert sockets == [Rule("allow", ("system-socket",), (("socket-domain", "AF_UNIX"),))]


def test_profile_work_dir_is_the_only_writable_place(layout: Layout) -> None:
    profile, _ = profile_for(layout)
    work = str(layout.work)
    assert granted(profile, "file-write-data", work + "/out.txt")
    assert granted(profile, "file-write-create", work + "/sub/new")
    assert granted(profile, "file-read-data", work + "/out.txt")
    for path in (str(layout.outside / "x"), str(layout.extra / "data.txt"), PYTHON, "/tmp/x", "/etc/x"):
        assert not granted(profile, "file-write-data", path), path
    for rule in rules(profile):
        if rule.action == "allow" and any(op.startswith("file-write") for op in rule.ops):
            values = {f[1] for f in rule.filters}
            assert values in ({work}, {"/dev/null"}), rule
    # The program cannot map code it wrote.
    assert not granted(profile, "file-map-executable", work + "/evil.so")


def test_profile_reads_interpreter_bootstrap_and_read_paths(layout: Layout) -> None:
    profile, _ = profile_for(layout)
    stdlib = os.path.dirname(os.path.realpath(os.__file__))
    for path in (
        PYTHON,
        os.path.join(stdlib, "os.py"),
        os.path.join(stdlib, "encodings", "utf_8.py"),
        str(SANDBOX_DIR / "bootstrap.py"),
        str(SANDBOX_DIR / "confine.py"),
        str(layout.extra / "data.txt"),
    ):
        assert granted(profile, "file-read-data", path), path
    import _json  # an extension module in lib-dynload on most builds: dlopen needs map-executable

    location = getattr(_json, "__file__", None)
    if location:
        assert granted(profile, "file-map-executable", os.path.realpath(location))
    for path in (str(layout.outside / "secret"), "/etc/passwd", os.path.expanduser("~/.ssh/id_rsa")):
        assert not granted(profile, "file-read-data", path), path


def test_profile_leaves_out_site_packages(layout: Layout) -> None:
    """An existing site-packages is never readable. (One that does not exist — Debian's system
    Python keeps packages in dist-packages elsewhere — may lie under the granted stdlib dir: the
    program cannot create it, the profile being read-only there.)"""
    profile, _ = profile_for(layout)
    sites = {
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths(vars={"base": sys.base_prefix})["purelib"],
    }
    checked = [site for site in sites if os.path.isdir(site)]
    assert checked, f"no site-packages dir exists among {sites}"  # a venv always has its own
    for site in checked:
        assert not granted(profile, "file-read-data", os.path.join(os.path.realpath(site), "evil.py")), site


def test_profile_devices(layout: Layout) -> None:
    profile, _ = profile_for(layout)
    assert granted(profile, "file-read-data", "/dev/urandom")
    assert granted(profile, "file-write-data", "/dev/null")
    assert not granted(profile, "file-write-data", "/dev/urandom")
    assert not granted(profile, "file-read-data", "/dev/sda")


def test_profile_metadata_of_ancestors_only(layout: Layout) -> None:
    profile, _ = profile_for(layout)
    for path in ("/", str(layout.work.parent), os.path.dirname(PYTHON)):
        assert granted(profile, "file-read-metadata", path), path
    metadata = [rule for rule in rules(profile) if rule.ops == ("file-read-metadata",)]
    assert len(metadata) == 1 and all(kind == "literal" for kind, _ in metadata[0].filters)
    assert not granted(profile, "file-read-metadata", str(layout.outside / "x"))


def test_profile_skips_missing_read_paths_and_resolves_symlinks(layout: Layout, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(layout.extra)
    profile, _ = profile_for(layout, read_paths=(str(link), str(tmp_path / "missing")))
    assert granted(profile, "file-read-data", str(layout.extra / "data.txt"))  # the resolved path
    # A symlinked file (like /etc/localtime): its target and the link itself, in its resolved dir.
    zone = tmp_path / "zone"
    zone.symlink_to(layout.extra / "data.txt")
    profile, _ = profile_for(layout, read_paths=(str(zone),))
    assert granted(profile, "file-read-data", str(layout.extra / "data.txt"))
    assert granted(profile, "file-read-data", str(tmp_path.resolve() / "zone"))
    assert not any(str(tmp_path / "missing") in str(f) for rule in rules(profile) for f in rule.filters)


def test_profile_work_dir_is_resolved(layout: Layout, tmp_path: Path) -> None:
    link = tmp_path / "work-link"
    link.symlink_to(layout.work)
    profile, _ = seatbelt.build_profile(PYTHON, (), str(link))
    assert granted(profile, "file-write-data", str(layout.work / "x"))


# ---- hostile path names --------------------------------------------------------------------------

HOSTILE = [
    'quote"inside',
    'close")(allow default)(allow file-read* (subpath "/',
    "back\\slash",
    'escaped\\"quote',
    "trailing\\",
    "\\\\double",
    'semi;colon (paren) #"x"',
    "ünïcødé",
    "\\n-not-a-newline",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_stay_inside_their_literal(tmp_path: Path, name: str) -> None:
    hostile = tmp_path / name
    hostile.mkdir()
    work = tmp_path / ("work-" + name)
    work.mkdir()
    benign = tmp_path / "benign"
    benign.mkdir()
    bench, _ = seatbelt.build_profile(PYTHON, (), str(tmp_path / "work-benign-x"), read_paths=(str(benign),))
    profile, notes = seatbelt.build_profile(PYTHON, (), str(work), read_paths=(str(hostile),))
    assert notes == []
    # Same rules, operation for operation, as with harmless names: nothing was injected.
    assert [(r.action, r.ops, len(r.filters)) for r in rules(profile)] == [
        (r.action, r.ops, len(r.filters)) for r in rules(bench)
    ]
    assert ["allow", "default"] not in parse_sbpl(profile)
    # And each path reads back exactly.
    assert granted(profile, "file-read-data", str(hostile.resolve()) + "/f")
    assert granted(profile, "file-write-data", str(work.resolve()) + "/f")
    assert not granted(profile, "file-read-data", "/etc/passwd")


def test_undecodable_names_round_trip(tmp_path: Path) -> None:
    raw = os.fsencode(str(tmp_path)) + b'/bad\xff\xfe"name'
    os.mkdir(raw)
    path = os.fsdecode(raw)
    profile, notes = seatbelt.build_profile(PYTHON, (), str(tmp_path), read_paths=(path,))
    assert notes == []
    assert granted(profile, "file-read-data", path + "/x")
    assert b'bad\xff\xfe\\"name' in os.fsencode(profile)  # the bytes sandbox-exec gets in argv


@pytest.mark.parametrize("bad", ["new\nline", "carriage\rreturn", "tab\there", "nul-free\x7fdel", "bell\x07"])
def test_control_characters_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(seatbelt.UnsafePathError):
        seatbelt.sbpl_string("/x/" + bad)
    # A read path with one is left out, with a note ...
    hostile = tmp_path / bad
    hostile.mkdir()
    profile, notes = seatbelt.build_profile(PYTHON, (), str(tmp_path / "w"), read_paths=(str(hostile),))
    assert len(notes) == 1 and "not granted" in notes[0]
    assert not granted(profile, "file-read-data", str(hostile) + "/x")
    parse_sbpl(profile)
    # ... the work dir (or the interpreter) with one refuses the profile.
    with pytest.raises(seatbelt.UnsafePathError):
        seatbelt.build_profile(PYTHON, (), str(hostile))


def test_sbpl_string_escapes() -> None:
    assert seatbelt.sbpl_string("/a") == '"/a"'
    assert seatbelt.sbpl_string('/a"b') == '"/a\\"b"'
    assert seatbelt.sbpl_string("/a\\b") == '"/a\\\\b"'
    assert parse_sbpl(seatbelt.sbpl_string('/x\\"y\\')) == ['/x\\"y\\']


# ---- the child command line ----------------------------------------------------------------------


def seatbelt_plan(path: str = "/usr/bin/sandbox-exec") -> Plan:
    return Plan("sandbox-exec", sandbox_exec=path, interpreter_reads=seatbelt.interpreter_reads())


async def test_argv_shape(layout: Layout) -> None:
    bootstrap = str(SANDBOX_DIR / "bootstrap.py")
    child = Child(seatbelt_plan(), BootSpec(5, 1 << 30, ()), bootstrap, PYTHON, 1 << 20)
    child.workdir = str(layout.work)
    argv = child._argv(7, (str(layout.extra),))
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"]
    assert argv[3:] == [PYTHON, "-I", "-S", "-X", "utf8", bootstrap, "7"]
    profile = argv[2]
    assert granted(profile, "file-write-data", str(layout.work / "x"))
    assert granted(profile, "file-read-data", str(layout.extra / "data.txt"))
    assert granted(profile, "file-read-data", bootstrap)
    assert child.report_notes == []
    frame = child._boot_frame((str(layout.extra),))
    assert frame["confine"] is True and frame["workDir"] == str(layout.work)
    assert frame["policy"]["landlock"] is False and frame["policy"]["seccomp"] is False
    assert frame["policy"]["dropTo"] is None


async def test_argv_refuses_an_inexpressible_work_dir(tmp_path: Path) -> None:
    work = tmp_path / "bad\nwork"
    work.mkdir()
    child = Child(seatbelt_plan(), BootSpec(5, 1 << 30, ()), str(SANDBOX_DIR / "bootstrap.py"), PYTHON, 0)
    child.workdir = str(work)
    with pytest.raises(BootFailure) as caught:
        child._argv(3, ())
    assert caught.value.error.kind == "sandbox-unavailable"


async def test_argv_notes_an_inexpressible_read_path(layout: Layout, tmp_path: Path) -> None:
    bad = tmp_path / "bad\nread"
    bad.mkdir()
    child = Child(seatbelt_plan(), BootSpec(5, 1 << 30, ()), str(SANDBOX_DIR / "bootstrap.py"), PYTHON, 0)
    child.workdir = str(layout.work)
    child._argv(3, (str(bad),))
    assert len(child.report_notes) == 1 and "not granted" in child.report_notes[0]


@pytest.mark.skipif(IS_DARWIN, reason="the fake sandbox-exec stands in for the real one off macOS")
async def test_host_runs_a_child_through_sandbox_exec(
    darwin: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spawn path end to end through a stand-in ``sandbox-exec`` that records what it got and
    applies nothing (the child here is Linux's and confines itself as Linux's does)."""
    record = tmp_path / "record"
    record.mkdir()
    fake = fake_sandbox_exec(
        tmp_path,
        f'[ "$1" = "-p" ] || exit 97\nprintf "%s" "$2" > "{record}/profile"\n'
        f'/usr/bin/env > "{record}/env"\necho $$ > "{record}/pid"\nshift 2\nexec "$@"\n',
    )
    probes = darwin_probes(sandbox_exec_path=fake, interpreter_reads=seatbelt.interpreter_reads())
    runtime = PythonSandboxRuntime(pool_size=0, _probe=lambda: probes)
    try:
        result = await runtime.run(CodeRunRequest("import os\nreturn [6 * 7, os.getpid(), os.getcwd()]", []))
    finally:
        await runtime.aclose()
    assert result.error is None, (result.error, result.meta)
    value, pid, cwd = result.value
    assert value == 42
    assert str(pid) == (record / "pid").read_text().strip()  # sandbox-exec exec'd the interpreter
    assert result.meta["backend"] == "sandbox-exec"
    isolation = result.meta["isolation"]
    assert isolation["layers"][:2] == ["sandbox-exec", "rlimits"]
    assert isolation["enforcement"] == "partial"
    assert any("deprecated by Apple" in note for note in isolation["notes"])
    environment = (record / "env").read_text().splitlines()
    assert "MALLOC_ARENA_MAX=1" in environment
    assert not [line for line in environment if line.split("=")[0] in ("PATH", "HOME", "USER")]
    profile = (record / "profile").read_text()
    assert granted(profile, "file-write-data", os.path.realpath(cwd) + "/x")
    assert not os.path.exists(cwd)  # the work dir is gone after the run


# ---- the child's confinement off Linux -----------------------------------------------------------

_OFF_LINUX_CHILD = """
import ctypes, json, resource, sys
real_cdll = ctypes.CDLL


class NoPrctl:
    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        if name == "prctl":
            raise AttributeError("dlsym(RTLD_DEFAULT, prctl): symbol not found")
        return getattr(self._lib, name)


ctypes.CDLL = lambda *args, **kwargs: NoPrctl(real_cdll(*args, **kwargs))
sys.platform = "darwin"
if sys.argv[4] == "unprivileged":  # RLIMIT_NPROC is only set for a child that is not root
    import os
    os.geteuid = os.getuid = lambda: 1000
refuse = set(sys.argv[2].split(",")) if sys.argv[2] else set()
names = {"as": resource.RLIMIT_AS, "fsize": resource.RLIMIT_FSIZE, "nproc": resource.RLIMIT_NPROC}
real_setrlimit = resource.setrlimit


def setrlimit(which, limits):
    if any(names[name] == which for name in refuse):
        raise ValueError("current limit exceeds maximum limit")
    return real_setrlimit(which, limits)


resource.setrlimit = setrlimit
before_as = resource.getrlimit(resource.RLIMIT_AS)
sys.path.insert(0, sys.argv[1])
import confine  # every child module, imported as on macOS: no prctl lookup may happen
import confine_policy

policy = confine_policy.ConfinementPolicy(**json.loads(sys.argv[3]))
try:
    report = confine.confine(policy)
    error = None
except confine_policy.ConfinementError as failure:
    report, error = failure.report, str(failure)
import confine_syscalls
try:
    confine_syscalls.prctl(39)  # PR_GET_NO_NEW_PRIVS: no prctl off Linux, and no AttributeError either
    prctl_errno = 0
except OSError as failure:
    prctl_errno = failure.errno
status = [line.strip() for line in open("/proc/self/status") if line.startswith("NoNewPrivs")]
print(json.dumps({
    "report": report,
    "error": error,
    "nnp": status,
    "cpu": resource.getrlimit(resource.RLIMIT_CPU),
    "as_unchanged": resource.getrlimit(resource.RLIMIT_AS) == before_as,
    "prctl_errno": prctl_errno,
}))
"""


def run_off_linux(refuse: str = "", who: str = "as-is", **policy: Any) -> dict[str, Any]:
    fields = {"cpu_seconds": 5, "memory_bytes": 1 << 30, "landlock": False, "seccomp": False, "drop_to": None}
    fields.update(policy)
    done = subprocess.run(
        [PYTHON, "-I", "-S", "-c", _OFF_LINUX_CHILD, str(SANDBOX_DIR), refuse, json.dumps(fields), who],
        capture_output=True,
        env={},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)  # type: ignore[no-any-return]


needs_proc = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")


@needs_proc
def test_confine_off_linux_is_rlimits_only_and_partial() -> None:
    out = run_off_linux(refuse="as")
    report = out["report"]
    assert out["error"] is None
    assert report["layers"] == ["rlimits"]
    assert report["enforcement"] == "partial"
    assert report["landlockAbi"] is None
    assert out["cpu"] == [5, 6]
    assert out["nnp"] == ["NoNewPrivs:\t0"]  # no prctl was made
    assert out["as_unchanged"]
    assert out["prctl_errno"] == errno.ENOSYS
    notes = " | ".join(report["notes"])
    assert "as not supported here" in notes and "does not enforce" in notes
    assert "darwin has no no_new_privs, Landlock or seccomp" in notes


@needs_proc
def test_confine_off_linux_tolerates_nproc_but_not_other_limits() -> None:
    out = run_off_linux(refuse="as,nproc", who="unprivileged")
    assert out["error"] is None and "nproc not supported here" in " ".join(out["report"]["notes"])
    failed = run_off_linux(refuse="fsize")
    assert failed["error"] is not None and "rlimits could not be applied" in failed["error"]


@needs_proc
@pytest.mark.parametrize("layer", ["landlock", "seccomp"])
def test_confine_off_linux_refuses_linux_layers_after_the_rlimits(layer: str) -> None:
    out = run_off_linux(refuse="as", **{layer: True})
    assert out["error"] is not None and f"unavailable on darwin: {layer}" in out["error"]
    assert out["report"]["layers"] == ["rlimits"] and out["cpu"] == [5, 6]


@pytest.mark.skipif(sys.platform != "linux", reason="checks that Linux still fails closed")
def test_rlimit_as_refusal_still_fails_on_linux() -> None:
    code = textwrap.dedent(
        """
        import resource, sys
        sys.path.insert(0, sys.argv[1])
        import confine
        import confine_policy
        def refuse(which, limits):
            raise ValueError("current limit exceeds maximum limit")
        resource.setrlimit = refuse
        try:
            confine.confine(confine_policy.ConfinementPolicy(5, 1 << 30, landlock=False, seccomp=False))
        except confine_policy.ConfinementError as error:
            print("refused:", error)
        """
    )
    argv = [PYTHON, "-I", "-S", "-c", code, str(SANDBOX_DIR)]
    done = subprocess.run(argv, capture_output=True, env={}, check=False)
    assert b"refused: rlimits could not be applied" in done.stdout, done.stderr


def test_unconfined_rlimits_tolerate_rlimit_as_off_linux_only() -> None:
    code = textwrap.dedent(
        """
        import json, resource, sys
        real = resource.setrlimit
        def setrlimit(which, limits):
            if which == resource.RLIMIT_AS:
                raise ValueError("current limit exceeds maximum limit")
            return real(which, limits)
        resource.setrlimit = setrlimit
        sys.platform = sys.argv[2]
        from toolrt.sandbox._child import bootstrap
        policy = {"cpuSeconds": 5, "memoryBytes": 1 << 30, "maxFileBytes": 1 << 20, "maxOpenFiles": 64}
        try:
            print(json.dumps(bootstrap._rlimits_only(policy)))
        except ValueError as error:
            print(json.dumps({"error": str(error)}))
        """
    )
    results = {}
    for platform in ("darwin", "linux"):
        done = subprocess.run([sys.executable, "-c", code, "", platform], capture_output=True, check=True)
        results[platform] = json.loads(done.stdout)
    assert results["darwin"]["enforcement"] == "none"
    assert any("as not supported here" in note for note in results["darwin"]["notes"])
    assert "error" in results["linux"]


# ---- real macOS ----------------------------------------------------------------------------------

on_macos = pytest.mark.skipif(not IS_DARWIN, reason="needs macOS with /usr/bin/sandbox-exec")


async def _mac_run(program: str) -> CodeRunResult:
    runtime = PythonSandboxRuntime(pool_size=0)
    try:
        return await runtime.run(CodeRunRequest(textwrap.dedent(program), []))
    finally:
        await runtime.aclose()


@on_macos
async def test_macos_runs_a_program_partially_isolated() -> None:
    result = await _mac_run("return 6 * 7")
    assert result.error is None, (result.error, result.meta)
    assert result.value == 42
    isolation = result.meta["isolation"]
    assert isolation["enforcement"] == "partial"
    assert isolation["layers"][:2] == ["sandbox-exec", "rlimits"]


@on_macos
async def test_macos_program_cannot_read_outside_its_grants() -> None:
    with tempfile.TemporaryDirectory() as outside:
        canary = Path(outside, "canary.txt")
        canary.write_text("secret")
        result = await _mac_run(
            f"""
            try:
                return open({str(canary)!r}).read()
            except OSError as error:
                return type(error).__name__
            """
        )
    assert result.error is None, (result.error, result.meta)
    assert result.value == "PermissionError"


@on_macos
async def test_macos_program_cannot_open_a_tcp_socket() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        result = await _mac_run(
            f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
            except OSError as error:
                return type(error).__name__
            return "connected"
            """
        )
        await asyncio.sleep(0.1)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()
    assert result.error is None, (result.error, result.meta)
    assert result.value in ("PermissionError", "OSError")


@on_macos
async def test_macos_program_cannot_fork_or_write_outside() -> None:
    result = await _mac_run(
        """
        import os
        out = []
        try:
            pid = os.fork()
        except OSError as error:
            out.append(type(error).__name__)
        else:
            if pid == 0:
                os._exit(0)
            out.append("forked")
        try:
            open(os.path.expanduser("~/toolrt-seatbelt-escape"), "w").close()
        except OSError as error:
            out.append(type(error).__name__)
        else:
            out.append("wrote")
        return out
        """
    )
    assert result.error is None, (result.error, result.meta)
    assert result.value == ["PermissionError", "PermissionError"]


@on_macos
async def test_macos_asyncio_programs_work() -> None:
    # asyncio's self-pipe is an AF_UNIX socketpair: the profile's system-socket rule.
    result = await _mac_run("import asyncio\nawait asyncio.sleep(0)\nreturn 'ok'")
    assert result.error is None, (result.error, result.meta)
    assert result.value == "ok"
