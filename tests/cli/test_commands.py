"""The toolrt command, run as a real subprocess (the way users run it)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import toolrt_module

ROOT = Path(__file__).resolve().parents[2]


def toolrt(*arguments: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return toolrt_module(*arguments, cwd=cwd, stdin=stdin)


def test_pipeline_demo_walks_each_kind_of_call() -> None:
    done = toolrt("demo", "--pipeline")
    assert done.returncode == 0, done.stderr
    for expected in (
        "Error: invalid arguments",
        "Error: delete_note needs a human",
        'Error: unknown tool "send_email"',
        "observed once: yes",
    ):
        assert expected in done.stdout


def test_code_mode_demo_runs_the_program_in_the_sandbox() -> None:
    done = toolrt("demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read was refused" in done.stdout  # the read-only fs tools (read, glob, grep)
    assert "direct read of /etc/passwd: blocked" in done.stdout
    assert "enforcement:" in done.stdout and "seccomp" in done.stdout


def test_the_demo_says_first_that_its_model_is_scripted_and_a_refusal_reads_as_one() -> None:
    """CL1: the first line says the model is scripted; the kernel's refusal is not a "missing file"."""
    done = toolrt("demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("The model in this demo is scripted: no model API is called.")
    assert "direct read of /etc/passwd: blocked, refused by the sandbox" in done.stdout
    assert "blocked (FileNotFoundError)" not in done.stdout  # what it said before: a missing file


def test_run_code_says_a_host_file_was_refused_by_the_sandbox(tmp_path: Path) -> None:
    """CL1: a program's FileNotFoundError for a host file outside the workspace reads as a refusal."""
    done = toolrt("run-code", "-", stdin='open("/etc/passwd").read()\n', cwd=tmp_path)
    assert done.returncode == 1
    assert (
        "toolrt run-code: refused by the sandbox: '/etc/passwd' exists on this machine, "
        "but the sandbox does not show it to programs\n"
    ) in done.stderr
    missing = toolrt("run-code", "-", stdin='open("no-such-file.txt")\n', cwd=tmp_path)
    assert missing.returncode == 1 and "refused by the sandbox" not in missing.stderr  # truly missing


def test_run_code_prints_the_output_and_the_isolation(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("hello\n", encoding="utf-8")
    program = 'files = await tools.list_files({"pattern": "*.md"})\nprint(len(files), "markdown files")\n'
    done = toolrt("run-code", "-", stdin=program, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1 markdown files"
    assert "isolation:" in done.stderr


def test_run_code_reports_a_structured_error_and_exits_non_zero(tmp_path: Path) -> None:
    done = toolrt("run-code", "-", stdin="raise ValueError('boom')\n", cwd=tmp_path)
    assert done.returncode == 1
    error_line = next(line for line in done.stderr.splitlines() if line.startswith('{"error"'))
    error = json.loads(error_line)["error"]
    assert error["code"] == "CODE_RUN_FAILED"
    assert error["message"].startswith("code run failed (exception):")
    assert "ValueError: boom" in error["message"]


@pytest.mark.parametrize("command", [["version"], ["schemas"]])
def test_small_commands_succeed(command: list[str]) -> None:
    assert toolrt(*command).returncode == 0


def test_version_is_also_a_flag() -> None:
    """CL1: ``toolrt --version`` prints what ``toolrt version`` prints."""
    from toolrt import __version__

    assert toolrt("--version").stdout == toolrt("version").stdout == f"{__version__}\n"


def test_run_code_offers_exactly_the_sandbox_backends() -> None:
    """The CLI spells the backend names out (to stay fast to start); they must be the runtime's."""
    from toolrt.cli._main import _BACKENDS
    from toolrt.sandbox._backends.plan import BACKEND_NAMES

    assert _BACKENDS == BACKEND_NAMES
