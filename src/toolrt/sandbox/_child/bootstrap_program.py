"""The sandbox child's view of the program text: compiling it into ``async def __dsh_main__()``, and
rendering a failure as a traceback of the program's own frames only (``<run_code>``).

The program's AST is wrapped (no text splicing), so line numbers match the program and
triple-quoted strings are untouched; a fall-through ``return <nonce marker>`` is appended to tell
"no return" from ``return None``. Part of the child bootstrap (:mod:`bootstrap` loads it by path
under ``python -I -S``); standard library only, no ``toolrt`` import.
"""

from __future__ import annotations

import _ast

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing at run time would cost the child ~9 ms (it pulls in re)
    from typing import Any

__all__ = [
    "FILENAME",
    "compile_program",
    "failure_kind",
    "format_failure",
    "needs_asyncio",
    "safe_str",
    "syntax_lines",
]

FILENAME = "<run_code>"
_TRACEBACK_FRAMES = 60  # frames kept at each end of a very long traceback
_MESSAGE_CHARS = 32 * 1024


# --- compiling the program ------------------------------------------------------------------------


def compile_program(program: str, marker: tuple[str, str]) -> Any:
    """The program as the body of ``async def __dsh_main__()``, ending in ``return marker`` (a
    nonce the caller compares the result with, to tell "no return" from ``return None``)."""
    ast: Any = _ast  # node constructors typed loosely: the marker constant is a tuple
    tree: Any = compile(program, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    body = list(tree.body)
    last = max((getattr(node, "end_lineno", None) or 1 for node in body), default=1)
    position = {"lineno": last, "col_offset": 0, "end_lineno": last, "end_col_offset": 0}
    fallthrough = ast.Return(value=ast.Constant(value=marker, **position), **position)
    arguments = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    function = ast.AsyncFunctionDef(
        name="__dsh_main__",
        args=arguments,
        body=[*body, fallthrough],
        decorator_list=[],
        returns=None,
        type_comment=None,
        lineno=1,
        col_offset=0,
        end_lineno=last,
        end_col_offset=0,
    )
    if "type_params" in ast.AsyncFunctionDef._fields:
        function.type_params = []
    module = ast.Module(body=[function], type_ignores=[])
    return compile(module, FILENAME, "exec", dont_inherit=True)


def needs_asyncio(program: str) -> bool:
    """Whether the program may use asyncio (or import dynamically), so needs a real event loop."""
    return "asyncio" in program or "__import__" in program or "importlib" in program


# --- rendering failures (program frames only) ---------------------------------------------------------


def _type_name(error: BaseException) -> str:
    kind = type(error)
    module = getattr(kind, "__module__", "builtins")
    qualname = getattr(kind, "__qualname__", kind.__name__)
    return qualname if module in ("builtins", "__main__", "__run_code__") else f"{module}.{qualname}"


def safe_str(error: BaseException) -> str:
    """``str(error)``, which runs the program's code (its ``__str__``) and so may itself fail."""
    try:
        return str(error)
    except BaseException:
        return "<exception str() failed>"


def _source_line(program_lines: list[str], lineno: int | None) -> str:
    if lineno is not None and 0 < lineno <= len(program_lines):
        return program_lines[lineno - 1].strip()
    return ""


def syntax_lines(error: SyntaxError, program_lines: list[str]) -> list[str]:
    """A ``SyntaxError`` in the program as the traceback module shows one (no frames)."""
    out = [f'  File "{FILENAME}", line {error.lineno}']
    text = error.text if error.text is not None else _source_line(program_lines, error.lineno)
    if text:
        stripped = text.rstrip("\n")
        indent = len(stripped) - len(stripped.lstrip())
        out.append("    " + stripped.strip())
        if error.offset:
            out.append("    " + " " * max(error.offset - 1 - indent, 0) + "^")
    out.append(f"{_type_name(error)}: {error.msg}")
    return out


def _frames(error: BaseException, program_lines: list[str]) -> list[str]:
    entries: list[tuple[int | None, str]] = []
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == FILENAME:
            name = "<module>" if code.co_name == "__dsh_main__" else code.co_name
            entries.append((tb.tb_lineno, name))
        tb = tb.tb_next
    out: list[str] = []
    previous: tuple[int | None, str] | None = None
    repeats = 0
    for index, entry in enumerate(entries):
        if len(entries) > 2 * _TRACEBACK_FRAMES and index == _TRACEBACK_FRAMES:
            out.append(f"  [... {len(entries) - 2 * _TRACEBACK_FRAMES} more frames ...]")
        if (
            len(entries) > 2 * _TRACEBACK_FRAMES
            and _TRACEBACK_FRAMES <= index < len(entries) - _TRACEBACK_FRAMES
        ):
            continue
        if entry == previous:
            repeats += 1
            if repeats >= 3:
                continue
        else:
            if repeats >= 3:
                out.append(f"  [Previous line repeated {repeats - 2} more times]")
            repeats = 0
        previous = entry
        out.append(f'  File "{FILENAME}", line {entry[0]}, in {entry[1]}')
        source = _source_line(program_lines, entry[0])
        if source:
            out.append("    " + source)
    if repeats >= 3:
        out.append(f"  [Previous line repeated {repeats - 2} more times]")
    return out


def _render_one(error: BaseException, program_lines: list[str], indent: str = "") -> list[str]:
    out: list[str] = []
    frames = _frames(error, program_lines)
    if frames:
        out.append("Traceback (most recent call last):")
        out.extend(frames)
    if isinstance(error, SyntaxError) and error.filename == FILENAME:
        out.extend(syntax_lines(error, program_lines))
    else:
        message = safe_str(error)
        out.append(f"{_type_name(error)}: {message}" if message else _type_name(error))
    notes = getattr(error, "__notes__", None)
    if isinstance(notes, list | tuple):
        out.extend(str(note) for note in notes)
    if isinstance(error, BaseExceptionGroup):
        for number, inner in enumerate(error.exceptions[:10], 1):
            out.append(f"+---------------- {number} ----------------")
            out.extend("| " + line for line in _render_one(inner, program_lines))
    return [indent + line for line in out]


def format_failure(error: BaseException, program_lines: list[str]) -> str:
    """The failure and its cause/context chain, each with the program's own frames only (source
    lines from ``program_lines``), capped at a size the host accepts."""
    chain: list[tuple[BaseException, str]] = []
    seen: set[int] = set()
    current: BaseException | None = error
    link = ""
    while current is not None and id(current) not in seen and len(chain) < 10:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            link = "\nThe above exception was the direct cause of the following exception:\n"
            current = current.__cause__
        elif current.__context__ is not None and not current.__suppress_context__:
            link = "\nDuring handling of the above exception, another exception occurred:\n"
            current = current.__context__
        else:
            current = None
    lines: list[str] = []
    for index in range(len(chain) - 1, -1, -1):
        lines.extend(_render_one(chain[index][0], program_lines))
        if index:
            lines.append(chain[index][1])
    text = "\n".join(lines)
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "\n[... traceback truncated]"


def failure_kind(error: BaseException) -> str:
    """The ``done`` frame's kind: running out of memory or disk is a limit, not a program bug."""
    if isinstance(error, MemoryError):
        return "memory-limit"
    if isinstance(error, OSError) and error.errno in (27, 28, 122):  # EFBIG, ENOSPC, EDQUOT
        return "disk-limit"
    return "exception"
