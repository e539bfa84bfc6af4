"""``toolrt run-code``: one program through the real ``run_code`` pipeline, from a file or stdin.

What it prints is bounded like what a model reads: ``--max-output N`` characters (default
``DEFAULT_OUTPUT_BUDGET``, 20,000), the first 80% and the last 20% of it, with the cut marked where it
is and counted on stderr. ``--max-output unbounded`` prints everything. A failed program's error is
printed once, as one JSON line on stderr (``{"error": {"message", "code", "name"}}``), its message
bounded the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal as signals
import sys
from typing import Any

from toolrt._abort import AbortController
from toolrt._content import content_text
from toolrt._errors import MAX_ECHO_CHARS, clip_text
from toolrt._execution import ToolExecutionInput
from toolrt._tool_definition import DEFAULT_OUTPUT_BUDGET, UNBOUNDED, OutputBudget
from toolrt._tool_runtime import ToolRuntime
from toolrt.codemode._code_runtime import CodeRunLimits
from toolrt.sandbox import PythonSandboxRuntime
from toolrt.tools import file_tools, fs_tools


class ProgramFileError(Exception):
    """The program cannot be read: the message is the one line the command prints."""


def read_program(source: str) -> str:
    """The program text of ``source`` (a path, or ``-`` for standard input), strictly UTF-8.

    Every way reading can fail is a :class:`ProgramFileError` whose message names the file and
    what to do, so the command prints one line instead of a traceback.
    """
    program = (
        "the program on standard input"
        if source == "-"
        else f"the program {clip_text(repr(source), MAX_ECHO_CHARS)}"
    )
    try:
        if source == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as file:
                raw = file.read()
    except FileNotFoundError:
        raise ProgramFileError(f"cannot read {program}: no such file") from None
    except IsADirectoryError:
        raise ProgramFileError(f"cannot read {program}: it is a directory; pass a file") from None
    except PermissionError:
        raise ProgramFileError(f"cannot read {program}: permission denied") from None
    except OSError as error:
        raise ProgramFileError(f"cannot read {program}: {error.strerror or error}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise ProgramFileError(
            f"{program} is not valid UTF-8 text (byte {error.start}, line {line}: "
            f"{error.object[error.start : error.start + 1]!r}); save it as UTF-8"
        ) from None


_DENIED = re.compile(
    r"(?P<kind>PermissionError|FileNotFoundError): \[Errno \d+\] [^:\n]*: '(?P<path>/[^'\n]*)'\s*$"
)


def sandbox_refusal(message: str, workspace: str) -> str | None:
    """What to tell the user when a program failed because the sandbox kept a host path from it.

    Inside the sandbox a host file is either denied (``PermissionError``) or simply not there
    (``FileNotFoundError``: the sandbox never mounted it). The second reads like a missing file, so
    the host checks: a path that exists here, outside the workspace, was refused by the sandbox.

    >>> sandbox_refusal("FileNotFoundError: [Errno 2] No such file or directory: '/'", "/tmp")
    "refused by the sandbox: '/' exists on this machine, but the sandbox does not show it to programs"
    """
    found = _DENIED.search(message)
    if found is None:
        return None
    path = found["path"]
    root = os.path.realpath(workspace)
    inside = os.path.realpath(path) == root or os.path.realpath(path).startswith(root + os.sep)
    if found["kind"] == "PermissionError":
        return f"refused by the sandbox: permission denied for {path!r}"
    if not inside and os.path.lexists(path):
        return (
            f"refused by the sandbox: {path!r} exists on this machine, "
            "but the sandbox does not show it to programs"
        )
    return None


def parse_max_output(text: str) -> OutputBudget:
    """``--max-output``'s value: a positive number of characters, or ``unbounded``."""
    if text.strip().lower() == "unbounded":
        return UNBOUNDED
    try:
        budget = int(text)
    except ValueError:
        budget = 0
    if budget < 1:
        raise argparse.ArgumentTypeError(
            f"must be a positive number of characters or 'unbounded', got {text!r}"
        )
    return budget


def bound_for_terminal(text: str, budget: OutputBudget) -> tuple[str, int]:
    """``text`` cut to ``budget`` characters (head and tail, the cut marked inline); and how many were cut."""
    if not isinstance(budget, int) or len(text) <= budget:
        return text, 0
    tail_chars = budget // 5
    head = text[: budget - tail_chars]
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n[… {cut:,} characters cut (--max-output {budget}) …]\n{tail}", cut


async def run_code_command(
    source: str,
    *,
    program: str | None = None,
    backend: Any,
    allow_unconfined: bool,
    timeout: float,
    max_output: OutputBudget = DEFAULT_OUTPUT_BUDGET,
) -> int:
    """Run the program (``program``, or read from ``source``); print its output (stdout) or its error
    (stderr, once) and the isolation (stderr)."""
    import asyncio

    if program is None:
        program = read_program(source)
    code_runtime = PythonSandboxRuntime(
        pool_size=0,
        backend=backend,
        allow_unconfined=allow_unconfined or backend == "unconfined",
        limits=CodeRunLimits(wall_seconds=timeout),
    )
    # No model reads this result and no read_spill can be called after the command ends, so the
    # command bounds what it prints itself (below) instead of spilling.
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime, output_budget=UNBOUNDED)
    # The read-only fs tools, and the three older file tools programs written for them still call.
    for definition in [*fs_tools(os.getcwd(), read_only=True), *file_tools(os.getcwd())]:
        runtime.register(definition)
    controller = AbortController()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signals.SIGINT, controller.abort, "interrupted (SIGINT)")
    try:
        result = await runtime.execute(
            ToolExecutionInput(
                call_id="run-code-1",
                name="run_code",
                arguments={"code": program, "description": f"toolrt run-code {source}"},
                signal=controller.signal,
            )
        )
    finally:
        loop.remove_signal_handler(signals.SIGINT)
        await code_runtime.aclose()
    isolation = (result.meta or {}).get("isolation") if isinstance(result.meta, dict) else None
    if isolation is None:
        isolation = code_runtime.isolation.as_json()
    if result.is_error:
        error = result.error
        info = error.info
        text = error.message
        shown, cut = bound_for_terminal(text, max_output)
        structured = {
            "message": shown,
            "code": info.code if info else None,
            "name": info.name if info else None,
        }
        print(json.dumps({"error": structured}, ensure_ascii=False), file=sys.stderr)
        refusal = sandbox_refusal(text, os.getcwd())
        if refusal is not None:
            print(f"toolrt run-code: {refusal}", file=sys.stderr)
    else:
        text = content_text(result.content)
        shown, cut = bound_for_terminal(text, max_output)
        print(shown)
    if cut:
        total = len(text)
        print(
            f"toolrt run-code: output cut to {max_output:,} of {total:,} characters "
            f"({cut:,} not shown); pass --max-output N or --max-output unbounded to see more",
            file=sys.stderr,
        )
    layers = ", ".join(isolation.get("layers") or []) or "none"
    print(
        f"isolation: {isolation.get('enforcement')} ({layers}; Landlock ABI {isolation.get('landlockAbi')})",
        file=sys.stderr,
    )
    return 1 if result.is_error else 0
