"""``toolrt mcp serve``: the user's setup served over MCP — in Code Mode by default, as one sandboxed
``run_code`` tool.

What it serves is a runtime like any other, behind the policy pipeline, with Code Mode programs in
the sandbox. Which runtime: the ``toolrt.toml`` that ``toolrt chat`` and ``toolrt call`` use (named
by ``--config FILE.toml``, or found in the working directory), so Claude Desktop sees the same tools,
MCP servers, policies and budgets as the terminal; or, without one, the servers of a
Claude-Desktop/Cursor JSON file (``--config FILE.json``) connected with
:class:`~toolrt.mcp.McpConnections`, plus read-only file tools with ``--root``.

The bearer token comes from ``TOOLRT_MCP_TOKEN`` or ``--token-file``, never from the command line
(where every user of the machine can read it in the process list).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, Literal

__all__ = ["add_mcp_parser", "mcp_command"]

_BACKENDS = ("auto", "bwrap", "landlock", "sandbox-exec", "unconfined")


def add_mcp_parser(commands: Any) -> None:
    """The ``mcp`` command and its ``serve`` subcommand, on the CLI's subparsers."""
    mcp = commands.add_parser("mcp", help="serve toolrt over MCP (Claude Desktop, Cursor, Codex, ...)")
    actions = mcp.add_subparsers(dest="mcp_command", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve MCP servers (and file tools) as one sandboxed run_code tool, or natively",
        description="Serve the MCP servers of --config (and, with --root, read-only file tools) over MCP.",
        # No prefix matching: "--token SECRET" must be refused, not read as "--token-file SECRET".
        allow_abbrev=False,
    )
    serve.add_argument(
        "--config",
        # SUPPRESS: a `toolrt --config FILE mcp serve` given before the subcommand is kept.
        default=argparse.SUPPRESS,
        help="a toolrt.toml to serve (default: ./toolrt.toml if it exists), "
        "or MCP servers in the Claude Desktop / Cursor JSON format",
    )
    serve.add_argument("--root", help="also serve read-only file tools rooted at this directory")
    serve.add_argument(
        "--mode", choices=("code", "native"), default=None, help="default: code (or the toolrt.toml's mode)"
    )
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="HTTP port (default 8000)")
    serve.add_argument(
        "--token-file",
        help="file holding the HTTP bearer token (else $TOOLRT_MCP_TOKEN); required off loopback",
    )
    serve.add_argument("--backend", default="auto", choices=_BACKENDS, help="sandbox backend (code mode)")
    serve.add_argument("--allow-unconfined", action="store_true", help="run programs even without a sandbox")
    serve.add_argument(
        "--timeout", type=float, default=60.0, help="wall-clock seconds per program (default 60)"
    )


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (0-65535), got {text!r}")
    return port


def mcp_command(arguments: argparse.Namespace) -> int:
    """Run ``toolrt mcp serve``; a user mistake is one line on stderr and exit status 2."""
    import asyncio

    try:
        plan = _plan(arguments)
    except (ValueError, OSError) as error:
        print(f"toolrt mcp serve: error: {error}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(arguments, **plan))
    except KeyboardInterrupt:
        return 130
    except (ValueError, OSError) as error:
        print(f"toolrt mcp serve: error: {error}", file=sys.stderr)
        return 2
    return 0


def _plan(arguments: argparse.Namespace) -> dict[str, Any]:
    # Every check that needs no server, before anything starts: the config, the root, the token.
    from toolrt.cli._config import CONFIG_NAME, ConfigError, load_config
    from toolrt.mcp import load_server_configs
    from toolrt.mcp._http_safety import TOKEN_ENV, require_token_off_loopback

    named = getattr(arguments, "config", None)
    setup = None
    if (named is not None and named.endswith(".toml")) or (
        named is None and arguments.root is None and (Path.cwd() / CONFIG_NAME).is_file()
    ):
        if arguments.root is not None:
            raise ValueError("--root applies without a toolrt.toml (set [tools] workspace in the file)")
        try:
            setup = load_config(None if named is None else Path(named), cwd=Path.cwd())
        except ConfigError as error:
            raise ValueError(str(error)) from None
        # The file's mode unless --mode says otherwise; "both" serves as Code Mode (run_code first).
        mode: Literal["native", "code"] = arguments.mode or ("native" if setup.mode == "native" else "code")
        setup = dataclasses.replace(setup, mode=mode)
    elif named is None and arguments.root is None:
        raise ValueError(
            f"nothing to serve: pass --config PATH (a {CONFIG_NAME}, or MCP servers as Claude-Desktop "
            f"JSON) and/or --root DIR (file tools), or run where a {CONFIG_NAME} is"
        )
    arguments.mode = setup.mode if setup is not None else arguments.mode or "code"
    servers = load_server_configs(named) if named is not None and setup is None else []
    if arguments.root is not None and not Path(arguments.root).is_dir():
        raise ValueError(f"--root {arguments.root}: not a directory")
    token: str | None = None
    if arguments.transport == "http":
        if arguments.token_file is not None:
            try:
                token = Path(arguments.token_file).read_text(encoding="utf-8").strip()
            except OSError as error:
                raise ValueError(f"--token-file {arguments.token_file}: {error.strerror or error}") from None
        else:
            token = os.environ.get(TOKEN_ENV) or None
        require_token_off_loopback(arguments.host, token)
    elif arguments.token_file is not None:
        raise ValueError("--token-file applies to --transport http only")
    return {"servers": servers, "token": token, "setup": setup}


async def _serve(arguments: argparse.Namespace, *, servers: list[Any], token: str | None, setup: Any) -> None:
    if setup is not None:
        from toolrt.cli._config import open_runtime

        # No approver over MCP: a call the file's [policies] ask matches is refused, with a reason.
        async with open_runtime(setup) as runtime:
            await _serve_runtime(runtime, arguments, token)
        return
    from toolrt import ToolRuntime
    from toolrt.codemode._code_runtime import CodeRunLimits
    from toolrt.mcp import McpConnections
    from toolrt.sandbox import PythonSandboxRuntime
    from toolrt.tools import file_tools

    sandbox = None
    if arguments.mode == "code":
        sandbox = PythonSandboxRuntime(
            pool_size=0,
            backend=arguments.backend,
            allow_unconfined=arguments.allow_unconfined or arguments.backend == "unconfined",
            limits=CodeRunLimits(wall_seconds=arguments.timeout),
        )
    runtime = ToolRuntime(mode=arguments.mode, code_runtime=sandbox)
    if arguments.root is not None:
        for definition in file_tools(arguments.root):
            runtime.register(definition)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if servers:
                await stack.enter_async_context(McpConnections(runtime, servers))
            await _serve_runtime(runtime, arguments, token)
    finally:
        runtime.close()
        if sandbox is not None:
            await sandbox.aclose()


async def _serve_runtime(runtime: Any, arguments: argparse.Namespace, token: str | None) -> None:
    from toolrt.mcp import serve_http, serve_stdio

    if arguments.transport == "stdio":
        await serve_stdio(runtime, mode=arguments.mode)
    else:
        await serve_http(runtime, host=arguments.host, port=arguments.port, token=token, mode=arguments.mode)
