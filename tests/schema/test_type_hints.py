# The typing spellings (Union, Optional, List, functional TypedDict) are what these tests are about.
# ruff: noqa: UP006, UP007, UP013, UP045
"""Type hints → raw subset JSON Schema (``toolrt.schema._type_hints``): every mapping row, every loud failure.

Every generated schema is checked three ways: it is a valid Draft 2020-12 schema (``jsonschema``),
it is inside the enforced subset (``assert_supported_json_schema``), and sample values validate the
same way under ``jsonschema`` and toolrt's own validator.

No ``from __future__ import annotations`` here on purpose: several tests define types inside the
test function, which string annotations could not resolve.
"""

import dataclasses
import decimal
import enum
import math
import sys
import typing
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Literal,
    NewType,
    NotRequired,
    Optional,
    Required,
    TypedDict,
    TypeVar,
    Union,
)

import annotated_types
import pydantic
import pytest
from jsonschema import Draft202012Validator

from toolrt._execution import ToolExecution, ToolRunContext
from toolrt._json import snapshot_json
from toolrt.schema import assert_supported_json_schema, compile_validator
from toolrt.schema._docstrings import parse_docstring
from toolrt.schema._type_hints import analyze_function, schema_from_function

# --- helpers ------------------------------------------------------------------------------------------


def check(schema: Any, valid: Sequence[Any] = (), invalid: Sequence[Any] = ()) -> None:
    """The schema is Draft 2020-12, inside the subset, and both validators agree on the samples."""
    Draft202012Validator.check_schema(schema)
    assert_supported_json_schema(schema)
    reference = Draft202012Validator(schema)
    ours = compile_validator(schema)
    for value in valid:
        assert reference.is_valid(value), (schema, value)
        assert ours.validate(value) == [], (schema, value)
    for value in invalid:
        assert not reference.is_valid(value), (schema, value)
        assert ours.validate(value) != [], (schema, value)


def make(hint: Any, **defaults: Any) -> Any:
    """A function ``f(x: hint)`` (``x = defaults["x"]`` when given)."""
    if "x" in defaults:

        def f(x=defaults["x"]):  # type: ignore[no-untyped-def]
            return x

    else:

        def f(x):  # type: ignore[no-untyped-def]
            return x

    f.__annotations__ = {"x": hint}
    return f


def prop(hint: Any) -> Any:
    """The schema of parameter ``x: hint``."""
    parameters, _, _ = schema_from_function(make(hint))
    schema = parameters["properties"]["x"]
    check(schema)
    return schema


def fails(hint: Any, *fragments: str) -> str:
    """Mapping ``x: hint`` raises TypeError naming the parameter; returns the message."""
    with pytest.raises(TypeError) as caught:
        schema_from_function(make(hint))
    message = str(caught.value)
    assert message.startswith("@tool ") and 'parameter "x": ' in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


NULL = {"type": "null"}
STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}


# --- scalars ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hint", "expected", "valid", "invalid"),
    [
        (str, STR, ["a", ""], [1, None]),
        (int, INT, [1, -3, 2.0], [1.5, "1", True]),
        (float, NUM, [1, 1.5], ["1", True, None]),
        (bool, BOOL, [True, False], [0, "true"]),
        (None, NULL, [None], [0, ""]),
        (type(None), NULL, [None], [False]),
        (Any, {}, [None, 1, "a", [1], {"a": 1}], []),
        (object, {}, [None, {"a": [1]}], []),
    ],
)
def test_scalar_and_any_hints(hint: Any, expected: Any, valid: list[Any], invalid: list[Any]) -> None:
    assert prop(hint) == expected
    check(expected, valid, invalid)


def test_unannotated_parameter_is_any_json() -> None:
    def f(x, y: int):  # type: ignore[no-untyped-def]
        return x

    parameters, output, _ = schema_from_function(f)
    assert parameters["properties"] == {"x": {}, "y": INT}
    assert output == {}


@pytest.mark.parametrize("hint", [int | float, float | int, Union[int, float], Union[float, int]])
def test_int_or_float_is_number(hint: Any) -> None:
    assert prop(hint) == NUM


def test_int_or_float_or_none_is_number_or_null() -> None:
    schema = prop(int | float | None)
    assert schema == {"oneOf": [NUM, NULL]}
    check(schema, [1, 1.5, None], ["1"])


def test_int_or_bool_is_fine_because_bool_is_not_an_integer() -> None:
    schema = prop(int | bool)
    assert schema == {"oneOf": [INT, BOOL]}
    check(schema, [1, True], [1.5, None])


