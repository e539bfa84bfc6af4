"""The built-in read-only file tools enforce their own root (the sandbox protects the process only)."""

from __future__ import annotations

import os
from pathlib import Path

from toolrt import ToolExecutionInput, ToolRuntime
from toolrt._abort import AbortSignal
from toolrt.tools import file_tools


def runtime_for(root: Path) -> ToolRuntime:
    runtime = ToolRuntime()
    for definition in file_tools(root):
        runtime.register(definition)
    return runtime


def make_tree(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "a.py").write_text("one\ntwo\n", encoding="utf-8")
    (root / "pkg" / "b.txt").write_text("x", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.py").write_text("s", encoding="utf-8")


async def test_lists_reads_and_describes_files_inside_the_root(tmp_path: Path) -> None:
    make_tree(tmp_path)
    runtime = runtime_for(tmp_path)
    listing = await runtime.call("list_files", {"path": ".", "pattern": "*.py", "recursive": True})
    assert listing.value == [{"path": "pkg/a.py", "type": "file", "size": 8}]
    assert (await runtime.call("read_file", {"path": "pkg/a.py"})).value == "one\ntwo\n"
    assert (await runtime.call("read_file", {"path": "pkg/a.py", "offset": 4, "limit": 3})).value == "two"
    info = await runtime.call("file_info", {"path": "pkg/a.py"})
    assert info.value == {"path": "pkg/a.py", "type": "file", "size": 8, "lines": 2}


async def test_refuses_paths_outside_the_root_with_a_stable_code(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("top secret", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    runtime = runtime_for(root)
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "link.txt", "/etc/passwd"):
        result = await runtime.call("read_file", {"path": path})
        assert result.is_error, path
        assert result.error.info is not None and result.error.info.code == "PATH_OUTSIDE_ROOT"  # type: ignore[union-attr]
        assert "top secret" not in result.content[0]["text"]
    listing = await runtime.call("list_files", {"path": "."})
    assert listing.value == []  # the escaping symlink is not even described


async def test_the_tools_are_concurrency_safe(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path)
    for name in ("list_files", "read_file", "file_info"):
        call = ToolExecutionInput(call_id="c", name=name, arguments={"path": "."}, signal=AbortSignal())
        assert runtime.execution_mode(call) == "parallel"
