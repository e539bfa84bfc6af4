"""``toolrt tools [--json]``: every tool the configuration gives a model — built-ins and MCP servers'.

Listed as the model sees them in native mode (name, description, parameters), whatever ``mode`` the
config sets: in Code Mode the same tools become the SDK, and ``toolrt prompt --mode code`` shows that.
The table is for reading; ``--json`` is the exact schemas, for diffing and for scripts.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolrt.cli._config import CliConfig, open_runtime

__all__ = ["add_tools_parser", "parameter_summary", "tools_command"]


def add_tools_parser(commands: Any) -> None:
    """The ``tools`` command on the CLI's subparsers."""
    tools = commands.add_parser(
        "tools", help="list the configured tools (and MCP servers' tools) with their schemas"
    )
    tools.add_argument("--json", action="store_true", help="print the model-facing schemas as JSON")


def parameter_summary(parameters: dict[str, Any]) -> str:
    """``path: string, offset?: integer``: a schema's top-level parameters (``?`` marks optional)."""
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    parts = []
    for name, schema in properties.items():
        kind = schema.get("type", "any") if isinstance(schema, dict) else "any"
        if isinstance(kind, list):
            kind = "|".join(str(item) for item in kind)
        parts.append(f"{name}{'' if name in required else '?'}: {kind}")
    return ", ".join(parts) or "(none)"


def _shown(path: Path) -> str:
    # Relative to the working directory when under it: what the user typed or would type.
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


async def tools_command(arguments: argparse.Namespace, config: CliConfig, console: Any) -> int:
    """Print the tools; 0."""
    from rich.table import Table
    from rich.text import Text

    async with open_runtime(replace(config, mode="native")) as runtime:
        schemas = runtime.schemas()
    if arguments.json:
        print(json.dumps(schemas, indent=2, ensure_ascii=False))
        return 0
    source = _shown(config.source) if config.source is not None else "defaults (no toolrt.toml here)"
    table = Table(title=f"{len(schemas)} tools · {source}", title_justify="left", expand=False)
    table.add_column("tool", style="bold", no_wrap=True)
    table.add_column("what it does · parameters (? = optional)")
    for schema in schemas:
        summary = (schema["description"].strip().splitlines() or [""])[0]
        cell = Text(summary)
        cell.append("\n" + parameter_summary(schema["parameters"]), style="dim")
        table.add_row(schema["name"], cell)
    console.print(table)
    return 0
