"""Code Mode's prompt contributions: the ``run_code`` schema, the SDK section, the code-only rule.

Under ``code`` a scope contributes exactly ``[run_code]`` to the tool schemas; under ``both`` every
visible tool plus ``run_code``. Two sections join the prompt: ``tools:code-only`` (order 99, ahead of
per-tool guidance, so the model reads which tools it may call before what each is for — empty under
``both``) and ``tools:sdk`` (order 150: the typed SDK of every tool the scope can see, in the code
runtime's language; byte-identical for an unchanged tool set). They exist globally when the runtime's
default mode is not native, and for every scope that presents ``code``/``both`` itself.

A non-native assembly with no code runtime, or with a runtime whose language has no renderer, fails
loudly — every time.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from toolrt._events import Disposer
from toolrt._json import thaw
from toolrt._registry import RUN_CODE_NAME, PresentationMode, ToolsChange
from toolrt.codemode._transport import require_code_runtime

if TYPE_CHECKING:
    from toolrt._prompt.system_prompt import PromptContext, SystemPrompt, ToolContribution
    from toolrt._tool_runtime import ToolRuntime

__all__ = [
    "CODE_ONLY_SECTION",
    "CODE_ONLY_TEXT",
    "SDK_SECTION",
    "code_mode_contribution",
    "connect_code_mode",
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


def code_mode_contribution(runtime: ToolRuntime) -> Any:
    """The tool contribution of a ``code``/``both`` scope (plugs into ``connect_runtime``)."""
    from toolrt._prompt.system_prompt import ToolContribution

    def contribute(scope: Hashable | None, mode: PresentationMode) -> ToolContribution:
        require_code_runtime(runtime, mode)
        schemas = runtime.schemas(scope)
        if mode == "code":
            return ToolContribution(
                schemas=[schema for schema in schemas if schema["name"] == RUN_CODE_NAME],
                known_names=(RUN_CODE_NAME,),
            )
        known = tuple(runtime._registry.view(scope).known)
        return ToolContribution(schemas=schemas, known_names=(*known, RUN_CODE_NAME))

    return contribute


def render_sdk(runtime: ToolRuntime, scope: Hashable | None) -> str:
    """The ``tools:sdk`` text for ``scope`` ('' when the scope presents natively)."""
    mode = runtime.mode_for(scope)
    if mode == "native":
        return ""
    code_runtime = require_code_runtime(runtime, mode)
    from toolrt.codemode._sdk_python import SdkTool, render_tools_sdk_py
    from toolrt.codemode._sdk_typescript import render_tools_sdk_ts

    tools = [
        SdkTool(
            name=name,
            description=definition.description,
            parameters=thaw(definition.parameters),
            output=thaw(definition.output.schema),
        )
        for name, definition in runtime._registry.view(scope).visible.items()
        if name != RUN_CODE_NAME
    ]
    if code_runtime.language == "python":
        return render_tools_sdk_py(tools)
    return render_tools_sdk_ts(tools)


def connect_code_mode(prompt: SystemPrompt, runtime: ToolRuntime) -> Disposer:
    """Register the Code Mode sections (globally and per presenting scope); undone by the disposer."""
    disposers: list[Disposer] = []
    scoped: dict[Hashable, list[Disposer]] = {}

    def code_only(context: PromptContext) -> str:
        return CODE_ONLY_TEXT if runtime.mode_for(context.scope) == "code" else ""

    def sdk(context: PromptContext) -> str:
        return render_sdk(runtime, context.scope)

    def add_sections(scope: Hashable | None) -> list[Disposer]:
        return [
            prompt.section(CODE_ONLY_SECTION, CODE_ONLY_ORDER, code_only, scope=scope),
            prompt.section(SDK_SECTION, SDK_ORDER, sdk, scope=scope),
        ]

    if runtime.mode != "native":
        disposers.extend(add_sections(None))

    def on_change(change: ToolsChange) -> None:
        if change.kind == "present" and change.name in ("code", "both") and change.scope is not None:
            scoped[change.scope] = add_sections(change.scope)
        elif change.kind == "unpresent" and change.scope in scoped:
            for dispose in scoped.pop(change.scope):
                dispose()

    disposers.append(runtime.on("tools/change", on_change))
    # Scopes that already present a code mode when the prompt is connected.
    for key, layer in list(runtime._registry._scoped.items()):
        if layer.mode in ("code", "both"):
            scoped[key] = add_sections(key)

    def dispose_all() -> None:
        for group in scoped.values():
            for dispose in group:
                dispose()
        scoped.clear()
        for dispose in reversed(disposers):
            dispose()

    return Disposer(dispose_all, runtime)
