"""The public surface, pinned: a change to what a user can import is always deliberate.

Public is what a user writes: the namespaces below, each exporting its names through ``__all__``.
Every other module is private (a ``_name`` somewhere in its path) and may change freely. To change
the API on purpose, change ``EXPORTS`` in the same commit, and say why in its message.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import toolrt

EXPORTS: dict[str, list[str]] = {
    "toolrt": [
        "AbortController",
        "AbortError",
        "AbortSignal",
        "Accept",
        "Agent",
        "Allow",
        "AnthropicModel",
        "ApprovalOutcome",
        "ApprovalRequest",
        "ApprovalRule",
        "ApprovalService",
        "Approvals",
        "Ask",
        "Block",
        "CodeRunFailedError",
        "ContentBlock",
        "DEFAULT_OUTPUT_BUDGET",
        "DEFAULT_TOOL_TIMEOUT_MS",
        "Deny",
        "Disposer",
        "EventName",
        "ExecutionMode",
        "JsonSchemaError",
        "JsonValue",
        "NotLosslessJsonError",
        "OpenAIChatModel",
        "OutputSpec",
        "PostToolDecision",
        "PreToolDecision",
        "PresentationMode",
        "PythonSandboxRuntime",
        "RUN_CODE_NAME",
        "Scope",
        "ScriptedModel",
        "SessionLog",
        "SpillStore",
        "SystemPrompt",
        "ToolArgsError",
        "ToolDefinition",
        "ToolExecutionInput",
        "ToolExecutionResult",
        "ToolFailure",
        "ToolGroup",
        "ToolNotFoundError",
        "ToolOutput",
        "ToolOutputError",
        "ToolRunContext",
        "ToolRuntime",
        "ToolSchema",
        "ToolSuccess",
        "ToolrtError",
        "UNBOUNDED",
        "__version__",
        "content_text",
        "define_tool",
        "install_spill_policy",
        "install_timeout_policy",
        "rule_answerer",
        "terminal_answerer",
        "text_content",
        "tool",
        "user_message",
    ],
    "toolrt.lowlevel": [
        "CallOutcome",
        "CodePresentation",
        "DispatchOutcome",
        "EventSink",
        "ExecutionToken",
        "FrozenDict",
        "FrozenList",
        "Listener",
        "MAX_SAFE_INTEGER",
        "OrderedCall",
        "OrderedExecutor",
        "Pipeline",
        "Prepared",
        "PresentationPrompt",
        "PresentationSection",
        "PresentedResult",
        "TOOL_ABORTED",
        "TOOL_ABORTED_BEFORE_DISPATCH",
        "ToolError",
        "ToolErrorInfo",
        "ToolExecution",
        "ToolGuard",
        "ToolsChange",
        "Transport",
        "UNSET",
        "fuse_signals",
        "is_lossless_json",
        "render_value_as_text",
        "snapshot_json",
        "thaw",
        "tool_error_result",
        "use_code_presentation",
        "use_presentation_prompt",
    ],
    "toolrt.mcp": [
        "HttpServer",
        "McpConfigError",
        "McpConnections",
        "McpServerError",
        "McpToolError",
        "ServerConfig",
        "StdioServer",
        "TRACEPARENT",
        "build_mcp_server",
        "load_server_configs",
        "mcp_tool_name",
        "serve_http",
        "serve_stdio",
    ],
    "toolrt.otel": [
        "CALLS",
        "DEFAULT_MAX_PAYLOAD_CHARS",
        "DURATION",
        "ERRORS",
        "Instrumentation",
        "format_trace",
        "instrument",
    ],
    "toolrt.cards": [
        "CallLocation",
        "DiffEntry",
        "DiffResultView",
        "DiffView",
        "GenericCallView",
        "GenericResultView",
        "ReadLine",
        "ReadResultView",
        "SearchFile",
        "SearchMatch",
        "SearchMatchesView",
        "SearchPathsView",
        "TerminalCallView",
        "TerminalResultView",
        "ToolCallView",
        "ToolResultView",
        "WebFetchView",
        "WebSearchSource",
        "WebSearchView",
    ],
    "toolrt.schema": [
        "ArrayParameterSpec",
        "ArrayValueSchemaSpec",
        "BooleanParameterSpec",
        "BooleanValueSchemaSpec",
        "IntegerParameterSpec",
        "IntegerValueSchemaSpec",
        "JsonParameterSpec",
        "JsonValueSchemaSpec",
        "NormalizedSchema",
        "NullParameterSpec",
        "NullValueSchemaSpec",
        "NumberParameterSpec",
        "NumberValueSchemaSpec",
        "ObjectParameterSpec",
        "ObjectValueSchemaSpec",
        "OneOfParameterSpec",
        "OneOfValueSchemaSpec",
        "ParameterPropertySpec",
        "ParameterSchemaSpec",
        "SCHEMA_TYPES",
        "SchemaNormalizedWarning",
        "StringParameterSpec",
        "StringValueSchemaSpec",
        "Validator",
        "ValueSchemaSpec",
        "assert_object_json_schema",
        "assert_supported_json_schema",
        "compile_validator",
        "json_schema_violations",
        "normalize_schema",
        "parameter_schema_spec_to_json_schema",
        "validate_args",
        "validate_json_schema_value",
        "value_schema_spec_to_json_schema",
    ],
    "toolrt.loop": [
        "APPROVAL_ASKED",
        "APPROVAL_DECIDED",
        "Agent",
        "AnthropicModel",
        "AssistantMessage",
        "CODE_DISPATCH",
        "CODE_DISPATCH_START",
        "CONTEXT_ADDED",
        "ChatModel",
        "ConversationError",
        "Durability",
        "Event",
        "INCOMPLETE_CALL_TEXT",
        "InvalidEventError",
        "MODEL_ASSISTANT",
        "MODEL_USER",
        "Message",
        "ModelRequest",
        "ModelResponse",
        "NativeToolSearch",
        "NewEvent",
        "OpenAIChatModel",
        "RAW_ARGUMENTS_KEY",
        "ReadResult",
        "ReplayItem",
        "ScriptExhaustedError",
        "ScriptStep",
        "ScriptedModel",
        "Section",
        "SessionLog",
        "SessionLogCorruptError",
        "SessionLogError",
        "SystemMessage",
        "SystemPrompt",
        "TOOL_CALL",
        "TOOL_RESULT",
        "TOOL_SEARCH_NAME",
        "TURN_END",
        "TURN_START",
        "TextDelta",
        "ToolCall",
        "ToolResultMessage",
        "TornLine",
        "TurnEndReason",
        "TurnResult",
        "Usage",
        "UserMessage",
        "approval_asked_event",
        "approval_decided_event",
        "code_dispatch_event",
        "code_dispatch_start_event",
        "connect_runtime",
        "context_added_event",
        "derive_messages",
        "from_anthropic_message",
        "from_openai_message",
        "model_assistant_event",
        "model_user_event",
        "reasoning_of",
        "render_call_card",
        "render_result_card",
        "replay",
        "runtime_chain",
        "to_anthropic_messages",
        "to_anthropic_tools",
        "to_openai_messages",
        "to_openai_tools",
        "tool_call_event",
        "tool_result_event",
        "turn_end_event",
        "turn_start_event",
    ],
    "toolrt.policies": [
        "ApprovalRule",
        "Approvals",
        "DEFAULT_APPROVAL_WAIT_MS",
        "SPILL_READER_NAME",
        "SpillStore",
        "TIMEOUT_CODE",
        "describe_request",
        "fingerprint",
        "install_default_deadline",
        "install_output_budget",
        "install_spill_policy",
        "install_timeout_policy",
        "rule_answerer",
        "spill_reader_tool",
        "terminal_answerer",
    ],
    "toolrt.codemode": [
        "BindingAnswer",
        "BindingFunction",
        "CodeBindingNamespace",
        "CodeRunError",
        "CodeRunErrorKind",
        "CodeRunLimits",
        "CodeRunRequest",
        "CodeRunResult",
        "CodeRuntime",
        "IsolationReport",
        "NO_VALUE",
        "RunClock",
        "SdkTool",
        "ToolSearch",
        "enable_tool_search",
        "render_tools_sdk_py",
        "render_tools_sdk_ts",
        "tool_search_of",
    ],
    "toolrt.sandbox": [
        "BackendName",
        "CommandConfinement",
        "ConfinedCommand",
        "DEFAULT_LIMITS",
        "DenoTypeScriptRuntime",
        "LAUNCH_REFUSED",
        "ProbeResults",
        "PythonSandboxRuntime",
        "SandboxUnavailableError",
        "confine_command",
    ],
    "toolrt.tools": ["BashTools", "OutsideRootError", "file_tools", "fs_tools", "install_bash"],
    "toolrt.integrations": [],
    "toolrt.integrations.claude_code": [
        "CC_TO_HARNESS_TOOLS",
        "KNOWN_HARNESS_TOOLS",
        "ToolNameTranslationPolicy",
        "cc_canonical_tool_name",
        "cc_tool_aliases",
        "translate_tool_names",
    ],
    "toolrt.cli": ["main"],
}

ROOT = Path(__file__).resolve().parents[1]


def public_modules() -> set[str]:
    """Every importable module of the package whose dotted path has no private component."""
    found = {"toolrt"}
    for info in pkgutil.walk_packages(toolrt.__path__, "toolrt."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.add(info.name)
    return found


def test_the_public_namespaces_are_exactly_the_pinned_ones() -> None:
    assert public_modules() == set(EXPORTS)


@pytest.mark.parametrize("namespace", sorted(EXPORTS))
def test_each_namespace_exports_exactly_its_pinned_names(namespace: str) -> None:
    module = importlib.import_module(namespace)
    assert sorted(getattr(module, "__all__", [])) == EXPORTS[namespace]


@pytest.mark.parametrize("namespace", sorted(EXPORTS))
def test_every_exported_name_resolves_and_has_a_docstring(namespace: str) -> None:
    module = importlib.import_module(namespace)
    assert module.__doc__, f"{namespace} has no module docstring"
    undocumented = []
    for name in EXPORTS[namespace]:
        value = getattr(module, name)  # lazy names load here
        if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
            undocumented.append(name)
    assert undocumented == []


def test_the_top_level_names_that_load_lazily_do_not_load_with_import_toolrt() -> None:
    # A fresh interpreter: ``import toolrt`` must not pull in the loop, the policies or the sandbox.
    import subprocess
    import sys

    probe = (
        "import sys, toolrt; "
        "print(sorted(m for m in ('toolrt.loop', 'toolrt.policies', 'toolrt.sandbox') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert toolrt.Agent.__name__ == "Agent"


_IMPORT = re.compile(r"^\s*(?:from|import)\s+(toolrt[\w.]*)", re.MULTILINE)


def test_the_docs_and_the_readme_import_only_public_namespaces() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    private = [
        f"{page.relative_to(ROOT)}: {module}"
        for page in pages
        for module in _IMPORT.findall(page.read_text(encoding="utf-8"))
        if any(part.startswith("_") for part in module.split("."))
    ]
    assert private == []
