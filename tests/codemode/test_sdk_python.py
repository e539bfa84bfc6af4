"""Python Code Mode SDK renderer (port of upstream ``py-types.spec.ts`` plus contract §2.16 / §3.2 #35).

Every rendered SDK is also checked to be valid Python: :func:`render` compiles the fenced block of
each output it returns, and the realistic tool set is executed to prove the declarations import.
"""

from __future__ import annotations

import copy
import inspect
import random
import re
import threading
import typing
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from code_mode_fakes import FakeRuntime
from helpers import SCHEMA_KEYWORDS, SUBSET_HAS_BOUNDS, bounded, closed_object
from toolrt import ToolRuntime
from toolrt._tool_definition import ToolGroup
from toolrt.codemode._prompt_sections import render_sdk
from toolrt.codemode._py_names import camel_case, cap_class_name_base, describe, well_formed
from toolrt.codemode._sdk_python import (
    SDK_INSTRUCTIONS_PY,
    SdkTool,
    json_schema_to_py,
    render_tools_sdk_py,
)
from toolrt.codemode._sdk_tool import constraint_notes
from toolrt.schema import json_schema_violations
from toolrt.schema import parameter_schema_spec_to_json_schema as spec_schema

T = TypeVar("T")
FENCE_OPEN = "\n\n```python\n"
FENCE_CLOSE = "\n```"
STRING: dict[str, Any] = {"type": "string"}
NO_ARGS = spec_schema({})


def tool(name: str, description: str = "", parameters: Any = None, output: Any = None) -> SdkTool:
    return SdkTool(
        name=name,
        description=description,
        parameters=NO_ARGS if parameters is None else parameters,
        output=STRING if output is None else output,
    )


def code_of(text: str) -> str:
    """The Python block of a rendered section (asserting the surrounding layout)."""
    assert text.startswith(SDK_INSTRUCTIONS_PY + FENCE_OPEN)
    assert text.endswith(FENCE_CLOSE)
    return text[len(SDK_INSTRUCTIONS_PY + FENCE_OPEN) : -len(FENCE_CLOSE)]


def render(tools: list[SdkTool], *, compiles: bool = True) -> str:
    """``render_tools_sdk_py`` whose block must compile (UTF-8 encodable, no NUL, parseable)."""
    text = render_tools_sdk_py(tools)
    code = code_of(text)
    if compiles:
        code.encode("utf-8")  # a lone surrogate would make the source unencodable
        compile(code, "<sdk>", "exec", dont_inherit=True)
    return text


def py_type(schema: object) -> str:
    """``json_schema_to_py`` whose result must compile as an annotation."""
    annotation = json_schema_to_py(schema)
    compile(f"from typing import Any, Literal\nx: {annotation}\n", "<annotation>", "exec", dont_inherit=True)
    return annotation


def within(seconds: float, work: Callable[[], T]) -> T:
    """``work()``, failing (instead of hanging the suite) when it takes longer than ``seconds``."""
    result: list[T] = []
    worker = threading.Thread(target=lambda: result.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"not done within {seconds}s (quadratic?) or raised"
    return result[0]


def class_names(text: str) -> list[str]:
    return re.findall(r"^class (\S+)\(TypedDict\):$", text, re.MULTILINE)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


BASH = tool(
    "bash",
    "Run a shell command.",
    spec_schema({"command": {"type": "string", "required": True}}),
    closed_object({"exitCode": {"type": "integer"}}, ["exitCode"]),
)
BASH_STRING_OUTPUT = tool(
    "bash", "Run a shell command.", spec_schema({"command": {"type": "string", "required": True}})
)
READ_FILE = tool(
    "read_file",
    "Read a file from disk.",
    spec_schema(
        {
            "path": {"type": "string", "required": True, "description": "Absolute file path"},
            "offset": {"type": "number"},
            "limit": {"type": "number"},
        }
    ),
)
EXOTIC = tool("my-mcp.tool", "Exotic name.", NO_ARGS, {"type": "array", "items": {"type": "string"}})
EXOTIC_STRING_OUTPUT = tool("my-mcp.tool", "Exotic name.")
RESERVED = tool("class", "Uses a reserved Python word.")


def described(description: str) -> SdkTool:
    """One tool carrying ``description`` at both sites: the method docstring and a field comment."""
    return tool(
        "weird",
        description,
        spec_schema({"field": {"type": "string", "required": True, "description": description}}),
    )


# --- the fixed text and the exact examples of contract §2.16 --------------------------------------

EXPECTED_INSTRUCTIONS = (
    "## Writing code for run_code\n"
    "\n"
    "`run_code` takes two required arguments: `code` — the body of an async Python function "
    "(top-level `await` and `return` both work) — and `description`, a short summary of what the "
    "program does. At run time "
    "exactly two of the names declared below are bound: `tools` and `ToolCallError`. Everything else is a "
    "STATIC STUB describing argument and return types — in particular the `TypedDict` classes do NOT exist "
    'at run time, so build arguments as plain `dict`/`list` JSON values: `await tools.name({"field": 1})`, '
    "never `FooArgs(field=1)`, which raises `NameError`. Inside the program:\n"
    "\n"
    "- Call tools as `await tools.name(args)` — subscript access for exotic, reserved, or underscore-leading "
    'names: `await tools["my-tool"](args)`. Every call resolves to the tool\'s typed canonical JSON value '
    "(each method's return type below). Tool arguments must be lossless JSON.\n"
    "- A FAILED tool call raises `ToolCallError`, whose `toolName` identifies the failed tool and whose "
    "message is human-readable — wrap in `try/except` to handle and continue.\n"
    "- Independent read-only calls MAY overlap under `asyncio.gather` (safe calls run concurrently; mutating "
    "calls run alone, in submission order). Sequence dependent work with `await`.\n"
    "- Emit the run's answer with `print(...)` and/or a top-level `return <value>`; the returned value must "
    "be lossless JSON. ONLY what you print and the returned value come back — intermediate tool results "
    "never enter the conversation, so extract just what you need.\n"
    "\n"
    "The available tools:"
)

EXPECTED_TWO_TOOLS = '''
```python
from typing import NotRequired, Protocol, TypedDict

class ToolCallError(Exception):
    toolName: str

class BashArgs(TypedDict):
    command: str
    # Additional keys beyond those declared are allowed.

class BashOutput(TypedDict):
    exitCode: int

class ReadFileArgs(TypedDict):
    # Absolute file path
    path: str
    offset: NotRequired[float]
    limit: NotRequired[float]
    # Additional keys beyond those declared are allowed.

class Tools(Protocol):
    async def bash(self, args: BashArgs) -> BashOutput:
        """Run a shell command."""
    async def read_file(self, args: ReadFileArgs) -> str:
        """Read a file from disk."""

tools: Tools
```'''

EXPECTED_EXOTIC = '''
```python
from typing import Any, Protocol, TypedDict

class ToolCallError(Exception):
    toolName: str

class BashArgs(TypedDict):
    command: str
    # Additional keys beyond those declared are allowed.

class BashOutput(TypedDict):
    exitCode: int

class Tools(Protocol):
    async def bash(self, args: BashArgs) -> BashOutput:
        """Run a shell command."""
    # tools["my-mcp.tool"](args: dict[str, Any]) -> list[str]
    #   Exotic name.

tools: Tools
```'''

EXPECTED_EMPTY = """
```python
from typing import Protocol

class ToolCallError(Exception):
    toolName: str

class Tools(Protocol):
    pass

tools: Tools
```"""


def test_instructions_are_the_exact_upstream_text() -> None:
    assert SDK_INSTRUCTIONS_PY == EXPECTED_INSTRUCTIONS


def test_the_two_tool_example_is_byte_identical() -> None:
    text = render([READ_FILE, BASH])
    assert text == EXPECTED_INSTRUCTIONS + "\n" + EXPECTED_TWO_TOOLS


def test_the_exotic_name_example_is_byte_identical() -> None:
    assert render([EXOTIC, BASH]) == EXPECTED_INSTRUCTIONS + "\n" + EXPECTED_EXOTIC


def test_the_empty_tool_set_is_byte_identical() -> None:
    """renders a pass body and a minimal import for an empty tool set"""
    text = render([])
    assert text == EXPECTED_INSTRUCTIONS + "\n" + EXPECTED_EMPTY
    assert "from typing import Protocol\n" in text
    assert "class Tools(Protocol):\n    pass\n" in text


def test_sdk_tool_is_frozen() -> None:
    with pytest.raises(FrozenInstanceError):
        BASH.name = "other"  # type: ignore[misc]


def test_a_realistic_sdk_imports_and_defines_tools_and_typeddicts() -> None:
    workflow = tool(
        "workflow",
        'Run a "workflow" \\ with phases.',
        spec_schema(
            {
                "meta": closed_object(
                    {
                        "name": {"type": "string", "required": True},
                        "mode": {"type": "string", "enum": ["fast", "slow"]},
                        "phases": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": True,
                                "properties": {"title": {"type": "string", "required": True}},
                            },
                        },
                    },
                    True,
                ),
                "dry_run": {"type": "boolean"},
            }
        ),
        {
            "oneOf": [
                {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
                {"type": "null"},
            ]
        },
    )
    tools = [BASH, READ_FILE, EXOTIC, RESERVED, workflow, tool("_private", "Hidden."), tool("plain")]
    namespace: dict[str, Any] = {}
    # dont_inherit: this module's `from __future__ import annotations` must not leak into the SDK.
    exec(compile(code_of(render(tools)), "<sdk>", "exec", dont_inherit=True), namespace)
    protocol = namespace["Tools"]
    assert getattr(protocol, "_is_protocol", False) is True
    assert issubclass(namespace["ToolCallError"], Exception)
    assert typing.get_type_hints(namespace["ToolCallError"]) == {"toolName": str}
    for name in ("bash", "read_file", "workflow", "plain"):
        assert inspect.iscoroutinefunction(getattr(protocol, name))
    for name in ("my-mcp.tool", "class", "_private"):
        assert not hasattr(protocol, name)
    assert protocol.bash.__doc__ == "Run a shell command."
    assert protocol.workflow.__doc__ == 'Run a "workflow" \\ with phases.'
    read_args = namespace["ReadFileArgs"]
    assert typing.is_typeddict(read_args)
    assert read_args.__required_keys__ == frozenset({"path"})
    assert read_args.__optional_keys__ == frozenset({"offset", "limit"})
    assert read_args.__annotations__["path"] is str
    meta = namespace["WorkflowArgsMeta"]
    assert meta.__required_keys__ == frozenset({"name"})
    assert typing.get_type_hints(meta)["mode"] == typing.Literal["fast", "slow"]
    phases = namespace["WorkflowArgsMetaPhases"]
    assert typing.get_origin(typing.get_type_hints(meta)["phases"]) is list
    assert typing.get_args(typing.get_type_hints(meta)["phases"]) == (phases,)
    assert typing.get_type_hints(protocol.workflow)["return"] == namespace["WorkflowOutput1"] | None
    assert namespace["BashOutput"].__required_keys__ == frozenset({"exitCode"})
    assert "tools" not in namespace  # `tools: Tools` is a bare annotation: bound only at run time


