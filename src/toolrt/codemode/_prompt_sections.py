"""Code Mode's prompt contributions: the ``run_code`` schema, the SDK section, the code-only rule.

Under ``code`` a scope contributes exactly ``[run_code]`` to the tool schemas; under ``both`` every
visible tool plus ``run_code``. Two sections join the prompt: ``tools:code-only`` (order 99, ahead of
per-tool guidance, so the model reads which tools it may call before what each is for — empty under
``both``) and ``tools:sdk`` (order 150: the typed SDK of every tool the scope can see, in the code
runtime's language; byte-identical for an unchanged tool set). The prompt registers them globally
when the runtime's default mode is not native, and for every scope that presents ``code``/``both``
itself: :data:`CODE_MODE_PROMPT` is Code Mode's side of the prompt's
:class:`~toolrt._prompt.presentation.PresentationPrompt` seam, plugged in by ``toolrt/__init__.py``.

A non-native assembly with no code runtime, or with a runtime whose language has no renderer, fails
loudly — every time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Final

from toolrt._prompt import PresentationSection, PromptContext, ToolContribution
from toolrt._registry import RUN_CODE_NAME, PresentationMode
from toolrt.codemode._sdk_python import render_tools_sdk_py
from toolrt.codemode._sdk_typescript import render_tools_sdk_ts
from toolrt.codemode._tool_search import helper_names, render_deferred_sdk, sdk_tools, tool_search_of
from toolrt.codemode._transport import require_code_runtime

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime

__all__ = [
    "CODE_MODE_PROMPT",
    "CODE_ONLY_SECTION",
    "CODE_ONLY_TEXT",
    "SDK_SECTION",
    "CodeModePrompt",
    "render_sdk",
]

CODE_ONLY_SECTION = "tools:code-only"
SDK_SECTION = "tools:sdk"
CODE_ONLY_ORDER = 99
SDK_ORDER = 150
CODE_ONLY_TEXT = (
    "`run_code` is the only tool you can call directly — a tool call naming any other tool fails. "
    "Reach every tool the SDK declares below from inside the program."
)


class CodeModePrompt:
    """Code Mode's part of a runtime's system prompt: its tools and its two sections."""

    def tools(self, runtime: ToolRuntime, scope: Hashable | None, mode: PresentationMode) -> ToolContribution:
        """``[run_code]`` under ``code``; every visible tool plus ``run_code`` under ``both``."""
        require_code_runtime(runtime, mode)
        schemas = runtime.schemas(scope)
        if mode == "code":
            return ToolContribution(
                schemas=[schema for schema in schemas if schema["name"] == RUN_CODE_NAME],
                known_names=(RUN_CODE_NAME,),
            )
        return ToolContribution(
            schemas=schemas, known_names=(*runtime.known_tool_names(scope), RUN_CODE_NAME)
        )

    def sections(self, runtime: ToolRuntime) -> Sequence[PresentationSection]:
        """``tools:code-only`` and ``tools:sdk``, their texts resolved for each assembly's scope."""

        def code_only(context: PromptContext) -> str:
            return CODE_ONLY_TEXT if runtime.mode_for(context.scope) == "code" else ""

        def sdk(context: PromptContext) -> str:
            return render_sdk(runtime, context.scope)

        return (
            PresentationSection(CODE_ONLY_SECTION, CODE_ONLY_ORDER, code_only),
            PresentationSection(SDK_SECTION, SDK_ORDER, sdk),
        )


CODE_MODE_PROMPT: Final = CodeModePrompt()
"""The instance ``toolrt/__init__.py`` plugs in with ``use_presentation_prompt``."""


def render_sdk(runtime: ToolRuntime, scope: Hashable | None) -> str:
    """The ``tools:sdk`` text for ``scope`` ('' when the scope presents natively)."""
    mode = runtime.mode_for(scope)
    if mode == "native":
        return ""
    code_runtime = require_code_runtime(runtime, mode)
    visible = runtime.visible_tools(scope)
    tools = sdk_tools(visible)
    search = tool_search_of(runtime)
    if search is not None and search.defers(len(tools)):
        return render_deferred_sdk(tools, code_runtime.language, helper_names(visible))
    # The prompt sends the compact SDK: a shape shared by several tools is declared once.
    if code_runtime.language == "python":
        return render_tools_sdk_py(tools, share_types=True)
    return render_tools_sdk_ts(tools, share_types=True)
