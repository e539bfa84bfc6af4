"""Small built-in read-only file tools: ``list_files``, ``read_file``, ``file_info``.

They serve the CLI and the demo beside the reference fs tools (:func:`toolrt.tools.fs_tools`), and
share their confinement: every path goes through a :class:`~toolrt.tools._workspace.Workspace`, whose
fd-based walk refuses ``..``, absolute paths elsewhere and symlinks that point out (also one swapped
in mid-call), because a Code Mode sandbox protects the process, not the tools: tools run on the host
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
import stat
from collections.abc import Iterator
from typing import Any

from toolrt._errors import OutsideRootError, ToolrtError
from toolrt._tool_decorator import tool
from toolrt._tool_definition import ToolDefinition
from toolrt.tools._workspace import NOT_A_DIRECTORY, Entry, Workspace, shown

__all__ = ["OutsideRootError", "file_tools"]

_MAX_ENTRIES = 2_000
_MAX_READ = 200_000
_CHUNK = 1 << 20
"""Characters (read_file) or bytes (file_info) taken per read: the tools' memory, whatever the file."""


def file_tools(root: str | os.PathLike[str]) -> list[ToolDefinition]:
    """The three read-only tools, confined to ``root``."""
    workspace = Workspace(root)

    @tool(is_concurrency_safe=lambda args: True)
    def list_files(path: str = ".", pattern: str = "*", recursive: bool = False) -> list[dict[str, Any]]:
        """List files and directories under a directory.

        Args:
            path: Directory relative to the working directory.
            pattern: Shell-style pattern the names must match, e.g. ``*.py``.
            recursive: Descend into subdirectories (hidden directories are skipped).
        """
        if not stat.S_ISDIR(workspace.stat(path)[1].st_mode):
            raise ToolrtError(f"{shown(path)} is not a directory", NOT_A_DIRECTORY)
        entries: list[dict[str, Any]] = []
        for entry, kind, size in _listing(workspace, path, recursive=recursive):
            if fnmatch.fnmatchcase(entry.name, pattern):
                entries.append({"path": entry.path, "type": kind, "size": size})
                if len(entries) >= _MAX_ENTRIES:
                    break
        return entries

    @tool(is_concurrency_safe=lambda args: True)
    def read_file(path: str, offset: int = 0, limit: int = 20_000) -> str:
        """Read a text file (UTF-8, undecodable bytes replaced).

        Args:
            path: File relative to the working directory.
            offset: Character offset to start at.
            limit: Maximum number of characters to return.
        """
        with workspace.open_file(path) as opened:
            return _read_slice(opened.fd, max(offset, 0), min(max(limit, 0), _MAX_READ))

    @tool(is_concurrency_safe=lambda args: True)
    def file_info(path: str) -> dict[str, Any]:
        """Size, type and line count of a file or directory.

        Args:
            path: Path relative to the working directory.
        """
        canonical, info = workspace.stat(path)
        if stat.S_ISDIR(info.st_mode):
            return {"path": canonical, "type": "directory"}
        with workspace.open_file(path) as opened:
            size, lines = _size_and_lines(opened.fd)
        return {"path": opened.path, "type": "file", "size": size, "lines": lines}

    return [list_files, read_file, file_info]


def _listing(workspace: Workspace, path: str, *, recursive: bool) -> Iterator[tuple[Entry, str, int]]:
    """Each directory's entries together, then its subdirectories' (``os.walk`` order, top down).

    Hidden directories are neither listed nor entered; a symlink is described as what it points
    at, and only if that is inside the root (never describe what lies outside). Symlinked
    directories are listed but not entered.
    """
    subdirectories: list[str] = []
    for entry in workspace.walk(path, recursive=False, hidden=True):
        kind, size = entry.kind, 0
        if kind == "symlink":
            try:
                info = workspace.stat(entry.path)[1]
            except ToolrtError:
                continue  # outside the root, or dangling
            kind, size = ("dir", 0) if stat.S_ISDIR(info.st_mode) else ("file", info.st_size)
        elif kind != "dir":
            size = os.stat(entry.name, dir_fd=entry.dir_fd, follow_symlinks=False).st_size
        if kind == "dir" and entry.name.startswith("."):
            continue
        if kind == "dir" and entry.kind == "dir":
            subdirectories.append(entry.path)
        yield entry, "directory" if kind == "dir" else "file", size
    if recursive:
        for subdirectory in subdirectories:
            yield from _listing(workspace, subdirectory, recursive=True)


def _read_slice(fd: int, offset: int, limit: int) -> str:
    """Characters ``[offset, offset + limit)`` of the decoded text, decoding no further than that.

    The same text as ``file.read_text(encoding="utf-8", errors="replace")[offset:offset + limit]``
    (universal newlines included): character offsets need the text before them decoded, so the
    skip is read too, but a chunk at a time and dropped.
    """
    with open(fd, encoding="utf-8", errors="replace", closefd=False) as stream:
        while offset:
            skipped = len(stream.read(min(offset, _CHUNK)))
            if not skipped:
                return ""
            offset -= skipped
        return stream.read(limit) if limit else ""


def _size_and_lines(fd: int) -> tuple[int, int]:
    """The byte size and line count (a last line without ``\\n`` counts), one chunk at a time."""
    size = lines = 0
    last = b"\n"
    while chunk := os.read(fd, _CHUNK):
        size += len(chunk)
        lines += chunk.count(b"\n")
        last = chunk[-1:]
    return size, lines + (last != b"\n")