# --- describe: jsonSchemaToPy --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "integer"}, "int"),
        ({"type": "null"}, "None"),
        ({"type": "string", "enum": ["a", "b"]}, 'Literal["a", "b"]'),
        ({"type": "array", "items": {"type": "number"}}, "list[float]"),
        ({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}, 'list[Literal["x", "y"]]'),
        ({"type": "array"}, "list[Any]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"type": "object", "properties": {}}, "dict[str, Any]"),
        ({"type": "object", "properties": {"x": {"type": "string"}}}, "dict[str, Any]"),
        (closed_object({}), "dict[str, Any]"),
        ({"type": "string", "const": "fixed"}, 'Literal["fixed"]'),
        ({"const": "fixed", "type": "string"}, 'Literal["fixed"]'),
        ({"type": "boolean", "const": True}, "Literal[True]"),
        ({"type": "number", "const": 1.5}, "Literal[1.5]"),
        ({"type": "boolean", "enum": [False]}, "Literal[False]"),
        ({"type": "string", "enum": ["a", "b"], "const": "a"}, 'Literal["a"]'),
        ({"type": "null", "const": None}, "None"),
        ({"oneOf": [{"type": "string"}, {"type": "null"}]}, "str | None"),
        ({}, "Any"),
        ({"description": "anything"}, "Any"),
    ],
)
def test_maps_the_define_tool_dsl_subset(schema: object, expected: str) -> None:
    """maps the defineTool DSL subset"""
    assert py_type(schema) == expected


class _Unreadable(dict[str, Any]):
    def items(self) -> Any:
        raise RuntimeError("hostile")


@pytest.mark.parametrize(
    "schema",
    [
        object(),  # Python's stand-in for `undefined`
        None,
        42,
        "string-schema",
        [{"type": "string"}],
        {"oneOf": 7},
        {"oneOf": []},
        {"$ref": "#/defs/x"},
        {"type": "object", "properties": 7},
        {"type": "string", "enum": [1, 2]},
        {"type": "string", "enum": []},
        {"type": ["string", "null"]},
        {"type": "tuple"},
        {"type": "number", "const": float("nan")},
        {"type": "number", "const": -0.0},
        {"type": "integer", "const": 2**53 + 1},
        {"type": "integer", "const": 1.5},
        {"type": "number", "enum": [True]},
        {"type": "string", "description": 42},
        {1: "non-string key"},
        _Unreadable(type="string"),
    ],
)
def test_is_total_unsupported_or_hostile_constructs_degrade_to_any(schema: object) -> None:
    """is total: unsupported or hostile constructs degrade to Any, never throw"""
    assert json_schema_to_py(schema) == "Any"


def test_a_cyclic_schema_degrades_to_any() -> None:
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic
    assert json_schema_to_py(cyclic) == "Any"
    looped: dict[str, Any] = {"type": "array"}
    looped["items"] = looped
    assert json_schema_to_py(looped) == "Any"


def test_leans_on_json_stringify_to_keep_a_literal_parseable() -> None:
    """leans on JSON.stringify to keep a Literal parseable"""
    assert py_type({"type": "string", "const": "a\x00b"}) == r'Literal["a\u0000b"]'
    assert py_type({"type": "string", "enum": ["a\ud800b"]}) == r'Literal["a\ud800b"]'
    assert py_type({"type": "string", "const": 'say "hi"\n'}) == r'Literal["say \"hi\"\n"]'
    assert py_type({"type": "string", "const": "ends\\"}) == r'Literal["ends\\"]'
    # Every escape it emits is a Python escape for the same character: the value round-trips.
    namespace: dict[str, Any] = {}
    literal = json_schema_to_py({"type": "string", "const": 'q"\\x\n'})
    exec(
        compile(f"from typing import Literal\nT = {literal}", "<literal>", "exec", dont_inherit=True),
        namespace,
    )
    assert typing.get_args(namespace["T"]) == ('q"\\x\n',)
    # A pair held as two Python code points is one astral character, kept raw like JavaScript does.
    assert py_type({"type": "string", "const": "\ud83d\ude00"}) == 'Literal["\U0001f600"]'


def test_passes_nel_and_the_line_paragraph_separators_through_raw() -> None:
    """passes NEL and the line/paragraph separators through raw, which CPython does not treat as line terminators"""  # noqa: E501 (verbatim upstream title)
    assert py_type({"type": "string", "const": "a\u2028b"}) == 'Literal["a\u2028b"]'
    assert py_type({"type": "string", "enum": ["a\u2029b"]}) == 'Literal["a\u2029b"]'
    assert py_type({"type": "string", "const": "a\u0085b"}) == 'Literal["a\u0085b"]'


def test_emits_exact_digits_for_a_beyond_safe_range_integer_literal() -> None:
    """emits exact digits for a beyond-safe-range integer literal"""
    assert py_type({"type": "integer", "const": 2**60}) == "Literal[1152921504606846976]"
    assert py_type({"type": "integer", "const": float(2**60)}) == "Literal[1152921504606846976]"
    assert py_type({"type": "integer", "enum": [2**60, -(2**60)]}) == (
        "Literal[1152921504606846976, -1152921504606846976]"
    )
    assert py_type({"type": "integer", "const": 1e21}) == "Literal[1000000000000000000000]"
    assert py_type({"type": "number", "const": 1e21}) == "Literal[1000000000000000000000]"
    assert py_type({"type": "integer", "const": 2**53 - 1}) == "Literal[9007199254740991]"
    assert py_type({"type": "number", "const": 1e-7}) == "Literal[1e-7]"
    assert py_type({"type": "number", "enum": [2.0, 0.000001, 2.5e-7]}) == "Literal[2, 0.000001, 2.5e-7]"


def test_literal_entries_of_enum_subclasses_render_as_their_plain_values() -> None:
    import enum

    class Color(enum.StrEnum):
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    assert py_type({"type": "string", "enum": [Color.RED]}) == 'Literal["red"]'
    assert py_type({"type": "integer", "const": Level.HIGH}) == "Literal[3]"