def test_newtype_maps_to_its_supertype() -> None:
    UserId = NewType("UserId", int)
    assert prop(UserId) == INT


def test_bound_typevar_maps_to_its_bound_and_unbound_fails() -> None:
    bounded = TypeVar("bounded", bound=str)
    assert prop(bounded) == STR
    fails(TypeVar("free"), "type variable free has no bound")


# --- Literal and Enum ---------------------------------------------------------------------------------


def test_literal_of_one_json_type() -> None:
    schema = prop(Literal["r", "w"])
    assert schema == {"type": "string", "enum": ["r", "w"]}
    check(schema, ["r"], ["x", 1])
    assert prop(Literal[1, 2]) == {"type": "integer", "enum": [1, 2]}
    assert prop(Literal[True]) == {"type": "boolean", "enum": [True]}


def test_literal_of_mixed_types_is_a_oneof_of_per_type_enums() -> None:
    schema = prop(Literal["a", 1, True, None, "b"])
    assert schema == {
        "oneOf": [
            {"type": "string", "enum": ["a", "b"]},
            {"type": "integer", "enum": [1]},
            {"type": "boolean", "enum": [True]},
            NULL,
        ]
    }
    check(schema, ["a", "b", 1, True, None], ["c", 2, False, 1.5])


def test_literal_branches_of_a_union_merge_into_one_enum() -> None:
    assert prop(Literal["a"] | Literal["b"]) == {"type": "string", "enum": ["a", "b"]}
    assert prop(Optional[Literal["a", "b"]]) == {"oneOf": [{"type": "string", "enum": ["a", "b"]}, NULL]}


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    NAME = "name"
    ONE = 1


class Mode(enum.StrEnum):
    """How to open a file."""

    READ = "r"
    WRITE = "w"


def test_enum_classes_map_to_enums_of_their_values() -> None:
    assert prop(Color) == {"type": "string", "enum": ["red", "green"]}
    assert prop(Level) == {"type": "integer", "enum": [1, 2]}
    assert prop(Mixed) == {"oneOf": [{"type": "string", "enum": ["name"]}, {"type": "integer", "enum": [1]}]}
    # An explicit class docstring becomes the description.
    assert prop(Mode) == {"type": "string", "enum": ["r", "w"], "description": "How to open a file."}
    check(prop(Color), ["red"], ["RED", "blue"])


def test_enum_without_members_or_with_non_json_values_fails() -> None:
    class Empty(enum.Enum):
        pass

    class Tupled(enum.Enum):
        A = (1, 2)

    fails(Empty, "has no members")
    fails(Tupled, "is not a JSON scalar")


def test_literal_of_bytes_fails() -> None:
    fails(Literal[b"x"], "is not a JSON scalar")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), -0.0])
def test_enum_of_a_float_json_cannot_carry_losslessly_fails(value: float) -> None:
    lossy = enum.Enum("Lossy", {"A": 1.5, "B": value})  # type: ignore[misc]
    fails(lossy, "is not a JSON scalar")


def test_enum_of_ordinary_floats_and_zero_maps_to_a_number_enum() -> None:
    fine = enum.Enum("Fine", {"A": 1.5, "B": 0.0})  # type: ignore[misc]
    parameters, _, _ = schema_from_function(make(fine))
    assert parameters["properties"]["x"] == {"type": "number", "enum": [1.5, 0.0]}


# --- unions -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hint", [str | None, Optional[str], Union[str, None]])
def test_optional_is_a_oneof_with_null(hint: Any) -> None:
    schema = prop(hint)
    assert schema == {"oneOf": [STR, NULL]}
    check(schema, ["a", None], [1])


def test_union_branch_order_is_kept() -> None:
    assert prop(None | str) == {"oneOf": [NULL, STR]}
    assert prop(str | int | None) == {"oneOf": [STR, INT, NULL]}


def test_nested_unions_flatten_into_one_oneof() -> None:
    assert prop(Union[int, Union[str, None]]) == {"oneOf": [INT, STR, NULL]}
    # Through Annotated and aliases too; a duplicated null branch is dropped.
    schema = prop(Annotated[int | None, "inner"] | str | None)
    assert schema == {"oneOf": [INT, NULL, STR]}
    check(schema, [1, None, "a"], [1.5])


def test_mixed_value_enum_in_a_union_flattens_and_same_valued_enums_overlap() -> None:
    class Other(enum.Enum):
        RED = "red"

    assert prop(Mixed | None) == {
        "oneOf": [{"type": "string", "enum": ["name"]}, {"type": "integer", "enum": [1]}, NULL]
    }
    fails(Color | Other, "branches Color and Other", "both accept JSON string")


