"""Converters between a call's frozen JSON and the Python values a tool function takes and returns.

Built once per tool by the type walk (:mod:`toolrt.schema._type_hints`). Containers are copied only
when a child actually changed, so a ``list[str]`` or a TypedDict of strings reaches the body as the
very frozen snapshot the pipeline validated.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolrt._json import FrozenDict, FrozenList, thaw

__all__ = [
    "Converter",
    "dataclass_converter",
    "dataclass_out",
    "enum_converter",
    "enum_value",
    "fresh_copy",
    "generic_out",
    "is_class",
    "is_pydantic_model",
    "json_kind",
    "list_converter",
    "mapping_converter",
    "model_converter",
    "model_out",
    "sequence_out",
    "to_int",
    "tuple_converter",
    "values_converter",
    "values_out",
]


Converter = Callable[[Any], Any]
"""A one-argument conversion, built once per tool and applied on every call."""


def to_int(value: Any) -> Any:
    """An integral float as an ``int``; anything else as is.

    JSON (and the validator) accept 2.0 as an integer; the body annotated ``int`` gets 2.
    """
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def json_kind(value: Any) -> str:
    """The JSON type name of a lossless JSON value (``"null"``, ``"boolean"``, ..., ``"array"``)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    return "array"


def list_converter(item: Converter, *, frozen: bool) -> Converter:
    """Apply ``item`` to each element; copy the list only if an element changed (frozen while still JSON)."""

    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        out: list[Any] | None = None
        for index, child in enumerate(value):
            new = item(child)
            if out is None and new is not child:
                out = list(value[:index])
            if out is not None:
                out.append(new)
        if out is None:
            return value
        # Still JSON: keep the "arguments are immutable" contract. Holding instances: a fresh list
        # owned by this call (a FrozenList only ever holds lossless JSON).
        return FrozenList(out) if frozen else out

    return convert


def tuple_converter(item: Converter | None) -> Converter:
    """A JSON array as a ``tuple``, each element through ``item`` when given."""

    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        return tuple(value) if item is None else tuple(item(child) for child in value)

    return convert


def sequence_out(item: Converter | None) -> Converter:
    """A returned list/tuple as a JSON array, each element through ``item`` when given."""

    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        if item is None:
            return list(value) if isinstance(value, tuple) else value
        return [item(child) for child in value]

    return convert


def mapping_converter(plan: Sequence[tuple[str, Converter | None]], *, frozen: bool) -> Converter:
    """Convert the planned keys of a JSON object; copy it only if a value changed."""

    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        out: dict[str, Any] | None = None
        for key, item in plan:
            if key in value:
                old = value[key]
                new = item(old)  # type: ignore[misc]
                if new is not old:
                    if out is None:
                        out = dict(value)
                    out[key] = new
        if out is None:
            return value
        return FrozenDict(out) if frozen else out

    return convert


_SHALLOW_DEPTH = 24  # beyond this a value is copied by the iterative thaw(), never by recursion


def fresh_copy(value: Any) -> Any:
    """A plain, mutable deep copy of a JSON value (``thaw``), fast for the usual shallow arguments.

    Small containers are copied by a bounded recursion through the base-class slots (several times
    cheaper than the general walk); anything nested deeper than ``_SHALLOW_DEPTH`` is handed to the
    iterative :func:`thaw`, so a 100,000-deep argument never touches the call stack.
    """
    if not isinstance(value, _CONTAINERS):
        return value
    return _copy(value, _SHALLOW_DEPTH)


# A tuple, not ``dict | list | tuple``: isinstance against a union object is several times slower.
_CONTAINERS = (dict, list, tuple)


def _copy(value: Any, depth: int) -> Any:
    if depth == 0:
        return thaw(value)
    if isinstance(value, dict):
        out = dict.copy(value)  # exact dict storage, as thaw() reads it
        for key, child in out.items():
            if isinstance(child, _CONTAINERS):
                out[key] = _copy(child, depth - 1)
        return out
    items = list.copy(value) if isinstance(value, list) else list(value)
    for index, child in enumerate(items):
        if isinstance(child, _CONTAINERS):
            items[index] = _copy(child, depth - 1)
    return items


def values_converter(item: Converter, *, frozen: bool) -> Converter:
    """Apply ``item`` to every value of a ``dict[str, X]``; copy only if a value changed."""

    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        out: dict[str, Any] | None = None
        for key, old in value.items():
            new = item(old)
            if new is not old:
                if out is None:
                    out = dict(value)
                out[key] = new
        if out is None:
            return value
        return FrozenDict(out) if frozen else out

    return convert


def values_out(item: Converter) -> Converter:
    """A returned ``dict[str, X]`` as a JSON object, every value through ``item``."""

    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {key: item(child) for key, child in value.items()}

    return convert


def dataclass_converter(cls: type, plan: tuple[tuple[str, Converter | None], ...]) -> Converter:
    """A JSON object as a ``cls`` instance, each planned field through its converter."""

    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        kwargs: dict[str, Any] = {}
        for key, item in plan:
            if key in value:
                kwargs[key] = value[key] if item is None else item(value[key])
        return cls(**kwargs)

    return convert


def dataclass_out(cls: type, plan: tuple[tuple[str, Converter | None], ...]) -> Converter:
    """A returned ``cls`` instance as a JSON object, each planned field through its converter."""

    def convert(value: Any) -> Any:
        if not isinstance(value, cls):
            return value
        out: dict[str, Any] = {}
        for key, item in plan:
            child = getattr(value, key)
            out[key] = child if item is None else item(child)
        return out

    return convert


def model_converter(cls: Any) -> Converter:
    """A JSON value validated into the pydantic model ``cls``."""

    def convert(value: Any) -> Any:
        # thaw: pydantic validates plain dicts/lists; frozen subclasses would survive into the model.
        return cls.model_validate(thaw(value))

    return convert


def model_out(cls: type) -> Converter:
    """A returned pydantic ``cls`` instance as its JSON dump (by alias)."""

    def convert(value: Any) -> Any:
        if not isinstance(value, cls):
            return value
        # by_alias: the output schema uses the aliases, as the input schema does.
        return value.model_dump(mode="json", by_alias=True)  # type: ignore[attr-defined]

    return convert


def enum_converter(cls: type[enum.Enum]) -> Converter:
    """A JSON value as the member of ``cls`` with that value."""

    def convert(value: Any) -> Any:
        return value if isinstance(value, cls) else cls(value)

    return convert


def enum_value(value: Any) -> Any:
    """An ``Enum`` member as its value; anything else as is."""
    return value.value if isinstance(value, enum.Enum) else value


def generic_out(value: Any) -> Any:
    """Value-directed conversion for ``Any`` positions: instances become JSON, JSON stays as is."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, enum.Enum):
        return generic_out(value.value)
    if is_pydantic_model(kind):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: generic_out(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [generic_out(child) for child in value]
    return value


def is_class(hint: Any) -> bool:
    """Whether ``hint`` is a plain class (not a parametrised generic such as ``list[int]``)."""
    return isinstance(hint, type) and not isinstance(hint, types.GenericAlias)


def is_pydantic_model(hint: Any) -> bool:
    """Whether ``hint`` is a pydantic model class."""
    # Only if pydantic is already imported: a model class cannot exist otherwise.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and is_class(hint) and issubclass(hint, pydantic.BaseModel)