def test_degrades_a_context_free_one_of_of_object_branches_to_a_union_of_dicts() -> None:
    """degrades a context-free oneOf of object branches to a union of dict[str, Any]"""
    obj = closed_object({"ok": {"type": "boolean"}}, ["ok"])
    assert py_type({"oneOf": [obj, {"type": "string"}]}) == "dict[str, Any] | str"
    assert py_type({"oneOf": [obj, obj]}) == "dict[str, Any] | dict[str, Any]"
    assert (
        py_type({"type": "array", "items": {"oneOf": [obj, {"type": "string"}]}})
        == "list[dict[str, Any] | str]"
    )


def test_degrades_an_open_object_with_omitted_properties_to_dict() -> None:
    """degrades an open object with omitted properties to dict[str, Any]"""
    assert py_type({"type": "object", "properties": {}}) == "dict[str, Any]"
    assert py_type({"type": "object"}) == "dict[str, Any]"
    text = render([tool("loose", "", {"type": "object", "additionalProperties": True})])
    assert "async def loose(self, args: dict[str, Any]) -> str: ..." in text
    assert "TypedDict" not in code_of(text)


def test_renders_a_deeply_nested_array_schema_capped_at_the_bracket_limit() -> None:
    """renders a deeply nested array schema without exhausting the call stack, capped at CPython's bracket limit"""  # noqa: E501 (verbatim upstream title)
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(20000):
        deep = {"type": "array", "items": deep}
    annotation = py_type(deep)
    assert annotation == "list[" * 180 + "Any" + "]" * 180
    assert annotation.count("[") < 200


def test_keeps_a_chain_just_under_the_nesting_cap_exact_and_restarts_per_field() -> None:
    """keeps a chain just under the nesting cap exact, and restarts nesting per TypedDict field"""
    under: dict[str, Any] = {"type": "string"}
    for _ in range(179):
        under = {"type": "array", "items": under}
    assert py_type(under) == "list[" * 179 + "str" + "]" * 179
    text = render(
        [
            tool(
                "deep_field",
                "Deep array under a field.",
                closed_object({"rows": under}, ["rows"]),
            )
        ]
    )
    assert "    rows: " + "list[" * 179 + "str" + "]" * 179 + "\n" in text


