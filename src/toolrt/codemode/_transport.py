"""``run_code``: the reserved Code Mode transport tool.

The model calls ``run_code`` with a program (``code``) and a short ``description``. The program runs
in the configured :class:`~toolrt.codemode._code_runtime.CodeRuntime` with one binding namespace, ``tools``,
whose members re-enter the full pipeline (:mod:`toolrt.codemode._bridge`). Only what the program
prints and returns comes back to the model.

The definition is one singleton per :class:`~toolrt.ToolRuntime`, rebuilt when the code runtime
changes, because its description and ``code`` parameter are flavoured by the runtime's language
(TypeScript when none is configured). Its name is reserved by the registry in every mode and every
scope; :data:`CODE_MODE_TRANSPORT` is what the runtime asks to build it (the core's
:class:`~toolrt._tool_runtime.CodePresentation` seam, plugged in by ``toolrt/__init__.py``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from toolrt._errors import CodeRunFailedError
from toolrt._execution import ToolRunContext
from toolrt._registry import RUN_CODE_NAME, PresentationMode, Transport
from toolrt._tool_definition import ToolDefinition, ToolOutput
from toolrt.codemode._code_runtime import NO_VALUE, CodeRuntime
from toolrt.codemode._run_output import code_run_failed_message, render_run_code_output

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime

__all__ = [
    "CODE_MODE_TRANSPORT",
    "KNOWN_LANGUAGES",
    "RUN_CODE_FLAVORS",
    "CodeModeTransport",
    "CodeRunFailedError",
    "require_code_runtime",
    "run_code_schema",
]

KNOWN_LANGUAGES: Final = ("typescript", "python")

_DESCRIPTION_PARAMETER = (
    "Clear, concise description of what this program does in active voice, 5-10 words (shown in the UI). "
    'Examples: "Count TODO markers across packages"; "Read failing test and its fixture"; '
    '"Rename config key in every cordis.yml".'
)

RUN_CODE_FLAVORS: Final[Mapping[str, tuple[str, str]]] = {
    "typescript": (
        "Execute a TypeScript program against the available tools. Takes two required arguments: `code`, "
        "the BODY of an async function (erasable syntax only; top-level `await` and `return` work), and "
        "`description`, a short summary of what the program does. Call tools as `await tools.name(args)` "
        "per the declarations in the system prompt. Only what you print or return comes back — curate it.",
        "The program: the body of an async TypeScript function.",
    ),
    "python": (
        "Execute a Python program against the available tools. Takes two required arguments: `code`, the "
        "BODY of an async function (top-level `await` and `return` work), and `description`, a short "
        "summary of what the program does. Call tools as `await tools.name(args)` per the declarations in "
        "the system prompt. Answer with `print(...)` and/or `return <value>` — only that comes back, so "
        "curate it.",
        "The program: the body of an async Python function.",
    ),
}
"""``language → (run_code description, code parameter description)`` — upstream's exact text."""

_OUTPUT_SCHEMA: Final = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"logs": {"type": "array", "items": {"type": "string"}}, "result": {}},
    "required": ["logs"],
}


# The body runs in the calling task, so the runtime's meta it sets is visible to the projector that
# runs right after it (and to nobody else: each call has its own task context value).
_RUN_META: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "toolrt_run_meta", default=None
)


def _known() -> str:
    return ", ".join(f'"{language}"' for language in KNOWN_LANGUAGES)


def run_code_schema(language: str | None) -> tuple[str, dict[str, Any]]:
    """``run_code``'s description and parameters for ``language`` (TypeScript when ``None``)."""
    flavor = RUN_CODE_FLAVORS.get(language if language is not None else "typescript")
    if flavor is None:
        raise ValueError(
            f'toolrt: no run_code schema flavor registered for runtime language "{language}" '
            f"(known: {_known()})"
        )
    description, code_description = flavor
    return description, {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": code_description},
            "description": {"type": "string", "description": _DESCRIPTION_PARAMETER},
        },
        "required": ["code", "description"],
    }


def require_code_runtime(runtime: ToolRuntime, mode: PresentationMode) -> CodeRuntime:
    """The configured code runtime, or the loud assembly error upstream P6 specifies."""
    code_runtime = cast("CodeRuntime | None", runtime.code_runtime)
    if code_runtime is None:
        raise RuntimeError(
            f'toolrt: mode "{mode}" requires a code runtime — pass one as ToolRuntime(code_runtime=...) '
            '(e.g. toolrt.sandbox.PythonSandboxRuntime) or set tools mode to "native"'
        )
    if code_runtime.language not in KNOWN_LANGUAGES:
        raise RuntimeError(
            f'toolrt: no SDK renderer registered for runtime language "{code_runtime.language}" '
            f"(known: {_known()})"
        )
    return code_runtime


class CodeModeTransport:
    """Code Mode's side of the core's :class:`~toolrt._tool_runtime.CodePresentation` seam."""

    def transport(self, runtime: ToolRuntime) -> Transport:
        """The ``run_code`` singleton for ``runtime``'s current code runtime's language."""
        code_runtime = cast("CodeRuntime | None", runtime.code_runtime)
        language = code_runtime.language if code_runtime is not None else None
        try:
            description, parameters = run_code_schema(language)
            flavor_error = None
        except ValueError as error:
            # Fail loud where the schema is read (assembly, schemas()), not at configuration time.
            description, parameters = run_code_schema(None)
            flavor_error = str(error)
        return Transport(_transport_definition(runtime, description, parameters), flavor_error)


CODE_MODE_TRANSPORT: Final = CodeModeTransport()
"""The instance ``toolrt/__init__.py`` plugs in with ``use_code_presentation``."""


def _transport_definition(
    runtime: ToolRuntime, description: str, parameters: dict[str, Any]
) -> ToolDefinition:
    from toolrt._tool_builder import build_validated_definition

    async def execute(args: Any, ctx: ToolRunContext) -> dict[str, Any]:
        from toolrt.codemode._bridge import run_program

        if not args["description"].strip():
            raise ValueError("invalid description: expected a non-empty string")
        # Upstream names the deployment's default mode here, not the agent's (contract U8).
        code_runtime = require_code_runtime(runtime, runtime.mode)
        outcome = await run_program(runtime, code_runtime, args["code"], ctx)
        _RUN_META.set(dict(outcome.meta) if outcome.meta else None)
        if outcome.error is not None:
            raise CodeRunFailedError(
                code_run_failed_message(outcome.error.kind, outcome.error.message, outcome.logs)
            )
        value: dict[str, Any] = {"logs": list(outcome.logs)}
        if outcome.value is not NO_VALUE:
            value["result"] = outcome.value
        return value

    def render(args: Any, value: Any) -> list[dict[str, Any]]:
        text = render_run_code_output(value["logs"], value.get("result", NO_VALUE))
        return [{"type": "text", "text": text}]

    def run_meta(args: Any, value: Any) -> Any:
        # What the runtime reported for this run (e.g. the isolation it achieved): persisted with
        # tool/result, so the log says how every program was confined.
        return _RUN_META.get()

    def present_call(args: Any) -> Any:
        return {"card": "generic", "title": args["description"], "kind": "execute", "rawInput": args["code"]}

    definition = build_validated_definition(
        name=RUN_CODE_NAME,
        description=description,
        parameters=parameters,
        output=ToolOutput(schema=_OUTPUT_SCHEMA, render=render, presentation_meta=run_meta),
        execute=execute,
        present_call=present_call,
    )
    from toolrt.schema import compile_validator

    object.__setattr__(definition, "compiled_output", compile_validator(_OUTPUT_SCHEMA))
    return definition
