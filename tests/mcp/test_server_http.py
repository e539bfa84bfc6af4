"""``toolrt mcp serve --transport http`` as a real server process: the ``mcp`` SDK's HTTP client, and
raw HTTP requests for what it would never send — a hostile web page, a huge body, no token.
Bad input and the safety rules first.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_server_support import child_env, http_server, serve_to_exit

from mcp import Client

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "notes.md").write_text("# notes\n")
    return tmp_path


def post(url: str, body: bytes | Any, **headers: str) -> tuple[int, str]:
    """One raw POST; returns the status and the body (errors included)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for name, value in headers.items():
        request.add_header(name.replace("_", "-"), value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def authorized(url: str, token: str) -> Client:
    return Client(
        streamable_http_client(
            url, http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        )
    )


# --- the safety rules --------------------------------------------------------------------------------


def test_a_web_page_origin_is_refused(root: Path) -> None:
    with http_server("--root", str(root)) as url:
        status, _ = post(url, INITIALIZE, Origin="http://evil.example")
        local_status, _ = post(url, INITIALIZE, Origin="http://localhost:3000")
    assert status == 403
    assert local_status == 200


def test_a_rebound_host_name_is_refused(root: Path) -> None:
    with http_server("--root", str(root)) as url:
        status, _ = post(url, INITIALIZE, Host="evil.example:8000")
    assert status == 421


def test_binding_off_loopback_without_a_token_refuses_to_start_in_one_line(root: Path) -> None:
    done = serve_to_exit("--root", str(root), "--transport", "http", "--host", "0.0.0.0", env=child_env())
    assert done.returncode == 2
    assert done.stderr == (
        "toolrt mcp serve: error: binding 0.0.0.0 (not loopback) needs a bearer token: "
        "set TOOLRT_MCP_TOKEN or pass --token-file "
        "(every client then sends 'Authorization: Bearer <token>')\n"
    )


def test_an_empty_token_file_refuses_to_start(root: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  \n")
    done = serve_to_exit(
        "--root", str(root), "--transport", "http", "--token-file", str(token_file), env=child_env()
    )
    assert done.returncode == 2
    assert done.stderr.startswith("toolrt mcp serve: error: the bearer token is empty")


def test_the_token_is_never_taken_from_the_command_line(root: Path) -> None:
    done = serve_to_exit("--root", str(root), "--transport", "http", "--token", "s3cret", env=child_env())
    assert done.returncode == 2
    assert "unrecognized arguments: --token s3cret" in done.stderr


def test_with_a_token_a_request_without_it_or_with_another_gets_401(root: Path) -> None:
    with http_server("--root", str(root), env=child_env(TOOLRT_MCP_TOKEN="s3cret-token")) as url:
        missing, _ = post(url, INITIALIZE)
        wrong, _ = post(url, INITIALIZE, Authorization="Bearer s3cret-tokem")
        not_bearer, _ = post(url, INITIALIZE, Authorization="Basic czNjcmV0LXRva2Vu")
        right, _ = post(url, INITIALIZE, Authorization="Bearer s3cret-token")
    assert (missing, wrong, not_bearer, right) == (401, 401, 401, 200)


async def test_off_loopback_with_a_token_file_the_sdk_client_gets_in_with_the_token(
    root: Path, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-token\n")
    with http_server("--root", str(root), "--token-file", str(token_file), host="0.0.0.0") as url:
        status, _ = post(url, INITIALIZE)
        async with authorized(url, "file-token") as client:
            tools = (await client.list_tools()).tools
    assert status == 401
    assert [tool.name for tool in tools] == ["run_code"]


# --- bad input -------------------------------------------------------------------------------------


def test_malformed_json_rpc_is_a_parse_error(root: Path) -> None:
    with http_server("--root", str(root)) as url:
        status, body = post(url, b'{"jsonrpc": "2.0", "id": 1, "method":')
        after, _ = post(url, INITIALIZE)
    assert status == 400
    assert json.loads(body)["error"]["code"] == -32700
    assert after == 200


def test_a_huge_body_gets_413_before_it_is_read(root: Path) -> None:
    with http_server("--root", str(root)) as url:
        port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
            # Only the headers: the server answers from the declared length, before any body arrives.
            connection.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n"
                % (port, 64 * 1024 * 1024)
            )
            reply = connection.recv(4096).decode()
        streamed, streamed_body = post(
            url, b'{"padding": "' + b"x" * (5 * 1024 * 1024) + b'"}', Transfer_Encoding="chunked"
        )
        after, _ = post(url, INITIALIZE)
    assert reply.startswith("HTTP/1.1 413 ")
    assert (streamed, streamed_body) == (413, "Request body too large")
    assert after == 200


async def test_unknown_tool_and_invalid_arguments_over_http(root: Path) -> None:
    from mcp.shared.exceptions import MCPError

    with http_server("--root", str(root)) as url:
        async with Client(url) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("list_files", {})
            invalid = await client.call_tool("run_code", {"code": 42, "description": "bad"})
    assert raised.value.code == -32602
    assert invalid.is_error and "invalid arguments" in invalid.content[0].text


# --- the SDK's HTTP client ---------------------------------------------------------------------------


async def test_code_mode_over_http(root: Path) -> None:
    with http_server("--root", str(root)) as url:
        async with Client(url) as client:
            result = await client.call_tool(
                "run_code",
                {"code": 'print(await tools.read_file({"path": "notes.md"}))', "description": "read notes"},
            )
    assert not result.is_error, result.content
    assert result.content[0].text == "# notes\n"


async def test_native_mode_over_http(root: Path) -> None:
    with http_server("--root", str(root), "--mode", "native") as url:
        async with Client(url) as client:
            info = await client.call_tool("file_info", {"path": "notes.md"})
    assert info.structured_content is not None and info.structured_content["type"] == "file"


async def test_a_client_that_gives_up_mid_run_over_http_leaves_no_sandbox_process(root: Path) -> None:
    import asyncio

    from test_server_support import alive, descendants, wait_until

    with http_server("--root", str(root)) as url:
        port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        server_pid = next(pid for pid in _listeners(port))
        async with Client(url) as client:
            call = asyncio.ensure_future(
                client.call_tool(
                    "run_code",
                    {"code": "import asyncio\nawait asyncio.sleep(120)", "description": "wait forever"},
                )
            )
            assert await asyncio.to_thread(wait_until, lambda: bool(descendants(server_pid))), "no sandbox"
            below = descendants(server_pid)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
        assert await asyncio.to_thread(wait_until, lambda: not alive(below), 15), f"orphans: {alive(below)}"
        status, _ = post(url, INITIALIZE)
    assert status == 200


def _listeners(port: int) -> list[int]:
    """The pids holding a listening socket on ``port`` (from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                inodes.add(fields[9])
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in {f"socket:[{inode}]" for inode in inodes}:
                    pids.append(int(entry.name))
                    break
    return pids