def _rooted(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "const": "x"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def test_caps_the_argument_annotation_whose_enclosing_paren_stays_open() -> None:
    """caps the argument annotation, the site whose enclosing paren stays open"""
    chain = "list[" * 180 + 'Literal["x"]' + "]" * 180
    worst = render([tool("rooted", "Array-rooted parameters.", _rooted(180))])  # 182 open brackets compile
    assert f"async def rooted(self, args: {chain}) -> str:" in worst
    annotation = worst.split("async def rooted(self, args: ")[1].split(") -> str:")[0]
    assert annotation.count("[") == 181
    deeper = render([tool("rooted", "Array-rooted parameters.", _rooted(181))])
    assert "async def rooted(self, args: " + "list[" * 180 + "Any" + "]" * 180 + ") -> str:" in deeper
    spine: dict[str, Any] = _rooted(180)
    for _ in range(3):
        spine = {"oneOf": [spine, {"type": "string"}]}
    union = render([tool("rooted", "Array-rooted parameters.", spine)])
    assert f"args: {chain} | str | str | str) -> str:" in union
    boxed = render(
        [
            tool(
                "rooted",
                "Boxed.",
                {"type": "object", "properties": {"rows": _rooted(180)}, "required": ["rows"]},
            )
        ]
    )
    assert "    rows: " + "list[" * 179 + "Any" + "]" * 179 + "\n" in boxed


def test_renders_a_deeply_nested_one_of_chain_in_linear_time() -> None:
    """renders a deeply nested oneOf chain in linear time (no per-level re-materialization)"""

    def chain(depth: int) -> dict[str, Any]:
        deep: dict[str, Any] = {"type": "string"}
        for _ in range(depth):
            deep = {"oneOf": [deep, {"type": "null"}]}
        return deep

    depth = 100_000
    schema = chain(depth)
    annotation = within(20, lambda: json_schema_to_py(schema))  # a quadratic join copies ~10**11 chars
    assert annotation.startswith("str | None")
    assert annotation.endswith(" | None")
    assert len(annotation) == len("str") + len(" | None") * depth
    # CPython's compile() recurses on a 100,000-long BinOp chain (upstream leaves unions uncapped:
    # the text is grammatical at any length), so validity is shown on a shallower chain.
    assert py_type(chain(300)) == "str" + " | None" * 300


def test_a_small_schema_walk_has_no_fixed_recursion_limit() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        deep = closed_object({"x": deep}, ["x"])
    assert json_schema_to_py({"type": "array", "items": deep}) == "list[dict[str, Any]]"


# --- describe: renderToolsSdkPy ------------------------------------------------------------------


def test_declares_identifier_tools_as_async_methods_and_exotic_names_as_subscript_comments() -> None:
    """declares identifier tools as async methods and lists exotic/reserved names as subscript comments"""
    text = render([EXOTIC_STRING_OUTPUT, BASH_STRING_OUTPUT, RESERVED])
    assert "class Tools(Protocol):" in text
    assert "class BashArgs(TypedDict):" in text
    assert "async def bash(self, args: BashArgs) -> str:" in text
    assert '# tools["my-mcp.tool"](args: dict[str, Any]) -> str' in text
    assert '# tools["class"](args: dict[str, Any]) -> str' in text
    assert "top-level `await`" in text
    assert "exactly two of the names declared below are bound: `tools` and `ToolCallError`" in text
    assert "never `FooArgs(field=1)`, which raises `NameError`" in text
    assert "class ToolCallError(Exception):" in text
    assert "MAY overlap under `asyncio.gather`" in text
    assert "lossless JSON" in text
    assert "```python" in text
    assert text.endswith("tools: Tools\n```")


def test_names_both_required_call_arguments_not_just_the_program() -> None:
    """names both required call arguments, not just the program"""
    assert "`run_code` takes two required arguments: `code` — the body of an async Python function" in (
        SDK_INSTRUCTIONS_PY
    )
    assert "and `description`, a short summary of what the program does." in SDK_INSTRUCTIONS_PY
    assert SDK_INSTRUCTIONS_PY.endswith("The available tools:")


def test_renders_required_as_plain_fields_and_optional_as_not_required() -> None:
    """renders required as plain fields and optional as NotRequired, with per-field description comments"""
    search = tool(
        "search",
        "Search for text.",
        spec_schema(
            {
                "query": {"type": "string", "required": True, "description": "What to search for."},
                "limit": {"type": "number", "description": "Max results."},
            }
        ),
    )
    text = render([search])
    assert (
        "class SearchArgs(TypedDict):\n"
        "    # What to search for.\n"
        "    query: str\n"
        "    # Max results.\n"
        "    limit: NotRequired[float]\n"
        "    # Additional keys beyond those declared are allowed.\n\n"
    ) in text
    assert "    async def search(self, args: SearchArgs) -> str:\n" in text
    assert "from typing import NotRequired, Protocol, TypedDict\n" in text


def test_prefixes_tool_for_a_non_letter_head_and_degrades_a_malformed_schema_to_any() -> None:
    """prefixes Tool when a name CamelCases to a non-letter head, and degrades a malformed schema to Any"""
    probe = tool(
        "1st-tool",
        "Hostile-shape probe.",
        {"type": "object", "properties": {"field": {"type": "string", "description": 42}}},
        closed_object({"ok": {"type": "boolean"}}, ["ok"]),
    )
    text = render([probe])
    assert '# tools["1st-tool"](args: Any) -> Tool1stToolOutput' in text
    assert "class Tool1stToolOutput(TypedDict):\n    ok: bool\n\n" in text
    assert "from typing import Any, Protocol, TypedDict\n" in text


def test_treats_every_field_as_optional_without_a_required_array() -> None:
    """treats every field as optional when the object carries no required array"""
    text = render(
        [
            tool(
                "all_optional",
                "No required array.",
                {"type": "object", "properties": {"flag": {"type": "boolean"}}},
            )
        ]
    )
    assert "    flag: NotRequired[bool]\n" in text


def test_renders_an_enum_inside_an_object_property_as_a_literal_field() -> None:
    """renders an enum inside an object property as a Literal field"""
    text = render(
        [
            tool(
                "mode_tool",
                "Pick a mode.",
                spec_schema({"mode": {"type": "string", "required": True, "enum": ["fast", "slow"]}}),
            )
        ]
    )
    assert "class ModeToolArgs(TypedDict):" in text
    assert '    mode: Literal["fast", "slow"]\n' in text
    assert "from typing import Literal, Protocol, TypedDict\n" in text


def _workflow() -> SdkTool:
    return tool(
        "workflow",
        "Run a workflow.",
        spec_schema(
            {
                "meta": {
                    "type": "object",
                    "required": True,
                    "additionalProperties": False,
                    "description": "Identity block.",
                    "properties": {
                        "name": {"type": "string", "required": True, "description": "Short name."},
                        "phases": {
                            "type": "array",
                            "items": closed_object(
                                {
                                    "title": {
                                        "type": "string",
                                        "required": True,
                                        "description": "Phase title.",
                                    }
                                }
                            ),
                        },
                    },
                }
            }
        ),
    )


def test_renders_one_level_of_nested_object_as_its_own_typeddict_before_the_parent() -> None:
    """renders one level of nested object as its own named TypedDict declared before the parent"""
    text = render([_workflow()])
    assert (
        "class WorkflowArgsMetaPhases(TypedDict):\n    # Phase title.\n    title: str\n\n"
        "class WorkflowArgsMeta(TypedDict):\n    # Short name.\n    name: str\n"
        "    phases: NotRequired[list[WorkflowArgsMetaPhases]]\n\n"
        "class WorkflowArgs(TypedDict):\n    # Identity block.\n    meta: WorkflowArgsMeta\n"
        "    # Additional keys beyond those declared are allowed.\n\n"
        "class Tools(Protocol):\n"
    ) in text
    assert text.index("class WorkflowArgsMetaPhases") < text.index("class WorkflowArgsMeta(TypedDict):")
    assert text.index("class WorkflowArgsMeta(TypedDict):") < text.index("class WorkflowArgs(TypedDict):")
    assert text.index("class WorkflowArgs(TypedDict):") < text.index("class Tools(Protocol):")


def test_args_classes_precede_output_classes_per_tool_in_name_order() -> None:
    obj = closed_object({"v": {"type": "string"}}, ["v"])
    text = render([tool("b_tool", "", obj, obj), tool("a_tool", "", obj, obj)])
    assert class_names(text) == ["AToolArgs", "AToolOutput", "BToolArgs", "BToolOutput"]


def test_renders_a_one_of_of_object_branches_as_a_union_of_named_typeddicts() -> None:
    """renders a oneOf of object branches as a union of named TypedDicts declared before the parent"""
    act = tool(
        "act",
        "Union output.",
        closed_object({}),
        {
            "oneOf": [
                closed_object({"ok": {"type": "boolean"}}, ["ok"]),
                closed_object({"err": {"type": "string"}}, ["err"]),
            ]
        },
    )
    text = render([act])
    assert "class ActOutput1(TypedDict):\n    ok: bool\n\n" in text
    assert "class ActOutput2(TypedDict):\n    err: str\n\n" in text
    assert "    async def act(self, args: ActArgs) -> ActOutput1 | ActOutput2:\n" in text
    assert "class ActArgs(TypedDict):\n    pass\n\n" in text
    assert text.index("class ActOutput2(TypedDict):") < text.index("class Tools(Protocol):")


def test_names_both_branches_of_a_one_of_of_objects_on_the_argument_side() -> None:
    """names both branches of a oneOf of objects on the argument side"""
    parameters = {
        "oneOf": [
            closed_object({"a": {"type": "string"}}, ["a"]),
            closed_object({"b": {"type": "number"}}, ["b"]),
        ]
    }
    text = render([tool("x", "Union arguments.", parameters)])
    assert "class XArgs1(TypedDict):\n    a: str\n\n" in text
    assert "class XArgs2(TypedDict):\n    b: float\n\n" in text
    assert "async def x(self, args: XArgs1 | XArgs2) -> str:" in text


def test_suffixes_a_counter_when_two_tools_camel_case_to_the_same_base() -> None:
    """suffixes a counter when two tools CamelCase to the same class base"""
    text = render(
        [
            tool("my-tool", "Dash form.", spec_schema({"x": {"type": "string", "required": True}})),
            tool("my.tool", "Dot form.", spec_schema({"y": {"type": "string", "required": True}})),
        ]
    )
    # UTF-16 order: "my-tool" (0x2d) before "my.tool" (0x2e), so the dash form takes the bare base.
    assert "class MyToolArgs(TypedDict):\n    x: str\n" in text
    assert "class MyToolArgs2(TypedDict):\n    y: str\n" in text
    assert '# tools["my-tool"](args: MyToolArgs) -> str' in text
    assert '# tools["my.tool"](args: MyToolArgs2) -> str' in text


def test_caps_class_name_length_so_a_deep_single_field_chain_stays_linear() -> None:
    """caps class-name length so a deep single-field chain stays linear"""
    depth = 4000
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = closed_object({"inner": schema}, ["inner"])
    text = render([tool("deep", "Deep chain.", schema)])
    names = class_names(text)
    assert len(names) == depth
    assert len(set(names)) == depth
    assert max(map(len, names)) <= 140
    assert len(text) < depth * 400


def test_skips_an_already_taken_counter_suffix() -> None:
    """skips an already-taken counter suffix when a sibling object occupies it"""

    def obj(field: str) -> dict[str, Any]:
        return closed_object({field: {"type": "string"}})

    parameters = closed_object(
        {"phase": obj("a"), "phase2": obj("b"), "Phase": obj("c")}, ["phase", "phase2", "Phase"]
    )
    text = render([tool("foo", "Sibling objects with colliding class bases.", parameters)])
    assert "class FooArgsPhase(TypedDict):\n    a: NotRequired[str]\n" in text
    assert "class FooArgsPhase2(TypedDict):\n    b: NotRequired[str]\n" in text
    assert "class FooArgsPhase3(TypedDict):\n    c: NotRequired[str]\n" in text
    assert "    Phase: FooArgsPhase3\n" in text


def test_references_the_named_typeddict_from_a_reserved_subscript_tool() -> None:
    """references the named TypedDict from a reserved/subscript tool too"""
    text = render(
        [tool("class", "Reserved word tool.", spec_schema({"value": {"type": "string", "required": True}}))]
    )
    assert "class ClassArgs(TypedDict):" in text
    assert '    # tools["class"](args: ClassArgs) -> str\n    #   Reserved word tool.\n' in text


def test_degrades_an_object_when_a_field_name_is_not_a_legal_attribute() -> None:
    """degrades an object to dict[str, Any] when a field name is not a legal Python attribute"""
    for field in ("a-b", "class", "lambda", "1x", "", "a b"):
        parameters = {"type": "object", "properties": {field: {"type": "string"}, "ok": {"type": "string"}}}
        text = render([tool("weird_fields", "Has an illegal field name.", parameters)])
        assert "async def weird_fields(self, args: dict[str, Any]) -> str:" in text
        assert "WeirdFieldsArgs" not in text


def test_keeps_soft_keyword_field_names_as_typeddict_fields() -> None:
    """keeps soft-keyword field names as TypedDict fields (each is special in exactly one syntactic position)"""  # noqa: E501 (verbatim upstream title)
    parameters = closed_object(
        {
            "match": {"type": "string"},
            "case": {"type": "boolean"},
            "type": {"type": "string"},
            "_": STRING,
        },
        ["match"],
    )
    text = render(
        [tool("search", "Soft keywords as fields.", parameters), tool("match", "Soft-keyword tool.")]
    )
    assert "class SearchArgs(TypedDict):" in text
    assert "    match: str\n" in text
    assert "    case: NotRequired[bool]\n" in text
    assert "    type: NotRequired[str]\n" in text
    assert "    _: NotRequired[str]\n" in text
    assert "    async def match(self, args: dict[str, Any]) -> str:\n" in text


def test_keeps_a_non_ascii_field_name_and_derives_its_class_name_from_it() -> None:
    """keeps a non-ASCII field name as a TypedDict field and derives its class name from it"""
    parameters = closed_object(
        {
            "路径": {"type": "string"},
            "opts": closed_object({"深度": {"type": "number"}}),
        },
        ["路径"],
    )
    text = render([tool("搜索", "Unicode identifiers.", parameters)])
    assert "async def 搜索(self, args: 搜索Args) -> str:" in text
    assert "class 搜索Args(TypedDict):" in text
    assert "    路径: str\n" in text
    assert "class 搜索ArgsOpts(TypedDict):" in text
    assert "    深度: NotRequired[float]\n" in text
    assert "dict[str, Any]" not in text


def test_degrades_a_field_name_that_nfkc_normalizes_to_something_else() -> None:
    """degrades a field name that NFKC-normalizes to something else, which would be declared under another spelling"""  # noqa: E501 (verbatim upstream title)
    parameters = closed_object({"\ufb01eld": {"type": "string"}})
    text = render([tool("ligature", "Normalizing field name.", parameters)])
    assert "async def ligature(self, args: dict[str, Any]) -> str:" in text
    assert "\ufb01eld:" not in text
    assert "field:" not in text


def test_keeps_an_xid_continue_character_in_a_name_tail_while_rejecting_it_at_a_head() -> None:
    """keeps U+200C in a name tail while rejecting it at a name head, per the two XID properties

    Upstream's engine tables (Unicode >= 15.1) give U+200C XID_Continue; this port asks the running
    interpreter, whose tables compile the block. U+00B7 MIDDLE DOT has the same two properties in
    every Python, so it carries the behaviour; U+200C follows the interpreter's verdict.
    """

    def of(name: str, field: str) -> SdkTool:
        parameters = closed_object({field: {"type": "string"}})
        return tool(name, f"Tool {name}.", parameters)

    text = render([of("ping", "a\u00b7b"), of("\u00b7b", "a\u00b7b")])
    assert "async def ping(self, args: PingArgs) -> str:" in text
    assert "    a\u00b7b: NotRequired[str]\n" in text
    assert '# tools["\u00b7b"](args: Tool\u00b7bArgs) -> str' in text
    assert "class Tool\u00b7bArgs(TypedDict):" in text
    assert "async def \u00b7b" not in text

    zwnj = render([of("ping", "a\u200cb"), of("\u200cb", "a\u200cb")])
    if "a\u200cb".isidentifier():  # Unicode >= 15.1 tables: upstream's output exactly
        assert "    a\u200cb: NotRequired[str]\n" in zwnj
        assert '# tools["\u200cb"](args: Tool\u200cbArgs) -> str' in zwnj
    else:  # older tables: not XID_Continue anywhere, so it splits words and degrades the field
        assert "async def ping(self, args: dict[str, Any]) -> str:" in zwnj
        assert '# tools["\u200cb"](args: dict[str, Any]) -> str' in zwnj
        assert camel_case("\u200cb") == "B"
    assert "async def \u200cb" not in zwnj


def test_subscripts_a_tool_name_that_nfkc_normalizes_while_declaring_a_plain_unicode_one() -> None:
    """subscripts a tool name that NFKC-normalizes to something else, while declaring a plain Unicode one"""

    def of(name: str) -> SdkTool:
        parameters = closed_object({"q": STRING}, ["q"])
        return tool(name, f"Tool {name}.", parameters)

    text = render([of("路径"), of("\ufb01nd")])
    assert "async def 路径(self, args: 路径Args) -> str:" in text
    assert '# tools["\ufb01nd"](args: FIndArgs) -> str' in text
    assert "class FIndArgs(TypedDict):" in text
    assert "async def \ufb01nd" not in text
    assert "async def find" not in text


def test_derives_a_class_name_through_the_case_mapping_table() -> None:
    """derives a class name through the case-mapping table, independently of the bare-name predicate

    Upstream pins U+019B → U+A7DC (a Unicode 16.0 mapping); here the running interpreter's table
    decides, and ß (full mapping to "SS" in every version) pins that the mapping is applied at all.
    """

    def of(name: str) -> SdkTool:
        parameters = closed_object({"q": STRING}, ["q"])
        return tool(name, "Case-mapped head.", parameters)

    text = render([of("\u00df"), of("\u019b")])
    assert "async def \u00df(self, args: SSArgs) -> str:" in text
    assert "class SSArgs(TypedDict):" in text
    head = "\u019b".upper()
    assert f"async def \u019b(self, args: {head}Args) -> str:" in text
    assert f"class {head}Args(TypedDict):" in text
    # An astral head is half a UTF-16 pair to JavaScript's charAt(0): it is not upper-cased.
    assert camel_case("\U00010428x") == "\U00010428x"


def test_drops_a_surrogate_half_rather_than_cutting_a_pair_when_capping() -> None:
    """drops a surrogate half rather than cutting a pair when capping an astral class-name base"""
    ahsa = "\U00010330"

    def class_name(pad: str) -> str:
        parameters = closed_object({"a": STRING})
        (name,) = class_names(render([tool(pad + ahsa * 200, "Astral name.", parameters)]))
        return name

    assert class_name("") == ahsa * 60
    padded = class_name("x")
    assert padded == "X" + ahsa * 59
    assert utf16_len(padded) == 119
    assert cap_class_name_base("a" * 119 + ahsa) == "a" * 119
    assert cap_class_name_base("a" * 118 + ahsa + "b") == "a" * 118 + ahsa


def test_normalizes_the_seam_the_tool_prefix_creates() -> None:
    """normalizes the seam the Tool prefix creates, which the prefixed part alone does not cover"""
    parameters = closed_object({"q": STRING}, ["q"])
    text = render([tool("\u0301abc", "Combining-mark head.", parameters)])
    assert "class Too\u013aabcArgs(TypedDict):" in text
    assert '# tools["\u0301abc"](args: Too\u013aabcArgs) -> str' in text
    assert "Tool\u0301" not in text


def test_normalizes_a_class_name_join_where_two_stable_segments_compose() -> None:
    """normalizes a class-name join where two separately stable segments compose"""
    parameters = closed_object(
        {"\uac00\u1100": closed_object({"\u1161x": closed_object({"q": STRING})}, ["\u1161x"])},
        ["\uac00\u1100"],
    )
    text = render([tool("x", "Jamo field names.", parameters)])
    assert "class XArgs\uac00\uac00x(TypedDict):" in text
    assert "    \u1161x: XArgs\uac00\uac00x\n" in text
    assert "\u1100\u1161" not in text
    assert "class XArgs\uac00\u1100(TypedDict):" in text


def test_routes_a_fold_collision_through_the_counter() -> None:
    """routes a fold collision through the counter that raw-byte dedup would miss"""
    leaf = closed_object({"q": STRING}, ["q"])
    parameters = closed_object(
        {
            "\uac00": leaf,
            "\u1100": closed_object({"\u1161": leaf}, ["\u1161"]),
        },
        ["\uac00", "\u1100"],
    )
    text = render([tool("x", "Colliding jamo joins.", parameters)])
    assert "class XArgs\uac00(TypedDict):" in text
    assert "class XArgs\uac002(TypedDict):" in text
    assert "    \u1161: XArgs\uac002\n" in text


def test_declares_a_closed_empty_object_with_omitted_properties_as_an_empty_typeddict() -> None:
    """declares a closed empty object with omitted properties as an empty TypedDict, not dict[str, Any]"""
    parameters = closed_object({"inner": {"type": "object", "additionalProperties": False}}, ["inner"])
    text = render([tool("closed", "Closed empty object with omitted properties.", parameters)])
    assert "class ClosedArgsInner(TypedDict):\n    pass\n\n" in text
    assert "    inner: ClosedArgsInner\n" in text
    assert "dict[str, Any]" not in text


def test_marks_an_open_object_typeddict_and_declares_a_closed_empty_object() -> None:
    """marks an open object TypedDict and declares a closed empty object"""
    parameters = closed_object(
        {
            "open": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"x": STRING},
                "required": ["x"],
            },
            "closedEmpty": closed_object({}),
        },
        ["open", "closedEmpty"],
    )
    text = render([tool("openness", "", parameters)])
    assert (
        "class OpennessArgsOpen(TypedDict):\n    x: str\n"
        "    # Additional keys beyond those declared are allowed.\n\n" in text
    )
    assert (
        "class OpennessArgs(TypedDict):\n    open: OpennessArgsOpen\n"
        "    closedEmpty: OpennessArgsClosedEmpty\n\n" in text
    )
    assert "class OpennessArgsClosedEmpty(TypedDict):\n    pass\n\n" in text


