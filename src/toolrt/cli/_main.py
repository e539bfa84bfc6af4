"""The ``toolrt`` command.

* ``toolrt demo`` — a scripted model answers a question about the current directory with a Code Mode
  program that runs in the sandbox against read-only file tools; ``--pipeline`` instead walks one
  call of each kind (success, invalid arguments, denial, unknown tool) through the pipeline.
* ``toolrt tools [--json]`` — the configured tools and MCP servers' tools, with their schemas.
* ``toolrt prompt [--mode M]`` — the assembled system prompt and tool schemas, with token counts.
* ``toolrt call NAME JSON`` — one call through the pipeline, drawn as cards.
* ``toolrt run-code FILE|-`` — one program through the ``run_code`` pipeline.
* ``toolrt replay LOG`` — a session log drawn as cards.
* ``toolrt chat`` — an interactive agent loop against your model (OpenAI-compatible or Anthropic).
* ``toolrt mcp serve`` — toolrt over MCP. ``toolrt schemas`` = ``toolrt tools --json``.

``--config FILE`` (before or after the subcommand) names the ``toolrt.toml`` to use; without it
``./toolrt.toml`` is read if it exists. An invalid config is one line naming the file, the key and
the reason.

Every mistake a user can make on the command line (a bad flag or value, an unknown subcommand, a
program file that is missing, a directory, unreadable or not UTF-8, a bad config) is one line on
stderr, ``toolrt <command>: error: <what> ...``, and exit status 2; never a traceback. A program or
a tool call that runs and fails is exit status 1 (its error is the program's, not the command line's).
"""

from __future__ import annotations

import argparse
import asyncio
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


_CONFIG_HELP = "the toolrt.toml to use (default: ./toolrt.toml if it exists)"

# Commands that read toolrt.toml; `mcp serve` has its own --config (the Claude-Desktop JSON file).
_CONFIGURED = ("tools", "prompt", "call", "replay")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolrt`` console script."""
    # Nothing toolrt prints may stop it: on a terminal that is not UTF-8, an unwritable character is
    # written escaped rather than raising UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = _Parser(prog="toolrt", description="The tool layer of an LLM agent.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--config", default=None, help=_CONFIG_HELP)
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser("demo", help="a Code Mode program in the sandbox, end to end")
    demo.add_argument("--pipeline", action="store_true", help="walk one call of each kind instead")
    demo.add_argument("--allow-unconfined", action="store_true", help="run even without a sandbox (unsafe)")
    from toolrt.cli._call_command import add_call_parser
    from toolrt.cli._prompt_command import add_prompt_parser
    from toolrt.cli._replay_command import add_replay_parser
    from toolrt.cli._tools_command import add_tools_parser

    add_tools_parser(commands)
    add_prompt_parser(commands)
    add_call_parser(commands)
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
    add_replay_parser(commands)
    from toolrt.cli._mcp_command import add_mcp_parser

    add_mcp_parser(commands)
    from toolrt.cli._chat import add_chat_parser

    add_chat_parser(commands)
    commands.add_parser("schemas", help="the configured tools' model-facing schemas as JSON (= tools --json)")
    commands.add_parser("version", help="print the version")
    for name in _CONFIGURED:
        # After the subcommand too; SUPPRESS keeps a --config given before it.
        commands.choices[name].add_argument("--config", default=argparse.SUPPRESS, help=_CONFIG_HELP)
    arguments = parser.parse_args(argv)
    if arguments.version or arguments.command == "version":
        from toolrt import __version__

        print(__version__)
        return 0
    if arguments.command is None:
        parser.error("the following arguments are required: command")
    if arguments.command == "schemas":
        arguments.command, arguments.json = "tools", True
    if arguments.command in _CONFIGURED:
        return _configured(arguments)
    if arguments.command == "chat":
        from toolrt.cli._chat import chat_command

        return chat_command(arguments)
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


def _configured(arguments: argparse.Namespace) -> int:
    """Run a command that reads ``toolrt.toml``; a bad config is one line and exit 2."""
    from pathlib import Path

    from toolrt.cli._config import ConfigError, load_config
    from toolrt.mcp import McpConfigError, McpServerError

    prog = f"toolrt {arguments.command}"
    try:
        config = load_config(None if arguments.config is None else Path(arguments.config), cwd=Path.cwd())
        if arguments.command == "tools":
            from toolrt.cli._tools_command import tools_command as command
        elif arguments.command == "prompt":
            from toolrt.cli._prompt_command import prompt_command as command
        elif arguments.command == "call":
            from toolrt.cli._call_command import call_command as command
        else:
            from toolrt.cli._replay_command import replay_command as command
        return asyncio.run(command(arguments, config, _console()))
    except ConfigError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except (McpConfigError, McpServerError) as error:
        # A configured server that cannot start (not installed, crashes at once): the setup's fault.
        print(f"{prog}: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130


def _console() -> Any:
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
