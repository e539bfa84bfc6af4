"""Every user mistake on the ``toolrt`` command line is one line and a non-zero exit, never a
traceback (issue 12 item 4); a failed program's error is printed once; and what the command prints is
valid UTF-8 whatever the program returns or prints (item 6).

Each test runs the installed ``toolrt`` console script in a real child process, the way a user does;
one drives it in a real terminal (a pty, with pexpect).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import TOOLRT, USAGE, in_terminal


def toolrt(
    *arguments: str, cwd: Path, stdin: bytes = b"", user: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[bytes]:
    if not TOOLRT.exists():
        pytest.skip(f"the toolrt console script is not installed next to {sys.executable}")
    return subprocess.run(
        [*user, str(TOOLRT), *arguments], input=stdin, capture_output=True, cwd=cwd, timeout=120, check=False
    )


def one_line_mistake(done: subprocess.CompletedProcess[bytes], prefix: str) -> str:
    """The mistake's one line on stderr, after checking nothing else was printed."""
    assert done.returncode == USAGE, done
    assert done.stdout == b""
    stderr = done.stderr.decode("utf-8")
    assert "Traceback" not in stderr
    assert stderr.endswith("\n") and stderr.count("\n") == 1, stderr
    assert stderr.startswith(prefix), stderr
    return stderr.rstrip("\n")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "ok.py").write_text("print('ok')\n", encoding="utf-8")
    (tmp_path / "a directory").mkdir()
    (tmp_path / "latin1.py").write_bytes(b"print('caf\xe9')\n")
    return tmp_path


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        (
            ["run-code", "missing.py"],
            "toolrt run-code: error: cannot read the program 'missing.py': no such file",
        ),
        (
            ["run-code", "a directory"],
            "toolrt run-code: error: cannot read the program 'a directory': it is a directory; pass a file",
        ),
        (
            ["run-code", "latin1.py"],
            "toolrt run-code: error: the program 'latin1.py' is not valid UTF-8 text "
            "(byte 10, line 1: b'\\xe9'); save it as UTF-8",
        ),
        (
            ["run-code", "ok.py/inner.py"],
            "toolrt run-code: error: cannot read the program 'ok.py/inner.py': Not a directory",
        ),
    ],
)
def test_a_program_file_that_cannot_be_read_is_one_line(
    workdir: Path, arguments: list[str], line: str
) -> None:
    assert one_line_mistake(toolrt(*arguments, cwd=workdir), "toolrt run-code: error: ") == line


def test_a_program_on_standard_input_that_is_not_utf8_is_one_line(workdir: Path) -> None:
    done = toolrt("run-code", "-", cwd=workdir, stdin=b"x = 1\ny = '\xc3('\n")
    assert one_line_mistake(done, "toolrt run-code: error: ") == (
        "toolrt run-code: error: the program on standard input is not valid UTF-8 text "
        "(byte 11, line 2: b'\\xc3'); save it as UTF-8"
    )


def test_an_unreadable_program_file_is_one_line(workdir: Path) -> None:
    secret = workdir / "secret.py"
    secret.write_text("print(1)\n", encoding="utf-8")
    secret.chmod(0)
    user: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root reads anything: run the command as an unprivileged user instead
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop to an unprivileged user")
        user = (setpriv, "--reuid=65534", "--regid=65534", "--clear-groups")
    done = toolrt("run-code", "secret.py", cwd=workdir, user=user)
    if done.returncode != USAGE and b"secret.py" not in done.stderr:
        pytest.skip(f"the unprivileged user cannot run the installed command here: {done.stderr[-300:]!r}")
    assert one_line_mistake(done, "toolrt run-code: error: ") == (
        "toolrt run-code: error: cannot read the program 'secret.py': permission denied"
    )


