"""The rich cards of the ``toolrt`` command, as text at 80 columns (CL6).

Each card kind is rendered with ``Console(width=80, record=True, color_system=None)`` and compared to
a snapshot in ``tests/cli/snapshots/`` (``TOOLRT_UPDATE_SNAPSHOTS=1`` rewrites them; review the diff).
Every rendering is also checked for what makes a terminal unreadable: a line wider than 80 columns,
a word split across two lines, a block printed twice.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from toolrt.cli._render import CardRenderer, LiveRunLine, diff_lines, lexer_for

SNAPSHOTS = Path(__file__).with_name("snapshots")
WIDTH = 80

LONG = (
    "Interoperability considerations notwithstanding, the reconfiguration of heterogeneous "
    "infrastructure necessitates comprehensive documentation, meticulous verification and "
    "uncompromising backwards compatibility guarantees for downstream integrators."
)

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "terminal-call": (
        "bash",
        {
            "card": "terminal",
            "title": "pytest -q tests/cli",
            "description": "Run the CLI tests",
            "cwd": "/work",
        },
    ),
    "diff-call": (
        "edit",
        {
            "card": "diff",
            "title": "src/app.py",
            "diffs": [
                {
                    "path": "src/app.py",
                    "oldText": "def greet(name):\n    print('hello', name)\n    return None\n",
                    "newText": "def greet(name: str) -> None:\n    print('hello', name)\n    return None\n",
                }
            ],
        },
    ),
    "generic-call": (
        "lookup",
        {"card": "generic", "title": "lookup", "kind": "search", "rawInput": {"query": LONG, "limit": 5}},
    ),
}

RESULTS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "terminal-result": (
        "bash",
        {"card": "terminal", "output": "3 passed in 0.42s\n" + LONG + "\n", "exitCode": 0},
        False,
    ),
    "terminal-long-title": (
        "bash",
        {
            "card": "terminal",
            "title": "bash (sandboxed: bwrap+rlimits+no-new-privs+landlock+seccomp, partial enforcement)",
            "output": "ok\n",
            "exitCode": 0,
        },
        False,
    ),
    "terminal-killed": ("bash", {"card": "terminal", "output": "sleeping\n", "signal": "SIGKILL"}, True),
    "diff-result": (
        "write",
        {
            "card": "diff",
            "title": "notes.md",
            "diffs": [{"path": "notes.md", "oldText": None, "newText": "# Notes\n\nfirst\n"}],
        },
        False,
    ),
    "read-result": (
        "read",
        {
            "card": "read",
            "path": "src/app.py",
            "offset": 10,
            "totalLines": 40,
            "lines": [
                {"number": 10, "text": "def greet(name: str) -> None:"},
                {"number": 11, "text": "    # " + " ".join(LONG.split()[:12])},
                {"number": 12, "text": "    print('hello', name)"},
            ],
        },
        False,
    ),
    "search-matches": (
        "grep",
        {
            "card": "search",
            "shape": "matches",
            "files": [
                {
                    "path": "src/app.py",
                    "matches": [
                        {"lineNumber": 3, "line": "import os"},
                        {"lineNumber": 9, "line": "os.getcwd()"},
                    ],
                },
                {"path": "tests/test_app.py", "matches": [{"lineNumber": 1, "line": "import os"}]},
            ],
            "truncated": True,
            "total": 7,
        },
        False,
    ),
    "search-paths": (
        "glob",
        {
            "card": "search",
            "shape": "paths",
            "paths": ["src/app.py", "src/util.py"],
            "truncated": False,
            "total": 2,
        },
        False,
    ),
    "web-search": (
        "web_search",
        {
            "card": "web",
            "kind": "search",
            "answer": "Python 3.13 was released in October 2024.",
            "sources": [
                {
                    "url": "https://www.python.org/downloads/",
                    "title": "Download Python",
                    "snippet": " ".join(LONG.split()[:9]),
                }
            ],
            "truncated": False,
        },
        False,
    ),
    "generic-error": (
        "read_file",
        {"card": "generic", "title": "read_file", "content": [{"type": "text", "text": "Error: " + LONG}]},
        True,
    ),
}


def render(draw: Any) -> str:
    console = Console(width=WIDTH, record=True, color_system=None, file=io.StringIO())
    draw(CardRenderer(console))
    return console.export_text()


def check_readable(text: str, *sources: str) -> None:
    """No line wider than 80 columns, no word split across lines, no line block printed twice."""
    lines = text.splitlines()
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    known = set(re.findall(r"[A-Za-z]{4,}", " ".join(sources)))
    # Every word of 4+ letters on screen is a whole word of the input (or of the card's chrome).
    for word in re.findall(r"[A-Za-z]{4,}", text):
        assert word in known or word in CHROME, f"{word!r} is not a whole word of the input: split?"
    body = [line for line in lines if line.strip("│╭╮╰╯─ ")]
    for size in (3,):
        blocks = [tuple(body[i : i + size]) for i in range(len(body) - size + 1)]
        assert len(blocks) == len(set(blocks)), "a block of lines is printed twice"


CHROME = {
    "command",
    "exit",
    "killed",
    "lines",
    "truncated",
    "matches",
    "policy",
    "allow",
    "deny",
    "content",
    "kind",
    "search",
    "output",
    "offset",
    "sources",
    "dev",
    "null",
    "HTTP",
    "change",
    "lookup",
}


def snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("TOOLRT_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed: rerun with TOOLRT_UPDATE_SNAPSHOTS=1"


def _words(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{key} {_words(item)}" for key, item in value.items())
    if isinstance(value, list):
        return " ".join(_words(item) for item in value)
    return str(value)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_call_cards_match_their_snapshots_at_80_columns(name: str) -> None:
    """CL6: each call card kind, as text at 80 columns."""
    tool, view = CALLS[name]
    text = render(lambda renderer: renderer.call(tool, view))
    check_readable(text, tool, _words(view))
    snapshot(name, text)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_result_cards_match_their_snapshots_at_80_columns(name: str) -> None:
    """CL6: each result card kind, as text at 80 columns."""
    tool, view, is_error = RESULTS[name]
    text = render(lambda renderer: renderer.result(tool, view, is_error=is_error))
    check_readable(text, tool, _words(view))
    snapshot(name, text)


def test_the_readability_check_catches_a_split_word() -> None:
    """The check above is not vacuous: text folded inside a word fails it."""
    folded = "│ Interoperabil │\n│ ity rules     │\n"
    with pytest.raises(AssertionError, match="split"):
        check_readable(folded, "Interoperability rules")


def test_a_diff_card_is_a_unified_diff() -> None:
    """CL6: the diff card shows the change as a unified diff (``-`` old, ``+`` new, a hunk header)."""
    assert diff_lines("a.py", "x = 1\n", "x = 2\n") == [
        "--- a/a.py",
        "+++ b/a.py",
        "@@ -1 +1 @@",
        "-x = 1",
        "+x = 2",
    ]
    assert diff_lines("new.md", None, "hi\n")[0] == "--- /dev/null"
    text = render(lambda renderer: renderer.call("edit", CALLS["diff-call"][1]))
    assert "-def greet(name):" in text and "+def greet(name: str) -> None:" in text


def test_a_read_card_numbers_lines_from_its_offset_and_highlights_by_extension() -> None:
    """CL6: line numbers start at the card's first line; the lexer comes from the extension (or ``lang``)."""
    text = render(lambda renderer: renderer.result("read", RESULTS["read-result"][1]))
    assert re.search(r"│\s+10 def greet", text) and re.search(r"│\s+12 ", text)
    assert "lines 10-12 of 40" in text
    assert lexer_for("src/app.py") == "python"
    assert lexer_for("main.rs") == "rust"
    assert lexer_for("README", "markdown") == "markdown"
    assert lexer_for("data.unknown-extension") == "text"
    console = Console(width=WIDTH, record=True, color_system="truecolor", file=io.StringIO())
    CardRenderer(console).result("read", RESULTS["read-result"][1])
    styled = console.export_text(styles=True)
    assert "\x1b[" in styled  # highlighted, not plain


