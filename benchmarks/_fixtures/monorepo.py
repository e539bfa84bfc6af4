"""The synthetic monorepo of the file tools: its deterministic files, and the :class:`Workspace` on disk."""

from __future__ import annotations

import contextlib
import random
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

PACKAGES = ("auth", "billing", "catalog", "cli", "core", "notify", "search", "storage")
NOUNS = (  # noqa: SIM905
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


def ident(rng: random.Random) -> str:
    """A random ``verb_noun`` identifier."""
    return f"{rng.choice(_VERBS)}_{rng.choice(NOUNS)}"


def _python_source(rng: random.Random, functions: int, todo_rate: float) -> str:
    lines = ['"""Generated module for the token benchmark."""', "", "from __future__ import annotations", ""]
    lines.append(f"import {rng.choice(['json', 'logging', 'time', 'hashlib', 'itertools'])}")
    lines.append("")
    for _ in range(functions):
        name, arg = ident(rng), rng.choice(NOUNS)
        lines += ["", f"def {name}({arg}, *, strict: bool = False):"]
        lines.append(f'    """{name.replace("_", " ").capitalize()} for the given {arg}."""')
        for _ in range(rng.randint(4, 22)):
            roll = rng.random()
            var = rng.choice(NOUNS)
            if roll < todo_rate:
                lines.append(f"    # TODO: {rng.choice(_TODO_NOTES)}")
            elif roll < 0.35:
                lines.append(f"    if {var} is None and strict:")
                lines.append(f'        raise ValueError("missing {var} for {name}")')
            elif roll < 0.6:
                lines.append(f"    {var} = {ident(rng)}({arg}, limit={rng.randint(1, 500)})")
            elif roll < 0.8:
                lines.append(f"    for item in {var}s or ():")
                lines.append(f"        {arg} = merge_{rng.choice(NOUNS)}({arg}, item)")
            else:
                lines.append(
                    f"    # {var} is {rng.choice(['cached', 'optional', 'validated upstream'])} here"
                )
        lines.append(f"    return {arg}")
    return "\n".join(lines) + "\n"


def _typescript_source(rng: random.Random, functions: int, todo_rate: float) -> str:
    lines = [f"import {{ {rng.choice(NOUNS)}Client }} from './client';", ""]
    for _ in range(functions):
        name = ident(rng).replace("_", "")
        lines.append(f"export async function {name}(input: Record<string, unknown>): Promise<number> {{")
        for _ in range(rng.randint(3, 14)):
            roll = rng.random()
            if roll < todo_rate:
                lines.append(f"  // TODO: {rng.choice(_TODO_NOTES)}")
            elif roll < 0.5:
                lines.append(f"  const {rng.choice(NOUNS)} = await fetch{rng.choice(NOUNS).title()}(input);")
            else:
                lines.append(f"  if (!input.{rng.choice(NOUNS)}) return {rng.randint(0, 9)};")
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
            name = f"{rng.choice(_VERBS)}_{module}_{rng.choice(NOUNS)}" if k else "round_cents"
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
            stem = f"{rng.choice(NOUNS)}_{role}"
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
        """Delete the workspace (and its parent, when empty)."""
        shutil.rmtree(self.root, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.root.parent.rmdir()

    def resolve(self, path: str | None) -> Path:
        """The absolute path of ``path`` (relative to the root); refuses a path outside the workspace."""
        target = (self.root / (path or ".")).resolve()
        if self.root.resolve() not in (target, *target.parents):
            raise ValueError(f"path escapes the workspace: {path}")
        return target

    def relative(self, path: Path) -> str:
        """The POSIX path of ``path`` relative to the root."""
        return path.resolve().relative_to(self.root.resolve()).as_posix()

    def walk(self, base: Path) -> Iterator[Path]:
        """Every file under ``base`` (or ``base`` itself, if a file), sorted, without ``__pycache__``."""
        if base.is_file():
            yield base
            return
        yield from sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def glob_match(pattern: str, relative: str) -> bool:
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