def test_renders_docstrings_and_orders_emissions_lexicographically() -> None:
    """renders docstrings for descriptions and orders emissions lexicographically"""
    text = render([EXOTIC_STRING_OUTPUT, BASH_STRING_OUTPUT])
    assert '"""Run a shell command."""' in text
    assert '    # tools["my-mcp.tool"](args: dict[str, Any]) -> str\n    #   Exotic name.\n' in text
    assert text.index("async def bash") < text.index('# tools["my-mcp.tool"]')


def test_sorts_tool_names_by_utf16_code_units() -> None:
    # U+10330 is D800 DF30 in UTF-16, below U+FF41; by code point it would sort after it.
    text = render([tool("a\uff41"), tool("a\U00010330"), tool("Z"), tool("_z")])
    order = [
        text.index(needle) for needle in ("async def Z(", '["_z"]', "async def a\U00010330(", '["a\uff41"]')
    ]
    assert order == sorted(order)


def test_places_a_docstring_as_the_first_statement_of_its_own_method_body() -> None:
    """places a docstring as the first statement of its own method body"""
    lines = render([BASH, tool("zzz", "Second by name.")]).split("\n")
    for name, doc in (("bash", "Run a shell command."), ("zzz", "Second by name.")):
        signature = next(i for i, line in enumerate(lines) if line.startswith(f"    async def {name}("))
        assert lines[signature].endswith(":")
        assert lines[signature + 1] == f'        """{doc}"""'
    assert [line for line in lines if line.startswith('    """')] == []


