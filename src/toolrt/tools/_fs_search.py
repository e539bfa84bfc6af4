"""The ``glob`` and ``grep`` tools: find files by name and lines by regex, capped, with the total.

A search result is useless to a model if it floods the context, and misleading if it is cut without
saying so: both tools return at most ``limit`` items, plus ``total`` (how many there were) and
``truncated``. Both walk the same way: hidden names (a leading ``.``) skipped, symlinks not followed,
each directory's entries in name order, depth first, so results are stable from call to call.
No ignore file (``.gitignore``) is applied: what the model sees does not depend on VCS state.

``grep`` runs ripgrep (``rg``) when it is on PATH and a pure-Python scan otherwise; the two give the
same result (a test runs both). Each file is searched line by line and stops at its first NUL byte
(binary data), as ripgrep does. ripgrep walks by path names, which a concurrent writer could swap
for a symlink, so it is started *inside* the directory fd the workspace opened, and every line it
reports is read again through the workspace before it is returned: ripgrep chooses the candidates,
the confined reader confirms them, and no byte from outside the workspace can reach the model.
A pattern ripgrep's regex engine does not accept (look-around, back-references) runs in Python.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

from toolrt._errors import ToolrtError
from toolrt._json import text_block_content
from toolrt._tool_decorator import tool
from toolrt._tool_definition import PresentedResult, ToolDefinition
from toolrt.cards._views import SearchMatchesView, SearchPathsView
from toolrt.tools._presented_meta import success_meta
from toolrt.tools._workspace import NOT_A_DIRECTORY, Workspace, shown

__all__ = [
    "DEFAULT_GLOB_LIMIT",
    "DEFAULT_GREP_LIMIT",
    "INVALID_PATTERN",
    "MAX_MATCH_CHARS",
    "SEARCH_TIMEOUT",
    "glob_regex",
    "glob_tool",
    "grep_python",
    "grep_ripgrep",
    "grep_tool",
]

INVALID_PATTERN = "INVALID_PATTERN"
SEARCH_TIMEOUT = "SEARCH_TIMEOUT"
DEFAULT_GLOB_LIMIT = 1_000
DEFAULT_GREP_LIMIT = 200
_MAX_LIMIT = 10_000
MAX_MATCH_CHARS = 500
"""Characters of a matching line a result keeps (a minified file's one line is not the context)."""
_RG_TIMEOUT_S = 100.0  # under the default tool deadline (120 s), so the model reads why
_CHUNK = 64 * 1024  # ripgrep's buffer: the unit in which both engines look for binary data

GrepResult = dict[str, Any]


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex over ``/``-separated paths: ``*``, ``?``, ``[...]``, ``{a,b}``, ``**``.

    ``*`` and ``?`` never cross a ``/``; ``**/`` is any number of directories (none included).

    >>> bool(glob_regex("src/**/*.py").match("src/a/b/c.py")), bool(glob_regex("*.py").match("a/b.py"))
    (True, False)
    """
    return re.compile(f"(?s:{_translate(pattern)})\\Z")


def _translate(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:[^/]*/)*")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (close := pattern.find("]", index + 2)) > 0:
            body = pattern[index + 1 : close]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            index = close
        elif char == "{" and (close := pattern.find("}", index)) > 0:
            options = pattern[index + 1 : close].split(",")
            out.append("(?:" + "|".join(_translate(option) for option in options) + ")")
            index = close
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _limit(limit: int) -> int:
    if not 1 <= limit <= _MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {_MAX_LIMIT}, not {limit}")
    return limit


def _base(workspace: Workspace, path: str) -> str:
    canonical, info = workspace.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise ToolrtError(f"path {shown(path)} is not a directory", NOT_A_DIRECTORY)
    return canonical


def _relative(path: str, base: str) -> str:
    return path if base == "." else path[len(base) + 1 :]


# --- glob -----------------------------------------------------------------------------------------


def glob_tool(workspace: Workspace) -> ToolDefinition:
    """The ``glob`` tool over ``workspace`` (concurrency-safe)."""

    @tool(
        name="glob",
        is_concurrency_safe=lambda args: True,
        render=lambda args, value: text_block_content(_render_glob(value)),
        presentation_meta=lambda args, value: value,
        present_result=_present_glob,
    )
    def glob(pattern: str, path: str = ".", limit: int = DEFAULT_GLOB_LIMIT) -> dict[str, Any]:
        """Find files whose path matches a glob, e.g. `**/*.py` or `src/*.{ts,tsx}`.

        Args:
            pattern: Glob matched against paths relative to `path` (`**/` spans directories).
            path: Directory to search, relative to the workspace root.
            limit: Most paths to return (the total is always counted).
        """
        cap = _limit(limit)
        matcher = glob_regex(pattern)
        base = _base(workspace, path)
        paths: list[str] = []
        total = 0
        for entry in workspace.walk(base):
            if entry.kind == "file" and matcher.match(_relative(entry.path, base)):
                total += 1
                if len(paths) < cap:
                    paths.append(entry.path)
        return {"paths": paths, "total": total, "truncated": total > len(paths)}

    return glob


def _render_glob(value: dict[str, Any]) -> str:
    if not value["paths"]:
        return "No files matched."
    text = "\n".join(value["paths"])
    if value["truncated"]:
        text += f"\n[{len(value['paths'])} of {value['total']:,} paths shown; narrow the pattern or path]"
    return text


def _present_glob(args: Any, result: PresentedResult) -> SearchPathsView | None:
    meta = success_meta(result)
    if meta is None:
        return None
    return {
        "card": "search",
        "shape": "paths",
        "title": f"Glob {args['pattern']}",
        "paths": [str(path) for path in meta["paths"]],
        "truncated": bool(meta["truncated"]),
        "total": int(meta["total"]),
    }


# --- grep -----------------------------------------------------------------------------------------


def grep_tool(workspace: Workspace, *, use_ripgrep: bool | None = None) -> ToolDefinition:
    """The ``grep`` tool over ``workspace`` (concurrency-safe).

    ``use_ripgrep``: ``None`` uses ``rg`` when it is on PATH (looked up per call), ``False`` never.
    """

    @tool(
        name="grep",
        is_concurrency_safe=lambda args: True,
        render=lambda args, value: text_block_content(_render_grep(value)),
        presentation_meta=lambda args, value: value,
        present_result=_present_grep,
    )
    def grep(
        pattern: str,
        path: str = ".",
        glob: str | None = None,
        ignore_case: bool = False,
        limit: int = DEFAULT_GREP_LIMIT,
    ) -> dict[str, Any]:
        """Search file contents for a regular expression; matching lines come with their numbers.

        Args:
            pattern: Regular expression searched in each line.
            path: Directory to search, relative to the workspace root.
            glob: Only search files matching this glob (`*.py`: by name at any depth; with a `/`: by
                path; a leading `!` excludes them instead).
            ignore_case: Match case-insensitively.
            limit: Most matching lines to return (the total is always counted).
        """
        rg = shutil.which("rg") if use_ripgrep is not False else None
        if rg is not None:
            found = grep_ripgrep(
                workspace, pattern, path, glob=glob, ignore_case=ignore_case, limit=limit, rg=rg
            )
            if found is not None:
                return found
        return grep_python(workspace, pattern, path, glob=glob, ignore_case=ignore_case, limit=limit)

    return grep


def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as error:
        raise ToolrtError(f"invalid regular expression {shown(pattern)}: {error}", INVALID_PATTERN) from None


def _file_filter(glob: str | None) -> Callable[[str], bool]:
    """ripgrep's ``--glob``: by name without a ``/``, by relative path with one; ``!`` excludes."""
    if glob is None:
        return lambda relative: True
    exclude = glob.startswith("!")
    pattern = glob[1:] if exclude else glob
    matcher = glob_regex(pattern)
    if "/" in pattern:
        return lambda relative: (matcher.match(relative) is None) is exclude
    return lambda relative: (matcher.match(relative.rsplit("/", 1)[-1]) is None) is exclude


def _clip(line: str) -> str:
    if line.endswith("\r"):
        line = line[:-1]
    return line if len(line) <= MAX_MATCH_CHARS else line[:MAX_MATCH_CHARS] + " [… line cut]"


def _lines(fd: int) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of every line, stopping at the first chunk holding a NUL byte (binary)."""
    number = 1
    rest = b""
    while chunk := os.read(fd, _CHUNK):
        if b"\x00" in chunk:
            return
        pieces = (rest + chunk).split(b"\n")
        rest = pieces.pop()
        for piece in pieces:
            yield number, piece.decode("utf-8", errors="replace")
            number += 1
    if rest:
        yield number, rest.decode("utf-8", errors="replace")


def _result(files: dict[str, list[dict[str, Any]]], total: int, engine: str) -> GrepResult:
    shown_count = sum(map(len, files.values()))
    return {
        "files": [{"path": path, "matches": matches} for path, matches in files.items()],
        "total": total,
        "truncated": total > shown_count,
        "engine": engine,
    }


def grep_python(
    workspace: Workspace,
    pattern: str,
    path: str = ".",
    *,
    glob: str | None = None,
    ignore_case: bool = False,
    limit: int = DEFAULT_GREP_LIMIT,
) -> GrepResult:
    """The pure-Python engine: the workspace's confined walk, ``re`` on each line."""
    cap = _limit(limit)
    regex = _compile(pattern, ignore_case)
    wanted = _file_filter(glob)
    files: dict[str, list[dict[str, Any]]] = {}
    total = 0

    def search(fd: int, where: str) -> None:
        nonlocal total
        for number, line in _lines(fd):
            if regex.search(line):
                total += 1
                if total <= cap:
                    files.setdefault(where, []).append({"lineNumber": number, "line": _clip(line)})

    base, info = workspace.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        with workspace.open_file(path) as single:
            search(single.fd, single.path)
        return _result(files, total, "python")
    for entry in workspace.walk(base):
        if entry.kind != "file" or not wanted(_relative(entry.path, base)):
            continue
        opened = entry.open()
        if opened is None:
            continue
        try:
            search(opened.fd, entry.path)
        finally:
            os.close(opened.fd)
    return _result(files, total, "python")


def grep_ripgrep(
    workspace: Workspace,
    pattern: str,
    path: str = ".",
    *,
    glob: str | None = None,
    ignore_case: bool = False,
    limit: int = DEFAULT_GREP_LIMIT,
    rg: str = "rg",
) -> GrepResult | None:
    """The ripgrep engine; ``None`` when ripgrep cannot run this search (the caller falls back).

    ``rg`` starts in the directory the workspace opened (``/proc/self/fd/N``, not a path that could
    be swapped), and each reported line is confirmed through the workspace before it is returned.
    """
    cap = _limit(limit)
    _compile(pattern, ignore_case)  # the same INVALID_PATTERN error as the Python engine
    if not os.path.isdir("/proc/self/fd"):
        return None
    command = [
        rg,
        "--json",
        "--sort=path",
        "--no-config",
        "--no-ignore",
        "--no-messages",
        "--regexp",
        pattern,
    ]
    if ignore_case:
        command.append("--ignore-case")
    if glob is not None:
        command += ["--glob", glob]
    try:
        with workspace.open_directory(path) as (fd, base):
            found = _run_rg([*command, "--", "."], fd, cap)
    except ToolrtError as error:
        if error.code == NOT_A_DIRECTORY:
            return None  # one file: the Python engine searches it
        raise
    if found is None:
        return None
    candidates, total = found
    prefix = "" if base == "." else base + "/"
    files: dict[str, list[dict[str, Any]]] = {}
    for relative, matches in candidates.items():
        confirmed = _confirm(workspace, prefix + relative, matches)
        total -= len(matches) - len(confirmed)
        if confirmed:
            files[prefix + relative] = confirmed
    return _result(files, total, "ripgrep")


def _run_rg(command: list[str], fd: int, cap: int) -> tuple[dict[str, list[dict[str, Any]]], int] | None:
    process = subprocess.Popen(
        command,
        cwd=f"/proc/self/fd/{fd}",
        pass_fds=(fd,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        process.kill()

    timer = threading.Timer(_RG_TIMEOUT_S, expire)
    timer.start()
    candidates: dict[str, list[dict[str, Any]]] = {}
    kept = total = 0
    try:
        assert process.stdout is not None and process.stderr is not None
        for raw in process.stdout:
            message = json.loads(raw)
            if message.get("type") != "match":
                continue
            data = message["data"]
            name = data["path"].get("text")
            if name is None:
                continue  # a name that is not UTF-8 has no JSON form: the Python walk skips it too
            total += 1
            if kept < cap:
                kept += 1
                line = _text(data["lines"])
                candidates.setdefault(name.removeprefix("./"), []).append(
                    {"lineNumber": int(data["line_number"]), "line": _clip(line.removesuffix("\n"))}
                )
        errors = process.stderr.read().decode("utf-8", errors="replace")
        code = process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
    if expired.is_set():
        raise ToolrtError(
            f"grep took longer than {_RG_TIMEOUT_S:.0f} s; narrow the path or glob", SEARCH_TIMEOUT
        )
    if code not in (0, 1):
        if "regex" in errors or "pattern" in errors:
            return None  # a pattern Python's re accepts and ripgrep's engine does not
        raise ToolrtError(f"ripgrep failed: {errors.strip()[:1000]}", "SEARCH_FAILED")
    return candidates, total


def _text(field: dict[str, Any]) -> str:
    if "text" in field:
        return str(field["text"])
    return base64.b64decode(field["bytes"]).decode("utf-8", errors="replace")


def _confirm(workspace: Workspace, path: str, matches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The matches whose line reads the same through the confined workspace (normally all)."""
    wanted = {match["lineNumber"]: match for match in matches}
    last = max(wanted)
    confirmed: list[dict[str, Any]] = []
    try:
        with workspace.open_file(path) as opened:
            for number, line in _lines(opened.fd):
                match = wanted.get(number)
                if match is not None and match["line"] == _clip(line):
                    confirmed.append(match)
                if number >= last:
                    break
    except ToolrtError:
        return []  # it left the workspace (or vanished) since ripgrep read it
    return confirmed


def _render_grep(value: GrepResult) -> str:
    if not value["files"]:
        return "No matches."
    lines = [
        f"{entry['path']}:{match['lineNumber']}:{match['line']}"
        for entry in value["files"]
        for match in entry["matches"]
    ]
    if value["truncated"]:
        lines.append(
            f"[{len(lines)} of {value['total']:,} matching lines shown; narrow the pattern, path or glob]"
        )
    return "\n".join(lines)


def _present_grep(args: Any, result: PresentedResult) -> SearchMatchesView | None:
    meta = success_meta(result)
    if meta is None:
        return None
    return {
        "card": "search",
        "shape": "matches",
        "title": f"Grep {args['pattern']}",
        "files": [
            {
                "path": str(entry["path"]),
                "matches": [
                    {"lineNumber": int(match["lineNumber"]), "line": str(match["line"])}
                    for match in entry["matches"]
                ],
            }
            for entry in meta["files"]
        ],
        "truncated": bool(meta["truncated"]),
        "total": int(meta["total"]),
    }
