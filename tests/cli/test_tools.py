"""``toolrt tools``: the configured tools — built-ins and MCP servers' — with their schemas (CL8)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import fits, toolrt


def test_the_default_tools_are_the_fs_and_bash_built_ins(tmp_path: Path) -> None:
    """CL8: no toolrt.toml: the fs and bash tools, as a table that fits 80 columns."""
    done = toolrt("tools", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "9 tools · defaults (no toolrt.toml here)" in done.stdout
    for name in ("read", "write", "edit", "glob", "grep", "bash", "job_output", "job_kill", "job_list"):
        assert f"│ {name} " in done.stdout
    assert "path: string, offset?: integer, limit?: integer" in done.stdout
    fits(done.stdout)


def test_json_is_the_model_facing_schemas_and_schemas_is_its_alias(tmp_path: Path) -> None:
    """CL8: ``--json`` prints exactly the schemas; ``toolrt schemas`` is the same command."""
    (tmp_path / "toolrt.toml").write_text("[tools]\nbuiltin = ['fs-readonly']\n", encoding="utf-8")
    done = toolrt("tools", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    schemas = json.loads(done.stdout)
    assert [schema["name"] for schema in schemas] == ["read", "glob", "grep"]
    assert all(set(schema) == {"name", "description", "parameters"} for schema in schemas)
    assert toolrt("schemas", cwd=tmp_path).stdout == done.stdout


def test_mcp_servers_tools_are_listed_beside_the_built_ins(tmp_path: Path) -> None:
    """CL8: an inline ``[mcp.servers.NAME]`` is connected and its tools listed as ``mcp__NAME__tool``."""
    import shutil
    import sys

    server = shutil.which("mcp-server-time") or str(Path(sys.executable).with_name("mcp-server-time"))
    (tmp_path / "toolrt.toml").write_text(
        f"[tools]\nbuiltin = []\n[mcp.servers.time]\ncommand = {json.dumps(server)}\n", encoding="utf-8"
    )
    done = toolrt("tools", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = [schema["name"] for schema in json.loads(done.stdout)]
    assert "mcp__time__get_current_time" in names
