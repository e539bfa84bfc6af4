"""``glob`` and ``grep``: patterns, the cap with ``truncated`` and ``total``, ripgrep vs Python, cards.

Contract FT8 (capped results that count the total; hidden names skipped, symlinks not followed,
binary data not searched, stable order) and FT9 (ripgrep and the Python scan return the same
result; a pattern only Python's ``re`` accepts still works). Real trees, the real ``rg`` binary
when it is on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from fs_helpers import runtime_for, text_of

from toolrt import ToolRuntime
from toolrt.loop import Event, render_result_card, tool_call_event, tool_result_event
from toolrt.tools._fs_search import glob_regex, grep_python, grep_ripgrep
from toolrt.tools._workspace import Workspace

needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep (rg) is not on PATH")


def make_tree(root: Path) -> None:
    files = {
        "README.md": "# Project\nfoo bar\n",
        "src/app.py": "import os\n\ndef main():\n    return foo()\n",
        "src/util.py": "def foo():\n    return 123\n# FOO in caps\n",
        "src/deep/nested/mod.py": "foo = 'é'\nvalue = 456\n",
        "src/deep/notes.txt": "foo\r\nbar\r\nfoo again",
        "docs/guide.md": "Use foo.\n" * 5,
        "docs/long.txt": "foo" + "x" * 1_000 + "\n",
        ".hidden/secret.py": "foo = 'hidden'\n",
        "src/.env": "FOO=1\n",
        "empty.txt": "",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "blob.bin").write_bytes(b"foo\x00foo\n")
    (root / "src" / "link.py").symlink_to("util.py")


def test_glob_patterns_match_paths_the_way_shells_do() -> None:
    """``*`` stays in one directory, ``**/`` spans any number (zero too), ``{a,b}`` and ``[...]``."""
    cases = {
        ("*.py", "a.py"): True,
        ("*.py", "src/a.py"): False,
        ("**/*.py", "a.py"): True,
        ("**/*.py", "src/deep/a.py"): True,
        ("src/**/*.txt", "src/notes.txt"): True,
        ("src/**", "src/a/b"): True,
        ("*.{py,md}", "x.md"): True,
        ("file[0-9].txt", "file7.txt"): True,
        ("file[!0-9].txt", "file7.txt"): False,
        ("a?c", "a/c"): False,
    }
    for (pattern, path), expected in cases.items():
        assert bool(glob_regex(pattern).match(path)) is expected, (pattern, path)


async def test_glob_lists_files_in_order_with_cap_and_total(tmp_path: Path) -> None:
    """FT8: files only, hidden and symlinks skipped, name order depth first, ``limit`` caps, total counts."""
    make_tree(tmp_path)
    runtime = runtime_for(tmp_path)
    every = await runtime.call("glob", {"pattern": "**/*.py"})
    assert every.value == {
        "paths": ["src/app.py", "src/deep/nested/mod.py", "src/util.py"],
        "total": 3,
        "truncated": False,
    }
    capped = await runtime.call("glob", {"pattern": "**/*", "limit": 2})
    assert capped.value["paths"] == ["README.md", "blob.bin"] and capped.value["total"] == 9
    assert capped.value["truncated"] is True
    assert text_of(capped) == "README.md\nblob.bin\n[2 of 9 paths shown; narrow the pattern or path]"
    under = await runtime.call("glob", {"pattern": "*.py", "path": "src"})
    assert under.value["paths"] == ["src/app.py", "src/util.py"]
    assert text_of(await runtime.call("glob", {"pattern": "*.rs"})) == "No files matched."


@pytest.mark.parametrize("use_ripgrep", [None, False], ids=["auto", "python"])
async def test_grep_caps_matches_and_counts_the_total(tmp_path: Path, use_ripgrep: bool | None) -> None:
    """FT8: ``limit`` matching lines, ``total`` over all files, ``truncated``; binary data not searched."""
    make_tree(tmp_path)
    runtime = runtime_for(tmp_path, use_ripgrep=use_ripgrep)
    result = await runtime.call("grep", {"pattern": "foo", "limit": 3})
    value = result.value
    assert value["total"] == 12 and value["truncated"] is True
    assert value["files"] == [
        {"path": "README.md", "matches": [{"lineNumber": 2, "line": "foo bar"}]},
        {
            "path": "docs/guide.md",
            "matches": [{"lineNumber": 1, "line": "Use foo."}, {"lineNumber": 2, "line": "Use foo."}],
        },
    ]
    assert (
        text_of(result).splitlines()[-1] == "[3 of 12 matching lines shown; narrow the pattern, path or glob]"
    )
    python_only = "ripgrep" if use_ripgrep is None and shutil.which("rg") else "python"
    assert value["engine"] == python_only
    filtered = await runtime.call(
        "grep", {"pattern": "FOO", "ignore_case": True, "glob": "*.py", "path": "src"}
    )
    assert [(entry["path"], len(entry["matches"])) for entry in filtered.value["files"]] == [
        ("src/app.py", 1),
        ("src/deep/nested/mod.py", 1),
        ("src/util.py", 2),
    ]
    long_line = await runtime.call("grep", {"pattern": "x{100}"})
    assert long_line.value["files"][0]["matches"][0]["line"] == "foo" + "x" * 497 + " [… line cut]"
    invalid = await runtime.call("grep", {"pattern": "("})
    assert invalid.error.info is not None and invalid.error.info.code == "INVALID_PATTERN"  # type: ignore[union-attr]
    assert text_of(await runtime.call("grep", {"pattern": "nothing-like-this"})) == "No matches."
    one_file = await runtime.call("grep", {"pattern": "return", "path": "src/util.py"})
    assert one_file.value["files"] == [
        {"path": "src/util.py", "matches": [{"lineNumber": 2, "line": "    return 123"}]}
    ]


AGREEMENT_CASES = [
    {"pattern": "foo"},
    {"pattern": "foo", "limit": 4},
    {"pattern": "^foo"},
    {"pattern": r"\d{3}"},
    {"pattern": "é"},
    {"pattern": "again$"},
    {"pattern": "FOO", "ignore_case": True},
    {"pattern": "foo", "glob": "*.py"},
    {"pattern": "foo", "glob": "*.{md,txt}"},
    {"pattern": "foo", "glob": "src/**/*.py"},
    {"pattern": "foo", "glob": "!*.py"},
    {"pattern": "foo", "glob": "!src/**"},
    {"pattern": "foo", "path": "src/deep"},
    {"pattern": "return|import"},
    {"pattern": ""},
]


@needs_rg
def test_ripgrep_and_the_python_scan_agree(tmp_path: Path) -> None:
    """FT9: the same files, lines, order, total and truncation from both engines, case by case."""
    make_tree(tmp_path)
    for n in range(30):
        (tmp_path / "many" / f"{n:02d}.log").parent.mkdir(exist_ok=True)
        (tmp_path / "many" / f"{n:02d}.log").write_text(f"entry {n}\nfoo {n * 7}\n", encoding="utf-8")
    workspace = Workspace(tmp_path)
    for case in AGREEMENT_CASES:
        options = {key: value for key, value in case.items() if key not in ("pattern", "path")}
        path = str(case.get("path", "."))
        pattern = str(case["pattern"])
        by_rg = grep_ripgrep(workspace, pattern, path, **options)  # type: ignore[arg-type]
        by_python = grep_python(workspace, pattern, path, **options)  # type: ignore[arg-type]
        assert by_rg is not None, case
        assert by_rg.pop("engine") == "ripgrep" and by_python.pop("engine") == "python"
        assert by_rg == by_python, case
        assert by_python["total"] > 0, case


@needs_rg
async def test_a_pattern_only_python_understands_falls_back(tmp_path: Path) -> None:
    """FT9: look-behind is not ripgrep's default syntax: the Python engine answers the same call."""
    (tmp_path / "a.py").write_text("print(1)\nsprint(2)\n", encoding="utf-8")
    runtime = runtime_for(tmp_path)
    result = await runtime.call("grep", {"pattern": "(?<!s)print"})
    assert result.value["engine"] == "python"
    assert result.value["files"] == [{"path": "a.py", "matches": [{"lineNumber": 1, "line": "print(1)"}]}]


