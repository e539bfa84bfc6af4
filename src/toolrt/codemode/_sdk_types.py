"""Shared types of a Code Mode SDK: the sub-schemas a tool set repeats, found once and named.

In Code Mode the SDK replaces the native schemas, so it has to be no larger than them; what made it
larger was repetition — the same ``User`` object returned by five tools rendered five times, the
same status enum spelled out on every field that takes it. :func:`collect_shared_types` finds the
object and enum nodes that occur more than once across a tool set's argument and output schemas
and names each once; a renderer then declares it once and refers to it by name everywhere else
(contract TS3–TS6).

Counting is done the way the types will be printed: a shape met for the second time is not looked
into again (its inside is already declared with its first occurrence), so an ``Address`` that only
ever sits inside a shared ``User`` stays inline in ``User``'s declaration instead of becoming a type
of its own. Names come from the first occurrence in render order (tools in the renderer's order,
each tool's arguments before its output), so the text is a function of the tool set alone.

Linear in the schemas' size: structures are interned bottom-up to integers with an explicit stack
(no recursion, no re-serialisation per node), so a deep schema costs no more than a wide one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["SharedTypes", "collect_shared_types", "shape_kind", "without_documented_parameters"]

_SCALARS: Final = frozenset({"string", "number", "integer", "boolean"})


@dataclass(frozen=True)
class SharedTypes:
    """The shared nodes of one tool set.

    ``names`` maps ``id(node)`` of every occurrence of a shared node to its type name (the schemas
    must stay alive while it is used); ``declarations`` lists ``(name, node)`` once per shared
    shape, in first-use order — the order a renderer declares them in.
    """

    names: Mapping[int, str]
    declarations: Sequence[tuple[str, Mapping[str, Any]]]


def shape_kind(node: object) -> str | None:
    """``"object"`` for an object with declared properties, ``"enum"`` for a scalar enum of two or
    more values, else ``None``: the only nodes worth naming (a bare ``string`` is shorter than any
    name, and an object without properties renders as a short ``Record``/``dict``)."""
    if not isinstance(node, Mapping) or "oneOf" in node:
        return None
    kind = node.get("type")
    if kind == "object":
        properties = node.get("properties")
        return "object" if isinstance(properties, Mapping) and properties else None
    if kind in _SCALARS:
        values = node.get("enum")
        return "enum" if isinstance(values, list | tuple) and len(values) >= 2 else None
    return None


def _children(node: Mapping[str, Any], base: str, camel: Callable[[str], str]) -> list[tuple[Any, str]]:
    """The sub-schemas a renderer walks into, each with the name base its types would get."""
    children: list[tuple[Any, str]] = []
    branches = node.get("oneOf")
    if isinstance(branches, list | tuple):
        children.extend((branch, f"{base}{index + 1}") for index, branch in enumerate(branches))
        return children
    items = node.get("items")
    if isinstance(items, Mapping):
        children.append((items, base + "Item"))
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        children.extend((schema, camel(str(key))) for key, schema in properties.items())
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        children.append((additional, base + "Value"))
    return children


def _intern(roots: Sequence[object]) -> dict[int, int]:
    """``id(container) -> structure number``: equal numbers for structurally equal JSON values.

    Keys keep their order (property order is rendered), scalars are told apart by type as well as
    value (``True`` is not ``1``). A node's own ``description`` is left out of its shape: no
    renderer prints it as part of the type (the field that holds the node carries it instead).
    """
    numbers: dict[int, int] = {}
    table: dict[tuple[Any, ...], int] = {}
    open_: set[int] = set()  # containers whose children are still being numbered: a cycle's mark
    stack: list[tuple[object, bool]] = [(root, False) for root in reversed(roots)]

    def ref(value: object) -> object:
        if isinstance(value, Mapping | list | tuple):
            return numbers[id(value)]
        return (type(value).__name__, value)

    while stack:
        value, ready = stack.pop()
        if id(value) in numbers or not isinstance(value, Mapping | list | tuple):
            continue
        if not ready:
            if id(value) in open_:
                raise ValueError("cyclic schema")
            open_.add(id(value))
            stack.append((value, True))
            children = value.values() if isinstance(value, Mapping) else value
            stack.extend((child, False) for child in children if isinstance(child, Mapping | list | tuple))
            continue
        if isinstance(value, Mapping):
            key: tuple[Any, ...] = (
                "d",
                tuple((name, ref(child)) for name, child in value.items() if name != "description"),
            )
        else:
            key = ("l", tuple(ref(child) for child in value))
        numbers[id(value)] = table.setdefault(key, len(table))
        open_.discard(id(value))
    return numbers


def collect_shared_types(
    roots: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    camel: Callable[[str], str],
    valid: Callable[[str], bool],
    reserved: frozenset[str],
) -> SharedTypes:
    """Find the object and enum shapes that occur at least twice among ``roots`` and name them.

    Raises ``ValueError`` for a cyclic schema (a renderer then shares nothing).

    ``roots`` are ``(name base, schema)`` pairs in render order (``GetUserArgs``, ...). An object
    is named after where it is first met (a property's camel-cased key, an array's item as its
    base + ``Item``, a tool's arguments or output as the root base); an enum after its property.
    A name that is not ``valid`` becomes ``Shape``; a taken or ``reserved`` one gets ``2``, ``3``...

    >>> user = {"type": "object", "properties": {"id": {"type": "string"}}}
    >>> shared = collect_shared_types(
    ...     [("AOutput", {"type": "object", "properties": {"owner": user}}), ("BOutput", user)],
    ...     camel=str.title, valid=str.isidentifier, reserved=frozenset(),
    ... )
    >>> [name for name, _ in shared.declarations]
    ['Owner']
    """
    numbers = _intern([schema for _, schema in roots])
    counts: dict[int, int] = {}
    first: dict[int, tuple[str, Mapping[str, Any]]] = {}
    stack: list[tuple[Any, str]] = [(schema, base) for base, schema in reversed(roots)]
    while stack:
        node, base = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if shape_kind(node) is not None:
            number = numbers[id(node)]
            counts[number] = counts.get(number, 0) + 1
            if counts[number] > 1:
                continue  # its inside was counted with its first occurrence
            first[number] = (base, node)
        stack.extend(reversed(_children(node, base, camel)))
    taken = set(reserved)
    shape_names: dict[int, str] = {}
    declarations: list[tuple[str, Mapping[str, Any]]] = []
    for number, (base, node) in first.items():  # first-use order
        if counts[number] < 2:
            continue
        stem = base if valid(base) else "Shape"
        name, suffix = stem, 2
        while name in taken:
            name, suffix = f"{stem}{suffix}", suffix + 1
        taken.add(name)
        shape_names[number] = name
        declarations.append((name, node))
    names: dict[int, str] = {}
    if shape_names:
        walk: list[object] = [schema for _, schema in roots]
        seen: set[int] = set()
        while walk:
            node = walk.pop()
            if not isinstance(node, Mapping) or id(node) in seen:
                continue
            seen.add(id(node))
            number = numbers[id(node)]
            if number in shape_names and shape_kind(node) is not None:
                names[id(node)] = shape_names[number]
            walk.extend(child for child, _ in _children(node, "", camel))
    return SharedTypes(names=names, declarations=declarations)


_DOCUMENTED: Final = re.compile(r"`([^`\s]+)`\s*:")


def without_documented_parameters(description: object, parameters: object) -> object:
    """``parameters`` minus the descriptions of the top-level arguments ``description`` already
    documents as ``- `name`: ...`` (contract TS5).

    Tools written for native calling often describe every argument twice, in the tool's text and
    in the schema; in the SDK the tool's text sits right above the arguments' class, so the second
    copy only costs tokens. Only a definition (the backticked name followed by a colon) counts, not
    a passing mention. Anything that is not a plain object schema comes back unchanged.

    >>> schema = {"type": "object", "properties": {"q": {"type": "string", "description": "Query."}}}
    >>> without_documented_parameters("Search. - `q`: the query, in words.", schema)
    {'type': 'object', 'properties': {'q': {'type': 'string'}}}
    """
    if not isinstance(description, str) or not isinstance(parameters, Mapping):
        return parameters
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return parameters
    documented = set(_DOCUMENTED.findall(description))
    if not documented.intersection(properties):
        return parameters
    stripped = {
        key: (
            {k: v for k, v in schema.items() if k != "description"}
            if key in documented and isinstance(schema, Mapping)
            else schema
        )
        for key, schema in properties.items()
    }
    return {**parameters, "properties": stripped}
