"""Running the installed ``toolrt`` command the way a user does, for the tests of its subcommands."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

TOOLRT = Path(sys.executable).with_name("toolrt")
USAGE = 2


def toolrt(
    *arguments: str, cwd: Path, stdin: str = "", columns: int = 80
) -> subprocess.CompletedProcess[str]:
    """The command's result; stdout is not a terminal, so rich draws plain text at ``columns``."""
    if not TOOLRT.exists():
        pytest.skip(f"the toolrt console script is not installed next to {sys.executable}")
    environment = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1"}
    environment.pop("FORCE_COLOR", None)
    return subprocess.run(
        [str(TOOLRT), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
        env=environment,
    )


def toolrt_module(*arguments: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m toolrt.cli._main ARGUMENTS``: the command without its console script (always runs)."""
    return subprocess.run(
        [sys.executable, "-m", "toolrt.cli._main", *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def in_terminal(*arguments: str, cwd: Path, timeout: float = 60) -> Any:
    """``toolrt ARGUMENTS`` in a real 40x80 terminal (a pexpect child); skips without pexpect."""
    pexpect = pytest.importorskip("pexpect")
    if not TOOLRT.exists():
        pytest.skip("the toolrt console script is not installed")
    return pexpect.spawn(
        str(TOOLRT), list(arguments), cwd=str(cwd), encoding="utf-8", timeout=timeout, dimensions=(40, 80)
    )


def one_line(done: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The one line of a command-line mistake, after checking nothing else was printed."""
    assert done.returncode == USAGE, done
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.endswith("\n") and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(prefix), done.stderr
    return done.stderr.rstrip("\n")


def fits(text: str, width: int = 80) -> None:
    """Readable at ``width`` columns: no line wider."""
    widest = max(text.splitlines(), key=len, default="")
    assert len(widest) <= width, widest


APP_PY = "import os\n\n\ndef here():\n    return os.getcwd()\n"
"""The file the CLI guide's examples (and several tests) work on, as ``app.py``."""


DEFAULT_CALLS: tuple[tuple[str, dict[str, str]], ...] = (
    ("read", {"path": "app.py"}),
    ("grep", {"pattern": "getcwd", "glob": "*.py"}),
)


def write_session(
    workspace: Path, path: Path, calls: Sequence[tuple[str, dict[str, str]]] = DEFAULT_CALLS
) -> Path:
    """A real session log: a scripted model makes ``calls`` (``(tool, arguments)``; by default it
    reads ``app.py`` and greps), then answers."""
    import asyncio
    import json

    from toolrt import ToolRuntime
    from toolrt.loop import Agent, AssistantMessage, ScriptedModel, SessionLog, ToolCall
    from toolrt.tools import fs_tools

    runtime = ToolRuntime()
    for definition in fs_tools(workspace, read_only=True):
        runtime.register(definition)
    model = ScriptedModel(
        [
            AssistantMessage(
                text="Let me look.",
                tool_calls=tuple(
                    ToolCall(f"call_{number}", name, json.dumps(arguments))
                    for number, (name, arguments) in enumerate(calls, start=1)
                ),
            ),
            AssistantMessage(text="here() returns the working directory."),
        ]
    )
    session = SessionLog.open(path, "create")
    agent = Agent(runtime, model, session=session)
    asyncio.run(agent.run_turn("What does here() return?"))
    agent.close()
    session.close()
    return path
