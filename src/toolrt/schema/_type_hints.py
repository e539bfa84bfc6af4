"""Python type hints and docstrings → the raw JSON-Schema subset, plus argument/return converters.

This is the engine behind :func:`toolrt.tool`. It turns a function signature into

* a **parameters** schema (``{"type": "object", "properties": ..., "required": ...,
  "additionalProperties": false}``) and an **output** schema, both inside the enforced subset
  (``type``/``oneOf``/``properties``/``required``/``additionalProperties``/``items``/``enum``/``const``,
  the bounds of decision 0011 plus ``description``/``title``/``default``/``examples``/``format``; no
  ``$ref``, everything inlined);
* a **description** from the docstring summary, with per-parameter descriptions from ``Args:``;
* per-parameter **converters** (frozen JSON → ``Enum`` members, dataclass and pydantic instances,
  tuples, sets, ``datetime``/``date``/``time``/``UUID``/``Path``/``Decimal`` parsed from their
  formatted strings) and a **return converter** (instances → JSON data).

Constraints travel as keywords (decision 0011): ``Annotated[int, Field(gt=0)]`` and plain
``annotated_types`` (``Gt``, ``Le``, ``MinLen``, ``MaxLen``, ``Len``, ``Interval``, ...) become
``exclusiveMinimum``/``maximum``/``minLength``/``minItems``/... on the type they constrain; what has no
keyword (a ``pattern``) becomes description text, enforced by pydantic inside a model and by the
converter outside one. ``set[T]`` is an array with ``uniqueItems``, ``tuple[T, T]`` one with an exact
size.

>>> def add(a: int, b: int = 0) -> int:
...     '''Add two integers.
...
...     Args:
...         a: The first addend.
...     '''
...     return a + b
>>> parameters, output, description = schema_from_function(add)
>>> parameters["properties"]["a"], parameters["required"], output, description
({'type': 'integer', 'description': 'The first addend.'}, ['a'], {'type': 'integer'}, 'Add two integers.')

Why so many loud failures: the subset's ``oneOf`` means *exactly one* branch matches. A hint that
cannot be expressed faithfully (``str | Literal["a"]`` overlaps, ``dict[int, str]`` has non-string
keys, a recursive type would need ``$ref``, ``tuple[int, str]`` would need ``prefixItems``) raises
``TypeError`` when the tool is defined, naming the parameter, instead of producing a schema that
silently accepts the wrong values or rejects the right ones.

This module is the whole walk from a hint to a schema node: the entry point and its per-function
results, the nodes (objects, literals, enums and ``oneOf`` unions, with the checks that refuse what
the subset cannot express), and the iterative walk that assembles them. Docstring parsing
(:mod:`toolrt.schema._docstrings`) and the JSON ↔ Python value converters
(:mod:`toolrt.schema._converters`) are separate concepts it uses. Nothing here imports the rest of
toolrt: a parameter is recognised as the injected context by comparing its annotation with
``ToolRunContext`` / ``ToolExecution`` *only if* ``toolrt._execution`` is already imported (it must
be, for such an annotation to exist).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import inspect
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, ForwardRef, Literal, TypeVar, Union, get_args, get_origin

from toolrt._json import NotLosslessJsonError, snapshot_json, thaw
from toolrt.schema._converters import (
    STRING_FORMATS,
    Converter,
    dataclass_converter,
    dataclass_out,
    enum_converter,
    enum_value,
    format_converter,
    format_out,
    fresh_copy,
    generic_out,
    is_class,
    is_pydantic_model,
    json_kind,
    list_converter,
    mapping_converter,
    model_converter,
    model_out,
    pattern_converter,
    sequence_out,
    set_converter,
    set_out,
    to_int,
    tuple_converter,
    values_converter,
    values_out,
)
from toolrt.schema._docstrings import Docstring, parse_docstring

__all__ = ["FunctionSpec", "ParameterSpec", "analyze_function", "is_injected_context", "schema_from_function"]


_AWAITABLE_ORIGINS: tuple[Any, ...] = (collections.abc.Awaitable, collections.abc.Coroutine)


@dataclass(frozen=True, slots=True)
class ParameterSpec:
    """One parameter of the tool function and how to fill it on a call.

    ``injected`` parameters receive the run context and are not in the schema; the others are read
    from the arguments and passed through ``to_python`` (``None`` = pass the frozen JSON value as is).
    """

    name: str
    kind: inspect._ParameterKind
    injected: bool
    required: bool
    default: Any
    to_python: Converter | None


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """Everything :func:`toolrt.tool` needs from a function, computed once at decoration time.

    >>> spec = analyze_function(lambda text: text)
    >>> spec.parameters
    {'type': 'object', 'properties': {'text': {}}, 'required': ['text'], 'additionalProperties': False}
    """

    qualname: str
    description: str
    parameters: dict[str, Any]
    output: dict[str, Any]
    params: tuple[ParameterSpec, ...]
    var_keyword: str | None
    output_to_json: Converter | None


def is_injected_context(hint: Any) -> bool:
    """Whether ``hint`` is ``ToolRunContext`` or ``ToolExecution`` (possibly inside ``Annotated``).

    Checked by identity against ``toolrt._execution`` *if it is imported*; this module never imports
    it, so the schema engine stays free of the runtime.
    """
    while get_origin(hint) is typing.Annotated:
        hint = hint.__origin__
    execution = sys.modules.get("toolrt._execution")
    if execution is None:
        return False
    return any(hint is getattr(execution, name, None) for name in ("ToolRunContext", "ToolExecution"))


def analyze_function(
    fn: Callable[..., Any],
    *,
    is_injected: Callable[[Any], bool] = is_injected_context,
    description: str | None = None,
) -> FunctionSpec:
    """Map ``fn``'s signature, type hints and docstring to schemas and converters.

    Raises ``TypeError('@tool <qualname>: parameter "<name>": <why>')`` (or ``return value:``) for
    anything the subset cannot express faithfully.

    >>> analyze_function(lambda *items: None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: @tool <lambda>: parameter "items": *items cannot be expressed: ...
    """
    # A functools.partial documents and names itself after the function it wraps.
    source: Any = fn.func if isinstance(fn, functools.partial) else fn
    qualname = str(getattr(source, "__qualname__", None) or getattr(type(source), "__qualname__", repr(fn)))
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"@tool {qualname}: cannot read the signature: {error}") from None
    hints, ns = _function_hints(fn, signature, qualname)
    doc = parse_docstring(inspect.getdoc(source))
    walk = _Walk()
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[ParameterSpec] = []
    var_keyword: str | None = None
    for parameter in signature.parameters.values():
        name = parameter.name
        where = f'@tool {qualname}: parameter "{name}"'
        hint = hints.get(name, Any)
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(
                f"{where}: *{name} cannot be expressed: tool arguments are one JSON object of named "
                "properties; use a list parameter"
            )
        if is_injected(hint):
            params.append(ParameterSpec(name, parameter.kind, True, False, parameter.default, None))
            continue
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            if hint is not Any and hint is not object:
                raise TypeError(
                    f"{where}: **{name}: {_fmt(hint)} cannot be expressed: **kwargs collects the "
                    "undeclared properties unchecked; annotate it as Any, or take a dict[str, X] parameter"
                )
            var_keyword = name
            continue
        node = _map_root(walk, _Ask(hint, name, False, ns, doc.params.get(name)), where, name)
        schema = node.schema
        if parameter.default is _EMPTY:
            required.append(name)
        else:
            default = _json_or_missing(parameter.default)
            if default is not _MISSING:
                schema = {**schema, "default": default}
        properties[name] = schema
        params.append(
            ParameterSpec(
                name, parameter.kind, False, parameter.default is _EMPTY, parameter.default, _fresh(node)
            )
        )
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    # Closed unless **kwargs: an unexpected key comes back to the model as a validation error it can
    # fix, instead of a Python TypeError from the call.
    parameters["additionalProperties"] = var_keyword is not None
    output_hint = _unwrap_awaitable(hints.get("return", Any))
    output = _map_root(
        walk, _Ask(output_hint, "return", False, ns, doc.returns), f"@tool {qualname}: return value", "return"
    )
    output_to_json = output.to_json
    if output.kinds == _ALL_KINDS:
        output_to_json = generic_out  # an unannotated/Any return: convert instances, keep JSON as is
    return FunctionSpec(
        qualname=qualname,
        description=doc.summary if description is None else description,
        parameters=thaw(parameters),
        output=thaw(output.schema),
        params=tuple(params),
        var_keyword=var_keyword,
        output_to_json=output_to_json,
    )


def _fresh(node: _Node) -> Converter | None:
    """The converter a body's parameter goes through: plain, mutable values of the hinted type.

    A parameter that can hold a JSON container is thawed first (a fresh ``list``/``dict`` tree owned
    by this call), so a body that stores and later mutates its argument works, and the pipeline's
    frozen snapshot stays the untouched record of what the model sent. Scalar-only parameters skip
    the copy.
    """
    convert = node.to_python
    if not node.kinds & _CONTAINER_KINDS:
        return convert
    if convert is None:
        return fresh_copy
    inner = convert

    def thaw_then_convert(value: Any) -> Any:
        return inner(fresh_copy(value))

    return thaw_then_convert


def schema_from_function(fn: Callable[..., Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``(parameters_schema, output_schema, description)`` for ``fn``, as :func:`toolrt.tool` builds them.

    >>> def greet(name: str) -> str:
    ...     '''Say hello.'''
    ...     return f"hello {name}"
    >>> parameters, output, description = schema_from_function(greet)
    >>> parameters["properties"], parameters["required"], parameters["additionalProperties"]
    ({'name': {'type': 'string'}}, ['name'], False)
    >>> output, description
    ({'type': 'string'}, 'Say hello.')
    """
    spec = analyze_function(fn)
    return spec.parameters, spec.output, spec.description


def _map_root(walk: _Walk, ask: _Ask, where: str, name: str) -> _Node:
    try:
        return _run(walk.map(ask), walk)
    except _Unsupported as error:
        at = "" if error.path == name else f" (at {error.path})"
        raise TypeError(f"{where}: {error.why}{at}") from None


def _unwrap_awaitable(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in _AWAITABLE_ORIGINS:
        args = get_args(hint)
        return args[-1] if args else Any
    return hint


def _function_hints(
    fn: Callable[..., Any], signature: inspect.Signature, qualname: str
) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """Resolved annotations by parameter name (plus ``return``) and the namespace they came from."""
    target: Any = fn
    if not (inspect.isroutine(fn) or inspect.isclass(fn)) and callable(fn):
        target = getattr(fn, "func", None) or getattr(fn, "__call__", fn)  # noqa: B004 - partial / instance
    ns: Mapping[str, Any] = getattr(inspect.unwrap(target), "__globals__", {})
    try:
        resolved = typing.get_type_hints(target, include_extras=True)
    except Exception:
        resolved = None
    hints: dict[str, Any] = {}
    for name, parameter in signature.parameters.items():
        if resolved is not None and name in resolved:
            hints[name] = resolved[name]
        elif parameter.annotation is not _EMPTY:
            hints[name] = _resolve_one(parameter.annotation, ns, f'@tool {qualname}: parameter "{name}"')
    if resolved is not None and "return" in resolved:
        hints["return"] = resolved["return"]
    elif signature.return_annotation is not _EMPTY:
        hints["return"] = _resolve_one(signature.return_annotation, ns, f"@tool {qualname}: return value")
    return hints, ns


def _resolve_one(annotation: Any, ns: Mapping[str, Any], where: str) -> Any:
    if not isinstance(annotation, str):
        return annotation
    try:
        return _evaluate(annotation, _Ask(annotation, "", False, ns))
    except _Unsupported as error:
        raise TypeError(f"{where}: {error.why}") from None


# -- the schema nodes ---------------------------------------------------------------------------


_EMPTY = inspect.Parameter.empty


_MISSING: Any = object()


_ALL_KINDS = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


_NUMERIC = frozenset({"integer", "number"})


_CONTAINER_KINDS = frozenset({"array", "object"})


_SEQUENCE_ORIGINS: tuple[Any, ...] = (list, collections.abc.Sequence, collections.abc.MutableSequence)


_MAPPING_ORIGINS: tuple[Any, ...] = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


_SET_ORIGINS: tuple[Any, ...] = (set, frozenset, collections.abc.Set, collections.abc.MutableSet)


class _Unsupported(Exception):
    """Raised inside the walk; :func:`analyze_function` turns it into the public ``TypeError``."""

    def __init__(self, why: str, path: str) -> None:
        super().__init__(why)
        self.why = why
        self.path = path


@dataclass(slots=True)
class _Node:
    """A mapped hint: its schema, the JSON kinds it can match, and its converters."""

    schema: dict[str, Any]
    kinds: frozenset[str]
    label: Any  # the hint (or a text) to name this node in messages; formatted only on error
    to_python: Converter | None = None
    to_json: Converter | None = None
    # Whether ``to_python`` still yields JSON data (int normalisation) rather than Python objects
    # (Enum members, instances, tuples); a union uses it to tell conversions apart.
    keeps_json: bool = True
    # The Python classes ``to_json`` applies to, so a union can pick the branch for a return value.
    out_classes: tuple[type, ...] = ()
    # The branches of a ``oneOf`` node, kept so a union of unions flattens into one ``oneOf``.
    branches: tuple[_Node, ...] = ()


@dataclass(slots=True)
class _Ask:
    """A request to map one hint. ``doc`` is a docstring description (weaker than ``Annotated``)."""

    hint: Any
    path: str
    in_model: bool
    ns: Mapping[str, Any]
    doc: str | None = None


_Walker = Generator[_Ask, _Node, _Node]


@dataclass(slots=True)
class _Notes:
    description: str | None = None
    title: str | None = None
    examples: Any = _MISSING
    # annotated_types / pydantic constraint objects from Annotated[...] (decision 0011).
    constraints: list[Any] = field(default_factory=list)


_UNSUPPORTED_HINT = (
    "cannot be expressed in the supported JSON Schema subset; use str, int, float, bool, None, "
    "Literal, an Enum, datetime/date/time/UUID/Path/Decimal (formatted strings), "
    "list[T]/Sequence[T]/tuple[T, ...]/set[T], dict[str, T], a TypedDict, a dataclass, "
    "a pydantic model, or a union of those"
)


@dataclass(slots=True)
class _Field:
    key: str  # the JSON property name (a pydantic alias, if set)
    name: str  # the Python attribute / keyword name
    hint: Any
    required: bool
    default: Any = _MISSING
    description: str | None = None  # stronger than the class docstring, weaker than Annotated
    title: str | None = None
    examples: Any = _MISSING


def _object(
    fields: list[_Field],
    ask: _Ask,
    ns: Mapping[str, Any],
    doc: Docstring,
    *,
    additional: bool,
    label: Any,
) -> _Walker:
    """Map the fields of a TypedDict/dataclass/model; the result's ``branches`` are the field nodes."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    nodes: list[_Node] = []
    for item in fields:
        description = item.description or doc.params.get(item.name)
        node = yield _Ask(item.hint, f"{ask.path}.{item.key}", ask.in_model, ns, description)
        schema = node.schema
        extra: dict[str, Any] = {}
        if item.title is not None and "title" not in schema:
            extra["title"] = item.title
        if item.examples is not _MISSING and "examples" not in schema:
            extra["examples"] = item.examples
        default = _json_or_missing(item.default)
        if default is not _MISSING:
            extra["default"] = default
        if extra:
            schema = {**schema, **extra}
        properties[item.key] = schema
        if item.required:
            required.append(item.key)
        nodes.append(node)
    result: dict[str, Any] = {"type": "object"}
    if doc.summary:
        result["description"] = doc.summary
    result["properties"] = properties
    if required:
        result["required"] = required
    result["additionalProperties"] = additional
    return _Node(result, frozenset({"object"}), label, branches=tuple(nodes))


def _any() -> _Node:
    return _Node({}, _ALL_KINDS, "Any")


def _open_object(hint: Any, args: tuple[Any, ...], ask: _Ask) -> _Walker:
    """``dict[str, X]`` / ``Mapping[str, X]`` as ``additionalProperties: <X>`` (decision 0010)."""
    if not args:
        return _Node({"type": "object"}, frozenset({"object"}), hint)
    key, value = args
    if key is not str:
        raise _Unsupported(
            f"{_fmt(hint)}: JSON object keys are strings; use dict[str, X] (e.g. dict[str, Any])", ask.path
        )
    if value is Any or value is object:
        return _Node({"type": "object"}, frozenset({"object"}), hint)
    item = yield _Ask(value, ask.path + "[]", ask.in_model, ask.ns)
    if item.kinds == _ALL_KINDS:
        return _Node({"type": "object"}, frozenset({"object"}), hint)
    item_in = item.to_python
    item_out = item.to_json
    keeps_json = item.keeps_json
    return _Node(
        {"type": "object", "additionalProperties": item.schema},
        frozenset({"object"}),
        hint,
        to_python=values_converter(item_in, frozen=False) if item_in else None,
        to_json=values_out(item_out) if item_out else None,
        keeps_json=keeps_json,
        out_classes=(dict,) if item_out else (),
    )


def _scalar_kind(value: Any) -> str | None:
    """A literal's JSON type, or ``None`` when it is no lossless JSON scalar (NaN, ±inf, ``-0.0``)."""
    if isinstance(value, float) and (
        not math.isfinite(value) or (value == 0 and math.copysign(1, value) < 0)
    ):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return json_kind(value)
    return None


def _scalar_branches(values: list[Any], label: Any, ask: _Ask) -> list[_Node]:
    """Group literal/enum values by JSON type: one ``{type, enum}`` node per type, in first-seen order."""
    groups: dict[str, list[Any]] = {}
    for value in values:
        kind = _scalar_kind(value)
        if kind is None:
            raise _Unsupported(
                f"{_fmt(label)}: value {value!r} is not a JSON scalar (str/int/float/bool/None)", ask.path
            )
        groups.setdefault(kind, []).append(value)
    if "integer" in groups and "number" in groups:
        # 2 would match both an integer enum and a number enum: keep one numeric group.
        integers = groups.pop("integer")
        groups["number"] = integers + groups["number"]
    nodes: list[_Node] = []
    for kind, members in groups.items():
        schema: dict[str, Any] = {"type": kind} if kind == "null" else {"type": kind, "enum": members}
        nodes.append(_Node(schema, frozenset({kind}), label, to_python=to_int if kind == "integer" else None))
    return nodes


def _literal(values: tuple[Any, ...], label: Any, ask: _Ask) -> _Node:
    members: dict[tuple[bool, Any], Any] = {}
    raw: list[Any] = []
    for value in values:
        if isinstance(value, enum.Enum):
            members[(isinstance(value.value, bool), value.value)] = value
            raw.append(value.value)
        else:
            raw.append(value)
    nodes = _scalar_branches(raw, label, ask)
    node = nodes[0] if len(nodes) == 1 else _one_of(nodes, label)
    if members:
        # Literal[Color.RED]: the JSON value maps back to the member (bool kept apart from 1).
        def to_member(value: Any) -> Any:
            return members.get((isinstance(value, bool), value), value)

        node = _converting(node, to_member, enum_value, (enum.Enum,))
    return node


def _enum(cls: type[enum.Enum], ask: _Ask) -> _Node:
    values = [member.value for member in cls]
    if not values:
        raise _Unsupported(f"enum {_fmt(cls)} has no members", ask.path)
    nodes = _scalar_branches(values, f"enum {_fmt(cls)}", ask)
    node = nodes[0] if len(nodes) == 1 else _one_of(nodes, cls)
    doc = cls.__dict__.get("__doc__")
    if isinstance(doc, str) and doc and doc != "An enumeration.":
        node = dataclasses.replace(node, schema={**node.schema, "description": parse_docstring(doc).summary})
    return dataclasses.replace(_converting(node, enum_converter(cls), enum_value, (cls,)), label=cls)


def _converting(
    node: _Node, to_python: Converter, to_json: Converter, out_classes: tuple[type, ...]
) -> _Node:
    """``node`` (and its oneOf branches) converting to/from Python objects.

    The branches get the converters too: an Enum with str and int values is a oneOf, and a union
    that flattens it (``Mixed | None``) must still turn either branch's value into a member.
    """
    branches = tuple(
        dataclasses.replace(
            branch, to_python=to_python, to_json=to_json, out_classes=out_classes, keeps_json=False
        )
        for branch in node.branches
    )
    return dataclasses.replace(
        node,
        to_python=to_python,
        to_json=to_json,
        out_classes=out_classes,
        keeps_json=False,
        branches=branches,
    )


def _splice(node: _Node) -> tuple[_Node, ...]:
    """The branches a union flattens ``node`` into: its own oneOf branches, or itself."""
    return node.branches or (node,)


def _plain(node: _Node) -> bool:
    """No conversion beyond int normalisation."""
    return node.to_json is None and node.to_python in (None, to_int)


def _merge_numbers(nodes: list[_Node]) -> list[_Node]:
    """``int | float`` is ``number``: drop plain integer branches when a plain number branch exists."""

    def plain(node: _Node, kind: str) -> bool:
        return node.schema.get("type") == kind and "enum" not in node.schema

    if any(plain(node, "number") for node in nodes):
        return [node for node in nodes if not plain(node, "integer")]
    return nodes


def _overlap(first: frozenset[str], second: frozenset[str]) -> str | None:
    shared = first & second
    if shared:
        return sorted(shared)[0]
    if first & _NUMERIC and second & _NUMERIC:
        return "number"  # the validator accepts 1 both as an integer and as a number
    return None


def _one_of(nodes: list[_Node], label: Any) -> _Node:
    by_kind: dict[str, _Node] = {}
    for node in nodes:
        for kind in node.kinds:
            by_kind[kind] = node
    # An integral float may target an integer branch and an int a number branch (JS has one number).
    if "integer" in by_kind and "number" not in by_kind:
        by_kind["number"] = by_kind["integer"]
    if "number" in by_kind and "integer" not in by_kind:
        by_kind["integer"] = by_kind["number"]
    to_python: Converter | None = None
    converters = {kind: node.to_python for kind, node in by_kind.items() if node.to_python}
    if converters:

        def dispatch(value: Any) -> Any:
            convert = converters.get(json_kind(value))
            return value if convert is None else convert(value)

        to_python = dispatch
    to_json: Converter | None = None
    outputs = [
        (node.out_classes, node.to_json) for node in nodes if node.to_json is not None and node.out_classes
    ]
    out_classes: tuple[type, ...] = tuple(cls for classes, _ in outputs for cls in classes)
    if outputs:

        def pick(value: Any) -> Any:
            for classes, convert in outputs:
                if isinstance(value, classes):
                    return convert(value)
            return value

        to_json = pick
    return _Node(
        {"oneOf": [node.schema for node in nodes]},
        frozenset().union(*(node.kinds for node in nodes)),
        label,
        to_python=to_python,
        to_json=to_json,
        keeps_json=all(node.keeps_json for node in nodes),
        out_classes=out_classes,
        branches=tuple(nodes),
    )


def _is_requiredness(origin: Any) -> bool:
    return getattr(origin, "_name", None) in {"Required", "NotRequired", "ReadOnly"} and (
        getattr(origin, "__module__", None) in {"typing", "typing_extensions"}
    )


def _explicit_requiredness(hint: Any) -> bool | None:
    while True:
        origin = get_origin(hint)
        if origin is typing.Annotated:
            hint = hint.__origin__
            continue
        name = getattr(origin, "_name", None) if origin is not None and _is_requiredness(origin) else None
        if name == "Required":
            return True
        if name == "NotRequired":
            return False
        if name == "ReadOnly":
            hint = get_args(hint)[0]
            continue
        return None


def _is_typeddict(hint: Any) -> bool:
    if typing.is_typeddict(hint):
        return True
    extensions = sys.modules.get("typing_extensions")
    return extensions is not None and bool(extensions.is_typeddict(hint))


def _is_root_model(cls: type) -> bool:
    pydantic = sys.modules.get("pydantic")
    root = getattr(pydantic, "RootModel", None)
    return root is not None and issubclass(cls, root)


def _pydantic_field_info_type() -> type | None:
    fields = sys.modules.get("pydantic.fields")
    return getattr(fields, "FieldInfo", None)


def _field_hint(info: Any) -> Any:
    return Any if info.annotation is None else info.annotation


def _model_field_hint(info: Any) -> Any:
    """A model field's hint with its constraints (pydantic moves ``Field(gt=0)`` into ``metadata``)."""
    hint = _field_hint(info)
    if info.metadata:
        return typing.Annotated[(hint, *info.metadata)]
    return hint


def _is_constraint(meta: Any) -> bool:
    """An annotated_types constraint, or pydantic's bundle of the constraints it adds (``pattern``)."""
    module = type(meta).__module__.split(".")[0]
    return module == "annotated_types" or (
        module == "pydantic" and type(meta).__name__ == "_PydanticGeneralMetadata"
    )


# annotated_types class name → (attribute, keyword for numbers, for strings, for arrays).
_CONSTRAINT_KEYWORDS: dict[str, tuple[str, str | None, str | None, str | None]] = {
    "Gt": ("gt", "exclusiveMinimum", None, None),
    "Ge": ("ge", "minimum", None, None),
    "Lt": ("lt", "exclusiveMaximum", None, None),
    "Le": ("le", "maximum", None, None),
    "MultipleOf": ("multiple_of", "multipleOf", None, None),
    "MinLen": ("min_length", None, "minLength", "minItems"),
    "MaxLen": ("max_length", None, "maxLength", "maxItems"),
}
# pydantic general metadata that needs no keyword: JSON never coerces and has no inf/NaN.
_IMPLIED: frozenset[str] = frozenset({"strict", "allow_inf_nan", "coerce_numbers_to_str", "fail_fast"})


_SENTENCES: dict[str, str] = {
    "Gt": "Must be > {}.",
    "Ge": "Must be >= {}.",
    "Lt": "Must be < {}.",
    "Le": "Must be <= {}.",
    "MultipleOf": "Must be a multiple of {}.",
    "MinLen": "Must have a length of at least {}.",
    "MaxLen": "Must have a length of at most {}.",
}


def _sentence(constraint: Any) -> str:
    """A constraint the subset has no keyword for, as the words the model reads in a description."""
    name = type(constraint).__name__
    if name in _SENTENCES:
        value = getattr(constraint, _CONSTRAINT_KEYWORDS[name][0])
        return _SENTENCES[name].format(value.isoformat() if hasattr(value, "isoformat") else value)
    return f"Constraint: {constraint!r}."


def _flatten_constraints(constraints: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for constraint in constraints:
        name = type(constraint).__name__
        if (
            name not in _CONSTRAINT_KEYWORDS
            and hasattr(constraint, "__iter__")
            and _is_constraint(constraint)
        ):
            flat.extend(constraint)  # Interval, Len: GroupedMetadata of the simple ones
        else:
            flat.append(constraint)
    return flat


def _constrain(node: _Node, constraints: list[Any], hint: Any, ask: _Ask) -> tuple[_Node, list[str]]:
    """``node`` with its Annotated constraints as keywords; the sentences for those with none.

    A keyword goes on every branch of the type it constrains (``Annotated[int | None, Gt(0)]`` bounds
    the integer, as pydantic does). Outside a pydantic model, a constraint with no keyword is
    enforced by @tool only for ``pattern`` (a converter); any other one is refused.
    """
    # Per constraint: the keyword it becomes for each type family it can apply to.
    keywords: list[tuple[Any, dict[str, tuple[str, Any]]]] = []
    sentences: list[str] = []
    pattern: str | None = None
    for constraint in _flatten_constraints(constraints):
        name = type(constraint).__name__
        if name in _CONSTRAINT_KEYWORDS:
            attribute, for_number, for_string, for_array = _CONSTRAINT_KEYWORDS[name]
            value = getattr(constraint, attribute)
            if isinstance(value, bool) or not isinstance(value, int | float) or _scalar_kind(value) is None:
                if ask.in_model:  # Gt(datetime(...)), Gt(Decimal(...)): pydantic enforces it
                    sentences.append(_sentence(constraint))
                    continue
                raise _Unsupported(
                    f"constraint {constraint!r}: the bound must be a finite int or float", ask.path
                )
            families = (("number", for_number), ("string", for_string), ("array", for_array))
            keywords.append(
                (constraint, {family: (key, value) for family, key in families if key is not None})
            )
            continue
        if name == "_PydanticGeneralMetadata":
            for key, value in vars(constraint).items():
                if key in _IMPLIED or value is None:
                    continue
                if key == "pattern" and isinstance(value, str):
                    pattern = value
                    sentences.append(f"Must match the regular expression {value}.")
                elif ask.in_model:
                    sentences.append(f"Constraint: {key}={value!r}.")
                else:
                    raise _Unsupported(_unenforced(f"{key}={value!r}"), ask.path)
            continue
        if ask.in_model:
            sentences.append(f"Constraint: {constraint!r}.")
        else:
            raise _Unsupported(_unenforced(constraint), ask.path)

    def fits(branch: dict[str, Any], family: str) -> bool:
        kind = branch.get("type")
        return kind in ("number", "integer") if family == "number" else kind == family

    used: set[int] = set()

    def constrain(branch: dict[str, Any]) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        for index, (_, by_family) in enumerate(keywords):
            for family, (key, value) in by_family.items():
                if fits(branch, family):
                    extra[key] = value
                    used.add(index)
        return {**branch, **extra} if extra else branch

    schema = node.schema
    if "oneOf" in schema:
        schema = {**schema, "oneOf": [constrain(branch) for branch in schema["oneOf"]]}
    else:
        schema = constrain(schema)
    for index, (constraint, by_family) in enumerate(keywords):
        if index not in used:
            if ask.in_model:  # Field(gt=0) on a Decimal (a string here): pydantic enforces it
                sentences.append(_sentence(constraint))
                continue
            raise _Unsupported(
                f"{_fmt(hint)}: constraint {constraint!r} applies to a {' or '.join(by_family)}, "
                "not to this type",
                ask.path,
            )
    if pattern is not None:
        if not node.kinds & {"string"}:
            raise _Unsupported(f"{_fmt(hint)}: a pattern needs a string", ask.path)
        if not ask.in_model:
            try:
                converter = pattern_converter(pattern, node.to_python)
            except re.error as error:
                raise _Unsupported(
                    f"pattern {pattern!r} is not a valid regular expression: {error}", ask.path
                ) from None
            return dataclasses.replace(node, schema=schema, to_python=converter, keeps_json=False), sentences
    return dataclasses.replace(node, schema=schema), sentences


def _unenforced(constraint: Any) -> str:
    return (
        f"constraint {constraint!r} has no JSON Schema keyword in the subset and @tool cannot enforce "
        "it outside a model; check it in the body, or use a pydantic model, which validates its own "
        "fields (the constraint then reaches the model as description text)"
    )


def _module_ns(cls: type) -> Mapping[str, Any]:
    module = sys.modules.get(cls.__module__)
    return vars(module) if module is not None else {}


def _class_hints(cls: type, ask: _Ask) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as error:
        raise _Unsupported(f"cannot resolve the type hints of {_fmt(cls)}: {error!r}", ask.path) from None


def _evaluate(hint: str | ForwardRef, ask: _Ask) -> Any:
    text = hint.__forward_arg__ if isinstance(hint, ForwardRef) else hint
    try:
        return eval(text, dict(ask.ns))  # a forward reference is an expression in the owner's module
    except Exception as error:
        raise _Unsupported(
            f"cannot resolve the annotation {text!r} ({type(error).__name__}: {error}); import the "
            "type at runtime (not only under TYPE_CHECKING) in the module that defines it",
            ask.path,
        ) from None


def _json_or_missing(value: Any) -> Any:
    """``value`` as plain lossless JSON (enums → values, tuples → lists), or ``_MISSING``."""
    if value is _MISSING:
        return _MISSING
    try:
        return thaw(snapshot_json(generic_out(value)))
    except (NotLosslessJsonError, TypeError, ValueError):
        return _MISSING


def _fmt(hint: Any) -> str:
    """A hint as an author would write it: ``list[Address] | None``, not the module-qualified repr."""
    if isinstance(hint, str):
        return hint
    if hint is type(None) or hint is None:
        return "None"
    if hint is Ellipsis:
        return "..."
    if is_class(hint):
        return str(hint.__qualname__).rsplit("<locals>.", 1)[-1]
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is Union or origin is types.UnionType:
        return " | ".join(_fmt(arg) for arg in args)
    if origin is Literal:
        return _fmt_literal(list(args))
    if origin is typing.Annotated:
        return f"Annotated[{_fmt(hint.__origin__)}, ...]"
    if origin is not None and args:
        return f"{_fmt(origin)}[{', '.join(_fmt(arg) for arg in args)}]"
    return repr(hint).replace("typing.", "").replace("typing_extensions.", "")


def _fmt_literal(values: list[Any]) -> str:
    return f"Literal[{', '.join(repr(value) for value in values)}]"


# -- the walk ---------------------------------------------------------------------------------------
# Iterative: each mapping step is a generator that yields an ``_Ask`` for a child hint and receives
# its node, driven by ``_run`` with an explicit stack, so deeply nested ``TypedDict``s never hit the
# interpreter's recursion limit. A recursion guard and a per-class cache are shared by all the hints
# of one function.


def _run(root: _Walker, walk: _Walk) -> _Node:
    """Drive the walk with an explicit stack: each ``yield`` of an ``_Ask`` maps a child hint."""
    stack: list[_Walker] = [root]
    value: Any = None
    while True:
        try:
            ask = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value  # type: ignore[no-any-return]
            value = done.value
            continue
        stack.append(walk.map(ask))
        value = None


@dataclass(slots=True)
class _Walk:
    """State shared by all hints of one function: recursion guard and per-class cache."""

    active: set[type] = field(default_factory=set)
    cache: dict[tuple[type, bool], _Node] = field(default_factory=dict)

    def map(self, ask: _Ask) -> _Walker:
        notes = _Notes()
        hint = self._strip(ask.hint, notes, ask)
        node = yield from self._dispatch(hint, ask)
        if notes.constraints:
            node, unexpressed = _constrain(node, notes.constraints, hint, ask)
            if unexpressed:
                # The model still reads what no keyword says (pydantic or @tool enforces it).
                text = " ".join(unexpressed)
                base = notes.description or ask.doc
                notes.description = f"{base} {text}" if base else text
                ask = dataclasses.replace(ask, doc=None)
        description = notes.description or ask.doc
        extra: dict[str, Any] = {}
        if description:
            extra["description"] = description
        if notes.title is not None:
            extra["title"] = notes.title
        if notes.examples is not _MISSING:
            extra["examples"] = notes.examples
        if extra:
            # Copy, never mutate: cached class schemas are shared between properties.
            node = dataclasses.replace(node, schema={**node.schema, **extra})
        return node

    # -- unwrapping -----------------------------------------------------------------------------

    def _strip(self, hint: Any, notes: _Notes, ask: _Ask) -> Any:
        """Peel ``Annotated`` (collecting descriptions), requiredness markers, NewType and aliases."""
        while True:
            if isinstance(hint, str | ForwardRef):
                hint = _evaluate(hint, ask)
                continue
            origin = get_origin(hint)
            if origin is typing.Annotated:
                # The first description found wins (nested Annotated flattens inner-first).
                for meta in hint.__metadata__:
                    self._note(meta, notes, ask)
                hint = hint.__origin__
                continue
            if origin is not None and _is_requiredness(origin):
                hint = get_args(hint)[0]
                continue
            supertype = getattr(hint, "__supertype__", None)
            if supertype is not None and callable(hint):  # typing.NewType
                hint = supertype
                continue
            if type(hint).__name__ == "TypeAliasType":  # PEP 695 ``type X = ...`` (3.12+)
                hint = hint.__value__
                continue
            return hint

    def _note(self, meta: Any, notes: _Notes, ask: _Ask) -> None:
        if isinstance(meta, str):
            if notes.description is None:
                notes.description = meta
            return
        if type(meta).__name__ == "Doc" and isinstance(getattr(meta, "documentation", None), str):
            if notes.description is None:  # typing_extensions.Doc (PEP 727)
                notes.description = meta.documentation
            return
        field_info = _pydantic_field_info_type()
        if field_info is not None and isinstance(meta, field_info):
            meta = typing.cast(Any, meta)
            if meta.description is not None and notes.description is None:
                notes.description = meta.description
            if meta.title is not None and notes.title is None:
                notes.title = meta.title
            if meta.examples is not None and notes.examples is _MISSING:
                notes.examples = _json_or_missing(meta.examples)
            notes.constraints.extend(meta.metadata)
            return
        if _is_constraint(meta):
            notes.constraints.append(meta)

    # -- dispatch -------------------------------------------------------------------------------

    def _dispatch(self, hint: Any, ask: _Ask) -> _Walker:
        if hint is Any or hint is object or hint is _EMPTY:
            return _any()
        if hint is None or hint is type(None):
            return _Node({"type": "null"}, frozenset({"null"}), "None")
        if hint is bool:
            return _Node({"type": "boolean"}, frozenset({"boolean"}), "bool")
        if hint is int:
            return _Node({"type": "integer"}, frozenset({"integer"}), "int", to_python=to_int)
        if hint is float:
            return _Node({"type": "number"}, frozenset({"number"}), "float")
        if hint is str:
            return _Node({"type": "string"}, frozenset({"string"}), "str")
        origin = get_origin(hint)
        args = get_args(hint)
        if origin is Literal:
            return _literal(args, hint, ask)
        if origin is Union or origin is types.UnionType:
            return (yield from self._union(hint, ask))
        if isinstance(hint, TypeVar):
            if hint.__bound__ is not None:
                return (yield _Ask(hint.__bound__, ask.path, ask.in_model, ask.ns))
            raise _Unsupported(
                f"type variable {hint.__name__} has no bound; a JSON schema needs a concrete type", ask.path
            )
        base = origin if origin is not None else hint
        if is_class(hint):
            string_format = STRING_FORMATS.get(hint)
            if string_format is not None:
                # A str subclass (a StrEnum is caught above) never gets here: exact classes only.
                return _Node(
                    {"type": "string", "format": string_format.format},
                    frozenset({"string"}),
                    hint,
                    to_python=format_converter(string_format),
                    to_json=format_out(hint, string_format.dump),
                    keeps_json=False,
                    out_classes=(hint,),
                )
            if issubclass(hint, enum.Enum):
                return _enum(hint, ask)
            if _is_typeddict(hint):
                return (yield from self._typeddict(hint, ask))
            if dataclasses.is_dataclass(hint):
                assert isinstance(hint, type)
                return (yield from self._dataclass(hint, ask))
            if is_pydantic_model(hint):
                return (yield from self._model(hint, ask))
        if base in _SEQUENCE_ORIGINS or base is tuple:
            return (yield from self._array(hint, base, args, ask))
        if base in _SET_ORIGINS:
            return (yield from self._set(hint, base, args, ask))
        if base in _MAPPING_ORIGINS:
            return (yield from _open_object(hint, args, ask))
        if origin is not None and (_is_typeddict(origin) or dataclasses.is_dataclass(origin)):
            raise _Unsupported(
                f"generic {_fmt(hint)} is not supported; use a concrete (non-generic) type", ask.path
            )
        if is_injected_context(hint):
            raise _Unsupported(
                f"{_fmt(hint)} is injected only into a parameter annotated exactly ToolRunContext or "
                "ToolExecution (not Optional, not nested); it is not JSON",
                ask.path,
            )
        raise _Unsupported(f"{_fmt(hint)} {_UNSUPPORTED_HINT}", ask.path)

    # -- unions ---------------------------------------------------------------------------------

    def _union(self, hint: Any, ask: _Ask) -> _Walker:
        # Literal branches merge into one Literal first: ``Literal["a"] | Literal["b"]`` is one enum.
        literal_values: list[Any] = []
        items: list[Any] = []
        for arg in get_args(hint):
            if get_origin(arg) is Literal:
                if not literal_values:
                    items.append(Literal)
                literal_values.extend(get_args(arg))
            else:
                items.append(arg)
        nodes: list[_Node] = []
        for item in items:
            if item is Literal:
                node = _literal(tuple(literal_values), _fmt_literal(literal_values), ask)
            else:
                node = yield _Ask(item, ask.path, ask.in_model, ask.ns)
            for branch in _splice(node):
                # The same plain schema twice (``X | None`` where X already allows null) is one
                # branch; the same schema with different conversions is a real overlap, caught below.
                if not any(
                    _plain(seen) and _plain(branch) and seen.schema == branch.schema for seen in nodes
                ):
                    nodes.append(branch)
        if any(node.kinds == _ALL_KINDS for node in nodes):
            # ``Any | None`` is just Any. Keeping a oneOf would match a value twice.
            # (int's 2.0 → 2 normalisation is no real conversion: Any passes 2.0 through.)
            converting = [_fmt(node.label) for node in nodes if not _plain(node)]
            if converting:
                raise _Unsupported(
                    f"{_fmt(hint)} mixes Any with {converting[0]}, which needs conversion; a value "
                    "matching Any cannot be told apart from it",
                    ask.path,
                )
            return _any()
        nodes = _merge_numbers(nodes)
        for position, first in enumerate(nodes):
            for second in nodes[position + 1 :]:
                shared = _overlap(first.kinds, second.kinds)
                if shared:
                    raise _Unsupported(
                        f"union {_fmt(hint)}: branches {_fmt(first.label)} and {_fmt(second.label)} "
                        f"can match the same JSON value (both accept JSON {shared}), but oneOf requires "
                        "exactly one branch to match, so a value both accept would be rejected; use "
                        "branches of distinct JSON types (string/number/boolean/null/array/object)",
                        ask.path,
                    )
        if len(nodes) == 1:
            return nodes[0]
        return _one_of(nodes, hint)

    # -- containers -----------------------------------------------------------------------------

    def _array(self, hint: Any, base: Any, args: tuple[Any, ...], ask: _Ask) -> _Walker:
        as_tuple = base is tuple
        if as_tuple and not args and repr(hint).endswith("[()]"):
            args = ((),)  # tuple[()], the empty fixed-length tuple, has no args to tell it apart
        size: int | None = None
        if as_tuple and args:
            if args == ((),):
                size, args = 0, ()
            elif len(args) == 2 and args[1] is Ellipsis:
                args = args[:1]
            elif all(arg == args[0] for arg in args):
                # tuple[float, float]: one item schema and an exact size say it (decision 0011).
                size, args = len(args), args[:1]
            else:
                raise _Unsupported(
                    f"fixed-length tuple {_fmt(hint)} with items of different types cannot be "
                    "expressed (the subset has no prefixItems); use a TypedDict, dataclass or "
                    "pydantic model with named fields, or tuple[T, ...] / tuple[T, T] of one type",
                    ask.path,
                )
        schema: dict[str, Any] = {"type": "array"}
        item: _Node | None = None
        if args:
            item = yield _Ask(args[0], ask.path + "[]", ask.in_model, ask.ns)
            schema["items"] = item.schema
        if size is not None:
            schema["minItems"] = size
            schema["maxItems"] = size
        item_in = item.to_python if item is not None else None
        item_out = item.to_json if item is not None else None
        keeps_json = item is None or item.keeps_json
        if as_tuple:
            to_python: Converter | None = tuple_converter(item_in)
        else:
            to_python = list_converter(item_in, frozen=False) if item_in else None
        to_json = sequence_out(item_out) if (item_out or as_tuple) else None
        return _Node(
            schema,
            frozenset({"array"}),
            hint,
            to_python=to_python,
            to_json=to_json,
            keeps_json=keeps_json and not as_tuple,
            out_classes=(list, tuple) if to_json else (),
        )

    def _set(self, hint: Any, base: Any, args: tuple[Any, ...], ask: _Ask) -> _Walker:
        """``set[T]``/``frozenset[T]`` as an array with ``uniqueItems`` (decision 0011)."""
        if not args:
            raise _Unsupported(f"{_fmt(hint)}: name the item type, e.g. set[str]", ask.path)
        item = yield _Ask(args[0], ask.path + "[]", ask.in_model, ask.ns)
        if item.kinds & _CONTAINER_KINDS:
            raise _Unsupported(
                f"{_fmt(hint)}: set items must be hashable scalars (JSON arrays and objects become "
                "lists and dicts); use list[...] or tuple[..., ...]",
                ask.path,
            )
        if "boolean" in item.kinds and item.kinds & _NUMERIC:
            raise _Unsupported(
                f"{_fmt(hint)}: Python's set holds True and 1 as one item, JSON as two; use list[...]",
                ask.path,
            )
        cls = frozenset if base is frozenset else set
        return _Node(
            {"type": "array", "items": item.schema, "uniqueItems": True},
            frozenset({"array"}),
            hint,
            to_python=set_converter(item.to_python, cls),
            to_json=set_out(item.to_json),
            keeps_json=False,
            out_classes=(set, frozenset),
        )

    def _enter(self, cls: type, ask: _Ask) -> None:
        if cls in self.active:
            raise _Unsupported(
                f"{_fmt(cls)} is recursive (it contains itself); the subset has no $ref, every schema "
                "is inlined, so a self-referential type cannot be expressed",
                ask.path,
            )
        self.active.add(cls)

    def _typeddict(self, cls: type, ask: _Ask) -> _Walker:
        cached = self.cache.get((cls, ask.in_model))
        if cached is not None:
            return cached
        self._enter(cls, ask)
        hints = _class_hints(cls, ask)
        doc = parse_docstring(cls.__dict__.get("__doc__"))
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        ns = _module_ns(cls)
        fields: list[_Field] = []
        for key, hint in hints.items():
            # An explicit Required/NotRequired wins: with ``from __future__ import annotations`` on
            # Python 3.11, ``__required_keys__`` cannot see markers inside string annotations.
            required = _explicit_requiredness(hint)
            fields.append(_Field(key, key, hint, key in required_keys if required is None else required))
        node = yield from _object(fields, ask, ns, doc, additional=False, label=cls)
        pairs = list(zip(fields, node.branches, strict=True))
        converters = [(f.key, n.to_python) for f, n in pairs if n.to_python]
        keeps_json = all(n.keeps_json for _, n in pairs)
        outputs = [(f.key, n.to_json) for f, n in pairs if n.to_json]
        result = _Node(
            node.schema,
            node.kinds,
            node.label,
            to_python=mapping_converter(converters, frozen=False) if converters else None,
            to_json=mapping_converter(outputs, frozen=False) if outputs else None,
            keeps_json=keeps_json,
            out_classes=(dict,) if outputs else (),
        )
        self.active.discard(cls)
        self.cache[(cls, ask.in_model)] = result
        return result

    def _dataclass(self, cls: type, ask: _Ask) -> _Walker:
        cached = self.cache.get((cls, ask.in_model))
        if cached is not None:
            return cached
        self._enter(cls, ask)
        hints = _class_hints(cls, ask)
        init_fields = [f for f in dataclasses.fields(cls) if f.init]
        try:
            init_params = set(inspect.signature(cls).parameters)
        except (TypeError, ValueError):
            init_params = {f.name for f in init_fields}
        pseudo = sorted(init_params - {f.name for f in init_fields})
        if pseudo:
            raise _Unsupported(
                f"dataclass {_fmt(cls)} has init-only parameter(s) {', '.join(pseudo)} (InitVar or a "
                "custom __init__); only dataclass fields can be filled from JSON arguments",
                ask.path,
            )
        raw_doc = cls.__dict__.get("__doc__")
        if isinstance(raw_doc, str) and raw_doc.startswith(f"{cls.__name__}(") and "\n" not in raw_doc:
            raw_doc = None  # the signature text dataclasses generate when there is no docstring
        doc = parse_docstring(raw_doc)
        fields: list[_Field] = []
        for dc_field in init_fields:
            has_default = dc_field.default is not dataclasses.MISSING
            has_factory = dc_field.default_factory is not dataclasses.MISSING
            described = dc_field.metadata.get("description")
            fields.append(
                _Field(
                    dc_field.name,
                    dc_field.name,
                    hints.get(dc_field.name, Any),
                    not (has_default or has_factory),
                    dc_field.default if has_default else _MISSING,
                    described if isinstance(described, str) else None,
                )
            )
        node = yield from _object(fields, ask, _module_ns(cls), doc, additional=False, label=cls)
        plan = tuple((f.key, n.to_python) for f, n in zip(fields, node.branches, strict=True))
        # An Any-typed field may still hold an Enum/dataclass: convert it value-directed.
        out_plan = tuple(
            (f.key, n.to_json or (generic_out if n.kinds == _ALL_KINDS else None))
            for f, n in zip(fields, node.branches, strict=True)
        )
        result = _Node(
            node.schema,
            node.kinds,
            node.label,
            to_python=dataclass_converter(cls, plan),
            keeps_json=False,
            to_json=dataclass_out(cls, out_plan),
            out_classes=(cls,),
        )
        self.active.discard(cls)
        self.cache[(cls, ask.in_model)] = result
        return result

    def _model(self, cls: type, ask: _Ask) -> _Walker:
        cached = self.cache.get((cls, ask.in_model))
        if cached is not None:
            return cached
        self._enter(cls, ask)
        doc = parse_docstring(cls.__dict__.get("__doc__"))
        model_fields: Mapping[str, Any] = cls.model_fields  # type: ignore[attr-defined]
        ns = _module_ns(cls)
        # Inside a model, pydantic itself converts and enforces constraints: annotated_types
        # metadata is fine there, and the nested nodes' converters are never used.
        inner = _Ask(ask.hint, ask.path, True, ns)
        if _is_root_model(cls):
            root = model_fields["root"]
            node = yield _Ask(_field_hint(root), ask.path, True, ns, root.description or doc.summary or None)
            schema = node.schema
            kinds = node.kinds
        else:
            fields: list[_Field] = []
            for name, info in model_fields.items():
                required = info.is_required()
                default = _MISSING if required or info.default_factory is not None else info.default
                fields.append(
                    _Field(
                        info.alias or name,
                        name,
                        _model_field_hint(info),
                        required,
                        default,
                        info.description,
                        info.title,
                        _json_or_missing(info.examples) if info.examples is not None else _MISSING,
                    )
                )
            extra = getattr(cls, "model_config", {}).get("extra")
            node = yield from _object(fields, inner, ns, doc, additional=extra == "allow", label=cls)
            schema = node.schema
            kinds = node.kinds
        result = _Node(
            schema,
            kinds,
            cls,
            to_python=model_converter(cls),
            keeps_json=False,
            to_json=model_out(cls),
            out_classes=(cls,),
        )
        self.active.discard(cls)
        self.cache[(cls, ask.in_model)] = result
        return result
