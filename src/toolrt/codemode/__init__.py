"""Code Mode: the model writes one program against a typed SDK of the tools, and ``run_code`` runs it.

The public surface for people who plug in a code runtime or render an SDK themselves. Most users
only pass a runtime (``toolrt.sandbox.PythonSandboxRuntime``) as ``ToolRuntime(code_runtime=...)``.
"""

from toolrt.codemode._code_runtime import (
    NO_VALUE,
    BindingAnswer,
    BindingFunction,
    CodeBindingNamespace,
    CodeRunError,
    CodeRunErrorKind,
    CodeRunLimits,
    CodeRunRequest,
    CodeRunResult,
    CodeRuntime,
    IsolationReport,
    RunClock,
)
from toolrt.codemode._sdk_python import render_tools_sdk_py
from toolrt.codemode._sdk_tool import SdkTool
from toolrt.codemode._sdk_typescript import render_tools_sdk_ts
from toolrt.codemode._tool_search import ToolSearch, enable_tool_search, tool_search_of

__all__ = [
    "NO_VALUE",
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
    "RunClock",
    "SdkTool",
    "ToolSearch",
    "enable_tool_search",
    "render_tools_sdk_py",
    "render_tools_sdk_ts",
    "tool_search_of",
]
