"""The ``read`` tool: a numbered slice of a text file's lines, reading only what it returns.

A model reads files to quote them back in ``edit``, so lines come numbered (``cat -n`` style) and
exactly as they are, minus the line end. Memory is bounded whatever the file: the file is scanned a
chunk at a time, the lines before ``offset`` are only counted, and each returned line is kept up to
:data:`MAX_LINE_CHARS` characters (a minified bundle or a 300 MB line costs a few KiB, not the file).
The total is counted to the end so the model knows how much there is. A NUL byte in the first 8 KiB
means a binary file: refused with ``BINARY_FILE`` and its size, before anything else is read.
"""

from __future__ import annotations

import os
from typing import Any

from toolrt._errors import ToolrtError
from toolrt._json import text_block_content
from toolrt._tool_decorator import tool
from toolrt._tool_definition import PresentedResult, ToolDefinition
from toolrt.cards._views import ReadResultView
from toolrt.tools._presented_meta import success_meta
from toolrt.tools._workspace import Workspace, shown

__all__ = ["BINARY_FILE", "DEFAULT_READ_LINES", "MAX_LINE_CHARS", "MAX_READ_CHARS", "read_tool"]

BINARY_FILE = "BINARY_FILE"
DEFAULT_READ_LINES = 2_000
"""Lines ``read`` returns when the model gives no ``limit`` (also the most it may ask for)."""
MAX_LINE_CHARS = 2_000
"""Characters kept of one line; the rest is cut with a marker saying how many bytes it had."""
MAX_READ_CHARS = 100_000
"""Characters of line text one ``read`` returns at most (about 25,000 tokens); then it stops early."""

_CHUNK = 1 << 20
_SNIFF = 8192
_LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
    ".tsx": "tsx", ".jsx": "jsx", ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
    ".md": "markdown", ".rs": "rust", ".go": "go", ".c": "c", ".h": "c", ".cpp": "cpp", ".hpp": "cpp",
    ".java": "java", ".rb": "ruby", ".sh": "bash", ".html": "html", ".css": "css", ".sql": "sql",
}  # fmt: skip


def read_tool(workspace: Workspace) -> ToolDefinition:
    """The ``read`` tool over ``workspace`` (concurrency-safe: it changes nothing)."""

    @tool(
        name="read",
        is_concurrency_safe=lambda args: True,
        render=lambda args, value: text_block_content(_render(value)),
        presentation_meta=lambda args, value: value,
        present_result=_present_result,
    )
    def read(path: str, offset: int = 1, limit: int = DEFAULT_READ_LINES) -> dict[str, Any]:
        """Read a text file's lines, numbered from 1, starting at line `offset`.

        Args:
            path: File path, relative to the workspace root.
            offset: First line to return (1-based).
            limit: Number of lines to return (at most 2000).
        """
        if offset < 1:
            raise ValueError(f"offset must be a line number of at least 1, not {offset}")
        if not 1 <= limit <= DEFAULT_READ_LINES:
            raise ValueError(f"limit must be between 1 and {DEFAULT_READ_LINES}, not {limit}")
        with workspace.open_file(path) as opened:
            head = os.pread(opened.fd, _SNIFF, 0)
            if b"\x00" in head:
                raise ToolrtError(
                    f"path {shown(path)} is a binary file ({opened.stat.st_size:,} bytes); "
                    "read shows text files only",
                    BINARY_FILE,
                )
            lines, total, complete = _scan(opened.fd, offset, limit)
            return {
                "path": opened.path,
                "offset": offset,
                "lines": lines,
                "totalLines": total,
                "size": opened.stat.st_size,
                "nextOffset": None if complete else offset + len(lines),
            }

    return read


def _scan(fd: int, offset: int, limit: int) -> tuple[list[dict[str, Any]], int, bool]:
    """Lines ``[offset, offset + limit)``, the file's line count, and whether the slice reached its end.

    A last line without ``\\n`` counts as a line; an empty file has none.
    """
    last = offset + limit  # first line number not wanted
    keep = MAX_LINE_CHARS * 4 + 4  # bytes enough for MAX_LINE_CHARS characters of any UTF-8
    lines: list[dict[str, Any]] = []
    budget = MAX_READ_CHARS
    number = 1
    current = bytearray()
    length = 0  # bytes in the current line so far (also those not kept)
    stopped_early = False
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, _CHUNK):
        if number >= last or stopped_early:
            number += chunk.count(b"\n")  # only counting now
            length = len(chunk) - chunk.rfind(b"\n") - 1 if b"\n" in chunk else length + len(chunk)
            continue
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            length += len(piece)
            if number >= offset and number < last and not stopped_early and len(current) < keep:
                current += piece[: keep - len(current)]
            if end < 0:
                break
            if number >= offset and number < last and not stopped_early:
                text = _line_text(current, length)
                if budget - len(text) < 0 and lines:
                    stopped_early = True
                else:
                    budget -= len(text)
                    lines.append({"number": number, "text": text})
            current.clear()
            length = 0
            number += 1
            start = end + 1
    total = number - 1 + (length > 0)
    if length > 0 and offset <= number < last and not stopped_early:
        text = _line_text(current, length)
        if budget - len(text) >= 0 or not lines:
            lines.append({"number": number, "text": text})
    return lines, total, offset + len(lines) > total


def _line_text(raw: bytes | bytearray, length: int) -> str:
    text = bytes(raw).decode("utf-8", errors="replace")
    if text.endswith("\r") and length == len(raw):
        text = text[:-1]
    if len(text) > MAX_LINE_CHARS or length > len(raw):
        return text[:MAX_LINE_CHARS] + f" [… line cut: {length:,} bytes in all]"
    return text


def _render(value: dict[str, Any]) -> str:
    lines = value["lines"]
    body = "\n".join(f"{line['number']:>6}\t{line['text']}" for line in lines)
    total = value["totalLines"]
    if total == 0:
        return f"{value['path']} is empty."
    if not lines:
        return f"[offset {value['offset']} is past the end: {value['path']} has {total:,} lines]"
    if value["nextOffset"] is not None:
        first, final = lines[0]["number"], lines[-1]["number"]
        return f"{body}\n[lines {first}-{final} of {total:,}; read on with offset={value['nextOffset']}]"
    return body


def _present_result(args: Any, result: PresentedResult) -> ReadResultView | None:
    meta = success_meta(result)
    if meta is None:
        return None
    path = str(meta["path"])
    view: ReadResultView = {
        "card": "read",
        "title": f"Read {path}",
        "path": path,
        "offset": int(meta["offset"]),
        "lines": [{"number": int(line["number"]), "text": str(line["text"])} for line in meta["lines"]],
        "totalLines": int(meta["totalLines"]),
    }
    language = _LANGUAGES.get(os.path.splitext(path)[1].lower())
    if language is not None:
        view["lang"] = language
    return view
