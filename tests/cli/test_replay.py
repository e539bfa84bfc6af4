"""``toolrt replay LOG``: a session log drawn as the conversation, with the tools' own cards (CL9)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import APP_PY, fits, one_line, toolrt, write_session


@pytest.fixture
def logged(tmp_path: Path) -> Path:
    """A real session: a scripted model reads a file and greps, then answers; logged to a JSONL file."""
    (tmp_path / "app.py").write_text(APP_PY, encoding="utf-8")
    calls = [("read", {"path": "app.py"}), ("grep", {"pattern": "getcwd"}), ("read", {"path": "../secret"})]
    return write_session(tmp_path, tmp_path / "session.jsonl", calls)


def test_a_session_is_drawn_as_messages_and_cards(logged: Path) -> None:
    """CL9: the user message, the assistant text, each call with its own card, the answer — in order."""
    done = toolrt("replay", str(logged), cwd=logged.parent)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    order = [
        "What does here() return?",
        "Let me look.",
        "read ▸ Read app.py",
        "grep ▸",
        "../secret",
        "here() returns the working directory.",
        "turn ended: ",
    ]
    positions = [out.index(text) for text in order]
    assert positions == sorted(positions), out
    assert re.search(r"│\s+4 def here\(\):", out)  # the read card: numbered lines
    assert re.search(r"│\s+5\s+return os.getcwd\(\)", out)  # the grep card: the matching line
    assert "outside the allowed directory" in out
    assert out.count("Let me look.") == 1
    fits(out)


def test_a_torn_last_line_is_shown_and_skipped(logged: Path) -> None:
    """CL9: a crash mid-write leaves a torn last line: replayed up to it, and said so."""
    with logged.open("ab") as file:
        file.write(b'{"seq": 99, "type": "model/assis')
    done = toolrt("replay", str(logged), cwd=logged.parent)
    assert done.returncode == 0, done.stderr
    assert "here() returns the working directory." in done.stdout
    assert re.search(r"the last line \(\d+\) is torn", done.stdout)


def test_a_missing_or_corrupt_log_is_one_line(tmp_path: Path, logged: Path) -> None:
    """CL9: missing, a directory, empty, corrupt in the middle: one line, exit 2, never a traceback."""
    prefix = "toolrt replay: error: "
    assert one_line(toolrt("replay", "nope.jsonl", cwd=tmp_path), prefix) == (
        "toolrt replay: error: cannot read the log 'nope.jsonl': no such file"
    )
    assert "it is a directory" in one_line(toolrt("replay", str(tmp_path), cwd=tmp_path), prefix)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert "is empty: no events to replay" in one_line(toolrt("replay", "empty.jsonl", cwd=tmp_path), prefix)
    lines = logged.read_bytes().splitlines(keepends=True)
    (tmp_path / "corrupt.jsonl").write_bytes(lines[0] + b"not json at all\n" + b"".join(lines[1:]))
    line = one_line(toolrt("replay", "corrupt.jsonl", cwd=tmp_path), prefix)
    assert line.startswith("toolrt replay: error: the log 'corrupt.jsonl' is corrupt: ")
