"""Fixtures for ``tokens.py``: three tool sets, deterministic synthetic data, and scripted tasks.

Nothing here is imported by the test suite. Every tool is a real :class:`toolrt.ToolDefinition`
(raw JSON-Schema parameters, a typed output schema, a ``render`` for the model-facing text), so the
native transcript shows what toolrt's pipeline renders and Code Mode programs get the canonical
values through toolrt's real ``run_code`` bridge.

* **file6** — ``read``, ``write``, ``edit``, ``glob``, ``grep``, ``bash`` over a synthetic monorepo written
  to ``<tmp>/toolrt-bench/acme`` (``bash`` runs real commands there; the tests really fail).
* **mcp40** — 40 GitHub / Jira / Slack / shop / CRM tools with nested object parameters. The five the
  tasks use have working bodies over synthetic data (200 orders, 60 customers, 20 pull requests with
  files and check runs); the rest exist for their schemas only.
* **mcp150** — mcp40 plus 110 tools generated deterministically for eleven more SaaS services.

A :class:`Task` scripts the best trajectory in each mode: ``native(session)`` issues tool calls
batch by batch (parallel calls in one assistant message whenever they are independent) and
``program`` is the Python body one ``run_code`` call runs. ``expected`` is computed from the data
directly; the Code Mode output must equal it (checked), and the final answer both modes give is
written from it.
"""

from __future__ import annotations

import contextlib
import random
import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from toolrt import ToolDefinition, ToolOutput, json_schema_violations, render_value_as_text, text_content

__all__ = ["TASKS", "Task", "Workspace", "build_tool_set", "file_tools", "mcp_tools"]

JsonObject = dict[str, Any]

# --- JSON-Schema builders (the toolrt subset: no minimum/format/pattern/anyOf) --------------------------


def _node(kind: str, description: str | None, **extra: Any) -> JsonObject:
    node: JsonObject = {"type": kind}
    if description:
        node["description"] = description
    node.update({key: value for key, value in extra.items() if value is not None})
    return node


def S(
    description: str | None = None, *, enum: Sequence[str] | None = None, default: Any = None
) -> JsonObject:
    return _node("string", description, enum=list(enum) if enum else None, default=default)


def I(description: str | None = None, *, default: Any = None) -> JsonObject:  # noqa: E743
    return _node("integer", description, default=default)


def N(description: str | None = None) -> JsonObject:
    return _node("number", description)


def B(description: str | None = None, *, default: Any = None) -> JsonObject:
    return _node("boolean", description, default=default)


def A(items: JsonObject, description: str | None = None) -> JsonObject:
    return _node("array", description, items=items)


def O(  # noqa: E743
    properties: Mapping[str, JsonObject],
    required: Sequence[str] = (),
    description: str | None = None,
    *,
    closed: bool = True,
) -> JsonObject:
    node = _node("object", description, properties=dict(properties))
    if required:
        node["required"] = list(required)
    if closed:
        node["additionalProperties"] = False
    return node


def NULLABLE(schema: JsonObject, description: str | None = None) -> JsonObject:
    node: JsonObject = {"oneOf": [schema, {"type": "null"}]}
    if description:
        node["description"] = description
    return node


ToolBody = Callable[[Any, Any], Awaitable[Any]]


async def _not_in_benchmark(args: Any, ctx: Any) -> Any:
    raise RuntimeError("this tool exists for its schema only; no benchmark task calls it")


def define(
    name: str,
    description: str,
    parameters: JsonObject,
    output: JsonObject,
    execute: ToolBody = _not_in_benchmark,
    *,
    render: Callable[[Any, Any], Any] = render_value_as_text,
    read_only: bool = True,
) -> ToolDefinition:
    """A raw definition; fails loudly when a schema leaves toolrt's subset (the SDK would say ``Any``)."""
    for where, schema in (("parameters", parameters), ("output", output)):
        violations = json_schema_violations(schema)
        if violations:
            raise AssertionError(f"{name} {where}: {violations}")
    return ToolDefinition(
        name=name,
        description=description,
        parameters=parameters,
        output=ToolOutput(schema=output, render=render),
        execute=execute,
        is_concurrency_safe=(lambda args: True) if read_only else None,
        run_inline=True,
    )


# --- the synthetic monorepo -----------------------------------------------------------------------------

PACKAGES = ("auth", "billing", "catalog", "cli", "core", "notify", "search", "storage")
_NOUNS = (  # noqa: SIM905
    "session token invoice ledger account cart order price tax rate quota cache index query "
    "shard bucket blob event webhook user role policy schedule report export import batch retry"
).split()
_VERBS = (  # noqa: SIM905
    "load save parse build resolve merge apply render fetch sync validate compute flush emit"
).split()
_TODO_NOTES = (
    "handle pagination past the first page",
    "remove once the v1 endpoint is retired",
    "make the retry budget configurable",
    "this double-counts partial refunds",
    "add a metric for cache misses",
    "support timezone-aware timestamps",
    "validate the signature before parsing",
    "batch these writes",
    "drop the legacy fallback",
    "log the request id",
)
APP_MODULES = (
    "pricing",
    "invoices",
    "tax",
    "shipping",
    "inventory",
    "coupons",
    "currency",
    "receipts",
    "loyalty",
    "returns",
)


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"


def _python_source(rng: random.Random, functions: int, todo_rate: float) -> str:
    lines = ['"""Generated module for the token benchmark."""', "", "from __future__ import annotations", ""]
    lines.append(f"import {rng.choice(['json', 'logging', 'time', 'hashlib', 'itertools'])}")
    lines.append("")
    for _ in range(functions):
        name, arg = _ident(rng), rng.choice(_NOUNS)
        lines += ["", f"def {name}({arg}, *, strict: bool = False):"]
        lines.append(f'    """{name.replace("_", " ").capitalize()} for the given {arg}."""')
        for _ in range(rng.randint(4, 22)):
            roll = rng.random()
            var = rng.choice(_NOUNS)
            if roll < todo_rate:
                lines.append(f"    # TODO: {rng.choice(_TODO_NOTES)}")
            elif roll < 0.35:
                lines.append(f"    if {var} is None and strict:")
                lines.append(f'        raise ValueError("missing {var} for {name}")')
            elif roll < 0.6:
                lines.append(f"    {var} = {_ident(rng)}({arg}, limit={rng.randint(1, 500)})")
            elif roll < 0.8:
                lines.append(f"    for item in {var}s or ():")
                lines.append(f"        {arg} = merge_{rng.choice(_NOUNS)}({arg}, item)")
            else:
                lines.append(
                    f"    # {var} is {rng.choice(['cached', 'optional', 'validated upstream'])} here"
                )
        lines.append(f"    return {arg}")
    return "\n".join(lines) + "\n"


def _typescript_source(rng: random.Random, functions: int, todo_rate: float) -> str:
    lines = [f"import {{ {rng.choice(_NOUNS)}Client }} from './client';", ""]
    for _ in range(functions):
        name = _ident(rng).replace("_", "")
        lines.append(f"export async function {name}(input: Record<string, unknown>): Promise<number> {{")
        for _ in range(rng.randint(3, 14)):
            roll = rng.random()
            if roll < todo_rate:
                lines.append(f"  // TODO: {rng.choice(_TODO_NOTES)}")
            elif roll < 0.5:
                lines.append(
                    f"  const {rng.choice(_NOUNS)} = await fetch{rng.choice(_NOUNS).title()}(input);"
                )
            else:
                lines.append(f"  if (!input.{rng.choice(_NOUNS)}) return {rng.randint(0, 9)};")
        lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def _app_and_tests(rng: random.Random) -> dict[str, str]:
    """A real, importable ``app`` package and a ``unittest`` suite in which seven tests fail."""
    files: dict[str, str] = {"app/__init__.py": '"""Synthetic shop backend."""\n'}
    tests: dict[str, list[str]] = {}
    failing = {(1, 2), (1, 4), (3, 0), (4, 3), (6, 1), (8, 2), (8, 5)}  # (module index, test index)
    for index, module in enumerate(APP_MODULES):
        functions = []
        body = [f'"""{module.capitalize()} rules."""', "", "from __future__ import annotations", ""]
        if index % 3 == 1:
            body += ["from app.currency import round_cents", ""]
        for k in range(rng.randint(4, 6)):
            name = f"{rng.choice(_VERBS)}_{module}_{rng.choice(_NOUNS)}" if k else "round_cents"
            if module != "currency" and k == 0:
                name = f"compute_{module}_total"
            scale, offset = rng.randint(2, 9), rng.randint(0, 40)
            body += [
                "",
                f"def {name}(amount: float) -> float:",
                f'    """Apply the {module} rule to ``amount`` (scale {scale}, offset {offset})."""',
                f"    return round(amount * {scale} / 10 + {offset}, 2)",
            ]
            functions.append((name, scale, offset))
        files[f"app/{module}.py"] = "\n".join(body) + "\n"
        names = ", ".join(name for name, _, _ in functions)
        head = [
            f'"""Tests for app.{module}."""',
            "",
            "import unittest",
            "",
            f"from app.{module} import {names}",
        ]
        if index % 2 == 0:
            head.append("from app.currency import round_cents as _round")
        head += ["", "", f"class {module.capitalize()}Tests(unittest.TestCase):"]
        for t in range(rng.randint(5, 8)):
            name, scale, offset = functions[t % len(functions)]
            amount = rng.randint(1, 900)
            expected = round(amount * scale / 10 + offset, 2)
            if (index, t) in failing:
                expected = round(expected + rng.choice([0.01, 1, 10, -5]), 2)
            head += [
                f"    def test_{name}_{t}(self):",
                f"        self.assertEqual({name}({amount}), {expected})",
                "",
            ]
        tests[f"tests/test_{module}.py"] = head
    for path, lines in tests.items():
        files[path] = "\n".join(lines).rstrip() + '\n\n\nif __name__ == "__main__":\n    unittest.main()\n'
    files["tests/__init__.py"] = ""
    return files