@pytest.mark.parametrize(
    ("arguments", "prefix", "says"),
    [
        (["run-code", "ok.py", "--bogus"], "toolrt: error: ", "unrecognized arguments: --bogus"),
        (["frobnicate"], "toolrt: error: ", "invalid choice: 'frobnicate'"),
        ([], "toolrt: error: ", "the following arguments are required: command"),
        (["run-code"], "toolrt run-code: error: ", "the following arguments are required: file"),
        (
            ["run-code", "ok.py", "--max-output", "lots"],
            "toolrt run-code: error: ",
            "argument --max-output: must",
        ),
        (
            ["run-code", "ok.py", "--max-output", "-5"],
            "toolrt run-code: error: ",
            "argument --max-output: must",
        ),
        (
            ["run-code", "ok.py", "--timeout", "soon"],
            "toolrt run-code: error: ",
            "argument --timeout: must be a",
        ),
        (
            ["run-code", "ok.py", "--timeout", "-1"],
            "toolrt run-code: error: ",
            "positive number of seconds, got '-1'",
        ),
        (
            ["run-code", "ok.py", "--timeout", "inf"],
            "toolrt run-code: error: ",
            "positive number of seconds, got 'inf'",
        ),
        (
            ["run-code", "ok.py", "--backend", "docker"],
            "toolrt run-code: error: ",
            "argument --backend: invalid",
        ),
    ],
)
def test_a_bad_command_line_is_one_line(workdir: Path, arguments: list[str], prefix: str, says: str) -> None:
    line = one_line_mistake(toolrt(*arguments, cwd=workdir), prefix)
    assert says in line
    assert line.endswith("--help)")  # and where to look next


@pytest.mark.parametrize(
    ("arguments", "prefix", "says"),
    [
        (["tools", "--bogus"], "toolrt: error: ", "unrecognized arguments: --bogus"),
        (["prompt", "--mode", "fast"], "toolrt prompt: error: ", "argument --mode: invalid choice: 'fast'"),
        (["call"], "toolrt call: error: ", "the following arguments are required: name, arguments"),
        (["replay"], "toolrt replay: error: ", "the following arguments are required: log"),
    ],
)
def test_a_bad_command_line_of_the_new_commands_is_one_line(
    workdir: Path, arguments: list[str], prefix: str, says: str
) -> None:
    """CL2: the same one-line rule for tools, prompt, call and replay."""
    line = one_line_mistake(toolrt(*arguments, cwd=workdir), prefix)
    assert says in line and line.endswith("--help)")


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        (
            ["call", "read", "{oops"],
            "toolrt call: error: the arguments are not valid JSON (line 1, column 2: "
            "Expecting property name enclosed in double quotes): '{oops'",
        ),
        (
            ["call", "read", "42"],
            'toolrt call: error: the arguments must be a JSON object, e.g. \'{"path": "."}\', got a number',
        ),
        (
            ["replay", "missing.jsonl"],
            "toolrt replay: error: cannot read the log 'missing.jsonl': no such file",
        ),
        (
            ["--config", "missing.toml", "tools"],
            "toolrt tools: error: missing.toml: no such config file",
        ),
        (
            ["prompt", "--config", "a directory"],
            "toolrt prompt: error: a directory: is a directory, not a config file",
        ),
    ],
)
def test_a_mistake_in_a_new_command_s_input_is_one_line(
    workdir: Path, arguments: list[str], line: str
) -> None:
    """CL2: JSON arguments, a session log, a config file: one line naming what is wrong."""
    done = toolrt(*arguments, cwd=workdir)
    prefix = line.split(": error: ", maxsplit=1)[0] + ": error: "
    assert one_line_mistake(done, prefix) == line.replace("{workdir}", str(workdir))


