"""Property tests for the schema package (port of ``properties.spec.ts`` plus a ``jsonschema`` oracle).

The oracle: for every raw schema in the supported subset and every lossless JSON value, our
validator accepts exactly when ``jsonschema``'s Draft 2020-12 validator does. Known semantic
differences are handled in :func:`oracle_accepts`, not by weakening the comparison:

* our validator rejects non-lossless values (NaN, ±inf, ``-0.0``, inexact big ints, sets, ...) that
  ``jsonschema`` would accept, so only lossless values are generated, and the oracle asserts that;
* ``jsonschema`` does not treat a ``tuple`` as an array, so generated arrays are lists;
* both agree that ``True`` is not an integer/number and that ``1.0`` is an integer, and both compare
  ``enum``/``const`` with bool-vs-int distinguished, so those cases are generated deliberately.

The default run uses a few hundred examples per property; ``-m slow`` adds a 10,000-example run of
the oracle comparison.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from toolrt._errors import JsonSchemaError
from toolrt._json import is_lossless_json
from toolrt.schema import (
    compile_validator,
    json_schema_violations,
    parameter_schema_spec_to_json_schema,
    validate_args,
    value_schema_spec_to_json_schema,
)

SCALAR_TYPES = ["string", "number", "integer", "boolean", "null"]
PROPERTY_NAMES = st.sampled_from(["a", "b", "c", "", "__proto__", "keys"]) | st.text(max_size=3)

safe_ints = st.integers(-(2**53) + 1, 2**53 - 1) | st.sampled_from([0, 1, -1, 2**53, 2**60, -(2**70), 10**21])
# -0.0 + 0.0 is 0.0: JSON has no lossless negative zero.
lossless_floats = st.floats(allow_nan=False, allow_infinity=False).map(lambda number: number + 0.0)
integral_floats = st.integers(-(2**53) + 1, 2**53 - 1).map(float) | st.sampled_from([1.0, 0.0, 1e300, -1e21])
short_text = st.text(max_size=4)
json_scalars = st.none() | st.booleans() | safe_ints | lossless_floats | integral_floats | short_text
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(PROPERTY_NAMES, children, max_size=3),
    max_leaves=10,
)


# Numbers near the generated bounds (decision 0011), so both verdicts of a bound are well represented.
near_ints = st.integers(-6, 6)
near_floats = st.sampled_from([0.5, 1.5, -2.5, 0.1, 0.3, 0.75, 2.25, 1e-3])


def scalar_values(schema_type: str) -> st.SearchStrategy[Any]:
    """Values of one scalar type, including the cross-type look-alikes (1.0 for integer, bools)."""
    return {
        "string": short_text,
        "number": safe_ints | lossless_floats | integral_floats | near_ints | near_floats,
        "integer": safe_ints | integral_floats | near_ints,
        "boolean": st.booleans(),
        "null": st.none(),
    }[schema_type]


annotations = st.fixed_dictionaries(
    {},
    optional={
        "description": short_text,
        "title": short_text,
        "default": json_values,
        # jsonschema's meta-schema wants an array here; the subset itself accepts any JSON.
        "examples": st.lists(json_values, max_size=2),
    },
)


# --- raw subset schemas and values ---------------------------------------------------------------


@st.composite
def scalar_schemas(draw: st.DrawFn, family: str | None = None, bounded: bool = True) -> dict[str, Any]:
    """A scalar schema (also a DSL scalar spec: the two share this shape), optionally of one type
    family of :data:`FAMILIES`.
    """
    if family == "numeric":
        schema_type = draw(st.sampled_from(["number", "integer"]))
    elif family is not None:
        schema_type = family
    else:
        schema_type = draw(st.sampled_from(SCALAR_TYPES))
    schema: dict[str, Any] = {"type": schema_type}
    literal = draw(st.sampled_from(["none", "enum", "const", "both"]))
    if literal in {"enum", "both"}:
        schema["enum"] = draw(st.lists(scalar_values(schema_type), min_size=1, max_size=3))
    if literal == "const":
        schema["const"] = draw(scalar_values(schema_type))
    if literal == "both":
        schema["const"] = draw(st.sampled_from(schema["enum"]))
    if bounded:
        schema.update(draw(bounds_for(schema_type)))
    schema.update(draw(annotations))
    return schema


bound_numbers = near_ints | near_floats | st.sampled_from([0, 2**53, -(2**60), 1e21])
counts = st.integers(0, 4) | st.sampled_from([1.0, 2.0])  # an integral float is an integer count


def bounds_for(schema_type: str) -> st.SearchStrategy[dict[str, Any]]:
    """Decision 0011's bound keywords for one type, each optional."""
    if schema_type in {"number", "integer"}:
        optional = {
            "minimum": bound_numbers,
            "maximum": bound_numbers,
            "exclusiveMinimum": bound_numbers,
            "exclusiveMaximum": bound_numbers,
            "multipleOf": st.sampled_from([1, 2, 3, 0.5, 0.25, 0.1, 1e-3, 2.5, 7.0]),
        }
    elif schema_type == "string":
        optional = {"minLength": counts, "maxLength": counts}
    elif schema_type == "array":
        optional = {"minItems": counts, "maxItems": counts, "uniqueItems": st.booleans()}
    else:
        return st.just({})
    return st.fixed_dictionaries({}, optional=optional)  # type: ignore[arg-type]


