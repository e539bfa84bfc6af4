"""``write`` and ``edit``: create vs update, before and after, uniqueness, ``replace_all``, cards.

Contract FT6 (write creates or replaces atomically, keeping the mode, and reports before and after;
edit replaces an exact string that must be unique unless ``replace_all``, and a failed edit names
the count and changes nothing) and FT10 (the diff cards, live and replayed). Real files throughout.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from fs_helpers import code_of, runtime_for, text_of

from toolrt import ToolRuntime
from toolrt.loop import Event, render_call_card, render_result_card, tool_call_event, tool_result_event


async def test_write_creates_then_updates_with_before_and_after(tmp_path: Path) -> None:
    """FT6: ``operation`` is create, then update; ``before`` is ``None``, then the old text."""
    runtime = runtime_for(tmp_path)
    created = await runtime.call("write", {"path": "docs/notes.md", "content": "# Notes\n"})
    assert created.value == {
        "path": "docs/notes.md",
        "operation": "create",
        "before": None,
        "after": "# Notes\n",
    }
    assert text_of(created) == "Created docs/notes.md (1 line, 8 bytes)"
    updated = await runtime.call("write", {"path": "docs/notes.md", "content": "# Notes\n\n- milk\n"})
    assert updated.value["operation"] == "update" and updated.value["before"] == "# Notes\n"
    assert text_of(updated) == "Updated docs/notes.md (3 lines, 16 bytes)"
    assert (tmp_path / "docs" / "notes.md").read_text(encoding="utf-8") == "# Notes\n\n- milk\n"


async def test_write_is_atomic_keeps_the_mode_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    """FT6: the new content is renamed over the old file: same permissions, nothing left beside it."""
    script = tmp_path / "run.sh"
    script.write_text("echo old\n", encoding="utf-8")
    script.chmod(0o750)
    (tmp_path / "old-link").symlink_to("run.sh")
    runtime = runtime_for(tmp_path)
    await runtime.call("write", {"path": "run.sh", "content": "echo new\n"})
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(os.listdir(tmp_path)) == ["old-link", "run.sh"]
    assert (tmp_path / "old-link").read_text(encoding="utf-8") == "echo new\n"
    directory = await runtime.call("write", {"path": ".", "content": "x"})
    assert code_of(directory) == "IS_A_DIRECTORY"


async def test_edit_requires_a_unique_match_and_names_the_count(tmp_path: Path) -> None:
    """FT6: two occurrences without ``replace_all`` fail with ``EDIT_AMBIGUOUS`` and the file is unchanged."""
    source = "a = 1\nb = 1\nc = 2\n"
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    runtime = runtime_for(tmp_path)
    ambiguous = await runtime.call("edit", {"path": "m.py", "old_string": "= 1", "new_string": "= 3"})
    assert code_of(ambiguous) == "EDIT_AMBIGUOUS"
    assert text_of(ambiguous) == (
        "Error: old_string occurs 2 times in 'm.py'; include more surrounding lines to make it unique, "
        "or pass replace_all=true to replace every occurrence"
    )
    missing = await runtime.call("edit", {"path": "m.py", "old_string": "d = 4", "new_string": "x"})
    assert code_of(missing) == "EDIT_NOT_FOUND" and "was not found in 'm.py'" in text_of(missing)
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == source
    unique = await runtime.call("edit", {"path": "m.py", "old_string": "b = 1", "new_string": "b = 3"})
    assert unique.value == {
        "path": "m.py",
        "before": source,
        "after": "a = 1\nb = 3\nc = 2\n",
        "replacements": 1,
    }
    assert text_of(unique) == "Edited m.py: 1 replacement"


async def test_replace_all_replaces_every_occurrence(tmp_path: Path) -> None:
    """FT6: ``replace_all=true`` replaces each occurrence and says how many."""
    (tmp_path / "m.py").write_text("x = x + x\n", encoding="utf-8")
    runtime = runtime_for(tmp_path)
    result = await runtime.call(
        "edit", {"path": "m.py", "old_string": "x", "new_string": "y", "replace_all": True}
    )
    assert result.value["replacements"] == 3 and text_of(result) == "Edited m.py: 3 replacements"
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == "y = y + y\n"


async def test_edit_refuses_what_it_cannot_do_without_touching_the_file(tmp_path: Path) -> None:
    """FT6: a missing file, an empty or no-op replacement, a file that is not UTF-8."""
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    runtime = runtime_for(tmp_path)
    cases = [
        ({"path": "new.txt", "old_string": "a", "new_string": "b"}, "FILE_NOT_FOUND"),
        ({"path": "latin.txt", "old_string": "caf", "new_string": "tea"}, "NOT_TEXT"),
    ]
    for args, code in cases:
        assert code_of(await runtime.call("edit", args)) == code, args
    empty = await runtime.call("edit", {"path": "latin.txt", "old_string": "", "new_string": "b"})
    assert text_of(empty) == "Error: old_string must not be empty; to create a file, use write"
    same = await runtime.call("edit", {"path": "latin.txt", "old_string": "a", "new_string": "a"})
    assert "the edit would change nothing" in text_of(same)
    assert not (tmp_path / "new.txt").exists()
    assert (tmp_path / "latin.txt").read_bytes() == b"caf\xe9\n"


def card_text(card: Any) -> str:
    return json.dumps(card, indent=1, sort_keys=True, ensure_ascii=False)


async def replayed_cards(runtime: ToolRuntime, name: str, args: dict[str, Any]) -> tuple[str, str]:
    result = await runtime.call(name, args)
    call = Event(1, "tool/call", time.time(), tool_call_event("c1", name, json.dumps(args), args).data)
    done = Event(2, "tool/result", time.time(), tool_result_event("c1", name, result).data)
    return card_text(render_call_card(call, runtime)), card_text(render_result_card(call, done, runtime))


async def test_the_diff_card_snapshots(tmp_path: Path) -> None:
    """FT10, V1: write and edit show a diff card for the call, and one with before/after for the result."""
    runtime = runtime_for(tmp_path)
    call, result = await replayed_cards(runtime, "write", {"path": "a.txt", "content": "one\n"})
    assert call == (
        '{\n "card": "diff",\n "diffs": [\n  {\n   "newText": "one\\n",\n   "oldText": null,\n'
        '   "path": "a.txt"\n  }\n ],\n "locations": [\n  {\n   "path": "a.txt"\n  }\n ],\n'
        ' "title": "Write a.txt"\n}'
    )
    assert result == (
        '{\n "card": "diff",\n "diffs": [\n  {\n   "newText": "one\\n",\n   "oldText": null,\n'
        '   "path": "a.txt"\n  }\n ],\n "title": "Created a.txt"\n}'
    )
    call, result = await replayed_cards(
        runtime, "edit", {"path": "a.txt", "old_string": "one", "new_string": "two", "replace_all": True}
    )
    assert json.loads(call)["title"] == "Edit a.txt (every occurrence)"
    assert json.loads(call)["diffs"] == [{"path": "a.txt", "oldText": "one", "newText": "two"}]
    assert result == (
        '{\n "card": "diff",\n "diffs": [\n  {\n   "newText": "two\\n",\n   "oldText": "one\\n",\n'
        '   "path": "a.txt"\n  }\n ],\n "title": "Changed a.txt"\n}'
    )
    _, failed = await replayed_cards(
        runtime, "edit", {"path": "a.txt", "old_string": "zzz", "new_string": "y"}
    )
    assert json.loads(failed)["card"] == "generic"
