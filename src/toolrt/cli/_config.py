"""``toolrt.toml``: what the ``toolrt`` command runs — tools, mode, sandbox, policies, budgets, MCP
servers, the model — and :func:`open_runtime`, which turns it into a ready :class:`~toolrt.ToolRuntime`.

Why a strict reader: a typo in a config file that is silently ignored is a policy that silently does
not apply (``[policies] aks = ["bash"]`` would run bash unasked). So every key is known, every value
is checked, and every mistake is a :class:`ConfigError` whose message is one line naming the file,
the key (as a dotted path) and the reason — before any tool, sandbox or server starts.

Relative paths (``tools.workspace``, ``mcp.config``, a server's ``cwd``) are relative to the
directory of the config file, so a project's ``toolrt.toml`` means the same from any directory.

>>> from pathlib import Path
>>> load_config(None, cwd=Path("/nonexistent")).mode
'native'
"""

from __future__ import annotations

import contextlib
import fnmatch
import math
import tomllib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from toolrt._registry import PresentationMode
from toolrt._tool_definition import DEFAULT_OUTPUT_BUDGET, UNBOUNDED, OutputBudget, ToolDefinition
from toolrt._tool_runtime import ToolRuntime
from toolrt.mcp._config import HttpServer, ServerConfig, StdioServer, load_server_configs
from toolrt.mcp._errors import McpConfigError

__all__ = [
    "BUILTIN_TOOLS",
    "CONFIG_NAME",
    "CliConfig",
    "ConfigError",
    "ModelConfig",
    "PolicyConfig",
    "SandboxConfig",
    "load_config",
    "open_runtime",
]

CONFIG_NAME = "toolrt.toml"
"""The file ``load_config(None, cwd=...)`` looks for in the working directory."""

BUILTIN_TOOLS: Mapping[str, tuple[str, ...]] = {
    "fs": ("read", "write", "edit", "glob", "grep"),
    "fs-readonly": ("read", "glob", "grep"),
    "bash": ("bash", "job_output", "job_kill", "job_list"),
}
"""The built-in tool sets ``[tools] builtin`` may name, and the tools each registers."""

_MODES = ("native", "code", "both")
_BACKENDS = ("auto", "bwrap", "landlock", "sandbox-exec", "unconfined")
_PROVIDERS = ("openai", "anthropic")
_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class ConfigError(Exception):
    """An invalid ``toolrt.toml``. ``str(error)`` is one line: ``FILE: KEY: REASON``.

    >>> str(ConfigError("toolrt.toml", "mode", 'must be one of "native", "code", "both", got "fast"'))
    'toolrt.toml: mode: must be one of "native", "code", "both", got "fast"'
    """

    def __init__(self, file: str, key: str | None, reason: str) -> None:
        self.file = file
        self.key = key
        self.reason = reason
        super().__init__(f"{file}: {key}: {reason}" if key else f"{file}: {reason}")


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """``[sandbox]``: how Code Mode programs (and, when the bash tools support it, commands) are confined.

    ``bash`` is ``None`` for "confine bash when the sandbox is available", else forced on or off.
    """

    backend: str = "auto"
    allow_unconfined: bool = False
    allow_network: bool = False
    bash: bool | None = None


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """``[policies]``: which tools ask for approval (``fnmatch`` patterns) and per-tool timeouts (ms)."""

    ask: tuple[str, ...] = ("write", "edit", "bash")
    timeouts_ms: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """``[budgets]``: the output budget of every result, the default tool deadline, a program's wall time."""

    output: OutputBudget = DEFAULT_OUTPUT_BUDGET
    tool_timeout_ms: float = 120_000
    run_code_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """``[model]``: the endpoint ``toolrt chat`` talks to. The key is read from ``api_key_env``."""

    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"


@dataclass(frozen=True, slots=True)
class CliConfig:
    """The whole configuration of the ``toolrt`` command (defaults when there is no file)."""

    workspace: Path
    mode: PresentationMode = "native"
    code_runtime: str = "python"
    tools: tuple[str, ...] = ("fs", "bash")
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    policies: PolicyConfig = field(default_factory=PolicyConfig)
    budgets: BudgetConfig = field(default_factory=BudgetConfig)
    mcp_servers: tuple[ServerConfig, ...] = ()
    model: ModelConfig | None = None
    source: Path | None = None
    """The file this was read from (``None``: defaults)."""