def test_orders_subscript_entries_against_methods_by_name() -> None:
    """orders subscript entries against methods by name, not by member kind"""
    text = render([tool("z", "Last by name."), tool("a-tool", "First by name.")])
    assert text.index('# tools["a-tool"]') < text.index("async def z")
    assert "    pass" not in text


def test_is_deterministic_regardless_of_input_order_or_duplication() -> None:
    """is deterministic: byte-identical output regardless of input order or duplication"""
    assert render([BASH, EXOTIC]) == render([EXOTIC, BASH])
    assert render([BASH, BASH, EXOTIC, BASH]) == render([BASH, EXOTIC])
    assert render([copy.deepcopy(BASH), BASH]) == render([BASH])
    assert render(iter([EXOTIC, BASH])) == render([BASH, EXOTIC])  # type: ignore[arg-type]


def test_two_different_tools_sharing_a_name_render_once_whatever_the_order() -> None:
    first = tool("dup", "First.", spec_schema({"a": {"type": "string", "required": True}}))
    second = tool("dup", "Second.", spec_schema({"b": {"type": "string", "required": True}}))
    text = render([first, second])
    assert text == render([second, first])
    assert text.count("async def dup(") == 1


def test_never_lists_run_code_itself() -> None:
    assert render([tool("run_code", "Execute a program."), BASH]) == render([BASH])


def test_omits_the_docstring_or_comment_when_a_schema_has_no_description() -> None:
    """omits the docstring/comment when a schema has no description"""
    text = render([tool("plain", ""), tool("weird-name", "")])
    assert "    async def plain(self, args: dict[str, Any]) -> str: ...\n" in text
    assert '"""' not in code_of(text)
    assert '# tools["weird-name"]' in text
    assert all(not line.startswith("    #   ") for line in text.split("\n"))
    blank = render([tool("plain", " \t\n "), tool("weird-name", "   ")])
    assert blank == text
    assert render([SdkTool("plain", None, NO_ARGS, STRING), tool("weird-name")]) == text  # type: ignore[arg-type]


def test_names_the_class_for_a_tool_whose_name_exceeds_the_base_length_limit() -> None:
    """caps the class name for a tool whose name exceeds the base length limit"""
    parameters = closed_object({"f": STRING}, ["f"])
    text = render([tool("x_" + "a" * 200, "Long name.", parameters)])
    (name,) = class_names(text)
    assert name == "XA" + "a" * 118
    assert f"async def x_{'a' * 200}(self, args: {name}) -> str:" in text


def test_names_a_deep_one_of_of_object_chain_in_linear_time() -> None:
    """names a deep oneOf-of-object chain in linear time (bounded propagated class names)"""

    def chain(depth: int) -> SdkTool:
        deep: dict[str, Any] = closed_object({})
        for _ in range(depth):
            deep = {"oneOf": [deep, closed_object({})]}
        parameters = closed_object({"root": deep}, ["root"])
        return tool("deep", "Deep oneOf-object chain.", parameters)

    # A per-level rescan of the collision counter (or uncapped names) would be quadratic here.
    # compiles=False: a 60,001-branch union overflows compile()'s C stack (upstream accepts that).
    text = within(30, lambda: render([chain(60_000)], compiles=False))
    names = class_names(text)
    assert len(names) == 60_001 + 1
    assert len(set(names)) == len(names)
    assert max(map(len, names)) <= 140
    assert "class Tools(Protocol):" in text
    shallow = class_names(render([chain(3)]))
    assert shallow == ["DeepArgsRoot111", "DeepArgsRoot112", "DeepArgsRoot12", "DeepArgsRoot2", "DeepArgs"]


def test_emits_pass_for_a_subscript_only_tool_set() -> None:
    """emits pass for a subscript-only tool set (comments are not statements)"""
    text = render([tool("my-exotic.tool", "")])
    assert (
        "class Tools(Protocol):\n    pass\n"
        '    # tools["my-exotic.tool"](args: dict[str, Any]) -> str\n\ntools: Tools' in text
    )


def test_degrades_an_object_whose_field_would_be_name_mangled() -> None:
    """degrades an object whose field would be name-mangled (__token) to dict[str, Any]"""

    def one_field(name: str, field: str) -> SdkTool:
        parameters = closed_object({field: STRING}, [field])
        return tool(name, "", parameters)

    text = render([one_field("mangler", "__token")])
    assert "async def mangler(self, args: dict[str, Any]) -> str: ..." in text
    assert "__token:" not in text
    assert "    __meta__: str\n" in render([one_field("dunder", "__meta__")])


def test_degrades_an_object_with_a_debug_field() -> None:
    """degrades an object with a __debug__ field, which CPython refuses to assign"""
    parameters = closed_object({"__debug__": STRING}, ["__debug__"])
    text = render([tool("debugger", "", parameters)])
    assert "async def debugger(self, args: dict[str, Any]) -> str: ..." in text
    assert "__debug__" not in text


def test_routes_every_underscore_leading_tool_name_to_subscript_access() -> None:
    """routes every underscore-leading tool name to subscript access"""
    text = render(
        [tool(name, "Leading underscore.") for name in ("_foo", "__meta__", "__token", "__debug__", "_")]
    )
    for name in ("_foo", "__meta__", "__token", "__debug__", "_"):
        assert f'# tools["{name}"](args: dict[str, Any]) -> str\n    #   Leading underscore.' in text
        assert f"async def {name}(" not in text
    assert "    pass\n" in text


def test_quotes_a_tool_name_through_json_stringify() -> None:
    """quotes a tool name through the same JSON.stringify the Literal path depends on"""
    text = render([tool("a\ud800b", "Lone surrogate in the name."), tool('q"\\\n\x00\x7f\u2028')])
    assert r'# tools["a\ud800b"](args: dict[str, Any]) -> str' in text
    assert "\ud800" not in text
    assert '# tools["q\\"\\\\\\n\\u0000\x7f\u2028"](args: dict[str, Any]) -> str' in text


def test_escapes_quotes_and_backslashes_in_descriptions() -> None:
    """escapes quotes and backslashes in descriptions so the docstring stays valid Python"""
    assert r'"""ends in a quote\""""' in render([described('ends in a quote"')])
    assert r'"""ends in a backslash\\"""' in render([described("ends in a backslash\\")])
    assert r'"""contains \"\"\" triple quote"""' in render([described('contains """ triple quote')])
    # Comments carry the text verbatim: nothing there can end early.
    assert '    # contains """ triple quote\n' in render([described('contains """ triple quote')])


def test_escapes_unprintable_control_characters() -> None:
    """escapes unprintable control characters, which CPython refuses inside source at all"""
    nul = render([described("before\x00after")])
    assert "\x00" not in nul
    assert r'"""before\\x00after"""' in nul
    assert r"    # before\x00after" in nul
    assert r"bell\x07esc\x1bdel\x7f" in render([described("bell\x07esc\x1bdel\x7f")])
    assert '"""tab newline cr vt ff"""' in render([described("tab\tnewline\ncr\r vt\x0b ff\x0c")])
    nel = render([described("a\x85b")])
    assert "\x85" not in nel
    assert r"# a\x85b" in nel
    assert r"csi\x9bst\x9cend\x9f" in render([described("csi\x9bst\x9cend\x9f")])
    # JavaScript's \s is not Python's: the file/group/record/unit separators are escaped, not folded.
    assert r"# fs\x1cgs\x1d" in render([described("fs\x1cgs\x1d")])
    assert '"""nb sp ls ps ideographic bom"""' in render(
        [described("nb\xa0sp ls\u2028ps\u2029ideographic\u3000bom\ufeff")]
    )
    assert '"""zero\u200bwidth"""' in render([described("zero\u200bwidth")])
    assert r"# \x85" in render([described(" \x85 ")])


def test_escapes_unpaired_surrogates() -> None:
    """escapes unpaired surrogates, which make the source impossible to encode"""
    high = render([described("a\ud800b")])
    assert "\ud800" not in high
    assert r"# a\ud800b" in high
    assert r'"""a\\ud800b"""' in high
    assert r"# a\udfffb" in render([described("a\udfffb")])
    assert '"""emoji \U0001f600 ok"""' in render([described("emoji \U0001f600 ok")])
    # A pair held as two Python code points is the same astral character to JavaScript.
    assert '"""emoji \U0001f600 ok"""' in render([described("emoji \ud83d\ude00 ok")])


