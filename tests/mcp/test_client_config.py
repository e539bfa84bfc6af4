"""Configuring MCP servers: the JSON file users already have, server configs in code, tool names.

Bad input first: every malformed file or config raises McpConfigError with one line that names the
file, the server and what is wrong, before any server is started.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

import toolrt
from toolrt import UNBOUNDED, ToolRuntime
from toolrt.mcp import (
    HttpServer,
    McpConfigError,
    McpConnections,
    StdioServer,
    load_server_configs,
    mcp_tool_name,
)

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def write(tmp_path, text: str):
    path = tmp_path / "mcp.json"
    path.write_text(text, encoding="utf-8")
    return path


# --- bad input -----------------------------------------------------------------------------------


def test_a_file_that_is_not_json_names_the_file_and_the_position(tmp_path):
    path = write(tmp_path, '{"mcpServers": {"time": {"command": "x",}}}')
    with pytest.raises(McpConfigError) as caught:
        load_server_configs(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: not JSON (line 1, column ")
    assert "\n" not in message


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(McpConfigError, match=r"mcp\.json: cannot read the MCP config"):
        load_server_configs(tmp_path / "mcp.json")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("[]", 'expected an object with an "mcpServers" object'),
        ('{"servers": {}}', 'expected an object with an "mcpServers" object'),
        ('{"mcpServers": {"a": 3}}', 'server "a" must be an object'),
        ('{"mcpServers": {"a": {}}}', 'server "a" needs "command" \\(stdio\\) or "url"'),
        ('{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}', 'server "a" has both'),
        ('{"mcpServers": {"a": {"command": "x", "argz": []}}}', "unknown key\\(s\\) \\['argz'\\]"),
        ('{"mcpServers": {"a": {"command": "x", "args": "-v"}}}', "args must be a list of strings"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "env must map strings to strings"),
        ('{"mcpServers": {"a": {"url": "ftp://h"}}}', "url must start with http"),
        ('{"mcpServers": {"a": {"command": "x", "outputBudget": 0}}}', "output_budget must be a positive"),
        ('{"mcpServers": {"a": {"command": "x", "timeoutMs": -1}}}', "timeout_ms must be a positive"),
        (
            '{"mcpServers": {"a": {"command": "x", "idempotentTools": "t"}}}',
            "idempotent_tools must be a list",
        ),
        ('{"mcpServers": {"a__b": {"command": "x"}}}', "must be letters, digits"),
        ('{"mcpServers": {"a.b": {"command": "x"}}}', "must be letters, digits"),
    ],
)
def test_a_malformed_entry_is_one_clear_line(tmp_path, document, expected):
    path = write(tmp_path, document)
    with pytest.raises(McpConfigError, match=expected) as caught:
        load_server_configs(path)
    assert str(caught.value).startswith(str(path))
    assert "\n" not in str(caught.value)


def test_config_errors_are_toolrt_errors_and_value_errors():
    with pytest.raises(McpConfigError) as caught:
        StdioServer("time", "")
    assert isinstance(caught.value, toolrt.ToolrtError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.code == "MCP_CONFIG"


def test_two_servers_with_one_name_are_refused_before_anything_starts():
    with pytest.raises(McpConfigError, match="repeated: time"):
        McpConnections(ToolRuntime(), [StdioServer("time", "a"), StdioServer("time", "b")])


# --- what users write ----------------------------------------------------------------------------


def test_the_claude_desktop_format_with_toolrt_keys(tmp_path):
    path = write(
        tmp_path,
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
                    "remote": {
                        "url": "https://example.com/mcp",
                        "headers": {"Authorization": "Bearer x"},
                        "outputBudget": 5000,
                        "timeoutMs": 30000,
                        "idempotentTools": ["search"],
                    },
                    "off": {"command": "x", "disabled": False, "autoApprove": []},
                }
            }
        ),
    )
    time, remote, off = load_server_configs(path)
    assert time == StdioServer("time", "uvx", ("mcp-server-time",), {"TZ": "UTC"})
    assert remote == HttpServer(
        "remote",
        "https://example.com/mcp",
        {"Authorization": "Bearer x"},
        output_budget=5000,
        timeout_ms=30000,
        idempotent_tools=("search",),
    )
    assert off.name == "off"


def test_configs_are_frozen_and_normalize_sequences():
    server = StdioServer("tb", sys.executable, ["a"], idempotent_tools=["x"], output_budget=UNBOUNDED)
    assert server.args == ("a",)
    assert server.idempotent_tools == ("x",)
    with pytest.raises(AttributeError):
        server.name = "other"  # type: ignore[misc]


# --- names ---------------------------------------------------------------------------------------


def test_a_plain_name_reads_as_written():
    assert mcp_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert mcp_tool_name("everything", "get-sum") == "mcp__everything__get-sum"


@pytest.mark.parametrize(
    "tool", ["files.read", "résumé.überprüfen", "t" * 100, "a b/c", "工具", "", "x" * 59, "日本" * 40]
)
def test_every_name_fits_the_provider_pattern(tool):
    name = mcp_tool_name("server", tool)
    assert PROVIDER_NAME.match(name), name
    assert name.startswith("mcp__server__")


def test_a_changed_name_carries_a_stable_hash_so_look_alikes_never_collide():
    dotted, underscored = mcp_tool_name("fs", "files.read"), mcp_tool_name("fs", "files_read")
    assert underscored == "mcp__fs__files_read"
    assert dotted != underscored
    assert re.fullmatch(r"mcp__fs__files_read_[0-9a-f]{6}", dotted)
    assert mcp_tool_name("fs", "files.read") == dotted  # stable across calls (and processes: sha256)
    long_a, long_b = mcp_tool_name("s", "t" * 100), mcp_tool_name("s", "t" * 99 + "u")
    assert long_a != long_b
    assert len(long_a) == len(long_b) == 64
    # The same tool on two servers is two names.
    assert mcp_tool_name("a", "x.y") != mcp_tool_name("b", "x.y")


def test_importing_toolrt_mcp_does_not_import_the_sdk():
    """The SDK is an optional extra: it loads when a connection opens, not with the namespace."""
    import subprocess

    probe = (
        "import sys, toolrt, toolrt.mcp; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
