"""Converters between a call's frozen JSON and the Python values a tool function takes and returns.

Built once per tool by the type walk (:mod:`toolrt.schema._type_hints`). Containers are copied only
when a child actually changed, so a ``list[str]`` or a TypedDict of strings reaches the body as the
very frozen snapshot the pipeline validated.

A conversion that fails (a malformed date-time, a pydantic validator saying no) raises
:class:`ArgumentConversionError`; each container converter on the way out adds its key, so the
``@tool`` wrapper reports it as ``INVALID_ARGS`` at the argument's JSON path, in the validator's own
words (``"items[2].qty" must be > 0 (got -1)``). ``try`` costs nothing in CPython 3.11 until
something raises, so the hot path pays nothing for the paths.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import enum
import pathlib
import re
import sys
import types
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from toolrt._json import FrozenDict, FrozenList, js_json_dumps, thaw

__all__ = [
    "STRING_FORMATS",
    "ArgumentConversionError",
    "Converter",
    "StringFormat",
    "argument_path",
    "dataclass_converter",
    "dataclass_out",
    "describe_value",
    "enum_converter",
    "enum_value",
    "format_converter",
    "format_out",
    "fresh_copy",
    "generic_out",
    "is_class",
    "is_pydantic_model",
    "json_kind",
    "list_converter",
    "mapping_converter",
    "model_converter",
    "model_out",
    "pattern_converter",
    "pydantic_problem",
    "sequence_out",
    "set_converter",
    "set_out",
    "to_int",
    "tuple_converter",
    "values_converter",
    "values_out",
]


Converter = Callable[[Any], Any]
"""A one-argument conversion, built once per tool and applied on every call."""


class ArgumentConversionError(Exception):
    """An argument that validated but cannot become the hinted Python value; carries its paths.

    ``problems`` are ``(keys, before, after)``: the message is ``before + <path> + after``, where the
    path is built from ``keys`` (innermost first; each enclosing converter appends its own key).
    """

    def __init__(self, problems: list[tuple[list[str | int], str, str]]) -> None:
        super().__init__("argument conversion failed")
        self.problems = problems

    @classmethod
    def at_value(cls, suffix: str) -> ArgumentConversionError:
        """A problem with the value itself: ``"<path>"<suffix>``."""
        return cls([([], '"', f'"{suffix}')])

    def within(self, key: str | int) -> ArgumentConversionError:
        """The same problems, one level deeper (``key`` is the enclosing container's key)."""
        for keys, _, _ in self.problems:
            keys.append(key)
        return self

    def messages(self) -> list[str]:
        """The problems as ``INVALID_ARGS`` violations (the validator's path spelling)."""
        return [f"{before}{argument_path(keys)}{after}" for keys, before, after in self.problems]


def argument_path(reversed_keys: Sequence[str | int]) -> str:
    """``items[2].qty`` from ``[qty, 2, items]``; ``arguments`` for the root (the validator's spelling)."""
    parts: list[str] = []
    for key in reversed(reversed_keys):
        if type(key) is int:
            parts.append(f"[{key}]")
        elif parts:
            parts.append(f".{key}")
        else:
            parts.append(str(key))
    return "".join(parts) or "arguments"


def describe_value(value: Any) -> str:
    """A short JSON rendering of an offending value for a message (``"tomorrow"``, ``-1``)."""
    try:
        text = js_json_dumps(thaw(value))
    except Exception:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclasses.dataclass(frozen=True, slots=True)
class StringFormat:
    """A Python type carried as a JSON string with a ``format`` (decision 0011)."""

    format: str
    parse: Callable[[str], Any]
    dump: Callable[[Any], str]
    expected: str  # the words of a message: "an ISO 8601 date-time (e.g. ...)"


def _parse_decimal(text: str) -> decimal.Decimal:
    number = decimal.Decimal(text)
    if not number.is_finite():
        raise ValueError("not finite")
    return number


def _parse_path(text: str) -> pathlib.Path:
    if "\x00" in text:
        raise ValueError("NUL")
    return pathlib.Path(text)


def _parse_datetime(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text)


STRING_FORMATS: Final[Mapping[type, StringFormat]] = {
    datetime.datetime: StringFormat(
        "date-time",
        _parse_datetime,
        datetime.datetime.isoformat,
        'an ISO 8601 date-time (format "date-time", e.g. "2026-12-02T09:30:00+00:00")',
    ),
    datetime.date: StringFormat(
        "date",
        datetime.date.fromisoformat,
        datetime.date.isoformat,
        'an ISO 8601 date (format "date", e.g. "2026-12-02")',
    ),
    datetime.time: StringFormat(
        "time",
        datetime.time.fromisoformat,
        datetime.time.isoformat,
        'an ISO 8601 time (format "time", e.g. "09:30:00")',
    ),
    uuid.UUID: StringFormat(
        "uuid", uuid.UUID, str, 'a UUID (format "uuid", e.g. "123e4567-e89b-12d3-a456-426614174000")'
    ),
    pathlib.Path: StringFormat("path", _parse_path, str, 'a file system path (format "path")'),
    decimal.Decimal: StringFormat(
        "decimal",
        _parse_decimal,
        str,
        'a finite decimal number written as a string (format "decimal", e.g. "12.50")',
    ),
}
"""The types ``@tool`` carries as formatted strings, each with its parser and its JSON dump."""


def format_converter(spec: StringFormat) -> Converter:
    """A JSON string parsed into the format's Python type; a malformed one names what was expected."""
    parse = spec.parse
    suffix = f" must be {spec.expected}, got "

    def convert(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return parse(value)
        except (ValueError, TypeError, ArithmeticError):
            raise ArgumentConversionError.at_value(f"{suffix}{describe_value(value)}") from None

    return convert


def format_out(cls: type, dump: Callable[[Any], str]) -> Converter:
    """A returned instance of a formatted type as its string; anything else as is."""

    def convert(value: Any) -> Any:
        return dump(value) if isinstance(value, cls) else value

    return convert


def pattern_converter(pattern: str, inner: Converter | None) -> Converter:
    """A string that must match ``pattern`` (Python ``re.search``, as pydantic applies it)."""
    compiled = re.compile(pattern)
    suffix = f" must match the regular expression {pattern} (got "

    def convert(value: Any) -> Any:
        if isinstance(value, str) and compiled.search(value) is None:
            raise ArgumentConversionError.at_value(f"{suffix}{describe_value(value)})")
        return value if inner is None else inner(value)

    return convert


def set_converter(item: Converter | None, cls: type) -> Converter:
    """A JSON array (its items unique, checked by ``uniqueItems``) as a ``set``/``frozenset``."""
    return _array_as(cls, item)


def set_out(item: Converter | None) -> Converter:
    """A returned set as a JSON array, sorted when its items sort (a stable text for the model)."""

    def convert(value: Any) -> Any:
        if not isinstance(value, set | frozenset):
            return value
        items = list(value)
        with contextlib.suppress(TypeError):
            items.sort()
        return items if item is None else [item(child) for child in items]

    return convert


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
            try:
                new = item(child)
            except ArgumentConversionError as error:
                raise error.within(index) from None
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
    return _array_as(tuple, item)


def _array_as(cls: type, item: Converter | None) -> Converter:
    """A JSON array rebuilt as ``cls`` (a tuple, a set), each element through ``item`` when given.

    Unlike :func:`list_converter` it always builds a new container: the body asked for another
    type, so there is no unchanged value to keep. A failing element names its index.
    """

    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        if item is None:
            return cls(value)
        out = []
        for index, child in enumerate(value):
            try:
                out.append(item(child))
            except ArgumentConversionError as error:
                raise error.within(index) from None
        return cls(out)

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
                try:
                    new = item(old)  # type: ignore[misc]
                except ArgumentConversionError as error:
                    raise error.within(key) from None
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
            try:
                new = item(old)
            except ArgumentConversionError as error:
                raise error.within(key) from None
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
                try:
                    kwargs[key] = value[key] if item is None else item(value[key])
                except ArgumentConversionError as error:
                    raise error.within(key) from None
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
    """A JSON value validated into the pydantic model ``cls``; its errors in toolrt's words, with paths.

    Pydantic's own text (``Input should be greater than 0 [type=greater_than, ...]`` and an
    errors.pydantic.dev link) is written for a Python developer; the model reads
    ``"items[2].qty" must be > 0 (got -1)``, like every other argument violation.
    """
    error_type = sys.modules["pydantic"].ValidationError

    def convert(value: Any) -> Any:
        try:
            # thaw: pydantic validates plain dicts/lists; frozen subclasses would survive into the model.
            return cls.model_validate(thaw(value))
        except error_type as error:
            raise ArgumentConversionError(
                [pydantic_problem(detail) for detail in error.errors(include_url=False)]
            ) from None

    return convert


# Pydantic error types and toolrt's words for them (``{name}`` from the error's ``ctx``).
_PYDANTIC_WORDS: Final[Mapping[str, str]] = {
    "greater_than": " must be > {gt}",
    "greater_than_equal": " must be >= {ge}",
    "less_than": " must be < {lt}",
    "less_than_equal": " must be <= {le}",
    "multiple_of": " must be a multiple of {multiple_of}",
    "string_too_short": " must be at least {min_length} characters long",
    "string_too_long": " must be at most {max_length} characters long",
    "too_short": " must have at least {min_length} items",
    "too_long": " must have at most {max_length} items",
    "string_pattern_mismatch": " must match the regular expression {pattern}",
    "string_type": " must be a string",
    "int_type": " must be an integer",
    "int_parsing": " must be an integer",
    "int_from_float": " must be an integer",
    "float_type": " must be a number",
    "float_parsing": " must be a number",
    "bool_type": " must be a boolean",
    "bool_parsing": " must be a boolean",
    "list_type": " must be an array",
    "dict_type": " must be an object",
    "model_type": " must be an object",
    "model_attributes_type": " must be an object",
    "literal_error": " must be one of {expected}",
    "enum": " must be one of {expected}",
    "uuid_parsing": ' must be a UUID (format "uuid")',
    "datetime_parsing": ' must be an ISO 8601 date-time (format "date-time")',
    "datetime_from_date_parsing": ' must be an ISO 8601 date-time (format "date-time")',
    "date_parsing": ' must be an ISO 8601 date (format "date")',
    "date_from_datetime_parsing": ' must be an ISO 8601 date (format "date")',
    "time_parsing": ' must be an ISO 8601 time (format "time")',
}


def pydantic_problem(detail: Mapping[str, Any]) -> tuple[list[str | int], str, str]:
    """One pydantic error as a problem of :class:`ArgumentConversionError` (path, toolrt's words)."""
    keys: list[str | int] = [part if isinstance(part, int) else str(part) for part in detail.get("loc", ())]
    keys.reverse()
    kind = detail.get("type")
    if kind == "missing":
        return keys, 'missing required property "', '"'
    if kind == "extra_forbidden":
        return keys, '"', '" is not a declared property (additionalProperties: false)'
    context = detail.get("ctx") or {}
    words = _PYDANTIC_WORDS.get(kind) if isinstance(kind, str) else None
    if words is not None:
        try:
            text = words.format(**{name: _context_text(item) for name, item in context.items()})
        except (KeyError, IndexError, ValueError):
            words = None
    if words is None:
        message = str(detail.get("msg", "is invalid"))
        text = f" is invalid: {message}"
    if "input" in detail and isinstance(detail["input"], str | int | float) and kind != "missing":
        text += f" (got {describe_value(detail['input'])})"
    return keys, '"', f'"{text}'


def _context_text(item: Any) -> str:
    if isinstance(item, bool) or not isinstance(item, int | float):
        return str(item)
    return describe_value(item)


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
    spec = STRING_FORMATS.get(kind)
    if spec is not None:
        return spec.dump(value)
    if isinstance(value, set | frozenset):
        return set_out(generic_out)(value)
    return value


def is_class(hint: Any) -> bool:
    """Whether ``hint`` is a plain class (not a parametrised generic such as ``list[int]``)."""
    return isinstance(hint, type) and not isinstance(hint, types.GenericAlias)


def is_pydantic_model(hint: Any) -> bool:
    """Whether ``hint`` is a pydantic model class."""
    # Only if pydantic is already imported: a model class cannot exist otherwise.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and is_class(hint) and issubclass(hint, pydantic.BaseModel)
