"""toolrt — the tool layer of an LLM agent.

Register tools with typed schemas, show them to a model (as native function schemas, or as a typed
SDK for Code Mode), and run every call through one policy pipeline that turns every model mistake
into a result the model can read::

    from toolrt import ToolRuntime, tool

    runtime = ToolRuntime()

    @tool
    async def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    runtime.register(add)
    result = await runtime.call("add", {"a": 1, "b": 2})
    assert result.value == 3

This namespace is what a user of the library writes. The public subpackages add their own:
:mod:`toolrt.loop` (the agent loop, models, the session log), :mod:`toolrt.policies`,
:mod:`toolrt.codemode`, :mod:`toolrt.sandbox`, :mod:`toolrt.schema`, :mod:`toolrt.tools`,
:mod:`toolrt.integrations.claude_code`, and :mod:`toolrt.lowlevel` for people who write their own
scheduler. Every other module is private (``_name``) and may change in any release.

Why some names load lazily: the agent loop, the policies and the sandbox are reached from here (a
small agent needs one import line), but importing them costs more than the core, so they load on
first use (PEP 562). ``import toolrt`` stays as cheap as the core.
See ``docs/getting-started.md`` for the guided tour.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortController, AbortSignal
from toolrt._approval_request import ApprovalOutcome, ApprovalRequest, ApprovalService
from toolrt._content import ContentBlock, content_text, text_content, user_message
from toolrt._decisions import (
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    ExecutionMode,
    PostToolDecision,
    PreToolDecision,
)
from toolrt._errors import (
    AbortError,
    CodeRunFailedError,
    JsonSchemaError,
    NotLosslessJsonError,
    ToolArgsError,
    ToolNotFoundError,
    ToolOutputError,
    ToolrtError,
)
from toolrt._events import Disposer, EventName
from toolrt._execution import ToolExecutionInput, ToolRunContext
from toolrt._json import JsonValue
from toolrt._prompt import use_presentation_prompt
from toolrt._registry import RUN_CODE_NAME, PresentationMode
from toolrt._results import ToolExecutionResult, ToolFailure, ToolSuccess
from toolrt._tool_builder import OutputSpec, define_tool
from toolrt._tool_decorator import tool
from toolrt._tool_definition import (
    DEFAULT_OUTPUT_BUDGET,
    DEFAULT_TOOL_TIMEOUT_MS,
    UNBOUNDED,
    ToolDefinition,
    ToolGroup,
    ToolOutput,
    ToolSchema,
)
from toolrt._tool_runtime import Scope, ToolRuntime, use_code_presentation, use_default_policies
from toolrt.codemode._prompt_sections import CODE_MODE_PROMPT
from toolrt.codemode._transport import CODE_MODE_TRANSPORT

if TYPE_CHECKING:
    from toolrt._prompt import SystemPrompt
    from toolrt.loop import Agent, AnthropicModel, OpenAIChatModel, ScriptedModel, SessionLog
    from toolrt.policies import (
        ApprovalRule,
        Approvals,
        SpillStore,
        install_spill_policy,
        install_timeout_policy,
        rule_answerer,
        terminal_answerer,
    )
    from toolrt.sandbox import PythonSandboxRuntime

# Code Mode plugs into the seams the core offers (the core never imports toolrt.codemode): it builds
# every runtime's run_code transport and contributes the prompt of code/both scopes.
use_code_presentation(CODE_MODE_TRANSPORT)
use_presentation_prompt(CODE_MODE_PROMPT)


def _install_default_policies(runtime: ToolRuntime) -> None:
    # The output budget and the default deadline are on by default; the policies load with the
    # first runtime, not on import.
    from toolrt.policies import install_default_deadline, install_output_budget

    install_output_budget(runtime)
    install_default_deadline(runtime)


use_default_policies(_install_default_policies)

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "Agent": "toolrt.loop",
    "AnthropicModel": "toolrt.loop",
    "OpenAIChatModel": "toolrt.loop",
    "ScriptedModel": "toolrt.loop",
    "SessionLog": "toolrt.loop",
    "SystemPrompt": "toolrt._prompt",
    "ApprovalRule": "toolrt.policies",
    "Approvals": "toolrt.policies",
    "SpillStore": "toolrt.policies",
    "install_spill_policy": "toolrt.policies",
    "install_timeout_policy": "toolrt.policies",
    "rule_answerer": "toolrt.policies",
    "terminal_answerer": "toolrt.policies",
    "PythonSandboxRuntime": "toolrt.sandbox",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolrt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "DEFAULT_OUTPUT_BUDGET",
    "DEFAULT_TOOL_TIMEOUT_MS",
    "RUN_CODE_NAME",
    "UNBOUNDED",
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
]