# --- reading --------------------------------------------------------------------------------------


class _Reader:
    """Checks one table, remembering the file and the dotted path for the error message."""

    def __init__(self, file: str, table: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> None:
        self.file = file
        self.table = table
        self.path = path
        unknown = sorted(set(table) - set(allowed))
        if unknown:
            choices = ", ".join(allowed)
            raise ConfigError(file, self.key(unknown[0]), f"unknown key (known here: {choices})")

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def fail(self, name: str, reason: str) -> ConfigError:
        return ConfigError(self.file, self.key(name), reason)

    def has(self, name: str) -> bool:
        return name in self.table

    def table_of(self, name: str, allowed: tuple[str, ...]) -> _Reader:
        value = self.table.get(name, {})
        if not isinstance(value, dict):
            raise self.fail(name, f"must be a table ([{self.key(name)}]), got {_kind(value)}")
        return _Reader(self.file, value, self.key(name), allowed)

    def choice(self, name: str, choices: tuple[str, ...], default: str) -> str:
        value = self.table.get(name, default)
        if value not in choices:
            listed = ", ".join(f'"{choice}"' for choice in choices)
            raise self.fail(name, f"must be one of {listed}, got {_show(value)}")
        return str(value)

    def boolean(self, name: str, default: bool | None) -> bool | None:
        value = self.table.get(name, default)
        if value is not None and not isinstance(value, bool):
            raise self.fail(name, f"must be true or false, got {_show(value)}")
        return value

    def string(self, name: str, default: str | None = None) -> str | None:
        value = self.table.get(name, default)
        if value is not None and (not isinstance(value, str) or not value):
            raise self.fail(name, f"must be a non-empty string, got {_show(value)}")
        return value

    def strings(self, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self.table.get(name, default)
        if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
            raise self.fail(name, f"must be a list of strings, got {_show(value)}")
        return tuple(value)

    def positive(self, name: str, default: float) -> float:
        value = self.table.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise self.fail(name, f"must be a positive number, got {_show(value)}")
        return float(value)


def _kind(value: object) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + (value if len(value) <= 60 else value[:59] + "…") + '"'
    if isinstance(value, dict):
        return "a table"
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def load_config(path: Path | None, *, cwd: Path) -> CliConfig:
    """Read ``path`` (or ``cwd/toolrt.toml`` when ``path`` is ``None``) into a checked :class:`CliConfig`.

    A missing default file means the defaults (workspace = ``cwd``); a missing named file, a file
    that is not TOML, or any invalid entry raises :class:`ConfigError`.
    """
    if path is None:
        candidate = cwd / CONFIG_NAME
        if not candidate.is_file():
            return CliConfig(workspace=cwd.resolve())
        path = candidate
    elif not path.is_absolute():
        path = cwd / path
    file = _display(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(file, None, "no such config file") from None
    except IsADirectoryError:
        raise ConfigError(file, None, "is a directory, not a config file") from None
    except OSError as error:
        raise ConfigError(file, None, f"cannot read: {error.strerror or error}") from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(file, None, f"not UTF-8 text (byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(file, None, f"not valid TOML: {error}") from None
    return _parse(file, document, path.parent.resolve())


def _display(path: Path) -> str:
    """How a message names the file: relative to the process's working directory when under it
    (what the user typed), else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _parse(file: str, document: Mapping[str, Any], base: Path) -> CliConfig:
    top = _Reader(
        file,
        document,
        "",
        ("mode", "code_runtime", "tools", "sandbox", "policies", "budgets", "mcp", "model"),
    )
    mode = cast(PresentationMode, top.choice("mode", _MODES, "native"))
    code_runtime = top.choice("code_runtime", ("python", "typescript"), "python")
    if code_runtime == "typescript" and not _has_typescript_runtime():
        raise top.fail(
            "code_runtime", "\"typescript\" needs Deno: pip install 'toolrt[typescript]' (the deno package)"
        )

    tools = top.table_of("tools", ("builtin", "workspace"))
    builtin = tools.strings("builtin", ("fs", "bash"))
    for index, name in enumerate(builtin):
        if name not in BUILTIN_TOOLS:
            listed = ", ".join(f'"{known}"' for known in BUILTIN_TOOLS)
            raise ConfigError(
                file, f"tools.builtin[{index}]", f"unknown built-in {_show(name)} (known: {listed})"
            )
    if "fs" in builtin and "fs-readonly" in builtin:
        raise tools.fail("builtin", 'name "fs" or "fs-readonly", not both')
    if len(set(builtin)) != len(builtin):
        raise tools.fail("builtin", "names a built-in twice")
    workspace_text = tools.string("workspace", ".")
    assert workspace_text is not None
    workspace = (base / workspace_text).resolve()
    if not workspace.is_dir():
        raise tools.fail("workspace", f"{workspace} is not a directory")

    sandbox_table = top.table_of("sandbox", ("backend", "allow_unconfined", "allow_network", "bash"))
    sandbox = SandboxConfig(
        backend=sandbox_table.choice("backend", _BACKENDS, "auto"),
        allow_unconfined=sandbox_table.boolean("allow_unconfined", False) is True,
        allow_network=sandbox_table.boolean("allow_network", False) is True,
        bash=sandbox_table.boolean("bash", None),
    )

    policies_table = top.table_of("policies", ("ask", "timeouts"))
    ask = policies_table.strings("ask", PolicyConfig().ask)
    timeouts_table = policies_table.table_of(
        "timeouts", tuple(policies_table.table.get("timeouts", {}) or ())
    )
    timeouts = {name: timeouts_table.positive(name, 0) for name in timeouts_table.table}
    policies = PolicyConfig(ask=ask, timeouts_ms=timeouts)

    budgets_table = top.table_of("budgets", ("output", "tool_timeout_ms", "run_code_seconds"))
    output: OutputBudget = DEFAULT_OUTPUT_BUDGET
    if budgets_table.has("output"):
        value = budgets_table.table["output"]
        if value == "unbounded":
            output = UNBOUNDED
        elif isinstance(value, int) and not isinstance(value, bool) and value > 0:
            output = value
        else:
            raise budgets_table.fail(
                "output", f'must be a positive number of characters or "unbounded", got {_show(value)}'
            )
    budgets = BudgetConfig(
        output=output,
        tool_timeout_ms=budgets_table.positive("tool_timeout_ms", 120_000),
        run_code_seconds=budgets_table.positive("run_code_seconds", 60.0),
    )

    mcp = top.table_of("mcp", ("config", "servers"))
    servers: list[ServerConfig] = []
    config_file = mcp.string("config")
    if config_file is not None:
        try:
            servers.extend(load_server_configs(base / config_file))
        except McpConfigError as error:
            raise mcp.fail("config", str(error)) from None
    inline = mcp.table_of("servers", tuple(mcp.table.get("servers", {}) or ()))
    for name in inline.table:
        server = _server(inline, name, base)
        if any(existing.name == name for existing in servers):
            raise inline.fail(name, f"server {_show(name)} is also defined in mcp.config")
        servers.append(server)

    model: ModelConfig | None = None
    if top.has("model"):
        table = top.table_of("model", ("provider", "model", "base_url", "api_key_env"))
        provider = table.choice("provider", _PROVIDERS, "openai")
        model_name = table.string("model")
        if model_name is None:
            raise table.fail("model", "is required (the model's name, e.g. gpt-4.1-mini)")
        model = ModelConfig(
            provider=provider,
            model=model_name,
            base_url=table.string("base_url"),
            api_key_env=table.string("api_key_env", _DEFAULT_KEY_ENV[provider]) or _DEFAULT_KEY_ENV[provider],
        )
    return CliConfig(
        workspace=workspace,
        mode=mode,
        code_runtime=code_runtime,
        tools=builtin,
        sandbox=sandbox,
        policies=policies,
        budgets=budgets,
        mcp_servers=tuple(servers),
        model=model,
        source=Path(file) if Path(file).is_absolute() else Path.cwd() / file,
    )


_SERVER_KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "outputBudget",
    "timeoutMs",
    "idempotentTools",
)


def _server(servers: _Reader, name: str, base: Path) -> ServerConfig:
    entry = servers.table_of(name, _SERVER_KEYS)
    common: dict[str, Any] = {
        "output_budget": entry.table.get("outputBudget"),
        "timeout_ms": entry.table.get("timeoutMs"),
        "idempotent_tools": entry.table.get("idempotentTools", ()),
    }
    if entry.has("command") == entry.has("url"):
        raise servers.fail(name, 'needs exactly one of "command" (stdio) or "url" (streamable HTTP)')
    try:
        if entry.has("command"):
            cwd = entry.string("cwd")
            return StdioServer(
                name,
                entry.table["command"],
                entry.table.get("args", ()),
                entry.table.get("env"),
                None if cwd is None else str((base / cwd).resolve()),
                **common,
            )
        return HttpServer(name, entry.table["url"], entry.table.get("headers"), **common)
    except McpConfigError as error:
        # The server's own check names the field in Python spelling; name the key as the file does.
        reason = str(error).removeprefix(f'MCP server "{name}": ')
        raise servers.fail(name, reason) from None


def _has_typescript_runtime() -> bool:
    # The Deno binary comes with the optional extra; find_spec asks without importing it.
    import importlib.util

    return importlib.util.find_spec("deno") is not None


# --- the runtime ----------------------------------------------------------------------------------


def _asking(patterns: tuple[str, ...]) -> Any:
    from toolrt._decisions import Ask

    async def ask(execution: Any, next: Any) -> Any:
        if any(fnmatch.fnmatchcase(execution.name, pattern) for pattern in patterns):
            return Ask(f"[policies] ask matches {execution.name}")
        return await next()

    return ask


def _with_timeout(definition: ToolDefinition, timeouts: Mapping[str, float]) -> ToolDefinition:
    timeout = timeouts.get(definition.name)
    return definition if timeout is None else replace(definition, timeout_ms=timeout)


@contextlib.asynccontextmanager
async def open_runtime(config: CliConfig, *, approvals: Any = None) -> AsyncIterator[ToolRuntime]:
    """A ready runtime for ``config``: built-ins registered, MCP servers connected, policies applied.

    ``approvals`` answers the calls ``[policies] ask`` matches (an answerer ``(request, next)``,
    e.g. :func:`toolrt.policies.terminal_answerer`); without one those calls are refused as
    "no approver available". Everything opened is closed on exit: servers, bash jobs, the sandbox.
    """
    import toolrt.tools as builtins
    from toolrt.policies import Approvals

    file = _display(config.source) if config.source is not None else CONFIG_NAME
    code_runtime: Any = None
    if config.mode != "native":
        code_runtime = _code_runtime(config)
    runtime = ToolRuntime(
        mode=config.mode,
        code_runtime=code_runtime,
        output_budget=config.budgets.output,
        tool_timeout_ms=config.budgets.tool_timeout_ms,
    )
    bash: Any = None
    try:
        registered: list[str] = []
        for builtin in config.tools:
            if builtin in ("fs", "fs-readonly"):
                definitions = builtins.fs_tools(config.workspace, read_only=builtin == "fs-readonly")
                for definition in definitions:
                    runtime.register(_with_timeout(definition, config.policies.timeouts_ms))
                    registered.append(definition.name)
            elif builtin == "bash":
                bash = builtins.install_bash(
                    runtime,
                    config.workspace,
                    sandbox=config.sandbox.bash,
                    allow_network=config.sandbox.allow_network,
                )
                registered.extend(BUILTIN_TOOLS["bash"])
        for name in config.policies.timeouts_ms:
            if name not in registered:
                raise ConfigError(
                    file,
                    f"policies.timeouts.{name}",
                    "no built-in tool of that name is configured "
                    f"(configured: {', '.join(registered) or 'none'})",
                )
        if config.policies.ask:
            runtime.on("tools/pre-execute", _asking(config.policies.ask))
        service = Approvals()
        if approvals is not None:
            service.answerer(approvals)
        runtime.approval = service
        async with contextlib.AsyncExitStack() as stack:
            if config.mcp_servers:
                from toolrt.mcp import McpConnections

                await stack.enter_async_context(McpConnections(runtime, list(config.mcp_servers)))
            yield runtime
    finally:
        runtime.close()
        if bash is not None:
            await bash.aclose()
        if code_runtime is not None:
            await code_runtime.aclose()


def _code_runtime(config: CliConfig) -> Any:
    from toolrt.codemode._code_runtime import CodeRunLimits

    options: dict[str, Any] = {
        "backend": config.sandbox.backend,
        "allow_unconfined": config.sandbox.allow_unconfined or config.sandbox.backend == "unconfined",
        "limits": CodeRunLimits(wall_seconds=config.budgets.run_code_seconds),
    }
    if config.code_runtime == "typescript":
        from toolrt.sandbox import DenoTypeScriptRuntime

        return DenoTypeScriptRuntime(pool_size=0, **options)
    from toolrt.sandbox import PythonSandboxRuntime

    return PythonSandboxRuntime(pool_size=0, **options)