def test_a_typo_in_toolrt_toml_is_one_line_naming_the_key(workdir: Path) -> None:
    """CL2/CL5: ``./toolrt.toml`` is read by every configured command; a typo stops each one."""
    (workdir / "toolrt.toml").write_text("[sandbox]\nbakend = 'bwrap'\n", encoding="utf-8")
    for command in (["tools"], ["prompt"], ["call", "read", "{}"], ["replay", "x.jsonl"]):
        assert one_line_mistake(toolrt(*command, cwd=workdir), f"toolrt {command[0]}: error: ") == (
            f"toolrt {command[0]}: error: toolrt.toml: sandbox.bakend: "
            "unknown key (known here: backend, allow_unconfined, allow_network, bash)"
        )


def test_a_huge_file_name_is_echoed_cut(workdir: Path) -> None:
    name = "n" * 100_000 + ".py"
    line = one_line_mistake(
        toolrt("run-code", name, cwd=workdir), "toolrt run-code: error: cannot read the program "
    )
    assert len(line) < 400 and "characters cut]" in line


def test_a_failed_program_s_error_is_printed_once(workdir: Path) -> None:
    """It used to come twice on stderr: as text, then inside the structured line."""
    done = toolrt("run-code", "-", cwd=workdir, stdin=b"raise ValueError('boom-' + str(6 * 7))\n")
    assert done.returncode == 1
    stderr = done.stderr.decode("utf-8")
    assert stderr.count("boom-42") == 1, stderr
    error_line, isolation_line = stderr.rstrip("\n").split("\n")
    error = json.loads(error_line)["error"]
    assert error["code"] == "CODE_RUN_FAILED" and "ValueError: boom-42" in error["message"]
    assert isolation_line.startswith("isolation: ")


# --- valid UTF-8 on the terminal (item 6) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("program", "says"),
    [
        ("return '\\ud800'", "lone surrogate in a string"),
        ("return 'ok\\udcff'", "lone surrogate in a string"),
        ("return {'k\\udfff': 1}", "lone surrogate in a string"),
        ("print('ok\\udcff')", "UnicodeEncodeError"),
    ],
)
def test_a_lone_surrogate_never_reaches_the_terminal(workdir: Path, program: str, says: str) -> None:
    done = toolrt("run-code", "-", cwd=workdir, stdin=program.encode("utf-8"))
    assert done.returncode == 1
    assert done.stdout == b""
    stderr = done.stderr.decode("utf-8")  # strict: valid UTF-8 or this raises
    assert 'Traceback (most recent call last):\n  File "/' not in stderr  # no host traceback
    assert says in json.loads(stderr.split("\n")[0])["error"]["message"]


def test_valid_text_of_every_width_is_printed_as_it_is(workdir: Path) -> None:
    done = toolrt("run-code", "-", cwd=workdir, stdin="return 'é 中 \U0001f600'\n".encode())
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8") == "é 中 \U0001f600\n"


# --- in a real terminal ----------------------------------------------------------------------------


def test_a_missing_file_in_a_real_terminal_is_one_line_and_exit_2(workdir: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    child = in_terminal("run-code", "missing.py", cwd=workdir)
    child.expect(pexpect.EOF)
    child.close()
    lines = [line for line in child.before.replace("\r\n", "\n").split("\n") if line]
    assert lines == ["toolrt run-code: error: cannot read the program 'missing.py': no such file"]
    assert child.exitstatus == USAGE


def test_a_program_in_a_real_terminal_prints_its_output(workdir: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    child = in_terminal("run-code", "ok.py", cwd=workdir)
    child.expect_exact("ok\r\n")
    child.expect("isolation: ")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_an_mcp_server_that_cannot_start_is_one_line(workdir: Path) -> None:
    """CL2/CL5: a configured MCP server that is not installed stops the command with one line, exit 2."""
    (workdir / "toolrt.toml").write_text(
        "[mcp.servers.ghost]\ncommand = 'no-such-mcp-server'\n", encoding="utf-8"
    )
    line = one_line_mistake(toolrt("tools", cwd=workdir), "toolrt tools: error: ")
    assert line.startswith(
        'toolrt tools: error: MCP server "ghost" could not be started (no-such-mcp-server)'
    )