@st.composite
def object_schemas(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if draw(st.booleans()):
        properties = draw(st.dictionaries(PROPERTY_NAMES, children, max_size=3))
        schema["properties"] = properties
        if properties:
            schema["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    if draw(st.booleans()):
        # A boolean, or (decision 0010, ``dict[str, X]``) a schema for every undeclared value.
        schema["additionalProperties"] = draw(st.booleans() | children)
    schema.update(draw(annotations))
    return schema


def extend_schemas(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    arrays = st.builds(
        lambda items, sizes, extra: {
            "type": "array",
            **({} if items is None else {"items": items}),
            **sizes,
            **extra,
        },
        st.none() | children,
        bounds_for("array"),
        annotations,
    )
    unions = st.builds(
        lambda branches, extra: {"oneOf": branches, **extra},
        st.lists(children, min_size=2, max_size=3),
        annotations,
    )
    return arrays | object_schemas(children) | unions


raw_schemas = st.recursive(scalar_schemas() | annotations, extend_schemas, max_leaves=6)


def values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly-conforming values for a schema (so both verdicts are well represented)."""
    if "oneOf" in schema:
        return st.one_of([values_for(branch) for branch in schema["oneOf"]])
    schema_type = schema.get("type")
    if schema_type is None:
        return json_values
    if schema_type in SCALAR_TYPES:
        literals = schema.get("enum", [schema["const"]] if "const" in schema else [])
        plain = scalar_values(schema_type)
        return (st.sampled_from(literals) | plain) if literals else (plain | json_scalars)
    if schema_type == "array":
        items = schema.get("items")
        lists = st.lists(json_values if items is None else values_for(items), max_size=3)
        # A repeated item (1 and 1.0 too), so uniqueItems sees both verdicts.
        return lists | lists.map(lambda values: values + values[:1]) | st.just([1, 1.0])
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    declared = st.fixed_dictionaries(
        {key: values_for(child) for key, child in properties.items() if key in required},
        optional={key: values_for(child) for key, child in properties.items() if key not in required},
    )
    additional = schema.get("additionalProperties")
    extra_values = values_for(additional) | json_values if isinstance(additional, dict) else json_values
    extras = st.dictionaries(PROPERTY_NAMES, extra_values, max_size=2)
    return st.builds(lambda extra, own: {**extra, **own}, extras, declared)


def oracle_accepts(schema: dict[str, Any], value: object) -> bool:
    """``jsonschema``'s verdict, restricted to the values where it is a valid oracle for ours."""
    assert is_lossless_json(value), "our validator rejects non-lossless values jsonschema would accept"
    return Draft202012Validator(schema).is_valid(value)


def check_against_oracle(schema: dict[str, Any], data: st.DataObject) -> None:
    assert json_schema_violations(schema) == []
    Draft202012Validator.check_schema(schema)  # the subset is real JSON Schema
    validator = compile_validator(schema)
    value = data.draw(values_for(schema) | json_values, label="value")
    ours = validator.validate(value)
    assert all(isinstance(violation, str) for violation in ours)
    assert (ours == []) == oracle_accepts(schema, value), ours


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_schemas, st.data())
def test_validator_verdict_matches_jsonschema_draft_2020_12(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    check_against_oracle(schema, data)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw_schemas, st.data())
def test_validator_verdict_matches_jsonschema_draft_2020_12_at_scale(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    check_against_oracle(schema, data)


@pytest.mark.parametrize(
    ("schema", "value", "accepted"),
    [
        ({"type": "integer"}, True, False),
        ({"type": "integer"}, 1.0, True),
        ({"type": "number"}, False, False),
        ({"type": "integer", "enum": [1]}, 1.0, True),
        ({"type": "boolean", "enum": [True]}, True, True),
        ({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}, True, True),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.0, False),
        ({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["a"]}, {"a": None}, True),
        ({"type": "array", "items": {"type": "integer"}}, [1, 2.0, 3], True),
        # additionalProperties: <schema> (decision 0010) checks undeclared values only.
        ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": 1, "b": 2.0}, True),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": "1"}, False),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "integer"},
            },
            {"a": "x", "b": 1},
            True,
        ),
        (
            {
                "type": "object",
                "additionalProperties": {"type": "object", "additionalProperties": {"type": "null"}},
            },
            {"a": {"b": None}, "c": {"d": 0}},
            False,
        ),
    ],
)
def test_the_oracle_and_our_validator_agree_on_the_known_python_pitfalls(
    schema: dict[str, Any], value: object, accepted: bool
) -> None:
    assert (compile_validator(schema).validate(value) == []) is accepted
    assert oracle_accepts(schema, value) is accepted


