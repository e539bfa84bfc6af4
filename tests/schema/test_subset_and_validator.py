"""The raw JSON-Schema subset and its validator (contract §2.18 J1–J4; port of ``json-schema.spec.ts``).

Test names follow the upstream ``describe``/``it`` titles. Python adaptations (decided for the port):

* "present ``undefined``" has no Python spelling: a missing key is ``missing required property``
  and a key holding ``None`` is validated as JSON ``null``.
* JavaScript exotic objects map to Python non-JSON values: ``Map``/``Date`` → ``MappingProxyType``,
  ``datetime``, ``set``; symbol keys → non-``str`` keys; a hostile getter/proxy → a ``dict``/``list``
  subclass whose ``items()``/``__getitem__``/``__iter__`` raises; "another realm" → other JSON-shaped
  containers (``FrozenDict``, ``OrderedDict``, tuples).
* ``keeps assertNever as a forged-schema backstop``: Python has no type casts to forge a schema
  past the validator's compile step, because :func:`compile_validator` asserts the subset before it
  compiles; a forged ``type`` is therefore rejected with :class:`JsonSchemaError` before any value
  is read (a stronger backstop than upstream's, which fires only when the walk reaches the node).
"""

from __future__ import annotations

import collections
import datetime
import enum
import math
import types
from typing import Any

import pytest

from toolrt._errors import JsonSchemaError
from toolrt._json import FrozenDict, FrozenList, snapshot_json
from toolrt.schema import (
    Validator,
    assert_object_json_schema,
    assert_supported_json_schema,
    compile_validator,
    json_schema_violations,
    validate_json_schema_value,
)
from toolrt.schema import _validator as validator_module

UNKNOWN = (
    " is not a supported keyword"
    " (subset: type/oneOf/properties/required/additionalProperties/items/enum/const,"
    " minimum/maximum/exclusiveMinimum/exclusiveMaximum/multipleOf, minLength/maxLength,"
    " minItems/maxItems/uniqueItems + annotations)"
)


def violations_of(schema: object, *, object_root: bool = False) -> list[str]:
    """The violations an assert raises with; fails the test if the schema is accepted."""
    with pytest.raises(JsonSchemaError) as caught:
        if object_root:
            assert_object_json_schema(schema)
        else:
            assert_supported_json_schema(schema)
    assert str(caught.value) == "unsupported JSON schema: " + "; ".join(caught.value.violations)
    return list(caught.value.violations)


def asserted(schema: dict[str, Any]) -> dict[str, Any]:
    assert_supported_json_schema(schema)
    return schema


class HostileDict(dict[str, Any]):
    """The Python analogue of a throwing getter/proxy trap: every protocol read raises."""

    def items(self) -> Any:
        raise RuntimeError("items trap")

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("getitem trap")

    def keys(self) -> Any:
        raise RuntimeError("keys trap")


