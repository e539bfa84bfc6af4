"""``toolrt.toml``: every invalid entry is one line naming the file, the key and the reason (CL5).

A typo must never be ignored silently — ``[policies] aks = ["bash"]`` would run bash unasked — so
unknown keys are errors too. Written first: each kind of mistake, then what a valid file gives.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolrt.cli._config import CliConfig, ConfigError, load_config, open_runtime
from toolrt.mcp import HttpServer, StdioServer

TOOLRT = Path(sys.executable).with_name("toolrt")


def load(tmp_path: Path, text: str) -> CliConfig:
    path = tmp_path / "toolrt.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(None, cwd=tmp_path)


MISTAKES = [
    # (the file's text, the key named, the reason)
    ("mdoe = 'code'\n", "mdoe", "unknown key (known here: mode, code_runtime, tools, sandbox, policies"),
    ("mode = 'fast'\n", "mode", 'must be one of "native", "code", "both", got "fast"'),
    ("mode = 3\n", "mode", 'must be one of "native", "code", "both", got 3'),
    (
        "[tools]\nbuiltin = ['fs', 'ftp']\n",
        "tools.builtin[1]",
        'unknown built-in "ftp" (known: "fs", "fs-readonly", "bash")',
    ),
    ("[tools]\nbuiltin = 'fs'\n", "tools.builtin", 'must be a list of strings, got "fs"'),
    ("[tools]\nbuiltin = ['fs', 'fs-readonly']\n", "tools.builtin", 'name "fs" or "fs-readonly", not both'),
    ("[tools]\nbuiltin = ['bash', 'bash']\n", "tools.builtin", "names a built-in twice"),
    ("[tools]\nworkspace = 'nowhere'\n", "tools.workspace", "is not a directory"),
    ("[tools]\nbuiltins = ['fs']\n", "tools.builtins", "unknown key (known here: builtin, workspace)"),
    ("tools = ['fs']\n", "tools", "must be a table ([tools]), got a list"),
    ("[sandbox]\nbackend = 'docker'\n", "sandbox.backend", 'must be one of "auto", "bwrap", "landlock"'),
    ("[sandbox]\nallow_unconfined = 'yes'\n", "sandbox.allow_unconfined", 'must be true or false, got "yes"'),
    ("[policies]\naks = ['bash']\n", "policies.aks", "unknown key (known here: ask, timeouts)"),
    ("[policies]\nask = [1]\n", "policies.ask", "must be a list of strings, got [1]"),
    ("[policies.timeouts]\nbash = 0\n", "policies.timeouts.bash", "must be a positive number, got 0"),
    ("[policies.timeouts]\nbash = '5s'\n", "policies.timeouts.bash", 'must be a positive number, got "5s"'),
    (
        "[budgets]\noutput = -1\n",
        "budgets.output",
        'must be a positive number of characters or "unbounded", got -1',
    ),
    (
        "[budgets]\noutput = 'lots'\n",
        "budgets.output",
        'must be a positive number of characters or "unbounded"',
    ),
    ("[budgets]\ntool_timeout_ms = inf\n", "budgets.tool_timeout_ms", "must be a positive number, got inf"),
    (
        "[budgets]\nrun_code_seconds = true\n",
        "budgets.run_code_seconds",
        "must be a positive number, got true",
    ),
    (
        "[mcp]\nconfig = 'missing.json'\n",
        "mcp.config",
        "cannot read the MCP config: No such file or directory",
    ),
    (
        "[mcp.servers.time]\nargs = []\n",
        "mcp.servers.time",
        'needs exactly one of "command" (stdio) or "url"',
    ),
    (
        "[mcp.servers.both]\ncommand = 'x'\nurl = 'http://127.0.0.1/mcp'\n",
        "mcp.servers.both",
        'needs exactly one of "command" (stdio) or "url"',
    ),
    ("[mcp.servers.time]\ncommand = 'mcp-server-time'\nargv = []\n", "mcp.servers.time.argv", "unknown key"),
    (
        "[mcp.servers.time]\ncommand = 'mcp-server-time'\nargs = 'x'\n",
        "mcp.servers.time",
        "args must be a list of strings",
    ),
    (
        "[mcp.servers.a__b]\ncommand = 'x'\n",
        "mcp.servers.a__b",
        "must be letters, digits, '_' or '-' (no '__')",
    ),
    (
        "[mcp.servers.web]\nurl = 'ftp://example.com'\n",
        "mcp.servers.web",
        "url must start with http:// or https://",
    ),
    (
        "[mcp.servers.t]\ncommand = 'x'\ntimeoutMs = -5\n",
        "mcp.servers.t",
        "timeout_ms must be a positive finite number",
    ),
    (
        "[model]\nprovider = 'gemini'\nmodel = 'x'\n",
        "model.provider",
        'must be one of "openai", "anthropic", got "gemini"',
    ),
    ("[model]\nprovider = 'openai'\n", "model.model", "is required"),
    ("[model]\nmodel = 'gpt-4.1-mini'\napi_key = 'sk-123'\n", "model.api_key", "unknown key"),
]


@pytest.mark.parametrize(("text", "key", "reason"), MISTAKES, ids=[key for _, key, _ in MISTAKES])
def test_every_invalid_entry_names_the_file_the_key_and_the_reason(
    tmp_path: Path, text: str, key: str, reason: str
) -> None:
    """CL5: one line, ``FILE: KEY: REASON``, before anything starts."""
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'toolrt.toml'}: {key}: "), message
    assert reason in message, message
    assert raised.value.key == key


def test_typescript_needs_the_deno_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CL5: ``code_runtime = "typescript"`` is accepted with the ``typescript`` extra installed (the
    test extra has it) and refused, with the install hint, on a machine without the deno package."""
    import importlib.util

    assert load(tmp_path, "code_runtime = 'typescript'\n").code_runtime == "typescript"
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *rest: None if name == "deno" else real(name, *rest)
    )
    with pytest.raises(ConfigError, match=r"code_runtime: \"typescript\" needs Deno: pip install"):
        load(tmp_path, "code_runtime = 'typescript'\n")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"mode = 'code\n", "not valid TOML: "),
        (b"mode = 'caf\xe9'\n", "not UTF-8 text (byte 11)"),
    ],
)
def test_a_file_that_is_not_toml_is_one_line(tmp_path: Path, content: bytes, reason: str) -> None:
    """CL5: the file itself: not TOML (with the line and column), not UTF-8."""
    (tmp_path / "toolrt.toml").write_bytes(content)
    with pytest.raises(ConfigError) as raised:
        load_config(None, cwd=tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'toolrt.toml'}: {reason}")
    assert "\n" not in str(raised.value)


