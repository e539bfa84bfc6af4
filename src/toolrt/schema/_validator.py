"""The compiled value validator for the raw subset (upstream J4): the hot path of every tool call.

:func:`compile_validator` asserts a schema once and compiles it into a table of nodes (the
compilation section at the end of this module); :meth:`Validator.validate` then walks a value
against that table. Messages and their order are upstream's, byte for byte (``P`` is the path,
shown as ``arguments`` when the root path is ``""``):

* no ``type``/``oneOf`` → ``"P" must be a lossless JSON value`` unless the value is lossless JSON;
* ``oneOf`` → exactly one branch must produce no violation, else
  ``"P" must match exactly one oneOf branch (matched N)`` (branch messages are discarded);
* scalars → ``"P" must be a string`` / ``a number`` / ``an integer`` / ``a boolean`` / ``null``; a
  lossy number → ``"P" must be a finite JSON number``; then ``enum`` → ``"P" must be one of [...]``
  or else ``const`` → ``"P" must be <const>`` (JSON text as ``JSON.stringify`` writes it);
* objects → ``"P" must be an object``; then ``missing required property "P.k"`` for each required
  key, then each declared property present (declaration order), then with
  ``additionalProperties: false`` each undeclared key → ``"P.k" is not a declared property
  (additionalProperties: false)``, and with ``additionalProperties: <schema>`` each undeclared value
  is validated against that schema at ``P.k`` (toolrt's extension, decision 0010); an object with
  no violation must be lossless as a whole, else
  ``"P" must be a lossless JSON object``;
* arrays → ``"P" must be an array``; then ``minItems``/``maxItems`` → ``"P" must have at least N
  items (got M)`` / ``at most``, ``uniqueItems`` → ``"P" must not contain duplicate items ([i] and
  [j] are equal)`` (JSON equality: ``1`` equals ``1.0``, ``true`` is not ``1``); items at ``P[i]``;
  if no violation, the array must be lossless, else ``"P" must be a dense lossless JSON array``;
* the bounds of decision 0011, checked after ``enum``/``const``, first failing one reported:
  ``"P" must be >= m (got v)`` (``minimum``), ``<=`` (``maximum``), ``>`` (``exclusiveMinimum``),
  ``<`` (``exclusiveMaximum``), ``"P" must be a multiple of m (got v)`` (``jsonschema``'s
  arithmetic: a float divisor divides, an int one takes the remainder), and ``"P" must be at least
  N characters long (got M)`` / ``at most`` for ``minLength``/``maxLength`` (code points, as JSON
  Schema counts them: Python's ``len``);
* an exception raised while reading a value (a hostile ``dict``/``list`` subclass) is contained and
  reported as ``"P" must be a lossless JSON value`` at the frame that was reading it. Object and
  array frames read a subclass through its own protocol (``items()``, ``__getitem__``, ``__iter__``);
  an unconstrained node defers to :func:`toolrt._json.is_lossless_json`, which reads ``dict``
  storage directly, exactly as the snapshot the registry hands to tools does.

Python adaptations: a JSON object is any ``dict`` instance, an array any ``list``/``tuple``; a key
holding ``None`` is present and validated as ``null`` (there is no ``undefined``); ``bool`` is never
a number; sets, bytes, NaN, ``-0.0``, ±inf, inexact big ints and non-``str`` keys are not lossless.

Why it is fast: scalar children are checked inline by their parent (no frame is pushed), only
container children push frames, and paths are parent-chain tuples turned into strings only when a
violation is actually reported. Losslessness is established incrementally: a value that validates
against a node is lossless by construction, so only the parts no node covers (undeclared keys of
an open object, items of an array without ``items``) are checked separately — never the whole
subtree again at every level, which would be quadratic on deep values. Everything is iterative: a
100,000-deep value or a 5000-deep ``oneOf`` chain never touches the Python call stack.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from toolrt._errors import JsonSchemaError
from toolrt._json import MAX_SAFE_INTEGER, FrozenDict, FrozenList, js_json_dumps, js_number
from toolrt.schema._subset import (
    is_integral,
    is_lossless_number,
    json_schema_violations,
    plain_number,
    plain_scalar,
    read_array,
    read_record,
    safely_lossless,
)

__all__ = ["Validator", "compile_validator", "validate_json_schema_value"]

_LOSSY_VALUE: Final = " must be a lossless JSON value"
_LOSSY_OBJECT: Final = " must be a lossless JSON object"
_LOSSY_ARRAY: Final = " must be a dense lossless JSON array"
_LOSSY_NUMBER: Final = " must be a finite JSON number"
_MAX: Final = MAX_SAFE_INTEGER
_MIN: Final = -MAX_SAFE_INTEGER


class _Missing:
    """Sentinel for an absent key (``None`` is JSON null, so it cannot play that role)."""

    __slots__ = ()


_MISSING: Final = _Missing()


class Validator:
    """A schema compiled once for repeated validation; see the module docstring for the rules.

    Compile with :func:`compile_validator`. Holding the validator keeps the schema alive, so the
    identity-keyed cache of :func:`validate_json_schema_value` can never confuse two schemas.
    """

    __slots__ = ("_root", "_schema")

    def __init__(self, schema: Mapping[str, Any], root: _Node) -> None:
        self._schema = schema
        self._root = root

    @property
    def schema(self) -> Mapping[str, Any]:
        """The raw schema this validator was compiled from."""
        return self._schema

    def validate(self, value: object, path: str = "value") -> list[str]:
        """All violations of ``value`` (``[]`` means valid); total: never raises for any ``value``.

        ``path`` labels the root in messages; ``""`` is the tool-arguments convention (the root
        shows as ``arguments`` and nested paths get no leading dot).
        """
        root = self._root
        kind = root.kind
        if kind <= _LAST_INLINE:
            message = _inline(root, value)
            return [] if message is None else [f'"{path or "arguments"}"{message}']
        stack: list[_Frame] = []
        if kind == _OBJECT:
            # The common case (tool arguments) skips _enter's dispatch; same containment.
            try:
                result = _enter_object(root, value, None, stack, path)
            except Exception:
                return [f'"{path or "arguments"}"{_LOSSY_VALUE}']
        else:
            result = _enter(root, value, None, stack, path)
        if result is None:
            result = _drain(stack, path)
        return result


def compile_validator(schema: Mapping[str, Any]) -> Validator:
    """Assert ``schema`` (J2) and compile it into a reusable :class:`Validator`.

    Asserting first means a validator can only exist for a schema the validator fully enforces;
    an unsupported schema raises :class:`~toolrt._errors.JsonSchemaError` here, once, rather than
    letting a keyword be accepted and then ignored on every call.
    """
    violations = json_schema_violations(schema)
    if violations:
        raise JsonSchemaError(violations)
    return Validator(schema, _compile(schema))


_CACHE_SIZE: Final = 128
# id(schema) -> (schema, validator). The schema reference keeps the id from being reused.
_cache: dict[int, tuple[object, Validator]] = {}


def validate_json_schema_value(schema: Mapping[str, Any], value: object, path: str = "value") -> list[str]:
    """Validate ``value`` against a raw subset schema; returns the violations (``[]`` = valid).

    Repeated calls with the *same schema object* compile it once (a small identity-keyed cache), so
    callers can validate against a stored schema without managing validators. Treat a schema as
    immutable once used: mutating it in place after a call is not seen by later calls. Raises
    :class:`~toolrt._errors.JsonSchemaError` for a schema outside the subset; never for any value.
    """
    entry = _cache.get(id(schema))
    if entry is not None and entry[0] is schema:
        validator = entry[1]
    else:
        validator = compile_validator(schema)
        if len(_cache) >= _CACHE_SIZE:
            # Evict the oldest entry (dicts keep insertion order); a tiny FIFO is enough here. A
            # concurrent evictor may win the race: losing it only means one entry too many or few.
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del _cache[next(iter(_cache))]
        _cache[id(schema)] = (schema, validator)
    return validator.validate(value, path)


# --- validation ----------------------------------------------------------------------------------

# A parent chain: None for the root, else (parent chain, key) with a str key or an int index.
_Chain: TypeAlias = tuple[Any, str | int] | None


class _Frame:
    """A container awaiting the results of its container children (objects, arrays, oneOf)."""

    __slots__ = ("chain", "entries", "index", "kind", "matches", "node", "tail", "uncovered", "violations")

    def __init__(self, node: _Node, chain: _Chain, entries: list[Any], violations: list[str]) -> None:
        self.node = node
        self.kind = node.kind
        self.chain = chain
        # Container children as (node, value, key) in order, interleaved with ready-made messages of
        # inline children that came after the first container child (to keep upstream order).
        self.entries = entries
        self.index = 0
        self.violations = violations
        # additionalProperties:false messages, reported after every property's own messages.
        self.tail: list[str] = []
        # Parts of the value no schema node covers; checked for losslessness only if all else passed.
        self.uncovered: list[Any] | None = None
        self.matches = 0


def _path(root: str, chain: _Chain) -> str:
    """The diagnostic path of a chain (``arguments`` for an empty root path)."""
    keys: list[str | int] = []
    while chain is not None:
        chain, key = chain
        keys.append(key)
    return _join(root, keys) or "arguments"


def _property_path(root: str, chain: _Chain, key: str) -> str:
    """The path of property ``key`` under ``chain`` (no leading dot at an empty root, no fallback)."""
    keys: list[str | int] = [key]
    while chain is not None:
        chain, parent_key = chain
        keys.append(parent_key)
    return _join(root, keys)


def _join(root: str, reversed_keys: list[str | int]) -> str:
    parts = [root]
    empty = root == ""
    for key in reversed(reversed_keys):
        if type(key) is int:
            parts.append(f"[{key}]")
            empty = False
        elif empty:
            # Upstream's propertyPath: a key directly under an empty path gets no leading dot.
            parts.append(key)  # type: ignore[arg-type]
            empty = key == ""
        else:
            parts.append(f".{key}")
    return "".join(parts)


def _inline(node: _Node, value: Any) -> str | None:
    """The message suffix for a scalar or unconstrained node (``None`` when ``value`` passes)."""
    try:
        kind = node.kind
        if kind == _ANY:
            return None if safely_lossless(value) else _LOSSY_VALUE
        if kind == _STRING:
            if type(value) is not str:
                if not isinstance(value, str):
                    return node.type_message
                value = str.__str__(value)
        elif kind == _BOOLEAN:
            if value is not True and value is not False:
                return node.type_message
        elif kind == _NULL:
            if value is not None:
                return node.type_message
        else:
            number = plain_number(value)
            if number is None:
                return node.type_message
            if kind == _NUMBER:
                if not is_lossless_number(number):
                    return _LOSSY_NUMBER
            elif not is_lossless_number(number) or not is_integral(number):
                return node.type_message
            value = number
        enum = node.enum
        if enum is not None and value not in enum:
            return node.enum_message
        if node.has_const and value != node.const:
            return node.const_message
        check = node.check
        return None if check is None else check(value)
    except Exception:
        # Only a hostile scalar-like object can get here; report it at its own path, as upstream's
        # per-node frame would.
        return _LOSSY_VALUE


def _enter(node: _Node, value: Any, chain: _Chain, stack: list[_Frame], root: str) -> list[str] | None:
    """Start validating a container node: its result, or ``None`` after pushing a frame."""
    try:
        kind = node.kind
        if kind == _OBJECT:
            return _enter_object(node, value, chain, stack, root)
        if kind == _ARRAY:
            return _enter_array(node, value, chain, stack, root)
        return _enter_one_of(node, value, chain, stack, root)
    except Exception:
        return [f'"{_path(root, chain)}"{_LOSSY_VALUE}']


def _enter_object(node: _Node, value: Any, chain: _Chain, stack: list[_Frame], root: str) -> list[str] | None:
    cls = type(value)
    if cls is dict or cls is FrozenDict:
        view = value
    elif isinstance(value, dict):
        # Read a subclass through its own protocol once: an override that raises is contained by
        # _enter, and everything after this line sees one consistent snapshot.
        view = {key: value[key] for key, _ in list(value.items())}
    else:
        return [f'"{_path(root, chain)}"{node.type_message}']

    violations: list[str] = []
    for key in node.required:
        if key not in view:
            violations.append(f'missing required property "{_property_path(root, chain, key)}"')

    entries: list[Any] | None = None
    present = 0
    get = view.get
    for key, child in node.properties:
        item = get(key, _MISSING)
        if item is _MISSING:
            continue
        present += 1
        if child.kind <= _LAST_INLINE:
            cls = type(item)
            if cls is child.fast_type and (cls is not int or _MIN <= item <= _MAX):
                continue
            message = _inline(child, item)
            if message is not None:
                text = f'"{_property_path(root, chain, key) or "arguments"}"{message}'
                if entries is None:
                    violations.append(text)
                else:
                    entries.append(text)
        elif entries is None:
            entries = [(child, item, key)]
        else:
            entries.append((child, item, key))

    tail: list[str] = []
    uncovered: list[Any] | None = None
    if present != len(view):
        declared = node.declared
        for key in view:
            if key in declared:
                continue
            if type(key) is not str and not isinstance(key, str):
                # Like a JavaScript symbol key: invisible to the key checks, fatal to losslessness.
                uncovered = [_NOT_JSON]
            elif node.closed:
                name = _property_path(root, chain, key)
                tail.append(f'"{name}" is not a declared property (additionalProperties: false)')
            elif node.additional is not None:
                # ``additionalProperties: <schema>``: every undeclared value is checked (and so
                # covered for losslessness) like a declared property, after the declared ones.
                additional = node.additional
                item = view[key]
                if additional.kind <= _LAST_INLINE:
                    message = _inline(additional, item)
                    if message is not None:
                        tail.append(f'"{_property_path(root, chain, key)}"{message}')
                elif entries is None:
                    entries = [(additional, item, key)]
                else:
                    entries.append((additional, item, key))
            elif uncovered is None:
                uncovered = [view[key]]
            else:
                uncovered.append(view[key])

    if entries is None:
        if tail:
            violations.extend(tail)
        elif uncovered is None:
            return violations
        return _finish_container(node, chain, root, violations, uncovered)
    frame = _Frame(node, chain, entries, violations)
    frame.tail = tail
    frame.uncovered = uncovered
    stack.append(frame)
    return None


def _enter_array(node: _Node, value: Any, chain: _Chain, stack: list[_Frame], root: str) -> list[str] | None:
    cls = type(value)
    if cls is list or cls is tuple or cls is FrozenList:
        view = value
    elif isinstance(value, list | tuple):
        view = list(value)
    else:
        return [f'"{_path(root, chain)}"{node.type_message}']
    items = node.items
    violations: list[str] = []
    if node.counted:
        _count_items(node, view, chain, root, violations)
    if items is None:
        return _finish_container(node, chain, root, violations, view if view else None)
    entries: list[Any] | None = None
    if items.kind <= _LAST_INLINE:
        fast = items.fast_type
        for index, item in enumerate(view):
            cls = type(item)
            if cls is fast and (cls is not int or _MIN <= item <= _MAX):
                continue
            message = _inline(items, item)
            if message is not None:
                violations.append(f'"{_path(root, (chain, index))}"{message}')
    else:
        entries = [(items, item, index) for index, item in enumerate(view)]
    if not entries:
        return _finish_container(node, chain, root, violations, None)
    stack.append(_Frame(node, chain, entries, violations))
    return None


def _count_items(node: _Node, view: Any, chain: _Chain, root: str, violations: list[str]) -> None:
    """``minItems``, ``maxItems`` and ``uniqueItems`` of one array (decision 0011)."""
    size = len(view)
    where = _path(root, chain)
    if node.min_items is not None and size < node.min_items:
        violations.append(f'"{where}" must have at least {_items_text(node.min_items)} (got {size})')
    if node.max_items is not None and size > node.max_items:
        violations.append(f'"{where}" must have at most {_items_text(node.max_items)} (got {size})')
    if node.unique and size > 1:
        seen: dict[Any, int] = {}
        for index, item in enumerate(view):
            first = seen.setdefault(json_equality_key(item), index)
            if first != index:
                violations.append(
                    f'"{where}" must not contain duplicate items ([{first}] and [{index}] are equal)'
                )
                break


def _items_text(count: int) -> str:
    return "1 item" if count == 1 else f"{count} items"


def json_equality_key(value: object) -> Any:
    """A hashable key equal for exactly the JSON-equal values (``uniqueItems``' equality).

    ``1`` and ``1.0`` share a key, ``true`` and ``1`` do not, objects compare as key sets, arrays in
    order. Built iteratively (post-order with an explicit stack), so a deep item cannot overflow.
    """
    results: list[Any] = []
    tasks: list[tuple[int, Any]] = [(0, value)]
    while tasks:
        step, item = tasks.pop()
        if step == 1:  # an array of ``item`` children is complete
            children = tuple(results[len(results) - item :]) if item else ()
            del results[len(results) - item :]
            results.append(("a", children))
            continue
        if step == 2:  # an object with keys ``item`` is complete
            size = len(item)
            values = results[len(results) - size :] if size else []
            del results[len(results) - size :]
            results.append(("o", frozenset(zip(item, values, strict=True))))
            continue
        if isinstance(item, str):
            results.append(("s", str.__str__(item)))
        elif item is True or item is False or item is None:
            results.append(("c", item))
        elif isinstance(item, int | float):
            results.append(("n", plain_number(item)))
        elif isinstance(item, dict):
            keys = list(item.keys())
            tasks.append((2, keys))
            for key in reversed(keys):
                tasks.append((0, item[key]))
        elif isinstance(item, list | tuple):
            children_of = list(item)
            tasks.append((1, len(children_of)))
            for child in reversed(children_of):
                tasks.append((0, child))
        else:
            results.append(("x", id(item)))  # not JSON: unequal to everything else
    return results[0]


def _enter_one_of(node: _Node, value: Any, chain: _Chain, stack: list[_Frame], root: str) -> list[str] | None:
    if node.flat_branches:
        matches = 0
        for branch in node.branches:
            if _inline(branch, value) is None:
                matches += 1
        return _one_of_result(matches, chain, root)
    frame = _Frame(node, chain, [], [])
    for branch in node.branches:
        if branch.kind <= _LAST_INLINE:
            if _inline(branch, value) is None:
                frame.matches += 1
        else:
            # A oneOf branch validates the same value at the same path: key None keeps the chain.
            frame.entries.append((branch, value, None))
    stack.append(frame)
    return None


def _one_of_result(matches: int, chain: _Chain, root: str) -> list[str]:
    if matches == 1:
        return []
    return [f'"{_path(root, chain)}" must match exactly one oneOf branch (matched {matches})']


class _NotJson:
    """Stands for a part of a value that is already known not to be JSON (a non-``str`` key)."""

    __slots__ = ()


_NOT_JSON: Final = _NotJson()


def _finish_container(
    node: _Node, chain: _Chain, root: str, violations: list[str], uncovered: list[Any] | None
) -> list[str]:
    """A container's result once all its children (and tail messages) are in ``violations``."""
    if violations:
        return violations
    if uncovered is not None:
        for part in uncovered:
            if not safely_lossless(part):
                suffix = _LOSSY_OBJECT if node.kind == _OBJECT else _LOSSY_ARRAY
                return [f'"{_path(root, chain)}"{suffix}']
    return violations


def _drain(stack: list[_Frame], root: str) -> list[str]:
    """Run frames until the root's result is known (the explicit-stack replacement for recursion)."""
    while True:
        frame = stack[-1]
        entries = frame.entries
        if frame.index < len(entries):
            entry = entries[frame.index]
            frame.index += 1
            if type(entry) is str:
                frame.violations.append(entry)
                continue
            child, item, key = entry
            chain = frame.chain if key is None else (frame.chain, key)
            result = _enter(child, item, chain, stack, root)
            if result is None:
                continue  # a child frame was pushed; it runs first
        else:
            stack.pop()
            if frame.kind == _ONE_OF:
                result = _one_of_result(frame.matches, frame.chain, root)
            else:
                frame.violations.extend(frame.tail)
                try:
                    result = _finish_container(
                        frame.node, frame.chain, root, frame.violations, frame.uncovered
                    )
                except Exception:
                    result = [f'"{_path(root, frame.chain)}"{_LOSSY_VALUE}']
            if not stack:
                return result
            frame = stack[-1]
        if frame.kind == _ONE_OF:
            if not result:
                frame.matches += 1
        elif result:
            frame.violations.extend(result)


# -- compilation --------------------------------------------------------------------------------------
#
# Compilation runs on an *asserted* schema (see :mod:`toolrt.schema._subset`), iteratively, and
# shares one node per reused subschema object, so a DAG of shared definitions compiles in linear
# time. Everything a scalar check needs at validation time is precomputed here: the exact Python
# type that passes without further checks, normalised ``enum``/``const`` values, and the message
# texts with ``JSON.stringify``-compatible quoting of the literals.

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
        "additional",
        "branches",
        "check",
        "closed",
        "const",
        "const_message",
        "counted",
        "declared",
        "enum",
        "enum_message",
        "fast_type",
        "flat_branches",
        "has_const",
        "items",
        "kind",
        "max_items",
        "min_items",
        "properties",
        "required",
        "type_message",
        "unique",
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
        self.additional: _Node | None = None
        self.items: _Node | None = None
        self.branches: tuple[_Node, ...] = ()
        self.flat_branches = False
        # Decision 0011's bounds: a scalar's check (message suffix or None), an array's counts.
        self.check: Callable[[Any], str | None] | None = None
        self.counted = False
        self.min_items: int | None = None
        self.max_items: int | None = None
        self.unique = False


def _compile(schema: object) -> _Node:
    """Compile an *asserted* schema into nodes, iteratively; shared subschemas share one node."""
    memo: dict[int, _Node] = {}
    root = _shell(schema, memo)
    pending: list[tuple[Mapping[str, Any], _Node]] = [(_record(schema), root)]
    while pending:
        record, node = pending.pop()
        kind = node.kind
        if kind == _OBJECT:
            declared = read_record(record.get("properties")) or {}
            children: list[tuple[str, _Node]] = []
            for key, child in declared.items():
                child_node = memo.get(id(child))
                if child_node is None:
                    child_node = _shell(child, memo)
                    pending.append((_record(child), child_node))
                children.append((key, child_node))
            node.properties = tuple(children)
            node.declared = frozenset(declared)
            node.required = tuple(read_array(record.get("required")) or ())
            node.closed = record.get("additionalProperties") is False
            additional = record.get("additionalProperties")
            if type(additional) is not bool and read_record(additional) is not None:
                child_node = memo.get(id(additional))
                if child_node is None:
                    child_node = _shell(additional, memo)
                    pending.append((_record(additional), child_node))
                node.additional = child_node
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
            for child in read_array(record["oneOf"]) or ():
                child_node = memo.get(id(child))
                if child_node is None:
                    child_node = _shell(child, memo)
                    pending.append((_record(child), child_node))
                branches.append(child_node)
            node.branches = tuple(branches)
            node.flat_branches = all(branch.kind <= _LAST_INLINE for branch in branches)
    return root


def _record(schema: object) -> Mapping[str, Any]:
    record = read_record(schema)
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
            entries = tuple(plain_scalar(entry) for entry in read_array(record["enum"]) or ())
            node.enum = entries
            node.enum_message = f" must be one of {js_json_dumps(list(entries))}"
        if "const" in record:
            node.has_const = True
            node.const = plain_scalar(record["const"])
            node.const_message = f" must be {js_json_dumps(node.const)}"
        if node.kind == _STRING:
            node.check = _length_check(record)
        elif node.kind in (_NUMBER, _INTEGER):
            node.check = _number_check(record)
        if node.enum is None and not node.has_const and node.check is None:
            node.fast_type = _FAST_TYPE[node.kind]
    elif node.kind == _ARRAY:
        if "minItems" in record:
            node.min_items = int(record["minItems"])
        if "maxItems" in record:
            node.max_items = int(record["maxItems"])
        node.unique = record.get("uniqueItems") is True
        node.counted = node.min_items is not None or node.max_items is not None or node.unique
    return node


def _number_check(record: Mapping[str, Any]) -> Callable[[Any], str | None] | None:
    """The bounds of a number/integer node as one check, or ``None`` when it has none.

    Reported in keyword order (minimum, exclusiveMinimum, maximum, exclusiveMaximum, multipleOf),
    the first failing one only; plain comparisons, since this runs on every bounded argument.
    """
    low = _bound(record["minimum"]) if "minimum" in record else None
    above = _bound(record["exclusiveMinimum"]) if "exclusiveMinimum" in record else None
    high = _bound(record["maximum"]) if "maximum" in record else None
    below = _bound(record["exclusiveMaximum"]) if "exclusiveMaximum" in record else None
    divisor = _bound(record["multipleOf"]) if "multipleOf" in record else None
    if low is None and above is None and high is None and below is None and divisor is None:
        return None
    texts = {
        key: f" must be {operator} {js_number(bound)} (got "
        for key, operator, bound in (
            ("minimum", ">=", low),
            ("exclusiveMinimum", ">", above),
            ("maximum", "<=", high),
            ("exclusiveMaximum", "<", below),
            ("multipleOf", "a multiple of", divisor),
        )
        if bound is not None
    }

    def check(value: Any) -> str | None:
        if low is not None and value < low:
            return f"{texts['minimum']}{js_number(value)})"
        if above is not None and value <= above:
            return f"{texts['exclusiveMinimum']}{js_number(value)})"
        if high is not None and value > high:
            return f"{texts['maximum']}{js_number(value)})"
        if below is not None and value >= below:
            return f"{texts['exclusiveMaximum']}{js_number(value)})"
        if divisor is not None and not _is_multiple(value, divisor):
            return f"{texts['multipleOf']}{js_number(value)})"
        return None

    return check


def _bound(value: object) -> int | float:
    """An asserted bound as a plain number (the subset checked it is one)."""
    number = plain_number(value)
    if number is None:
        raise JsonSchemaError(["schema bound must be a number"])  # only a forged schema gets here
    return number


def _is_multiple(value: int | float, divisor: int | float) -> bool:
    """``multipleOf`` with ``jsonschema``'s arithmetic, so the two agree on floats (0.0075 / 0.0001)."""
    if type(divisor) is float:
        quotient = value / divisor
        try:
            return int(quotient) == quotient
        except OverflowError:
            from fractions import Fraction  # rare (an overflowing quotient): not worth an import at startup

            return (Fraction(value) / Fraction(divisor)).denominator == 1
    return not value % divisor


def _length_check(record: Mapping[str, Any]) -> Callable[[Any], str | None] | None:
    """``minLength``/``maxLength`` of a string node (code points), or ``None`` when it has neither."""
    low = int(record["minLength"]) if "minLength" in record else None
    high = int(record["maxLength"]) if "maxLength" in record else None
    if low is None and high is None:
        return None

    def check(value: Any) -> str | None:
        size = len(value)
        if low is not None and size < low:
            return f" must be at least {_characters(low)} long (got {size})"
        if high is not None and size > high:
            return f" must be at most {_characters(high)} long (got {size})"
        return None

    return check


def _characters(count: int) -> str:
    return "1 character" if count == 1 else f"{count} characters"
