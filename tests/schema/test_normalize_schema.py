"""``normalize_schema``: real catalogue dialects mapped into the subset, every rewrite reported.

The schemas below are copied in shape from BFCL v4's function docs (``bfcl-eval`` on PyPI: the
multi-turn back ends' ``multi_turn_func_doc/*.json`` and the single-turn ``BFCL_v4_*.json``), which
write ``"type": "dict"``, ``"float"``, ``"tuple"``, ``"any"`` and ``"default": "None"``; the others
come from OpenAPI/MCP catalogues (type arrays, ``anyOf`` for an optional value, draft-3 flags).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_validator_agrees_with_jsonschema import json_values, raw_schemas, values_for

from toolrt.schema import NormalizedSchema, compile_validator, json_schema_violations, normalize_schema

# GorillaFileSystem.cd, as BFCL's multi-turn func doc declares its parameters.
BFCL_CD = {
    "type": "dict",
    "properties": {
        "folder": {
            "type": "string",
            "description": "The folder of the directory to change to. You can only change one folder.",
        }
    },
    "required": ["folder"],
}
# TradingBot.place_order.
BFCL_PLACE_ORDER = {
    "type": "dict",
    "properties": {
        "order_type": {
            "type": "string",
            "description": "Type of the order (Buy/Sell).",
            "enum": ["Buy", "Sell"],
        },
        "symbol": {"type": "string", "description": "Symbol of the stock to trade."},
        "price": {"type": "float", "description": "Price at which to place the order."},
        "amount": {"type": "integer", "description": "Number of shares to trade."},
    },
    "required": ["order_type", "symbol", "price", "amount"],
}
# MathAPI.mean and a BFCL simple entry with a tuple and an any-typed value.
BFCL_MEAN = {
    "type": "dict",
    "properties": {
        "numbers": {"type": "array", "items": {"type": "float"}, "description": "List of numbers."}
    },
    "required": ["numbers"],
}
BFCL_TUPLE_AND_ANY = {
    "type": "dict",
    "properties": {
        "location": {"type": "tuple", "items": {"type": "float"}, "description": "Latitude and longitude."},
        "value": {"type": "any", "description": "The value to store."},
        "unit": {"type": "string", "description": "Unit of measure.", "default": "None"},
    },
    "required": ["location", "value"],
}


def test_bfcl_dict_becomes_object_and_is_reported() -> None:
    fixed = normalize_schema(BFCL_CD)
    assert fixed == NormalizedSchema(
        {**BFCL_CD, "type": "object"},
        ('schema.type: "dict" -> "object"',),
    )


def test_bfcl_float_becomes_number_at_every_depth() -> None:
    order = normalize_schema(BFCL_PLACE_ORDER, "parameters")
    assert order.schema["properties"]["price"] == {
        "type": "number",
        "description": "Price at which to place the order.",
    }
    assert order.changes == (
        'parameters.type: "dict" -> "object"',
        'parameters.properties.price.type: "float" -> "number"',
    )
    mean = normalize_schema(BFCL_MEAN)
    assert mean.schema["properties"]["numbers"]["items"] == {"type": "number"}
    assert mean.changes[-1] == 'schema.properties.numbers.items.type: "float" -> "number"'


def test_bfcl_tuple_any_and_none_default() -> None:
    fixed = normalize_schema(BFCL_TUPLE_AND_ANY)
    assert fixed.schema["properties"] == {
        "location": {"type": "array", "items": {"type": "number"}, "description": "Latitude and longitude."},
        "value": {"description": "The value to store."},
        "unit": {"type": "string", "description": "Unit of measure.", "default": None},
    }
    assert fixed.changes == (
        'schema.type: "dict" -> "object"',
        'schema.properties.location.type: "tuple" -> "array"',
        'schema.properties.location.items.type: "float" -> "number"',
        'schema.properties.value.type: "any" removed (any JSON value)',
        'schema.properties.unit.default: "None" -> null',
    )


@pytest.mark.parametrize("schema", [BFCL_CD, BFCL_PLACE_ORDER, BFCL_MEAN, BFCL_TUPLE_AND_ANY])
def test_normalized_bfcl_schemas_are_in_the_subset_and_normalizing_again_changes_nothing(
    schema: dict[str, Any],
) -> None:
    assert json_schema_violations(schema) != []  # refused as written
    before = copy.deepcopy(schema)
    fixed = normalize_schema(schema)
    assert schema == before  # the input is never mutated
    assert json_schema_violations(fixed.schema) == []
    assert normalize_schema(fixed.schema) == NormalizedSchema(fixed.schema, ())
    compile_validator(fixed.schema)


def test_a_standard_schema_is_returned_unchanged_with_no_changes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "minLength": 1},
            "n": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["q"],
        "additionalProperties": False,
    }
    assert normalize_schema(schema) == NormalizedSchema(schema, ())


def test_capitalised_and_python_type_names() -> None:
    fixed = normalize_schema(
        {
            "type": "object",
            "properties": {
                "a": {"type": "String"},
                "b": {"type": "int"},
                "c": {"type": "bool"},
                "d": {"type": "list", "items": {"type": "str"}},
                "e": {"type": "None"},
                "f": {"type": "double"},
            },
        }
    )
    assert fixed.schema["properties"] == {
        "a": {"type": "string"},
        "b": {"type": "integer"},
        "c": {"type": "boolean"},
        "d": {"type": "array", "items": {"type": "string"}},
        "e": {"type": "null"},
        "f": {"type": "number"},
    }
    assert len(fixed.changes) == 7


def test_type_arrays_become_one_of_with_each_types_keywords_on_its_branch() -> None:
    fixed = normalize_schema(
        {"type": ["string", "null"], "description": "A name, or null", "maxLength": 5, "enum": ["a", None]}
    )
    assert fixed.schema == {
        "description": "A name, or null",
        "oneOf": [{"type": "string", "maxLength": 5, "enum": ["a"]}, {"type": "null", "enum": [None]}],
    }
    assert fixed.changes == ('schema.type: ["string","null"] -> oneOf of string, null',)
    assert json_schema_violations(fixed.schema) == []
    # integer beside number would match 1 twice under oneOf: number covers it.
    assert normalize_schema({"type": ["integer", "number"]}).schema == {"type": "number"}
    assert normalize_schema({"type": ["string"]}).schema == {"type": "string"}
    assert normalize_schema({"type": ["string", "any"]}).schema == {}


def test_any_of_with_distinct_types_becomes_one_of_and_overlapping_any_of_is_left() -> None:
    optional = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    fixed = normalize_schema(optional)
    assert fixed.schema == {"oneOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert fixed.changes == (
        "schema.anyOf -> oneOf (its branches have distinct types, so exactly one matches)",
    )
    overlapping = {"anyOf": [{"type": "integer"}, {"type": "number"}]}
    assert normalize_schema(overlapping) == NormalizedSchema(overlapping, ())
    assert json_schema_violations(overlapping)[0].startswith("schema.anyOf is not a supported keyword")


def test_draft_3_required_and_optional_flags_move_into_the_parent() -> None:
    fixed = normalize_schema(
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "required": True},
                "limit": {"type": "integer", "optional": True},
                "period": {"type": "integer", "optional": "true"},
            },
            "required": ["limit"],
        }
    )
    assert fixed.schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer"},
            "period": {"type": "integer"},
        },
        "required": ["path"],
    }
    assert fixed.changes == (
        "schema.properties.path.required: true -> listed in schema.required",
        "schema.properties.limit.optional: true -> removed from schema.required",
        'schema.properties.period.optional: "true" dropped',
    )


def test_a_required_name_without_a_property_gets_an_any_property() -> None:
    fixed = normalize_schema({"type": "object", "properties": {}, "required": ["ghost"]})
    assert fixed.schema == {"type": "object", "properties": {"ghost": {}}, "required": ["ghost"]}
    assert fixed.changes == (
        "schema.properties.ghost: added as any value (it is required but was not declared)",
    )
    # What JSON Schema meant: the key must be present, with any value.
    assert compile_validator(fixed.schema).validate({}) == ['missing required property "value.ghost"']


def test_integral_floats_where_an_integer_is_meant() -> None:
    fixed = normalize_schema({"type": "integer", "enum": [1.0, 2.0], "default": 1.0, "minimum": 0.0})
    assert fixed.schema == {"type": "integer", "enum": [1, 2], "default": 1, "minimum": 0}
    assert normalize_schema({"type": "string", "maxLength": 3.0}).schema == {"type": "string", "maxLength": 3}


def test_untyped_enums_meta_keys_pattern_and_tuple_items() -> None:
    assert normalize_schema({"enum": ["a", "b"]}).schema == {"enum": ["a", "b"], "type": "string"}
    assert normalize_schema({"enum": [1, 2.5]}).schema == {"enum": [1, 2.5], "type": "number"}
    assert normalize_schema({"enum": ["a", 1]}).changes == ()  # mixed: left for the subset check
    fixed = normalize_schema(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string", "pattern": "^[a-z]+$"}
    )
    assert fixed.schema == {"type": "string", "description": "Must match the regular expression ^[a-z]+$."}
    assert fixed.changes == (
        "schema.$schema: dropped (metadata the model does not need)",
        "schema.pattern: moved into the description (toolrt does not enforce regular expressions)",
    )
    pair = normalize_schema({"type": "array", "items": [{"type": "number"}, {"type": "number"}]})
    assert pair.schema == {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}


def test_what_has_no_faithful_rewrite_is_left_for_registration_to_refuse() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}, "b": {"type": "HashMap"}}}
    fixed = normalize_schema(schema)
    assert fixed == NormalizedSchema(schema, ())
    assert json_schema_violations(fixed.schema) != []


def test_normalizing_is_total_and_iterative() -> None:
    for junk in (None, 3, "x", [], {1: "x"}):
        assert normalize_schema(junk).changes == ()
    deep: dict[str, Any] = {"type": "float"}
    for _ in range(20_000):
        deep = {"type": "dict", "properties": {"x": deep}}
    fixed = normalize_schema(deep)
    assert len(fixed.changes) == 20_001
    assert json_schema_violations(fixed.schema) == []


# --- property: normalizing keeps the meaning ----------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_schemas, st.data())
def test_normalizing_a_subset_schema_keeps_it_in_the_subset_with_the_same_verdicts(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    fixed = normalize_schema(schema)
    assert json_schema_violations(fixed.schema) == []
    assert normalize_schema(fixed.schema).changes == ()
    value = data.draw(values_for(schema) | json_values, label="value")
    assert (compile_validator(schema).validate(value) == []) == (
        compile_validator(fixed.schema).validate(value) == []
    )
