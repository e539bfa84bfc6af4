"""Small built-in read-only file tools: ``list_files``, ``read_file``, ``file_info``.

They serve the CLI and the demo until the reference fs tools land. Each resolves paths inside one
root directory and refuses anything outside it — ``..``, absolute paths elsewhere, symlinks that
point out — because a Code Mode sandbox protects the process, not the tools: tools run on the host
and must enforce their own policy on their arguments.

They read only what they return, in bounded chunks: ``read_file`` decodes up to its slice and stops
(a 20,000-character slice of a 300 MB file costs a few hundred KiB, not the file twice over), and
``file_info`` counts lines a chunk at a time. Memory stays flat however large the file.

>>> from toolrt import ToolRuntime
>>> runtime = ToolRuntime()
>>> for definition in file_tools("."):
...     _ = runtime.register(definition)
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Any

from toolrt._errors import MAX_ECHO_CHARS, OutsideRootError, clip_text
from toolrt._tool_decorator import tool
from toolrt._tool_definition import ToolDefinition

__all__ = ["OutsideRootError", "file_tools"]

_MAX_ENTRIES = 2_000
_MAX_READ = 200_000
_CHUNK = 1 << 20
"""Characters (read_file) or bytes (file_info) taken per read: the tools' memory, whatever the file."""


def file_tools(root: str | os.PathLike[str]) -> list[ToolDefinition]:
    """The three read-only tools, confined to ``root``."""
    base = Path(root).resolve()

    def inside(path: str) -> Path:
        candidate = (base / path).resolve()
        if candidate != base and base not in candidate.parents:
            raise OutsideRootError(path)
        return candidate

    def relative(path: Path) -> str:
        return "." if path == base else str(path.relative_to(base))

    @tool(is_concurrency_safe=lambda args: True)
    def list_files(path: str = ".", pattern: str = "*", recursive: bool = False) -> list[dict[str, Any]]:
        """List files and directories under a directory.

        Args:
            path: Directory relative to the working directory.
            pattern: Shell-style pattern the names must match, e.g. ``*.py``.
            recursive: Descend into subdirectories (hidden directories are skipped).
        """
        directory = inside(path)
        if not directory.is_dir():
            raise NotADirectoryError(f"{_shown(path)} is not a directory")
        entries: list[dict[str, Any]] = []
        walker = os.walk(directory) if recursive else [(str(directory), *_split(directory))]
        for current, directories, files in walker:
            directories[:] = sorted(name for name in directories if not name.startswith("."))
            for name in sorted([*directories, *files]):
                if not fnmatch.fnmatchcase(name, pattern):
                    continue
                full = Path(current) / name
                if full.is_symlink() and not _within(full.resolve(), base):
                    continue  # never describe what a symlink points at outside the root
                is_dir = full.is_dir()
                entries.append(
                    {
                        "path": relative(full),
                        "type": "directory" if is_dir else "file",
                        "size": 0 if is_dir else full.stat().st_size,
                    }
                )
                if len(entries) >= _MAX_ENTRIES:
                    return entries
        return entries

    @tool(is_concurrency_safe=lambda args: True)
    def read_file(path: str, offset: int = 0, limit: int = 20_000) -> str:
        """Read a text file (UTF-8, undecodable bytes replaced).

        Args:
            path: File relative to the working directory.
            offset: Character offset to start at.
            limit: Maximum number of characters to return.
        """
        file = inside(path)
        if not file.is_file():
            raise FileNotFoundError(f"{_shown(path)} is not a file")
        return _read_slice(file, max(offset, 0), min(max(limit, 0), _MAX_READ))

    @tool(is_concurrency_safe=lambda args: True)
    def file_info(path: str) -> dict[str, Any]:
        """Size, type and line count of a file or directory.

        Args:
            path: Path relative to the working directory.
        """
        target = inside(path)
        if not target.exists():
            raise FileNotFoundError(f"{_shown(path)} does not exist")
        info: dict[str, Any] = {"path": relative(target), "type": "directory" if target.is_dir() else "file"}
        if target.is_file():
            info["size"], info["lines"] = _size_and_lines(target)
        return info

    return [list_files, read_file, file_info]


def _shown(path: str) -> str:
    # A model may send any string as a path: the message quotes a bounded part of it.
    return clip_text(repr(path), MAX_ECHO_CHARS)


def _read_slice(file: Path, offset: int, limit: int) -> str:
    """Characters ``[offset, offset + limit)`` of the decoded text, decoding no further than that.

    The same text as ``file.read_text(encoding="utf-8", errors="replace")[offset:offset + limit]``
    (universal newlines included): character offsets need the text before them decoded, so the
    skip is read too, but a chunk at a time and dropped.
    """
    with open(file, encoding="utf-8", errors="replace") as stream:
        while offset:
            skipped = len(stream.read(min(offset, _CHUNK)))
            if not skipped:
                return ""
            offset -= skipped
        return stream.read(limit) if limit else ""


def _size_and_lines(file: Path) -> tuple[int, int]:
    """The byte size and line count (a last line without ``\\n`` counts), one chunk at a time."""
    size = lines = 0
    last = b"\n"
    with open(file, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return size, lines + (last != b"\n")


def _split(directory: Path) -> tuple[list[str], list[str]]:
    directories: list[str] = []
    files: list[str] = []
    for entry in os.scandir(directory):
        (directories if entry.is_dir() else files).append(entry.name)
    return directories, files


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents
