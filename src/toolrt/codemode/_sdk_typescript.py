"""Code Mode codegen, TypeScript flavor: tool schemas → the ``declare const tools`` SDK text.

Upstream ``ts-types.ts`` (``jsonSchemaToTs`` / ``renderToolsSdk``). The ``tools:sdk`` prompt section a
TypeScript code runtime gets: fixed usage instructions, then one fenced ``ts`` block declaring a typed
``tools`` object whose members are the registered tools. ``schemas()`` (native function calling) and
this module are two projections of the same tool store; output is byte-identical to upstream for
tools without toolrt's additions (return descriptions, constraint comments, groups: see
:func:`render_tools_sdk_ts`).

Rules a Python port has to emulate (contract §2.16, §2.21):

* tools are sorted by UTF-16 code units (JavaScript ``a < b``), not by Python code points, which
  differ for astral characters; equal names are ordered by their rendered members, so the text is
  the same for every input order;
* literals use ``JSON.stringify`` (:func:`~toolrt._json.js_json_dumps`): ``1.0`` → ``1``,
  ``1e21`` → ``1e+21``, lone surrogates escaped;
* object members come in JavaScript ``Object.entries`` order: array-index keys (``"0"``, ``"7"``,
  ... up to ``2**32 - 2``) first in ascending numeric order, then the other keys in insertion order;
* JSDoc text collapses runs of JavaScript whitespace (``\\s``, which is not Python's ``\\s``) to one
  space and trims; ``*/`` becomes ``*\\/`` so a description cannot close the comment early.

:func:`json_schema_to_ts` is total: a schema outside the supported subset (see
:func:`toolrt.schema.json_schema_violations`) — or anything else, however hostile — renders as
``unknown``; it never raises. Rendering is iterative: a 5,000-deep ``oneOf`` chain renders without
``RecursionError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from toolrt._json import js_json_dumps, js_string, snapshot_json
from toolrt.codemode._py_names import camel_case
from toolrt.codemode._sdk_tool import SdkTool, constraint_notes, group_of, return_notes
from toolrt.codemode._sdk_types import SharedTypes, collect_shared_types, without_documented_parameters
from toolrt.schema import json_schema_violations

__all__ = ["SDK_INSTRUCTIONS_TS", "SdkTool", "json_schema_to_ts", "render_tools_sdk_ts"]

SDK_INSTRUCTIONS_TS: Final = (
    "## Writing code for run_code\n"
    "\n"
    "`run_code` takes two required arguments: `code` — the body of an async TypeScript function"
    " (erasable syntax only — no `enum` or namespaces; type annotations are advisory, the code runs"
    " type-stripped) — and `description`, a short summary of what the program does."
    " Inside the program:\n"
    "\n"
    "- Call tools as `await tools.name(args)` — quoted access for exotic names:"
    ' `tools["my-tool"](args)`. Every call resolves to the tool\'s typed canonical JSON value.'
    " Tool arguments must be lossless JSON.\n"
    "- A FAILED tool call rejects with `ToolCallError`, whose `toolName` identifies the failed tool"
    " and whose `message` is human-readable — `try/catch` it to handle and continue.\n"
    "- Independent read-only calls MAY overlap under `Promise.all` (safe calls run concurrently;"
    " mutating calls run alone, in submission order). Sequence dependent work with `await`.\n"
    "- Emit results with `return` and/or `console.log(...)`. ONLY what you print or return comes back"
    " to you — intermediate tool results never enter the conversation, so extract just what you need.\n"
    "\n"
    "The available tools:"
)
"""The fixed model-facing usage contract rendered above the declarations (byte-identical to upstream)."""

JSON_VALUE_TS: Final = (
    "type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }"
)
"""The ``JsonValue`` alias every SDK declares (schemas without a type render as ``JsonValue``)."""

_DECLARATION_TAIL: Final = "\n\n".join(
    (
        "type ToolName = keyof ToolOutputMap",
        'declare class ToolCallError extends Error {\n  readonly name: "ToolCallError";\n'
        "  readonly toolName: ToolName;\n}",
        "declare const tools: {\n  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n}",
    )
)

_UNKNOWN: Final = "unknown"
_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# JavaScript's \s (WhiteSpace + LineTerminator), which differs from Python's: no \x1c-\x1f or \x85,
# but U+FEFF. Unicode Zs as of current engines (U+180E is no longer a space separator).
_JS_WHITESPACE_RUN: Final = re.compile(
    "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+"
)
_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]*")
_MAX_ARRAY_INDEX: Final = 2**32 - 2
_SCALAR_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "null"})


def _render_key(name: str) -> str:
    """An object key: bare when it is an ASCII TS identifier, ``JSON.stringify``-quoted otherwise."""
    return name if _IDENTIFIER.fullmatch(name) else js_string(name)


def _pad(indent: int) -> str:
    """Two spaces per level; a negative level is a ``RangeError`` upstream (→ ``unknown``)."""
    if indent < 0:
        raise ValueError("negative indent")
    return "  " * indent


def _doc_lines(description: object, indent: int) -> list[str]:
    """A one-line JSDoc for a description, or no line when there is none.

    Mirrors upstream exactly: only an absent or zero-length description is skipped, so a
    whitespace-only one renders as an empty ``/**  */``.
    """
    if not isinstance(description, str) or not description:
        return []
    collapsed = _JS_WHITESPACE_RUN.sub(" ", description).strip(" ")
    escaped = collapsed.replace("*/", "*\\/")
    return [f"{_pad(indent)}/** {escaped} */"]


def _comment_text(text: str) -> str:
    """``text`` on one line (every JavaScript line terminator collapsed), safe in either comment."""
    return _JS_WHITESPACE_RUN.sub(" ", text).strip(" ").replace("*/", "*\\/")


def _constraint_comment(schema: Mapping[str, Any]) -> _Doc | None:
    """`` // >= 1, integer``: the field's constraints, which a TypeScript type cannot carry.

    ``integer`` joins them because ``number`` hides it too; alone it adds no line (an unconstrained
    integer field renders as upstream does)."""
    notes = constraint_notes(schema)
    if not notes:
        return None
    if schema.get("type") == "integer":
        notes.append("integer")
    comment = _Doc(" // " + _comment_text(", ".join(notes)))
    comment.marked = False  # a `|` in a comment does not make the type a union
    return comment


def _returns_doc(output: object) -> list[str]:
    """The JSDoc above a tool's ``ToolOutputMap`` member: its output description, one line per key
    when it names the result's keys."""
    text, keys = return_notes(output)
    if keys:
        return ["  /**", *(f"   * {_comment_text(key)}" for key in keys), "   */"]
    return _doc_lines(text, 1)