class GetterDict(dict[str, Any]):
    """Lists its keys fine, but reading a value raises (a throwing enumerable getter)."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("getter exploded")


class HostileList(list[Any]):
    def __iter__(self) -> Any:
        raise RuntimeError("iteration trap")


def deep_one_of(depth: int, leaf: dict[str, Any]) -> dict[str, Any]:
    schema = leaf
    for _ in range(depth):
        schema = {"oneOf": [{"type": "null"}, schema]}
    return schema


# --- describe: the enforced raw JSON Schema subset -----------------------------------------------


def test_accepts_every_json_root_and_every_supported_node() -> None:
    for schema in [
        {"type": "string"},
        {"type": "number"},
        {"type": "integer"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"type": "string"}},
        {
            "type": "object",
            "properties": {
                "nested": {"type": "object", "properties": {}, "additionalProperties": False},
                "free": {},
            },
            "required": ["nested"],
            "additionalProperties": True,
        },
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"description": "any JSON", "title": "JSON", "default": None, "examples": [1, "x"]},
    ]:
        assert json_schema_violations(schema) == [], schema
        assert_supported_json_schema(schema)


def test_retains_an_object_root_guard_only_at_consumers_that_need_it() -> None:
    assert_object_json_schema({"type": "object"})
    for schema in [
        {},
        {"type": "string"},
        {"type": "array"},
        {"oneOf": [{"type": "string"}, {"type": "null"}]},
    ]:
        assert_supported_json_schema(schema)  # fine for tools...
        assert violations_of(schema, object_root=True) == [  # ...not for structured output
            'schema.type must be "object" (structured output is object-rooted)'
        ]
    # Subset violations win over the root guard (the guard only runs on a supported schema).
    assert violations_of({"type": "tuple"}, object_root=True) == [
        "schema.type must be one of object/array/string/number/integer/boolean/null"
    ]


def test_rejects_non_schema_nodes_unknown_types_and_type_arrays() -> None:
    assert violations_of(None) == ["schema must be a schema object"]
    assert violations_of([]) == ["schema must be a schema object"]
    assert violations_of("no") == ["schema must be a schema object"]
    assert violations_of({"type": "tuple"}) == [
        "schema.type must be one of object/array/string/number/integer/boolean/null"
    ]
    assert violations_of({"type": ["string", "null"]}) == [
        "schema.type must be a single type string (type arrays are not supported)"
    ]
    assert violations_of({"type": ("string", "null")}) == [
        "schema.type must be a single type string (type arrays are not supported)"
    ]
    assert violations_of({"type": None}) == [
        "schema.type must be one of object/array/string/number/integer/boolean/null"
    ]


def test_enforces_one_of_vocabulary_and_its_minimum_branch_count() -> None:
    assert violations_of({"oneOf": []}) == ["schema.oneOf must be an array of at least two schemas"]
    assert violations_of({"oneOf": [{}]}) == ["schema.oneOf must be an array of at least two schemas"]
    assert violations_of({"oneOf": "x"}) == ["schema.oneOf must be an array of at least two schemas"]
    assert violations_of({"type": "string", "oneOf": [{}, {}]}) == [
        "schema cannot declare both type and oneOf"
    ]
    assert violations_of({"oneOf": [{"type": "string"}, {"type": "number"}], "items": {}}) == [
        "schema.items is not supported beside oneOf"
    ]
    assert violations_of({"oneOf": [{"type": "string"}, {"type": "weird"}]})[0].startswith(
        "schema.oneOf[1].type"
    )
    # Branch violations come first, the sibling keywords after them, in keyword order.
    assert violations_of({"const": 1, "oneOf": [{}, {"type": "weird"}], "properties": {}}) == [
        "schema.oneOf[1].type must be one of object/array/string/number/integer/boolean/null",
        "schema.properties is not supported beside oneOf",
        "schema.const is not supported beside oneOf",
    ]


def test_rejects_unknown_and_misplaced_keywords_without_accepted_then_ignored_behavior() -> None:
    # minimum/maxLength joined the subset (decision 0011); these keywords stay outside it.
    for keyword in ["anyOf", "allOf", "not", "pattern", "minProperties", "contains", "$ref"]:
        assert violations_of({"type": "object", keyword: []}) == [f"schema.{keyword}{UNKNOWN}"]
    assert violations_of({"type": "object", "items": {}}) == [
        'schema.items is not supported on type "object"'
    ]
    assert violations_of({"type": "array", "properties": {}}) == [
        'schema.properties is not supported on type "array"'
    ]
    assert violations_of({"type": "object", "enum": ["x"]}) == [
        'schema.enum is not supported on type "object"'
    ]
    assert violations_of({"type": "array", "const": None}) == [
        'schema.const is not supported on type "array"'
    ]
    assert violations_of(
        {
            "properties": {},
            "required": [],
            "additionalProperties": True,
            "items": {},
            "enum": [],
            "const": None,
        }
    ) == [
        "schema.properties requires type or oneOf",
        "schema.required requires type or oneOf",
        "schema.additionalProperties requires type or oneOf",
        "schema.items requires type or oneOf",
        "schema.enum requires type or oneOf",
        "schema.const requires type or oneOf",
    ]


def test_reports_every_independent_schema_violation() -> None:
    assert violations_of(
        {
            "type": "object",
            "pattern": "x",
            "properties": {"a": {"type": "weird"}, "b": {"type": "string", "minimum": 1}},
        }
    ) == [
        f"schema.pattern{UNKNOWN}",
        "schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
        'schema.properties.b.minimum is not supported on type "string"',
    ]


def test_validates_object_properties_required_names_and_openness() -> None:
    assert violations_of({"type": "object", "properties": []}) == [
        "schema.properties must be an object of schemas"
    ]
    assert violations_of({"type": "object", "properties": {"a": "x"}}) == [
        "schema.properties.a must be a schema object"
    ]
    assert violations_of({"type": "object", "required": "a"}) == [
        "schema.required must be an array of strings"
    ]
    assert violations_of({"type": "object", "required": [1]}) == [
        "schema.required must be an array of strings"
    ]
    assert violations_of({"type": "object", "properties": {}, "required": ["missing"]}) == [
        'schema.required names "missing" which is not in properties'
    ]
    assert violations_of({"type": "object", "additionalProperties": "yes"}) == [
        "schema.additionalProperties must be a boolean or a schema"
    ]
    assert violations_of({"type": "object", "additionalProperties": 1}) == [
        "schema.additionalProperties must be a boolean or a schema"
    ]
    assert violations_of({"type": "object", "properties": None}) == [
        "schema.properties must be an object of schemas"
    ]
    assert violations_of({"type": "object", "properties": None, "required": ["missing"]}) == [
        "schema.properties must be an object of schemas",
        'schema.required names "missing" which is not in properties',
    ]
    # Property violations come before the object's own required/additionalProperties checks.
    assert violations_of(
        {"type": "object", "additionalProperties": 0, "properties": {"a": {"type": "x"}}, "required": ["b"]}
    ) == [
        "schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
        'schema.required names "b" which is not in properties',
        "schema.additionalProperties must be a boolean or a schema",
    ]


def test_requires_type_correct_scalar_enum_and_const_values() -> None:
    for schema in [
        {"type": "string", "enum": ["a"], "const": "a"},
        {"type": "number", "enum": [1.5], "const": 1.5},
        {"type": "number", "enum": [1, 2.5], "const": 1.0},
        {"type": "integer", "enum": [1], "const": 1},
        {"type": "integer", "enum": [2.0, 2**60], "const": 2},
        {"type": "boolean", "enum": [True], "const": True},
        {"type": "null", "enum": [None], "const": None},
        {"type": "string", "enum": ("a", "b")},
    ]:
        assert json_schema_violations(schema) == [], schema

    assert violations_of({"type": "string", "enum": []}) == [
        "schema.enum must be a non-empty array of string values"
    ]
    assert violations_of({"type": "number", "enum": ["1"]}) == [
        "schema.enum must be a non-empty array of number values"
    ]
    assert violations_of({"type": "integer", "enum": [1.5]}) == [
        "schema.enum must be a non-empty array of integer values"
    ]
    assert violations_of({"type": "number", "enum": [math.nan]}) == [
        "schema.enum must be a non-empty array of number values"
    ]
    assert violations_of({"type": "number", "enum": [True]}) == [
        "schema.enum must be a non-empty array of number values"
    ]
    assert violations_of({"type": "integer", "enum": [2**53 + 1]}) == [
        "schema.enum must be a non-empty array of integer values"
    ]
    assert violations_of({"type": "number", "const": -0.0}) == ["schema.const must be a number value"]
    assert violations_of({"type": "number", "const": math.inf}) == ["schema.const must be a number value"]
    assert violations_of({"type": "boolean", "const": 1}) == ["schema.const must be a boolean value"]
    assert violations_of({"type": "integer", "const": True}) == ["schema.const must be a integer value"]
    assert violations_of({"type": "string", "enum": None}) == [
        "schema.enum must be a non-empty array of string values"
    ]
    assert violations_of({"type": "string", "enum": "ab"}) == [
        "schema.enum must be a non-empty array of string values"
    ]
    assert violations_of({"type": "string", "enum": ["a"], "const": "b"}) == [
        "schema.const must be one of schema.enum when both are declared"
    ]
    # Type-correct comparisons: True is not the 1 of an integer enum, and 1.0 is the 1 of one.
    assert json_schema_violations({"type": "integer", "enum": [1], "const": 1.0}) == []
    assert violations_of({"type": "boolean", "enum": [False], "const": True}) == [
        "schema.const must be one of schema.enum when both are declared"
    ]


def test_validates_annotation_types_and_lossless_json_payloads() -> None:
    assert violations_of({"description": 1}) == ["schema.description must be a string"]
    assert violations_of({"title": 1}) == ["schema.title must be a string"]
    for key, value in [
        ("default", object()),
        ("examples", [object()]),
        ("default", math.inf),
        ("default", -0.0),
        ("examples", datetime.datetime(1970, 1, 1)),
        ("examples", {1, 2}),
        ("default", b"bytes"),
        ("default", {1: "non-str key"}),
        ("default", 2**53 + 1),
    ]:
        assert violations_of({key: value}) == [f"schema.{key} annotation must be lossless JSON data"], (
            key,
            value,
        )
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert violations_of({"default": cyclic}) == ["schema.default annotation must be lossless JSON data"]
    assert violations_of({"examples": HostileList([1])}) == [
        "schema.examples annotation must be lossless JSON data"
    ]
    # A lossy description is reported both as lossy data and as a non-string.
    assert violations_of({"description": math.nan}) == [
        "schema.description annotation must be lossless JSON data",
        "schema.description must be a string",
    ]


def test_accepts_lossless_annotation_containers_from_another_javascript_realm() -> None:
    schema = {
        "type": "object",
        "default": collections.OrderedDict(x=1),
        "examples": ([FrozenDict(ok=True)], FrozenList([1])),
        "title": "titled",
    }
    assert_supported_json_schema(schema)
    # A whole schema built from frozen snapshots is a schema too.
    assert_supported_json_schema(snapshot_json({"type": "array", "items": {"type": "string"}}))


def test_rejects_cyclic_exotic_schema_structure_but_permits_sibling_reuse() -> None:
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    assert violations_of(cyclic) == ["schema.properties.self is circular"]
    through_items: dict[str, Any] = {"type": "array"}
    through_items["items"] = {"oneOf": [{"type": "null"}, through_items]}
    assert violations_of(through_items) == ["schema.items.oneOf[1] is circular"]
    leaf = {"type": "string"}
    assert_supported_json_schema({"type": "object", "properties": {"a": leaf, "b": leaf}})
    assert_supported_json_schema({"oneOf": [leaf, leaf]})
    assert violations_of({"type": "object", "properties": types.MappingProxyType({})}) == [
        "schema.properties must be an object of schemas"
    ]
    assert violations_of({"type": "object", "properties": {"at": datetime.date(1970, 1, 1)}}) == [
        "schema.properties.at must be a schema object"
    ]
    assert violations_of(types.MappingProxyType({"type": "string"})) == ["schema must be a schema object"]
    assert violations_of({"type": "string", 1: "symbol-like key"}) == ["schema must be a schema object"]
    assert violations_of(HostileDict(type="string")) == ["schema must be a schema object"]
    assert violations_of(GetterDict(type="string")) == ["schema must be a schema object"]
    assert violations_of({"oneOf": HostileList([{}, {}])}) == [
        "schema.oneOf must be an array of at least two schemas"
    ]


def test_asserts_deeply_nested_raw_unions_without_using_the_javascript_call_stack() -> None:
    assert json_schema_violations(deep_one_of(5000, {"type": "string"})) == []
    # The violation at the bottom is reported with its full path, without recursion.
    violations = violations_of(deep_one_of(5000, {"type": "weird"}))
    assert violations == [
        "schema"
        + ".oneOf[1]" * 5000
        + ".type must be one of "
        + "/".join(["object", "array", "string", "number", "integer", "boolean", "null"])
    ]
    nested: dict[str, Any] = {"type": "string"}
    for _ in range(20_000):
        nested = {"type": "object", "properties": {"p": nested}}
    assert json_schema_violations(nested) == []


def test_uses_own_property_semantics_for_required_declarations() -> None:
    # Names of dict methods/attributes are not declared properties.
    for name in ["toString", "keys", "__class__", "get"]:
        assert violations_of({"type": "object", "properties": {}, "required": [name]}) == [
            f'schema.required names "{name}" which is not in properties'
        ]


# --- describe: validateJsonSchemaValue -----------------------------------------------------------


def test_validates_scalar_array_object_and_null_roots() -> None:
    assert validate_json_schema_value(asserted({"type": "string"}), "x") == []
    assert validate_json_schema_value(asserted({"type": "number"}), 1.5) == []
    assert validate_json_schema_value(asserted({"type": "integer"}), 2) == []
    assert validate_json_schema_value(asserted({"type": "boolean"}), True) == []
    assert validate_json_schema_value(asserted({"type": "null"}), None) == []
    assert validate_json_schema_value(asserted({"type": "array", "items": {"type": "string"}}), ["x"]) == []
    assert validate_json_schema_value(asserted({"type": "array", "items": {"type": "string"}}), ("x",)) == []
    assert validate_json_schema_value(asserted({"type": "object"}), {"x": 1}) == []
    assert validate_json_schema_value(asserted({"type": "object"}), FrozenDict(x=1)) == []
    assert validate_json_schema_value(asserted({"type": "object"}), collections.OrderedDict(x=1)) == []


def test_rejects_wrong_scalar_types_and_lossy_numbers() -> None:
    def check(schema: dict[str, Any], value: object) -> list[str]:
        return validate_json_schema_value(asserted(schema), value)

    assert check({"type": "string"}, 1) == ['"value" must be a string']
    assert check({"type": "number"}, "1") == ['"value" must be a number']
    assert check({"type": "number"}, math.nan) == ['"value" must be a finite JSON number']
    assert check({"type": "number"}, math.inf) == ['"value" must be a finite JSON number']
    assert check({"type": "number"}, -0.0) == ['"value" must be a finite JSON number']
    assert check({"type": "number"}, 2**53 + 1) == ['"value" must be a finite JSON number']
    assert check({"type": "number"}, True) == ['"value" must be a number']
    assert check({"type": "integer"}, 1.5) == ['"value" must be an integer']
    assert check({"type": "integer"}, True) == ['"value" must be an integer']
    assert check({"type": "integer"}, -0.0) == ['"value" must be an integer']
    assert check({"type": "integer"}, math.inf) == ['"value" must be an integer']
    assert check({"type": "integer"}, 2**53 + 1) == ['"value" must be an integer']
    assert check({"type": "boolean"}, "true") == ['"value" must be a boolean']
    assert check({"type": "boolean"}, 1) == ['"value" must be a boolean']
    assert check({"type": "null"}, 0) == ['"value" must be null']
    # JavaScript has one number type: 1.0 is an integer, and big exact ints are fine.
    assert check({"type": "integer"}, 1.0) == []
    assert check({"type": "integer"}, 2**60) == []
    assert check({"type": "number"}, 1e300) == []
    assert check({"type": "integer"}, 1e300) == []


def test_accepts_scalar_subclasses_as_their_json_value() -> None:
    class Color(enum.StrEnum):
        RED = "red"

    class Size(enum.IntEnum):
        ONE = 1

    assert validate_json_schema_value({"type": "string", "enum": ["red"]}, Color.RED) == []
    assert validate_json_schema_value({"type": "integer", "const": 1}, Size.ONE) == []
    assert validate_json_schema_value({"type": "integer", "const": 2}, Size.ONE) == ['"value" must be 2']
    assert validate_json_schema_value({"type": "boolean"}, Size.ONE) == ['"value" must be a boolean']


def test_enforces_scalar_enum_and_const_together() -> None:
    schema = asserted({"type": "string", "enum": ["a", "b"], "const": "a"})
    assert validate_json_schema_value(schema, "a") == []
    assert validate_json_schema_value(schema, "c") == ['"value" must be one of ["a","b"]']
    assert validate_json_schema_value(schema, "b") == ['"value" must be "a"']


def test_quotes_enum_and_const_values_the_way_json_stringify_does() -> None:
    numbers = asserted({"type": "number", "enum": [1.0, 1e21, 1e-7, 0.000001, 2.5]})
    assert validate_json_schema_value(numbers, 3) == ['"value" must be one of [1,1e+21,1e-7,0.000001,2.5]']
    assert validate_json_schema_value(numbers, 1) == []  # 1 is the 1.0 entry
    assert validate_json_schema_value(asserted({"type": "integer", "const": 2.0}), 3) == ['"value" must be 2']
    strings = asserted({"type": "string", "enum": ['say "hi"\n', "a/b\u2028é", "\ud800"]})
    assert validate_json_schema_value(strings, "x") == [
        '"value" must be one of ["say \\"hi\\"\\n","a/b\u2028é","\\ud800"]'
    ]
    assert validate_json_schema_value(asserted({"type": "null", "const": None}), 0) == [
        '"value" must be null'
    ]
    assert validate_json_schema_value(asserted({"type": "boolean", "enum": [False]}), True) == [
        '"value" must be one of [false]'
    ]


def test_validates_object_requiredness_nested_values_and_raw_open_defaults() -> None:
    open_schema = asserted(
        {
            "type": "object",
            "properties": {
                "file": {"type": "string"},
                "nested": {
                    "type": "object",
                    "properties": {"line": {"type": "integer"}},
                    "required": ["line"],
                    "additionalProperties": False,
                },
            },
            "required": ["file"],
        }
    )
    assert validate_json_schema_value(open_schema, {"file": "a", "extra": [1], "nested": {"line": 2}}) == []
    assert validate_json_schema_value(open_schema, {"nested": {"line": 1}}) == [
        'missing required property "value.file"'
    ]
    assert validate_json_schema_value(open_schema, {"file": 1, "nested": {}}) == [
        '"value.file" must be a string',
        'missing required property "value.nested.line"',
    ]
    assert validate_json_schema_value(open_schema, {"file": "a", "nested": {"line": 1, "extra": True}}) == [
        '"value.nested.extra" is not a declared property (additionalProperties: false)'
    ]
    assert validate_json_schema_value(open_schema, "x") == ['"value" must be an object']
    assert validate_json_schema_value(open_schema, ["file"]) == ['"value" must be an object']


def test_reports_object_violations_in_upstream_order_with_containers_and_scalars_interleaved() -> None:
    schema = asserted(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "a": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                "b": {"type": "string"},
                "c": {"type": "array", "items": {"type": "integer"}},
                "d": {"type": "boolean"},
            },
            "required": ["d", "a"],
        }
    )
    value = {"zz": 1, "c": [1, "2", 3.5], "b": 5, "a": {}, "yy": None}
    assert validate_json_schema_value(schema, value) == [
        'missing required property "value.d"',
        'missing required property "value.a.x"',
        '"value.b" must be a string',
        '"value.c[1]" must be an integer',
        '"value.c[2]" must be an integer',
        '"value.zz" is not a declared property (additionalProperties: false)',
        '"value.yy" is not a declared property (additionalProperties: false)',
    ]


def test_treats_a_none_value_as_present_null_then_rejects_other_lossy_objects() -> None:
    # Python adaptation of "treats present undefined as missing when required": None is null.
    required = asserted({"type": "object", "properties": {"x": {}}, "required": ["x"]})
    assert validate_json_schema_value(required, {"x": None}) == []
    assert validate_json_schema_value(required, {}) == ['missing required property "value.x"']
    typed = asserted({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]})
    assert validate_json_schema_value(typed, {"x": None}) == ['"value.x" must be a string']
    bare = asserted({"type": "object"})
    for lossy in [{"x": object()}, {"x": math.nan}, {"x": [-0.0]}, {1: "non-str key"}, {"x": {1, 2}}]:
        assert validate_json_schema_value(bare, lossy) == ['"value" must be a lossless JSON object'], lossy
    assert validate_json_schema_value(bare, datetime.datetime(1970, 1, 1)) == ['"value" must be an object']
    # A non-str key is invisible to the closed-object check (like a JS symbol) but still lossy.
    closed = asserted({"type": "object", "additionalProperties": False})
    assert validate_json_schema_value(closed, {1: "x"}) == ['"value" must be a lossless JSON object']


def test_returns_a_violation_instead_of_throwing_for_a_container_with_a_hostile_getter() -> None:
    schema = asserted(
        {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    )
    assert validate_json_schema_value(schema, GetterDict(answer=42)) == [
        '"value" must be a lossless JSON value'
    ]
    assert validate_json_schema_value(schema, HostileDict(answer=42)) == [
        '"value" must be a lossless JSON value'
    ]
    # Contained at the nearest frame: the outer object still reports its other properties.
    outer = asserted(
        {
            "type": "object",
            "properties": {"inner": {"type": "object"}, "items": {"type": "array"}, "n": {"type": "string"}},
        }
    )
    assert validate_json_schema_value(
        outer, {"inner": HostileDict(a=1), "items": HostileList([1]), "n": 1}
    ) == [
        '"value.inner" must be a lossless JSON value',
        '"value.items" must be a lossless JSON value',
        '"value.n" must be a string',
    ]
    assert validate_json_schema_value({}, HostileList([1])) == ['"value" must be a lossless JSON value']


def test_validates_dense_arrays_per_index_and_rejects_lossy_arrays() -> None:
    schema = asserted({"type": "array", "items": {"type": "integer"}})
    assert validate_json_schema_value(schema, [1, 2]) == []
    assert validate_json_schema_value(schema, [1, 1.5]) == ['"value[1]" must be an integer']
    assert validate_json_schema_value(schema, "x") == ['"value" must be an array']
    assert validate_json_schema_value(schema, {1, 2}) == ['"value" must be an array']
    assert validate_json_schema_value(schema, {"0": 1}) == ['"value" must be an array']
    untyped = asserted({"type": "array"})
    assert validate_json_schema_value(untyped, [1, {"a": [None]}, "x"]) == []
    assert validate_json_schema_value(untyped, [1, math.nan]) == [
        '"value" must be a dense lossless JSON array'
    ]
    assert validate_json_schema_value(untyped, [{"deep": [object()]}]) == [
        '"value" must be a dense lossless JSON array'
    ]


def test_validates_exact_one_one_of_semantics_including_overlap() -> None:
    disjoint = asserted({"oneOf": [{"type": "string"}, {"type": "number"}]})
    assert validate_json_schema_value(disjoint, "x") == []
    assert validate_json_schema_value(disjoint, None) == [
        '"value" must match exactly one oneOf branch (matched 0)'
    ]
    overlap = asserted({"oneOf": [{"type": "number"}, {"type": "integer"}]})
    assert validate_json_schema_value(overlap, 1) == [
        '"value" must match exactly one oneOf branch (matched 2)'
    ]
    assert validate_json_schema_value(overlap, 1.5) == []
    objects = asserted(
        {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"type": "string", "const": "a"}},
                    "required": ["kind"],
                },
                {
                    "type": "object",
                    "properties": {"kind": {"type": "string", "const": "b"}},
                    "required": ["kind"],
                },
                {},
            ]
        }
    )
    assert validate_json_schema_value(objects, {"kind": "c"}) == []  # only the open {} branch
    assert validate_json_schema_value(objects, {"kind": "a"}) == [
        '"value" must match exactly one oneOf branch (matched 2)'
    ]
    # A oneOf nested under an object reports at the property's path.
    wrapped = asserted({"type": "object", "properties": {"v": overlap}})
    assert validate_json_schema_value(wrapped, {"v": 2}, "") == [
        '"v" must match exactly one oneOf branch (matched 2)'
    ]


def test_validates_deeply_nested_exact_one_unions_without_using_the_javascript_call_stack() -> None:
    validator = compile_validator(deep_one_of(5000, {"type": "string"}))
    assert validator.validate("x") == []
    assert validator.validate(1) == ['"value" must match exactly one oneOf branch (matched 0)']
    objects = deep_one_of(5000, {"type": "object", "properties": {"a": {"type": "integer"}}})
    assert validate_json_schema_value(objects, {"a": 1}) == []
    assert validate_json_schema_value(objects, {"a": "x"}) == [
        '"value" must match exactly one oneOf branch (matched 0)'
    ]


def test_validates_a_100_000_deep_value_without_using_the_call_stack() -> None:
    deep_list: Any = "leaf"
    for _ in range(100_000):
        deep_list = [deep_list]
    assert validate_json_schema_value({}, deep_list) == []
    assert validate_json_schema_value({"type": "array"}, deep_list) == []
    assert validate_json_schema_value({"type": "array", "items": {}}, deep_list) == []
    deep_dict: dict[str, Any] = {}
    cursor = deep_dict
    for _ in range(100_000):
        cursor["a"] = {}
        cursor = cursor["a"]
    cursor["a"] = math.nan
    assert validate_json_schema_value({"type": "object"}, deep_dict) == [
        '"value" must be a lossless JSON object'
    ]
    assert validate_json_schema_value({}, deep_dict) == ['"value" must be a lossless JSON value']


def test_validates_a_deep_schema_against_a_deep_value_and_reports_the_full_path() -> None:
    depth = 10_000
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = "x"
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
        value = [value]
    assert validate_json_schema_value(schema, value) == ['"value' + "[0]" * depth + '" must be an integer']
    objects: dict[str, Any] = {"type": "string"}
    arguments: Any = 1
    for _ in range(depth):
        objects = {"type": "object", "properties": {"k": objects}, "required": ["k"]}
        arguments = {"k": arguments}
    assert validate_json_schema_value(objects, arguments, "") == [
        '"' + ".".join(["k"] * depth) + '" must be a string'
    ]


def test_an_unconstrained_schema_accepts_only_lossless_json_values() -> None:
    any_json = asserted({})
    value: object
    for value in [None, True, 1, 1.5, "x", [1], {"x": None}, (1, "a"), 2**60, FrozenDict(a=FrozenList([1]))]:
        assert validate_json_schema_value(any_json, value) == [], value
    for value in [
        lambda: 1,
        math.inf,
        -0.0,
        math.nan,
        {1, 2},
        b"x",
        2**53 + 1,
        object(),
        {1: "x"},
        [datetime.date(1970, 1, 1)],
        types.MappingProxyType({}),
    ]:
        assert validate_json_schema_value(any_json, value) == ['"value" must be a lossless JSON value'], value
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert validate_json_schema_value(any_json, cyclic) == ['"value" must be a lossless JSON value']
    assert validate_json_schema_value(any_json, HostileList([1])) == ['"value" must be a lossless JSON value']
    shared = [1]
    assert validate_json_schema_value(any_json, {"a": shared, "b": shared}) == []  # sibling reuse is no cycle


def test_detects_a_cycle_through_a_declared_property() -> None:
    schema = asserted({"type": "object", "properties": {"self": {"type": "object"}}})
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert validate_json_schema_value(schema, cyclic) == ['"value.self" must be a lossless JSON object']
    listed: list[Any] = []
    listed.append(listed)
    assert validate_json_schema_value({"type": "array", "items": {"type": "array"}}, listed) == [
        '"value[0]" must be a dense lossless JSON array'
    ]


def test_uses_own_properties_for_requiredness_recursion_and_closed_object_checks() -> None:
    required = asserted({"type": "object", "properties": {"keys": {"type": "string"}}, "required": ["keys"]})
    assert validate_json_schema_value(required, {}) == ['missing required property "value.keys"']
    closed = asserted({"type": "object", "additionalProperties": False})
    assert validate_json_schema_value(closed, {"get": 1}) == [
        '"value.get" is not a declared property (additionalProperties: false)'
    ]
    declared = asserted({"type": "object", "properties": {"__class__": {"type": "string"}}})
    assert validate_json_schema_value(declared, {}) == []


def test_keeps_a_backstop_against_a_forged_schema() -> None:
    # Python adaptation of "keeps assertNever as a forged-schema backstop" (see module docstring).
    with pytest.raises(JsonSchemaError) as caught:
        validate_json_schema_value({"type": "tuple"}, 1)
    assert caught.value.violations == (
        "schema.type must be one of object/array/string/number/integer/boolean/null",
    )
    with pytest.raises(JsonSchemaError):
        compile_validator({"type": "string", "pattern": "^a"})  # never accepted, then ignored


# --- Python-specific contract of the compiled validator ------------------------------------------


def test_labels_an_empty_root_path_as_arguments_and_drops_the_leading_dot() -> None:
    schema = asserted(
        {
            "type": "object",
            "properties": {
                "": {"type": "string"},
                "list": {"type": "array", "items": {"type": "string"}},
                "x": {},
            },
            "required": ["x"],
            "additionalProperties": False,
        }
    )
    validator = compile_validator(schema)
    assert validator.validate(5, "") == ['"arguments" must be an object']
    assert validator.validate({"": 1, "list": [1], "y": 0}, "") == [
        'missing required property "x"',
        '"arguments" must be a string',  # the property named "" has the empty path
        '"list[0]" must be a string',
        '"y" is not a declared property (additionalProperties: false)',
    ]
    assert validator.validate({"": 1}, "out") == [
        'missing required property "out.x"',
        '"out." must be a string',
    ]
    assert compile_validator({"type": "string"}).validate(1, "") == ['"arguments" must be a string']
    assert compile_validator({"type": "array", "items": {"type": "string"}}).validate([1], "") == [
        '"[0]" must be a string'
    ]


def test_compile_validator_rejects_an_unsupported_schema_with_every_violation() -> None:
    with pytest.raises(JsonSchemaError) as caught:
        compile_validator({"type": "object", "properties": {"a": {"anyOf": []}}, "required": ["b"]})
    assert caught.value.violations == (
        f"schema.properties.a.anyOf{UNKNOWN}",
        'schema.required names "b" which is not in properties',
    )
    assert isinstance(compile_validator({"type": "string"}), Validator)
    assert compile_validator(schema := {"type": "null"}).schema is schema


def test_shares_the_compiled_node_of_a_reused_subschema() -> None:
    leaf = {"type": "string", "enum": ["a"]}
    validator = compile_validator({"type": "object", "properties": {"x": leaf, "y": leaf}})
    assert validator.validate({"x": "a", "y": "b"}) == ['"value.y" must be one of ["a"]']
    root = validator._root
    assert root.properties[0][1] is root.properties[1][1]


def test_validate_json_schema_value_compiles_each_schema_object_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real_compile = validator_module._compile

    def counting(schema: object) -> Any:
        calls.append(schema)
        return real_compile(schema)

    monkeypatch.setattr(validator_module, "_compile", counting)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for _ in range(5):
        assert validate_json_schema_value(schema, {"n": "x"}) == ['"value.n" must be an integer']
    assert calls == [schema]
    equal_but_distinct = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert validate_json_schema_value(equal_but_distinct, {"n": 1}) == []
    assert len(calls) == 2  # identity-keyed: an equal copy is a different schema


def test_validate_json_schema_value_stays_correct_past_the_cache_capacity() -> None:
    schemas = [{"type": "string", "const": str(index)} for index in range(400)]
    for _ in range(2):
        for index, schema in enumerate(schemas):
            assert validate_json_schema_value(schema, str(index)) == []
            assert validate_json_schema_value(schema, "other") == [f'"value" must be "{index}"']
    assert len(validator_module._cache) <= validator_module._CACHE_SIZE


# --- additionalProperties: <schema> (decision 0010: dict[str, X]) -------------------------------


def test_a_schema_valued_additional_properties_is_walked_and_a_non_schema_is_refused() -> None:
    assert json_schema_violations({"type": "object", "additionalProperties": {"type": "integer"}}) == []
    assert violations_of({"type": "object", "additionalProperties": {"type": "dict"}}) == [
        "schema.additionalProperties.type must be one of object/array/string/number/integer/boolean/null"
    ]
    assert violations_of({"type": "object", "additionalProperties": [{"type": "integer"}]}) == [
        "schema.additionalProperties must be a boolean or a schema"
    ]
    assert violations_of({"type": "array", "additionalProperties": {"type": "integer"}}) == [
        'schema.additionalProperties is not supported on type "array"'
    ]


def test_undeclared_values_are_validated_against_additional_properties_at_their_path() -> None:
    validator = compile_validator(
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": {"type": "object", "additionalProperties": {"type": "integer"}},
        }
    )
    assert validator.validate(path="", value={"name": "x", "a": {"b": 1}}) == []
    # Scalar checks come out with the tail, container children before it (like declared ones).
    assert validator.validate(path="", value={"name": "x", "a": {"b": "1"}, "c": 3}) == [
        '"a.b" must be an integer',
        '"c" must be an object',
    ]
    # The declared property is checked against its own schema, not additionalProperties.
    assert validator.validate(path="", value={"name": 1}) == ['"name" must be a string']
    # Undeclared values covered by the schema are still lossless-checked.
    assert validator.validate(path="", value={"a": {"b": float("nan")}}) == ['"a.b" must be an integer']


# --- decision 0011: bounds and format --------------------------------------------------------------


def test_bound_keywords_are_accepted_on_their_own_types_only() -> None:
    assert_supported_json_schema(
        {
            "type": "object",
            "properties": {
                "n": {"type": "number", "minimum": 0, "exclusiveMaximum": 1.5, "multipleOf": 0.5},
                "i": {"type": "integer", "maximum": 10, "exclusiveMinimum": -1},
                "s": {"type": "string", "minLength": 1, "maxLength": 2.0, "format": "date-time"},
                "a": {"type": "array", "minItems": 0, "maxItems": 3, "uniqueItems": True},
            },
        }
    )
    assert violations_of({"type": "string", "minimum": 1, "minItems": 1}) == [
        'schema.minimum is not supported on type "string"',
        'schema.minItems is not supported on type "string"',
    ]
    assert violations_of({"type": "integer", "maxLength": 1, "uniqueItems": True}) == [
        'schema.maxLength is not supported on type "integer"',
        'schema.uniqueItems is not supported on type "integer"',
    ]
    assert violations_of({"minimum": 1}) == ["schema.minimum requires type or oneOf"]
    assert violations_of({"oneOf": [{"type": "string"}, {"type": "null"}], "maxLength": 1}) == [
        "schema.maxLength is not supported beside oneOf"
    ]


def test_bound_keyword_values_are_checked() -> None:
    assert violations_of(
        {"type": "number", "minimum": "1", "maximum": math.inf, "exclusiveMinimum": True, "multipleOf": 0}
    ) == [
        "schema.minimum must be a finite JSON number",
        "schema.maximum must be a finite JSON number",
        "schema.exclusiveMinimum must be a finite JSON number",
        "schema.multipleOf must be a number greater than 0",
    ]
    assert violations_of({"type": "string", "minLength": -1, "maxLength": 1.5}) == [
        "schema.minLength must be a non-negative integer",
        "schema.maxLength must be a non-negative integer",
    ]
    assert violations_of({"type": "array", "maxItems": "3", "uniqueItems": 1}) == [
        "schema.maxItems must be a non-negative integer",
        "schema.uniqueItems must be a boolean",
    ]
    assert violations_of({"type": "string", "format": 3}) == ["schema.format must be a string"]


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "integer", "minimum": 1}, 0, ['"value" must be >= 1 (got 0)']),
        ({"type": "integer", "minimum": 1}, 1, []),
        ({"type": "number", "exclusiveMinimum": 0}, 0, ['"value" must be > 0 (got 0)']),
        ({"type": "number", "exclusiveMinimum": 0}, 1e-9, []),
        ({"type": "number", "maximum": 1.5}, 1.75, ['"value" must be <= 1.5 (got 1.75)']),
        ({"type": "number", "exclusiveMaximum": 2}, 2.0, ['"value" must be < 2 (got 2)']),
        ({"type": "integer", "multipleOf": 3}, 7, ['"value" must be a multiple of 3 (got 7)']),
        ({"type": "number", "multipleOf": 0.0001}, 0.0075, []),
        ({"type": "number", "multipleOf": 0.5}, 1e308, []),
        ({"type": "string", "minLength": 2}, "a", ['"value" must be at least 2 characters long (got 1)']),
        ({"type": "string", "maxLength": 1}, "ab", ['"value" must be at most 1 character long (got 2)']),
        # Code points, as JSON Schema counts: one emoji is one character (two UTF-16 units in JS).
        ({"type": "string", "maxLength": 1}, "\U0001f600", []),
        ({"type": "array", "minItems": 1}, [], ['"value" must have at least 1 item (got 0)']),
        ({"type": "array", "maxItems": 2}, [1, 2, 3], ['"value" must have at most 2 items (got 3)']),
        (
            {"type": "array", "uniqueItems": True},
            [{"a": [1]}, 0, {"a": [1.0]}],
            ['"value" must not contain duplicate items ([0] and [2] are equal)'],
        ),
        ({"type": "array", "uniqueItems": True}, [1, True, "1", [1], {"1": 1}, None, False, 0], []),
        # The bounds come after the type and the literals, and the first failing one is reported.
        ({"type": "integer", "minimum": 5, "maximum": 1}, 3, ['"value" must be >= 5 (got 3)']),
        ({"type": "integer", "minimum": 5}, "x", ['"value" must be an integer']),
        ({"type": "integer", "enum": [1, 9], "maximum": 5}, 9, ['"value" must be <= 5 (got 9)']),
        ({"type": "string", "format": "date-time"}, "not a date", []),  # an annotation, as in 2020-12
    ],
)
def test_the_validator_enforces_every_bound_with_a_path_and_the_value(
    schema: dict[str, Any], value: object, expected: list[str]
) -> None:
    assert compile_validator(schema).validate(value) == expected


def test_bounds_are_enforced_below_the_fast_paths() -> None:
    # Property and item scalars normally skip the per-node check for exact types; bounds must not.
    schema = {
        "type": "object",
        "properties": {
            "qty": {"type": "integer", "exclusiveMinimum": 0},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
            "by_name": {"type": "object", "additionalProperties": {"type": "number", "maximum": 1}},
            "either": {"oneOf": [{"type": "string", "minLength": 2}, {"type": "null"}]},
        },
    }
    assert compile_validator(schema).validate(
        {"qty": -1, "tags": ["abcd", "ok", "x"], "by_name": {"a": 2}, "either": "x"}, ""
    ) == [
        '"qty" must be > 0 (got -1)',
        '"tags" must have at most 2 items (got 3)',
        '"tags[0]" must be at most 3 characters long (got 4)',
        '"by_name.a" must be <= 1 (got 2)',
        '"either" must match exactly one oneOf branch (matched 0)',
    ]


def test_unique_items_compares_deep_values_without_recursion() -> None:
    deep: Any = 1
    for _ in range(50_000):
        deep = [deep]
    assert compile_validator({"type": "array", "uniqueItems": True}).validate([deep, 2]) == []
