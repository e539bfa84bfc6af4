"""The ``toolrt`` command.

``toolrt demo`` walks one call of each kind (success, invalid arguments, denial, unknown tool)
through the real pipeline and shows, as cards, what the model asked for, what policy decided, and
what the model reads back. ``toolrt schemas`` prints the demo tools' model-facing schemas.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolrt`` console script."""
    parser = argparse.ArgumentParser(prog="toolrt", description="The tool layer of an LLM agent.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="walk one call of each kind through the pipeline")
    commands.add_parser("schemas", help="print the demo tools' model-facing schemas as JSON")
    commands.add_parser("version", help="print the version")
    arguments = parser.parse_args(argv)
    if arguments.command == "version":
        from . import __version__

        print(__version__)
        return 0
    if arguments.command == "schemas":
        from ._demo import build_demo_runtime

        runtime, _ = build_demo_runtime()
        print(json.dumps(runtime.schemas(), indent=2))
        return 0
    from ._demo import run_demo

    return asyncio.run(run_demo(_console()))


def _console() -> Any:
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
