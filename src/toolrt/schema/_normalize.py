"""``normalize_schema``: the JSON-Schema dialects of real tool catalogues, mapped into the subset.

Real catalogues do not write standard JSON Schema. BFCL's function docs say ``"type": "dict"``,
``"float"``, ``"tuple"`` and ``"any"``, and ``"default": "None"`` for an optional parameter; others
write type arrays (``["string", "null"]``), ``anyOf`` where ``oneOf`` is meant, draft-3
``"required": true`` on a property, ``"optional": true``, or ``2.0`` for an integer. toolrt refuses
all of these at registration (a schema the model reads must be one the runtime enforces), and this
module is the documented way to accept them: every rewrite is reported, in words that name the path,
so nothing changes silently.

>>> fixed = normalize_schema({
...     "type": "dict",
...     "properties": {"x": {"type": "float", "default": "None"}, "xs": {"type": "tuple"}},
...     "required": ["xs"],
... })
>>> fixed.schema["type"], fixed.schema["properties"], fixed.schema["required"]
('object', {'x': {'type': 'number', 'default': None}, 'xs': {'type': 'array'}}, ['xs'])
>>> for change in fixed.changes:
...     print(change)
schema.type: "dict" -> "object"
schema.properties.x.type: "float" -> "number"
schema.properties.x.default: "None" -> null
schema.properties.xs.type: "tuple" -> "array"

Only rewrites that keep the meaning are made; what has no faithful spelling in the subset
(``$ref``, ``allOf``, an ``anyOf`` whose branches overlap) is left for the registration check to
refuse with its path. The one lossy rewrite is ``pattern``: ECMA-262 and Python regular expressions
differ, so toolrt never enforces one; it moves into the description, where the model still reads it,
and the change says it is no longer enforced. The input is never mutated; the walk is iterative.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolrt._json import js_json_dumps
from toolrt.schema._subset import (
    COUNT_BOUNDS,
    NUMBER_BOUNDS,
    SCHEMA_TYPES,
    is_integral,
    json_schema_violations,
    plain_number,
    read_array,
    read_record,
    safely_lossless,
)

__all__ = ["NormalizedSchema", "SchemaNormalizedWarning", "normalize_schema", "raw_parameter_violations"]


@dataclass(frozen=True, slots=True)
class NormalizedSchema:
    """A schema rewritten into the subset's spelling, and every rewrite made, in walk order.

    ``changes`` is empty when the schema was already standard. ``schema`` may still fall outside the
    subset (a construct with no faithful rewrite): registration checks it and names what is left.
    """

    schema: dict[str, Any]
    changes: tuple[str, ...]


class SchemaNormalizedWarning(UserWarning):
    """A definition's schema was normalized on request (``define_tool(..., normalize=True)``).

    A warning, not an event: it is raised where the tool is defined, before any runtime exists, and
    Python shows it once per call site by default (``-W error::toolrt.schema.SchemaNormalizedWarning``
    turns it into a failure in CI). ``changes`` holds the rewrites, as :attr:`NormalizedSchema.changes`.
    """

    def __init__(self, message: str, changes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.changes = changes


# Type names seen in catalogues, lower-cased, and the subset type they mean (None: no type, "any").
_TYPE_ALIASES: Final[Mapping[str, str | None]] = {
    **{name: name for name in SCHEMA_TYPES},
    "dict": "object",
    "map": "object",
    "mapping": "object",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "int": "integer",
    "long": "integer",
    "tuple": "array",
    "list": "array",
    "str": "string",
    "text": "string",
    "bool": "boolean",
    "none": "null",
    "nonetype": "null",
    "any": None,
}
_META_KEYS: Final = ("$schema", "$id", "$comment")
# Which keywords belong to which type, for splitting a type array into oneOf branches.
_TYPE_KEYWORDS: Final[Mapping[str, tuple[str, ...]]] = {
    "object": ("properties", "required", "additionalProperties"),
    "array": ("items", "minItems", "maxItems", "uniqueItems"),
    "string": ("minLength", "maxLength", "enum", "const"),
    "number": (*NUMBER_BOUNDS, "multipleOf", "enum", "const"),
    "integer": (*NUMBER_BOUNDS, "multipleOf", "enum", "const"),
    "boolean": ("enum", "const"),
    "null": ("enum", "const"),
}
_INTEGER_VALUED: Final = ("enum", "const", "default", *NUMBER_BOUNDS, "multipleOf")


def normalize_schema(schema: object, root: str = "schema") -> NormalizedSchema:
    """Rewrite the common catalogue dialects of a JSON Schema into the subset; report each rewrite.

    What it maps (each reported as ``<path>.<keyword>: <before> -> <after>`` or a sentence):

    * type names: ``dict``/``map`` → ``object``, ``float``/``double`` → ``number``, ``int`` →
      ``integer``, ``tuple``/``list`` → ``array``, ``str`` → ``string``, ``bool`` → ``boolean``,
      ``None`` → ``null``, any capitalisation; ``any`` → no type (any JSON value);
    * a type array → one type, or a ``oneOf`` with each type's keywords on its branch (``integer``
      folds into ``number`` beside it); an ``anyOf`` of branches of distinct types → ``oneOf``;
      an untyped ``enum`` of one JSON type gets that type;
    * ``"default": "None"`` → ``null``; integral floats where an integer is meant (``2.0``);
    * ``"required": true`` / ``"optional": true`` on a property → the parent's ``required`` list;
      a required name with no property gets an any-value property (what JSON Schema means by it);
      a draft-4 tuple ``items`` list whose schemas are all equal → ``items`` with a fixed size;
    * ``$schema``/``$id``/``$comment`` dropped; ``pattern`` moved into the description (unenforced).
    """
    changes: list[str] = []
    holder: dict[str, Any] = {}
    # Tasks: (source node, path, target container, key in it, is a property of an object).
    tasks: list[tuple[Any, str, Any, Any, bool]] = [(schema, root, holder, "root", False)]
    while tasks:
        source, path, target, key, is_property = tasks.pop()
        record = read_record(source)
        if record is None:
            target[key] = source  # not a schema object: left for the subset check to name
            continue
        node = dict(record)
        target[key] = node
        children = _normalize_node(node, path, is_property, changes)
        for child in reversed(children):
            tasks.append(child)
    result = holder["root"]
    return NormalizedSchema(result if isinstance(result, dict) else {}, tuple(changes))


def _normalize_node(
    node: dict[str, Any], path: str, is_property: bool, changes: list[str]
) -> list[tuple[Any, str, Any, Any, bool]]:
    """Rewrite one node in place; the children still to walk, in order."""
    for meta in _META_KEYS:
        if meta in node:
            del node[meta]
            changes.append(f"{path}.{meta}: dropped (metadata the model does not need)")
    if is_property:
        for flag in ("required", "optional"):
            if flag in node and _flag(node[flag]) is not None:
                del node[flag]  # the parent moved it into its required list
    _normalize_type(node, path, changes)
    if node.get("default") == "None":
        node["default"] = None
        changes.append(f'{path}.default: "None" -> null')
    if "anyOf" in node and "oneOf" not in node and "type" not in node:
        branches = read_array(node["anyOf"])
        if branches is not None and _disjoint_types(branches):
            node["oneOf"] = node.pop("anyOf")
            changes.append(
                f"{path}.anyOf -> oneOf (its branches have distinct types, so exactly one matches)"
            )
    if "enum" in node and "type" not in node and "oneOf" not in node:
        kind = _common_scalar_type(node["enum"])
        if kind is not None:
            node["type"] = kind
            changes.append(f'{path}.type: added "{kind}" (the type of every enum entry)')
    if node.get("type") == "integer":
        _make_integral(node, _INTEGER_VALUED, path, changes)
    _make_integral(node, COUNT_BOUNDS, path, changes)
    if "pattern" in node and isinstance(node["pattern"], str):
        pattern = node.pop("pattern")
        note = f"Must match the regular expression {pattern}."
        described = node.get("description")
        node["description"] = f"{described} {note}" if isinstance(described, str) and described else note
        changes.append(
            f"{path}.pattern: moved into the description (toolrt does not enforce regular expressions)"
        )
    _normalize_tuple_items(node, path, changes)

    children: list[tuple[Any, str, Any, Any, bool]] = []
    properties = read_record(node.get("properties"))
    if properties is not None:
        _normalize_required(node, properties, path, changes)
        properties = read_record(node["properties"]) or {}  # may have gained required names
        copied = dict(properties)
        node["properties"] = copied
        for name, child in properties.items():
            children.append((child, f"{path}.properties.{name}", copied, name, True))
    elif isinstance(node.get("required"), list | tuple) and node.get("type") == "object":
        _normalize_required(node, {}, path, changes)
        node["properties"] = dict(read_record(node.get("properties")) or {})
    if read_record(node.get("items")) is not None:
        children.append((node["items"], f"{path}.items", node, "items", False))
    if read_record(node.get("additionalProperties")) is not None:
        children.append(
            (
                node["additionalProperties"],
                f"{path}.additionalProperties",
                node,
                "additionalProperties",
                False,
            )
        )
    branches = read_array(node.get("oneOf"))
    if branches is not None:
        copied_branches = list(branches)
        node["oneOf"] = copied_branches
        for index, branch in enumerate(branches):
            children.append((branch, f"{path}.oneOf[{index}]", copied_branches, index, False))
    return children


def _normalize_type(node: dict[str, Any], path: str, changes: list[str]) -> None:
    declared = node.get("type")
    if isinstance(declared, str):
        alias = _TYPE_ALIASES.get(declared.lower(), declared)
        if alias is None:
            del node["type"]
            changes.append(f'{path}.type: "{declared}" removed (any JSON value)')
        elif alias != declared:
            node["type"] = alias
            changes.append(f'{path}.type: "{declared}" -> "{alias}"')
        return
    names = read_array(declared)
    if names is None or not names or not all(isinstance(name, str) for name in names):
        return
    kinds: list[str] = []
    for name in names:
        alias = _TYPE_ALIASES.get(name.lower(), name)
        if alias is None:
            del node["type"]
            changes.append(f"{path}.type: {_text(list(names))} removed (it includes any JSON value)")
            return
        if alias not in kinds:
            kinds.append(alias)
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")  # every integer is a number: both branches would match 1
    if any(kind not in SCHEMA_TYPES for kind in kinds):
        return  # an unknown name: left for the subset check to name
    if len(kinds) == 1:
        node["type"] = kinds[0]
        changes.append(f'{path}.type: {_text(list(names))} -> "{kinds[0]}"')
        return
    del node["type"]
    branches: list[dict[str, Any]] = []
    for kind in kinds:
        branch: dict[str, Any] = {"type": kind}
        for keyword in _TYPE_KEYWORDS[kind]:
            if keyword in node:
                branch[keyword] = node[keyword]
        if "enum" in branch:
            entries = [
                entry for entry in read_array(branch["enum"]) or () if _json_type(entry) in _accepts(kind)
            ]
            if entries:
                branch["enum"] = entries
            else:
                del branch["enum"]
        if "const" in branch and _json_type(branch["const"]) not in _accepts(kind):
            del branch["const"]
        branches.append(branch)
    for kind in kinds:
        for keyword in _TYPE_KEYWORDS[kind]:
            node.pop(keyword, None)
    node["oneOf"] = branches
    changes.append(f"{path}.type: {_text(list(names))} -> oneOf of {', '.join(kinds)}")


def _accepts(kind: str) -> tuple[str, ...]:
    return ("integer", "number") if kind == "number" else (kind,)


def _json_type(value: object) -> str | None:
    if isinstance(value, str):
        return "string"
    if value is True or value is False:
        return "boolean"
    if value is None:
        return "null"
    number = plain_number(value)
    if number is None:
        return None
    return "integer" if is_integral(number) else "number"


def _common_scalar_type(entries: object) -> str | None:
    values = read_array(entries)
    if not values:
        return None
    kinds = {_json_type(value) for value in values}
    if kinds == {"integer", "number"}:
        return "number"
    if len(kinds) == 1:
        kind = kinds.pop()
        return None if kind == "null" else kind
    return None


def _disjoint_types(branches: list[Any] | tuple[Any, ...]) -> bool:
    seen: set[str] = set()
    if len(branches) < 2:
        return False
    for branch in branches:
        record = read_record(branch)
        declared = None if record is None else record.get("type")
        if not isinstance(declared, str):
            return False
        kind = _TYPE_ALIASES.get(declared.lower(), declared)
        if kind is None:
            return False
        family = "number" if kind == "integer" else kind
        if family in seen:
            return False
        seen.add(family)
    return True


def _normalize_required(
    node: dict[str, Any], properties: Mapping[str, Any], path: str, changes: list[str]
) -> None:
    declared = read_array(node.get("required"))
    if "required" in node and type(node["required"]) is bool:
        del node["required"]  # a draft-3 flag on an object that is not a property: meaningless here
        changes.append(f"{path}.required: a boolean outside a property, dropped")
        declared = None
    required: list[Any] = list(declared) if declared is not None else []
    before = list(required)
    for name, child in properties.items():
        record = read_record(child)
        if record is None:
            continue
        is_required = _flag(record.get("required"))
        is_optional = _flag(record.get("optional"))
        if is_required is True and name not in required:
            required.append(name)
            changes.append(f"{path}.properties.{name}.required: true -> listed in {path}.required")
        elif is_required is not None:
            changes.append(f"{path}.properties.{name}.required: {_text(record['required'])} dropped")
        if is_optional is True and name in required:
            required.remove(name)
            changes.append(f"{path}.properties.{name}.optional: true -> removed from {path}.required")
        elif is_optional is not None:
            changes.append(f"{path}.properties.{name}.optional: {_text(record['optional'])} dropped")
    if required != before or (declared is None and required):
        node["required"] = required
    if declared is not None or required:
        missing = [name for name in required if isinstance(name, str) and name not in properties]
        if missing:
            filled = dict(properties)
            for name in missing:
                filled[name] = {}
                changes.append(
                    f"{path}.properties.{name}: added as any value (it is required but was not declared)"
                )
            node["properties"] = filled


def _flag(value: object) -> bool | None:
    """A draft-3 style ``required``/``optional`` flag (``true``, or the text ``"true"``), else ``None``."""
    if type(value) is bool:
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _normalize_tuple_items(node: dict[str, Any], path: str, changes: list[str]) -> None:
    items = node.get("items")
    schemas = read_array(items) if not isinstance(items, Mapping) else None
    if schemas is None or not schemas:
        return
    first = schemas[0]
    if all(schema == first for schema in schemas[1:]) and read_record(first) is not None:
        node["items"] = first
        node.setdefault("minItems", len(schemas))
        node.setdefault("maxItems", len(schemas))
        changes.append(
            f"{path}.items: a list of {len(schemas)} equal schemas -> one schema, "
            f"exactly {len(schemas)} items"
        )


class _Unchanged:
    __slots__ = ()


_UNCHANGED: Final = _Unchanged()


def _make_integral(node: dict[str, Any], keywords: Iterable[str], path: str, changes: list[str]) -> None:
    """Rewrite each of ``keywords`` in ``node`` with integral floats as ints, noting each change."""
    for keyword in keywords:
        if keyword in node:
            fixed = _integral(node[keyword])
            if fixed is not _UNCHANGED:
                changes.append(f"{path}.{keyword}: {_text(node[keyword])} -> {_text(fixed)}")
                node[keyword] = fixed


def _integral(value: Any) -> Any:
    """``value`` with integral floats as ints (in a list too), or ``_UNCHANGED``."""
    if type(value) is float and value.is_integer():
        return int(value)
    entries = read_array(value)
    if entries is not None and any(type(entry) is float and entry.is_integer() for entry in entries):
        return [int(entry) if type(entry) is float and entry.is_integer() else entry for entry in entries]
    return _UNCHANGED


def _text(value: Any) -> str:
    try:
        return js_json_dumps(value)
    except Exception:
        return repr(value)


def raw_parameter_violations(name: str, parameters: object) -> list[str]:
    """Why a registered tool's ``parameters`` cannot reach a model (``[]``: they can), for registration.

    Paths are rooted at ``<name>.parameters``. When :func:`normalize_schema` would turn the schema into
    a supported one, a last entry says so and lists what it would change, so the fix is one call away.
    A schema that is not lossless JSON is left to schema projection, which refuses it in its own words
    (upstream R6), so this returns ``[]`` for it.
    """
    if not safely_lossless(parameters):
        return []
    root = f"{name}.parameters"
    violations = json_schema_violations(parameters, root)
    if violations:
        fixed = normalize_schema(parameters, root)
        if fixed.changes and not json_schema_violations(fixed.schema):
            violations.append(
                "toolrt.schema.normalize_schema() maps this dialect into the subset ("
                + "; ".join(fixed.changes)
                + "); define_tool(input_schema=..., normalize=True) applies it when the tool is defined"
            )
    return violations
