"""``notifications/tools/list_changed`` from a served runtime, seen by the ``mcp`` SDK's own client.

A client caches what ``tools/list`` told it; when the runtime's visible tools change (``read_spill``
appears after the first spill, an MCP server behind it re-syncs), the server must say so, or the
client's model never sees the new tool. The SDK speaks two eras: a 2026-07-28 client hears of it on
the ``subscriptions/listen`` stream it opened, a handshake-era client as a notification on the
connection. Both are checked in-process, over stdio and over HTTP (``toolrt mcp serve``, the real
command).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_server_support import http_server, serve_args

from mcp import Client, StdioServerParameters
from toolrt import ToolRuntime, tool
from toolrt.mcp import build_mcp_server

LIST_CHANGED = "notifications/tools/list_changed"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def method_of(message: Any) -> str | None:
    inner = getattr(message, "root", message)
    return getattr(inner, "method", None)


class Heard:
    """The notifications a handshake-era client received, with a way to wait for one."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self._event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        method = method_of(message)
        if method is not None:
            self.methods.append(method)
            if method == LIST_CHANGED:
                self._event.set()

    async def list_changed(self, timeout: float = 10.0) -> None:
        with anyio.fail_after(timeout):
            await self._event.wait()


@pytest.fixture
def big_root(tmp_path: Path) -> Path:
    # Enough entries that a recursive listing is over the 20,000-character budget and spills.
    for index in range(800):
        (tmp_path / f"file-with-a-rather-long-name-{index:04}.txt").write_text("x")
    return tmp_path


def stdio_params(root: Path) -> StdioServerParameters:
    command, *args = serve_args("--root", str(root), "--mode", "native")
    return StdioServerParameters(command=command, args=args)


async def spill(client: Client) -> None:
    result = await client.call_tool("list_files", {"recursive": True})
    assert not result.is_error
    assert "read_spill" in result.content[0].text


async def names(client: Client) -> list[str]:
    return [listed.name for listed in (await client.list_tools()).tools]


# --- in-process --------------------------------------------------------------------------------


async def test_the_capabilities_declare_list_changed() -> None:
    runtime = ToolRuntime()
    runtime.register(add)
    for mode in ("auto", "legacy"):
        async with Client(build_mcp_server(runtime, mode="native"), mode=mode) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True, mode


async def test_a_listening_client_hears_a_new_tool_and_lists_it() -> None:
    runtime = ToolRuntime()
    runtime.register(add)
    async with Client(build_mcp_server(runtime, mode="native")) as client:
        assert await names(client) == ["add"]
        async with client.listen(tools_list_changed=True) as events:
            runtime.register(multiply)
            with anyio.fail_after(10):
                await events.__anext__()
        assert await names(client) == ["add", "multiply"]


async def test_a_handshake_era_client_gets_the_notification() -> None:
    runtime = ToolRuntime()
    runtime.register(add)
    heard = Heard()
    async with Client(
        build_mcp_server(runtime, mode="native"), mode="legacy", message_handler=heard
    ) as client:
        assert await names(client) == ["add"]
        dispose = runtime.register(multiply)
        await heard.list_changed()
        assert await names(client) == ["add", "multiply"]
        dispose()
        await wait_for(lambda: heard.methods.count(LIST_CHANGED) == 2)


async def test_a_change_the_served_agent_cannot_see_sends_nothing() -> None:
    runtime = ToolRuntime()
    runtime.register(add)
    heard = Heard()
    other = runtime.scope("another-agent")
    async with Client(
        build_mcp_server(runtime, mode="native"), mode="legacy", message_handler=heard
    ) as client:
        assert await names(client) == ["add"]
        other.register(multiply)  # another agent's tool: what this server lists is unchanged
        await anyio.sleep(0.3)
        assert LIST_CHANGED not in heard.methods
        runtime.register(tool(name="subtract")(lambda a, b: a - b))
        await heard.list_changed()
    other.close()


async def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


# --- over the real transports (toolrt mcp serve) --------------------------------------------------


@asynccontextmanager
async def over(transport: str, root: Path, **options: Any) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with Client(stdio_params(root), **options) as client:
            yield client
    else:
        with http_server("--root", str(root), "--mode", "native") as url:
            async with Client(url, **options) as client:
                yield client


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_read_spill_appearing_is_announced_on_the_listen_stream(transport: str, big_root: Path) -> None:
    async with over(transport, big_root) as client:
        assert "read_spill" not in await names(client)
        async with client.listen(tools_list_changed=True) as events:
            await spill(client)
            with anyio.fail_after(10):
                await events.__anext__()
        assert "read_spill" in await names(client)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_read_spill_appearing_is_notified_to_a_handshake_era_client(
    transport: str, big_root: Path
) -> None:
    heard = Heard()
    async with over(transport, big_root, mode="legacy", message_handler=heard) as client:
        assert "read_spill" not in await names(client)
        await spill(client)
        await heard.list_changed()
        assert "read_spill" in await names(client)