def workspace_files(seed: int = 7) -> dict[str, str]:
    """Every file of the synthetic monorepo, by relative path (deterministic for ``seed``)."""
    rng = random.Random(seed)
    files: dict[str, str] = {}
    for package in PACKAGES:
        todo_rate = rng.choice([0.02, 0.04, 0.06, 0.1])
        for n in range(rng.randint(9, 20)):
            role = rng.choice(["store", "service", "adapter", "client", "utils", "model"])
            stem = f"{rng.choice(_NOUNS)}_{role}"
            big = rng.random() < 0.08
            if rng.random() < 0.75:
                path = f"packages/{package}/src/{package}/{stem}_{n}.py"
                files[path] = _python_source(
                    rng, rng.randint(30, 60) if big else rng.randint(2, 12), todo_rate
                )
            else:
                path = f"packages/{package}/web/{stem}_{n}.ts"
                files[path] = _typescript_source(
                    rng, rng.randint(40, 70) if big else rng.randint(2, 10), todo_rate
                )
        files[f"packages/{package}/README.md"] = f"# {package}\n\nThe {package} package. TODO: write docs.\n"
    files.update(_app_and_tests(rng))
    files["README.md"] = "# acme monorepo\n\nRun `python3 -m unittest discover -s tests` from the root.\n"
    return files


class Workspace:
    """The synthetic monorepo on disk, the root of every file tool.

    It lives at a FIXED path (``<tmp>/toolrt-bench/acme``, recreated on every run) because absolute
    paths reach the model (tracebacks in test output), and a random directory name would make the
    token counts vary from run to run.
    """

    def __init__(self, files: Mapping[str, str]) -> None:
        self.root = Path(tempfile.gettempdir()) / "toolrt-bench" / "acme"
        shutil.rmtree(self.root, ignore_errors=True)
        for relative, text in files.items():
            target = self.root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.root.parent.rmdir()

    def resolve(self, path: str | None) -> Path:
        target = (self.root / (path or ".")).resolve()
        if self.root.resolve() not in (target, *target.parents):
            raise ValueError(f"path escapes the workspace: {path}")
        return target

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root.resolve()).as_posix()

    def walk(self, base: Path) -> Iterator[Path]:
        if base.is_file():
            yield base
            return
        yield from sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _glob_match(pattern: str, relative: str) -> bool:
    """``**`` spans directories, ``*`` does not, ``{a,b}`` alternates (ripgrep/glob semantics)."""
    regex, i = "", 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            regex, i = regex + "(?:.*/)?", i + 3
            continue
        if pattern.startswith("**", i):
            regex, i = regex + ".*", i + 2
            continue
        if char == "*":
            regex += "[^/]*"
        elif char == "?":
            regex += "[^/]"
        elif char == "{":
            end = pattern.index("}", i)
            regex += "(?:" + "|".join(re.escape(part) for part in pattern[i + 1 : end].split(",")) + ")"
            i = end
        else:
            regex += re.escape(char)
        i += 1
    return re.fullmatch(regex, relative) is not None


# --- file6: read / write / edit / glob / grep / bash ----------------------------------------------------

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
            if _glob_match(args["pattern"], p.relative_to(base).as_posix())
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
                and not _glob_match(args["glob"], relative)
                and not _glob_match(args["glob"], path.name)
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


# --- synthetic business data ----------------------------------------------------------------------------

_FIRST = (  # noqa: SIM905
    "Ada Ben Chloe Dev Elena Farid Grace Hiro Ines Jonas Kira Liam Mona Nils Omar Priya Quinn Rosa Sam Tara"
).split()
_LAST = (  # noqa: SIM905
    "Okafor Schmidt Nakamura Rossi Dubois Kowalski Silva Haddad Jensen Murphy Novak Garcia Chen Patel"
).split()
_COMPANY_A = (  # noqa: SIM905
    "Globex Initech Umbrella Hooli Vandelay Stark Wayne Tyrell Soylent Cyberdyne Wonka Acme"
).split()
_COMPANY_B = ("GmbH", "Ltd", "Inc", "SAS", "BV", "AB", "LLC")
_COUNTRIES = ("US", "DE", "GB", "FR", "NL", "SE", "CA", "JP")
_CITIES = {
    "US": "Austin",
    "DE": "Berlin",
    "GB": "Leeds",
    "FR": "Lyon",
    "NL": "Utrecht",
    "SE": "Malmö",
    "CA": "Toronto",
    "JP": "Osaka",
}
_PRODUCTS = [
    (f"SKU-{1000 + k}", title, price)
    for k, (title, price) in enumerate(
        [
            ("Ergonomic Desk Lamp", 49.0),
            ("Standing Desk Frame", 389.0),
            ("Walnut Desktop 160x80", 219.0),
            ("Monitor Arm, Dual", 129.0),
            ("Cable Tray", 24.5),
            ("Mesh Office Chair", 459.0),
            ("Chair Mat, Hard Floor", 39.9),
            ("Acoustic Panel 4-pack", 89.0),
            ("USB-C Dock 12-in-1", 179.0),
            ("Wireless Keyboard", 99.0),
            ("Vertical Mouse", 59.0),
            ("Laptop Stand", 45.0),
            ("Desk Drawer Unit", 149.0),
            ("Footrest", 35.0),
            ("Whiteboard 120x90", 119.0),
            ("LED Light Bar", 69.0),
        ]
    )
]
_MANAGERS = [
    {"id": f"am_{k:02d}", "name": name, "email": f"{name.split()[0].lower()}@acme-sales.example"}
    for k, name in enumerate(
        ["Priya Patel", "Jonas Schmidt", "Rosa Garcia", "Hiro Nakamura", "Mona Haddad"], 1
    )
]
_REFUND_REASONS = (
    "damaged_in_transit",
    "wrong_item",
    "customer_changed_mind",
    "late_delivery",
    "price_adjustment",
)


def _money(cents: int) -> float:
    return round(cents / 100, 2)


def _customers(rng: random.Random) -> list[JsonObject]:
    customers = []
    for k in range(1, 61):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        country = rng.choice(_COUNTRIES)
        company = f"{rng.choice(_COMPANY_A)} {rng.choice(_COMPANY_B)}"
        customers.append(
            {
                "id": f"cus_{k:04d}",
                "name": f"{first} {last}",
                "email": f"{first.lower()}.{last.lower()}{k}@{company.split(maxsplit=1)[0].lower()}.example",
                "company": company,
                "segment": rng.choices(["smb", "mid_market", "enterprise"], [6, 3, 1])[0],
                "country": country,
                "account_manager": rng.choice(_MANAGERS),
                "created_at": f"202{rng.randint(2, 5)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                "T09:00:00Z",
                "tags": rng.sample(
                    ["newsletter", "net30", "vip", "reseller", "tax_exempt", "churn_risk"], rng.randint(0, 3)
                ),
                "notes": rng.choice(
                    ["", "Prefers invoices by email.", "Ships to a warehouse; call ahead.", ""]
                ),
            }
        )
    return customers


