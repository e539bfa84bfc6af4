"""docs/cli.md's shell examples are real: each ``$ command`` runs, and shows the lines the guide shows.

The guide's ``console`` blocks run in order in one fresh workspace holding ``app.py`` (and a session
log); its ``toml`` block is written as that workspace's ``toolrt.toml`` where it appears. Each line
of shown output must come out of the command, in the order shown (lines the guide leaves out, such
as timings, are allowed).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from cli_helpers import APP_PY, TOOLRT, write_session

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_BLOCK = re.compile(r"^```(console|toml)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[str, str]]:
    """The blocks in order: ("toml", text) or ("console", text)."""
    return [(match.group(1), match.group(2)) for match in _BLOCK.finditer(GUIDE.read_text(encoding="utf-8"))]


def commands(block: str) -> list[tuple[str, list[str]]]:
    """Each ``$ command`` with the output lines shown under it."""
    found: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        elif found:
            found[-1][1].append(line.rstrip())
    return found


def shows_in_order(expected: list[str], actual: str) -> None:
    lines = [line.rstrip() for line in actual.splitlines()]
    at = 0
    for line in expected:
        if not line.strip() or line == "...":
            continue
        try:
            at = lines.index(line, at) + 1
        except ValueError:
            raise AssertionError(f"the guide shows {line!r}, the command printed:\n{actual}") from None


def test_every_shell_example_in_the_cli_guide_prints_what_it_shows(tmp_path: Path) -> None:
    """CL1: the guide's examples are backed: same command, same lines."""
    from toolrt.cli._config import load_config

    (tmp_path / "app.py").write_text(APP_PY, encoding="utf-8")
    write_session(tmp_path, tmp_path / "session.jsonl")
    environment = {
        **os.environ,
        "PATH": f"{TOOLRT.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "80",
        "NO_COLOR": "1",
    }
    environment.pop("FORCE_COLOR", None)
    ran = 0
    for kind, text in examples():
        if kind == "toml":
            (tmp_path / "toolrt.toml").write_text(text, encoding="utf-8")
            load_config(None, cwd=tmp_path)  # the documented config is valid
            continue
        for command, expected in commands(text):
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=tmp_path,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
                check=False,
            )
            shows_in_order(expected, done.stdout)
            ran += 1
    assert ran >= 8