def test_an_unknown_card_kind_is_drawn_as_a_generic_card() -> None:
    """CL6: a card kind the renderer does not know falls back to the generic card, never an exception."""
    text = render(
        lambda renderer: renderer.result(
            "x", {"card": "hologram", "content": [{"type": "text", "text": "hi"}]}
        )
    )
    assert "hi" in text


def test_the_live_run_line_counts_the_sub_calls_of_a_program() -> None:
    """CL7: while run_code runs, the live line counts the program's sub-calls (calls with a parent)."""

    class Runtime:
        def __init__(self) -> None:
            self.listener: Any = None

        def on(self, event: str, listener: Any) -> Any:
            assert event == "tools/result"
            self.listener = listener
            return lambda: setattr(self, "listener", None)

    class Call:
        def __init__(self, name: str, parent: object) -> None:
            self.name, self.parent = name, parent

    class Result:
        is_error = False

    runtime = Runtime()
    console = Console(width=WIDTH, record=True, color_system=None, file=io.StringIO())
    with LiveRunLine(console, runtime) as live:
        runtime.listener(Call("list_files", object()), Result())
        runtime.listener(Call("file_info", object()), Result())
        runtime.listener(Call("file_info", object()), Result())
        runtime.listener(Call("run_code", None), Result())  # the program itself is not a sub-call
    assert runtime.listener is None  # unsubscribed on exit
    assert re.fullmatch(r"run_code: \d+\.\ds, 3 sub-calls \(list_files, file_info ×2\)", live.summary())
