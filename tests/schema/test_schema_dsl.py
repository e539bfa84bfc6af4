"""The author schema DSL and ``validate_args`` (contract §2.17 S-DSL1–4).

Ports ``schema.spec.ts`` (the unified author schema DSL) and the ``defineTool / schema DSL``,
``schema DSL edge cases`` and ``validateArgs`` describes of ``tools.spec.ts`` (plus the schema half of
``runtime JSON Schema matches the array-of-objects inference``). Test names follow the upstream titles.

Not applicable here, with the reason:

* ``infers scalar literals, arrays, objects, json, and exact-one unions``, ``bounds inference for
  deeply nested author schemas``, ``infers required and optional parameter keys``, ``makes invalid
  author forms compile-time errors``, ``type-level: InferArgs maps required properties to
  non-optional``: TypeScript type inference (S-DSL7) has no runtime behaviour to test. The Python
  spelling is the ``TypedDict`` family in :mod:`toolrt.schema._dsl`, checked by mypy, not by pytest.
* The registry halves of ``defineTool returns a valid ToolDefinition with typed execute``,
  ``registry round-trips a defineTool definition`` and ``still accepts raw JSON-Schema
  ToolDefinition directly`` (register → execute) belong to the registry/define_tool tests; the
  schema halves are ported here.

Python adaptation of ``flags a missing required key and a required key present as undefined``:
a missing key is ``missing required property``; a key holding ``None`` is JSON ``null`` and is
type-checked as such.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from helpers import READ_PARAMETERS, READ_SCHEMA
from toolrt._errors import JsonSchemaError
from toolrt.schema import (
    ParameterSchemaSpec,
    StringParameterSpec,
    ValueSchemaSpec,
    assert_supported_json_schema,
    json_schema_violations,
    parameter_schema_spec_to_json_schema,
    validate_args,
    value_schema_spec_to_json_schema,
)

# An open object spec with a required ``host`` and an optional ``port``, and what it compiles to.
HOST_PORT_SPEC: dict[str, Any] = {
    "type": "object",
    "additionalProperties": True,
    "properties": {"host": {"type": "string", "required": True}, "port": {"type": "number"}},
}
HOST_PORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": True,
    "properties": {"host": {"type": "string"}, "port": {"type": "number"}},
    "required": ["host"],
}


def author_error(compile_: Any, spec: object) -> str:
    """The single violation an author error raises with (and the exact error message)."""
    with pytest.raises(JsonSchemaError) as caught:
        compile_(spec)
    assert len(caught.value.violations) == 1, caught.value.violations
    violation = caught.value.violations[0]
    assert str(caught.value) == f"unsupported JSON schema: {violation}"
    assert caught.value.code == "UNSUPPORTED_SCHEMA"
    return violation


def value_error(spec: object) -> str:
    return author_error(value_schema_spec_to_json_schema, spec)


def parameter_error(spec: object) -> str:
    return author_error(parameter_schema_spec_to_json_schema, spec)


class HostileDict(dict[str, Any]):
    def items(self) -> Any:
        raise RuntimeError("items trap")


# --- describe: the unified author schema DSL -----------------------------------------------------


def test_compiles_every_value_root_and_the_author_only_json_node() -> None:
    assert value_schema_spec_to_json_schema({"type": "string", "enum": ["a", "b"], "const": "a"}) == {
        "type": "string",
        "enum": ["a", "b"],
        "const": "a",
    }
    assert value_schema_spec_to_json_schema({"type": "number"}) == {"type": "number"}
    assert value_schema_spec_to_json_schema({"type": "integer"}) == {"type": "integer"}
    assert value_schema_spec_to_json_schema({"type": "boolean"}) == {"type": "boolean"}
    assert value_schema_spec_to_json_schema({"type": "null"}) == {"type": "null"}
    assert value_schema_spec_to_json_schema({"type": "array", "items": {"type": "json"}}) == {
        "type": "array",
        "items": {},
    }
    assert value_schema_spec_to_json_schema(
        {"type": "object", "additionalProperties": False, "properties": {}}
    ) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {},
    }
    assert value_schema_spec_to_json_schema(
        {
            "type": "json",
            "description": "anything",
            "title": "Any JSON",
            "default": None,
            "examples": [{"nested": True}],
        }
    ) == {"description": "anything", "title": "Any JSON", "default": None, "examples": [{"nested": True}]}
    assert value_schema_spec_to_json_schema({"oneOf": [{"type": "string"}, {"type": "null"}]}) == {
        "oneOf": [{"type": "string"}, {"type": "null"}]
    }


def test_emits_compiled_keys_in_a_fixed_order_whatever_the_author_order() -> None:
    compiled = value_schema_spec_to_json_schema(
        {
            "properties": {"b": {"type": "string"}, "a": {"type": "integer", "required": True}},
            "examples": [{}],
            "additionalProperties": True,
            "description": "d",
            "type": "object",
            "title": "t",
        }
    )
    assert list(compiled) == [
        "type",
        "description",
        "title",
        "examples",
        "additionalProperties",
        "properties",
        "required",
    ]
    assert list(compiled["properties"]) == ["b", "a"]  # declaration order
    scalar = value_schema_spec_to_json_schema({"const": "x", "default": "x", "enum": ["x"], "type": "string"})
    assert list(scalar) == ["type", "default", "enum", "const"]
    union = value_schema_spec_to_json_schema({"title": "u", "oneOf": [{"type": "null"}, {"type": "string"}]})
    assert list(union) == ["oneOf", "title"]
    array = value_schema_spec_to_json_schema({"items": {"type": "null"}, "description": "a", "type": "array"})
    assert list(array) == ["type", "description", "items"]


def test_keeps_the_implicit_parameter_root_open_while_preserving_explicit_object_openness() -> None:
    assert parameter_schema_spec_to_json_schema(
        {
            "closed": {
                "type": "object",
                "additionalProperties": False,
                "required": True,
                "properties": {"id": {"type": "integer", "required": True}},
            },
            "open": {"type": "object", "additionalProperties": True},
        }
    ) == {
        "type": "object",
        "properties": {
            "closed": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"id": {"type": "integer"}},
                "required": ["id"],
            },
            "open": {"type": "object", "additionalProperties": True},
        },
        "required": ["closed"],
    }


def test_rejects_runtime_forged_author_forms_rather_than_compiling_them_lossily() -> None:
    for spec, violation in [
        ({"type": "object"}, "schema.additionalProperties must be explicitly true or false"),
        (
            {"type": "object", "additionalProperties": 1},
            "schema.additionalProperties must be explicitly true or false",
        ),
        ({"oneOf": [{"type": "string"}]}, "schema.oneOf must be an array of at least two schemas"),
        ({"type": "number", "enum": ["1"]}, "schema.enum must be a non-empty array of number values"),
        ({"type": "string", "enum": []}, "schema.enum must be a non-empty array of string values"),
        (
            {"type": "string", "enum": ["a"], "const": "b"},
            "schema.const must be one of schema.enum when both are declared",
        ),
        ({"type": "integer", "const": 1.5}, "schema.const must be a integer value"),
        ({"type": "json", "default": math.nan}, "schema.default annotation must be lossless JSON data"),
        ({"type": "json", "description": 7}, "schema.description must be a string"),
        (
            {"type": "array", "items": {"type": "string", "required": True}},
            "schema.items.required is not supported by the value schema DSL",
        ),
        ({"type": "array", "items": 42}, "schema.items must be a value schema object"),
        ({"type": "string", "extra": True}, "schema.extra is not supported by the value schema DSL"),
        (
            {"type": "string", "oneOf": [{"type": "string"}, {"type": "null"}]},
            "schema cannot declare both type and oneOf",
        ),
        ({"oneOf": "not-an-array"}, "schema.oneOf must be an array of at least two value schemas"),
        ({"type": "string", "enum": "a"}, "schema.enum must be a non-empty array of scalar values"),
        (
            {"type": "weird"},
            "schema.type must be string/number/integer/boolean/null/array/object/json, or use oneOf",
        ),
        (
            {"description": "no type"},
            "schema.type must be string/number/integer/boolean/null/array/object/json, or use oneOf",
        ),
        (
            {"type": ["string"]},
            "schema.type must be string/number/integer/boolean/null/array/object/json, or use oneOf",
        ),
        ({"type": "string", "required": True}, "schema.required is not supported by the value schema DSL"),
        (None, "schema must be a value schema object"),
        ([{"type": "string"}], "schema must be a value schema object"),
        (HostileDict(type="string"), "schema must be a value schema object"),
        ({"type": "string", 1: "x"}, "schema must be a value schema object"),
    ]:
        assert value_error(spec) == violation, spec
    assert parameter_error({"value": {"type": "string", "required": False}}) == (
        "parameters.value.required must be true when present"
    )
    assert parameter_error({"value": {"type": "string", "required": 1}}) == (
        "parameters.value.required must be true when present"
    )
    assert parameter_error(None) == "parameters must be an object of value schemas"
    assert parameter_error({1: {"type": "string"}}) == "parameters must be an object of value schemas"
    assert parameter_error({"bad": 42}) == "parameters.bad must be a value schema object"


def test_names_nested_author_errors_by_their_full_path() -> None:
    assert parameter_error(
        {
            "a": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"b": {"type": "array", "items": {}}},
            }
        }
    ) == (
        "parameters.a.properties.b.items.type"
        " must be string/number/integer/boolean/null/array/object/json, or use oneOf"
    )
    assert parameter_error({"a": {"oneOf": [{"type": "string"}, {"type": "object"}]}}) == (
        "parameters.a.oneOf[1].additionalProperties must be explicitly true or false"
    )
    assert parameter_error({"a": {"oneOf": [{"type": "null"}, {"type": "string", "required": True}]}}) == (
        "parameters.a.oneOf[1].required is not supported by the value schema DSL"
    )
    assert parameter_error({"a": {"type": "object", "additionalProperties": True, "properties": []}}) == (
        "parameters.a.properties must be an object of value schemas"
    )
    # After compilation the raw subset reports with raw messages rooted at `schema`.
    assert parameter_error({"a": {"type": "integer", "enum": [1, 2.5]}}) == (
        "schema.properties.a.enum must be a non-empty array of integer values"
    )


def test_reports_only_the_first_author_error_in_declaration_order() -> None:
    spec = {"first": {"type": "string", "zzz": 1, "aaa": 2}, "second": {"type": "nope"}}
    assert parameter_error(spec) == "parameters.first.zzz is not supported by the value schema DSL"
    # An unknown key beside oneOf is reported before the type/oneOf conflict.
    assert value_error({"oneOf": [{"type": "null"}, {"type": "string"}], "type": "string", "x": 1}) == (
        "schema.x is not supported by the value schema DSL"
    )


def test_rejects_cyclic_author_schemas() -> None:
    schema: dict[str, Any] = {"type": "array"}
    schema["items"] = schema
    assert value_error(schema) == "schema.items is circular"
    properties: dict[str, Any] = {}
    properties["self"] = {"type": "object", "additionalProperties": True, "properties": properties}
    assert parameter_error(properties) == "parameters.self.properties is circular"
    union: dict[str, Any] = {"oneOf": [{"type": "null"}]}
    union["oneOf"].append(union)
    assert value_error(union) == "schema.oneOf[1] is circular"


def test_allows_sibling_reuse_of_one_author_node() -> None:
    leaf: StringParameterSpec = {"type": "string", "required": True}
    assert parameter_schema_spec_to_json_schema({"a": leaf, "b": leaf}) == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }


def test_compiles_deeply_nested_author_unions_without_using_the_javascript_call_stack() -> None:
    depth = 5_000
    spec: Any = {"type": "string"}
    for _ in range(depth):
        spec = {"oneOf": [spec, {"type": "null"}]}

    compiled = value_schema_spec_to_json_schema(spec)

    cursor = compiled
    layers = 0
    while "oneOf" in cursor:
        assert cursor["oneOf"][1] == {"type": "null"}
        cursor = cursor["oneOf"][0]
        layers += 1
    assert layers == depth
    assert cursor == {"type": "string"}


def test_compiles_deeply_nested_parameter_objects_and_reports_a_deep_error() -> None:
    depth = 5_000
    spec: Any = {"leaf": {"type": "string", "required": True}}
    for _ in range(depth):
        spec = {"k": {"type": "object", "additionalProperties": False, "required": True, "properties": spec}}
    compiled = parameter_schema_spec_to_json_schema(spec)
    cursor = compiled
    for _ in range(depth):
        assert cursor["required"] == ["k"]
        cursor = cursor["properties"]["k"]
    assert cursor["required"] == ["leaf"]

    broken: Any = {"leaf": {"type": "string", "required": "yes"}}
    for _ in range(depth):
        broken = {"k": {"type": "object", "additionalProperties": False, "properties": broken}}
    assert (
        parameter_error(broken)
        == "parameters" + ".k.properties" * depth + ".leaf.required must be true when present"
    )


def test_preserves_a_property_literally_named_proto_as_schema_data() -> None:
    for name in ["__proto__", "__class__", "__dict__", "constructor"]:
        schema = parameter_schema_spec_to_json_schema({name: {"type": "string", "required": True}})
        assert schema["properties"] == {name: {"type": "string"}}
        assert schema["required"] == [name]
        assert validate_args({name: {"type": "string", "required": True}}, {}) == [
            f'missing required property "{name}"'
        ]


# --- describe: defineTool / schema DSL ------------------------------------------------------------


def test_converts_parameter_schema_spec_to_standard_json_schema_with_required_array() -> None:
    assert parameter_schema_spec_to_json_schema(READ_PARAMETERS) == READ_SCHEMA


def test_handles_empty_spec_no_properties_no_required() -> None:
    assert parameter_schema_spec_to_json_schema({}) == {"type": "object", "properties": {}}


def test_handles_nested_object_spec() -> None:
    spec: ParameterSchemaSpec = {"config": {**HOST_PORT_SPEC, "required": True}}
    assert parameter_schema_spec_to_json_schema(spec) == {
        "type": "object",
        "properties": {"config": HOST_PORT_SCHEMA},
        "required": ["config"],
    }


def test_define_tool_parameters_compile_to_the_schema_the_model_sees() -> None:
    # Schema half of "defineTool returns a valid ToolDefinition with typed execute".
    parameters = parameter_schema_spec_to_json_schema(
        {"text": {"type": "string", "required": True}, "uppercase": {"type": "boolean"}}
    )
    assert parameters == {
        "type": "object",
        "properties": {"text": {"type": "string"}, "uppercase": {"type": "boolean"}},
        "required": ["text"],
    }
    output: ValueSchemaSpec = {"type": "string"}
    assert value_schema_spec_to_json_schema(output) == {"type": "string"}


def test_registry_round_trip_schema_is_standard_json_schema() -> None:
    # Schema half of "registry round-trips a defineTool definition (register→schemas→execute)".
    spec: ParameterSchemaSpec = {
        "req": {"type": "string", "required": True},
        "opt": {"type": "number", "description": "Optional number"},
    }
    assert parameter_schema_spec_to_json_schema(spec) == {
        "type": "object",
        "properties": {
            "req": {"type": "string"},
            "opt": {"type": "number", "description": "Optional number"},
        },
        "required": ["req"],
    }
    assert validate_args(spec, {"req": "hello"}) == []


def test_still_accepts_raw_json_schema_definitions_directly_mcp_interop() -> None:
    # Schema half of "still accepts raw JSON-Schema ToolDefinition directly (MCP interop)".
    raw = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert_supported_json_schema(raw)
    assert json_schema_violations(raw) == []


# --- describe: schema DSL edge cases --------------------------------------------------------------


def test_emits_enum_values_in_json_schema_property() -> None:
    schema = parameter_schema_spec_to_json_schema(
        {"color": {"type": "string", "enum": ["red", "green", "blue"], "description": "Color choice"}}
    )
    assert schema["properties"]["color"] == {
        "type": "string",
        "description": "Color choice",
        "enum": ["red", "green", "blue"],
    }


def test_emits_default_value_in_json_schema_property() -> None:
    schema = parameter_schema_spec_to_json_schema({"limit": {"type": "number", "default": 25}})
    assert schema["properties"]["limit"] == {"type": "number", "default": 25}


def test_handles_array_items_without_nested_properties_plain_type_array() -> None:
    schema = parameter_schema_spec_to_json_schema({"tags": {"type": "array", "items": {"type": "string"}}})
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}


def test_handles_enum_and_default_together_in_one_property() -> None:
    schema = parameter_schema_spec_to_json_schema(
        {"level": {"type": "string", "enum": ["low", "high"], "default": "low"}}
    )
    assert schema["properties"]["level"] == {"type": "string", "default": "low", "enum": ["low", "high"]}


def test_omits_description_enum_default_keys_when_not_specified() -> None:
    schema = parameter_schema_spec_to_json_schema({"bare": {"type": "string"}})
    prop = schema["properties"]["bare"]
    assert prop == {"type": "string"}
    for key in ["description", "enum", "default", "required"]:
        assert key not in prop


def test_handles_array_with_no_items_items_omitted() -> None:
    schema = parameter_schema_spec_to_json_schema({"raw": {"type": "array"}})
    assert schema["properties"]["raw"] == {"type": "array"}


def test_handles_nested_object_with_all_optional_properties_no_required_array() -> None:
    schema = parameter_schema_spec_to_json_schema(
        {
            "config": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"host": {"type": "string"}, "port": {"type": "number"}},
            }
        }
    )
    config = schema["properties"]["config"]
    assert config == {
        "type": "object",
        "additionalProperties": True,
        "properties": {"host": {"type": "string"}, "port": {"type": "number"}},
    }
    assert "required" not in config
    assert "required" not in schema


def test_runtime_json_schema_matches_the_array_of_objects_inference() -> None:
    spec: ParameterSchemaSpec = {
        "servers": {
            "type": "array",
            "items": HOST_PORT_SPEC,
        }
    }
    assert parameter_schema_spec_to_json_schema(spec) == {
        "type": "object",
        "properties": {
            "servers": {
                "type": "array",
                "items": HOST_PORT_SCHEMA,
            }
        },
    }


# --- describe: validateArgs -----------------------------------------------------------------------


def test_returns_empty_for_valid_args_and_is_total_over_malformed_input() -> None:
    spec: ParameterSchemaSpec = {"path": {"type": "string", "required": True}, "limit": {"type": "number"}}
    assert validate_args(spec, {"path": "/tmp"}) == []
    assert validate_args(spec, {"path": "/tmp", "limit": 5}) == []
    for malformed in [None, "nope", [], (), 5, 1.5, True, {1, 2}, b"{}", object()]:
        assert validate_args(spec, malformed) == ['"arguments" must be an object'], malformed


def test_flags_a_missing_required_key_and_type_checks_a_required_key_holding_none() -> None:
    spec: ParameterSchemaSpec = {"path": {"type": "string", "required": True}}
    assert validate_args(spec, {}) == ['missing required property "path"']
    assert validate_args(spec, {"other": "x"}) == ['missing required property "path"']
    assert validate_args(spec, {"path": None}) == ['"path" must be a string']
    nullable: ParameterSchemaSpec = {
        "path": {"oneOf": [{"type": "string"}, {"type": "null"}], "required": True}
    }
    assert validate_args(nullable, {"path": None}) == []


def test_allows_extra_keys_no_additional_properties_false_and_omitted_optionals() -> None:
    spec: ParameterSchemaSpec = {"path": {"type": "string", "required": True}, "n": {"type": "integer"}}
    assert validate_args(spec, {"path": "/tmp", "extra": 1}) == []
    # ...but the extra keys must still be lossless JSON.
    assert validate_args(spec, {"path": "/tmp", "extra": math.nan}) == [
        '"arguments" must be a lossless JSON object'
    ]


def test_does_not_apply_defaults_validation_only() -> None:
    spec: ParameterSchemaSpec = {"limit": {"type": "number", "default": 25}}
    args: dict[str, Any] = {}
    assert validate_args(spec, args) == []
    assert args == {}


def test_type_checks_primitives() -> None:
    spec: ParameterSchemaSpec = {
        "s": {"type": "string"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "i": {"type": "integer"},
        "z": {"type": "null"},
    }
    assert validate_args(spec, {"s": 1}) == ['"s" must be a string']
    assert validate_args(spec, {"n": "x"}) == ['"n" must be a number']
    assert validate_args(spec, {"b": "x"}) == ['"b" must be a boolean']
    assert validate_args(spec, {"n": True}) == ['"n" must be a number']
    assert validate_args(spec, {"i": True}) == ['"i" must be an integer']
    assert validate_args(spec, {"b": 1}) == ['"b" must be a boolean']
    assert validate_args(spec, {"z": 0}) == ['"z" must be null']
    assert validate_args(spec, {"n": math.inf}) == ['"n" must be a finite JSON number']
    assert validate_args(spec, {"s": "x", "n": 1, "b": False, "i": 2.0, "z": None}) == []


def test_checks_enum_membership() -> None:
    spec: ParameterSchemaSpec = {"color": {"type": "string", "enum": ["red", "green"]}}
    assert validate_args(spec, {"color": "red"}) == []
    assert validate_args(spec, {"color": "blue"}) == ['"color" must be one of ["red","green"]']


def test_enforces_type_correct_scalar_enum_declarations() -> None:
    spec: ParameterSchemaSpec = {"n": {"type": "number", "enum": [1, 2]}}
    assert validate_args(spec, {"n": 1}) == []
    assert validate_args(spec, {"n": 1.0}) == []
    assert validate_args(spec, {"n": 3}) == ['"n" must be one of [1,2]']
    invalid: Any = {"n": {"type": "number", "enum": ["1", "2"]}}
    with pytest.raises(JsonSchemaError) as caught:
        validate_args(invalid, {"n": 1})
    assert caught.value.violations == ("schema.properties.n.enum must be a non-empty array of number values",)


def test_rejects_an_unknown_schema_type_at_the_author_boundary() -> None:
    spec: Any = {"x": {"type": "weird"}}
    with pytest.raises(JsonSchemaError) as caught:
        validate_args(spec, {"x": 1})
    assert caught.value.violations == (
        "parameters.x.type must be string/number/integer/boolean/null/array/object/json, or use oneOf",
    )


def test_recurses_into_nested_objects_and_an_object_without_properties_only_type_checks() -> None:
    spec: ParameterSchemaSpec = {
        "config": {**HOST_PORT_SPEC, "required": True},
        "bag": {"type": "object", "additionalProperties": True},
    }
    assert validate_args(spec, {"config": {"host": "h"}, "bag": {"anything": True}}) == []
    assert validate_args(spec, {"config": {"port": 9}, "bag": 5}) == [
        'missing required property "config.host"',
        '"bag" must be an object',
    ]


def test_recurses_into_array_items_and_an_array_without_items_only_type_checks() -> None:
    spec: ParameterSchemaSpec = {
        "tags": {"type": "array", "items": {"type": "string"}},
        "raw": {"type": "array"},
    }
    assert validate_args(spec, {"tags": ["a", "b"], "raw": [1, {}, "x"]}) == []
    assert validate_args(spec, {"tags": ["a", 2]}) == ['"tags[1]" must be a string']
    assert validate_args(spec, {"tags": "nope"}) == ['"tags" must be an array']


def test_validates_arrays_of_objects_element_wise() -> None:
    spec: ParameterSchemaSpec = {
        "servers": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"host": {"type": "string", "required": True}},
            },
        }
    }
    assert validate_args(spec, {"servers": [{"host": "a"}, {}]}) == [
        'missing required property "servers[1].host"'
    ]


def test_validates_closed_nested_objects_and_unions_with_argument_paths() -> None:
    spec: ParameterSchemaSpec = {
        "opts": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"mode": {"type": "string", "enum": ["r", "w"], "required": True}},
        },
        "target": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
    }
    assert validate_args(spec, {"opts": {"mode": "x", "extra": 1}, "target": 5}) == [
        '"opts.mode" must be one of ["r","w"]',
        '"opts.extra" is not a declared property (additionalProperties: false)',
        '"target" must match exactly one oneOf branch (matched 0)',
    ]
    assert validate_args(spec, {"opts": {"mode": "w"}, "target": ["a"]}) == []
