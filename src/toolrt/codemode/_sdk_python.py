"""The Python flavor of the Code Mode SDK: the ``tools:sdk`` section under a Python code runtime.

Port of upstream ``py-types.ts`` (``renderToolsSdkPy`` / ``jsonSchemaToPy``, contract §2.16). In Code
Mode the native tool schemas are not sent, so this text is the model's only source for each tool's
argument names, required fields, types, descriptions and output shapes. Object schemas therefore
render as named ``TypedDict`` classes (nested classes before their parents, each tool's ``Args``
classes before its ``Output`` classes), and every tool as an ``async def`` on a ``Tools`` protocol,
or as a ``# tools["name"](...)`` comment when the name cannot be an attribute.

Guarantees:

* **Byte-identical** to upstream for the same input (within the Unicode caveat below), with the
  JavaScript details emulated: UTF-16 name order, ``JSON.stringify`` quoting, ``Number::toString``.
  toolrt's additions — a ``# Returns:`` comment from the output schema's description, constraint
  comments on fields, group headers — appear only for tools that carry them
  (:func:`render_tools_sdk_py`).
* **Deterministic**: input order and duplicates do not matter. Tools are sorted by name; a name
  given twice renders once (when two *different* tools share a name, which a registry never
  produces, the one whose standalone rendering sorts first wins, so the choice is order-free).
  ``run_code`` itself is never listed.
* **Total**: a schema outside the supported subset (see :func:`toolrt.schema.json_schema_violations`),
  a cyclic one, or a non-dict renders as ``Any``; nothing here raises for any schema value.
* **Always valid Python**: descriptions are escaped, ``list[`` nesting is capped at 180 (CPython
  rejects 200 open brackets on a line), class names are capped, and NFKC-unstable or mangled
  names are never emitted bare.
* **Stack-safe and linear**: every walk is an explicit task stack writing into token buffers that
  are joined once, so a 100,000-deep ``oneOf`` chain renders in linear time.

Unicode caveat: names are judged with the running interpreter's tables (``str.isidentifier``,
``str.upper``), not a JavaScript engine's. The generated block is compiled by a Python interpreter,
so its tables decide what is valid; upstream's engine tables can be newer (Unicode 16/17) and then
emit names an older CPython refuses (U+200C inside a name, or ``ƛ`` upper-cased to U+A7DC).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from toolrt._json import js_number, js_string
from toolrt.codemode._py_names import (
    camel_case,
    cap_class_name_base,
    child_class_name,
    describe,
    docstring,
    is_field_name,
    is_method_name,
    utf16_key,
    well_formed,
)
from toolrt.codemode._sdk_tool import (  # shared with the TypeScript renderer; SdkTool re-exported here
    SdkTool,
    constraint_notes,
    group_of,
    return_notes,
)
from toolrt.codemode._sdk_types import collect_shared_types, shape_kind, without_documented_parameters
from toolrt.schema._subset import json_schema_violations
from toolrt.schema._subset import read_array as _read_array
from toolrt.schema._subset import read_record as _read_record

__all__ = ["SDK_INSTRUCTIONS_PY", "SdkTool", "json_schema_to_py", "render_tools_sdk_py"]

SDK_INSTRUCTIONS_PY: Final = (
    "## Writing code for run_code\n\n"
    "`run_code` takes two required arguments: `code` — the body of an async Python function "
    "(top-level `await` and `return` both work) — and `description`, a short summary of what the "
    "program does. At run time exactly two of the names declared below are bound: `tools` and "
    "`ToolCallError`. Everything else is a STATIC STUB describing argument and return types — in "
    "particular the `TypedDict` classes do NOT exist at run time, so build arguments as plain "
    '`dict`/`list` JSON values: `await tools.name({"field": 1})`, never `FooArgs(field=1)`, which '
    "raises `NameError`. Inside the program:\n\n"
    "- Call tools as `await tools.name(args)` — subscript access for exotic, reserved, or "
    'underscore-leading names: `await tools["my-tool"](args)`. Every call resolves to the '
    "tool's typed canonical JSON value (each method's return type below). Tool arguments must be "
    "lossless JSON.\n"
    "- A FAILED tool call raises `ToolCallError`, whose `toolName` identifies the failed tool and "
    "whose message is human-readable — wrap in `try/except` to handle and continue.\n"
    "- Independent read-only calls MAY overlap under `asyncio.gather` (safe calls run "
    "concurrently; mutating calls run alone, in submission order). Sequence dependent work with "
    "`await`.\n"
    "- Emit the run's answer with `print(...)` and/or a top-level `return <value>`; the returned "
    "value must be lossless JSON. ONLY what you print and the returned value come back — "
    "intermediate tool results never enter the conversation, so extract just what you need.\n\n"
    "The available tools:"
)
"""The fixed model-facing instructions above the Python declarations (byte-exact upstream text)."""

MAX_LIST_NESTING: Final = 180
"""Deepest ``list[`` chain in one annotation before the item degrades to ``Any``: CPython rejects
a line with 200 open brackets, and an annotation adds at most two more (``Literal[`` and the
still-open parameter-list paren)."""

_TYPING_ORDER: Final = ("Any", "Literal", "NotRequired", "Protocol", "Required", "TypedDict")
# Names a shared SDK never gives a class: what the block itself binds, and capitalised keywords.
_RESERVED_NAMES: Final = frozenset({*_TYPING_ORDER, "Tools", "ToolCallError", "None", "True", "False"})
_OPEN_NOTE: Final = "    # Additional keys beyond those declared are allowed."
_RUN_CODE: Final = "run_code"


@dataclass
class _State:
    """What one SDK render collects: class declarations (in completion order), taken class names,
    the next collision counter per base, and the ``typing`` symbols actually used."""

    classes: list[str] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)
    typing: set[str] = field(default_factory=set)
    shapes: dict[str, str] = field(default_factory=dict)  # a class body -> the class declaring it
    share: bool = False  # declare identical classes once (render_tools_sdk_py's share_types)
    aliases: dict[int, str] = field(default_factory=dict)  # id(enum node) -> its shared alias


class _Ref:
    """A class name in an annotation, settled when the class closes: its own name, or the name of
    an identical class declared earlier (the shared type the annotation then points at)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _text(buffer: list[str | _Ref]) -> str:
    return "".join(part if isinstance(part, str) else part.name for part in buffer)


class _Inconsistent(Exception):
    """A schema container read differently from how it validated (a hostile ``dict`` subclass)."""


def _record(value: object) -> Mapping[str, Any]:
    record = _read_record(value)
    if record is None:
        raise _Inconsistent
    return record


def _array(value: object) -> list[Any] | tuple[Any, ...]:
    array = _read_array(value)
    if array is None:
        raise _Inconsistent
    return array


def _py_scalar(value: object) -> str:
    """A validated ``const``/``enum`` entry as Python literal text.

    Strings go through ``JSON.stringify`` (every escape it emits is also a Python escape for the
    same character). An integral number is spelled as its exact integer digits: beyond ±(2**53-1)
    ``Number::toString`` would round (``2**60`` → ``...847000``) or switch to exponent form
    (``1e21`` → ``1e+21``), and within that range the two spellings agree. Other numbers use
    ``Number::toString`` (``1e-7``, ``1.5``).
    """
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, str):
        return js_string(well_formed(str.__str__(value)))
    if isinstance(value, int):
        return str(int.__int__(value))
    if isinstance(value, float):
        number = float.__float__(value)
        return str(int(number)) if number.is_integer() else js_number(number)
    raise _Inconsistent


def _constrained(node: Mapping[str, Any], broad: str, state: _State, alias: bool = True) -> str:
    if alias and state.aliases:
        name = state.aliases.get(id(node))
        if name is not None:
            return name
    if "const" in node:
        state.typing.add("Literal")
        return f"Literal[{_py_scalar(node['const'])}]"
    if "enum" in node:
        state.typing.add("Literal")
        return "Literal[" + ", ".join(_py_scalar(entry) for entry in _array(node["enum"])) + "]"
    return broad


_BROAD: Final = {"string": "str", "number": "float", "integer": "int", "boolean": "bool"}

# Walk tasks: render a node into a buffer / append fixed text / close a TypedDict declaration.
_NODE: Final = 0
_TEXT: Final = 1
_CLASS: Final = 2


def _class_body(task: tuple[Any, ...], state: _State) -> tuple[str, list[str]]:
    """The bases and body lines of one TypedDict, assembled after its field types were rendered.

    Shared (compact) SDKs mark the minority: a class with at least two more optional fields than
    required ones is ``total=False`` with ``Required[...]`` on the required fields, which types
    exactly the same keys in fewer tokens."""
    _, _, entries, required, closed, buffers = task
    present = sum(1 for key, _, _ in entries if key in required)
    partial = state.share and len(entries) - present > present + 1
    lines: list[str] = []
    for (key, bare, schema), buffer in zip(entries, buffers, strict=True):
        comment = describe(_record(schema).get("description"))
        if comment is not None:
            lines.append(f"    # {comment}")
        annotation = _text(buffer)
        # Constraints the type cannot carry (minimum, pattern, ...) ride on the field's line.
        notes = describe(", ".join(constraint_notes(schema)))
        tail = "" if notes is None else f"  # {notes}"
        if partial:
            if key in required:
                state.typing.add("Required")
                annotation = f"Required[{annotation}]"
            lines.append(f"    {bare}: {annotation}{tail}")
        elif key in required:
            lines.append(f"    {bare}: {annotation}{tail}")
        else:
            state.typing.add("NotRequired")
            lines.append(f"    {bare}: NotRequired[{annotation}]{tail}")
    if not closed:
        # TypedDict cannot express openness; the advisory note is the model's only signal.
        lines.append(_OPEN_NOTE)
    if not lines:
        lines.append("    pass")
    return ("TypedDict, total=False" if partial else "TypedDict"), lines


class _Walk:
    """One type render: an explicit task stack over a validated schema (no recursion; output
    goes into token buffers joined once, so it stays linear), plus an undo log so that a render
    failing half-way leaves the shared :class:`_State` as it found it."""

    def __init__(self, state: _State, named: bool) -> None:
        self.state = state
        self.named = named  # False for the context-free json_schema_to_py: objects cannot be named
        self.tasks: list[tuple[Any, ...]] = []
        self.classes_before = len(state.classes)
        self.typing_before = set(state.typing)
        self.names: list[str] = []
        self.counters_before: dict[str, int | None] = {}
        self.shapes_added: list[str] = []

    def allocate(self, base: str) -> str:
        """Reserve a unique class name: the capped base, else base + ``2``, ``3``, ... resuming
        from the per-base counter (amortized O(1)) and skipping names taken by other bases."""
        state = self.state
        capped = cap_class_name_base(base)
        name = capped
        if name in state.used:
            number = state.counters.get(capped, 2)
            while f"{capped}{number}" in state.used:
                number += 1
            name = f"{capped}{number}"
            self.counters_before.setdefault(capped, state.counters.get(capped))
            state.counters[capped] = number + 1
        state.used.add(name)
        self.names.append(name)
        return name

    def rollback(self) -> None:
        state = self.state
        del state.classes[self.classes_before :]
        state.used.difference_update(self.names)
        for base, before in self.counters_before.items():
            if before is None:
                state.counters.pop(base, None)
            else:
                state.counters[base] = before
        state.typing.clear()
        state.typing.update(self.typing_before)
        for shape in self.shapes_added:
            del state.shapes[shape]

    def run(self, root: object, base: str) -> str:
        state = self.state
        out: list[str | _Ref] = []
        tasks = self.tasks
        tasks.append((_NODE, root, base, 0, out))
        push = tasks.append
        while tasks:
            task = tasks.pop()
            kind = task[0]
            if kind == _TEXT:
                task[2].append(task[1])
                continue
            if kind == _CLASS:
                self.close(task)
                continue
            _, schema, class_name, depth, buffer = task
            node = _record(schema)
            if "oneOf" in node:
                # `A | B` opens no bracket, so branches keep the enclosing depth.
                branches = _array(node["oneOf"])
                for index in range(len(branches) - 1, -1, -1):
                    branch_name = child_class_name(class_name, str(index + 1)) if self.named else ""
                    push((_NODE, branches[index], branch_name, depth, buffer))
                    if index:
                        push((_TEXT, " | ", buffer))
                continue
            schema_type = node.get("type")
            if schema_type is None:
                state.typing.add("Any")
                buffer.append("Any")
            elif schema_type in _BROAD:
                buffer.append(_constrained(node, _BROAD[schema_type], state))
            elif schema_type == "null":
                buffer.append("None")
            elif schema_type == "array":
                if "items" not in node:
                    state.typing.add("Any")
                    buffer.append("list[Any]")
                elif depth >= MAX_LIST_NESTING:
                    state.typing.add("Any")
                    buffer.append("Any")
                else:
                    buffer.append("list[")
                    push((_TEXT, "]", buffer))
                    # An array of objects names its item class after the array itself.
                    push((_NODE, node["items"], class_name, depth + 1, buffer))
            elif schema_type == "object":
                additional = node.get("additionalProperties")
                if isinstance(additional, Mapping) and not node.get("properties"):
                    # dict[str, X] (decision 0010); with declared properties it stays a TypedDict.
                    if depth >= MAX_LIST_NESTING:
                        state.typing.add("Any")
                        buffer.append("dict[str, Any]")
                    else:
                        buffer.append("dict[str, ")
                        push((_TEXT, "]", buffer))
                        push((_NODE, additional, class_name, depth + 1, buffer))
                else:
                    self.object(node, class_name, buffer)
            else:
                raise _Inconsistent
        return _text(out)

    def close(self, task: tuple[Any, ...]) -> None:
        """Declare a finished class, unless an identical one exists: then its annotation points
        there and the name it reserved is freed. Nested classes close first, so two objects of the
        same shape reach here with the same body text, however deep the shared type sits."""
        state = self.state
        ref: _Ref = task[1]
        bases, lines = _class_body(task, state)
        body = f"({bases}):\n" + "\n".join(lines)
        shared = state.shapes.get(body) if state.share else None
        if shared is not None:
            state.used.discard(ref.name)
            ref.name = shared
            return
        state.shapes[body] = ref.name
        self.shapes_added.append(body)
        state.classes.append(f"class {ref.name}{body}")

    def object(self, node: Mapping[str, Any], class_name: str, buffer: list[str | _Ref]) -> None:
        """A named TypedDict when there is a naming context and every field name is expressible
        (a closed empty object included), else ``dict[str, Any]``."""
        state = self.state
        properties = _record(node["properties"]) if "properties" in node else {}
        entries = [(key, well_formed(key), schema) for key, schema in properties.items()]
        closed = node.get("additionalProperties") is False
        if (
            not self.named
            or not all(is_field_name(bare) for _, bare, _ in entries)
            or not (entries or closed)
        ):
            state.typing.add("Any")
            buffer.append("dict[str, Any]")
            return
        name = self.allocate(class_name)
        state.typing.add("TypedDict")
        ref = _Ref(name)
        buffer.append(ref)
        required = frozenset(_array(node["required"])) if "required" in node else frozenset()
        buffers: list[list[str | _Ref]] = [[] for _ in entries]
        # Closed after its fields (pushed last, popped first), so nested classes come first.
        self.tasks.append((_CLASS, ref, entries, required, closed, buffers))
        for index in range(len(entries) - 1, -1, -1):
            _, bare, schema = entries[index]
            # A field annotation is its own line: nesting restarts at 1 (reserving `NotRequired[`).
            # Shared SDKs name a nested class after its field alone (a counter settles clashes):
            # the name is written twice, and the parent's name adds nothing the field does not say.
            segment = camel_case(bare) if state.share else child_class_name(name, camel_case(bare))
            self.tasks.append((_NODE, schema, segment, 1, buffers[index]))


def _render_type(schema: object, class_name: str, named: bool, state: _State) -> str:
    """One schema as a Python type; ``Any`` (with ``state`` rolled back) for anything unsupported."""
    walk = _Walk(state, named)
    try:
        if not json_schema_violations(schema):
            return walk.run(schema, class_name)
    except Exception:
        walk.rollback()
    state.typing.add("Any")
    return "Any"


def json_schema_to_py(schema: object) -> str:
    """The context-free Python type of a JSON schema (upstream ``jsonSchemaToPy``).

    There is nowhere to declare classes, so every object is ``dict[str, Any]``. Never raises: an
    unsupported, malformed or cyclic schema is ``Any``.

    >>> json_schema_to_py({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}})
    'list[Literal["a", "b"]]'
    >>> json_schema_to_py({"oneOf": [{"type": "integer", "const": 2**60}, {"type": "null"}]})
    'Literal[1152921504606846976] | None'
    """
    return _render_type(schema, "", False, _State())


def _enum_aliases(
    tools: list[tuple[str, object, SdkTool]], schemas: list[tuple[object, object]], state: _State
) -> list[str]:
    """``Name = Literal[...]`` for each enum the tool set repeats (contract TS4), recorded
    in ``state`` so the walk writes the alias; nothing for an unsupported or cyclic schema."""
    roots: list[tuple[str, Mapping[str, Any]]] = []
    for (name, _, _), (parameters, output) in zip(tools, schemas, strict=True):
        camel = camel_case(name)
        for suffix, schema in (("Args", parameters), ("Output", output)):
            if type(schema) is dict and not json_schema_violations(schema):
                roots.append((camel + suffix, schema))
    try:
        shared = collect_shared_types(
            roots,
            camel=camel_case,
            valid=is_field_name,
            reserved=frozenset({"Tools", "ToolCallError", "tools"}),
        )
    except Exception:
        return []
    declarations: list[str] = []
    for alias, node in shared.declarations:
        if shape_kind(node) != "enum":
            continue  # objects are shared as classes by the walk itself
        broad = _BROAD.get(str(node.get("type")), "")
        try:
            declarations.append(f"{alias} = {_constrained(node, broad, state, alias=False)}")
        except _Inconsistent:
            continue
        state.used.add(alias)
        for key, name in shared.names.items():
            if name == alias:
                state.aliases[key] = alias
    return declarations


def _returns_lines(output: object, prefix: str) -> list[str]:
    """The ``Returns:`` comment of a tool (``prefix`` opens each comment line): its output
    description, or one line per key when the description names the result's keys."""
    text, keys = return_notes(output)
    if keys:
        lines = [f"{prefix}Returns:"]
        for key in keys:
            described = describe(key)
            if described is not None:
                lines.append(f"{prefix}  {described}")
        return lines if len(lines) > 1 else []
    described = describe(text)
    return [] if described is None else [f"{prefix}Returns: {described}"]


def _group_header(group: tuple[str, str]) -> str:
    """The one comment that introduces a group's tools (the group's description is said here only)."""
    name = describe(group[0]) or "?"
    about = describe(group[1])
    return f"    # Group {name}" if about is None else f"    # Group {name}: {about}"


def _render(tools: list[tuple[str, object, SdkTool]], share_types: bool = False) -> str:
    """Render already ordered, de-duplicated ``(name, description, tool)`` entries (a group's
    tools adjacent)."""
    state = _State(typing={"Protocol"}, share=share_types)
    if share_types:
        state.used.update(_RESERVED_NAMES)
    schemas: list[tuple[object, object]] = []
    for _, description, tool in tools:
        parameters = getattr(tool, "parameters", None)
        if share_types:
            parameters = without_documented_parameters(description, parameters)
        schemas.append((parameters, getattr(tool, "output", None)))
    aliases = _enum_aliases(tools, schemas, state) if share_types else []
    members: list[str] = []
    methods = 0
    current: tuple[str, str] | None = None
    for (name, description, tool), (parameters, output_schema) in zip(tools, schemas, strict=True):
        group = group_of(tool)
        if group is not None and group != current:
            if members:
                members.append("")
            members.append(_group_header(group))
        current = group
        camel = camel_case(name)
        args = _render_type(parameters, camel + "Args", True, state)
        output = _render_type(output_schema, camel + "Output", True, state)
        described = describe(description)
        if is_method_name(name):
            signature = f"    async def {name}(self, args: {args}) -> {output}:"
            returns = _returns_lines(output_schema, "        # ")
            if described is None and not returns:
                members.append(signature + " ...")
            else:
                members.append(signature)
                if described is not None:
                    # A docstring documents a method only as the first statement of its body.
                    members.append("        " + docstring(described))
                members.extend(returns)
                if described is None:
                    members.append("        ...")  # comments are not a body
            methods += 1
        else:
            members.append(f"    # tools[{js_string(name)}](args: {args}) -> {output}")
            if described is not None:
                members.append(f"    #   {described}")
            members.extend(_returns_lines(output_schema, "    #   "))
    if methods == 0:
        # Comments are not statements: a class body of only comments does not parse.
        members.insert(0, "    pass")
    imports = ", ".join(symbol for symbol in _TYPING_ORDER if symbol in state.typing)
    classes = "".join(declaration + "\n\n" for declaration in (*aliases, *state.classes))
    body = "\n".join(members)
    declaration = (
        f"from typing import {imports}\n\n"
        "class ToolCallError(Exception):\n    toolName: str\n\n"
        f"{classes}class Tools(Protocol):\n{body}\n\ntools: Tools"
    )
    return f"{SDK_INSTRUCTIONS_PY}\n\n```python\n{declaration}\n```"


def render_tools_sdk_py(tools: Iterable[SdkTool], *, share_types: bool = False) -> str:
    """The whole ``tools:sdk`` section for a Python code runtime (upstream ``renderToolsSdkPy``).

    Layout: :data:`SDK_INSTRUCTIONS_PY`, then a fenced ``python`` block holding the ``typing``
    import (only the symbols used, ``Protocol`` always), ``ToolCallError``, every generated
    ``TypedDict``, the ``Tools`` protocol and ``tools: Tools``. Tools are sorted by UTF-16 name,
    duplicates collapse, ``run_code`` is skipped, and a tool whose name is not a ``str`` is
    ignored. Never raises for any schema content.

    toolrt's additions (absent from a tool set without them, so such a set renders as upstream
    does): an output schema's ``description`` becomes a ``# Returns:`` comment in the method body
    (one line per key when it names the result's keys); constraint keywords ride on their field's
    line (``qty: int  # >= 1``); grouped tools follow the ungrouped ones, each group under one
    ``# Group <name>: <description>`` comment, groups ordered by name.

    ``share_types=True`` (what Code Mode's prompt sends, contract TS3) declares each
    structurally identical ``TypedDict`` once, under the name of its first use in render order,
    and every other use refers to it: the same ``User`` returned by five tools costs one class,
    not five. Off, the text is upstream's, where each use gets a class of its own. A tool set with
    no repeated class renders the same either way.

    >>> user = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    >>> sdk = render_tools_sdk_py(
    ...     [SdkTool("get", "", user, user), SdkTool("put", "", user, user)], share_types=True
    ... )
    >>> sdk.count("(TypedDict):"), "async def put(self, args: GetArgs) -> GetArgs" in sdk
    (1, True)
    """
    groups: dict[str, list[SdkTool]] = {}
    for tool in tools:
        name = getattr(tool, "name", None)
        if isinstance(name, str) and name != _RUN_CODE:
            groups.setdefault(well_formed(str.__str__(name)), []).append(tool)
    chosen: list[tuple[str, object, SdkTool]] = []
    for name in sorted(groups, key=utf16_key):
        group = groups[name]
        tool = group[0]
        if any(other is not tool for other in group):
            # Same name, different objects: pick by standalone rendering, whatever the input order.
            tool = min(group, key=lambda t: _render([(name, getattr(t, "description", None), t)]))
        chosen.append((name, getattr(tool, "description", None), tool))
    # Stable: ungrouped tools first, then each group's tools together, in name order within.
    chosen.sort(key=lambda entry: _group_rank(group_of(entry[2])))
    return _render(chosen, share_types)


def _group_rank(group: tuple[str, str] | None) -> tuple[bytes, ...]:
    # () sorts before every group's key, so the ungrouped tools come first.
    return () if group is None else (utf16_key(group[0]), utf16_key(group[1]))
