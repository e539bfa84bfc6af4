"""The ``toolrt`` command.

* ``toolrt demo`` — a scripted model answers a question about the current directory with a Code Mode
  program that runs in the sandbox against read-only file tools; shows the program, each sub-call
  with its policy outcome, the answer and the isolation achieved. ``--pipeline`` instead walks one
  call of each kind (success, invalid arguments, denial, unknown tool) through the pipeline.
* ``toolrt run-code FILE|-`` — run one program through the ``run_code`` pipeline against the
  built-in file tools (rooted at the current directory); print its output or its structured error
  and the isolation achieved; exit non-zero on failure.
* ``toolrt schemas`` — the pipeline demo tools' model-facing schemas.

Every mistake a user can make on the command line (a bad flag or value, an unknown subcommand, a
program file that is missing, a directory, unreadable or not UTF-8) is one line on stderr,
``toolrt <command>: error: <what> ...``, and exit status 2; never a traceback. A program that runs
and fails is exit status 1 (its error is the program's, not the command line's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["main"]

_BACKENDS = ("auto", "bwrap", "landlock", "sandbox-exec", "unconfined")


USAGE_ERROR = 2
"""The exit status of a command-line mistake (argparse's own)."""


class _Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported in one line (argparse prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return seconds


def _max_output(text: str) -> Any:
    # Parsed where run-code lives; argparse turns its ArgumentTypeError into one usage line.
    from toolrt.cli._run_code import parse_max_output

    return parse_max_output(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolrt`` console script."""
    # Nothing toolrt prints may stop it: on a terminal that is not UTF-8, an unwritable character is
    # written escaped rather than raising UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = _Parser(prog="toolrt", description="The tool layer of an LLM agent.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="a Code Mode program in the sandbox, end to end")
    demo.add_argument("--pipeline", action="store_true", help="walk one call of each kind instead")
    demo.add_argument("--allow-unconfined", action="store_true", help="run even without a sandbox (unsafe)")
    run_code = commands.add_parser("run-code", help="run one program through the run_code pipeline")
    run_code.add_argument("file", help="the program file, or - for standard input")
    run_code.add_argument(
        "--allow-unconfined", action="store_true", help="run even without a sandbox (unsafe)"
    )
    # Spelled out (importing the sandbox package costs ~0.1 s); a test keeps it equal to BACKEND_NAMES.
    run_code.add_argument("--backend", default="auto", choices=_BACKENDS)
    run_code.add_argument("--timeout", type=_seconds, default=30.0, help="wall-clock seconds (default 30)")
    run_code.add_argument(
        "--max-output",
        type=_max_output,
        default="20000",
        help="characters of output to print, or 'unbounded' (default 20000)",
    )
    from toolrt.cli._mcp_command import add_mcp_parser

    add_mcp_parser(commands)
    commands.add_parser("schemas", help="print the demo tools' model-facing schemas as JSON")
    commands.add_parser("version", help="print the version")
    arguments = parser.parse_args(argv)
    if arguments.command == "version":
        from toolrt import __version__

        print(__version__)
        return 0
    if arguments.command == "schemas":
        from toolrt.cli._demo import build_demo_runtime

        runtime, _ = build_demo_runtime()
        print(json.dumps(runtime.schemas(), indent=2))
        return 0
    if arguments.command == "mcp":
        from toolrt.cli._mcp_command import mcp_command

        return mcp_command(arguments)
    if arguments.command == "run-code":
        from toolrt.cli._run_code import ProgramFileError, read_program, run_code_command

        try:
            program = read_program(arguments.file)
        except ProgramFileError as error:
            run_code.exit(USAGE_ERROR, f"{run_code.prog}: error: {error}\n")
        return asyncio.run(
            run_code_command(
                arguments.file,
                program=program,
                backend=arguments.backend,
                allow_unconfined=arguments.allow_unconfined,
                timeout=arguments.timeout,
                max_output=arguments.max_output,
            )
        )
    if arguments.pipeline:
        from toolrt.cli._demo import run_demo

        return asyncio.run(run_demo(_console()))
    from toolrt.cli._codemode_demo import run_codemode_demo

    return asyncio.run(run_codemode_demo(_console(), allow_unconfined=arguments.allow_unconfined))


def _console() -> Any:
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
