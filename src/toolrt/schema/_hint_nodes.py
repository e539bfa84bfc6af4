"""The mapped-hint model of the schema engine, and the nodes it builds: objects, literals, enums and
``oneOf`` unions, with the checks that refuse what the enforced subset cannot express faithfully.

:mod:`.hint_walk` walks a type hint and assembles these nodes; :mod:`.hints` is the public entry.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import math
import sys
import types
import typing
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, ForwardRef, Literal, Union, get_args, get_origin

from toolrt._json import NotLosslessJsonError, snapshot_json, thaw
from toolrt.schema._converters import (
    Converter,
    _enum_converter,
    _enum_value,
    _generic_out,
    _is_class,
    _json_kind,
    _to_int,
)
from toolrt.schema._docstrings import Docstring, parse_docstring

__all__ = ["is_injected_context"]


_EMPTY = inspect.Parameter.empty


_MISSING: Any = object()


_ALL_KINDS = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


_NUMERIC = frozenset({"integer", "number"})


_SEQUENCE_ORIGINS: tuple[Any, ...] = (list, collections.abc.Sequence, collections.abc.MutableSequence)


_MAPPING_ORIGINS: tuple[Any, ...] = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


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
    # (Enum members, instances, tuples): only then may a rebuilt container be a frozen snapshot.
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


_UNSUPPORTED_HINT = (
    "cannot be expressed in the supported JSON Schema subset; use str, int, float, bool, None, "
    "Literal, an Enum, list[T]/Sequence[T]/tuple[T, ...], dict[str, Any], a TypedDict, a dataclass, "
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


def _open_object(hint: Any, args: tuple[Any, ...], ask: _Ask) -> _Node:
    if args:
        key, value = args
        if key is not str:
            raise _Unsupported(f"{_fmt(hint)}: JSON object keys are strings; use dict[str, Any]", ask.path)
        if value is not Any and value is not object:
            raise _Unsupported(
                f"{_fmt(hint)} cannot be expressed: additionalProperties is boolean-only in the "
                "subset, so the value type would go unchecked; use a TypedDict, dataclass or pydantic "
                "model with named fields, or dict[str, Any]",
                ask.path,
            )
    return _Node({"type": "object"}, frozenset({"object"}), hint)


def _scalar_kind(value: Any) -> str | None:
    """A literal's JSON type, or ``None`` when it is no lossless JSON scalar (NaN, ±inf, ``-0.0``)."""
    if isinstance(value, float) and (
        not math.isfinite(value) or (value == 0 and math.copysign(1, value) < 0)
    ):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return _json_kind(value)
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
        nodes.append(
            _Node(schema, frozenset({kind}), label, to_python=_to_int if kind == "integer" else None)
        )
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

        node = _converting(node, to_member, _enum_value, (enum.Enum,))
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
    return dataclasses.replace(_converting(node, _enum_converter(cls), _enum_value, (cls,)), label=cls)


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
    return node.to_json is None and node.to_python in (None, _to_int)


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
            convert = converters.get(_json_kind(value))
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


def _unenforced(metadata: Any) -> str:
    return (
        f"constraint {', '.join(repr(item) for item in metadata)} cannot be expressed in the subset "
        "(no minimum/maxLength/pattern) and @tool would not enforce it; check it in the body, or "
        "use a pydantic model, which validates its own fields"
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
        return thaw(snapshot_json(_generic_out(value)))
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
    if _is_class(hint):
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
