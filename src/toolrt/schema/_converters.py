"""Converters between a call's frozen JSON and the Python values a tool function takes and returns.

Built once per tool by the type walk (:mod:`.hint_walk`). Containers are copied only when a child
actually changed, so a ``list[str]`` or a TypedDict of strings reaches the body as the very frozen
snapshot the pipeline validated.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolrt._json import FrozenDict, FrozenList, thaw

__all__ = ["Converter"]


Converter = Callable[[Any], Any]
"""A one-argument conversion, built once per tool and applied on every call."""


def _to_int(value: Any) -> Any:
    # JSON (and the validator) accept 2.0 as an integer; the body annotated ``int`` gets 2.
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _json_kind(value: Any) -> str:
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


def _list_converter(item: Converter, *, frozen: bool) -> Converter:
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


def _tuple_converter(item: Converter | None) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        return tuple(value) if item is None else tuple(item(child) for child in value)

    return convert


def _sequence_out(item: Converter | None) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        if item is None:
            return list(value) if isinstance(value, tuple) else value
        return [item(child) for child in value]

    return convert


def _mapping_converter(plan: Sequence[tuple[str, Converter | None]], *, frozen: bool) -> Converter:
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


def _dataclass_converter(cls: type, plan: tuple[tuple[str, Converter | None], ...]) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        kwargs: dict[str, Any] = {}
        for key, item in plan:
            if key in value:
                kwargs[key] = value[key] if item is None else item(value[key])
        return cls(**kwargs)

    return convert


def _dataclass_out(cls: type, plan: tuple[tuple[str, Converter | None], ...]) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, cls):
            return value
        out: dict[str, Any] = {}
        for key, item in plan:
            child = getattr(value, key)
            out[key] = child if item is None else item(child)
        return out

    return convert


def _model_converter(cls: Any) -> Converter:
    def convert(value: Any) -> Any:
        # thaw: pydantic validates plain dicts/lists; frozen subclasses would survive into the model.
        return cls.model_validate(thaw(value))

    return convert


def _model_out(cls: type) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, cls):
            return value
        # by_alias: the output schema uses the aliases, as the input schema does.
        return value.model_dump(mode="json", by_alias=True)  # type: ignore[attr-defined]

    return convert


def _enum_converter(cls: type[enum.Enum]) -> Converter:
    def convert(value: Any) -> Any:
        return value if isinstance(value, cls) else cls(value)

    return convert


def _enum_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _generic_out(value: Any) -> Any:
    """Value-directed conversion for ``Any`` positions: instances become JSON, JSON stays as is."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, enum.Enum):
        return _generic_out(value.value)
    if _is_pydantic_model(kind):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _generic_out(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [_generic_out(child) for child in value]
    return value


def _is_class(hint: Any) -> bool:
    return isinstance(hint, type) and not isinstance(hint, types.GenericAlias)


def _is_pydantic_model(hint: Any) -> bool:
    # Only if pydantic is already imported: a model class cannot exist otherwise.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and _is_class(hint) and issubclass(hint, pydantic.BaseModel)
