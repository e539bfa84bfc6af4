"""An MCP tool's JSON Schema in toolrt's subset: what the subset cannot express becomes "any" there.

MCP servers write full JSON Schema (``anyOf``, ``$ref``, ``pattern``, type lists, ...), and toolrt's
subset enforces every keyword it accepts (decision J1: no promise the validator would ignore). The
parameters the model reads and the declared output must both be in the subset, so
:func:`degrade_schema` rewrites a schema into one that accepts **at least** everything the original
accepts: a node the subset cannot state
becomes ``{}`` (any JSON) with its description kept, and a constraint it cannot check (``pattern``,
``minimum``, ...) is dropped. Nothing the server would produce or accept is refused on our side;
the server (and the SDK, which checks ``structuredContent`` against the full ``outputSchema``) keeps
the real validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolrt.schema import SCHEMA_TYPES, json_schema_violations

__all__ = ["degrade_schema", "parameters_schema"]

_SCALARS = frozenset({"string", "number", "integer", "boolean", "null"})
_MAX_DEPTH = 64


def degrade_schema(schema: object) -> dict[str, Any]:
    """The loosest subset schema that still says what the subset can of ``schema`` (never raises).

    >>> degrade_schema({"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}]}}})
    {'type': 'object', 'properties': {'n': {}}}
    """
    degraded = _node(schema, 0)
    # A last guard: whatever slipped through (a hostile value) makes the whole declaration "any".
    return degraded if not json_schema_violations(degraded) else {}


def parameters_schema(input_schema: object) -> dict[str, Any]:
    """An ``inputSchema`` as the parameters the model reads: degraded, and always an object schema."""
    degraded = degrade_schema(input_schema)
    if degraded.get("type") != "object":
        # A root the subset cannot state ("anyOf" of two objects) still takes an object of arguments.
        degraded = {**degraded, "type": "object"}
        degraded.pop("enum", None)
        degraded.pop("const", None)
        degraded.pop("items", None)
    return degraded


def _annotations(node: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key in ("title", "description"):
        if isinstance(node.get(key), str):
            kept[key] = node[key]
    return kept


def _node(node: object, depth: int) -> dict[str, Any]:
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return {}
    out = _annotations(node)
    kind = node.get("type")
    # Combinators, references and conditionals have no subset form that is never stricter.
    if any(key in node for key in ("anyOf", "allOf", "oneOf", "not", "$ref", "if", "$dynamicRef")):
        return out
    if not isinstance(kind, str) or kind not in SCHEMA_TYPES:
        return out
    out["type"] = kind
    if kind == "object":
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            out["properties"] = {
                str(name): _node(child, depth + 1)
                for name, child in properties.items()
                if isinstance(name, str)
            }
        required = node.get("required")
        if isinstance(required, list) and all(isinstance(name, str) for name in required):
            # Requiring a property the node does not declare is still stated exactly by the subset.
            out["required"] = list(dict.fromkeys(required))
        extra = node.get("additionalProperties")
        open_by_pattern = "patternProperties" in node or "unevaluatedProperties" in node
        if extra is False and not open_by_pattern:
            out["additionalProperties"] = False
        elif isinstance(extra, Mapping) and not open_by_pattern:
            out["additionalProperties"] = _node(extra, depth + 1)
    elif kind == "array":
        items = node.get("items")
        if isinstance(items, Mapping):
            out["items"] = _node(items, depth + 1)
    elif kind in _SCALARS:
        for key in ("enum", "const"):
            if key in node:
                candidate = {"type": kind, key: node[key]}
                if not json_schema_violations(candidate):
                    out[key] = node[key]
    return out
