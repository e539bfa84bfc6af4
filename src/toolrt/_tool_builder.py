"""``define_tool``: a typed tool from the schema DSL, validated before its body runs.

>>> from toolrt import define_tool
>>> read_file = define_tool(
...     name="read_file",
...     description="Read a file from disk.",
...     parameters={"path": {"type": "string", "required": True, "description": "Absolute path"}},
...     output={"schema": {"type": "string"}},
...     execute=lambda args, ctx: open(args["path"]).read(),
... )

Parameter and output schemas are compiled when the tool is defined, so an author mistake raises
:class:`toolrt.JsonSchemaError` at import time, not at the first call.

A tool described by a raw JSON Schema (a catalogue entry, an OpenAPI operation) passes it as
``input_schema`` instead of the DSL's ``parameters``, and still gets its arguments validated.
``normalize=True`` first maps the common catalogue dialects into the subset
(:func:`toolrt.schema.normalize_schema`: ``"dict"`` → ``"object"``, ``"float"`` → ``"number"``, ...)
and reports every rewrite as a :class:`~toolrt.schema.SchemaNormalizedWarning`, so nothing is
changed silently:

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     get_weather = define_tool(
...         name="get_weather",
...         description="Current weather for a city.",
...         input_schema={"type": "dict", "properties": {"city": {"type": "string"}}, "required": ["city"]},
...         normalize=True,
...         output={"schema": {"type": "string"}},
...         execute=lambda args, ctx: f"sunny in {args['city']}",
...     )
>>> get_weather.parameters["type"]
'object'
>>> print(caught[0].message)
define_tool(get_weather): input_schema normalized: input_schema.type: "dict" -> "object"

The model's arguments are checked before the body runs; violations come back to the model as one
``INVALID_ARGS`` result it can correct from. Presenters and the concurrency classifier are wrapped
*softly*: invalid arguments give ``None`` / ``False`` instead of raising, because UIs call presenters
when replaying old logs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from toolrt._content import ContentBlock
from toolrt._errors import JsonSchemaError
from toolrt._execution import ToolExecution
from toolrt._json import snapshot_json
from toolrt._registry import is_valid_timeout_ms, vouch_checked_schemas
from toolrt._results import ToolExecutionResult
from toolrt._tool_definition import (
    OutputBudget,
    PresentedResult,
    ToolBody,
    ToolDefinition,
    ToolOutput,
    Unbounded,
    render_value_as_text,
)
from toolrt.cards._views import ToolCallView, ToolResultView
from toolrt.schema import (
    ParameterSchemaSpec,
    SchemaNormalizedWarning,
    ValueSchemaSpec,
    compile_validator,
    json_schema_violations,
    normalize_schema,
    parameter_schema_spec_to_json_schema,
    value_schema_spec_to_json_schema,
)

__all__ = ["OutputSpec", "define_tool", "soft_presenters"]


class OutputSpec(TypedDict):
    """``define_tool``'s output declaration: a DSL value schema plus optional projectors."""

    schema: ValueSchemaSpec
    render: NotRequired[Callable[[Any, Any], Sequence[ContentBlock]]]
    presentation_meta: NotRequired[Callable[[Any, Any], Any]]


def define_tool(
    *,
    name: str,
    description: str,
    parameters: ParameterSchemaSpec | None = None,
    input_schema: Mapping[str, Any] | None = None,
    normalize: bool = False,
    output: OutputSpec,
    execute: ToolBody,
    finalize_content: Callable[[ToolExecution, ToolExecutionResult], Sequence[ContentBlock] | None]
    | None = None,
    timeout_ms: float | Unbounded | None = None,
    max_output_chars: OutputBudget | None = None,
    is_concurrency_safe: Callable[[Any], bool] | None = None,
    present_call: Callable[[Any], ToolCallView | None] | None = None,
    present_result: Callable[[Any, PresentedResult], ToolResultView | None] | None = None,
    run_inline: bool = False,
) -> ToolDefinition:
    """Build a :class:`ToolDefinition` from the schema DSL or a raw ``input_schema`` (module docstring).

    Exactly one of ``parameters`` (the DSL) and ``input_schema`` (a raw, object-rooted JSON Schema of
    the subset) describes the arguments; ``normalize=True`` applies only to ``input_schema``.
    """
    if not is_valid_timeout_ms(timeout_ms):
        raise TypeError(f"define_tool({name}): timeout_ms must be a positive finite number")
    if (parameters is None) == (input_schema is None):
        raise TypeError(f"define_tool({name}): pass exactly one of parameters (the DSL) and input_schema")
    if normalize and input_schema is None:
        raise TypeError(f"define_tool({name}): normalize=True applies to input_schema only")
    if input_schema is not None:
        raw_parameters = _raw_input_schema(name, input_schema, normalize)
    else:
        assert parameters is not None
        # Frozen, as @tool's and input_schema's are: the checked schema is the one registered.
        raw_parameters = snapshot_json(parameter_schema_spec_to_json_schema(parameters))
    # The DSL asserts the subset on what it produces.
    output_schema = snapshot_json(value_schema_spec_to_json_schema(output["schema"]))
    return build_validated_definition(
        name=name,
        description=description,
        parameters=raw_parameters,
        output=ToolOutput(
            schema=output_schema,
            render=output.get("render", render_value_as_text),
            presentation_meta=output.get("presentation_meta"),
        ),
        execute=execute,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        max_output_chars=max_output_chars,
        is_concurrency_safe=is_concurrency_safe,
        present_call=present_call,
        present_result=present_result,
        run_inline=run_inline,
        output_checked=True,
    )