# --- the DSL: specs, conforming arguments, junk --------------------------------------------------

# Disjoint JSON type families: oneOf branches drawn from distinct families never overlap, so a
# value generated for one branch matches exactly one.
FAMILIES = ["string", "boolean", "null", "numeric", "array", "object"]


def dsl_scalars(family: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A DSL scalar spec is a raw scalar schema; unbounded, so :func:`conforming` can satisfy it."""
    return scalar_schemas(family, bounded=False)


def dsl_values(depth: int, family: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """DSL value specs up to ``depth`` container levels (optionally within one type family)."""
    if family in {"string", "boolean", "null", "numeric"}:
        return dsl_scalars(family)
    leaves = dsl_scalars() | annotations.map(lambda extra: {"type": "json", **extra})
    if depth <= 0:
        return leaves if family is None else _container_leaf(family)
    arrays = st.builds(
        lambda items, extra: {"type": "array", **({} if items is None else {"items": items}), **extra},
        st.none() | dsl_values(depth - 1),
        annotations,
    )
    objects = st.builds(
        lambda properties, closed, extra: {
            "type": "object",
            "additionalProperties": not closed,
            **({} if properties is None else {"properties": properties}),
            **extra,
        },
        st.none() | dsl_specs(depth - 1),
        st.booleans(),
        annotations,
    )
    if family == "array":
        return arrays
    if family == "object":
        return objects
    unions = st.lists(st.sampled_from(FAMILIES), min_size=2, max_size=3, unique=True).flatmap(
        lambda families: st.tuples(*[dsl_values(depth - 1, each) for each in families]).map(
            lambda branches: {"oneOf": list(branches)}
        )
    )
    return leaves | arrays | objects | unions


def _container_leaf(family: str) -> st.SearchStrategy[dict[str, Any]]:
    if family == "array":
        return st.just({"type": "array"})
    return st.builds(lambda closed: {"type": "object", "additionalProperties": not closed}, st.booleans())


def dsl_properties(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda spec, required: {**spec, "required": True} if required else spec,
        dsl_values(depth),
        st.booleans(),
    )


def dsl_specs(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(PROPERTY_NAMES, dsl_properties(depth), max_size=4)


def conforming(spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that satisfy a DSL value spec (built from the spec, not from our validator)."""
    if "oneOf" in spec:
        return st.one_of([conforming(branch) for branch in spec["oneOf"]])
    schema_type = spec["type"]
    if schema_type == "json":
        return json_values
    if schema_type in SCALAR_TYPES:
        if "const" in spec:
            return st.just(spec["const"])
        if "enum" in spec:
            return st.sampled_from(spec["enum"])
        return scalar_values(schema_type)
    if schema_type == "array":
        return st.lists(conforming(spec["items"]) if "items" in spec else json_values, max_size=3)
    return conforming_args(spec.get("properties", {}), open_object=spec["additionalProperties"])


def conforming_args(
    properties: dict[str, Any], *, open_object: bool = True
) -> st.SearchStrategy[dict[str, Any]]:
    declared = st.fixed_dictionaries(
        {key: conforming(prop) for key, prop in properties.items() if prop.get("required") is True},
        optional={
            key: conforming(prop) for key, prop in properties.items() if prop.get("required") is not True
        },
    )
    if not open_object:
        return declared
    undeclared = st.dictionaries(
        PROPERTY_NAMES.filter(lambda key: key not in properties), json_values, max_size=2
    )
    return st.builds(lambda extra, own: {**extra, **own}, undeclared, declared)


def required_keys(properties: dict[str, Any]) -> list[str]:
    return [key for key, prop in properties.items() if prop.get("required") is True]


class Hostile(dict[str, Any]):
    def items(self) -> Any:
        raise RuntimeError("trap")

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("trap")


DSL_WORDS = ["string", "number", "integer", "boolean", "null", "array", "object", "json"]
DSL_KEYS = [
    "type",
    "oneOf",
    "properties",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "required",
    "description",
    "title",
    "default",
    "examples",
]
junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=3)
    | st.sampled_from(DSL_WORDS)
    | st.binary(max_size=2)
    | st.builds(object)
    | st.builds(lambda: Hostile(type="string"))
    | st.frozensets(st.integers(), max_size=2),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.sampled_from(DSL_KEYS) | st.text(max_size=2), children, max_size=4)
        | st.dictionaries(st.integers(), children, max_size=2)
    ),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(dsl_specs(2))