def _orders(rng: random.Random, customers: Sequence[JsonObject]) -> list[JsonObject]:
    orders = []
    weights = [rng.choice([1, 1, 1, 2, 3, 6]) for _ in customers]
    for k in range(200):
        customer = rng.choices(customers, weights)[0]
        day = rng.randint(0, 89)
        month, mday = (1, day + 1) if day < 31 else ((2, day - 30) if day < 59 else (3, day - 58))
        items = []
        for sku, title, price in rng.sample(_PRODUCTS, rng.randint(1, 4)):
            items.append({"sku": sku, "title": title, "quantity": rng.randint(1, 3), "unit_price": price})
        subtotal = sum(round(item["unit_price"] * 100) * item["quantity"] for item in items)
        discount = rng.choice([0, 0, 0, subtotal // 10])
        shipping = rng.choice([0, 995, 1495])
        tax = round((subtotal - discount) * (0.19 if customer["country"] == "DE" else 0.08))
        total = subtotal - discount + shipping + tax
        status = rng.choices(["closed", "open", "cancelled"], [70, 22, 8])[0]
        refunds = []
        if status != "cancelled" and rng.random() < 0.2:
            amount = total if rng.random() < 0.3 else rng.randint(total // 20, total // 2)
            refunds.append(
                {
                    "id": f"re_{k:05d}",
                    "amount": _money(amount),
                    "reason": rng.choice(_REFUND_REASONS),
                    "created_at": f"2026-04-{rng.randint(1, 20):02d}T12:00:00Z",
                }
            )
        method = rng.choices(["card", "paypal", "bank_transfer", "apple_pay"], [55, 20, 15, 10])[0]
        payment: JsonObject = {"method": method}
        if method == "card":
            payment.update(
                card_brand=rng.choice(["visa", "mastercard", "amex"]), last4=f"{rng.randint(0, 9999):04d}"
            )
        orders.append(
            {
                "id": f"ord_{10001 + k}",
                "number": 10001 + k,
                "created_at": f"2026-{month:02d}-{mday:02d}T{rng.randint(7, 22):02d}:"
                f"{rng.randint(0, 59):02d}:00Z",
                "status": status,
                "customer_id": customer["id"],
                "email": customer["email"],
                "currency": "USD",
                "line_items": items,
                "subtotal": _money(subtotal),
                "discount_total": _money(discount),
                "shipping_total": _money(shipping),
                "tax_total": _money(tax),
                "total": _money(total),
                "payment": payment,
                "refunds": refunds,
                "shipping_address": {
                    "name": customer["name"],
                    "line1": f"{rng.randint(1, 240)} "
                    + rng.choice(["Main St", "Hauptstr.", "High St", "Rue Verte"]),
                    "city": _CITIES[customer["country"]],
                    "postal_code": f"{rng.randint(10000, 99999)}",
                    "country": customer["country"],
                },
                "tags": rng.sample(["wholesale", "gift", "priority", "b2b", "repeat"], rng.randint(0, 2)),
            }
        )
    return sorted(orders, key=lambda order: order["created_at"])


_PR_TOPICS = [
    ("Add index on invoices.customer_id", True),
    ("Refactor webhook retry loop", False),
    ("Add refunds.reason column", True),
    ("Bump httpx to 0.28", False),
    ("Split billing service settings", False),
    ("Backfill customer segments", True),
    ("Fix flaky test_export_csv", False),
    ("Drop legacy coupons table", True),
    ("Add rate limiting to /v2/search", False),
    ("Rename order.total_price to order.total", True),
    ("Document the release process", False),
    ("Cache product lookups", False),
    ("Add audit_log partitioning", True),
    ("Remove unused feature flags", False),
    ("Speed up CI with test sharding", False),
    ("Add tax_exempt flag to customers", True),
    ("Handle 429s from the payment gateway", False),
    ("Upgrade to Python 3.12", False),
    ("Add GIN index for search", True),
    ("Fix timezone bug in reports", False),
]
_PR_SENTENCES = [
    "This change is behind the `billing_v2` flag and is safe to roll back.",
    "Measured on staging: p95 latency drops from 840 ms to 210 ms for the affected endpoint.",
    "The migration is additive; the old column stays until the follow-up PR removes it.",
    "Reviewers: please look closely at the error handling in the retry path.",
    "Closes #318 and #322. Related to the Q1 reliability OKR.",
    "No API changes. Existing clients keep working without a redeploy.",
    "I tested this locally against a copy of production data (anonymised).",
    "The backfill runs in batches of 5,000 rows and takes about 12 minutes on production.",
    "Follow-up work is tracked in JIRA PAY-1432.",
    "Screenshots of the new dashboard panels are attached below.",
]
_CHECKS = ("lint", "unit-tests", "integration-tests", "build", "security-scan")
_USERS = ["mkowalski", "ainaba", "tdubois", "ejensen", "rsilva", "dependabot[bot]"]


def _pull_requests(
    rng: random.Random,
) -> tuple[list[JsonObject], dict[int, list[JsonObject]], dict[str, JsonObject]]:
    prs, files, checks = [], {}, {}
    for k, (title, migration) in enumerate(_PR_TOPICS):
        number = 431 - k * 2 - rng.randint(0, 1)
        merged = rng.random() < 0.75 or migration
        sha = "".join(rng.choice("0123456789abcdef") for _ in range(40))
        day = 28 - k
        login = rng.choice(_USERS)
        prs.append(
            {
                "number": number,
                "title": title,
                "state": "closed",
                "html_url": f"https://github.com/acme/api/pull/{number}",
                "user": {
                    "login": login,
                    "id": 1000 + _USERS.index(login),
                    "type": "Bot" if "[bot]" in login else "User",
                },
                "body": "## Summary\n" + " ".join(rng.sample(_PR_SENTENCES, rng.randint(3, 7))),
                "labels": [
                    {"name": name, "color": "d73a4a"}
                    for name in rng.sample(["db", "perf", "backend", "ci", "docs"], 2)
                ],
                "created_at": f"2026-03-{max(1, day - rng.randint(1, 6)):02d}T10:00:00Z",
                "updated_at": f"2026-03-{day:02d}T16:{k:02d}:00Z",
                "closed_at": f"2026-03-{day:02d}T15:{k:02d}:00Z",
                "merged_at": f"2026-03-{day:02d}T15:{k:02d}:00Z" if merged else None,
                "merge_commit_sha": sha[::-1] if merged else None,
                "head": {"ref": title.lower().replace(" ", "-")[:30], "sha": sha},
                "base": {"ref": "main"},
                "draft": False,
                "comments": rng.randint(0, 9),
                "review_comments": rng.randint(0, 14),
                "commits": rng.randint(1, 8),
                "additions": rng.randint(5, 900),
                "deletions": rng.randint(0, 400),
                "changed_files": 0,
            }
        )
        changed = []
        if migration:
            stamp = f"2026{3:02d}{day:02d}"
            changed.append(f"db/migrations/{stamp}_{title.lower().split()[0]}_{k}.sql")
        for _ in range(rng.randint(2, 9)):
            changed.append(
                f"src/api/{rng.choice(['billing', 'orders', 'search', 'auth', 'reports'])}/"
                f"{rng.choice(_NOUNS)}_{rng.choice(['service', 'routes', 'models', 'tasks'])}.py"
            )
        pr_files = []
        for name in dict.fromkeys(changed):
            lines = [
                f"@@ -{rng.randint(1, 300)},{rng.randint(3, 9)} "
                f"+{rng.randint(1, 300)},{rng.randint(3, 12)} @@"
            ]
            for _ in range(rng.randint(4, 24)):
                sign = rng.choice(["+", "-", " "])
                code = (
                    f"{rng.choice(_NOUNS)} = {_ident(rng)}({rng.choice(_NOUNS)}, limit={rng.randint(1, 99)})"
                )
                if name.endswith(".sql"):
                    code = f"ALTER TABLE {rng.choice(_NOUNS)}s ADD COLUMN {rng.choice(_NOUNS)}_id bigint;"
                lines.append(f"{sign}    {code}")
            added = sum(line.startswith("+") for line in lines)
            removed = sum(line.startswith("-") for line in lines)
            status = "added" if name.endswith(".sql") else rng.choice(["modified", "modified", "added"])
            pr_files.append(
                {
                    "filename": name,
                    "status": status,
                    "additions": added,
                    "deletions": removed,
                    "changes": added + removed,
                    "patch": "\n".join(lines),
                }
            )
        prs[-1]["changed_files"] = len(pr_files)
        files[number] = pr_files
        runs = []
        for index, check in enumerate(_CHECKS):
            failed = rng.random() < 0.12
            runs.append(
                {
                    "id": 9_000_000 + k * 10 + index,
                    "name": check,
                    "status": "completed",
                    "conclusion": "failure" if failed else "success",
                    "started_at": f"2026-03-{day:02d}T14:{index * 7:02d}:00Z",
                    "completed_at": f"2026-03-{day:02d}T14:{index * 7 + 5:02d}:00Z",
                    "app": {"slug": "github-actions"},
                    "output": {
                        "title": f"{check} {'failed' if failed else 'passed'}",
                        "summary": f"{rng.randint(1, 40)} problems found" if failed else "All checks passed.",
                    },
                }
            )
        checks[sha] = {"total_count": len(runs), "check_runs": runs}
    return prs, files, checks


@dataclass
class Fixture:
    """All synthetic data of one benchmark run (deterministic)."""

    files: dict[str, str]
    failing_tests: list[tuple[str, str]]  # (test id, test module)
    customers: list[JsonObject]
    orders: list[JsonObject]
    pull_requests: list[JsonObject]
    pr_files: dict[int, list[JsonObject]]
    check_runs: dict[str, JsonObject]


def build_fixture(seed: int = 20260301) -> Fixture:
    rng = random.Random(seed)
    files = workspace_files(seed)
    failing = []
    pattern = re.compile(
        r"    def (test_\w+)\(self\):\n        self.assertEqual\((\w+)\(([\d.]+)\), ([-\d.]+)\)"
    )
    modules = {}
    for path, text in files.items():
        if path.startswith("app/") and path != "app/__init__.py":
            modules[path[4:-3]] = text
    for path, text in sorted(files.items()):
        if not path.startswith("tests/test_"):
            continue
        module = path[len("tests/") : -3]
        subject = module[len("test_") :]
        for test, function, amount, expected in pattern.findall(text):
            body = re.search(
                rf"def {function}\(amount: float\) -> float:\n.*\n"
                r"    return round\(amount \* (\d+) / 10 \+ (\d+), 2\)\n",
                modules[subject],
            )
            assert body is not None
            scale, offset = int(body.group(1)), int(body.group(2))
            actual = round(float(amount) * scale / 10 + offset, 2)  # the generated formula, evaluated
            if actual != float(expected):
                failing.append((f"{module}.{subject.capitalize()}Tests.{test}", module))
    customers = _customers(rng)
    prs, pr_files, checks = _pull_requests(rng)
    return Fixture(files, failing, customers, _orders(rng, customers), prs, pr_files, checks)


# --- mcp40 ----------------------------------------------------------------------------------------------

_OWNER_REPO = {
    "owner": S("Repository owner (user or organization login)."),
    "repo": S("Repository name without the owner."),
}
_PAGE = {
    "page": I("Page number of the results to fetch (1-based).", default=1),
    "per_page": I("Results per page (max 100).", default=30),
}
_GH_USER = O(
    {"login": S(), "id": I(), "type": S(enum=["User", "Bot", "Organization"])}, ["login", "id", "type"]
)
_GH_LABEL = O({"name": S(), "color": S("Hex color without '#'.")}, ["name", "color"])
_GH_ISSUE = O(
    {
        "number": I(),
        "title": S(),
        "state": S(enum=["open", "closed"]),
        "html_url": S(),
        "user": _GH_USER,
        "body": NULLABLE(S()),
        "labels": A(_GH_LABEL),
        "assignees": A(_GH_USER),
        "comments": I("Number of comments."),
        "created_at": S(),
        "updated_at": S(),
        "closed_at": NULLABLE(S()),
    },
    ["number", "title", "state", "html_url", "user", "body", "labels", "created_at", "updated_at"],
)
_GH_PR = O(
    {
        "number": I(),
        "title": S(),
        "state": S(enum=["open", "closed"]),
        "html_url": S(),
        "user": _GH_USER,
        "body": NULLABLE(S()),
        "labels": A(_GH_LABEL),
        "created_at": S(),
        "updated_at": S(),
        "closed_at": NULLABLE(S()),
        "merged_at": NULLABLE(S(), "Null when the pull request was closed without merging."),
        "merge_commit_sha": NULLABLE(S()),
        "head": O({"ref": S(), "sha": S()}, ["ref", "sha"]),
        "base": O({"ref": S()}, ["ref"]),
        "draft": B(),
        "comments": I(),
        "review_comments": I(),
        "commits": I(),
        "additions": I(),
        "deletions": I(),
        "changed_files": I(),
    },
    ["number", "title", "state", "user", "head", "base", "merged_at", "created_at", "updated_at"],
    closed=False,
)
_GH_FILE = O(
    {
        "filename": S(),
        "status": S(enum=["added", "removed", "modified", "renamed", "copied", "changed", "unchanged"]),
        "additions": I(),
        "deletions": I(),
        "changes": I(),
        "patch": S("Unified diff of the file; absent for binary or very large files."),
    },
    ["filename", "status", "additions", "deletions", "changes"],
)
_CHECK_RUNS = O(
    {
        "total_count": I(),
        "check_runs": A(
            O(
                {
                    "id": I(),
                    "name": S(),
                    "status": S(enum=["queued", "in_progress", "completed"]),
                    "conclusion": NULLABLE(
                        S(
                            enum=[
                                "success",
                                "failure",
                                "neutral",
                                "cancelled",
                                "skipped",
                                "timed_out",
                                "action_required",
                            ]
                        )
                    ),
                    "started_at": S(),
                    "completed_at": NULLABLE(S()),
                    "app": O({"slug": S()}, ["slug"]),
                    "output": O({"title": NULLABLE(S()), "summary": NULLABLE(S())}, ["title", "summary"]),
                },
                ["id", "name", "status", "conclusion", "started_at"],
            )
        ),
    },
    ["total_count", "check_runs"],
)
_JIRA_USER = O({"accountId": S(), "displayName": S()}, ["accountId"])
_JIRA_ISSUE = O(
    {
        "key": S("Issue key, e.g. PAY-123."),
        "id": S(),
        "fields": O(
            {
                "summary": S(),
                "status": O({"name": S(), "category": S(enum=["new", "indeterminate", "done"])}, ["name"]),
                "issuetype": O({"name": S()}, ["name"]),
                "priority": O({"name": S()}, ["name"]),
                "assignee": NULLABLE(_JIRA_USER),
                "reporter": _JIRA_USER,
                "labels": A(S()),
                "components": A(O({"name": S()}, ["name"])),
                "story_points": NULLABLE(N()),
                "duedate": NULLABLE(S()),
                "created": S(),
                "updated": S(),
                "description": NULLABLE(S("Plain-text rendering of the description.")),
            },
            ["summary", "status", "issuetype", "created", "updated"],
            closed=False,
        ),
    },
    ["key", "id", "fields"],
)
_JIRA_FIELDS = O(
    {
        "summary": S("One-line summary."),
        "description": S("Description in Markdown; converted to Atlassian Document Format."),
        "issuetype": O({"name": S("Issue type name, e.g. Bug, Story, Task.")}, ["name"]),
        "priority": O({"name": S(enum=["Highest", "High", "Medium", "Low", "Lowest"])}, ["name"]),
        "assignee": O(
            {"accountId": S("Atlassian account id; use jira_search_users to find it.")}, ["accountId"]
        ),
        "labels": A(S(), "Labels; created on first use."),
        "components": A(O({"name": S()}, ["name"]), "Components of the project."),
        "duedate": S("Due date as YYYY-MM-DD."),
        "story_points": N("Estimate in story points."),
        "parent": O({"key": S("Key of the parent epic or issue.")}, ["key"]),
    },
)
_SLACK_MESSAGE = O(
    {
        "ts": S("Message timestamp; also its id within the channel."),
        "user": S("User id of the author."),
        "text": S(),
        "thread_ts": S("Timestamp of the thread parent, for replies and parents."),
        "reply_count": I(),
        "reactions": A(O({"name": S(), "count": I(), "users": A(S())}, ["name", "count"])),
        "files": A(O({"id": S(), "name": S(), "mimetype": S()}, ["id", "name"])),
    },
    ["ts", "user", "text"],
)
_SLACK_BLOCK = O(
    {
        "type": S("Block type.", enum=["section", "header", "divider", "context", "actions"]),
        "text": O({"type": S(enum=["mrkdwn", "plain_text"]), "text": S()}, ["type", "text"]),
        "fields": A(O({"type": S(enum=["mrkdwn", "plain_text"]), "text": S()}, ["type", "text"])),
        "elements": A(
            O(
                {
                    "type": S(enum=["button", "mrkdwn", "plain_text", "image"]),
                    "text": S(),
                    "url": S(),
                    "action_id": S(),
                },
                ["type"],
            )
        ),
    },
    ["type"],
    "A Block Kit block.",
)
_ADDRESS = O(
    {"name": S(), "line1": S(), "city": S(), "postal_code": S(), "country": S("ISO 3166-1 alpha-2 code.")},
    ["name", "line1", "city", "postal_code", "country"],
)
_ORDER = O(
    {
        "id": S(),
        "number": I("Human-facing order number."),
        "created_at": S(),
        "status": S(enum=["open", "closed", "cancelled"]),
        "customer_id": S(),
        "email": S(),
        "currency": S("ISO 4217 code."),
        "line_items": A(
            O(
                {"sku": S(), "title": S(), "quantity": I(), "unit_price": N()},
                ["sku", "title", "quantity", "unit_price"],
            )
        ),
        "subtotal": N(),
        "discount_total": N(),
        "shipping_total": N(),
        "tax_total": N(),
        "total": N("Amount charged, after discounts, with shipping and tax."),
        "payment": O(
            {
                "method": S(enum=["card", "paypal", "bank_transfer", "apple_pay"]),
                "card_brand": S(),
                "last4": S(),
            },
            ["method"],
        ),
        "refunds": A(
            O(
                {"id": S(), "amount": N(), "reason": S(), "created_at": S()},
                ["id", "amount", "reason", "created_at"],
            )
        ),
        "shipping_address": _ADDRESS,
        "tags": A(S()),
    },
    [
        "id",
        "number",
        "created_at",
        "status",
        "customer_id",
        "currency",
        "line_items",
        "total",
        "payment",
        "refunds",
    ],
)
_CUSTOMER = O(
    {
        "id": S(),
        "name": S(),
        "email": S(),
        "company": S(),
        "segment": S(enum=["smb", "mid_market", "enterprise"]),
        "country": S(),
        "account_manager": O({"id": S(), "name": S(), "email": S()}, ["id", "name", "email"]),
        "created_at": S(),
        "tags": A(S()),
        "notes": S(),
    },
    ["id", "name", "email", "company", "segment", "country", "account_manager", "created_at", "tags"],
)
_PAGE_INFO = {"page": I(), "per_page": I(), "total_count": I(), "total_pages": I()}
_PRODUCT = O(
    {
        "sku": S(),
        "title": S(),
        "price": N(),
        "inventory": A(O({"location_id": S(), "available": I()}, ["location_id", "available"])),
        "status": S(enum=["active", "draft", "archived"]),
    },
    ["sku", "title", "price", "status"],
)
_DEAL = O(
    {
        "id": S(),
        "name": S(),
        "stage": S(enum=["lead", "qualified", "proposal", "negotiation", "won", "lost"]),
        "amount": N(),
        "customer_id": S(),
        "owner": O({"id": S(), "name": S()}, ["id", "name"]),
        "close_date": NULLABLE(S()),
    },
    ["id", "name", "stage", "amount", "customer_id", "owner"],
)


def _paged(items: Sequence[JsonObject], key: str, args: Mapping[str, Any]) -> JsonObject:
    page, per_page = args.get("page", 1), min(args.get("per_page", 50), 100)
    total_pages = max(1, -(-len(items) // per_page))
    chunk = list(items[(page - 1) * per_page : page * per_page])
    return {
        key: chunk,
        "page": page,
        "per_page": per_page,
        "total_count": len(items),
        "total_pages": total_pages,
    }


def mcp_tools(fixture: Fixture) -> list[ToolDefinition]:
    """The 40 MCP-like tools; the five the tasks call work over ``fixture``."""

    async def list_orders(args: Any, ctx: Any) -> JsonObject:
        chosen = [
            order
            for order in fixture.orders
            if args.get("created_at_min", "") <= order["created_at"] <= args.get("created_at_max", "9999")
            and args.get("status", "any") in ("any", order["status"])
            and args.get("customer_id", order["customer_id"]) == order["customer_id"]
        ]
        return _paged(chosen, "orders", args)

    async def list_customers(args: Any, ctx: Any) -> JsonObject:
        chosen = [c for c in fixture.customers if args.get("segment", c["segment"]) == c["segment"]]
        return _paged(chosen, "customers", args)

    async def list_pull_requests(args: Any, ctx: Any) -> list[JsonObject]:
        chosen = [pr for pr in fixture.pull_requests if args.get("state", "open") in ("all", pr["state"])]
        chosen = [pr for pr in chosen if args.get("base", pr["base"]["ref"]) == pr["base"]["ref"]]
        chosen.sort(key=lambda pr: pr["updated_at"], reverse=args.get("direction", "desc") == "desc")
        page, per_page = args.get("page", 1), min(args.get("per_page", 30), 100)
        return chosen[(page - 1) * per_page : page * per_page]

    async def pull_request_files(args: Any, ctx: Any) -> list[JsonObject]:
        return fixture.pr_files[args["pull_number"]]

    async def check_runs(args: Any, ctx: Any) -> JsonObject:
        return fixture.check_runs[args["ref"]]

    gh = "GitHub: "
    jira = "Jira: "
    slack = "Slack: "
    shop = "Shop: "
    crm = "CRM: "
    return [
        # GitHub (12)
        define(
            "github_list_issues",
            gh + "List issues in a repository. Pull requests are excluded. Results are sorted by `sort`.",
            O(
                {
                    **_OWNER_REPO,
                    "state": S("Issue state filter.", enum=["open", "closed", "all"], default="open"),
                    "labels": A(S(), "Only issues carrying all of these labels."),
                    "assignee": S("Login of the assignee, `none` or `*`."),
                    "since": S("Only issues updated at or after this ISO 8601 timestamp."),
                    "sort": S(enum=["created", "updated", "comments"], default="created"),
                    "direction": S(enum=["asc", "desc"], default="desc"),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
            A(_GH_ISSUE),
        ),
        define(
            "github_get_issue",
            gh + "Get one issue with its body and labels.",
            O({**_OWNER_REPO, "issue_number": I("The issue number.")}, ["owner", "repo", "issue_number"]),
            _GH_ISSUE,
        ),
        define(
            "github_create_issue",
            gh + "Open a new issue.",
            O(
                {
                    **_OWNER_REPO,
                    "title": S(),
                    "body": S("Markdown body."),
                    "labels": A(S()),
                    "assignees": A(S(), "Logins to assign (max 10)."),
                    "milestone": I("Milestone number."),
                },
                ["owner", "repo", "title"],
            ),
            _GH_ISSUE,
            read_only=False,
        ),
        define(
            "github_update_issue",
            gh + "Update an issue's title, body, state, labels or assignees. Omitted fields are unchanged.",
            O(
                {
                    **_OWNER_REPO,
                    "issue_number": I(),
                    "title": S(),
                    "body": S(),
                    "state": S(enum=["open", "closed"]),
                    "state_reason": S(enum=["completed", "not_planned", "reopened"]),
                    "labels": A(S(), "Replaces all labels."),
                    "assignees": A(S(), "Replaces all assignees."),
                },
                ["owner", "repo", "issue_number"],
            ),
            _GH_ISSUE,
            read_only=False,
        ),
        define(
            "github_add_issue_comment",
            gh + "Comment on an issue or pull request.",
            O(
                {**_OWNER_REPO, "issue_number": I(), "body": S("Markdown comment.")},
                ["owner", "repo", "issue_number", "body"],
            ),
            O({"id": I(), "html_url": S(), "created_at": S()}, ["id", "html_url", "created_at"]),
            read_only=False,
        ),
        define(
            "github_list_pull_requests",
            gh + "List pull requests in a repository, most recently updated first by default.",
            O(
                {
                    **_OWNER_REPO,
                    "state": S(enum=["open", "closed", "all"], default="open"),
                    "head": S("Filter by head branch as `user:ref-name`."),
                    "base": S("Filter by base branch name."),
                    "sort": S(enum=["created", "updated", "popularity", "long-running"], default="created"),
                    "direction": S(enum=["asc", "desc"], default="desc"),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
            A(_GH_PR),
            list_pull_requests,
        ),
        define(
            "github_get_pull_request",
            gh + "Get one pull request, including merge state and branch refs.",
            O({**_OWNER_REPO, "pull_number": I()}, ["owner", "repo", "pull_number"]),
            _GH_PR,
        ),
        define(
            "github_get_pull_request_files",
            gh + "List the files a pull request changes, with per-file patches (max 3000 files).",
            O({**_OWNER_REPO, "pull_number": I(), **_PAGE}, ["owner", "repo", "pull_number"]),
            A(_GH_FILE),
            pull_request_files,
        ),
        define(
            "github_create_pull_request",
            gh + "Open a pull request from `head` into `base`.",
            O(
                {
                    **_OWNER_REPO,
                    "title": S(),
                    "head": S("Branch with the changes (`user:branch` for forks)."),
                    "base": S("Branch to merge into."),
                    "body": S(),
                    "draft": B(default=False),
                    "maintainer_can_modify": B(default=True),
                },
                ["owner", "repo", "title", "head", "base"],
            ),
            _GH_PR,
            read_only=False,
        ),
        define(
            "github_merge_pull_request",
            gh + "Merge a pull request.",
            O(
                {
                    **_OWNER_REPO,
                    "pull_number": I(),
                    "merge_method": S(enum=["merge", "squash", "rebase"], default="merge"),
                    "commit_title": S(),
                    "commit_message": S(),
                    "sha": S("Merge only if the head is still this commit."),
                },
                ["owner", "repo", "pull_number"],
            ),
            O({"merged": B(), "sha": S(), "message": S()}, ["merged", "sha", "message"]),
            read_only=False,
        ),
        define(
            "github_list_check_runs_for_ref",
            gh + "List the check runs (CI jobs) for a commit SHA, branch or tag.",
            O(
                {
                    **_OWNER_REPO,
                    "ref": S("Commit SHA, branch name or tag name."),
                    "check_name": S("Only check runs with this name."),
                    "status": S(enum=["queued", "in_progress", "completed"]),
                    "filter": S(enum=["latest", "all"], default="latest"),
                    **_PAGE,
                },
                ["owner", "repo", "ref"],
            ),
            _CHECK_RUNS,
            check_runs,
        ),
        define(
            "github_get_file_contents",
            gh + "Get a file's decoded text (or a directory listing) at a ref.",
            O(
                {**_OWNER_REPO, "path": S(), "ref": S("Branch, tag or commit; default branch if omitted.")},
                ["owner", "repo", "path"],
            ),
            O(
                {
                    "type": S(enum=["file", "dir"]),
                    "path": S(),
                    "sha": S(),
                    "text": S("File content (files only)."),
                    "entries": A(
                        O({"name": S(), "type": S(enum=["file", "dir"]), "size": I()}, ["name", "type"])
                    ),
                },
                ["type", "path", "sha"],
            ),
        ),
        # Jira (8)
        define(
            "jira_search_issues",
            jira + "Search issues with JQL. Returns up to `max_results` issues starting at `start_at`.",
            O(
                {
                    "jql": S("JQL query, e.g. `project = PAY AND status != Done ORDER BY updated DESC`."),
                    "fields": A(
                        S(), "Fields to return; default: summary, status, assignee, priority, labels."
                    ),
                    "start_at": I(default=0),
                    "max_results": I("Max 100.", default=50),
                    "expand": A(S(enum=["renderedFields", "changelog", "transitions"])),
                },
                ["jql"],
            ),
            O(
                {"issues": A(_JIRA_ISSUE), "start_at": I(), "max_results": I(), "total": I()},
                ["issues", "total"],
            ),
        ),
        define(
            "jira_get_issue",
            jira + "Get an issue by key, with comments if requested.",
            O({"issue_key": S(), "include_comments": B(default=False)}, ["issue_key"]),
            _JIRA_ISSUE,
        ),
        define(
            "jira_create_issue",
            jira + "Create an issue in a project.",
            O({"project_key": S(), "fields": _JIRA_FIELDS}, ["project_key", "fields"]),
            O({"key": S(), "id": S(), "url": S()}, ["key", "id", "url"]),
            read_only=False,
        ),
        define(
            "jira_update_issue",
            jira + "Update fields of an issue. Omitted fields are unchanged.",
            O(
                {"issue_key": S(), "fields": _JIRA_FIELDS, "notify_users": B(default=True)},
                ["issue_key", "fields"],
            ),
            O({"key": S(), "updated": B()}, ["key", "updated"]),
            read_only=False,
        ),
        define(
            "jira_transition_issue",
            jira + "Move an issue through its workflow (e.g. to In Progress or Done).",
            O(
                {
                    "issue_key": S(),
                    "transition": O({"id": S(), "name": S()}, description="Transition by id or by name."),
                    "resolution": S("Resolution name when moving to a done status."),
                    "comment": S(),
                },
                ["issue_key", "transition"],
            ),
            O({"key": S(), "status": S()}, ["key", "status"]),
            read_only=False,
        ),
        define(
            "jira_add_comment",
            jira + "Add a comment to an issue.",
            O(
                {
                    "issue_key": S(),
                    "body": S("Markdown comment."),
                    "visibility": O({"type": S(enum=["group", "role"]), "value": S()}, ["type", "value"]),
                },
                ["issue_key", "body"],
            ),
            O({"id": S(), "created": S()}, ["id", "created"]),
            read_only=False,
        ),
        define(
            "jira_list_sprints",
            jira + "List the sprints of a board.",
            O(
                {"board_id": I(), "state": S(enum=["future", "active", "closed"]), "start_at": I(default=0)},
                ["board_id"],
            ),
            A(
                O(
                    {"id": I(), "name": S(), "state": S(), "startDate": S(), "endDate": S(), "goal": S()},
                    ["id", "name", "state"],
                )
            ),
        ),
        define(
            "jira_get_project",
            jira + "Get a project with its components, issue types and versions.",
            O({"project_key": S()}, ["project_key"]),
            O(
                {
                    "key": S(),
                    "name": S(),
                    "lead": _JIRA_USER,
                    "components": A(O({"id": S(), "name": S()}, ["id", "name"])),
                    "issueTypes": A(O({"id": S(), "name": S(), "subtask": B()}, ["id", "name"])),
                    "versions": A(O({"id": S(), "name": S(), "released": B()}, ["id", "name"])),
                },
                ["key", "name"],
            ),
        ),
        # Slack (8)
        define(
            "slack_list_channels",
            slack + "List public channels the bot can see.",
            O(
                {
                    "types": A(S(enum=["public_channel", "private_channel", "mpim", "im"])),
                    "exclude_archived": B(default=True),
                    "limit": I("Max 1000.", default=100),
                    "cursor": S("Pagination cursor from `next_cursor`."),
                },
            ),
            O(
                {
                    "channels": A(
                        O(
                            {"id": S(), "name": S(), "topic": S(), "num_members": I(), "is_archived": B()},
                            ["id", "name"],
                        )
                    ),
                    "next_cursor": S(),
                },
                ["channels"],
            ),
        ),
        define(
            "slack_get_channel_history",
            slack + "Read a channel's messages, newest first.",
            O(
                {
                    "channel": S("Channel id."),
                    "oldest": S("Only messages after this timestamp."),
                    "latest": S("Only messages before this timestamp."),
                    "limit": I("Max 999.", default=100),
                    "cursor": S(),
                    "include_all_metadata": B(default=False),
                },
                ["channel"],
            ),
            O({"messages": A(_SLACK_MESSAGE), "has_more": B(), "next_cursor": S()}, ["messages", "has_more"]),
        ),
        define(
            "slack_post_message",
            slack + "Post a message to a channel, optionally with Block Kit blocks.",
            O(
                {
                    "channel": S("Channel id or name."),
                    "text": S("Fallback text, also used for notifications."),
                    "blocks": A(_SLACK_BLOCK),
                    "thread_ts": S("Reply in this thread."),
                    "unfurl_links": B(default=False),
                    "metadata": O(
                        {"event_type": S(), "event_payload": O({}, closed=False)},
                        ["event_type", "event_payload"],
                    ),
                },
                ["channel", "text"],
            ),
            O({"channel": S(), "ts": S()}, ["channel", "ts"]),
            read_only=False,
        ),
        define(
            "slack_reply_to_thread",
            slack + "Reply in a thread.",
            O(
                {"channel": S(), "thread_ts": S(), "text": S(), "reply_broadcast": B(default=False)},
                ["channel", "thread_ts", "text"],
            ),
            O({"channel": S(), "ts": S()}, ["channel", "ts"]),
            read_only=False,
        ),
        define(
            "slack_add_reaction",
            slack + "Add an emoji reaction to a message.",
            O(
                {"channel": S(), "timestamp": S(), "name": S("Emoji name without colons.")},
                ["channel", "timestamp", "name"],
            ),
            O({"ok": B()}, ["ok"]),
            read_only=False,
        ),
        define(
            "slack_search_messages",
            slack + "Search messages across the workspace with Slack search syntax (`in:#ops from:@kim`).",
            O(
                {
                    "query": S(),
                    "sort": S(enum=["score", "timestamp"], default="score"),
                    "sort_dir": S(enum=["asc", "desc"], default="desc"),
                    "count": I("Results per page (max 100).", default=20),
                    "page": I(default=1),
                },
                ["query"],
            ),
            O(
                {
                    "matches": A(
                        O(
                            {
                                "channel": O({"id": S(), "name": S()}, ["id", "name"]),
                                "ts": S(),
                                "user": S(),
                                "text": S(),
                                "permalink": S(),
                            },
                            ["channel", "ts", "text"],
                        )
                    ),
                    "total": I(),
                },
                ["matches", "total"],
            ),
        ),
        define(
            "slack_get_user_profile",
            slack + "Get a user's profile (name, title, timezone, status).",
            O({"user": S("User id.")}, ["user"]),
            O(
                {
                    "id": S(),
                    "real_name": S(),
                    "display_name": S(),
                    "title": S(),
                    "email": S(),
                    "tz": S(),
                    "status": O({"text": S(), "emoji": S(), "expiration": I()}, ["text", "emoji"]),
                },
                ["id", "real_name"],
            ),
        ),
        define(
            "slack_list_users",
            slack + "List workspace members.",
            O({"limit": I(default=200), "cursor": S(), "include_bots": B(default=False)}),
            O(
                {
                    "members": A(
                        O(
                            {"id": S(), "name": S(), "real_name": S(), "is_bot": B(), "deleted": B()},
                            ["id", "name"],
                        )
                    ),
                    "next_cursor": S(),
                },
                ["members"],
            ),
        ),
        # Shop (7)
        define(
            "shop_list_orders",
            shop + "List orders, oldest first, with line items, payment, refunds and shipping address.",
            O(
                {
                    "created_at_min": S("Only orders created at or after this ISO 8601 timestamp."),
                    "created_at_max": S("Only orders created at or before this ISO 8601 timestamp."),
                    "status": S(enum=["any", "open", "closed", "cancelled"], default="any"),
                    "customer_id": S("Only this customer's orders."),
                    "page": I(default=1),
                    "per_page": I("Max 100.", default=50),
                },
            ),
            O(
                {"orders": A(_ORDER), **_PAGE_INFO},
                ["orders", "page", "per_page", "total_count", "total_pages"],
            ),
            list_orders,
        ),
        define(
            "shop_get_order",
            shop + "Get one order by id.",
            O({"order_id": S()}, ["order_id"]),
            _ORDER,
        ),
        define(
            "shop_create_refund",
            shop + "Refund some or all of an order's line items and/or shipping.",
            O(
                {
                    "order_id": S(),
                    "line_items": A(
                        O({"sku": S(), "quantity": I(), "restock": B(default=True)}, ["sku", "quantity"])
                    ),
                    "shipping": O({"full_refund": B(), "amount": N()}),
                    "reason": S(enum=list(_REFUND_REASONS)),
                    "notify_customer": B(default=True),
                    "note": S(),
                },
                ["order_id", "reason"],
            ),
            O(
                {"id": S(), "order_id": S(), "amount": N(), "created_at": S()},
                ["id", "order_id", "amount", "created_at"],
            ),
            read_only=False,
        ),
        define(
            "shop_list_products",
            shop + "List products with price and inventory per location.",
            O(
                {
                    "status": S(enum=["active", "draft", "archived"]),
                    "collection_id": S(),
                    "query": S("Search in title and SKU."),
                    "page": I(default=1),
                    "per_page": I(default=50),
                }
            ),
            O({"products": A(_PRODUCT), **_PAGE_INFO}, ["products", "total_count"]),
        ),
        define(
            "shop_update_inventory_level",
            shop + "Set or adjust the available quantity of a SKU at a location.",
            O(
                {
                    "sku": S(),
                    "location_id": S(),
                    "set_available": I("Absolute quantity."),
                    "adjust_by": I("Relative change; use instead of set_available."),
                    "reason": S(enum=["received", "correction", "damaged", "shrinkage", "restock"]),
                },
                ["sku", "location_id"],
            ),
            O({"sku": S(), "location_id": S(), "available": I()}, ["sku", "location_id", "available"]),
            read_only=False,
        ),
        define(
            "shop_create_discount_code",
            shop + "Create a discount code.",
            O(
                {
                    "code": S(),
                    "value": O(
                        {"type": S(enum=["percentage", "fixed_amount"]), "amount": N()},
                        ["type", "amount"],
                    ),
                    "applies_to": O({"skus": A(S()), "collection_ids": A(S()), "min_subtotal": N()}),
                    "starts_at": S(),
                    "ends_at": S(),
                    "usage_limit": I(),
                    "once_per_customer": B(default=False),
                },
                ["code", "value"],
            ),
            O({"id": S(), "code": S()}, ["id", "code"]),
            read_only=False,
        ),
        define(
            "shop_get_fulfillment",
            shop + "Get the fulfillments (shipments) of an order with carrier tracking.",
            O({"order_id": S()}, ["order_id"]),
            A(
                O(
                    {
                        "id": S(),
                        "status": S(enum=["pending", "in_transit", "delivered", "failure"]),
                        "carrier": S(),
                        "tracking_number": S(),
                        "line_items": A(O({"sku": S(), "quantity": I()}, ["sku", "quantity"])),
                        "events": A(O({"at": S(), "status": S(), "location": S()}, ["at", "status"])),
                    },
                    ["id", "status"],
                )
            ),
        ),
        # CRM (5)
        define(
            "crm_list_customers",
            crm + "List customer accounts with company, segment and account manager.",
            O(
                {
                    "segment": S(enum=["smb", "mid_market", "enterprise"]),
                    "country": S(),
                    "tag": S(),
                    "page": I(default=1),
                    "per_page": I("Max 100.", default=50),
                }
            ),
            O(
                {"customers": A(_CUSTOMER), **_PAGE_INFO},
                ["customers", "page", "per_page", "total_count", "total_pages"],
            ),
            list_customers,
        ),
        define(
            "crm_get_customer",
            crm + "Get one customer account.",
            O({"customer_id": S()}, ["customer_id"]),
            _CUSTOMER,
        ),
        define(
            "crm_update_customer",
            crm + "Update a customer account. Omitted fields are unchanged.",
            O(
                {
                    "customer_id": S(),
                    "changes": O(
                        {
                            "segment": S(enum=["smb", "mid_market", "enterprise"]),
                            "account_manager_id": S(),
                            "tags": A(S(), "Replaces all tags."),
                            "notes": S(),
                            "billing_address": _ADDRESS,
                        }
                    ),
                },
                ["customer_id", "changes"],
            ),
            _CUSTOMER,
            read_only=False,
        ),
        define(
            "crm_list_deals",
            crm + "List sales deals, optionally for one customer or stage.",
            O(
                {
                    "customer_id": S(),
                    "stage": S(enum=["lead", "qualified", "proposal", "negotiation", "won", "lost"]),
                    "owner_id": S(),
                    "page": I(default=1),
                    "per_page": I(default=50),
                }
            ),
            O({"deals": A(_DEAL), **_PAGE_INFO}, ["deals", "total_count"]),
        ),
        define(
            "crm_create_note",
            crm + "Attach a note to a customer, deal or contact.",
            O(
                {
                    "target": O({"type": S(enum=["customer", "deal", "contact"]), "id": S()}, ["type", "id"]),
                    "body": S("Markdown."),
                    "pinned": B(default=False),
                },
                ["target", "body"],
            ),
            O({"id": S(), "created_at": S()}, ["id", "created_at"]),
            read_only=False,
        ),
    ]


# --- mcp150: mcp40 + 110 generated tools ----------------------------------------------------------------

_GENERATED_SERVICES = (
    ("linear", "Linear", ("issue", "project", "cycle")),
    ("notion", "Notion", ("page", "database", "block")),
    ("gdrive", "Google Drive", ("file", "folder", "permission")),
    ("gcal", "Google Calendar", ("event", "calendar")),
    ("zendesk", "Zendesk", ("ticket", "user", "macro")),
    ("stripe", "Stripe", ("charge", "subscription", "invoice")),
    ("datadog", "Datadog", ("monitor", "dashboard", "incident")),
    ("pagerduty", "PagerDuty", ("incident", "schedule", "service")),
    ("confluence", "Confluence", ("page", "space")),
    ("salesforce", "Salesforce", ("opportunity", "lead", "account")),
    ("hubspot", "HubSpot", ("contact", "deal", "company")),
)
_VERBS_GENERATED = ("list", "get", "create", "update", "search", "delete")
_FIELD_POOL: tuple[tuple[str, JsonObject], ...] = (
    ("title", S("Title shown in lists and notifications.")),
    ("status", S("Lifecycle state.", enum=["open", "in_progress", "blocked", "resolved", "closed"])),
    ("priority", S(enum=["urgent", "high", "medium", "low", "none"])),
    ("description", S("Body in Markdown.")),
    ("owner", O({"id": S(), "name": S(), "email": S()}, ["id"], "The person responsible.")),
    ("labels", A(S(), "Free-form labels.")),
    ("due_date", S("Due date as YYYY-MM-DD.")),
    ("amount", N("Amount in the account's currency.")),
    ("currency", S("ISO 4217 currency code.")),
    ("url", S("Link to the item in the web app.")),
    ("parent_id", S("Id of the containing item.")),
    ("external_refs", A(O({"system": S(), "id": S()}, ["system", "id"]), "Links to other systems.")),
    ("custom_fields", O({}, description="Workspace-specific custom fields by key.", closed=False)),
    ("team", O({"id": S(), "key": S(), "name": S()}, ["id"], "Owning team.")),
    ("visibility", S(enum=["private", "team", "organization", "public"])),
    ("starts_at", S("ISO 8601 start time.")),
    ("ends_at", S("ISO 8601 end time.")),
    (
        "participants",
        A(O({"email": S(), "role": S(enum=["owner", "editor", "viewer"]), "optional": B()}, ["email"])),
    ),
    ("estimate", N("Effort estimate in points or hours.")),
    ("tags", A(O({"id": S(), "name": S()}, ["id", "name"]))),
    ("archived", B("Whether the item is archived.")),
    ("metrics", O({"views": I(), "comments": I(), "last_activity_at": S()}, description="Usage counters.")),
)
_DESCRIPTION_TAILS = (
    "Requires the read scope.",
    "Results respect the caller's permissions.",
    "Rate limit: 100 requests per minute.",
    "Timestamps are ISO 8601 in UTC.",
    "Deleted items are not returned unless asked for.",
)


def generated_tools(seed: int = 150) -> list[ToolDefinition]:
    """110 plausible SaaS tools (10 per service), deterministic for ``seed``. Schema-only."""
    rng = random.Random(seed)
    tools: list[ToolDefinition] = []
    for prefix, label, resources in _GENERATED_SERVICES:
        fields = {res: dict(rng.sample(_FIELD_POOL, rng.randint(5, 10))) for res in resources}
        records = {
            res: O(
                {"id": S(), **fields[res], "created_at": S(), "updated_at": S()},
                ["id", *list(fields[res])[:2], "created_at"],
            )
            for res in resources
        }
        made = 0
        for verb in _VERBS_GENERATED:
            for res in resources:
                if made == 10:
                    break
                made += 1
                plural = res[:-1] + "ies" if res.endswith("y") else res + "s"
                name = f"{prefix}_{verb}_{plural if verb in ('list', 'search') else res}"
                record, tail = records[res], rng.choice(_DESCRIPTION_TAILS)
                filterable = {
                    k: v for k, v in fields[res].items() if "enum" in v or k in ("owner", "team", "labels")
                }
                if verb == "list":
                    params = O(
                        {
                            **{
                                k: (O({"id": S()}, ["id"]) if v.get("type") == "object" else v)
                                for k, v in filterable.items()
                            },
                            "sort": S(enum=["created_at", "updated_at", "title"], default="updated_at"),
                            "page_size": I("Max 100.", default=25),
                            "cursor": S("Cursor from `next_cursor`."),
                        }
                    )
                    output = O({"items": A(record), "next_cursor": NULLABLE(S())}, ["items", "next_cursor"])
                    text = f"{label}: List {plural}, newest first, with optional filters."
                elif verb == "get":
                    params = O(
                        {
                            "id": S(f"The {res} id."),
                            "include": A(S(enum=["comments", "history", "attachments"])),
                        },
                        ["id"],
                    )
                    output, text = record, f"{label}: Get one {res} by id."
                elif verb == "create":
                    required = list(fields[res])[:1]
                    params = O(dict(fields[res]), required)
                    output, text = record, f"{label}: Create a {res}."
                elif verb == "update":
                    params = O(
                        {"id": S(), "patch": O(dict(fields[res]), description="Fields to change.")},
                        ["id", "patch"],
                    )
                    output, text = record, f"{label}: Update a {res}; omitted fields are unchanged."
                elif verb == "search":
                    params = O(
                        {
                            "query": S("Full-text query."),
                            "filters": O({k: v for k, v in filterable.items() if v.get("type") != "object"}),
                            "limit": I(default=20),
                        },
                        ["query"],
                    )
                    output = O(
                        {"results": A(O({"score": N(), "item": record}, ["score", "item"])), "total": I()},
                        ["results", "total"],
                    )
                    text = f"{label}: Search {plural} by text and filters."
                else:
                    params = O({"id": S(), "permanent": B("Skip the trash.", default=False)}, ["id"])
                    output = O({"id": S(), "deleted": B()}, ["id", "deleted"])
                    text = f"{label}: Delete a {res}."
                tools.append(
                    define(
                        name, f"{text} {tail}", params, output, read_only=verb in ("list", "get", "search")
                    )
                )
    return tools


def build_tool_set(name: str, fixture: Fixture, workspace: Workspace | None) -> list[ToolDefinition]:
    if name == "file6":
        assert workspace is not None
        return file_tools(workspace)
    if name == "mcp40":
        return mcp_tools(fixture)
    if name == "mcp150":
        return [*mcp_tools(fixture), *generated_tools()]
    raise ValueError(name)


# --- tasks ----------------------------------------------------------------------------------------------


class NativeSession(Protocol):
    async def call(self, calls: Sequence[tuple[str, JsonObject]]) -> list[Any]:
        """One assistant message making ``calls`` (in parallel); returns their canonical values."""
        ...


@dataclass(frozen=True)
class Task:
    """One scripted task: the user's request, the best native trajectory and the best Code Mode one."""

    name: str
    tool_set: str
    prompt: str
    native: Callable[[NativeSession, Fixture], Awaitable[None]]
    program: str
    description: str
    expected: Callable[[Fixture], str]
    answer_intro: str
    note: str = ""

    def answer(self, fixture: Fixture) -> str:
        return f"{self.answer_intro}\n\n{self.expected(fixture)}"


Q1 = {"created_at_min": "2026-01-01T00:00:00Z", "created_at_max": "2026-03-31T23:59:59Z", "per_page": 100}


def _refunded_cents(order: Mapping[str, Any]) -> int:
    return sum(round(refund["amount"] * 100) for refund in order["refunds"])


def _expected_refunds(fx: Fixture) -> str:
    by_method: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    count = 0
    for order in fx.orders:
        refunded = _refunded_cents(order)
        if 0 < refunded < round(order["total"] * 100):
            count += 1
            by_method[order["payment"]["method"]][0] += 1
            by_method[order["payment"]["method"]][1] += refunded
    lines = [f"partially refunded orders: {count} of {len(fx.orders)}"]
    lines += [
        f"{m}: {n} orders, {cents / 100:.2f} USD refunded" for m, (n, cents) in sorted(by_method.items())
    ]
    return "\n".join(lines)


async def _native_refunds(s: NativeSession, fx: Fixture) -> None:
    [first] = await s.call([("shop_list_orders", {**Q1, "page": 1})])
    await s.call([("shop_list_orders", {**Q1, "page": page}) for page in range(2, first["total_pages"] + 1)])


_PROGRAM_REFUNDS = """\
import asyncio

q1 = {"created_at_min": "2026-01-01T00:00:00Z", "created_at_max": "2026-03-31T23:59:59Z", "per_page": 100}
first = await tools.shop_list_orders({**q1, "page": 1})
rest = await asyncio.gather(
    *(tools.shop_list_orders({**q1, "page": p}) for p in range(2, first["total_pages"] + 1))
)
orders = [o for page in (first, *rest) for o in page["orders"]]
by_method = {}
for o in orders:
    refunded = sum(r["amount"] for r in o["refunds"])
    if 0 < refunded < o["total"]:
        n, amount = by_method.get(o["payment"]["method"], (0, 0.0))
        by_method[o["payment"]["method"]] = (n + 1, amount + refunded)
print(f"partially refunded orders: {sum(n for n, _ in by_method.values())} of {len(orders)}")
for method, (n, amount) in sorted(by_method.items()):
    print(f"{method}: {n} orders, {amount:.2f} USD refunded")
"""


def _expected_top_spenders(fx: Fixture) -> str:
    spend: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for order in fx.orders:
        if order["status"] != "cancelled":
            spend[order["customer_id"]][0] += round(order["total"] * 100) - _refunded_cents(order)
            spend[order["customer_id"]][1] += 1
    customers = {c["id"]: c for c in fx.customers}
    ranked = sorted(spend.items(), key=lambda kv: (-kv[1][0], kv[0]))[:5]
    lines = []
    for rank, (cid, (cents, n)) in enumerate(ranked, 1):
        c = customers[cid]
        lines.append(
            f"{rank}. {c['name']} ({c['company']}, {c['segment']}): {cents / 100:.2f} USD over {n} orders;"
            f" account manager {c['account_manager']['name']}"
        )
    return "\n".join(lines)


async def _native_top_spenders(s: NativeSession, fx: Fixture) -> None:
    first, customers = await s.call(
        [("shop_list_orders", {**Q1, "page": 1}), ("crm_list_customers", {"page": 1, "per_page": 100})]
    )
    more = [("shop_list_orders", {**Q1, "page": p}) for p in range(2, first["total_pages"] + 1)]
    more += [
        ("crm_list_customers", {"page": p, "per_page": 100}) for p in range(2, customers["total_pages"] + 1)
    ]
    await s.call(more)


_PROGRAM_TOP_SPENDERS = """\
import asyncio

q1 = {"created_at_min": "2026-01-01T00:00:00Z", "created_at_max": "2026-03-31T23:59:59Z", "per_page": 100}
first, people = await asyncio.gather(
    tools.shop_list_orders({**q1, "page": 1}), tools.crm_list_customers({"page": 1, "per_page": 100})
)
rest = await asyncio.gather(
    *(tools.shop_list_orders({**q1, "page": p}) for p in range(2, first["total_pages"] + 1))
)
customers = {c["id"]: c for c in people["customers"]}
assert people["total_pages"] == 1
spend = {}
for o in (o for page in (first, *rest) for o in page["orders"]):
    if o["status"] == "cancelled":
        continue
    net = round(o["total"] * 100) - sum(round(r["amount"] * 100) for r in o["refunds"])
    cents, n = spend.get(o["customer_id"], (0, 0))
    spend[o["customer_id"]] = (cents + net, n + 1)
top = sorted(spend.items(), key=lambda kv: (-kv[1][0], kv[0]))[:5]
for rank, (cid, (cents, n)) in enumerate(top, 1):
    c = customers[cid]
    print(f"{rank}. {c['name']} ({c['company']}, {c['segment']}): {cents / 100:.2f} USD over {n} orders;"
          f" account manager {c['account_manager']['name']}")
"""

_REPO = {"owner": "acme", "repo": "api"}


def _recent_merged(prs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    merged = [pr for pr in prs if pr["merged_at"] and pr["base"]["ref"] == "main"]
    return sorted(merged, key=lambda pr: pr["merged_at"], reverse=True)[:10]


def _expected_migrations(fx: Fixture) -> str:
    lines = []
    recent = _recent_merged(fx.pull_requests)
    for pr in recent:
        migrations = [
            f["filename"] for f in fx.pr_files[pr["number"]] if f["filename"].startswith("db/migrations/")
        ]
        if migrations:
            runs = fx.check_runs[pr["head"]["sha"]]["check_runs"]
            failed = [run["name"] for run in runs if run["conclusion"] == "failure"]
            lines.append(
                f"#{pr['number']} {pr['title']}: {', '.join(migrations)}; "
                f"failed checks: {', '.join(failed) or 'none'}"
            )
    return f"{len(lines)} of {len(recent)} recently merged PRs touch migrations\n" + "\n".join(lines)


async def _native_migrations(s: NativeSession, fx: Fixture) -> None:
    listing = {
        **_REPO,
        "state": "closed",
        "base": "main",
        "sort": "updated",
        "direction": "desc",
        "per_page": 30,
    }
    [prs] = await s.call([("github_list_pull_requests", listing)])
    recent = _recent_merged(prs)
    files = await s.call(
        [("github_get_pull_request_files", {**_REPO, "pull_number": pr["number"]}) for pr in recent]
    )
    touched = [
        pr
        for pr, changed in zip(recent, files, strict=True)
        if any(f["filename"].startswith("db/migrations/") for f in changed)
    ]
    await s.call([("github_list_check_runs_for_ref", {**_REPO, "ref": pr["head"]["sha"]}) for pr in touched])


_PROGRAM_MIGRATIONS = """\
import asyncio

repo = {"owner": "acme", "repo": "api"}
prs = await tools.github_list_pull_requests(
    {**repo, "state": "closed", "base": "main", "sort": "updated", "direction": "desc", "per_page": 30}
)
recent = sorted((p for p in prs if p["merged_at"]), key=lambda p: p["merged_at"], reverse=True)[:10]
files = await asyncio.gather(
    *(tools.github_get_pull_request_files({**repo, "pull_number": p["number"]}) for p in recent)
)
touched = []
for pr, changed in zip(recent, files):
    migrations = [f["filename"] for f in changed if f["filename"].startswith("db/migrations/")]
    if migrations:
        touched.append((pr, migrations))
checks = await asyncio.gather(
    *(tools.github_list_check_runs_for_ref({**repo, "ref": pr["head"]["sha"]}) for pr, _ in touched)
)
print(f"{len(touched)} of {len(recent)} recently merged PRs touch migrations")
for (pr, migrations), runs in zip(touched, checks):
    failed = [r["name"] for r in runs["check_runs"] if r["conclusion"] == "failure"]
    print(f"#{pr['number']} {pr['title']}: {', '.join(migrations)}; "
          f"failed checks: {', '.join(failed) or 'none'}")
"""

_LARGEST_COMMAND = "find packages -type f -exec wc -lc {} + | grep -v ' total$' | sort -k2,2nr | head -n 3"


def _expected_largest(fx: Fixture) -> str:
    sizes = [
        (len(text.encode()), text.count("\n"), path)
        for path, text in fx.files.items()
        if path.startswith("packages/")
    ]
    sizes.sort(key=lambda entry: -entry[0])
    return "\n".join(f"{path}: {size} bytes, {lines} lines" for size, lines, path in sizes[:3])


async def _native_largest(s: NativeSession, fx: Fixture) -> None:
    await s.call(
        [
            (
                "bash",
                {"command": _LARGEST_COMMAND, "description": "List the three largest files with line counts"},
            )
        ]
    )


_PROGRAM_LARGEST = f'''\
out = await tools.bash({{
    "command": "{_LARGEST_COMMAND}",
    "description": "List the three largest files with line counts",
}})
for line in out["stdout"].splitlines():
    lines, size, path = line.split()
    print(f"{{path}}: {{size}} bytes, {{lines}} lines")
'''


def _expected_todos(fx: Fixture) -> str:
    counts: dict[str, int] = defaultdict(int)
    for path, text in fx.files.items():
        if path.startswith("packages/"):
            counts[path.split("/")[1]] += sum("TODO" in line for line in text.splitlines())
    ranked = sorted(((p, c) for p, c in counts.items() if c), key=lambda kv: (-kv[1], kv[0]))
    return "\n".join(f"{package}: {count}" for package, count in ranked)


async def _native_todos(s: NativeSession, fx: Fixture) -> None:
    await s.call([("grep", {"pattern": "TODO", "path": "packages", "output_mode": "count"})])


_PROGRAM_TODOS = """\
found = await tools.grep({"pattern": "TODO", "path": "packages", "output_mode": "count"})
per_package = {}
for entry in found["counts"]:
    package = entry["path"].split("/")[1]
    per_package[package] = per_package.get(package, 0) + entry["count"]
for package, count in sorted(per_package.items(), key=lambda kv: (-kv[1], kv[0])):
    print(f"{package}: {count}")
"""

_TEST_COMMAND = "python3 -m unittest discover -s tests"
_IMPORT_LINE = re.compile(r"^(?:from|import) (app(?:\.\w+)?)")


def _expected_failing(fx: Fixture) -> str:
    lines = [f"{len(fx.failing_tests)} failing tests"]
    for test_id, module in sorted(fx.failing_tests):
        text = fx.files[f"tests/{module}.py"]
        found = [m.group(1) for line in text.splitlines() if (m := _IMPORT_LINE.match(line))]
        lines.append(f"{test_id} -> {', '.join(dict.fromkeys(f.replace('.', '/') + '.py' for f in found))}")
    return "\n".join(lines)


def _failing_from_output(output: str) -> list[str]:
    failed = []
    for line in output.splitlines():
        match = re.match(r"(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", line)
        if match:
            parts = match.group(2).split(".")
            failed.append(".".join(parts if parts[-1] == match.group(1) else [*parts, match.group(1)]))
    return sorted(failed)


async def _native_failing(s: NativeSession, fx: Fixture) -> None:
    [run] = await s.call([("bash", {"command": _TEST_COMMAND, "description": "Run the unit test suite"})])
    modules = sorted({test.split(".")[0] for test in _failing_from_output(run["stdout"] + run["stderr"])})
    glob = "{" + ",".join(f"{m}.py" for m in modules) + "}"
    await s.call(
        [("grep", {"pattern": "^(from|import) app", "path": "tests", "glob": glob, "output_mode": "content"})]
    )


_PROGRAM_FAILING = f'''\
import re

run = await tools.bash({{"command": "{_TEST_COMMAND}", "description": "Run the unit test suite"}})
failed = []
for line in (run["stdout"] + run["stderr"]).splitlines():
    m = re.match(r"(?:FAIL|ERROR): (\\w+) \\(([\\w.]+)\\)", line)
    if m:
        parts = m.group(2).split(".")
        failed.append(".".join(parts if parts[-1] == m.group(1) else [*parts, m.group(1)]))
modules = sorted({{t.split(".")[0] for t in failed}})
found = await tools.grep({{
    "pattern": "^(from|import) app", "path": "tests",
    "glob": "{{" + ",".join(m + ".py" for m in modules) + "}}", "output_mode": "content",
}})
imports = {{}}
for hit in found["matches"]:
    module = re.match(r"(?:from|import) (app(?:\\.\\w+)?)", hit["text"]).group(1)
    imports.setdefault(hit["path"].split("/")[-1][:-3], {{}})[module.replace(".", "/") + ".py"] = None
print(f"{{len(failed)}} failing tests")
for test in sorted(failed):
    print(f"{{test}} -> {{', '.join(imports[test.split('.')[0]])}}")
'''

TASKS: tuple[Task, ...] = (
    Task(
        "refunds",
        "mcp40",
        "Which of our Q1 2026 orders (Jan 1 - Mar 31) were partially refunded, i.e. some money was refunded "
        "but less than the order total? Give me the count and the refunded amount per payment method.",
        _native_refunds,
        _PROGRAM_REFUNDS,
        "Sum partial refunds by payment method",
        _expected_refunds,
        "Here are the partially refunded Q1 2026 orders:",
        "200 order records (2 pages of 100); filter + group-by the API cannot do",
    ),
    Task(
        "top-spenders",
        "mcp40",
        "Who were our top 5 customers by net spend in Q1 2026 (order totals minus refunds, cancelled orders "
        "excluded)? Include their company, segment and account manager.",
        _native_top_spenders,
        _PROGRAM_TOP_SPENDERS,
        "Rank customers by net Q1 spend",
        _expected_top_spenders,
        "Top 5 customers by net Q1 2026 spend:",
        "join 200 orders with 60 customers",
    ),
    Task(
        "migration-prs",
        "mcp40",
        "Look at the 10 most recently merged pull requests into main in acme/api. Which of them added or "
        "changed database migrations (files under db/migrations/), and did any CI check fail on their head "
        "commit?",
        _native_migrations,
        _PROGRAM_MIGRATIONS,
        "Find merged PRs touching migrations and their CI",
        _expected_migrations,
        "Migration changes among the last 10 merged PRs:",
        "3 dependent hops: list PRs, 10 file lists (with patches), check runs",
    ),
    Task(
        "largest-files",
        "file6",
        "What are the 3 largest files under packages/, and how many lines does each have?",
        _native_largest,
        _PROGRAM_LARGEST,
        "List the three largest files with line counts",
        _expected_largest,
        "The three largest files under packages/:",
        "one shell pipeline answers it natively: no intermediate data to hide",
    ),
    Task(
        "todo-counts",
        "file6",
        "Count the TODO comments in each package under packages/ and list the packages from most to "
        "fewest TODOs.",
        _native_todos,
        _PROGRAM_TODOS,
        "Count TODO markers per package",
        _expected_todos,
        "TODO counts per package (most first):",
        "grep's count mode does most of the work natively (per-file counts)",
    ),
    Task(
        "failing-tests",
        "file6",
        "Run the test suite, then tell me which tests fail and which app modules each failing test's "
        "file imports.",
        _native_failing,
        _PROGRAM_FAILING,
        "Run tests and map failures to imports",
        _expected_failing,
        "Failing tests and the app modules their test files import:",
        "full unittest output (tracebacks) natively; a targeted grep for imports",
    ),
)
