"""``toolrt run-code`` bounds what it prints, like what a model reads (issue 12 item 1)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import toolrt_module

FLOOD = "print('a' * 1_000 + 'b' * 5_000_000 + 'z' * 1_000)\n"


def run_code(*flags: str, program: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return toolrt_module("run-code", "-", *flags, cwd=cwd, stdin=program)


@pytest.mark.parametrize("value", ["0", "-3", "lots", "1.5"])
def test_a_bad_max_output_is_one_usage_line_and_exit_2(value: str, tmp_path: Path) -> None:
    done = run_code(f"--max-output={value}", program="print(1)\n", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        f"toolrt run-code: error: argument --max-output: must be a positive number of characters or "
        f"'unbounded', got '{value}'"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def test_the_default_prints_at_most_20000_characters_and_says_how_much_was_cut(tmp_path: Path) -> None:
    done = run_code(program=FLOOD, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) < 20_100
    assert done.stdout.startswith("a" * 1_000 + "b") and done.stdout.rstrip("\n").endswith("b" + "z" * 1_000)
    assert "\n[… 4,982,000 characters cut (--max-output 20000) …]\n" in done.stdout
    assert (
        "toolrt run-code: output cut to 20,000 of 5,002,000 characters (4,982,000 not shown); "
        "pass --max-output N or --max-output unbounded to see more"
    ) in done.stderr


def test_max_output_sets_the_bound(tmp_path: Path) -> None:
    done = run_code("--max-output", "100", program=FLOOD, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a" * 80 + "\n[… 5,001,900 characters cut (--max-output 100) …]\n" + "z" * 20 + "\n"


def test_unbounded_prints_everything(tmp_path: Path) -> None:
    done = run_code("--max-output", "unbounded", program=FLOOD, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a" * 1_000 + "b" * 5_000_000 + "z" * 1_000 + "\n"
    assert "output cut" not in done.stderr


def test_an_error_is_bounded_too(tmp_path: Path) -> None:
    done = run_code("--max-output", "300", program="raise ValueError('q' * 100_000)\n", cwd=tmp_path)
    assert done.returncode == 1
    # The error is printed once, as its structured line; its message is bounded like any output.
    error_line = next(line for line in done.stderr.splitlines() if line.startswith('{"error"'))
    message = json.loads(error_line)["error"]["message"]
    head = message.split("\n[… ")[0]
    assert head.startswith("code run failed (exception): ") and len(head) == 240
    assert "characters cut (--max-output 300) …]" in message
