"""Schemas for tool parameters and outputs: the raw JSON-Schema subset, its validator, the DSL.

Three layers, each usable on its own:

* :mod:`~toolrt.schema._subset` — the enforced raw JSON-Schema subset (what the model sees):
  :func:`assert_supported_json_schema` reports *every* unsupported construct at once.
* :mod:`~toolrt.schema._validator` — :func:`compile_validator` turns an asserted schema into a
  :class:`Validator` whose ``validate(value, path)`` returns path-qualified violation messages,
  byte-identical to upstream ``@dsh-cc/tools``; :func:`validate_json_schema_value` does the same
  with a small identity-keyed cache of compiled validators.
* :mod:`~toolrt.schema._dsl` — the author DSL ``define_tool`` takes (:data:`ParameterSchemaSpec`,
  :data:`ValueSchemaSpec`), compiled to the raw subset.
* :mod:`~toolrt.schema._normalize` — :func:`normalize_schema` maps the dialects of real tool
  catalogues (``"type": "dict"``, ``"float"``, type arrays, ``"default": "None"``...) into the
  subset and reports every rewrite (:class:`NormalizedSchema`).

Python adaptations of upstream's JavaScript rules are documented in each module; the short form:
a JSON object is a ``dict`` with ``str`` keys, an array a ``list``/``tuple``, ``None`` is ``null``
(never "missing"), ``bool`` is never a number, and every walk is iterative.
"""

from __future__ import annotations

from toolrt.schema._dsl import (
    ArrayParameterSpec,
    ArrayValueSchemaSpec,
    BooleanParameterSpec,
    BooleanValueSchemaSpec,
    IntegerParameterSpec,
    IntegerValueSchemaSpec,
    JsonParameterSpec,
    JsonValueSchemaSpec,
    NullParameterSpec,
    NullValueSchemaSpec,
    NumberParameterSpec,
    NumberValueSchemaSpec,
    ObjectParameterSpec,
    ObjectValueSchemaSpec,
    OneOfParameterSpec,
    OneOfValueSchemaSpec,
    ParameterPropertySpec,
    ParameterSchemaSpec,
    StringParameterSpec,
    StringValueSchemaSpec,
    ValueSchemaSpec,
    parameter_schema_spec_to_json_schema,
    validate_args,
    value_schema_spec_to_json_schema,
)
from toolrt.schema._normalize import NormalizedSchema, SchemaNormalizedWarning, normalize_schema
from toolrt.schema._subset import (
    SCHEMA_TYPES,
    assert_object_json_schema,
    assert_supported_json_schema,
    json_schema_violations,
)
from toolrt.schema._validator import Validator, compile_validator, validate_json_schema_value

__all__ = [
    "SCHEMA_TYPES",
    "ArrayParameterSpec",
    "ArrayValueSchemaSpec",
    "BooleanParameterSpec",
    "BooleanValueSchemaSpec",
    "IntegerParameterSpec",
    "IntegerValueSchemaSpec",
    "JsonParameterSpec",
    "JsonValueSchemaSpec",
    "NormalizedSchema",
    "NullParameterSpec",
    "NullValueSchemaSpec",
    "NumberParameterSpec",
    "NumberValueSchemaSpec",
    "ObjectParameterSpec",
    "ObjectValueSchemaSpec",
    "OneOfParameterSpec",
    "OneOfValueSchemaSpec",
    "ParameterPropertySpec",
    "ParameterSchemaSpec",
    "SchemaNormalizedWarning",
    "StringParameterSpec",
    "StringValueSchemaSpec",
    "Validator",
    "ValueSchemaSpec",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "compile_validator",
    "json_schema_violations",
    "normalize_schema",
    "parameter_schema_spec_to_json_schema",
    "validate_args",
    "validate_json_schema_value",
    "value_schema_spec_to_json_schema",
]
