"""The author schema DSL (upstream S-DSL1–4): what ``define_tool`` takes for parameters and outputs.

Why a DSL on top of raw JSON Schema: it makes the dangerous defaults explicit. Requiredness is a
per-property ``"required": True`` next to the property it concerns, and every explicit object must
say ``additionalProperties: True`` or ``False`` so no object is accidentally open. The author-only
``{"type": "json"}`` node spells "any lossless JSON value". The DSL compiles to the raw subset
(:mod:`toolrt.schema._subset`), which is what the model sees and what the validator enforces.

Vocabulary: ``{"type": "string"|"number"|"integer"|"boolean"|"null", "enum"?, "const"?}``,
``{"type": "array", "items"?}``, ``{"type": "object", "properties"?, "additionalProperties": bool}``,
``{"type": "json"}``, ``{"oneOf": [spec, spec, ...]}``; every node may carry the annotations
``description``, ``title``, ``default`` and ``examples``. A :data:`ParameterSchemaSpec` maps each
parameter name to a value spec that may add ``"required": True``; the parameter root is an *open*
object (no ``additionalProperties`` key).

Author errors raise :class:`~toolrt._errors.JsonSchemaError` with exactly one violation, the first
problem found in declaration order (``unsupported JSON schema: parameters.path.required must be
true when present``). The compiled schema is then asserted against the raw subset, so a
type-incorrect ``enum``/``const``, a single-branch ``oneOf``, a ``const`` outside its ``enum`` or a
lossy annotation is reported there with raw-subset messages rooted at ``schema``.

Compilation is iterative: a 5000-deep ``oneOf`` chain compiles without ``RecursionError``.
Python adaptations: a spec node is a ``dict`` with ``str`` keys (see :mod:`toolrt.schema._subset`);
``oneOf`` and ``enum`` must be ``list``/``tuple``; ``required`` must be exactly ``True``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, TypeAlias, TypedDict

from toolrt._errors import JsonSchemaError
from toolrt._json import JsonValue
from toolrt.schema._subset import (
    NUMBER_BOUNDS,
    SchemaPath,
    assert_supported_json_schema,
    read_array,
    read_record,
    render_path,
)
from toolrt.schema._validator import compile_validator

__all__ = [
    "ArrayParameterSpec",
    "ArrayValueSchemaSpec",
    "BooleanParameterSpec",
    "BooleanValueSchemaSpec",
    "IntegerParameterSpec",
    "IntegerValueSchemaSpec",
    "JsonParameterSpec",
    "JsonValueSchemaSpec",
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
    "StringParameterSpec",
    "StringValueSchemaSpec",
    "ValueSchemaSpec",
    "parameter_schema_spec_to_json_schema",
    "validate_args",
    "value_schema_spec_to_json_schema",
]


# --- the vocabulary, as types --------------------------------------------------------------------


class _Annotations(TypedDict, total=False):
    """Non-validating annotations every node may carry (``default``/``examples`` must be lossless)."""

    description: str
    title: str
    default: JsonValue
    examples: JsonValue
    format: str


class StringValueSchemaSpec(_Annotations):
    """A string, optionally limited by ``enum``/``const`` and a length in code points (decision 0011)."""

    type: Literal["string"]
    enum: NotRequired[Sequence[str]]
    const: NotRequired[str]
    minLength: NotRequired[int]
    maxLength: NotRequired[int]


class NumberValueSchemaSpec(_Annotations):
    """A finite JSON number (``int`` or ``float``, never ``bool``)."""

    type: Literal["number"]
    enum: NotRequired[Sequence[float]]
    const: NotRequired[float]
    minimum: NotRequired[float]
    maximum: NotRequired[float]
    exclusiveMinimum: NotRequired[float]
    exclusiveMaximum: NotRequired[float]
    multipleOf: NotRequired[float]


class IntegerValueSchemaSpec(_Annotations):
    """An integer (``2`` or ``2.0``)."""

    type: Literal["integer"]
    enum: NotRequired[Sequence[int]]
    const: NotRequired[int]
    minimum: NotRequired[float]
    maximum: NotRequired[float]
    exclusiveMinimum: NotRequired[float]
    exclusiveMaximum: NotRequired[float]
    multipleOf: NotRequired[float]


class BooleanValueSchemaSpec(_Annotations):
    """``True`` or ``False``."""

    type: Literal["boolean"]
    enum: NotRequired[Sequence[bool]]
    const: NotRequired[bool]


class NullValueSchemaSpec(_Annotations):
    """JSON ``null`` (``None``)."""

    type: Literal["null"]
    enum: NotRequired[Sequence[None]]
    const: NotRequired[None]


class ArrayValueSchemaSpec(_Annotations):
    """An array; without ``items`` any lossless JSON item is accepted."""

    type: Literal["array"]
    items: NotRequired[ValueSchemaSpec]
    minItems: NotRequired[int]
    maxItems: NotRequired[int]
    uniqueItems: NotRequired[bool]


class ObjectValueSchemaSpec(_Annotations):
    """An explicit object. ``additionalProperties`` is mandatory so openness is always a decision."""

    type: Literal["object"]
    properties: NotRequired[ParameterSchemaSpec]
    additionalProperties: bool


class JsonValueSchemaSpec(_Annotations):
    """Any lossless JSON value (compiles to an annotation-only raw node)."""

    type: Literal["json"]


class OneOfValueSchemaSpec(_Annotations):
    """Exactly one of at least two branches must match."""

    oneOf: Sequence[ValueSchemaSpec]


ValueSchemaSpec: TypeAlias = (
    StringValueSchemaSpec
    | NumberValueSchemaSpec
    | IntegerValueSchemaSpec
    | BooleanValueSchemaSpec
    | NullValueSchemaSpec
    | ArrayValueSchemaSpec
    | ObjectValueSchemaSpec
    | JsonValueSchemaSpec
    | OneOfValueSchemaSpec
)
"""One author-facing schema for any JSON value (an output, an array item, a oneOf branch)."""


class _Required(TypedDict, total=False):
    required: Literal[True]


class StringParameterSpec(StringValueSchemaSpec, _Required):
    """A string parameter, optionally ``required``."""


class NumberParameterSpec(NumberValueSchemaSpec, _Required):
    """A number parameter, optionally ``required``."""


class IntegerParameterSpec(IntegerValueSchemaSpec, _Required):
    """An integer parameter, optionally ``required``."""


class BooleanParameterSpec(BooleanValueSchemaSpec, _Required):
    """A boolean parameter, optionally ``required``."""


class NullParameterSpec(NullValueSchemaSpec, _Required):
    """A null parameter, optionally ``required``."""


class ArrayParameterSpec(ArrayValueSchemaSpec, _Required):
    """An array parameter, optionally ``required``."""


class ObjectParameterSpec(ObjectValueSchemaSpec, _Required):
    """An object parameter, optionally ``required``."""


class JsonParameterSpec(JsonValueSchemaSpec, _Required):
    """An any-JSON parameter, optionally ``required``."""


class OneOfParameterSpec(OneOfValueSchemaSpec, _Required):
    """A union parameter, optionally ``required``."""


ParameterPropertySpec: TypeAlias = (
    StringParameterSpec
    | NumberParameterSpec
    | IntegerParameterSpec
    | BooleanParameterSpec
    | NullParameterSpec
    | ArrayParameterSpec
    | ObjectParameterSpec
    | JsonParameterSpec
    | OneOfParameterSpec
)
"""A value spec in a property position, where ``"required": True`` is allowed."""

ParameterSchemaSpec: TypeAlias = Mapping[str, ParameterPropertySpec]
"""Tool parameters: name → property spec. The implicit root is an open object."""


# --- compilation ---------------------------------------------------------------------------------

_ANNOTATION_KEYS: Final = ("description", "title", "default", "examples", "format")
# Decision 0011's bounds pass through to the raw subset, which checks their values and placement.
_SCALAR_BOUNDS: Final = (*NUMBER_BOUNDS, "multipleOf", "minLength", "maxLength")
_ARRAY_BOUNDS: Final = ("minItems", "maxItems", "uniqueItems")
_SCALAR_TYPES: Final = ("string", "number", "integer", "boolean", "null")
_ONE_OF_KEYS: Final = frozenset({*_ANNOTATION_KEYS, "oneOf", "type"})
_JSON_KEYS: Final = frozenset({*_ANNOTATION_KEYS, "type"})
_OBJECT_KEYS: Final = frozenset({*_ANNOTATION_KEYS, "type", "properties", "additionalProperties"})
_ARRAY_KEYS: Final = frozenset({*_ANNOTATION_KEYS, "type", "items", *_ARRAY_BOUNDS})
_SCALAR_KEYS: Final = frozenset({*_ANNOTATION_KEYS, "type", "enum", "const", *_SCALAR_BOUNDS})
_REQUIRED: Final = frozenset({"required"})

# Compiler tasks (first element of each task tuple).
_VALUE: Final = 0
_PROPERTY_MAP: Final = 1
_PROPERTY: Final = 2
_MAP_TAIL: Final = 3
_LEAVE: Final = 4


def value_schema_spec_to_json_schema(spec: ValueSchemaSpec) -> dict[str, Any]:
    """Compile a value spec (an output schema, any JSON root) to the raw subset; root path ``schema``.

    ``{"type": "json"}`` becomes ``{}`` plus its annotations. Raises
    :class:`~toolrt._errors.JsonSchemaError` for an author error or a raw-subset violation.
    """
    holder: dict[str, Any] = {}
    _run(holder, (_VALUE, spec, "schema", False, holder, "value"))
    schema: dict[str, Any] = holder["value"]
    assert_supported_json_schema(schema)
    return schema


def parameter_schema_spec_to_json_schema(spec: ParameterSchemaSpec) -> dict[str, Any]:
    """Compile tool parameters to ``{"type": "object", "properties": ..., "required"?: [...]}``.

    The root has no ``additionalProperties`` key: tool arguments are open by default, as in upstream
    (extra keys are allowed). ``required`` lists the ``required: True`` names in declaration order and
    is omitted when empty. Paths in author errors start at ``parameters``.
    """
    holder: dict[str, Any] = {}
    _run(holder, (_PROPERTY_MAP, spec, "parameters", holder))
    schema: dict[str, Any] = {"type": "object", "properties": holder["properties"]}
    if "required" in holder:
        schema["required"] = holder["required"]
    assert_supported_json_schema(schema)
    return schema


def validate_args(spec: ParameterSchemaSpec, args: object) -> list[str]:
    """Validate tool arguments against a parameter spec; ``[]`` means valid (S-DSL4).

    The root path is ``""``: the root shows as ``arguments`` and nested paths have no prefix
    (``missing required property "config.host"``). Defaults are not applied: this only checks.
    Total over ``args``; an invalid ``spec`` raises :class:`~toolrt._errors.JsonSchemaError`.
    Compiles the spec on every call; hold a :func:`~toolrt.schema.compile_validator` for hot paths.
    """
    return compile_validator(parameter_schema_spec_to_json_schema(spec)).validate(args, "")


def _author_error(message: str) -> JsonSchemaError:
    return JsonSchemaError([message])


def _copy_annotations(record: Mapping[str, Any], node: dict[str, Any]) -> None:
    # Fixed order, not the author's: compiled schemas are byte-stable whatever the spelling order.
    for key in _ANNOTATION_KEYS:
        if key in record:
            node[key] = record[key]


def _check_keys(record: Mapping[str, Any], path: SchemaPath, allowed: frozenset[str], required: bool) -> None:
    for key in record:
        if key not in allowed and not (required and key == "required"):
            raise _author_error(f"{render_path(path)}.{key} is not supported by the value schema DSL")


def _run(holder: dict[str, Any], initial: tuple[Any, ...]) -> None:
    """Execute the compiler's task graph with an explicit stack (no recursion).

    Nodes are installed into their parent as soon as they are created, in pre-order, so compiled
    key order follows the author's declaration order.
    """
    # Ids of the spec objects on the current path; a repeat is a cycle (sibling reuse is fine).
    ancestors: set[int] = set()
    tasks: list[tuple[Any, ...]] = [initial]
    push = tasks.append
    while tasks:
        task = tasks.pop()
        tag = task[0]
        if tag == _LEAVE:
            ancestors.discard(task[1])
        elif tag == _MAP_TAIL:
            _, required, target = task
            if required:
                target["required"] = required
        elif tag == _PROPERTY:
            _, spec, path, key, compiled_properties, required = task
            record = read_record(spec)
            if record is None:
                raise _author_error(f"{render_path(path)} must be a value schema object")
            if "required" in record:
                if record["required"] is not True:
                    raise _author_error(f"{render_path(path)}.required must be true when present")
                required.append(key)
            push((_VALUE, spec, path, True, compiled_properties, key))
        elif tag == _PROPERTY_MAP:
            _, spec, path, target = task
            record = read_record(spec)
            if record is None:
                raise _author_error(f"{render_path(path)} must be an object of value schemas")
            identity = id(spec)
            if identity in ancestors:
                raise _author_error(f"{render_path(path)} is circular")
            ancestors.add(identity)
            push((_LEAVE, identity))
            properties: dict[str, Any] = {}
            target["properties"] = properties
            required_names: list[str] = []
            push((_MAP_TAIL, required_names, target))
            entries = list(record.items())
            for index in range(len(entries) - 1, -1, -1):
                name, child = entries[index]
                push((_PROPERTY, child, (path, f".{name}"), name, properties, required_names))
        else:
            _compile_value(task, ancestors, push)


def _compile_value(
    task: tuple[Any, ...], ancestors: set[int], push: Callable[[tuple[Any, ...]], None]
) -> None:
    """Compile one value node into ``container[slot]``, scheduling its children."""
    _, spec, path, allow_required, container, slot = task
    record = read_record(spec)
    if record is None:
        raise _author_error(f"{render_path(path)} must be a value schema object")
    identity = id(spec)
    if identity in ancestors:
        raise _author_error(f"{render_path(path)} is circular")
    ancestors.add(identity)
    push((_LEAVE, identity))
    node: dict[str, Any] = {}
    container[slot] = node

    if "oneOf" in record:
        _check_keys(record, path, _ONE_OF_KEYS, allow_required)
        if "type" in record:
            raise _author_error(f"{render_path(path)} cannot declare both type and oneOf")
        branches_in = read_array(record["oneOf"])
        if branches_in is None:
            raise _author_error(f"{render_path(path)}.oneOf must be an array of at least two value schemas")
        branches: list[Any] = [None] * len(branches_in)
        node["oneOf"] = branches
        _copy_annotations(record, node)
        for index in range(len(branches_in) - 1, -1, -1):
            push((_VALUE, branches_in[index], (path, f".oneOf[{index}]"), False, branches, index))
        return

    declared_type = record.get("type")
    kind = str.__str__(declared_type) if isinstance(declared_type, str) else None
    if kind == "json":
        _check_keys(record, path, _JSON_KEYS, allow_required)
        _copy_annotations(record, node)
    elif kind == "object":
        _check_keys(record, path, _OBJECT_KEYS, allow_required)
        if type(record.get("additionalProperties")) is not bool:
            raise _author_error(f"{render_path(path)}.additionalProperties must be explicitly true or false")
        node["type"] = "object"
        _copy_annotations(record, node)
        node["additionalProperties"] = record["additionalProperties"]
        if "properties" in record:
            push((_PROPERTY_MAP, record["properties"], (path, ".properties"), node))
    elif kind == "array":
        _check_keys(record, path, _ARRAY_KEYS, allow_required)
        node["type"] = "array"
        _copy_annotations(record, node)
        _copy_bounds(record, node, _ARRAY_BOUNDS)
        if "items" in record:
            push((_VALUE, record["items"], (path, ".items"), False, node, "items"))
    elif kind in _SCALAR_TYPES:
        _check_keys(record, path, _SCALAR_KEYS, allow_required)
        node["type"] = kind
        _copy_annotations(record, node)
        if "enum" in record:
            entries = read_array(record["enum"])
            if entries is None:
                raise _author_error(f"{render_path(path)}.enum must be a non-empty array of scalar values")
            node["enum"] = list(entries)
        if "const" in record:
            node["const"] = record["const"]
        _copy_bounds(record, node, _SCALAR_BOUNDS)
    else:
        raise _author_error(
            f"{render_path(path)}.type must be "
            "string/number/integer/boolean/null/array/object/json, or use oneOf"
        )


def _copy_bounds(record: Mapping[str, Any], node: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if key in record:
            node[key] = record[key]