def card_text(card: Any) -> str:
    return json.dumps(card, indent=1, sort_keys=True, ensure_ascii=False)


async def replayed_result_card(runtime: ToolRuntime, name: str, args: dict[str, Any]) -> Any:
    result = await runtime.call(name, args)
    call = Event(1, "tool/call", time.time(), tool_call_event("c1", name, json.dumps(args), args).data)
    done = Event(2, "tool/result", time.time(), tool_result_event("c1", name, result).data)
    return render_result_card(call, done, runtime)


async def test_the_search_card_snapshots(tmp_path: Path) -> None:
    """FT10, V1: glob shows a ``paths`` search card and grep a ``matches`` one, with truncation and total."""
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("x = 2\ny = x\n", encoding="utf-8")
    os.mkdir(tmp_path / "c")
    runtime = runtime_for(tmp_path)
    paths = await replayed_result_card(runtime, "glob", {"pattern": "*.py", "limit": 1})
    assert card_text(paths) == (
        '{\n "card": "search",\n "paths": [\n  "a.py"\n ],\n "shape": "paths",\n'
        ' "title": "Glob *.py",\n "total": 2,\n "truncated": true\n}'
    )
    matches = await replayed_result_card(runtime, "grep", {"pattern": "x", "limit": 2})
    assert card_text(matches) == (
        '{\n "card": "search",\n "files": [\n  {\n   "matches": [\n    {\n     "line": "x = 1",\n'
        '     "lineNumber": 1\n    }\n   ],\n   "path": "a.py"\n  },\n  {\n   "matches": [\n    {\n'
        '     "line": "x = 2",\n     "lineNumber": 1\n    }\n   ],\n   "path": "b.py"\n  }\n ],\n'
        ' "shape": "matches",\n "title": "Grep x",\n "total": 3,\n "truncated": true\n}'
    )