def test_any_in_a_union_absorbs_the_other_branches() -> None:
    assert prop(Optional[Any]) == {}
    assert prop(Any | int) == {}


class Switch(TypedDict):
    on: bool


@pytest.mark.parametrize(
    ("hint", "fragment"),
    [
        (list[int] | list[str], "both accept JSON array"),
        (str | Literal["a"], "both accept JSON string"),
        (int | Literal[1], "both accept JSON integer"),
        (float | Literal[1], "both accept JSON number"),
        (dict[str, Any] | Switch, "both accept JSON object"),
        (Color | Literal["x"], "both accept JSON string"),
        (Level | float, "both accept JSON number"),
    ],
)
def test_overlapping_union_branches_fail_loudly(hint: Any, fragment: str) -> None:
    message = fails(hint, fragment, "exactly one")
    assert "branches" in message


def test_union_of_two_object_types_fails() -> None:
    class A(TypedDict):
        a: int

    @dataclasses.dataclass
    class B:
        b: int

    fails(A | B, "branches A", "and", "both accept JSON object")


def test_any_mixed_with_a_converting_branch_fails() -> None:
    fails(Any | Color, "mixes Any with Color")


# --- arrays -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hint",
    [list[int], Sequence[int], tuple[int, ...], typing.List[int], typing.Sequence[int]],
)
def test_homogeneous_sequences_are_arrays(hint: Any) -> None:
    schema = prop(hint)
    assert schema == {"type": "array", "items": INT}
    check(schema, [[], [1, 2]], [[1, "a"], "12", None])


@pytest.mark.parametrize("hint", [list, tuple, Sequence, typing.List])
def test_bare_sequences_are_arrays_of_anything(hint: Any) -> None:
    schema = prop(hint)
    assert schema == {"type": "array"}
    check(schema, [[], [1, "a", None]], [{}])


def test_nested_arrays() -> None:
    schema = prop(list[list[str | None]])
    assert schema == {"type": "array", "items": {"type": "array", "items": {"oneOf": [STR, NULL]}}}
    check(schema, [[["a", None]]], [[["a", 1]]])


@pytest.mark.parametrize("hint", [tuple[int, str], tuple[str, str, int]])
def test_fixed_length_tuples_of_different_item_types_fail(hint: Any) -> None:
    fails(hint, "fixed-length tuple", "different types", "prefixItems", "TypedDict")


def test_fixed_length_tuples_of_one_item_type_have_an_exact_size() -> None:
    # Decision 0011: minItems/maxItems say what prefixItems would, when every item has one type.
    schema = prop(tuple[float, float])
    assert schema == {"type": "array", "items": NUM, "minItems": 2, "maxItems": 2}
    check(schema, [[1, 2.5]], [[1], [1, 2, 3], ["a", 1]])
    assert prop(tuple[int]) == {"type": "array", "items": INT, "minItems": 1, "maxItems": 1}
    assert prop(tuple[()]) == {"type": "array", "minItems": 0, "maxItems": 0}


@pytest.mark.parametrize("hint", [set[int], frozenset[str]])
def test_sets_are_arrays_of_unique_items(hint: Any) -> None:
    schema = prop(hint)
    item = INT if hint == set[int] else STR
    assert schema == {"type": "array", "items": item, "uniqueItems": True}


@pytest.mark.parametrize(
    ("hint", "fragment"),
    [
        (set[list[int]], "set items must be hashable scalars"),
        (set[int | bool], "True and 1 as one item"),
        (set, "name the item type"),
    ],
)
def test_sets_that_python_cannot_hold_faithfully_fail(hint: Any, fragment: str) -> None:
    fails(hint, fragment)


@pytest.mark.parametrize("hint", [bytes, complex, bytearray])
def test_other_collections_and_types_fail(hint: Any) -> None:
    fails(
        hint,
        "cannot be expressed in the supported JSON Schema subset",
        "datetime/date/time/UUID/Path/Decimal",
    )


# --- open objects -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hint",
    [dict, dict[str, Any], Mapping[str, Any], dict[str, object], typing.Dict, Mapping],
)
def test_open_mappings_are_open_objects(hint: Any) -> None:
    schema = prop(hint)
    assert schema == {"type": "object"}
    check(schema, [{}, {"a": [1]}], [[], "x"])


def test_non_string_keys_fail_with_a_suggestion() -> None:
    message = fails(dict[int, Any], "keys are strings")
    assert "dict[str, X]" in message
    fails(Mapping[int, str], "keys are strings")


