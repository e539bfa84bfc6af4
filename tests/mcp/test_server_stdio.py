"""``toolrt mcp serve`` over stdio as a real child process: the ``mcp`` SDK's stdio client, and raw
JSON-RPC lines for what a well-behaved client never sends. Bad input first.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters
from test_server_support import (
    TOOLRT,
    alive,
    child_env,
    descendants,
    serve_args,
    serve_to_exit,
    stop,
    wait_until,
)

from mcp import Client

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("# a\n")
    (tmp_path / "b.md").write_text("# b\n")
    (tmp_path / "c.txt").write_text("c\n")
    return tmp_path


class RawSession:
    """A ``toolrt mcp serve`` child spoken to line by line."""

    def __init__(self, *extra: str) -> None:
        self.process = subprocess.Popen(
            serve_args(*extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(),
        )

    def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, (
            f"the server closed stdout: {self.process.stderr.read() if self.process.stderr else b''!r}"
        )
        return json.loads(line)  # type: ignore[no-any-return]

    def initialize(self) -> None:
        self.send(INITIALIZE)
        assert self.receive()["id"] == 0
        self.send(INITIALIZED)

    def start_a_run_that_waits(self) -> set[int]:
        """Call ``run_code`` (request id 1) with a program that sleeps for two minutes; return the
        processes below the server once its sandbox has started (every one seen while waiting)."""
        call = {
            "name": "run_code",
            "arguments": {"code": "import asyncio\nawait asyncio.sleep(120)", "description": "wait forever"},
        }
        self.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        below: set[int] = set()

        def sandbox_started() -> bool:
            below.update(descendants(self.process.pid))
            return bool(below)

        assert wait_until(sandbox_started), "no sandbox process started"
        wait_until(lambda: False, timeout=0.5)  # let the sandbox's own children appear
        below.update(descendants(self.process.pid))
        return below

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        stop(self.process)  # type: ignore[arg-type]


def params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=TOOLRT[0], args=["mcp", "serve", *extra], env=child_env())


# --- bad input -------------------------------------------------------------------------------------


def test_lines_that_are_not_json_rpc_lose_nothing_the_server_keeps_serving(root: Path) -> None:
    session = RawSession("--root", str(root))
    try:
        session.send(b"{this is not json")
        session.send(b"\xff\xfe not even text")
        # The SDK's stdio transport drops a line it cannot parse (or answers -32700): either way the
        # next request is served, and nothing else reaches stdout.
        session.send(INITIALIZE)
        reply = session.receive()
        while "error" in reply and reply.get("id") is None:
            assert reply["error"]["code"] == -32700
            reply = session.receive()
        assert reply["id"] == 0 and "result" in reply
        session.send(INITIALIZED)
        session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert [tool["name"] for tool in session.receive()["result"]["tools"]] == ["run_code"]
    finally:
        session.close()


def test_an_unknown_method_and_wrong_params_are_json_rpc_errors(root: Path) -> None:
    session = RawSession("--root", str(root))
    try:
        session.initialize()
        session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/explode"})
        assert session.receive()["error"]["code"] == -32601
        session.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"arguments": {}}})
        assert session.receive()["error"]["code"] == -32602
        session.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}})
        reply = session.receive()
        assert reply["error"]["code"] == -32602
        assert reply["error"]["message"] == 'unknown tool "nope": this server serves run_code'
    finally:
        session.close()


def test_a_huge_request_is_answered_and_loses_nothing(root: Path) -> None:
    session = RawSession("--root", str(root))
    try:
        session.initialize()
        program = "x = 1\n" + "# padding\n" * 1_000_000 + "print(x)"  # ~10 MB
        call = {"name": "run_code", "arguments": {"code": program, "description": "big"}}
        session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        reply = session.receive()
        assert reply["id"] == 1
        assert "result" in reply or "error" in reply
        # Whatever the answer, the server is still there for the next request.
        session.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert session.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    finally:
        session.close()


def test_a_config_file_that_is_not_json_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text("{not json")
    done = serve_to_exit("--config", str(config))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("toolrt mcp serve: error: ")
    assert str(config) in done.stderr


def test_nothing_to_serve_is_one_line_and_exit_2() -> None:
    done = serve_to_exit()
    assert done.returncode == 2
    assert done.stderr == (
        "toolrt mcp serve: error: nothing to serve: pass --config PATH (a toolrt.toml, or MCP servers "
        "as Claude-Desktop JSON) and/or --root DIR (file tools), or run where a toolrt.toml is\n"
    )


def test_an_invalid_toolrt_toml_is_one_line_naming_the_file_and_the_key(tmp_path: Path) -> None:
    """CL10: the served setup is checked as every command checks it, before anything starts."""
    config = tmp_path / "toolrt.toml"
    config.write_text('[policies]\naks = ["bash"]\n')
    done = serve_to_exit("--config", str(config))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("toolrt mcp serve: error: ")
    assert "policies.aks: unknown key" in done.stderr and str(config) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    both = serve_to_exit("--config", str(config), "--root", str(tmp_path))
    assert both.returncode == 2 and "--root applies without a toolrt.toml" in both.stderr


# --- the SDK's stdio client ----------------------------------------------------------------------


async def test_code_mode_over_stdio_runs_a_program_against_the_file_tools(root: Path) -> None:
    async with Client(params("--root", str(root))) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool(
            "run_code",
            {
                "code": 'files = await tools.list_files({"pattern": "*.md"})\n'
                'print(sorted(f["path"] for f in files))',
                "description": "list markdown files",
            },
        )
    assert [tool.name for tool in tools] == ["run_code"]
    assert "async def list_files(" in (tools[0].description or "")
    assert not result.is_error, result.content
    assert result.content[0].text == "['a.md', 'b.md']"


async def test_native_mode_over_stdio_serves_the_file_tools(root: Path) -> None:
    async with Client(params("--root", str(root), "--mode", "native")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("read_file", {"path": "a.md"})
        escape = await client.call_tool("read_file", {"path": "../outside.md"})
    assert list(tools) == ["list_files", "read_file", "file_info"]
    assert tools["read_file"].annotations is not None and tools["read_file"].annotations.read_only_hint
    assert result.content[0].text == "# a\n"
    assert escape.is_error


def write_setup(root: Path, mode: str, ask: str) -> Path:
    config = root / "toolrt.toml"
    config.write_text(
        f'mode = "{mode}"\n[tools]\nbuiltin = ["fs-readonly"]\nworkspace = "."\n[policies]\nask = {ask}\n'
    )
    return config


async def test_a_toolrt_toml_is_served_as_the_terminal_sees_it(root: Path) -> None:
    """CL10: `toolrt mcp serve --config toolrt.toml` serves the file's tools, mode and policies: the
    same setup `toolrt chat` and `toolrt call` use. No approver over MCP: an asked call is refused."""
    config = write_setup(root, "native", '["grep"]')
    async with Client(params("--config", str(config))) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        read = await client.call_tool("read", {"path": "a.md"})
        asked = await client.call_tool("grep", {"pattern": "a"})
        escape = await client.call_tool("read", {"path": "../outside.md"})
    assert tools == ["read", "glob", "grep"]
    assert not read.is_error and "# a" in read.content[0].text
    assert asked.is_error and "approv" in asked.content[0].text
    assert escape.is_error and "outside" in escape.content[0].text


async def test_the_toolrt_toml_of_the_working_directory_is_served_in_code_mode(root: Path) -> None:
    """CL10: with no --config, ./toolrt.toml is the setup; its mode "both" serves as Code Mode."""
    write_setup(root, "both", "[]")
    server = StdioServerParameters(command=TOOLRT[0], args=["mcp", "serve"], env=child_env(), cwd=str(root))
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool(
            "run_code",
            {
                "code": 'found = await tools.glob({"pattern": "*.md"})\nprint(sorted(found["paths"]))',
                "description": "list markdown files",
            },
        )
    assert [tool.name for tool in tools] == ["run_code"]
    assert "async def glob(" in (tools[0].description or "")
    assert not result.is_error, result.content
    assert result.content[0].text == "['a.md', 'b.md']"


# --- a client that goes away mid-call --------------------------------------------------------------


def test_a_client_that_disconnects_mid_run_aborts_it_and_leaves_no_sandbox_process(root: Path) -> None:
    session = RawSession("--root", str(root))
    try:
        session.initialize()
        below = session.start_a_run_that_waits()
        assert session.process.stdin is not None
        session.process.stdin.close()  # the client is gone
        assert session.process.wait(timeout=20) == 0
        assert wait_until(lambda: not alive(below), timeout=10), f"orphans: {alive(below)}"
    finally:
        session.close()


def test_a_cancelled_call_kills_its_sandbox_process_and_the_server_serves_on(root: Path) -> None:
    session = RawSession("--root", str(root))
    try:
        session.initialize()
        below = session.start_a_run_that_waits()
        session.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        assert wait_until(lambda: not alive(below), timeout=10), f"still running: {alive(below)}"
        session.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert session.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert session.process.poll() is None
    finally:
        session.close()
