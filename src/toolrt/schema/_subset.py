"""The raw JSON-Schema subset every toolrt schema is checked against (upstream J1–J3).

Why a subset: every schema toolrt accepts is *enforced*. A keyword the validator would not
implement (``pattern``, ``anyOf``, ``$ref``, ``minProperties``, ...) is rejected when the schema is
declared, instead of being sent to the model as a promise the runtime silently ignores.

Vocabulary (J1): constraints ``type`` (one of ``object array string number integer boolean null``),
``oneOf``, ``properties``, ``required``, ``additionalProperties`` (a boolean, or a schema every
undeclared property's value must match: toolrt's extension of the seed subset, decision 0010),
``items``, ``enum``, ``const``; annotations ``description`` and ``title`` (strings), ``default``
and ``examples`` (lossless JSON). A node with neither ``type`` nor ``oneOf`` and no constraint
accepts any lossless JSON value.

Decision 0011 grows it with the bounds a model can read and the validator enforces exactly:
``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` (lossless numbers) and
``multipleOf`` (a positive number) on ``number``/``integer``; ``minLength``/``maxLength`` (code
points) on ``string``; ``minItems``/``maxItems`` and ``uniqueItems`` (a boolean) on ``array``; and
the annotation ``format`` (a string: like Draft 2020-12's default, it describes and never fails a
value; ``@tool`` parses the formats it emits itself). ``pattern`` stays outside: ECMA-262 and
Python regular expressions disagree, so a regex is description text, never a keyword.

Python adaptations of the upstream (JavaScript) rules:

* A schema *record* is a ``dict`` (any subclass, e.g. ``FrozenDict``) whose keys are all ``str``.
  A key of another type plays the role of a JavaScript symbol key: the node is not a schema object.
  A dict subclass whose ``items()`` or ``__getitem__`` raises (the analogue of a hostile proxy) is
  reported as ``<p> must be a schema object`` instead of propagating the exception. Records are
  read once, through their own protocol, so what is checked is what is later compiled.
* A *dense plain array* is a ``list`` or ``tuple`` (any subclass that can be iterated).
* ``bool`` is never a number. An integer is an ``int`` or an integral finite ``float`` (not ``-0.0``);
  a number must be finite, not ``-0.0``, and an ``int`` must be exactly representable as a double,
  because a JavaScript reader of the same JSON would see a different number.
* A key holding ``None`` is present (JSON ``null``), never "absent" (Python has no ``undefined``).

Every walk is iterative: a 5000-deep ``oneOf`` chain is asserted without ``RecursionError``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

from toolrt._errors import JsonSchemaError
from toolrt._json import MAX_SAFE_INTEGER, FrozenDict, FrozenList, is_lossless_json

__all__ = [
    "COUNT_BOUNDS",
    "NUMBER_BOUNDS",
    "SCHEMA_TYPES",
    "SchemaPath",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "is_integral",
    "is_lossless_number",
    "json_schema_violations",
    "plain_number",
    "plain_scalar",
    "read_array",
    "read_record",
    "render_path",
    "safely_lossless",
]

SCHEMA_TYPES: Final = ("object", "array", "string", "number", "integer", "boolean", "null")
"""The single-type keywords of the subset, in the order the messages list them."""

_SCALAR_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "null"})
NUMBER_BOUNDS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
"""The numeric bound keywords (decision 0011), each a lossless number."""
COUNT_BOUNDS: Final = ("minLength", "maxLength", "minItems", "maxItems")
"""The length and size keywords (decision 0011), each a non-negative integer."""
_BOUND_KEYWORDS: Final = (*NUMBER_BOUNDS, "multipleOf", *COUNT_BOUNDS, "uniqueItems")
_CONSTRAINTS: Final = frozenset(
    {"type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const"}
    | set(_BOUND_KEYWORDS)
)
_ANNOTATIONS: Final = frozenset({"description", "title", "default", "examples", "format"})
# The keywords that need a type (or are meaningless beside oneOf), in the order they are reported.
_SIBLING_KEYWORDS: Final = (
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    *_BOUND_KEYWORDS,
)
_OBJECT_ONLY: Final = frozenset({"object"})
_NUMERIC_TYPES: Final = frozenset({"number", "integer"})
_STRING_ONLY: Final = frozenset({"string"})
_ARRAY_ONLY: Final = frozenset({"array"})
_ALLOWED_ON: Final = (
    ("properties", _OBJECT_ONLY),
    ("required", _OBJECT_ONLY),
    ("additionalProperties", _OBJECT_ONLY),
    ("items", _ARRAY_ONLY),
    ("enum", _SCALAR_TYPES),
    ("const", _SCALAR_TYPES),
    *((key, _NUMERIC_TYPES) for key in (*NUMBER_BOUNDS, "multipleOf")),
    ("minLength", _STRING_ONLY),
    ("maxLength", _STRING_ONLY),
    ("minItems", _ARRAY_ONLY),
    ("maxItems", _ARRAY_ONLY),
    ("uniqueItems", _ARRAY_ONLY),
)
_UNKNOWN_KEYWORD: Final = (
    " is not a supported keyword"
    " (subset: type/oneOf/properties/required/additionalProperties/items/enum/const,"
    " minimum/maximum/exclusiveMinimum/exclusiveMaximum/multipleOf, minLength/maxLength,"
    " minItems/maxItems/uniqueItems + annotations)"
)
_TYPE_LIST: Final = "/".join(SCHEMA_TYPES)


# --- shared readers (used by the validator and the DSL compiler too) -----------------------------


def read_record(value: object) -> Mapping[str, Any] | None:
    """The str-keyed items of a schema record, read once; ``None`` for anything else.

    Exact ``dict``/``FrozenDict`` are returned as they are (their items cannot lie). Any other dict
    subclass is read through ``items()`` and ``__getitem__`` so an override that raises is caught
    here, once, instead of surfacing later as a crash.
    """
    kind = type(value)
    if kind is dict or kind is FrozenDict:
        for key in value:  # type: ignore[attr-defined]
            if type(key) is not str and not isinstance(key, str):
                return None
        return value  # type: ignore[return-value]
    if not isinstance(value, dict):
        return None
    try:
        record: dict[str, Any] = {}
        for key, _ in list(value.items()):
            if not isinstance(key, str):
                return None
            record[key] = value[key]
    except Exception:
        return None
    return record


def read_array(value: object) -> list[Any] | tuple[Any, ...] | None:
    """The items of a dense plain array (``list``/``tuple``), read once; ``None`` for anything else."""
    kind = type(value)
    if kind is list or kind is tuple or kind is FrozenList:
        return value  # type: ignore[return-value]
    if not isinstance(value, list | tuple):
        return None
    try:
        # list() goes through an overridden __iter__, so a hostile subclass fails here, contained.
        return list(value)
    except Exception:
        return None


def plain_number(value: object) -> int | float | None:
    """``value`` as a plain ``int``/``float`` if it is a Python number (never a ``bool``), else ``None``."""
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[return-value]
    if isinstance(value, bool):
        return None
    # Subclasses (IntEnum, ...) are read through the base slot so an override cannot lie.
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return None


def is_lossless_number(number: int | float) -> bool:
    """Whether a plain number reads back identically in every JSON reader (finite, not -0.0, exact)."""
    if type(number) is int:
        if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            return True
        try:
            return float(number) == number
        except OverflowError:
            return False
    if not math.isfinite(number):
        return False
    return number != 0.0 or math.copysign(1.0, number) > 0


def is_integral(number: int | float) -> bool:
    """Whether a lossless plain number is an integer (``2`` or ``2.0``)."""
    return type(number) is int or number.is_integer()  # type: ignore[union-attr]


def _scalar_matches(schema_type: str, value: object) -> bool:
    """Whether ``value`` is a type-correct ``enum``/``const`` entry for a scalar schema type."""
    if schema_type == "string":
        return isinstance(value, str)
    if schema_type == "boolean":
        return value is True or value is False
    if schema_type == "null":
        return value is None
    number = plain_number(value)
    if number is None or not is_lossless_number(number):
        return False
    return schema_type == "number" or is_integral(number)


def plain_scalar(value: object) -> object:
    """A type-correct scalar as its plain Python value (``StrEnum`` → ``str``), for comparisons."""
    if type(value) is not str and isinstance(value, str):
        return str.__str__(value)
    number = plain_number(value)
    return value if number is None else number


def safely_lossless(value: object) -> bool:
    """:func:`is_lossless_json` that treats any exception (a hostile container) as "not lossless".

    Schema text may hold lone surrogates (upstream's are JavaScript strings; the renderers escape
    them), so this check keeps them: it is the text of *values* that must be valid UTF-8.
    """
    try:
        return is_lossless_json(value, lone_surrogates=True)
    except Exception:
        return False


# --- J2: assert the subset -----------------------------------------------------------------------

# Walk tasks. An "enter" checks one node; the tails run after that node's children so that the
# messages come out in upstream order (children first, then the node's own trailing checks).
_ENTER: Final = 0
_LEAVE: Final = 1
_ONE_OF_TAIL: Final = 2
_OBJECT_TAIL: Final = 3


def json_schema_violations(schema: object, root: str = "schema") -> list[str]:
    """Every way ``schema`` falls outside the supported subset, in walk order (``[]`` if supported).

    The same list :func:`assert_supported_json_schema` raises with; useful when the caller wants to
    report rather than raise. ``root`` names the schema in the paths (``schema.properties.x...``).
    Total: never raises, whatever ``schema`` is.
    """
    violations: list[str] = []
    _collect(schema, root, violations)
    return violations


def assert_supported_json_schema(schema: object) -> None:
    """Raise :class:`~toolrt._errors.JsonSchemaError` listing *every* violation of the subset (J2).

    Reporting all violations at once lets an author fix a schema in one round instead of one error
    per attempt. An annotation-only schema (``{}``) is accepted: it means "any lossless JSON value".
    """
    violations = json_schema_violations(schema)
    if violations:
        raise JsonSchemaError(violations)


def assert_object_json_schema(schema: object) -> None:
    """:func:`assert_supported_json_schema`, plus the root must be ``type: "object"`` (J3).

    Structured outputs of subagents and workflows are object-rooted; tool outputs are not, which is
    why this guard is separate and applied only by the consumers that need it.
    """
    violations = json_schema_violations(schema)
    if not violations:
        record = read_record(schema)
        if record is None or record.get("type") != "object":
            violations.append('schema.type must be "object" (structured output is object-rooted)')
    if violations:
        raise JsonSchemaError(violations)


# A path is its root label or (parent path, suffix); rendered only when a violation is reported, so
# a deep walk never builds (and keeps alive) one long string per level, which would be quadratic.
SchemaPath: TypeAlias = "str | tuple[SchemaPath, str]"


def render_path(path: SchemaPath) -> str:
    """The text of a lazy path."""
    parts: list[str] = []
    while type(path) is tuple:
        path, suffix = path
        parts.append(suffix)
    parts.append(path)  # type: ignore[arg-type]
    parts.reverse()
    return "".join(parts)


def _collect(root: object, root_path: str, violations: list[str]) -> None:
    """Append every subset violation of ``root`` to ``violations`` using an explicit task stack."""
    # Ids of the schema nodes on the current path (ancestors): a repeat is a cycle, a sibling reuse
    # is not. The nodes themselves stay alive through ``root`` while the walk runs.
    ancestors: set[int] = set()
    tasks: list[tuple[int, Any, Any, Any]] = [(_ENTER, root, root_path, None)]
    push = tasks.append
    while tasks:
        task, node, path, extra = tasks.pop()
        if task == _LEAVE:
            ancestors.discard(node)
            continue
        if task == _ONE_OF_TAIL:
            for key in _SIBLING_KEYWORDS:
                if key in node:
                    violations.append(f"{render_path(path)}.{key} is not supported beside oneOf")
            continue
        if task == _OBJECT_TAIL:
            _check_object_tail(node, path, extra, violations)
            continue

        record = read_record(node)
        if record is None:
            violations.append(f"{render_path(path)} must be a schema object")
            continue
        identity = id(node)
        if identity in ancestors:
            violations.append(f"{render_path(path)} is circular")
            continue
        ancestors.add(identity)
        push((_LEAVE, identity, None, None))

        for key, value in record.items():
            if key in _CONSTRAINTS:
                continue
            if key in _ANNOTATIONS:
                if not safely_lossless(value):
                    violations.append(f"{render_path(path)}.{key} annotation must be lossless JSON data")
                continue
            violations.append(f"{render_path(path)}.{key}{_UNKNOWN_KEYWORD}")
        if "description" in record and not isinstance(record["description"], str):
            violations.append(f"{render_path(path)}.description must be a string")
        if "title" in record and not isinstance(record["title"], str):
            violations.append(f"{render_path(path)}.title must be a string")
        if "format" in record and not isinstance(record["format"], str):
            violations.append(f"{render_path(path)}.format must be a string")

        has_type = "type" in record
        has_one_of = "oneOf" in record
        if has_type and has_one_of:
            violations.append(f"{render_path(path)} cannot declare both type and oneOf")
            continue
        if not has_type and not has_one_of:
            for key in _SIBLING_KEYWORDS:
                if key in record:
                    violations.append(f"{render_path(path)}.{key} requires type or oneOf")
            continue

        if has_one_of:
            push((_ONE_OF_TAIL, record, path, None))
            branches = read_array(record["oneOf"])
            if branches is None or len(branches) < 2:
                violations.append(f"{render_path(path)}.oneOf must be an array of at least two schemas")
            else:
                for index in range(len(branches) - 1, -1, -1):
                    push((_ENTER, branches[index], (path, f".oneOf[{index}]"), None))
            continue

        schema_type = record["type"]
        if not isinstance(schema_type, str) or schema_type not in SCHEMA_TYPES:
            if isinstance(schema_type, list | tuple):
                violations.append(
                    f"{render_path(path)}.type must be a single type string (type arrays are not supported)"
                )
            else:
                violations.append(f"{render_path(path)}.type must be one of {_TYPE_LIST}")
            continue
        for key, types in _ALLOWED_ON:
            if key in record and schema_type not in types:
                violations.append(f'{render_path(path)}.{key} is not supported on type "{schema_type}"')
        _check_bounds(record, path, violations)

        if schema_type == "object":
            properties = record.get("properties")
            push((_OBJECT_TAIL, record, path, properties))
            # A schema-valued additionalProperties (``dict[str, X]``) is walked after the properties.
            additional = record.get("additionalProperties")
            if type(additional) is not bool and read_record(additional) is not None:
                push((_ENTER, additional, (path, ".additionalProperties"), None))
            if "properties" in record:
                declared = read_record(properties)
                if declared is None:
                    violations.append(f"{render_path(path)}.properties must be an object of schemas")
                else:
                    entries = list(declared.items())
                    for index in range(len(entries) - 1, -1, -1):
                        name, child = entries[index]
                        push((_ENTER, child, (path, f".properties.{name}"), None))
        elif schema_type == "array":
            if "items" in record:
                push((_ENTER, record["items"], (path, ".items"), None))
        else:
            _check_literals(record, path, schema_type, violations)


def _check_object_tail(
    record: Mapping[str, Any], path: SchemaPath, properties: object, violations: list[str]
) -> None:
    """``required`` and ``additionalProperties`` of an object node, checked after its properties."""
    if "required" in record:
        names = read_array(record["required"])
        if names is None or not all(isinstance(name, str) for name in names):
            violations.append(f"{render_path(path)}.required must be an array of strings")
        else:
            declared = read_record(properties) or {}
            for name in names:
                if name not in declared:
                    violations.append(
                        f'{render_path(path)}.required names "{name}" which is not in properties'
                    )
    additional = record.get("additionalProperties")
    if "additionalProperties" in record and type(additional) is not bool and read_record(additional) is None:
        violations.append(f"{render_path(path)}.additionalProperties must be a boolean or a schema")


def _check_literals(
    record: Mapping[str, Any], path: SchemaPath, schema_type: str, violations: list[str]
) -> None:
    """Type-correct ``enum``/``const`` on a scalar node, and ``const`` inside ``enum`` when both."""
    allowed = read_array(record["enum"]) if "enum" in record else None
    enum_valid = (
        allowed is not None and len(allowed) > 0 and all(_scalar_matches(schema_type, v) for v in allowed)
    )
    if "enum" in record and not enum_valid:
        violations.append(f"{render_path(path)}.enum must be a non-empty array of {schema_type} values")
    if "const" in record:
        declared = record["const"]
        if not _scalar_matches(schema_type, declared):
            violations.append(f"{render_path(path)}.const must be a {schema_type} value")
        elif enum_valid and allowed is not None:
            # Entries and const are type-correct here, so == cannot confuse True with 1.
            plain = plain_scalar(declared)
            if not any(plain_scalar(entry) == plain for entry in allowed):
                violations.append(
                    f"{render_path(path)}.const must be one of {render_path(path)}.enum "
                    "when both are declared"
                )


def _check_bounds(record: Mapping[str, Any], path: SchemaPath, violations: list[str]) -> None:
    """The values of the bound keywords (decision 0011): numbers, counts and a boolean."""
    for key in NUMBER_BOUNDS:
        if key in record:
            number = plain_number(record[key])
            if number is None or not is_lossless_number(number):
                violations.append(f"{render_path(path)}.{key} must be a finite JSON number")
    if "multipleOf" in record:
        number = plain_number(record["multipleOf"])
        if number is None or not is_lossless_number(number) or number <= 0:
            violations.append(f"{render_path(path)}.multipleOf must be a number greater than 0")
    for key in COUNT_BOUNDS:
        if key in record:
            number = plain_number(record[key])
            if number is None or not is_lossless_number(number) or not is_integral(number) or number < 0:
                violations.append(f"{render_path(path)}.{key} must be a non-negative integer")
    if "uniqueItems" in record and type(record["uniqueItems"]) is not bool:
        violations.append(f"{render_path(path)}.uniqueItems must be a boolean")
