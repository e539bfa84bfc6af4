"""Compiled schema nodes: the table :class:`~toolrt.schema._validator.Validator` walks.

Split from the validator so the hot walk and the one-off compilation read separately. Compilation
runs on an *asserted* schema (see :mod:`toolrt.schema._subset`), iteratively, and shares one node
per reused subschema object, so a DAG of shared definitions compiles in linear time. Everything a
scalar check needs at validation time is precomputed here: the exact Python type that passes
without further checks, normalised ``enum``/``const`` values, and the message texts with
``JSON.stringify``-compatible quoting of the literals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolrt._errors import JsonSchemaError
from toolrt._json import js_json_dumps
from toolrt.schema._subset import _plain_scalar, _read_array, _read_record

# Node kinds. Everything up to _LAST_INLINE is checked inline by the parent without a frame.
_ANY: Final = 0
_STRING: Final = 1
_NUMBER: Final = 2
_INTEGER: Final = 3
_BOOLEAN: Final = 4
_NULL: Final = 5
_LAST_INLINE: Final = 5
_OBJECT: Final = 6
_ARRAY: Final = 7
_ONE_OF: Final = 8

_KIND_OF_TYPE: Final = {
    "string": _STRING,
    "number": _NUMBER,
    "integer": _INTEGER,
    "boolean": _BOOLEAN,
    "null": _NULL,
    "object": _OBJECT,
    "array": _ARRAY,
}
_TYPE_MESSAGE: Final = {
    _STRING: " must be a string",
    _NUMBER: " must be a number",
    _INTEGER: " must be an integer",
    _BOOLEAN: " must be a boolean",
    _NULL: " must be null",
    _OBJECT: " must be an object",
    _ARRAY: " must be an array",
}
# The exact Python type that passes a scalar node with no enum/const without further checks
# (ints additionally need the cheap safe-range test).
_FAST_TYPE: Final = {_STRING: str, _NUMBER: int, _INTEGER: int, _BOOLEAN: bool, _NULL: type(None)}


class _Node:
    """One compiled schema node. Fields irrelevant to the node's kind keep their defaults."""

    __slots__ = (
        "branches",
        "closed",
        "const",
        "const_message",
        "declared",
        "enum",
        "enum_message",
        "fast_type",
        "flat_branches",
        "has_const",
        "items",
        "kind",
        "properties",
        "required",
        "type_message",
    )

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.type_message = _TYPE_MESSAGE.get(kind, "")
        self.fast_type: type | None = None
        self.enum: tuple[object, ...] | None = None
        self.enum_message = ""
        self.has_const = False
        self.const: object = None
        self.const_message = ""
        self.properties: tuple[tuple[str, _Node], ...] = ()
        self.required: tuple[str, ...] = ()
        self.declared: frozenset[str] = frozenset()
        self.closed = False
        self.items: _Node | None = None
        self.branches: tuple[_Node, ...] = ()
        self.flat_branches = False


def _compile(schema: object) -> _Node:
    """Compile an *asserted* schema into nodes, iteratively; shared subschemas share one node."""
    memo: dict[int, _Node] = {}
    root = _shell(schema, memo)
    pending: list[tuple[Mapping[str, Any], _Node]] = [(_record(schema), root)]
    while pending:
        record, node = pending.pop()
        kind = node.kind
        if kind == _OBJECT:
            declared = _read_record(record.get("properties")) or {}
            children: list[tuple[str, _Node]] = []
            for key, child in declared.items():
                child_node = memo.get(id(child))
                if child_node is None:
                    child_node = _shell(child, memo)
                    pending.append((_record(child), child_node))
                children.append((key, child_node))
            node.properties = tuple(children)
            node.declared = frozenset(declared)
            node.required = tuple(_read_array(record.get("required")) or ())
            node.closed = record.get("additionalProperties") is False
        elif kind == _ARRAY:
            if "items" in record:
                child = record["items"]
                child_node = memo.get(id(child))
                if child_node is None:
                    child_node = _shell(child, memo)
                    pending.append((_record(child), child_node))
                node.items = child_node
        elif kind == _ONE_OF:
            branches: list[_Node] = []
            for child in _read_array(record["oneOf"]) or ():
                child_node = memo.get(id(child))
                if child_node is None:
                    child_node = _shell(child, memo)
                    pending.append((_record(child), child_node))
                branches.append(child_node)
            node.branches = tuple(branches)
            node.flat_branches = all(branch.kind <= _LAST_INLINE for branch in branches)
    return root


def _record(schema: object) -> Mapping[str, Any]:
    record = _read_record(schema)
    if record is None:
        # Only reachable if a hostile mapping changed between the assert and the compile.
        raise JsonSchemaError(["schema must be a schema object"])
    return record


def _shell(schema: object, memo: dict[int, _Node]) -> _Node:
    """A node with its kind and scalar constraints; container children are filled in by _compile."""
    record = _record(schema)
    if "oneOf" in record:
        node = _Node(_ONE_OF)
    elif "type" in record:
        node = _Node(_KIND_OF_TYPE[record["type"]])
    else:
        node = _Node(_ANY)
    memo[id(schema)] = node
    if _STRING <= node.kind <= _NULL:
        if "enum" in record:
            entries = tuple(_plain_scalar(entry) for entry in _read_array(record["enum"]) or ())
            node.enum = entries
            node.enum_message = f" must be one of {js_json_dumps(list(entries))}"
        if "const" in record:
            node.has_const = True
            node.const = _plain_scalar(record["const"])
            node.const_message = f" must be {js_json_dumps(node.const)}"
        if node.enum is None and not node.has_const:
            node.fast_type = _FAST_TYPE[node.kind]
    return node
