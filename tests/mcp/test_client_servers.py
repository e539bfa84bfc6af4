"""Real third-party MCP servers as toolrt tools: what a user connects on day one.

mcp-server-time and mcp-server-git (PyPI, 2026-07-28, stateless), server-everything and
server-filesystem (npm, 2025-11-25, stateful): the protocol version is negotiated per server by
the SDK, and every tool then behaves like a toolrt tool (schemas, values, failures, concurrency).
"""

from __future__ import annotations

import subprocess

import pytest

from toolrt import ToolRuntime
from toolrt.mcp import McpConnections, StdioServer
from toolrt.schema import json_schema_violations


@pytest.fixture
def repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "notes.txt").write_text("first line\n")
    return repo


async def test_old_and_new_protocol_revisions_side_by_side(time_server, everything):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [time_server, everything]) as connections:
        assert connections.protocol_version("time") == "2026-07-28"
        assert connections.protocol_version("everything") == "2025-11-25"
        now = await runtime.call("mcp__time__get_current_time", {"timezone": "Europe/Paris"})
        assert not now.is_error, now.content
        # structuredContent is the canonical value; outputSchema became the declaration.
        assert now.value["timezone"] == "Europe/Paris"
        assert set(now.value) >= {"datetime", "day_of_week", "is_dst"}
        total = await runtime.call("mcp__everything__get-sum", {"a": 2, "b": 40})
        assert total.value == "The sum of 2 and 40 is 42."  # text content, no structuredContent
        assert total.content == [{"type": "text", "text": "The sum of 2 and 40 is 42."}]


async def test_every_schema_the_model_reads_is_in_the_subset(time_server, everything):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [time_server, everything]):
        schemas = runtime.schemas()
        assert len(schemas) > 10
        for schema in schemas:
            assert json_schema_violations(schema["parameters"]) == [], schema["name"]
            assert schema["parameters"]["type"] == "object"
            definition = runtime.get(schema["name"])
            assert json_schema_violations(definition.output.schema) == []
        convert = runtime.get("mcp__time__convert_time")
        # outputSchema uses $ref for source/target: those nodes read as any JSON, the rest stays.
        assert convert.output.schema["properties"]["source"] == {}
        assert convert.output.schema["properties"]["time_difference"] == {
            "title": "Time Difference",
            "type": "string",
        }
        assert "timezone" in runtime.get("mcp__time__get_current_time").parameters["properties"]


async def test_validation_stays_with_the_server(time_server):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [time_server]):
        # toolrt does not check arguments: the server's own error is what the model reads.
        result = await runtime.call("mcp__time__get_current_time", {"timezone": "Mars/Olympus"})
        assert result.is_error
        assert "Mars/Olympus" in result.content[0]["text"]
        assert result.error.info.name == "McpToolError"


async def test_images_and_resource_links_become_content_blocks(everything):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [everything]):
        image = await runtime.call("mcp__everything__get-tiny-image", {})
        kinds = [block["type"] for block in image.content]
        assert "image" in kinds
        png = next(block for block in image.content if block["type"] == "image")
        assert png["mimeType"] == "image/png" and png["data"].startswith("iVBOR")
        links = await runtime.call("mcp__everything__get-resource-links", {"count": 2})
        assert "[resource link: demo://resource/dynamic/" in links.value


async def test_read_only_tools_are_concurrency_safe_and_others_are_not(everything):
    runtime = ToolRuntime()
    async with McpConnections(runtime, [everything]):
        assert runtime.get("mcp__everything__echo").is_concurrency_safe({}) is True  # readOnlyHint
        assert runtime.get("mcp__everything__toggle-simulated-logging").is_concurrency_safe is None


async def test_git_and_filesystem_servers_on_one_repository(repository, launch):
    runtime = ToolRuntime()
    servers = [
        StdioServer("git", launch.python_script("mcp-server-git"), ["--repository", str(repository)]),
        StdioServer("fs", launch.node, [launch.npm_script("server-filesystem"), str(repository)]),
    ]
    async with McpConnections(runtime, servers):
        status = await runtime.call("mcp__git__git_status", {"repo_path": str(repository)})
        assert "notes.txt" in status.value
        text = await runtime.call("mcp__fs__read_text_file", {"path": str(repository / "notes.txt")})
        assert text.value == {"content": "first line\n"}
        # The filesystem server refuses paths outside its root; the model reads its words.
        outside = await runtime.call("mcp__fs__read_text_file", {"path": "/etc/passwd"})
        assert outside.is_error
        assert "outside allowed directories" in outside.content[0]["text"]