def _group_header(group: tuple[str, str]) -> str:
    """The one comment above a group's members in ``ToolArgsMap`` (its description is said here only)."""
    name = _comment_text(group[0]) or "?"
    about = _comment_text(group[1])
    return f"  // Group {name}: {about}" if about else f"  // Group {name}"


def _js_entries(properties: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``Object.entries`` order: array-index keys ascending numerically, then insertion order."""
    indexed: list[tuple[int, str, Any]] = []
    named: list[tuple[str, Any]] = []
    for key, value in properties.items():
        if _ARRAY_INDEX.fullmatch(key) and int(key) <= _MAX_ARRAY_INDEX:
            indexed.append((int(key), key, value))
        else:
            named.append((key, value))
    if not indexed:
        return named
    indexed.sort(key=lambda entry: entry[0])
    return [(key, value) for _, key, value in indexed] + named


class _Doc:
    """A type text as a tree of parts, flattened once at the end (no quadratic concatenation).

    ``marked`` records whether the flattened text contains ``|`` or ``&`` (the array
    parenthesization test), computed from the parts without flattening.
    """

    __slots__ = ("marked", "parts")

    def __init__(self, *parts: str | _Doc) -> None:
        self.parts: tuple[str | _Doc, ...] = parts
        self.marked: bool = any(
            ("|" in part or "&" in part) if isinstance(part, str) else part.marked for part in parts
        )


def _flatten(document: _Doc) -> str:
    """The text of a document, with an explicit work stack."""
    chunks: list[str] = []
    tasks: list[str | _Doc] = [document]
    while tasks:
        task = tasks.pop()
        if isinstance(task, str):
            chunks.append(task)
        else:
            tasks.extend(reversed(task.parts))
    return "".join(chunks)


_ONE_OF: Final = 1
_ARRAY: Final = 2
_OBJECT: Final = 3
_RECORD: Final = 4  # an object with only a schema-valued additionalProperties: Record<string, X>


class _Frame:
    """One explicit call frame of the schema walk."""

    __slots__ = ("children", "documents", "entries", "indent", "kind", "node", "started")

    def __init__(self, node: Mapping[str, Any], indent: int) -> None:
        self.node = node
        self.indent = indent
        self.kind = 0
        self.started = False
        self.children: list[tuple[Mapping[str, Any], int]] = []
        self.documents: list[_Doc] = []
        self.entries: list[tuple[str, Any]] = []


def _scalar(node: Mapping[str, Any], schema_type: str) -> str:
    """A validated scalar node: its ``const``, its ``enum`` union, or the broad type."""
    if "const" in node:
        return js_json_dumps(node["const"])
    if "enum" in node:
        return " | ".join(js_json_dumps(value) for value in node["enum"])
    return "number" if schema_type == "integer" else schema_type


def _combine(frame: _Frame) -> _Doc:
    """Build a frame's document once all of its children are rendered."""
    documents = frame.documents
    if frame.kind == _ONE_OF:
        parts: list[str | _Doc] = []
        for index, child in enumerate(documents):
            if index:
                parts.append(" | ")
            parts.append(child)
        return _Doc(*parts)
    if frame.kind == _ARRAY:
        item = documents[0]
        return _Doc("(", item, ")[]") if item.marked else _Doc(item, "[]")
    if frame.kind == _RECORD:
        return _Doc("Record<string, ", documents[0], ">")
    node = frame.node
    required = set(node.get("required", ()))
    inner = _pad(frame.indent + 1)
    parts = ["{"]
    for (name, prop), child in zip(frame.entries, documents, strict=True):
        for line in _doc_lines(prop.get("description"), frame.indent + 1):
            parts += ("\n", line)
        optional = "" if name in required else "?"
        parts += ("\n", f"{inner}{_render_key(name)}{optional}: ", child, ";")
        comment = _constraint_comment(prop)
        if comment is not None:
            parts.append(comment)
    parts += ("\n", f"{_pad(frame.indent)}}}")
    declared = _Doc(*parts)
    if node.get("additionalProperties") is False:
        return declared
    return _Doc(declared, " & Record<string, JsonValue>")


def _render_supported(
    schema: Mapping[str, Any], indent: int, names: Mapping[int, str] | None = None, declaring: bool = False
) -> _Doc:
    """Render an asserted, snapshotted schema with an explicit frame stack.

    ``names`` (``id(node) -> type name``) renders a shared node as its name; when ``declaring``
    the root is the shared type being declared, so its body is rendered instead."""
    frames = [_Frame(schema, indent)]
    root: _Doc | None = None
    while frames:
        frame = frames[-1]
        document: _Doc | None = None
        if frame.started:
            position = len(frame.documents)
            if position < len(frame.children):
                node, level = frame.children[position]
                frames.append(_Frame(node, level))
                continue
            document = _combine(frame)
        else:
            node = frame.node
            shared = names.get(id(node)) if names and not (declaring and len(frames) == 1) else None
            if shared is not None:
                document = _Doc(shared)
            elif "oneOf" in node:
                frame.kind = _ONE_OF
                frame.children = [(branch, frame.indent) for branch in node["oneOf"]]
            elif "type" not in node:
                document = _Doc("JsonValue")
            elif node["type"] in _SCALAR_TYPES:
                document = _Doc(_scalar(node, node["type"]))
            elif node["type"] == "array":
                if "items" in node:
                    frame.kind = _ARRAY
                    frame.children = [(node["items"], frame.indent)]
                else:
                    document = _Doc("JsonValue[]")
            elif node["type"] == "object":
                entries = _js_entries(node.get("properties", {}))
                if entries:
                    frame.kind = _OBJECT
                    frame.entries = entries
                    frame.children = [(child, frame.indent + 1) for _, child in entries]
                elif isinstance(node.get("additionalProperties"), Mapping):
                    # dict[str, X] (decision 0010). Beside declared properties the intersection
                    # keeps Record<string, JsonValue>: TypeScript would apply X to the declared keys too.
                    frame.kind = _RECORD
                    frame.children = [(node["additionalProperties"], frame.indent)]
                else:
                    closed = node.get("additionalProperties") is False
                    document = _Doc("Record<string, never>" if closed else "Record<string, JsonValue>")
            else:  # unreachable for an asserted schema
                raise ValueError(f"unexpected schema type {node['type']!r}")
            if document is None:
                frame.started = True
                continue
        frames.pop()
        if frames:
            frames[-1].documents.append(document)
        else:
            root = document
    if root is None:  # pragma: no cover - the root frame always produces a document
        raise ValueError("no document")
    return root


def json_schema_to_ts(schema: object, indent: int = 0) -> str:
    """Map one JSON-Schema subset node to a TypeScript type (upstream ``jsonSchemaToTs``).

    ``string``/``number``/``integer``/``boolean``/``null`` → ``string``/``number``/``number``/
    ``boolean``/``null``; ``const`` → its JSON literal, ``enum`` → literals joined by `` | ``;
    no ``type`` → ``JsonValue``; ``oneOf`` → branches joined by `` | ``; arrays → ``T[]`` (``(T)[]``
    when ``T`` contains ``|`` or ``&``), ``JsonValue[]`` without ``items``; objects → a multi-line
    literal indented from ``indent`` (two spaces per level), with `` & Record<string, JsonValue>``
    unless ``additionalProperties`` is ``false``; ``Record<string, JsonValue>`` /
    ``Record<string, never>`` / ``Record<string, X>`` (``additionalProperties: <X>``) when there are
    no properties.

    Never raises: a schema outside the subset, or any other value, renders as ``unknown``.

    >>> json_schema_to_ts({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}})
    '("x" | "y")[]'
    >>> json_schema_to_ts({"$ref": "#/defs/x"})
    'unknown'
    """
    try:
        if json_schema_violations(schema):
            return _UNKNOWN
        # Render an immutable copy (read once, through the dict storage) and re-check that copy, so
        # what is rendered is exactly what was asserted, whatever a dict subclass does on re-reads.
        snapshot = snapshot_json(schema, lone_surrogates=True)  # schema text: JavaScript strings
        if json_schema_violations(snapshot):
            return _UNKNOWN
        return _flatten(_render_supported(snapshot, indent))
    except Exception:
        return _UNKNOWN


def _utf16_key(name: str) -> bytes:
    """JavaScript string order: compare UTF-16 code units (lone surrogates included)."""
    return name.encode("utf-16-be", "surrogatepass")


def _checked_snapshot(schema: object) -> Mapping[str, Any] | None:
    """The snapshot :func:`json_schema_to_ts` would render, or ``None`` (renders ``unknown``)."""
    try:
        if json_schema_violations(schema):
            return None
        snapshot = snapshot_json(schema, lone_surrogates=True)
        if json_schema_violations(snapshot) or not isinstance(snapshot, Mapping):
            return None
        return snapshot
    except Exception:
        return None


_RESERVED_TYPE_NAMES: Final = frozenset(
    {"JsonValue", "ToolArgsMap", "ToolOutputMap", "ToolName", "ToolCallError", "Record", "Promise", "Error"}
)


def _type_text(
    snapshot: Mapping[str, Any] | None, indent: int, names: Mapping[int, str], declaring: bool = False
) -> str:
    if snapshot is None:
        return _UNKNOWN
    try:
        return _flatten(_render_supported(snapshot, indent, names, declaring))
    except Exception:
        return _UNKNOWN


def _shared_members(
    ordered: list[SdkTool],
) -> tuple[list[str], list[tuple[str, str]]]:
    """Declarations of the shapes ``ordered`` repeats, and each tool's (args, output) member texts."""
    snapshots = [
        (
            _checked_snapshot(without_documented_parameters(t.description, t.parameters)),
            _checked_snapshot(t.output),
        )
        for t in ordered
    ]
    roots: list[tuple[str, Mapping[str, Any]]] = []
    for tool, (args, output) in zip(ordered, snapshots, strict=True):
        camel = camel_case(tool.name)
        roots += [(camel + suffix, node) for suffix, node in (("Args", args), ("Output", output)) if node]
    shared: SharedTypes = collect_shared_types(
        roots,
        camel=camel_case,
        valid=lambda name: _IDENTIFIER.fullmatch(name) is not None,
        reserved=_RESERVED_TYPE_NAMES,
    )
    declarations = [
        f"type {name} = {_type_text(node, 0, shared.names, declaring=True)}"
        for name, node in shared.declarations
    ]
    members = [(_type_text(a, 1, shared.names), _type_text(o, 1, shared.names)) for a, o in snapshots]
    return declarations, members


def render_tools_sdk_ts(tools: Iterable[SdkTool], *, share_types: bool = False) -> str:
    """The full ``tools:sdk`` section: :data:`SDK_INSTRUCTIONS_TS` plus the declarations block.

    Layout (upstream ``renderToolsSdk``): instructions, a fenced ``ts`` block holding the
    ``JsonValue`` alias, ``interface ToolArgsMap`` (one optional JSDoc line per described tool, then
    ``<key>: <parameters type>;``), ``interface ToolOutputMap`` (``<key>: <output type>;``),
    ``type ToolName``, ``declare class ToolCallError`` and the ``declare const tools`` mapped type.
    An empty tool set still renders the whole skeleton (``interface ToolArgsMap {}``).

    Deterministic: tools are sorted by name in UTF-16 code-unit order, ties (equal names) by their
    rendered members, so the text does not depend on the input order. The caller excludes
    ``run_code`` itself. Never raises for a malformed schema (that tool's type becomes ``unknown``).

    toolrt's additions (absent from a tool set without them, so such a set renders as upstream
    does): an output schema's ``description`` becomes the JSDoc of the tool's ``ToolOutputMap``
    member (one line per key when it names the result's keys); constraint keywords follow their
    field as a line comment (``qty: number; // >= 1, integer``); grouped tools follow the
    ungrouped ones in both maps, and ``ToolArgsMap`` introduces each group once with a
    ``// Group <name>: <description>`` comment, groups ordered by name.

    ``share_types=True`` (what Code Mode's prompt sends, contract TS3–TS6): an object shape
    or an enum that occurs more than once in the tool set is declared once, ``type <Name> = ...``
    under ``JsonValue``, and referenced by name; a tool whose whole argument or output type is
    shared refers to it too. Names come from the first use in the order above. Without repeats
    the text equals the unshared one.
    """
    rendered: list[tuple[tuple[bytes, ...], bytes, str, str, tuple[str, str] | None, SdkTool]] = []
    for tool in tools:
        key = _render_key(tool.name)
        group = group_of(tool)
        args_lines = [*_doc_lines(tool.description, 1), f"  {key}: {json_schema_to_ts(tool.parameters, 1)};"]
        output_lines = [*_returns_doc(tool.output), f"  {key}: {json_schema_to_ts(tool.output, 1)};"]
        rank: tuple[bytes, ...] = () if group is None else (_utf16_key(group[0]), _utf16_key(group[1]))
        rendered.append(
            (rank, _utf16_key(tool.name), "\n".join(args_lines), "\n".join(output_lines), group, tool)
        )
    rendered.sort(key=lambda entry: entry[:4])
    declarations: list[str] = []
    if share_types:
        # Ordered by the unshared texts (a total, input-order-free order), then rendered again
        # with the shared names: first use in that order names each shape.
        declarations, members = _shared_members([entry[5] for entry in rendered])
        for index, (args_type, output_type) in enumerate(members):
            rank, key16, _, _, group, tool = rendered[index]
            key = _render_key(tool.name)
            args = "\n".join([*_doc_lines(tool.description, 1), f"  {key}: {args_type};"])
            output = "\n".join([*_returns_doc(tool.output), f"  {key}: {output_type};"])
            rendered[index] = (rank, key16, args, output, group, tool)
    args_members: list[str] = []
    current: tuple[str, str] | None = None
    for _, _, args, _, group, _ in rendered:
        if group is not None and group != current:
            args_members.append(_group_header(group))
        current = group
        args_members.append(args)
    args_map = _interface("ToolArgsMap", args_members)
    output_map = _interface("ToolOutputMap", [entry[3] for entry in rendered])
    declaration = f"{args_map}\n\n{output_map}\n\n{_DECLARATION_TAIL}"
    types = "".join(f"{text}\n\n" for text in declarations)
    return f"{SDK_INSTRUCTIONS_TS}\n\n```ts\n{JSON_VALUE_TS}\n\n{types}{declaration}\n```"


def _interface(name: str, members: list[str]) -> str:
    """``interface <name> {…}``; ``{}`` on one line when there are no members."""
    if not members:
        return f"interface {name} {{}}"
    body = "\n".join(members)
    return f"interface {name} {{\n{body}\n}}"