# Issue 13 reversed the old refusal of dict[str, int]: typed values are additionalProperties.
@pytest.mark.parametrize("hint", [dict[str, int], Mapping[str, int], typing.Dict[str, int]])
def test_dict_with_typed_values_is_an_object_of_checked_values(hint: Any) -> None:
    schema = prop(hint)
    assert schema == {"type": "object", "additionalProperties": {"type": "integer"}}
    check(schema, [{}, {"a": 1, "b": 2.0}], [{"a": "1"}, {"a": None}, []])


def test_dict_values_nest_at_any_depth_and_convert() -> None:
    schema = prop(dict[str, list[dict[str, str | None]]])
    inner = {"type": "object", "additionalProperties": {"oneOf": [STR, NULL]}}
    assert schema == {"type": "object", "additionalProperties": {"type": "array", "items": inner}}
    check(schema, [{"a": [{"b": None, "c": "x"}]}], [{"a": [{"b": 1}]}, {"a": {"b": "x"}}])
    # BFCL's Dict[str, Optional[Union[str, int]]] parameter.
    mixed = prop(dict[str, typing.Optional[typing.Union[str, int]]])
    assert mixed["additionalProperties"]["oneOf"] == [STR, {"type": "integer"}, NULL]


def test_dict_values_reach_the_body_converted_and_returns_convert_back() -> None:
    class Colour(enum.Enum):
        RED = "red"

    def paint(colours: dict[str, Colour]) -> dict[str, Colour]:
        assert colours == {"door": Colour.RED}
        return colours

    spec = analyze_function(paint)
    (param,) = spec.params
    assert param.to_python is not None and spec.output_to_json is not None
    assert param.to_python(snapshot_json({"door": "red"})) == {"door": Colour.RED}
    assert spec.output_to_json({"door": Colour.RED}) == {"door": "red"}
    assert spec.output == {"type": "object", "additionalProperties": {"type": "string", "enum": ["red"]}}


# --- TypedDict ----------------------------------------------------------------------------------------


class Address(TypedDict):
    """A postal address."""

    street: Annotated[str, "Street and number"]
    city: str
    zip: NotRequired[str]


class PartialAddress(TypedDict, total=False):
    street: str
    city: Required[str]


class Person(TypedDict):
    name: str
    home: Address
    tags: list[str]


def test_typeddict_is_a_closed_object_with_declared_order_and_requiredness() -> None:
    schema = prop(Address)
    assert schema == {
        "type": "object",
        "description": "A postal address.",
        "properties": {
            "street": {"type": "string", "description": "Street and number"},
            "city": STR,
            "zip": STR,
        },
        "required": ["street", "city"],
        "additionalProperties": False,
    }
    check(schema, [{"street": "a", "city": "b"}], [{"street": "a"}, {"street": "a", "city": "b", "x": 1}])


def test_typeddict_total_false_and_required() -> None:
    assert prop(PartialAddress) == {
        "type": "object",
        "properties": {"street": STR, "city": STR},
        "required": ["city"],
        "additionalProperties": False,
    }


def test_nested_typeddicts_are_inlined() -> None:
    schema = prop(Person)
    assert schema["properties"]["home"] == prop(Address)
    check(schema, [{"name": "n", "home": {"street": "s", "city": "c"}, "tags": []}], [{"name": "n"}])