def test_json_schema_required_equals_the_required_true_keys_at_every_level(spec: dict[str, Any]) -> None:
    compiled = parameter_schema_spec_to_json_schema(spec)
    # (spec property map, compiled object node) pairs, walked with an explicit stack.
    pending: list[tuple[dict[str, Any], dict[str, Any]]] = [(spec, compiled)]
    values: list[tuple[dict[str, Any], dict[str, Any]]] = []
    while pending or values:
        if values:
            value_spec, node = values.pop()
            if "oneOf" in value_spec:
                values.extend(zip(value_spec["oneOf"], node["oneOf"], strict=True))
            elif value_spec["type"] == "array" and "items" in value_spec:
                values.append((value_spec["items"], node["items"]))
            elif value_spec["type"] == "object":
                assert node["additionalProperties"] is value_spec["additionalProperties"]
                if "properties" in value_spec:
                    pending.append((value_spec["properties"], node))
                else:
                    assert "properties" not in node and "required" not in node
            continue
        properties, node = pending.pop()
        expected = required_keys(properties)
        assert node.get("required", []) == expected  # declaration order, omitted when empty
        assert "required" not in node or expected
        assert list(node["properties"]) == list(properties)
        for key, prop in properties.items():
            # The DSL's per-property flag is gone; only an object's JSON Schema list may remain.
            assert isinstance(node["properties"][key].get("required", []), list)
            values.append((prop, node["properties"][key]))


