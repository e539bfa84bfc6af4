"""``toolrt prompt [--mode native|code|both]``: the system prompt and tool schemas a model is sent.

It assembles the prompt exactly as the agent loop does (a :class:`~toolrt.loop.SystemPrompt`
connected to the configured runtime), so what it prints is what ``chat`` sends — including, in Code
Mode, the ``run_code`` tool whose description is the generated SDK. The token counts say what that
costs per request, and whether they are exact (o200k_base) or an estimate.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from toolrt.cli._config import CliConfig, open_runtime
from toolrt.cli._tokens import TokenCounter

__all__ = ["add_prompt_parser", "prompt_command"]


def add_prompt_parser(commands: Any) -> None:
    """The ``prompt`` command on the CLI's subparsers."""
    prompt = commands.add_parser(
        "prompt", help="print the assembled system prompt and tool schemas, with token counts"
    )
    prompt.add_argument(
        "--mode", choices=("native", "code", "both"), help="presentation mode (default: the config's mode)"
    )


async def prompt_command(arguments: argparse.Namespace, config: CliConfig, console: Any) -> int:
    """Print the prompt, the schemas and their token counts; 0."""
    from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain

    mode = arguments.mode or config.mode
    # No MCP server is started for a prompt... unless the config has some: their tools are part of it.
    async with open_runtime(replace(config, mode=mode)) as runtime:
        prompt = SystemPrompt(chain=runtime_chain(runtime))
        connect_runtime(prompt, runtime)
        assembly = await prompt.assemble()
    system = assembly.render()
    tools: list[dict[str, Any]] = [dict(tool) for tool in assembly.tools]
    tools_text = json.dumps(tools, indent=2, ensure_ascii=False)
    count = TokenCounter()
    system_tokens = count(system)
    # What an API request carries is compact JSON: count that, not the indented print.
    tools_tokens = count(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))
    print(f"── system prompt ({mode} mode) ──")
    print(system if system else "(empty: no section contributes text in this mode)")
    heading = f"── tool schemas ({len(tools)}: {', '.join(tool['name'] for tool in tools) or 'none'}) ──"
    print(heading if len(heading) <= 80 else f"── tool schemas ({len(tools)}) ──")
    print(tools_text)
    approx = "" if count.exact else "≈ "
    print(f"── tokens: {count.label} ──")
    print(f"system prompt  {approx}{system_tokens:,}")
    print(f"tool schemas   {approx}{tools_tokens:,}")
    print(f"total          {approx}{system_tokens + tools_tokens:,}")
    return 0
