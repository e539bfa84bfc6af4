"""``read``: numbered line slices, binary and size detection, bounded memory, concurrency, its card.

Contract FT5 (line-numbered slices with ``totalLines`` and ``nextOffset``, a NUL in the first 8 KiB
is ``BINARY_FILE``, a line is cut at 2,000 characters, memory bounded on a 300 MB file measured in a
child process), FT7 (read, glob and grep are concurrency-safe, write and edit exclusive) and FT10 (the
``read`` card). Real files in a temporary workspace throughout.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from fs_helpers import PEAK_KIB, peak_growth_kib, runtime_for, text_of

from toolrt import ToolExecutionInput, ToolRuntime
from toolrt._abort import AbortSignal
from toolrt.loop import Event, render_result_card, tool_call_event, tool_result_event


async def test_lines_come_numbered_from_the_offset_with_the_total(tmp_path: Path) -> None:
    """FT5: offset is 1-based, limit counts lines, the value says where to read on."""
    (tmp_path / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)), encoding="utf-8")
    runtime = runtime_for(tmp_path)
    whole = await runtime.call("read", {"path": "a.txt"})
    assert whole.value["totalLines"] == 10 and whole.value["nextOffset"] is None
    assert whole.value["lines"][0] == {"number": 1, "text": "line 1"}
    assert text_of(whole).splitlines()[0] == "     1\tline 1"
    part = await runtime.call("read", {"path": "a.txt", "offset": 4, "limit": 3})
    assert [line["number"] for line in part.value["lines"]] == [4, 5, 6]
    assert part.value["nextOffset"] == 7 and part.value["size"] == 71
    assert (
        text_of(part)
        == "     4\tline 4\n     5\tline 5\n     6\tline 6\n[lines 4-6 of 10; read on with offset=7]"
    )
    past = await runtime.call("read", {"path": "a.txt", "offset": 50})
    assert past.value["lines"] == [] and past.value["offset"] == 50
    assert text_of(past) == "[offset 50 is past the end: a.txt has 10 lines]"


async def test_line_ends_and_encodings_are_handled_exactly(tmp_path: Path) -> None:
    """CRLF ends dropped, a last line without ``\\n`` counted, bad UTF-8 replaced, empty files said."""
    (tmp_path / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree")
    (tmp_path / "bad.txt").write_bytes(b"caf\xe9\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    runtime = runtime_for(tmp_path)
    crlf = await runtime.call("read", {"path": "crlf.txt"})
    assert [line["text"] for line in crlf.value["lines"]] == ["one", "two", "three"]
    assert crlf.value["totalLines"] == 3
    assert (await runtime.call("read", {"path": "bad.txt"})).value["lines"] == [
        {"number": 1, "text": "caf\ufffd"}
    ]
    empty = await runtime.call("read", {"path": "empty.txt"})
    assert empty.value["totalLines"] == 0 and text_of(empty) == "empty.txt is empty."


async def test_binary_files_and_bad_arguments_are_refused_clearly(tmp_path: Path) -> None:
    """FT5: a NUL byte means binary (the message gives the size); offset and limit are checked."""
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(2000))
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")
    runtime = runtime_for(tmp_path)
    binary = await runtime.call("read", {"path": "image.png"})
    assert binary.error.info is not None and binary.error.info.code == "BINARY_FILE"  # type: ignore[union-attr]
    assert (
        text_of(binary)
        == "Error: path 'image.png' is a binary file (2,016 bytes); read shows text files only"
    )
    for args, message in (
        ({"offset": 0}, "offset must be a line number of at least 1, not 0"),
        ({"limit": 0}, "limit must be between 1 and 2000, not 0"),
        ({"limit": 2001}, "limit must be between 1 and 2000, not 2001"),
    ):
        result = await runtime.call("read", {"path": "a.txt", **args})
        assert text_of(result) == f"Error: {message}"


async def test_long_lines_are_cut_and_a_big_slice_stops_early(tmp_path: Path) -> None:
    """FT5: one line keeps 2,000 characters (the cut says how long it was); a slice stops at 100,000."""
    (tmp_path / "min.js").write_text("a" * 50_000 + "\nshort\n", encoding="utf-8")
    (tmp_path / "wide.txt").write_text(("b" * 1_500 + "\n") * 300, encoding="utf-8")
    runtime = runtime_for(tmp_path)
    lines = (await runtime.call("read", {"path": "min.js"})).value["lines"]
    assert lines[0]["text"] == "a" * 2_000 + " [… line cut: 50,000 bytes in all]"
    assert lines[1] == {"number": 2, "text": "short"}
    wide = await runtime.call("read", {"path": "wide.txt"})
    assert len(wide.value["lines"]) == 66 and wide.value["nextOffset"] == 67  # 66 x 1,500 <= 100,000
    assert wide.value["totalLines"] == 300


async def test_reads_are_concurrency_safe_and_run_concurrently(tmp_path: Path) -> None:
    """FT7: read, glob, grep classify parallel, write and edit exclusive; 32 concurrent reads agree."""
    for n in range(8):
        (tmp_path / f"f{n}.txt").write_text(f"file {n}\n" * (n + 1), encoding="utf-8")
    runtime = runtime_for(tmp_path)
    modes = {}
    arguments = {
        "read": {"path": "f0.txt"},
        "glob": {"pattern": "*.txt"},
        "grep": {"pattern": "file"},
        "write": {"path": "f0.txt", "content": ""},
        "edit": {"path": "f0.txt", "old_string": "a", "new_string": "b"},
    }
    for name, args in arguments.items():
        call = ToolExecutionInput(call_id="c", name=name, arguments=args, signal=AbortSignal())
        modes[name] = runtime.execution_mode(call)
    assert modes == {
        "read": "parallel",
        "glob": "parallel",
        "grep": "parallel",
        "write": "exclusive",
        "edit": "exclusive",
    }
    results = await asyncio.gather(*(runtime.call("read", {"path": f"f{n % 8}.txt"}) for n in range(32)))
    for n, result in enumerate(results):
        assert result.value["totalLines"] == n % 8 + 1
        assert result.value["lines"][0]["text"] == f"file {n % 8}"


def card_text(card: Any) -> str:
    return json.dumps(card, indent=1, sort_keys=True, ensure_ascii=False)


def replayed_result_card(runtime: ToolRuntime, name: str, args: dict[str, Any], result: Any) -> Any:
    call = Event(1, "tool/call", time.time(), tool_call_event("c1", name, json.dumps(args), args).data)
    done = Event(2, "tool/result", time.time(), tool_result_event("c1", name, result).data)
    return render_result_card(call, done, runtime)


async def test_the_read_card_snapshot(tmp_path: Path) -> None:
    """FT10, V1: a ``read`` result card with its language, replayed from the log's durable fields."""
    (tmp_path / "m.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    runtime = runtime_for(tmp_path)
    args = {"path": "m.py", "offset": 2}
    result = await runtime.call("read", args)
    assert card_text(replayed_result_card(runtime, "read", args, result)) == (
        "{\n"
        ' "card": "read",\n'
        ' "lang": "python",\n'
        ' "lines": [\n'
        "  {\n"
        '   "number": 2,\n'
        '   "text": "    return 1"\n'
        "  }\n"
        " ],\n"
        ' "offset": 2,\n'
        ' "path": "m.py",\n'
        ' "title": "Read m.py",\n'
        ' "totalLines": 2\n'
        "}"
    )
    failed = await runtime.call("read", {"path": "nope.py"})
    assert replayed_result_card(runtime, "read", {"path": "nope.py"}, failed)["card"] == "generic"


# --- a 300 MB file (FT5: read only what it returns) ------------------------------------------------

PEAK_PROBE = (
    r"""
import asyncio, sys
from toolrt import ToolRuntime
from toolrt.tools import fs_tools

"""
    + PEAK_KIB
    + r"""

async def main() -> None:
    runtime = ToolRuntime()
    for definition in fs_tools(sys.argv[1]):
        runtime.register(definition)
    warm = await runtime.call("read", {"path": "small.txt"})  # every code path loaded once
    assert warm.value["lines"] == [{"number": 1, "text": "tiny"}], warm
    await runtime.call("read", {"path": "hole.bin"})
    before = peak_kib()
    head = await runtime.call("read", {"path": "big.log", "limit": 2000})
    lines = head.value["lines"]
    assert head.value["totalLines"] == 2001, head.value["totalLines"]
    assert lines[999]["text"] == "head 999" and lines[1000]["text"].endswith("bytes in all]"), lines[1000]
    tail = await runtime.call("read", {"path": "big.log", "offset": 1990})
    assert tail.value["lines"][-1] == {"number": 2001, "text": "tail 999"}, tail.value["lines"][-1]
    binary = await runtime.call("read", {"path": "hole.bin"})
    assert binary.error.info.code == "BINARY_FILE", binary
    edit = await runtime.call("edit", {"path": "big.log", "old_string": "head 1", "new_string": "x"})
    assert edit.error.info.code == "FILE_TOO_LARGE", edit
    print(peak_kib() - before)


asyncio.run(main())
"""
)


def test_a_300_mb_file_is_read_in_slices_with_flat_memory(tmp_path: Path) -> None:
    """FT5: text, a 300 MB hole, text; its head and tail read, its size refused by edit; peak RSS."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc (Linux) to read the child's peak resident size")
    (tmp_path / "small.txt").write_text("tiny\n", encoding="utf-8")
    size = 300_000_000
    with open(tmp_path / "big.log", "wb") as big:
        big.write("".join(f"head {n}\n" for n in range(1000)).encode())
        tail = "".join(f"tail {n}\n" for n in range(1000)).encode()
        big.seek(size - len(tail) - 1)
        big.write(b"\n" + tail)  # the hole is one 300 MB line of NUL bytes, after 8 KiB of text
    with open(tmp_path / "hole.bin", "wb") as hole:
        hole.truncate(size)
    growth_kib = peak_growth_kib(PEAK_PROBE, tmp_path)
    assert growth_kib < 32 * 1024, f"peak RSS grew by {growth_kib} KiB"
    assert (tmp_path / "big.log").stat().st_size == size
