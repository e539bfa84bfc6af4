"""Every common hint either works end to end or is refused when the tool is defined (issue 13).

One table of hints that work: the schema the model reads, what the body receives for a valid
argument (type and value), what the model reads for a malformed one (``INVALID_ARGS`` naming the
path and what was expected), and what a returned value becomes. One table of hints that are refused
at decoration time, naming the hint and the fix. Every row goes through ``@tool`` and
``ToolRuntime.call``, as a user's tool does.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import pathlib
import uuid
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import annotated_types
import pydantic
import pytest

from toolrt import ToolFailure, ToolRuntime, ToolSuccess, tool
from toolrt.lowlevel import ToolErrorInfo


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Address(TypedDict):
    city: str
    zip: NotRequired[str]


class Line(pydantic.BaseModel):
    sku: str = pydantic.Field(pattern="^[A-Z]{3}$")
    qty: int = pydantic.Field(gt=0)

    @pydantic.field_validator("qty")
    @classmethod
    def even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("must be even")
        return value


UTC = datetime.UTC
STRING = {"type": "string"}
LINE_SCHEMA = {
    "type": "object",
    "properties": {
        "sku": {"type": "string", "description": "Must match the regular expression ^[A-Z]{3}$."},
        "qty": {"type": "integer", "exclusiveMinimum": 0},
    },
    "required": ["sku", "qty"],
    "additionalProperties": False,
}

# (id, hint, schema, valid argument, what the body receives, malformed argument, the model reads)
WORKS: list[tuple[str, Any, dict[str, Any], Any, Any, Any, str]] = [
    (
        "tuple",
        tuple[int, ...],
        {"type": "array", "items": {"type": "integer"}},
        [1, 2],
        (1, 2),
        "1",
        '"x" must be an array',
    ),
    (
        "fixed tuple",
        tuple[float, float],
        {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        [1, 2.5],
        (1, 2.5),
        [1],
        '"x" must have at least 2 items (got 1)',
    ),
    (
        "set",
        set[str],
        {"type": "array", "items": STRING, "uniqueItems": True},
        ["a", "b"],
        {"a", "b"},
        ["a", "a"],
        '"x" must not contain duplicate items ([0] and [1] are equal)',
    ),
    (
        "frozenset",
        frozenset[int],
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        [2, 1.0],
        frozenset({1, 2}),
        [1, 1.0],
        '"x" must not contain duplicate items ([0] and [1] are equal)',
    ),
    (
        "Literal",
        Literal["a", "b"],
        {"type": "string", "enum": ["a", "b"]},
        "a",
        "a",
        "c",
        '"x" must be one of ["a","b"]',
    ),
    (
        "Enum",
        Color,
        {"type": "string", "enum": ["red", "green"]},
        "red",
        Color.RED,
        "blue",
        '"x" must be one of ["red","green"]',
    ),
    (
        "datetime",
        datetime.datetime,
        {"type": "string", "format": "date-time"},
        "2026-12-02T09:30:00Z",
        datetime.datetime(2026, 12, 2, 9, 30, tzinfo=UTC),
        "tomorrow",
        '"x" must be an ISO 8601 date-time (format "date-time", e.g. "2026-12-02T09:30:00+00:00"), '
        'got "tomorrow"',
    ),
    (
        "date",
        datetime.date,
        {"type": "string", "format": "date"},
        "2026-12-02",
        datetime.date(2026, 12, 2),
        "02/12/2026",
        '"x" must be an ISO 8601 date (format "date", e.g. "2026-12-02"), got "02/12/2026"',
    ),
    (
        "time",
        datetime.time,
        {"type": "string", "format": "time"},
        "09:30",
        datetime.time(9, 30),
        "9.30am",
        '"x" must be an ISO 8601 time (format "time", e.g. "09:30:00"), got "9.30am"',
    ),
    (
        "UUID",
        uuid.UUID,
        {"type": "string", "format": "uuid"},
        "123e4567-e89b-12d3-a456-426614174000",
        uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
        "123",
        '"x" must be a UUID (format "uuid", e.g. "123e4567-e89b-12d3-a456-426614174000"), got "123"',
    ),
    (
        "Path",
        pathlib.Path,
        {"type": "string", "format": "path"},
        "/srv/data.txt",
        pathlib.Path("/srv/data.txt"),
        "a\x00b",
        '"x" must be a file system path (format "path"), got "a\\u0000b"',
    ),
    (
        "Decimal",
        decimal.Decimal,
        {"type": "string", "format": "decimal"},
        "12.50",
        decimal.Decimal("12.50"),
        "NaN",
        '"x" must be a finite decimal number written as a string (format "decimal", e.g. "12.50"), got "NaN"',
    ),
    (
        "Annotated Field(gt)",
        Annotated[int, pydantic.Field(gt=0)],
        {"type": "integer", "exclusiveMinimum": 0},
        3,
        3,
        0,
        '"x" must be > 0 (got 0)',
    ),
    (
        "annotated_types MaxLen",
        Annotated[str, annotated_types.MaxLen(3)],
        {"type": "string", "maxLength": 3},
        "abc",
        "abc",
        "abcd",
        '"x" must be at most 3 characters long (got 4)',
    ),
    (
        "Annotated pattern",
        Annotated[str, pydantic.Field(pattern="^[a-z]+$")],
        {"type": "string", "description": "Must match the regular expression ^[a-z]+$."},
        "abc",
        "abc",
        "ABC",
        '"x" must match the regular expression ^[a-z]+$ (got "ABC")',
    ),
    (
        "dataclass",
        Point,
        {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
            "required": ["x"],
            "additionalProperties": False,
        },
        {"x": 1},
        Point(1),
        {"y": 1},
        'missing required property "x.x"',
    ),
    (
        "TypedDict NotRequired",
        Address,
        {
            "type": "object",
            "properties": {"city": STRING, "zip": STRING},
            "required": ["city"],
            "additionalProperties": False,
        },
        {"city": "Oslo"},
        {"city": "Oslo"},
        {"city": "Oslo", "country": "NO"},
        '"x.country" is not a declared property (additionalProperties: false)',
    ),
    (
        "dict[str, X]",
        dict[str, datetime.date],
        {"type": "object", "additionalProperties": {"type": "string", "format": "date"}},
        {"due": "2026-12-24"},
        {"due": datetime.date(2026, 12, 24)},
        {"due": "soon"},
        '"x.due" must be an ISO 8601 date (format "date", e.g. "2026-12-02"), got "soon"',
    ),
    (
        "pydantic model, keyword bound",
        list[Line],
        {"type": "array", "items": LINE_SCHEMA},
        [{"sku": "ABC", "qty": 2}],
        [Line(sku="ABC", qty=2)],
        [{"sku": "ABC", "qty": 2}, {"sku": "ABC", "qty": 2}, {"sku": "ABC", "qty": -1}],
        '"x[2].qty" must be > 0 (got -1)',
    ),
    (
        "pydantic model, its own validator",
        list[Line],
        {"type": "array", "items": LINE_SCHEMA},
        [{"sku": "ABC", "qty": 2}],
        [Line(sku="ABC", qty=2)],
        [{"sku": "ABC", "qty": 2}, {"sku": "abc", "qty": 3}],
        '"x[1].sku" must match the regular expression ^[A-Z]{3}$ (got "abc"); '
        '"x[1].qty" is invalid: Value error, must be even (got 3)',
    ),
]


def tool_for(hint: Any, received: list[Any]) -> Any:
    def take(x):  # type: ignore[no-untyped-def]
        received.append(x)
        return "ok"

    take.__annotations__ = {"x": hint, "return": str}
    return tool(take)


@pytest.mark.parametrize(
    ("hint", "schema", "valid", "receives", "malformed", "message"),
    [row[1:] for row in WORKS],
    ids=[row[0] for row in WORKS],
)
async def test_a_common_hint_works_end_to_end(
    hint: Any, schema: dict[str, Any], valid: Any, receives: Any, malformed: Any, message: str
) -> None:
    received: list[Any] = []
    definition = tool_for(hint, received)
    assert definition.parameters["properties"]["x"] == schema
    runtime = ToolRuntime()
    runtime.register(definition)

    result = await runtime.call("take", {"x": valid})
    assert isinstance(result, ToolSuccess), result
    assert received[-1] == receives
    assert type(received[-1]) is type(receives)
    if isinstance(receives, list | tuple):
        assert [type(item) for item in received[-1]] == [type(item) for item in receives]

    failure = await runtime.call("take", {"x": malformed})
    assert isinstance(failure, ToolFailure), failure
    assert failure.error.info == ToolErrorInfo("ToolArgsError", "INVALID_ARGS")
    assert failure.error.message == f"invalid arguments: {message}"
    assert "pydantic.dev" not in failure.content[0]["text"]


# (id, return hint, returned value, the JSON the model receives, the output schema)
RETURNS: list[tuple[str, Any, Any, Any, dict[str, Any]]] = [
    (
        "datetime",
        datetime.datetime,
        datetime.datetime(2026, 12, 2, 9, 30, tzinfo=UTC),
        "2026-12-02T09:30:00+00:00",
        {"type": "string", "format": "date-time"},
    ),
    (
        "UUID",
        uuid.UUID,
        uuid.UUID(int=1),
        "00000000-0000-0000-0000-000000000001",
        {"type": "string", "format": "uuid"},
    ),
    ("Decimal", decimal.Decimal, decimal.Decimal("1.10"), "1.10", {"type": "string", "format": "decimal"}),
    ("Path", pathlib.Path, pathlib.Path("/tmp/x"), "/tmp/x", {"type": "string", "format": "path"}),
    ("set", set[str], {"b", "a"}, ["a", "b"], {"type": "array", "items": STRING, "uniqueItems": True}),
    (
        "fixed tuple",
        tuple[int, int],
        (1, 2),
        [1, 2],
        {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    ),
    ("Enum", Color, Color.GREEN, "green", {"type": "string", "enum": ["red", "green"]}),
    ("Any holding a date", Any, datetime.date(2026, 1, 2), "2026-01-02", {}),
]


@pytest.mark.parametrize(
    ("hint", "returned", "value", "schema"), [row[1:] for row in RETURNS], ids=[row[0] for row in RETURNS]
)
async def test_a_returned_value_of_a_common_hint_becomes_json(
    hint: Any, returned: Any, value: Any, schema: dict[str, Any]
) -> None:
    def give():  # type: ignore[no-untyped-def]
        return returned

    give.__annotations__ = {"return": hint}
    definition = tool(give)
    assert dict(definition.output.schema) == schema
    runtime = ToolRuntime()
    runtime.register(definition)
    result = await runtime.call("give", {})
    assert isinstance(result, ToolSuccess), result
    assert result.value == value


class LocalDateTime(datetime.datetime):
    """A datetime subclass (pendulum-like): std parsing would hand the body the wrong class."""


@dataclasses.dataclass
class Tree:
    children: list[Tree]


# (id, hint, fragments of the TypeError raised at decoration time: the hint and the fix)
REFUSED: list[tuple[str, Any, tuple[str, ...]]] = [
    ("mixed tuple", tuple[int, str], ("tuple[int, str]", "different types", "TypedDict")),
    ("set of lists", set[list[int]], ("set[list[int]]", "hashable scalars", "use list[...]")),
    ("set of bools and ints", set[int | bool], ("True and 1", "use list[...]")),
    ("non-str keys", dict[int, str], ("dict[int, str]", "keys are strings", "dict[str, X]")),
    ("bytes", bytes, ("bytes cannot be expressed", "use str")),
    ("datetime subclass", LocalDateTime, ("LocalDateTime cannot be expressed", "datetime/date/time")),
    ("overlapping union", datetime.datetime | str, ("datetime | str", "both accept JSON string")),
    ("recursive", Tree, ("Tree is recursive", "$ref")),
    (
        "unenforceable constraint",
        Annotated[int, annotated_types.Predicate(lambda value: value > 0)],
        ("no JSON Schema keyword", "use a pydantic model"),
    ),
    (
        "misplaced constraint",
        Annotated[str, annotated_types.Ge(1)],
        ("applies to a number", "not to this type"),
    ),
]


@pytest.mark.parametrize(("hint", "fragments"), [row[1:] for row in REFUSED], ids=[row[0] for row in REFUSED])
def test_a_hint_that_cannot_work_is_refused_at_definition_time(hint: Any, fragments: tuple[str, ...]) -> None:
    with pytest.raises(TypeError) as raised:
        tool_for(hint, [])
    message = str(raised.value)
    assert message.startswith("@tool ") and 'parameter "x"' in message, message
    for fragment in fragments:
        assert fragment in message, message
