"""What of TypeScript a run_code program may use: everything Deno strips, nothing it compiles.

Deno runs TypeScript by erasing its types, but ``enum`` and ``namespace`` (and ``module X {}``)
are not types: they generate code with semantics of their own (reverse mappings, merged
declarations) that a model cannot see in the SDK's declarations and that "erasable syntax only"
TypeScript refuses. A program using them is refused before it runs, with the line, so the model
rewrites it; the scan skips strings, template literals and comments, so the words in text are fine.
"""

from __future__ import annotations

import re

__all__ = ["typescript_problem"]

_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_DECLARATION = re.compile(r"\s+[A-Za-z_$][\w$]*(\s*\.\s*[A-Za-z_$][\w$]*)*\s*\{")
_ADVICE = {
    "enum": "use a union of string literals or a plain object instead",
    "namespace": "use plain objects and functions instead",
    "module": "use plain objects and functions instead",
}


def _code_only(program: str) -> str:
    """``program`` with strings, template literals and comments blanked (newlines kept)."""
    out: list[str] = []
    index, length = 0, len(program)
    while index < length:
        char = program[index]
        if program.startswith("//", index):
            end = program.find("\n", index)
            end = length if end < 0 else end
        elif program.startswith("/*", index):
            end = program.find("*/", index + 2)
            end = length if end < 0 else end + 2
        elif char in "'\"`":
            end = index + 1
            while end < length and program[end] != char:
                if char != "`" and program[end] == "\n":
                    break
                end += 2 if program[end] == "\\" else 1
            end = min(end + 1, length)
        else:
            out.append(char)
            index += 1
            continue
        out.append("".join(c if c == "\n" else " " for c in program[index:end]))
        index = end
    return "".join(out)


def typescript_problem(program: str) -> str | None:
    """Why ``program`` cannot run as erasable TypeScript (a ``SyntaxError`` message naming the
    line), or ``None``::

        >>> typescript_problem("enum Color { Red }").startswith("SyntaxError: line 1: TypeScript enum")
        True
    """
    code = _code_only(program)
    for match in _WORD.finditer(code):
        word = match.group()
        if word not in _ADVICE:
            continue
        start = match.start()
        if start and (code[start - 1] in ".$" or code[start - 1].isalnum() or code[start - 1] == "_"):
            continue  # a member (x.enum) or part of a longer name
        rest = code[match.end() :]
        if word == "enum":
            found = re.match(r"\s+[A-Za-z_$][\w$]*\s*\{", rest) is not None
        else:
            found = _DECLARATION.match(rest) is not None
        if found:
            line = code.count("\n", 0, start) + 1
            return (
                f"SyntaxError: line {line}: TypeScript {word} is not supported in a run_code program "
                f"(only type annotations are stripped; {word} generates code): {_ADVICE[word]}"
            )
    return None
