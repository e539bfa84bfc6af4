"""The built-in read-only file tools enforce their own root (the sandbox protects the process only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fs_helpers import PEAK_KIB, peak_growth_kib

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


# --- bounded reads (issue 12 item 7: "the file tools read only what they return") -------------------

PEAK_PROBE = (
    r"""
import asyncio, os, sys
from toolrt import ToolRuntime
from toolrt.tools import file_tools

"""
    + PEAK_KIB
    + r"""

async def main() -> None:
    root = sys.argv[1]
    runtime = ToolRuntime()
    for definition in file_tools(root):
        runtime.register(definition)
    warm = await runtime.call("read_file", {"path": "small.txt"})  # every code path loaded once
    assert warm.value == "tiny\n", warm
    await runtime.call("file_info", {"path": "small.txt"})
    before = peak_kib()
    for offset in (0, 1_000_000, 150_000_000, 299_990_000):
        result = await runtime.call("read_file", {"path": "sparse.bin", "offset": offset})
        assert len(result.value) == (10_000 if offset == 299_990_000 else 20_000), (offset, result)
    info = await runtime.call("file_info", {"path": "sparse.bin"})
    assert info.value == {"path": "sparse.bin", "type": "file", "size": 300_000_000, "lines": 1}, info
    print(peak_kib() - before)


asyncio.run(main())
"""
)


def test_reading_a_300_mb_sparse_file_keeps_the_host_s_memory_flat(tmp_path: Path) -> None:
    """Four slices and a line count of a 300 MB file, in a real child process: its peak RSS."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc (Linux) to read the child's peak resident size")
    (tmp_path / "small.txt").write_text("tiny\n", encoding="utf-8")
    with open(tmp_path / "sparse.bin", "wb") as sparse:
        sparse.truncate(300_000_000)  # a hole: no disk used, 300 MB of zero bytes to read
    growth_kib = peak_growth_kib(PEAK_PROBE, tmp_path)
    # Reading the whole file (as the tools used to) costs its bytes and its text: over 600 MB.
    assert growth_kib < 32 * 1024, f"peak RSS grew by {growth_kib} KiB"


async def test_read_file_slices_match_the_whole_text_across_chunk_edges(tmp_path: Path) -> None:
    """The chunked reader returns what slicing the whole decoded text returned: multi-byte
    characters, invalid bytes and CRLF line ends straddling its 1 MiB chunks included."""
    raw = ("é" * 700_000 + "\r\n" + "z\U0001f600" * 400_000).encode("utf-8")
    raw = raw[:1_048_575] + b"\xff\xfe" + raw[1_048_575:] + b"tail"
    (tmp_path / "mixed.txt").write_bytes(raw)
    whole = (tmp_path / "mixed.txt").read_text(encoding="utf-8", errors="replace")
    runtime = runtime_for(tmp_path)
    for offset, limit in (
        (0, 5),
        (699_998, 10),
        (1_048_570, 20_000),
        (len(whole) - 3, 100),
        (len(whole) + 5, 10),
    ):
        result = await runtime.call("read_file", {"path": "mixed.txt", "offset": offset, "limit": limit})
        assert result.value == whole[offset : offset + limit], (offset, limit)
    assert (await runtime.call("read_file", {"path": "mixed.txt", "limit": 0})).value == ""
    info = await runtime.call("file_info", {"path": "mixed.txt"})
    assert info.value == {"path": "mixed.txt", "type": "file", "size": len(raw), "lines": 2}


async def test_a_huge_path_is_echoed_cut(tmp_path: Path) -> None:
    """A 50 MB path argument used to come back as a 52-million-character error (issue 12 item 5)."""
    runtime = runtime_for(tmp_path)
    for name in ("read_file", "file_info", "list_files"):
        result = await runtime.call(name, {"path": "../" + "p" * 50_000_000})
        assert result.is_error
        text = result.content[0]["text"]
        assert len(text) <= 300, (name, len(text))
        assert "characters cut]" in text and text.endswith("is outside the allowed directory")