def test_describe_collapses_and_reports_blank_as_absent() -> None:
    assert describe("  a \n\t b  ") == "a b"
    assert describe(" \u2028 ") is None
    assert describe(7) is None
    assert well_formed("\ud83d\ude00\ud800") == "\U0001f600\ud800"


# --- totality, state isolation and determinism under generated input ------------------------------


class _Flaky(dict[str, Any]):
    """A schema node that reads as ``first`` on its first read (validation) and ``later`` after."""

    def __init__(self, first: dict[str, Any], later: dict[str, Any]) -> None:
        super().__init__(first)
        self.reads = 0
        self.first = first
        self.later = later

    def _current(self) -> dict[str, Any]:
        return self.first if self.reads <= 1 else self.later

    def items(self) -> Any:
        self.reads += 1
        return self._current().items()

    def __getitem__(self, key: str) -> Any:
        return self._current()[key]


def test_a_schema_that_changes_under_the_walk_degrades_to_any_and_rolls_back_its_classes() -> None:
    flaky = _Flaky({"type": "string"}, {"type": "object", "properties": 7})
    first = closed_object({"k": {"type": "string", "const": "k"}})
    parameters = closed_object({"first": first, "nested": {"type": "object", "properties": {"bad": flaky}}})
    obj = closed_object({"v": STRING}, ["v"])
    text = render([tool("x", "", parameters, obj), tool("x_", "", obj)])
    assert "async def x(self, args: Any) -> XOutput: ..." in text
    # XArgs, XArgsFirst and XArgsNested were rolled back: `x_` (also base "X") gets the bare XArgs.
    assert class_names(text) == ["XOutput", "XArgs"]
    assert "async def x_(self, args: XArgs) -> str: ..." in text
    assert "from typing import Any, Protocol, TypedDict\n" in text  # no Literal, no NotRequired


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
)
KEYWORDS = st.sampled_from(SCHEMA_KEYWORDS)
TYPE_NAMES = st.sampled_from(["object", "array", "string", "number", "integer", "boolean", "null", "json"])
HOSTILE = st.one_of(st.just(object()), st.just({1, 2}), st.just(b"bytes"), st.just(_Unreadable()))

ANY_SCHEMA = st.recursive(
    st.one_of(JSON_SCALARS, TYPE_NAMES, HOSTILE),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.one_of(KEYWORDS, st.text(max_size=4)), children, max_size=4),
        st.dictionaries(KEYWORDS, st.one_of(children, TYPE_NAMES), max_size=5),
    ),
    max_leaves=25,
)

NAME = st.one_of(
    st.sampled_from(
        [
            "bash",
            "read_file",
            "class",
            "_x",
            "my-tool",
            "my.tool",
            "搜索",
            "\ufb01nd",
            "1st",
            "run",
            "a\ud800",
        ]
    ),
    st.text(min_size=1, max_size=8),
)
FIELD = st.one_of(
    st.sampled_from(["path", "a-b", "match", "__x", "路径", "Phase", "phase", "\u1100"]), st.text(max_size=5)
)
SCALAR_SCHEMA = st.one_of(
    st.sampled_from([{"type": t} for t in ("string", "number", "integer", "boolean", "null")]),
    st.builds(
        lambda values: {"type": "string", "enum": values},
        st.lists(st.text(max_size=4), min_size=1, max_size=3),
    ),
    st.builds(lambda v: {"type": "integer", "const": v}, st.integers(-(2**53), 2**53)),
    st.builds(
        lambda v: {"type": "number", "const": v},
        st.floats(allow_nan=False, allow_infinity=False).filter(bool),
    ),
)
VALID_SCHEMA = st.recursive(
    SCALAR_SCHEMA,
    lambda children: st.one_of(
        st.builds(lambda items: {"type": "array", "items": items}, children),
        st.builds(lambda branches: {"oneOf": branches}, st.lists(children, min_size=2, max_size=3)),
        st.builds(
            lambda props, closed, mask: {
                "type": "object",
                "properties": props,
                "additionalProperties": not closed,
                "required": [key for key, keep in zip(props, mask, strict=False) if keep],
            },
            st.dictionaries(FIELD, children, max_size=3),
            st.booleans(),
            st.lists(st.booleans(), min_size=3, max_size=3),
        ),
        st.builds(lambda d: {"description": d}, st.text(max_size=5)),
    ),
    max_leaves=12,
)
TOOL = st.builds(
    lambda name, description, parameters, output: SdkTool(name, description, parameters, output),
    NAME,
    st.text(max_size=10),
    st.one_of(VALID_SCHEMA, ANY_SCHEMA),
    st.one_of(VALID_SCHEMA, ANY_SCHEMA),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_SCHEMA)
def test_json_schema_to_py_is_total_over_arbitrary_values(schema: object) -> None:
    annotation = json_schema_to_py(schema)
    assert isinstance(annotation, str) and annotation
    compile(f"from typing import Any, Literal\nx: {annotation}\n", "<annotation>", "exec", dont_inherit=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOOL, max_size=6), st.randoms(use_true_random=False))
def test_rendering_is_total_valid_and_independent_of_order_and_duplicates(
    tools: list[SdkTool], rng: random.Random
) -> None:
    unique = list({t.name: t for t in tools}.values())
    text = render(unique)  # total, and the block always compiles
    shuffled = unique + [rng.choice(unique) for _ in range(len(unique) // 2)] if unique else []
    rng.shuffle(shuffled)
    assert render_tools_sdk_py(shuffled) == text


@settings(max_examples=100, deadline=None)
@given(VALID_SCHEMA)
def test_a_cycle_anywhere_in_a_valid_schema_degrades_only_that_tool(schema: dict[str, Any]) -> None:
    cyclic: dict[str, Any] = {"type": "object", "properties": {"inner": schema}}
    cyclic["properties"]["self"] = cyclic
    text = render([tool("cyc", "", cyclic), BASH])
    assert "async def cyc(self, args: Any) -> str: ..." in text
    assert "class BashArgs(TypedDict):" in text


def test_a_schema_valued_additional_properties_renders_as_a_typed_dict_hint() -> None:
    nested = {
        "type": "object",
        "additionalProperties": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "null"}]},
            },
        },
    }
    assert json_schema_to_py(nested) == "dict[str, list[dict[str, str | None]]]"
    assert (
        json_schema_to_py({"type": "object", "additionalProperties": {"type": "integer"}}) == "dict[str, int]"
    )


# --- toolrt's additions: what a tool returns, its group, its constraints ------------------------
# Absent from a tool set without them (the byte-identical upstream examples above still hold).

CLOSED_EMPTY: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
CD_RETURNS = "current_working_directory (str): The new current working directory path."


def returning(name: str, description: str, returns: str, output: Any = None, **options: Any) -> SdkTool:
    schema = dict(STRING if output is None else output)
    schema["description"] = returns
    return SdkTool(name, description, CLOSED_EMPTY, schema, **options)


def test_a_prose_returns_description_is_a_comment_on_the_return_after_the_docstring() -> None:
    code = code_of(render([returning("read", "Read a file.", "The file's text,\n  decoded.")]))
    assert (
        "    async def read(self, args: ReadArgs) -> str:\n"
        '        """Read a file."""\n'
        "        # Returns: The file's text, decoded.\n"
    ) in code
    namespace: dict[str, Any] = {}
    exec(compile(code, "<sdk>", "exec", dont_inherit=True), namespace)
    # The docstring stays the tool's description; the return note is a comment, not part of it.
    assert namespace["Tools"].read.__doc__ == "Read a file."
    assert typing.get_type_hints(namespace["Tools"].read)["return"] is str


def test_a_returns_description_naming_keys_lists_one_key_per_line() -> None:
    output = {"type": "object", "additionalProperties": {"type": "string"}}
    text = render(
        [returning("cd", "Change directory.", CD_RETURNS + " previous (str): Where it was.", output)]
    )
    assert (
        "    async def cd(self, args: CdArgs) -> dict[str, str]:\n"
        '        """Change directory."""\n'
        "        # Returns:\n"
        "        #   current_working_directory (str): The new current working directory path.\n"
        "        #   previous (str): Where it was.\n"
    ) in text


def test_a_returns_note_without_a_description_still_leaves_a_method_body() -> None:
    code = code_of(render([returning("now", "", "The time.")]))
    assert (
        "    async def now(self, args: NowArgs) -> str:\n        # Returns: The time.\n        ...\n" in code
    )
    namespace: dict[str, Any] = {}
    exec(compile(code, "<sdk>", "exec", dont_inherit=True), namespace)
    assert inspect.iscoroutinefunction(namespace["Tools"].now)


