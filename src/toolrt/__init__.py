"""toolrt — the tool layer of an LLM agent.

Register tools with typed schemas, show them to a model, and run every call through one policy
pipeline that turns every model mistake into a result the model can read::

    from toolrt import ToolRuntime, tool

    runtime = ToolRuntime()

    @tool
    async def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    runtime.register(add)
    result = await runtime.call("add", {"a": 1, "b": 2})
    assert result.value == 3

See ``docs/getting-started.md`` for the guided tour.
"""

from __future__ import annotations

from toolrt._abort import AbortController, AbortSignal, fuse_signals
from toolrt._approval_request import ApprovalOutcome, ApprovalRequest, ApprovalService
from toolrt._cards import ToolCallView, ToolResultView
from toolrt._content import ContentBlock, TextBlock, UserMessage, content_text, text_content, user_message
from toolrt._decisions import (
    UNSET,
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    ExecutionMode,
    PostToolDecision,
    PreToolDecision,
)
from toolrt._tool_builder import OutputSpec, define_tool
from toolrt._errors import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    AbortError,
    JsonSchemaError,
    ToolArgsError,
    ToolNotFoundError,
    ToolOutputError,
    ToolrtError,
)
from toolrt._events import Disposer, EventName
from toolrt._execution import ExecutionToken, ToolExecution, ToolExecutionInput, ToolRunContext
from toolrt._json import (
    MAX_SAFE_INTEGER,
    FrozenDict,
    FrozenList,
    JsonValue,
    NotLosslessJsonError,
    is_lossless_json,
    snapshot_json,
    thaw,
)
from toolrt._pipeline import DispatchOutcome, Pipeline, Prepared
from toolrt._registry import RUN_CODE_NAME, PresentationMode, ToolGuard, ToolsChange
from toolrt._results import ToolError, ToolErrorInfo, ToolExecutionResult, ToolFailure, ToolSuccess
from toolrt._tool_decorator import tool
from toolrt._tool_definition import (
    PresentedResult,
    ToolDefinition,
    ToolOutput,
    ToolSchema,
    render_value_as_text,
)
from toolrt._tool_runtime import Scope, ToolRuntime
from toolrt.integrations.claude_code._tool_names import (
    CC_TO_HARNESS_TOOLS,
    KNOWN_HARNESS_TOOLS,
    cc_canonical_tool_name,
    cc_tool_aliases,
    translate_tool_names,
)
from toolrt.schema import (
    ParameterSchemaSpec,
    ValueSchemaSpec,
    assert_object_json_schema,
    assert_supported_json_schema,
    compile_validator,
    json_schema_violations,
    parameter_schema_spec_to_json_schema,
    validate_args,
    validate_json_schema_value,
    value_schema_spec_to_json_schema,
)

__version__ = "0.1.0"

__all__ = [
    "CC_TO_HARNESS_TOOLS",
    "KNOWN_HARNESS_TOOLS",
    "MAX_SAFE_INTEGER",
    "RUN_CODE_NAME",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "UNSET",
    "AbortController",
    "AbortError",
    "AbortSignal",
    "Accept",
    "Allow",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalService",
    "Ask",
    "Block",
    "ContentBlock",
    "Deny",
    "DispatchOutcome",
    "Disposer",
    "EventName",
    "ExecutionMode",
    "ExecutionToken",
    "FrozenDict",
    "FrozenList",
    "JsonSchemaError",
    "JsonValue",
    "NotLosslessJsonError",
    "OutputSpec",
    "ParameterSchemaSpec",
    "Pipeline",
    "PostToolDecision",
    "PreToolDecision",
    "Prepared",
    "PresentationMode",
    "PresentedResult",
    "Scope",
    "TextBlock",
    "ToolArgsError",
    "ToolCallView",
    "ToolDefinition",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolExecutionResult",
    "ToolFailure",
    "ToolGuard",
    "ToolNotFoundError",
    "ToolOutput",
    "ToolOutputError",
    "ToolResultView",
    "ToolRunContext",
    "ToolRuntime",
    "ToolSchema",
    "ToolSuccess",
    "ToolrtError",
    "ToolsChange",
    "UserMessage",
    "ValueSchemaSpec",
    "__version__",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "cc_canonical_tool_name",
    "cc_tool_aliases",
    "compile_validator",
    "content_text",
    "define_tool",
    "fuse_signals",
    "is_lossless_json",
    "json_schema_violations",
    "parameter_schema_spec_to_json_schema",
    "render_value_as_text",
    "snapshot_json",
    "text_content",
    "thaw",
    "tool",
    "translate_tool_names",
    "user_message",
    "validate_args",
    "validate_json_schema_value",
    "value_schema_spec_to_json_schema",
]
