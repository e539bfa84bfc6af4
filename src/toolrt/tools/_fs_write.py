"""The ``write`` and ``edit`` tools: change a file, and say exactly what changed (before and after).

Both go through :meth:`Workspace.replace_file`: one walk finds the file, the old bytes are read
through the directory fd the new ones are written into, and the rename is atomic, so a swapped
symlink cannot redirect the write and a reader never sees half a file. Both are exclusive (no
``is_concurrency_safe``): two writes to one file must not interleave, and a read scheduled after a
write in the same batch must see it.

``edit`` replaces an exact string, never a pattern: the model quotes what it read, and the quote
must occur exactly once (or ``replace_all`` says "every occurrence"), so an edit cannot land in the
wrong place. A miss or an ambiguity fails with the count and changes nothing.
"""

from __future__ import annotations

from typing import Any

from toolrt._errors import ToolrtError
from toolrt._json import text_block_content
from toolrt._tool_decorator import tool
from toolrt._tool_definition import PresentedResult, ToolDefinition
from toolrt.cards._views import DiffResultView, DiffView
from toolrt.tools._presented_meta import success_meta
from toolrt.tools._workspace import Workspace, shown

__all__ = ["EDIT_AMBIGUOUS", "EDIT_NOT_FOUND", "NOT_TEXT", "edit_tool", "write_tool"]

EDIT_NOT_FOUND = "EDIT_NOT_FOUND"
EDIT_AMBIGUOUS = "EDIT_AMBIGUOUS"
NOT_TEXT = "NOT_TEXT"

_MAX_CARD_CHARS = 200_000
"""Characters of each side a diff card keeps (the value is whole; a UI needs no more than this)."""


def write_tool(workspace: Workspace) -> ToolDefinition:
    """The ``write`` tool over ``workspace``: create a file or replace its content."""

    @tool(
        name="write",
        render=lambda args, value: text_block_content(_render_write(value)),
        presentation_meta=lambda args, value: _diff_meta(value),
        present_call=_present_write_call,
        present_result=_present_diff_result,
    )
    def write(path: str, content: str) -> dict[str, Any]:
        """Create a file, or replace its whole content (missing directories are created).

        Args:
            path: File path, relative to the workspace root.
            content: The complete new content of the file.
        """
        replaced = workspace.replace_file(path, lambda before: content.encode("utf-8"))
        return {
            "path": replaced.path,
            "operation": "create" if replaced.before is None else "update",
            "before": None if replaced.before is None else replaced.before.decode("utf-8", errors="replace"),
            "after": content,
        }

    return write


def edit_tool(workspace: Workspace) -> ToolDefinition:
    """The ``edit`` tool over ``workspace``: exact-match replacement in an existing text file."""

    @tool(
        name="edit",
        render=lambda args, value: text_block_content(_render_edit(value)),
        presentation_meta=lambda args, value: _diff_meta(value),
        present_call=_present_edit_call,
        present_result=_present_diff_result,
    )
    def edit(path: str, old_string: str, new_string: str, replace_all: bool = False) -> dict[str, Any]:
        """Replace an exact string in a file. It must occur exactly once unless `replace_all` is true.

        Args:
            path: File path, relative to the workspace root.
            old_string: The exact text to replace, as read (without line numbers).
            new_string: The text to put in its place.
            replace_all: Replace every occurrence instead of requiring exactly one.
        """
        if old_string == "":
            raise ValueError("old_string must not be empty; to create a file, use write")
        if old_string == new_string:
            raise ValueError("old_string and new_string are the same: the edit would change nothing")
        counted: list[int] = []

        def change(before: bytes | None) -> bytes:
            if before is None:
                raise ToolrtError(
                    f"path {shown(path)} does not exist; to create it, use write", "FILE_NOT_FOUND"
                )
            try:
                text = before.decode("utf-8")
            except UnicodeDecodeError:
                message = f"path {shown(path)} is not UTF-8 text; edit changes text files only"
                raise ToolrtError(message, NOT_TEXT) from None
            count = text.count(old_string)
            if count == 0:
                raise ToolrtError(
                    f"old_string was not found in {shown(path)}; read the file and quote it exactly "
                    "(whitespace and indentation included, line numbers excluded)",
                    EDIT_NOT_FOUND,
                )
            if count > 1 and not replace_all:
                raise ToolrtError(
                    f"old_string occurs {count} times in {shown(path)}; include more surrounding lines "
                    "to make it unique, or pass replace_all=true to replace every occurrence",
                    EDIT_AMBIGUOUS,
                )
            counted.append(count)
            return text.replace(old_string, new_string).encode("utf-8")

        replaced = workspace.replace_file(path, change)
        assert replaced.before is not None
        return {
            "path": replaced.path,
            "before": replaced.before.decode("utf-8"),
            "after": replaced.after.decode("utf-8"),
            "replacements": counted[0],
        }

    return edit


def _lines(text: str) -> str:
    count = text.count("\n") + (not text.endswith("\n") and text != "")
    return f"{count} line{'s' * (count != 1)}"


def _render_write(value: dict[str, Any]) -> str:
    verb = "Created" if value["operation"] == "create" else "Updated"
    return f"{verb} {value['path']} ({_lines(value['after'])}, {len(value['after'].encode('utf-8')):,} bytes)"


def _render_edit(value: dict[str, Any]) -> str:
    count = value["replacements"]
    return f"Edited {value['path']}: {count} replacement{'s' * (count != 1)}"


def _diff_meta(value: dict[str, Any]) -> dict[str, Any]:
    before = value["before"]
    return {
        "path": value["path"],
        "oldText": None if before is None else before[:_MAX_CARD_CHARS],
        "newText": value["after"][:_MAX_CARD_CHARS],
    }


def _present_write_call(args: Any) -> DiffView:
    path = str(args["path"])
    return {
        "card": "diff",
        "title": f"Write {path}",
        "diffs": [{"path": path, "oldText": None, "newText": str(args["content"])[:_MAX_CARD_CHARS]}],
        "locations": [{"path": path}],
    }


def _present_edit_call(args: Any) -> DiffView:
    path = str(args["path"])
    old, new = str(args["old_string"]), str(args["new_string"])
    return {
        "card": "diff",
        "title": f"Edit {path}" + (" (every occurrence)" if args.get("replace_all") is True else ""),
        "diffs": [{"path": path, "oldText": old[:_MAX_CARD_CHARS], "newText": new[:_MAX_CARD_CHARS]}],
        "locations": [{"path": path}],
    }


def _present_diff_result(args: Any, result: PresentedResult) -> DiffResultView | None:
    meta = success_meta(result)
    if meta is None:
        return None
    path = str(meta["path"])
    old = meta.get("oldText")
    return {
        "card": "diff",
        "title": f"{'Created' if old is None else 'Changed'} {path}",
        "diffs": [
            {"path": path, "oldText": None if old is None else str(old), "newText": str(meta["newText"])}
        ],
    }