def test_a_named_file_must_exist_but_the_default_one_may_not(tmp_path: Path) -> None:
    """CL5: ``--config missing.toml`` is an error; no ``./toolrt.toml`` means the defaults."""
    with pytest.raises(ConfigError, match=r"missing\.toml: no such config file$"):
        load_config(Path("missing.toml"), cwd=tmp_path)
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path, cwd=tmp_path)
    defaults = load_config(None, cwd=tmp_path)
    assert defaults.workspace == tmp_path.resolve() and defaults.source is None
    assert defaults.tools == ("fs", "bash") and defaults.mode == "native"


def test_a_timeout_for_a_tool_that_is_not_configured_is_refused_when_the_runtime_opens(
    tmp_path: Path,
) -> None:
    """CL5: ``[policies.timeouts]`` names tools; one that no configured built-in provides is a typo."""
    config = load(tmp_path, "[tools]\nbuiltin = ['fs-readonly']\n[policies.timeouts]\nbsah = 1000\n")

    async def open_it() -> None:
        async with open_runtime(config):
            pass

    with pytest.raises(ConfigError) as raised:
        asyncio.run(open_it())
    assert str(raised.value).startswith(
        f"{tmp_path / 'toolrt.toml'}: policies.timeouts.bsah: no built-in tool"
    )


def test_a_valid_file_gives_every_setting(tmp_path: Path) -> None:
    """What each key sets; relative paths are relative to the config file, not the working directory."""
    (tmp_path / "project").mkdir()
    (tmp_path / "servers.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": "mcp-server-time", "timeoutMs": 5000}}}),
        encoding="utf-8",
    )
    config = load(
        tmp_path,
        """
mode = "both"
code_runtime = "python"

[tools]
builtin = ["fs-readonly", "bash"]
workspace = "project"

[sandbox]
backend = "bwrap"
allow_network = true
bash = false

[policies]
ask = ["bash", "mcp__*"]
[policies.timeouts]
bash = 30000

[budgets]
output = "unbounded"
tool_timeout_ms = 60000
run_code_seconds = 10

[mcp]
config = "servers.json"
[mcp.servers.remote]
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer x" }
outputBudget = 4000

[model]
provider = "anthropic"
model = "claude-sonnet-4-5"
""",
    )
    assert config.mode == "both" and config.tools == ("fs-readonly", "bash")
    assert config.workspace == (tmp_path / "project").resolve()
    assert (config.sandbox.backend, config.sandbox.allow_network, config.sandbox.bash) == (
        "bwrap",
        True,
        False,
    )
    assert config.policies.ask == ("bash", "mcp__*") and config.policies.timeouts_ms == {"bash": 30000.0}
    assert config.budgets.tool_timeout_ms == 60000 and config.budgets.run_code_seconds == 10
    assert [type(server) for server in config.mcp_servers] == [StdioServer, HttpServer]
    assert config.mcp_servers[0].timeout_ms == 5000 and config.mcp_servers[1].output_budget == 4000
    assert config.model is not None
    assert (config.model.provider, config.model.api_key_env) == ("anthropic", "ANTHROPIC_API_KEY")


def test_the_command_prints_a_config_mistake_as_one_line(tmp_path: Path) -> None:
    """CL5: ``toolrt <cmd>: error: FILE: KEY: REASON``, exit 2 — with ``--config`` before or after."""
    if not TOOLRT.exists():
        pytest.skip("the toolrt console script is not installed")
    bad = tmp_path / "bad.toml"
    bad.write_text("[policies]\naks = ['bash']\n", encoding="utf-8")
    for arguments in (["--config", str(bad), "tools"], ["tools", "--config", str(bad)]):
        done = subprocess.run(
            [str(TOOLRT), *arguments], capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False
        )
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == (
            "toolrt tools: error: bad.toml: policies.aks: unknown key (known here: ask, timeouts)\n"
        )
    (tmp_path / "toolrt.toml").write_text("mode = 'fast'\n", encoding="utf-8")
    done = subprocess.run(
        [str(TOOLRT), "prompt"], capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith("toolrt prompt: error: toolrt.toml: mode: must be one of")
