"""The **file6** tool set: ``read``, ``write``, ``edit``, ``glob``, ``grep`` and ``bash``, over a workspace.

``bash`` runs real commands in the workspace, so the monorepo's failing tests really fail.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from typing import Any

from _fixtures.monorepo import Workspace, glob_match
from _fixtures.schemas import NULLABLE, A, B, I, JsonObject, O, S, define
from toolrt import ToolDefinition, text_content

_READ_DESCRIPTION = (
    "Read a text file from the workspace. Returns the requested lines with their 1-based line numbers.\n\n"
    "- `path` is relative to the workspace root (absolute paths inside the workspace also work).\n"
    "- By default up to 2000 lines are returned from the start of the file; pass `offset` and `limit` "
    "to page through longer files. Lines longer than 2000 characters are truncated.\n"
    "- Read a file before editing it. Reading a directory fails: use `glob` to list files.\n"
    "- Call this tool several times in one response to read several files in parallel."
)
_WRITE_DESCRIPTION = (
    "Create a file or overwrite an existing one with `content`. Parent directories are created as needed.\n\n"
    "- Prefer `edit` for changes to an existing file: it sends only the changed text.\n"
    "- An existing file must have been read in this conversation before it is overwritten.\n"
    "- Never create documentation files unless the user asks for them."
)
_EDIT_DESCRIPTION = (
    "Replace exact text in a file. `old_string` must match the file byte for byte, including "
    "indentation, and must be unique in the file unless `replace_all` is true; otherwise the edit "
    "fails and nothing is written.\n\n"
    "- Read the file first; copy `old_string` from the read output without the line-number prefix.\n"
    "- Use `replace_all` to rename an identifier throughout the file."
)
_GLOB_DESCRIPTION = (
    "Find files by name with a glob pattern such as `**/*.py` or `packages/*/src/**/*.{ts,tsx}`. "
    "Returns matching paths relative to the workspace root, sorted by path; at most 100 paths are "
    "returned and `truncated` says whether more matched. Use it instead of `find` or `ls` in `bash`."
)
_GREP_DESCRIPTION = (
    "Search file contents with a regular expression (ripgrep syntax). Use it instead of running "
    "`grep` or `rg` in `bash`.\n\n"
    "- `output_mode`: `files_with_matches` (default) lists the files that match; `content` shows the "
    "matching lines as `path:line:text`; `count` shows the number of matching lines per file.\n"
    "- Narrow the search with `path` (a file or directory) and `glob` (e.g. `*.py`, `**/*.{ts,tsx}`).\n"
    "- `head_limit` keeps the first N output entries. Patterns are case-sensitive unless `ignore_case` "
    "is set."
)
_BASH_DESCRIPTION = (
    "Run a shell command in a persistent bash session rooted at the workspace and return its output.\n\n"
    "Use it for builds, tests, git and other programs. Do NOT use it to search or read files: use "
    "`grep`, `glob` and `read`, which are faster and safer.\n\n"
    "- `command`: the command line. Quote paths that contain spaces. Chain dependent commands with "
    "`&&`; independent commands may run as separate calls in parallel.\n"
    "- `description`: 5-10 words saying what the command does (shown to the user).\n"
    "- `timeout_ms`: kill the command after this many milliseconds (default 120000, max 600000).\n"
    "- `workdir`: run in this directory (relative to the workspace root) instead of the root.\n"
    "- `run_in_background`: start the command and return a job id at once; read its output later.\n"
    "- Output longer than 30000 characters is truncated in the middle. The exit code is reported "
    "when it is not zero.\n"
    "- Never run interactive commands (editors, pagers, `git rebase -i`)."
)

_LINE = O({"number": I("1-based line number."), "text": S()}, ["number", "text"])
_READ_OUTPUT = O(
    {
        "path": S("The file read, relative to the workspace root."),
        "offset": I("Line number of the first returned line."),
        "lines": A(_LINE),
        "totalLines": I("Lines in the whole file."),
    },
    ["path", "offset", "lines", "totalLines"],
)
_GREP_OUTPUT = O(
    {
        "mode": S(enum=["content", "files_with_matches", "count"]),
        "matches": A(O({"path": S(), "line": I(), "text": S()}, ["path", "line", "text"]), "Mode `content`."),
        "files": A(S(), "Mode `files_with_matches`."),
        "counts": A(O({"path": S(), "count": I()}, ["path", "count"]), "Mode `count`."),
        "truncated": B("True when `head_limit` cut the output."),
    },
    ["mode", "truncated"],
)
_BASH_OUTPUT = O(
    {
        "kind": S(enum=["foreground", "background"]),
        "exitCode": NULLABLE(I(), "Null for a background job or a killed command."),
        "stdout": S(),
        "stderr": S(),
        "jobId": S("Background jobs only."),
    },
    ["kind", "exitCode", "stdout", "stderr"],
)


def file_tools(workspace: Workspace) -> list[ToolDefinition]:
    """The six reference file/shell tools, working on ``workspace``."""

    async def read(args: Any, ctx: Any) -> JsonObject:
        target = workspace.resolve(args["path"])
        lines = target.read_text().splitlines()
        offset = args.get("offset", 1)
        chosen = lines[offset - 1 : offset - 1 + args.get("limit", 2000)]
        return {
            "path": workspace.relative(target),
            "offset": offset,
            "lines": [{"number": offset + k, "text": text[:2000]} for k, text in enumerate(chosen)],
            "totalLines": len(lines),
        }

    def render_read(args: Any, value: Any) -> Any:
        return text_content("\n".join(f"{line['number']:>6}\t{line['text']}" for line in value["lines"]))

    async def write(args: Any, ctx: Any) -> JsonObject:
        target = workspace.resolve(args["path"])
        before = target.read_text() if target.exists() else None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(args["content"])
        operation = "create" if before is None else "update"
        return {
            "path": workspace.relative(target),
            "operation": operation,
            "lines": len(args["content"].splitlines()),
        }

    async def edit(args: Any, ctx: Any) -> JsonObject:
        target = workspace.resolve(args["path"])
        text = target.read_text()
        count = text.count(args["old_string"])
        if count == 0 or (count > 1 and not args.get("replace_all")):
            raise ValueError(f"old_string matches {count} times in {args['path']}")
        target.write_text(text.replace(args["old_string"], args["new_string"]))
        return {"path": workspace.relative(target), "replacements": count}

    async def glob(args: Any, ctx: Any) -> JsonObject:
        base = workspace.resolve(args.get("path"))
        matched = [
            workspace.relative(p)
            for p in workspace.walk(base)
            if glob_match(args["pattern"], p.relative_to(base).as_posix())
        ]
        return {"files": matched[:100], "truncated": len(matched) > 100}

    def render_glob(args: Any, value: Any) -> Any:
        text = "\n".join(value["files"]) or "No files found"
        return text_content(
            text + ("\n(Results are truncated. Use a narrower pattern.)" if value["truncated"] else "")
        )

    async def grep(args: Any, ctx: Any) -> JsonObject:
        base = workspace.resolve(args.get("path"))
        regex = re.compile(args["pattern"], re.IGNORECASE if args.get("ignore_case") else 0)
        mode = args.get("output_mode", "files_with_matches")
        matches: list[JsonObject] = []
        for path in workspace.walk(base):
            relative = path.relative_to(base).as_posix() if base.is_dir() else path.name
            if (
                args.get("glob")
                and not glob_match(args["glob"], relative)
                and not glob_match(args["glob"], path.name)
            ):
                continue
            for number, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if regex.search(text):
                    matches.append({"path": workspace.relative(path), "line": number, "text": text})
        limit = args.get("head_limit")
        value: JsonObject = {"mode": mode, "truncated": False}
        if mode == "content":
            entries: list[Any] = matches
            key = "matches"
        elif mode == "count":
            counts: dict[str, int] = defaultdict(int)
            for match in matches:
                counts[match["path"]] += 1
            entries, key = [{"path": p, "count": c} for p, c in counts.items()], "counts"
        else:
            entries, key = list(dict.fromkeys(m["path"] for m in matches)), "files"
        if limit is not None and len(entries) > limit:
            entries, value["truncated"] = entries[:limit], True
        value[key] = entries
        return value

    def render_grep(args: Any, value: Any) -> Any:
        if value["mode"] == "content":
            lines = [f"{m['path']}:{m['line']}:{m['text']}" for m in value["matches"]]
        elif value["mode"] == "count":
            lines = [f"{c['path']}:{c['count']}" for c in value["counts"]]
        else:
            lines = list(value["files"])
        return text_content("\n".join(lines) if lines else "No matches found")

    async def bash(args: Any, ctx: Any) -> JsonObject:
        done = subprocess.run(
            ["bash", "-c", args["command"]],
            cwd=workspace.resolve(args.get("workdir")),
            capture_output=True,
            text=True,
            timeout=args.get("timeout_ms", 120_000) / 1000,
            check=False,
        )
        return {
            "kind": "foreground",
            "exitCode": done.returncode,
            "stdout": done.stdout,
            "stderr": done.stderr,
        }

    def render_bash(args: Any, value: Any) -> Any:
        text = "\n".join(part.rstrip("\n") for part in (value["stdout"], value["stderr"]) if part)
        if value["exitCode"]:
            text += f"\n[exit code {value['exitCode']}]"
        return text_content(text or "(no output)")

    return [
        define(
            "read",
            _READ_DESCRIPTION,
            O(
                {
                    "path": S("Path of the file to read, relative to the workspace root."),
                    "offset": I("1-based line number to start reading from.", default=1),
                    "limit": I("Maximum number of lines to return.", default=2000),
                },
                ["path"],
            ),
            _READ_OUTPUT,
            read,
            render=render_read,
        ),
        define(
            "write",
            _WRITE_DESCRIPTION,
            O(
                {"path": S("Path of the file to write."), "content": S("The complete new file content.")},
                ["path", "content"],
            ),
            O(
                {"path": S(), "operation": S(enum=["create", "update"]), "lines": I("Lines written.")},
                ["path", "operation", "lines"],
            ),
            write,
            read_only=False,
        ),
        define(
            "edit",
            _EDIT_DESCRIPTION,
            O(
                {
                    "path": S("Path of the file to edit."),
                    "old_string": S("The exact text to replace."),
                    "new_string": S("The replacement text (must differ from old_string)."),
                    "replace_all": B("Replace every occurrence instead of exactly one.", default=False),
                },
                ["path", "old_string", "new_string"],
            ),
            O({"path": S(), "replacements": I()}, ["path", "replacements"]),
            edit,
            read_only=False,
        ),
        define(
            "glob",
            _GLOB_DESCRIPTION,
            O(
                {
                    "pattern": S("The glob pattern, matched against paths relative to `path`."),
                    "path": S("Directory to search in; defaults to the workspace root."),
                },
                ["pattern"],
            ),
            O({"files": A(S()), "truncated": B()}, ["files", "truncated"]),
            glob,
            render=render_glob,
        ),
        define(
            "grep",
            _GREP_DESCRIPTION,
            O(
                {
                    "pattern": S("Regular expression to search for."),
                    "path": S("File or directory to search; defaults to the workspace root."),
                    "glob": S("Only search files whose path matches this glob."),
                    "output_mode": S(
                        "What to return.",
                        enum=["content", "files_with_matches", "count"],
                        default="files_with_matches",
                    ),
                    "ignore_case": B("Case-insensitive search.", default=False),
                    "head_limit": I("Return only the first N entries."),
                },
                ["pattern"],
            ),
            _GREP_OUTPUT,
            grep,
            render=render_grep,
        ),
        define(
            "bash",
            _BASH_DESCRIPTION,
            O(
                {
                    "command": S("The command to run."),
                    "description": S("What the command does, in 5-10 words."),
                    "timeout_ms": I("Timeout in milliseconds (max 600000).", default=120000),
                    "workdir": S("Working directory relative to the workspace root."),
                    "run_in_background": B("Run as a background job and return its id.", default=False),
                },
                ["command", "description"],
            ),
            _BASH_OUTPUT,
            bash,
            render=render_bash,
            read_only=False,
        ),
    ]