def test_a_subscript_tool_carries_its_returns_note_in_its_comment() -> None:
    text = render([returning("my-tool", "Exotic.", CD_RETURNS + " previous (str): Where it was.")])
    assert (
        '    # tools["my-tool"](args: MyToolArgs) -> str\n'
        "    #   Exotic.\n"
        "    #   Returns:\n"
        "    #     current_working_directory (str): The new current working directory path.\n"
        "    #     previous (str): Where it was.\n"
    ) in text
    single = render([returning("my-tool", "", CD_RETURNS)])
    assert f'    # tools["my-tool"](args: MyToolArgs) -> str\n    #   Returns: {CD_RETURNS}\n' in single


def test_a_hostile_returns_description_cannot_break_the_block() -> None:
    text = render([returning("x", "", 'a\n"""\x00\ud800 */ b (str): c\r\nd')])
    assert '        # Returns: a """\\x00\\ud800 */ b (str): c d\n' in text


FS_GROUP = ToolGroup("GorillaFileSystem", "A file system with a current directory.")
MATH_GROUP = ToolGroup("MathAPI", "Arithmetic\n  helpers.")


def test_grouped_tools_follow_the_ungrouped_ones_under_one_header_per_group() -> None:
    tools = [
        tool("cd", "Change directory.", output=STRING),
        tool("ls", "List."),
        tool("add", "Add."),
        tool("zeta", "Ungrouped."),
        tool("alpha", "Ungrouped too."),
        tool("my-rm", "Exotic, grouped."),
    ]
    groups = {"cd": FS_GROUP, "ls": FS_GROUP, "my-rm": FS_GROUP, "add": MATH_GROUP}
    grouped = [SdkTool(t.name, t.description, CLOSED_EMPTY, t.output, groups.get(t.name)) for t in tools]
    code = code_of(render(grouped))
    body = code[code.index("class Tools(Protocol):\n") :]
    order = re.findall(r'^    (?:async def (\w+)|# tools\["([^"]+)"\]|# Group (\w+))', body, re.MULTILINE)
    assert [next(part for part in entry if part) for entry in order] == [
        "alpha",
        "zeta",
        "GorillaFileSystem",
        "cd",
        "ls",
        "my-rm",
        "MathAPI",
        "add",
    ]
    # Each group's description is said exactly once, not per tool.
    assert code.count("A file system with a current directory.") == 1
    assert (
        "\n\n    # Group GorillaFileSystem: A file system with a current directory.\n    async def cd" in code
    )
    assert "\n\n    # Group MathAPI: Arithmetic helpers.\n    async def add" in code
    # Classes follow the member order, so a group's classes are together too.
    assert class_names(code) == ["AlphaArgs", "ZetaArgs", "CdArgs", "LsArgs", "MyRmArgs", "AddArgs"]


def test_a_group_without_description_and_a_subscript_only_group_still_compile() -> None:
    only = [SdkTool("my-tool", "", NO_ARGS, STRING, ToolGroup("Bare"))]
    code = code_of(render(only))
    assert "class Tools(Protocol):\n    pass\n    # Group Bare\n    # tools[" in code


NAMED_GROUPS = st.sampled_from([None, FS_GROUP, MATH_GROUP, ToolGroup("fs\n", "x\x00y")])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.builds(
            lambda name, description, output, group: SdkTool(name, description, NO_ARGS, output, group),
            NAME,
            st.text(max_size=10),
            st.one_of(VALID_SCHEMA, ANY_SCHEMA),
            NAMED_GROUPS,
        ),
        max_size=6,
    ),
    st.randoms(use_true_random=False),
)
def test_grouped_rendering_is_total_valid_and_independent_of_order(
    tools: list[SdkTool], rng: random.Random
) -> None:
    unique = list({t.name: t for t in tools}.values())
    text = render(unique)
    rng.shuffle(unique)
    assert render_tools_sdk_py(unique) == text
    for group in {t.group for t in unique if t.group is not None}:
        assert text.count(f"    # Group {describe(group.name)}") == 1


@pytest.mark.xfail(not SUBSET_HAS_BOUNDS, strict=True, reason="the subset does not accept bound keywords yet")
@pytest.mark.parametrize(
    ("field", "line"),
    [
        ({"type": "integer", "minimum": 1}, "    qty: int  # >= 1"),
        ({"type": "number", "exclusiveMinimum": 0, "maximum": 2.5}, "    qty: float  # > 0, <= 2.5"),
        ({"type": "integer", "exclusiveMaximum": 10, "multipleOf": 5}, "    qty: int  # < 10, multiple of 5"),
        ({"type": "string", "minLength": 1, "maxLength": 20}, "    qty: str  # len >= 1, len <= 20"),
        ({"type": "string", "format": "date-time"}, "    qty: str  # format date-time"),
        (
            {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "uniqueItems": True},
            "    qty: list[int]  # len >= 1, unique items, items >= 0",
        ),
        (
            {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "    qty: int | None  # >= 1",
        ),
    ],
)
def test_constraints_ride_on_their_field_s_line(field: dict[str, Any], line: str) -> None:
    code = code_of(render([tool("order", "", bounded(field))]))
    assert line + "\n" in code


@pytest.mark.xfail(not SUBSET_HAS_BOUNDS, strict=True, reason="the subset does not accept bound keywords yet")
def test_an_optional_constrained_field_keeps_not_required_and_the_note() -> None:
    schema = {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}}
    assert "    qty: NotRequired[int]  # >= 1\n" in code_of(render([tool("order", "", schema)]))


@pytest.mark.xfail(
    bool(json_schema_violations({"type": "string", "pattern": "^a$"})),
    strict=True,
    reason="pattern is outside the subset (its regex dialects disagree): the renderer degrades the tool",
)
def test_a_pattern_is_refused_by_the_subset_so_the_sdk_never_shows_it_end_to_end() -> None:
    code = code_of(render([tool("order", "", bounded({"type": "string", "pattern": "^a+$"}))]))
    assert 'qty: str  # pattern "^a+$"' in code


def test_constraint_notes_of_a_hand_written_node_cover_every_keyword() -> None:
    node = {
        "type": "string",
        "minimum": 1,
        "exclusiveMinimum": 0.5,
        "maximum": 2**60,
        "exclusiveMaximum": 1e21,
        "multipleOf": 0.25,
        "minLength": 1,
        "maxLength": 3,
        "pattern": "^a\n\u2028b$",
        "format": "odd format",
    }
    assert constraint_notes(node) == [
        ">= 1",
        "> 0.5",
        f"<= {2**60}",
        "< 1e+21",
        "multiple of 0.25",
        "len >= 1",
        "len <= 3",
        'pattern "^a\\n\\u2028b$"',
        'format "odd format"',
    ]
    # Unusable values are no note, never an exception.
    assert constraint_notes({"minimum": True, "maximum": float("nan"), "pattern": 3}) == []
    assert constraint_notes(None) == [] and constraint_notes({1: 2}) == []


def test_a_pattern_note_cannot_break_the_python_comment() -> None:
    # The renderer's own comment escaping, applied to what the notes say about a hostile pattern.
    rendered = describe(", ".join(constraint_notes({"type": "string", "pattern": "a\r\nb\x00\ud800"})))
    assert rendered == 'pattern "a\\r\\nb\\u0000\\ud800"'
    compile(f"x: str  # {rendered}\n", "<note>", "exec", dont_inherit=True)


class Files:
    """A file system with a current directory.

    Second paragraph: not part of the group's description.
    """

    def cd(self, folder: str) -> dict[str, str]:
        """Change the current working directory.

        Args:
            folder: The folder to change to.

        Returns:
            current_working_directory (str): The new current working directory path.
        """
        return {"current_working_directory": folder}

    def pwd(self) -> str:
        """Print the current directory.

        Returns:
            The path.
        """
        return "/"


def test_register_methods_reaches_the_python_sdk_with_its_group_once_and_its_return_keys() -> None:
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime("python"))
    runtime.register_methods(Files())
    code = code_of(render_sdk(runtime, None))
    assert (
        "    # Group Files: A file system with a current directory.\n"
        "    async def cd(self, args: CdArgs) -> dict[str, str]:\n"
        '        """Change the current working directory."""\n'
        "        # Returns: current_working_directory (str): The new current working directory path.\n"
        "    async def pwd(self, args: PwdArgs) -> str:\n"
        '        """Print the current directory."""\n'
        "        # Returns: The path.\n"
    ) in code
    assert code.count("A file system with a current directory.") == 1
    compile(code, "<sdk>", "exec", dont_inherit=True)