def _raw_input_schema(name: str, schema: Mapping[str, Any], normalize: bool) -> Any:
    """``input_schema`` checked (and first normalized, on request), as a frozen snapshot."""
    if normalize:
        fixed = normalize_schema(schema, "input_schema")
        if fixed.changes:
            # stacklevel 3: the warning points at the define_tool(...) call in the author's code.
            warnings.warn(
                SchemaNormalizedWarning(
                    f"define_tool({name}): input_schema normalized: {'; '.join(fixed.changes)}", fixed.changes
                ),
                stacklevel=3,
            )
        schema = fixed.schema
    violations = json_schema_violations(schema, "input_schema")
    if not violations and (not isinstance(schema, Mapping) or schema.get("type") != "object"):
        violations.append('input_schema.type must be "object" (tool arguments are one JSON object)')
    if violations:
        raise JsonSchemaError(violations)
    # Frozen: the definition keeps its own copy, which the caller's later edits cannot reach.
    return snapshot_json(schema)


def build_validated_definition(
    *,
    name: str,
    description: str,
    parameters: Mapping[str, Any],
    output: ToolOutput,
    execute: ToolBody,
    finalize_content: Callable[[ToolExecution, ToolExecutionResult], Sequence[ContentBlock] | None]
    | None = None,
    timeout_ms: float | Unbounded | None = None,
    max_output_chars: OutputBudget | None = None,
    is_concurrency_safe: Callable[[Any], bool] | None = None,
    present_call: Callable[[Any], ToolCallView | None] | None = None,
    present_result: Callable[[Any, PresentedResult], ToolResultView | None] | None = None,
    run_inline: bool = False,
    output_checked: bool = False,
) -> ToolDefinition:
    """A definition whose arguments are validated against ``parameters`` (a raw subset schema).

    Shared by :func:`define_tool` and the ``@tool`` decorator: both compile into the same subset.
    Compiling checks ``parameters``; ``output_checked=True`` says the caller checked
    ``output.schema``. ``register`` does not walk a frozen schema checked here again.
    """
    validator = compile_validator(parameters)

    def validate_arguments(args: Any) -> Sequence[str]:
        return validator.validate(args, "")

    vouch_checked_schemas(validate_arguments, parameters, output.schema if output_checked else None)

    def is_valid(args: Any) -> bool:
        try:
            return not validator.validate(args, "")
        except Exception:
            return False

    call_presenter, result_presenter, classifier = soft_presenters(
        is_valid, present_call, present_result, is_concurrency_safe
    )
    return ToolDefinition(
        name=name,
        description=description,
        parameters=parameters,
        output=output,
        execute=execute,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        max_output_chars=max_output_chars,
        is_concurrency_safe=classifier,
        present_call=call_presenter,
        present_result=result_presenter,
        run_inline=run_inline,
        validate_arguments=validate_arguments,
    )


def soft_presenters(
    is_valid: Callable[[Any], bool],
    present_call: Callable[[Any], ToolCallView | None] | None,
    present_result: Callable[[Any, PresentedResult], ToolResultView | None] | None,
    is_concurrency_safe: Callable[[Any], bool] | None,
) -> tuple[
    Callable[[Any], ToolCallView | None] | None,
    Callable[[Any, PresentedResult], ToolResultView | None] | None,
    Callable[[Any], bool] | None,
]:
    """Wrap presenters and the classifier so invalid arguments degrade instead of raising.

    Absent callbacks stay absent (``None``), so a UI can tell "no presenter" from "fell back".
    """
    soft_call = None
    if present_call is not None:
        call = present_call

        def soft_call(args: Any) -> ToolCallView | None:
            return call(args) if is_valid(args) else None

    soft_result = None
    if present_result is not None:
        result = present_result

        def soft_result(args: Any, presented: PresentedResult) -> ToolResultView | None:
            return result(args, presented) if is_valid(args) else None

    soft_classifier = None
    if is_concurrency_safe is not None:
        classify = is_concurrency_safe

        def soft_classifier(args: Any) -> bool:
            return classify(args) is True if is_valid(args) else False

    return soft_call, soft_result, soft_classifier
