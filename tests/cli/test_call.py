"""``toolrt call NAME JSON``: one call through the pipeline, drawn as the tool's cards (CL7).

Run as users run it: the installed command in a child process, and once in a real terminal (a pty,
with pexpect) answering the approval prompt.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from cli_helpers import fits, in_terminal, one_line, toolrt


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("import os\n\n\ndef here():\n    return os.getcwd()\n", encoding="utf-8")
    return tmp_path


def test_a_read_is_drawn_as_numbered_lines_with_the_policy_between_the_cards(workspace: Path) -> None:
    """CL7: the call card, the policy's decision, the result card (line numbers from the offset)."""
    done = toolrt("call", "read", '{"path": "app.py", "offset": 4}', cwd=workspace)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index('"path": "app.py"') < out.index("policy: allow") < out.index("def here():")
    assert re.search(r"│\s+4 def here\(\):", out) and re.search(r"│\s+5\s+return os.getcwd\(\)", out)
    assert "app.py · lines 4-5 of 5" in out
    assert out.count("def here():") == 1  # drawn once
    fits(out)


def test_an_edit_asks_first_and_shows_the_change_as_a_diff(workspace: Path) -> None:
    """CL7: ``[policies] ask`` (default: write, edit, bash) asks; ``--yes`` allows once; the diff is drawn."""
    done = toolrt(
        "call",
        "edit",
        "--yes",
        '{"path": "app.py", "old_string": "getcwd", "new_string": "getcwdb"}',
        cwd=workspace,
    )
    assert done.returncode == 0, done.stderr
    assert "policy: ask ([policies] ask matches edit) → allowed-once" in done.stdout
    assert "-    return os.getcwd()" in done.stdout and "+    return os.getcwdb()" in done.stdout
    assert (workspace / "app.py").read_text(encoding="utf-8").endswith("os.getcwdb()\n")


def test_an_unanswered_approval_is_a_refusal_and_exit_1(workspace: Path) -> None:
    """CL7: no one to answer (stdin at end): the call is refused, the file untouched, exit 1."""
    done = toolrt("call", "write", '{"path": "new.txt", "content": "x"}', cwd=workspace, stdin="")
    assert done.returncode == 1
    assert "→ unavailable" in done.stdout and "requires approval" in done.stdout
    assert not (workspace / "new.txt").exists()


def test_a_tool_failure_is_a_red_card_and_exit_1(workspace: Path) -> None:
    """CL7: a failing call (a path outside the workspace) is its error card and exit status 1."""
    done = toolrt("call", "read", '{"path": "../outside.txt"}', cwd=workspace)
    assert done.returncode == 1
    assert "outside the allowed directory" in done.stdout
    assert done.stdout.count("outside the allowed directory") == 1


def test_bash_is_a_terminal_card_with_the_exit_code(workspace: Path) -> None:
    """CL7: the bash tool's terminal cards: ``$ command``, then the output and ``exit N``."""
    done = toolrt("call", "bash", "--yes", '{"command": "echo hello from bash; exit 3"}', cwd=workspace)
    assert done.returncode == 0, done.stderr  # a command that exits 3 is a result, not a tool failure
    assert "$ echo hello from bash; exit 3" in done.stdout
    assert "hello from bash" in done.stdout and "exit 3 ─" in done.stdout


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (
            ["call", "read", "{path: 1}"],
            "toolrt call: error: the arguments are not valid JSON (line 1, column 2:",
        ),
        (["call", "read", "[1, 2]"], "toolrt call: error: the arguments must be a JSON object, e.g."),
        (["call", "read", '"app.py"'], "got a string"),
        (
            ["call", "nosuch", "{}"],
            "toolrt call: error: no tool named 'nosuch' is configured (tools: read, write",
        ),
        (["call", "read"], "toolrt call: error: the following arguments are required: arguments"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_one_line(
    workspace: Path, arguments: list[str], says: str
) -> None:
    """CL7: unusable arguments or an unknown tool are command-line mistakes: one line, exit 2."""
    assert says in one_line(toolrt(*arguments, cwd=workspace), "toolrt call: error: ")


def test_in_a_real_terminal_the_approval_is_asked_and_answered(workspace: Path) -> None:
    """CL7: in a pty: the prompt appears, ``y`` runs the command, its output is drawn; exit 0."""
    pexpect = pytest.importorskip("pexpect")
    child = in_terminal("call", "bash", '{"command": "echo approved-and-ran"}', cwd=workspace)
    child.expect_exact("Allow this call?")
    child.sendline("y")
    child.expect_exact("approved-and-ran")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    screen = child.before.replace("\r\n", "\n")
    assert "exit 0" in screen
    assert "\x1b[" in screen  # a terminal: rich draws in colour


def test_a_run_code_call_reports_its_time_and_sub_calls(workspace: Path) -> None:
    """CL7: ``call run_code``: the program's sub-calls are counted (live on a terminal, then summed up)."""
    (workspace / "toolrt.toml").write_text(
        "mode = 'code'\n[tools]\nbuiltin = ['fs-readonly']\n", encoding="utf-8"
    )
    program = 'found = await tools.glob({"pattern": "*.py"})\nprint(len(found["paths"]), "files")'
    arguments = json.dumps({"code": program, "description": "count files"})
    done = toolrt("call", "run_code", arguments, cwd=workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"run_code: \d+\.\ds, 1 sub-calls \(glob\)", done.stdout)
    assert "1 files" in done.stdout


def test_in_a_real_terminal_a_run_code_call_shows_a_live_line(workspace: Path) -> None:
    """CL7: on a terminal the live line (elapsed time, sub-calls so far) is drawn while the program runs."""
    pexpect = pytest.importorskip("pexpect")
    (workspace / "toolrt.toml").write_text(
        "mode = 'code'\n[tools]\nbuiltin = ['fs-readonly']\n", encoding="utf-8"
    )
    program = 'import asyncio\nawait tools.glob({"pattern": "*.py"})\nawait asyncio.sleep(1.5)\nprint("done")'
    child = in_terminal(
        "call", "run_code", json.dumps({"code": program, "description": "wait"}), cwd=workspace
    )
    child.expect_exact("⏵ run_code")
    child.expect(r"\d+\.\ds · 1 sub-calls · last: glob")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_in_a_real_terminal_cancels_the_call_and_draws_its_result(workspace: Path) -> None:
    """CL7: Ctrl-C aborts the running call through its signal; the command ends promptly, exit 1."""
    pexpect = pytest.importorskip("pexpect")
    child = in_terminal(
        "call", "bash", "--yes", '{"command": "echo started; sleep 60"}', cwd=workspace, timeout=30
    )
    child.expect_exact("echo started; sleep 60")  # the call card: the command is starting
    time.sleep(1.5)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "Error: tool call aborted" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)