def test_typeddict_field_docs_from_attributes_section_and_inheritance() -> None:
    class Base(TypedDict):
        """Base.

        Attributes:
            a: The a.
        """

        a: int

    class Child(Base):
        """A child.

        Attributes:
            b: The b.
        """

        b: NotRequired[str]

    assert prop(Child) == {
        "type": "object",
        "description": "A child.",
        "properties": {"a": INT, "b": {"type": "string", "description": "The b."}},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_recursive_typeddict_fails_naming_the_parameter() -> None:
    message = fails(TreeNode, "TreeNode is recursive", "$ref")
    assert "(at x.children[])" in message


class TreeNode(TypedDict):
    value: int
    children: list["TreeNode"]


def test_the_same_typeddict_twice_is_not_recursion() -> None:
    class Pair(TypedDict):
        first: Address
        second: Address

    schema = prop(Pair)
    assert schema["properties"]["first"] == schema["properties"]["second"]


def test_deeply_nested_typeddicts_generated_dynamically() -> None:
    depth = 50
    inner: Any = int
    for level in range(depth):
        inner = TypedDict(f"Level{level}", {"child": inner, "name": NotRequired[str]})  # type: ignore[operator]
    schema = prop(inner)
    sample: Any = 7
    node = schema
    for _ in range(depth):
        assert node["type"] == "object" and node["required"] == ["child"]
        node = node["properties"]["child"]
        sample = {"child": sample}
    assert node == INT
    check(schema, [sample], [{"child": None}])


def test_very_deep_nesting_does_not_use_the_call_stack() -> None:
    depth = max(sys.getrecursionlimit(), 1000) * 2
    inner: Any = str
    for level in range(depth):
        inner = TypedDict(f"Deep{level}", {"child": inner})  # type: ignore[operator]
    parameters, _, _ = schema_from_function(make(inner))
    assert_supported_json_schema(parameters)  # iterative, like the walk itself


# --- dataclasses --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    """A point on the plane.

    Attributes:
        x: Horizontal.
    """

    x: float
    y: float = 0.0
    label: Annotated[str, "Shown next to the point"] = "p"
    tags: list[str] = dataclasses.field(default_factory=list)
    weight: int = dataclasses.field(default=1, metadata={"description": "How heavy"})


def test_dataclass_is_a_closed_object() -> None:
    schema = prop(Point)
    assert schema == {
        "type": "object",
        "description": "A point on the plane.",
        "properties": {
            "x": {"type": "number", "description": "Horizontal."},
            "y": {"type": "number", "default": 0.0},
            "label": {"type": "string", "description": "Shown next to the point", "default": "p"},
            "tags": {"type": "array", "items": STR},
            "weight": {"type": "integer", "description": "How heavy", "default": 1},
        },
        "required": ["x"],
        "additionalProperties": False,
    }
    check(schema, [{"x": 1}, {"x": 1, "y": 2, "tags": ["a"]}], [{}, {"x": 1, "z": 0}])


def test_dataclass_without_docstring_has_no_generated_description() -> None:
    @dataclasses.dataclass
    class Bare:
        a: int

    assert "description" not in prop(Bare)


def test_dataclass_init_false_fields_are_not_arguments_and_initvar_fails() -> None:
    @dataclasses.dataclass
    class Computed:
        a: int
        b: int = dataclasses.field(init=False, default=0)

    @dataclasses.dataclass
    class WithInitVar:
        a: int
        seed: dataclasses.InitVar[int]

    assert list(prop(Computed)["properties"]) == ["a"]
    fails(WithInitVar, "init-only parameter(s) seed")


def test_recursive_dataclass_fails() -> None:
    fails(Chain, "Chain is recursive")


@dataclasses.dataclass
class Chain:
    next: Optional["Chain"] = None


# --- pydantic -----------------------------------------------------------------------------------------


class Inner(pydantic.BaseModel):
    """Inner model."""

    flag: bool = False


class Query(pydantic.BaseModel):
    text: str = pydantic.Field(description="What to search for")
    max_results: int = pydantic.Field(default=10, alias="maxResults", gt=0)
    inner: Inner
    scores: list[Annotated[float, annotated_types.Ge(0)]] = []


class OpenQuery(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    text: str


def test_pydantic_model_walks_model_fields() -> None:
    schema = prop(Query)
    assert schema == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to search for"},
            # Field(gt=0) reaches the model as a keyword (decision 0011).
            "maxResults": {"type": "integer", "exclusiveMinimum": 0, "default": 10},
            "inner": {
                "type": "object",
                "description": "Inner model.",
                "properties": {"flag": {"type": "boolean", "default": False}},
                "additionalProperties": False,
            },
            "scores": {"type": "array", "items": {**NUM, "minimum": 0}, "default": []},
        },
        "required": ["text", "inner"],
        "additionalProperties": False,
    }
    check(schema, [{"text": "a", "inner": {}}], [{"text": "a", "inner": {}, "max_results": 3}])


def test_pydantic_extra_allow_is_open() -> None:
    assert prop(OpenQuery) == {
        "type": "object",
        "properties": {"text": STR},
        "required": ["text"],
        "additionalProperties": True,
    }


def test_pydantic_root_model_maps_its_root() -> None:
    Names = pydantic.RootModel[list[str]]
    assert prop(Names) == {"type": "array", "items": STR}


def test_recursive_pydantic_model_fails() -> None:
    fails(Category, "Category is recursive")


class Category(pydantic.BaseModel):
    name: str
    parent: "Category | None" = None


Category.model_rebuild()


def test_pydantic_field_with_unsupported_type_fails_with_path() -> None:
    class Event(pydantic.BaseModel):
        payload: bytes

    message = fails(Event, "bytes cannot be expressed")
    assert "(at x.payload)" in message


def test_pydantic_constraints_without_a_keyword_become_description_text() -> None:
    class Login(pydantic.BaseModel):
        user: str = pydantic.Field(description="The user name", pattern="^[a-z]+$", max_length=8)
        pin: decimal.Decimal = pydantic.Field(max_digits=4)

    schema = prop(Login)
    assert schema["properties"]["user"] == {
        "type": "string",
        "maxLength": 8,
        "description": "The user name Must match the regular expression ^[a-z]+$.",
    }
    assert schema["properties"]["pin"] == {
        "type": "string",
        "format": "decimal",
        "description": "Constraint: max_digits=4.",
    }


# --- Annotated ----------------------------------------------------------------------------------------


def test_annotated_string_and_pydantic_field_describe() -> None:
    assert prop(Annotated[str, "Absolute path"]) == {"type": "string", "description": "Absolute path"}
    assert prop(Annotated[int, pydantic.Field(description="Lines", title="Limit", examples=[10])]) == {
        "type": "integer",
        "description": "Lines",
        "title": "Limit",
        "examples": [10],
    }
    # Other metadata is ignored; the first description wins.
    assert prop(Annotated[str, object(), "first", "second"]) == {"type": "string", "description": "first"}


def test_annotated_description_on_oneof_and_any() -> None:
    assert prop(Annotated[str | None, "maybe"]) == {"oneOf": [STR, NULL], "description": "maybe"}
    assert prop(Annotated[Any, "anything"]) == {"description": "anything"}


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (Annotated[int, pydantic.Field(gt=0)], {"type": "integer", "exclusiveMinimum": 0}),
        (Annotated[str, annotated_types.MaxLen(3)], {"type": "string", "maxLength": 3}),
        (list[Annotated[int, annotated_types.Ge(0)]], {"type": "array", "items": {**INT, "minimum": 0}}),
        (
            Annotated[list[str], annotated_types.Len(1, 3)],
            {"type": "array", "items": STR, "minItems": 1, "maxItems": 3},
        ),
        (
            Annotated[float, annotated_types.Interval(gt=0, le=1), annotated_types.MultipleOf(0.25)],
            {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "multipleOf": 0.25},
        ),
        (Annotated[int, annotated_types.Lt(5)], {"type": "integer", "exclusiveMaximum": 5}),
        (
            Annotated[int | None, annotated_types.Ge(1)],
            {"oneOf": [{**INT, "minimum": 1}, NULL]},
        ),
        (
            Annotated[str, pydantic.Field(pattern="^a", min_length=2)],
            {"type": "string", "minLength": 2, "description": "Must match the regular expression ^a."},
        ),
    ],
)
def test_constraints_outside_a_model_become_keywords(hint: Any, expected: dict[str, Any]) -> None:
    assert prop(hint) == expected


@pytest.mark.parametrize(
    ("hint", "fragment"),
    [
        (Annotated[int, annotated_types.Predicate(lambda value: value % 2 == 0)], "no JSON Schema keyword"),
        (Annotated[decimal.Decimal, pydantic.Field(max_digits=3)], "max_digits=3"),
        (Annotated[str, annotated_types.Gt(0)], "applies to a number, not to this type"),
        (Annotated[int, annotated_types.MaxLen(3)], "applies to a string or array"),
        (Annotated[int, annotated_types.Gt(math.inf)], "must be a finite int or float"),
        (Annotated[int, pydantic.Field(pattern="^a")], "a pattern needs a string"),
        (Annotated[str, pydantic.Field(pattern="(")], "is not a valid regular expression"),
    ],
)
def test_constraints_that_cannot_be_enforced_or_do_not_apply_fail(hint: Any, fragment: str) -> None:
    fails(hint, fragment)


# --- parameters ---------------------------------------------------------------------------------------


def test_parameters_in_order_with_required_and_json_defaults() -> None:
    sentinel = object()

    def f(  # type: ignore[no-untyped-def]
        path: str,
        offset: int = 0,
        mode: Color = Color.RED,
        flags: tuple[str, ...] = ("a",),
        limit: int | None = None,
        ratio: float = float("nan"),
        opaque: Any = sentinel,
        *,
        strict: bool = False,
    ) -> None:
        pass

    parameters, output, description = schema_from_function(f)
    assert parameters == {
        "type": "object",
        "properties": {
            "path": STR,
            "offset": {"type": "integer", "default": 0},
            "mode": {"type": "string", "enum": ["red", "green"], "default": "red"},
            "flags": {"type": "array", "items": STR, "default": ["a"]},
            "limit": {"oneOf": [INT, NULL], "default": None},
            "ratio": NUM,  # NaN is not lossless JSON: no default annotation
            "opaque": {},
            "strict": {"type": "boolean", "default": False},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert output == NULL
    assert description == ""
    check(
        parameters,
        [{"path": "p"}, {"path": "p", "mode": "green", "limit": None}],
        [{}, {"path": "p", "x": 1}],
    )


def test_no_parameters() -> None:
    def f() -> str:
        return ""

    assert schema_from_function(f)[0] == {"type": "object", "properties": {}, "additionalProperties": False}


def test_var_positional_fails() -> None:
    def f(*items: str) -> None:
        pass

    with pytest.raises(TypeError, match=r'parameter "items": \*items cannot be expressed'):
        schema_from_function(f)


def test_var_keyword_opens_the_parameter_object() -> None:
    def f(a: int, **extra: Any) -> None:
        pass

    def g(**extra: int) -> None:
        pass

    parameters, _, _ = schema_from_function(f)
    assert parameters == {
        "type": "object",
        "properties": {"a": INT},
        "required": ["a"],
        "additionalProperties": True,
    }
    check(parameters, [{"a": 1, "b": [2]}], [{"b": 1}])
    with pytest.raises(TypeError, match=r'parameter "extra": \*\*extra: int cannot be expressed'):
        schema_from_function(g)


def test_context_parameters_are_injected_by_annotation_only() -> None:
    def f(ctx: ToolRunContext, a: int, execution: Annotated[ToolExecution, "the call"], context) -> None:  # type: ignore[no-untyped-def]
        pass

    spec = analyze_function(f)
    assert spec.parameters["properties"] == {"a": INT, "context": {}}
    assert spec.parameters["required"] == ["a", "context"]
    assert [(p.name, p.injected) for p in spec.params] == [
        ("ctx", True),
        ("a", False),
        ("execution", True),
        ("context", False),
    ]


def test_an_optional_context_is_not_injected_and_says_why() -> None:
    def f(ctx: ToolRunContext | None = None) -> None:
        pass

    with pytest.raises(TypeError, match=r'parameter "ctx": ToolRunContext is injected only into a parameter'):
        schema_from_function(f)


def test_string_annotations_resolve_and_unresolvable_ones_fail_naming_the_parameter() -> None:
    def f(a: "int", b: "list[Address]") -> "str":
        return ""

    parameters, output, _ = schema_from_function(f)
    assert parameters["properties"]["a"] == INT
    assert parameters["properties"]["b"]["items"]["description"] == "A postal address."
    assert output == STR

    def g(a: int, b: "Missing") -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(TypeError, match=r'parameter "b": cannot resolve the annotation \'Missing\''):
        schema_from_function(g)


def test_unsupported_parameter_message_names_function_parameter_and_hint() -> None:
    def read(path: bytes) -> None:
        pass

    with pytest.raises(TypeError) as caught:
        schema_from_function(read)
    assert str(caught.value).startswith(
        "@tool test_unsupported_parameter_message_names_function_parameter_and_hint.<locals>.read: "
        'parameter "path": bytes cannot be expressed'
    )


# --- output -------------------------------------------------------------------------------------------


def test_output_schema_from_the_return_annotation() -> None:
    def none() -> None:
        pass

    def missing():  # type: ignore[no-untyped-def]
        pass

    def awaitable() -> Awaitable[int]:
        raise NotImplementedError

    def coroutine() -> Coroutine[Any, Any, list[str]]:
        raise NotImplementedError

    async def native() -> Point | None:
        return None

    assert schema_from_function(none)[1] == NULL
    assert schema_from_function(missing)[1] == {}
    assert schema_from_function(awaitable)[1] == INT
    assert schema_from_function(coroutine)[1] == {"type": "array", "items": STR}
    output = schema_from_function(native)[1]
    assert output == {"oneOf": [prop(Point), NULL]}
    check(output, [None, {"x": 1.5}], [{"y": 1}])


def test_unsupported_return_value_fails() -> None:
    def f() -> complex:
        return 1j

    with pytest.raises(TypeError, match=r"^@tool .*\.f: return value: complex cannot be expressed"):
        schema_from_function(f)


# --- docstrings ---------------------------------------------------------------------------------------


def test_description_is_the_summary_and_args_describe_parameters() -> None:
    def f(path: str, offset: int = 0, limit: Annotated[int, "Max lines (annotation wins)"] = 100) -> str:
        """Read a file.

        Lines are numbered from 1.

        Args:
            path (str): Absolute path
                to the file.
            offset: First line.
            limit: Ignored: Annotated wins.
            missing: Not a parameter.

        Returns:
            str: The text.

        Raises:
            OSError: When unreadable.
        """
        return ""

    parameters, output, description = schema_from_function(f)
    assert description == "Read a file.\n\nLines are numbered from 1."
    assert parameters["properties"] == {
        "path": {"type": "string", "description": "Absolute path to the file."},
        "offset": {"type": "integer", "description": "First line.", "default": 0},
        "limit": {"type": "integer", "description": "Max lines (annotation wins)", "default": 100},
    }
    assert output == {"type": "string", "description": "The text."}


def test_parse_docstring_sections() -> None:
    doc = parse_docstring(
        """Summary line.

        More summary.

        Example:
            >>> f()

        Args:
            a: First.

                Second paragraph.
            *args: Rest.
            **kwargs: Options.
        """
    )
    assert doc.summary == "Summary line.\n\nMore summary."
    assert doc.params == {"a": "First.\n\nSecond paragraph.", "args": "Rest.", "kwargs": "Options."}
    assert doc.returns is None
    assert parse_docstring(None).summary == ""
    assert parse_docstring("   \n  One line.  \n").summary == "One line."


def test_parse_docstring_numpy_and_sphinx_styles() -> None:
    numpy = parse_docstring(
        """Numpy style.

        Parameters
        ----------
        a : int
            The a.
        b
            The b.

        Returns
        -------
        int
            The sum.
        """
    )
    assert numpy.summary == "Numpy style."
    assert numpy.params == {"a": "The a.", "b": "The b."}
    assert numpy.returns == "The sum."
    sphinx = parse_docstring(
        """Sphinx style.

        :param str a: The a,
            continued.
        :param b: The b.
        :returns: The sum.
        :raises ValueError: never.
        """
    )
    assert sphinx.summary == "Sphinx style."
    assert sphinx.params == {"a": "The a, continued.", "b": "The b."}
    assert sphinx.returns == "The sum."


FUTURE_MODULE = '''
from __future__ import annotations

import dataclasses
from typing import Annotated, NotRequired, Required, TypedDict

from toolrt._execution import ToolRunContext


class Options(TypedDict, total=False):
    name: Required[str]
    depth: int
    flag: NotRequired[Annotated[bool, "A flag"]]


class Strict(TypedDict):
    must: str
    may: NotRequired[int]


@dataclasses.dataclass
class Box:
    size: int
    options: Options | None = None


def handler(ctx: ToolRunContext, box: Box, strict: Strict) -> Box | None:
    """Handle a box."""
    return None
'''


def test_string_annotations_under_future_import(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python 3.11's TypedDict cannot see NotRequired inside string annotations when computing
    # __required_keys__; the explicit markers must still win.
    (tmp_path / "future_tools.py").write_text(FUTURE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import future_tools  # type: ignore[import-not-found]

    parameters, output, description = schema_from_function(future_tools.handler)
    assert description == "Handle a box."
    box = parameters["properties"]["box"]
    options = box["properties"]["options"]["oneOf"][0]
    assert options["required"] == ["name"]
    assert options["properties"]["flag"] == {"type": "boolean", "description": "A flag"}
    assert parameters["properties"]["strict"]["required"] == ["must"]
    assert list(parameters["properties"]) == ["box", "strict"]
    assert output == {"oneOf": [box, NULL]}
    check(parameters, [{"box": {"size": 1, "options": {"name": "n"}}, "strict": {"must": "m"}}])


def test_model_constraints_on_a_type_without_the_keyword_become_sentences() -> None:
    # Inside a model pydantic enforces them; the model still reads them (decision 0011).
    import datetime

    class Price(pydantic.BaseModel):
        amount: decimal.Decimal = pydantic.Field(gt=0)
        since: datetime.date = pydantic.Field(ge=datetime.date(2020, 1, 1))
        code: str = pydantic.Field(max_length=3, json_schema_extra={"x": 1})

    properties = prop(Price)["properties"]
    assert properties["amount"] == {"type": "string", "format": "decimal", "description": "Must be > 0."}
    assert properties["since"] == {
        "type": "string",
        "format": "date",
        "description": "Must be >= 2020-01-01.",
    }
    assert properties["code"] == {"type": "string", "maxLength": 3}
    # Outside a model nothing would enforce them, so the same hints are refused.
    fails(Annotated[decimal.Decimal, pydantic.Field(gt=0)], "applies to a number, not to this type")
    fails(
        Annotated[datetime.date, annotated_types.Ge(datetime.date(2020, 1, 1))],
        "the bound must be a finite int or float",
    )