@settings(max_examples=300, deadline=None)
@given(dsl_specs(3), dsl_values(3))
def test_conversion_is_total_for_any_valid_spec(spec: dict[str, Any], value_spec: dict[str, Any]) -> None:
    assert json_schema_violations(parameter_schema_spec_to_json_schema(spec)) == []
    assert json_schema_violations(value_schema_spec_to_json_schema(value_spec)) == []


@settings(max_examples=300, deadline=None)
@given(junk)
def test_conversion_of_arbitrary_python_input_only_ever_raises_json_schema_error(candidate: object) -> None:
    for compile_ in (value_schema_spec_to_json_schema, parameter_schema_spec_to_json_schema):
        try:
            compiled = compile_(candidate)  # type: ignore[operator]
        except JsonSchemaError as error:
            assert len(error.violations) == 1
        else:
            assert json_schema_violations(compiled) == []
    assert all(isinstance(violation, str) for violation in json_schema_violations(candidate))
    try:
        validator = compile_validator(candidate)  # type: ignore[arg-type]
    except JsonSchemaError as error:
        assert error.violations
    else:
        assert isinstance(validator.validate(candidate), list)


@settings(max_examples=300, deadline=None)
@given(dsl_specs(2), junk | json_values)
def test_validate_args_is_total_for_any_spec_and_any_input(spec: dict[str, Any], args: object) -> None:
    violations = validate_args(spec, args)
    assert isinstance(violations, list)
    assert all(isinstance(violation, str) for violation in violations)


@settings(max_examples=300, deadline=None)
@given(dsl_specs(2).flatmap(lambda spec: st.tuples(st.just(spec), conforming_args(spec))))
def test_args_satisfying_the_spec_pass_validate_args(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    spec, args = case
    assert validate_args(spec, args) == []
    # The oracle agrees that the compiled schema accepts them.
    assert oracle_accepts(parameter_schema_spec_to_json_schema(spec), args)


@settings(max_examples=300, deadline=None)
@given(
    dsl_specs(1)
    .filter(lambda spec: bool(required_keys(spec)))
    .flatmap(
        lambda spec: st.tuples(st.just(spec), conforming_args(spec), st.sampled_from(required_keys(spec)))
    )
)
def test_dropping_a_required_key_is_always_rejected(case: tuple[dict[str, Any], dict[str, Any], str]) -> None:
    spec, args, victim = case
    broken = {key: value for key, value in args.items() if key != victim}
    assert validate_args(spec, broken) == [f'missing required property "{victim}"']


@settings(max_examples=300, deadline=None)
@given(
    dsl_specs(1),
    st.text()
    | st.integers()
    | st.booleans()
    | st.none()
    | lossless_floats
    | st.lists(json_values)
    | st.tuples(json_values)
    | st.frozensets(st.integers()),
)
def test_a_non_object_top_level_is_always_rejected(spec: dict[str, Any], not_an_object: object) -> None:
    assert validate_args(spec, not_an_object) == ['"arguments" must be an object']


def test_the_generators_produce_both_verdicts_and_deep_shapes() -> None:
    # Guards the property tests against vacuous generators: a spec with a required key exists,
    # and the raw-schema generator reaches oneOf, objects and arrays.
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(raw_schemas)
    def collect(schema: dict[str, Any]) -> None:
        stack = [schema]
        while stack:
            node = stack.pop()
            if "oneOf" in node:
                seen.add("oneOf")
                stack.extend(node["oneOf"])
            elif node.get("type") in {"array", "object"}:
                seen.add(node["type"])
                stack.extend(node.get("properties", {}).values())
                if isinstance(node.get("additionalProperties"), dict):
                    seen.add("additionalProperties")
                    stack.append(node["additionalProperties"])
                if "items" in node:
                    stack.append(node["items"])
            elif "enum" in node:
                seen.add("enum")

    collect()
    assert {"oneOf", "array", "object", "enum", "additionalProperties"} <= seen
