"""``define_tool`` (contract §2.17 S-DSL2, S-DSL5, S-DSL6; upstream ``tools.spec.ts`` describes
``defineTool / schema DSL`` (runtime parts), ``defineTool validation`` and ``defineTool presentation``).

Type-level titles (``InferArgs`` …) have no Python runtime counterpart and are not ported.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from helpers import READ_PARAMETERS, READ_SCHEMA, string_tool, text
from toolrt import (
    JsonSchemaError,
    ToolArgsError,
    ToolDefinition,
    ToolFailure,
    ToolOutput,
    ToolrtError,
    ToolRuntime,
    ToolSuccess,
    define_tool,
)
from toolrt.lowlevel import ToolErrorInfo


def read_tool(body: Any = None, **extra: Any) -> ToolDefinition:
    async def execute(args: Any, ctx: Any) -> str:
        return f"read {args['path']}"

    return define_tool(
        name="read_file",
        description="Read a file from disk.",
        parameters=READ_PARAMETERS,
        output={"schema": {"type": "string"}},
        execute=execute if body is None else body,
        **extra,
    )


# --- defineTool / schema DSL (runtime parts) -----------------------------------------------------


def test_converts_parameter_schema_spec_to_standard_json_schema_with_required_array() -> None:
    """converts ParameterSchemaSpec to standard JSON Schema with required array (S-DSL2 example)."""
    assert read_tool().parameters == READ_SCHEMA
    assert "additionalProperties" not in read_tool().parameters  # the parameter root is open


def test_handles_an_empty_spec() -> None:
    """handles empty spec (no properties, no required)."""
    definition = define_tool(
        name="nothing",
        description="",
        parameters={},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: "",
    )
    assert definition.parameters == {"type": "object", "properties": {}}


def test_handles_a_nested_object_spec() -> None:
    """handles nested object spec (explicit objects must declare additionalProperties)."""
    definition = define_tool(
        name="nested",
        description="",
        parameters={
            "config": {
                "type": "object",
                "additionalProperties": False,
                "required": True,
                "properties": {
                    "host": {"type": "string", "required": True},
                    "port": {"type": "integer"},
                },
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        output={"schema": {"type": "json"}},
        execute=lambda args, ctx: None,
    )
    assert definition.parameters == {
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"host": {"type": "string"}, "port": {"type": "integer"}},
                "required": ["host"],
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["config"],
    }
    assert definition.output.schema == {}  # {type: 'json'} compiles to the annotation-only node


async def test_define_tool_returns_a_valid_tool_definition_with_typed_execute() -> None:
    """defineTool returns a valid ToolDefinition with typed execute."""
    received: list[Any] = []

    async def execute(args: Any, ctx: Any) -> str:
        received.append(args)
        return f"read {args['path']}"

    definition = read_tool(execute)

    assert isinstance(definition, ToolDefinition)
    assert isinstance(definition.output, ToolOutput)
    assert definition.name == "read_file"
    assert definition.description == "Read a file from disk."
    assert definition.output.schema == {"type": "string"}
    runtime = ToolRuntime()
    runtime.register(definition)
    result = await runtime.call("read_file", {"path": "/a", "limit": 3})
    assert isinstance(result, ToolSuccess)
    assert result.value == "read /a"
    assert received == [{"path": "/a", "limit": 3}]


async def test_registry_round_trips_a_define_tool_definition() -> None:
    """registry round-trips a defineTool definition (register→schemas→execute)."""
    runtime = ToolRuntime()
    runtime.register(read_tool())

    assert runtime.schemas() == [
        {
            "name": "read_file",
            "description": "Read a file from disk.",
            "parameters": READ_SCHEMA,
        }
    ]
    result = await runtime.call("read_file", {"path": "/etc/hosts"}, call_id="c1")
    assert result == ToolSuccess(value="read /etc/hosts", content=text("read /etc/hosts"))


async def test_still_accepts_a_raw_json_schema_tool_definition_directly() -> None:
    """still accepts raw JSON-Schema ToolDefinition directly (MCP interop)."""

    async def execute(args: Any, ctx: Any) -> str:
        return "raw ok"

    raw = ToolDefinition(
        name="mcp_tool",
        description="bridged",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        output=ToolOutput(schema={"type": "string"}),
        execute=execute,
    )
    runtime = ToolRuntime()
    runtime.register(raw)

    assert runtime.schemas()[0]["parameters"] == raw.parameters
    assert (await runtime.call("mcp_tool", {"q": "x"})).value == "raw ok"


def test_author_errors_raise_at_definition_time() -> None:
    """S-DSL5: parameters and output.schema are compiled when the tool is defined."""
    with pytest.raises(JsonSchemaError) as raised:
        define_tool(
            name="bad",
            description="",
            parameters={"x": {"type": "object"}},
            output={"schema": {"type": "string"}},
            execute=lambda args, ctx: "",
        )
    assert str(raised.value) == (
        "unsupported JSON schema: parameters.x.additionalProperties must be explicitly true or false"
    )
    with pytest.raises(JsonSchemaError) as raised:
        define_tool(
            name="bad",
            description="",
            parameters={},
            output={"schema": {"type": "object"}},
            execute=lambda args, ctx: "",
        )
    assert str(raised.value) == (
        "unsupported JSON schema: schema.additionalProperties must be explicitly true or false"
    )


# --- defineTool validation -------------------------------------------------------------------------


async def test_returns_an_is_error_result_with_the_violations_when_the_model_sends_bad_args() -> None:
    """returns an isError result with the violations when the model sends bad args."""
    calls: list[Any] = []

    async def execute(args: Any, ctx: Any) -> str:
        calls.append(args)
        return "ran"

    runtime = ToolRuntime()
    runtime.register(read_tool(execute))

    result = await runtime.call("read_file", {})
    assert isinstance(result, ToolFailure)
    assert result.content == text('Error: invalid arguments: missing required property "path"')
    assert result.error.message == 'invalid arguments: missing required property "path"'

    result = await runtime.call("read_file", {"offset": "ten", "limit": "all"})
    assert result.error.message == (
        'invalid arguments: missing required property "path"; "offset" must be a number; '
        '"limit" must be a number'
    )
    result = await runtime.call("read_file", "not an object")
    assert result.error.message == 'invalid arguments: "arguments" must be an object'
    assert calls == []


async def test_runs_execute_normally_when_args_are_valid() -> None:
    """runs execute normally when args are valid (extra keys allowed: the root is open)."""
    runtime = ToolRuntime()
    runtime.register(read_tool())

    result = await runtime.call("read_file", {"path": "/a", "offset": 1.5, "extra": True})
    assert result == ToolSuccess(value="read /a", content=text("read /a"))


def test_tool_args_error_carries_a_stable_code_and_the_violation_list() -> None:
    """ToolArgsError carries a stable code and the violation list."""
    error = ToolArgsError(['missing required property "path"', '"n" must be a number'])

    assert isinstance(error, ToolrtError)
    assert error.code == "INVALID_ARGS"
    assert error.name == "ToolArgsError"
    assert error.violations == ('missing required property "path"', '"n" must be a number')
    assert str(error) == 'invalid arguments: missing required property "path"; "n" must be a number'


async def test_a_schema_invalid_call_surfaces_the_structured_error_on_the_result() -> None:
    """a schema-invalid call surfaces the structured error on the result."""
    runtime = ToolRuntime()
    runtime.register(read_tool())

    result = await runtime.call("read_file", {"path": 7})
    assert isinstance(result, ToolFailure)
    assert result.error.info == ToolErrorInfo("ToolArgsError", "INVALID_ARGS")
    assert result.error.message == 'invalid arguments: "path" must be a string'
    assert not hasattr(result, "value")


async def test_a_tool_throwing_a_harness_error_surfaces_its_name_and_code() -> None:
    """a tool throwing a ToolrtError surfaces its name and code."""

    class DiskFullError(ToolrtError):
        pass

    async def plain(args: Any, ctx: Any) -> str:
        raise ToolrtError("disk full", "ENOSPC")

    async def subclass(args: Any, ctx: Any) -> str:
        raise DiskFullError("disk really full", "ENOSPC")

    runtime = ToolRuntime()
    runtime.register(read_tool(plain))
    result = await runtime.call("read_file", {"path": "/a"})
    assert result.error.message == "disk full"
    assert result.error.info == ToolErrorInfo("ToolrtError", "ENOSPC")
    assert result.content == text("Error: disk full")

    runtime = ToolRuntime()
    runtime.register(read_tool(subclass))
    result = await runtime.call("read_file", {"path": "/a"})
    assert result.error.info == ToolErrorInfo("DiskFullError", "ENOSPC")


async def test_a_non_harness_error_throw_retains_only_its_message() -> None:
    """a non-ToolrtError throw retains only its message."""

    async def execute(args: Any, ctx: Any) -> str:
        raise RuntimeError("exploded")

    runtime = ToolRuntime()
    runtime.register(read_tool(execute))
    result = await runtime.call("read_file", {"path": "/a"})

    assert isinstance(result, ToolFailure)
    assert result.error.message == "exploded"
    assert result.error.info is None
    assert result.content == text("Error: exploded")


async def test_raw_registered_tools_are_not_validated() -> None:
    """raw-registered tools are NOT validated by defineTool (MCP keeps its own) (S-DSL6)."""
    seen: list[Any] = []

    async def execute(args: Any, ctx: Any) -> str:
        seen.append(args)
        return "executed anyway"

    runtime = ToolRuntime()
    runtime.register(
        string_tool(
            "mcp_read",
            execute,
            parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        )
    )
    result = await runtime.call("mcp_read", {})

    assert result == ToolSuccess(value="executed anyway", content=text("executed anyway"))
    assert seen == [{}]


@pytest.mark.parametrize("timeout", [0.25, 1, 5000])
def test_attaches_a_positive_finite_timeout_to_the_definition(timeout: float) -> None:
    """attaches a positive-finite timeoutMs to the definition."""
    assert read_tool(timeout_ms=timeout).timeout_ms == timeout


def test_omits_timeout_when_not_declared() -> None:
    """omits timeoutMs when not declared."""
    assert read_tool().timeout_ms is None


@pytest.mark.parametrize("timeout", [0, -1, -0.001])
def test_throws_when_timeout_is_zero_or_negative(timeout: float) -> None:
    """throws when timeoutMs is zero or negative."""
    with pytest.raises(TypeError) as raised:
        read_tool(timeout_ms=timeout)
    assert str(raised.value) == "define_tool(read_file): timeout_ms must be a positive finite number"


@pytest.mark.parametrize("timeout", [math.inf, -math.inf, math.nan])
def test_throws_when_timeout_is_non_finite(timeout: float) -> None:
    """throws when timeoutMs is non-finite."""
    with pytest.raises(TypeError) as raised:
        read_tool(timeout_ms=timeout)
    assert str(raised.value) == "define_tool(read_file): timeout_ms must be a positive finite number"


# --- defineTool presentation -----------------------------------------------------------------------


def mode_tool(**extra: Any) -> ToolDefinition:
    return define_tool(
        name="moded",
        description="",
        parameters={
            "mode": {"type": "string", "enum": ["read", "write"], "required": True},
            "version": {"type": "integer", "const": 2},
        },
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: args["mode"],
        **extra,
    )


def test_preserves_inline_enum_and_const_literals() -> None:
    """preserves inline enum and const literals in inferred arguments (runtime part: the schema)."""
    assert mode_tool().parameters == {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["read", "write"]},
            "version": {"type": "integer", "const": 2},
        },
        "required": ["mode"],
    }


def test_threads_present_call_and_present_result_onto_the_definition() -> None:
    """threads presentCall/presentResult onto the ToolDefinition with typed args."""
    calls: list[Any] = []

    def present_call(args: Any) -> Any:
        calls.append(("call", args))
        return {"card": "generic", "title": f"{args['mode']} v{args.get('version', 1)}"}

    def present_result(args: Any, result: Any) -> Any:
        calls.append(("result", args, result))
        return {"card": "generic", "title": "done", "content": result["content"]}

    definition = mode_tool(present_call=present_call, present_result=present_result)
    durable = {"content": text("read"), "is_error": False}

    assert definition.present_call is not None
    assert definition.present_result is not None
    assert definition.present_call({"mode": "read", "version": 2}) == {"card": "generic", "title": "read v2"}
    assert definition.present_result({"mode": "write"}, durable) == {
        "card": "generic",
        "title": "done",
        "content": text("read"),
    }
    assert calls == [("call", {"mode": "read", "version": 2}), ("result", {"mode": "write"}, durable)]


def test_a_tool_without_presenters_leaves_them_none() -> None:
    """a tool without presentCall/presentResult leaves them undefined (UI falls back generically)."""
    definition = mode_tool()

    assert definition.present_call is None
    assert definition.present_result is None
    assert definition.is_concurrency_safe is None


@pytest.mark.parametrize(
    "bad_args",
    [{}, {"mode": "delete"}, {"mode": "read", "version": 3}, None, "read", [], {"mode": 1}],
    ids=repr,
)
def test_presenters_validate_softly(bad_args: Any) -> None:
    """presentCall/presentResult validate softly: malformed args return undefined, never throw."""

    def present_call(args: Any) -> Any:
        return {"card": "generic", "title": args["mode"].upper()}

    def present_result(args: Any, result: Any) -> Any:
        return {"card": "generic", "title": args["mode"].upper()}

    def classifier(args: Any) -> bool:
        return args["mode"] == "read"

    definition = mode_tool(
        present_call=present_call, present_result=present_result, is_concurrency_safe=classifier
    )
    assert definition.present_call is not None
    assert definition.present_result is not None
    assert definition.is_concurrency_safe is not None

    assert definition.present_call(bad_args) is None
    assert definition.present_result(bad_args, {"content": text("x"), "is_error": True}) is None
    assert definition.is_concurrency_safe(bad_args) is False
    assert definition.present_call({"mode": "read"}) == {"card": "generic", "title": "READ"}
    assert definition.is_concurrency_safe({"mode": "read"}) is True


# --- issue 13: raw schemas are checked at registration; input_schema and normalize=True ---------

# TradingBot.place_order as BFCL v4's multi-turn func doc writes it ("dict", "float").
BFCL_PLACE_ORDER: dict[str, Any] = {
    "type": "dict",
    "properties": {
        "order_type": {
            "type": "string",
            "description": "Type of the order (Buy/Sell).",
            "enum": ["Buy", "Sell"],
        },
        "symbol": {"type": "string", "description": "Symbol of the stock to trade."},
        "price": {"type": "float", "description": "Price at which to place the order."},
        "amount": {"type": "integer", "description": "Number of shares to trade."},
    },
    "required": ["order_type", "symbol", "price", "amount"],
}
NORMALIZE_HINT = (
    "toolrt.schema.normalize_schema() maps this dialect into the subset (place_order.parameters.type: "
    '"dict" -> "object"; place_order.parameters.properties.price.type: "float" -> "number"); '
    "define_tool(input_schema=..., normalize=True) applies it when the tool is defined"
)


def raw_definition(name: str, parameters: Any) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description="bridged",
        parameters=parameters,
        output=ToolOutput(schema={"type": "string"}),
        execute=lambda args, ctx: "placed",
    )


def test_a_raw_schema_outside_the_subset_is_refused_at_registration_with_its_path() -> None:
    """Issue 13: BFCL's "dict" used to reach the model verbatim (and every SDK method became Any)."""
    runtime = ToolRuntime()
    with pytest.raises(JsonSchemaError) as raised:
        runtime.register(raw_definition("place_order", BFCL_PLACE_ORDER))
    assert raised.value.violations == (
        "place_order.parameters.type must be one of object/array/string/number/integer/boolean/null",
        NORMALIZE_HINT,
    )
    assert runtime.schemas() == []  # nothing half-registered

    # A construct normalize_schema cannot rewrite gets the path and the construct, and no hint.
    with pytest.raises(JsonSchemaError) as raised:
        runtime.register(
            raw_definition("lookup", {"type": "object", "properties": {"id": {"$ref": "#/$defs/id"}}})
        )
    assert raised.value.violations == (
        "lookup.parameters.properties.id.$ref is not a supported keyword (subset: type/oneOf/properties/"
        "required/additionalProperties/items/enum/const, minimum/maximum/exclusiveMinimum/exclusiveMaximum/"
        "multipleOf, minLength/maxLength, minItems/maxItems/uniqueItems + annotations)",
    )


async def test_a_raw_definition_registers_once_its_schema_is_normalized() -> None:
    from toolrt.schema import normalize_schema

    fixed = normalize_schema(BFCL_PLACE_ORDER)
    runtime = ToolRuntime()
    runtime.register(raw_definition("place_order", fixed.schema))
    parameters = runtime.schemas()[0]["parameters"]
    assert parameters["type"] == "object"
    assert parameters["properties"]["price"]["type"] == "number"
    # Raw tools own their input (S-DSL6): the runtime still does not validate their arguments.
    assert (await runtime.call("place_order", {})).value == "placed"


async def test_define_tool_with_a_raw_input_schema_validates_the_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "symbol": {"type": "string", "minLength": 1},
            "amount": {"type": "integer", "minimum": 1},
        },
        "required": ["symbol", "amount"],
    }
    order = define_tool(
        name="place_order",
        description="Place an order.",
        input_schema=schema,
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: f"{args['amount']} {args['symbol']}",
    )
    assert order.parameters == schema
    assert order.parameters is not schema  # a frozen copy: later edits of the caller's dict cannot reach it
    runtime = ToolRuntime()
    runtime.register(order)
    assert (await runtime.call("place_order", {"symbol": "NVDA", "amount": 2})).value == "2 NVDA"
    bad = await runtime.call("place_order", {"symbol": "", "amount": 0})
    assert isinstance(bad, ToolFailure)
    assert bad.error.info == ToolErrorInfo("ToolArgsError", "INVALID_ARGS")
    assert bad.error.message == (
        'invalid arguments: "symbol" must be at least 1 character long (got 0); "amount" must be >= 1 (got 0)'
    )


async def test_define_tool_normalize_rewrites_a_catalogue_schema_and_warns_with_every_change() -> None:
    from toolrt.schema import SchemaNormalizedWarning

    with pytest.warns(SchemaNormalizedWarning) as caught:
        order = define_tool(
            name="place_order",
            description="Place an order.",
            input_schema=BFCL_PLACE_ORDER,
            normalize=True,
            output={"schema": {"type": "string"}},
            execute=lambda args, ctx: "placed",
        )
    warning = caught[0].message
    assert isinstance(warning, SchemaNormalizedWarning)
    assert warning.changes == (
        'input_schema.type: "dict" -> "object"',
        'input_schema.properties.price.type: "float" -> "number"',
    )
    assert str(warning) == (
        'define_tool(place_order): input_schema normalized: input_schema.type: "dict" -> "object"; '
        'input_schema.properties.price.type: "float" -> "number"'
    )
    assert caught[0].filename == __file__  # it points at the define_tool(...) call
    runtime = ToolRuntime()
    runtime.register(order)
    result = await runtime.call(
        "place_order", {"order_type": "Hold", "symbol": "X", "price": "1", "amount": 1}
    )
    assert result.content[0]["text"] == (
        'Error: invalid arguments: "order_type" must be one of ["Buy","Sell"]; "price" must be a number'
    )


def test_define_tool_refuses_a_dialect_without_normalize_and_bad_combinations() -> None:
    with pytest.raises(JsonSchemaError) as raised:
        define_tool(
            name="place_order",
            description="",
            input_schema=BFCL_PLACE_ORDER,
            output={"schema": {"type": "string"}},
            execute=lambda args, ctx: "",
        )
    assert raised.value.violations == (
        "input_schema.type must be one of object/array/string/number/integer/boolean/null",
    )
    with pytest.raises(JsonSchemaError, match=r'input_schema.type must be "object"'):
        define_tool(
            name="t", description="", input_schema={"type": "string"}, output={"schema": {}}, execute=print
        )
    with pytest.raises(TypeError, match="exactly one of parameters"):
        define_tool(name="t", description="", output={"schema": {}}, execute=print)
    with pytest.raises(TypeError, match="exactly one of parameters"):
        define_tool(
            name="t",
            description="",
            parameters={},
            input_schema={"type": "object"},
            output={"schema": {}},
            execute=print,
        )
    with pytest.raises(TypeError, match="normalize=True applies to input_schema only"):
        define_tool(
            name="t", description="", parameters={}, normalize=True, output={"schema": {}}, execute=print
        )


async def test_dsl_bounds_reach_the_schema_and_are_enforced() -> None:
    """Decision 0011: the DSL passes the bound keywords through to the raw subset."""
    tool = define_tool(
        name="buy",
        description="",
        parameters={
            "qty": {"type": "integer", "required": True, "exclusiveMinimum": 0, "maximum": 100},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "uniqueItems": True},
        },
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: "ok",
    )
    assert tool.parameters["properties"]["qty"] == {"type": "integer", "exclusiveMinimum": 0, "maximum": 100}
    runtime = ToolRuntime()
    runtime.register(tool)
    result = await runtime.call("buy", {"qty": 0, "tags": ["a", "a"]})
    assert result.content[0]["text"] == (
        'Error: invalid arguments: "qty" must be > 0 (got 0); '
        '"tags" must not contain duplicate items ([0] and [1] are equal)'
    )
    with pytest.raises(
        JsonSchemaError, match=re.escape('schema.properties.qty.minLength is not supported on type "integer"')
    ):
        define_tool(
            name="bad",
            description="",
            parameters={"qty": {"type": "integer", "minLength": 1}},
            output={"schema": {}},
            execute=print,
        )


def test_a_normalized_catalogue_schema_renders_its_real_arguments_in_the_sdk() -> None:
    """Reported: BFCL's "dict" schemas reached the SDK, and every method rendered as Any -> Any."""
    from toolrt.codemode._sdk_python import render_tools_sdk_py
    from toolrt.codemode._sdk_tool import SdkTool
    from toolrt.schema import SchemaNormalizedWarning

    with pytest.warns(SchemaNormalizedWarning):
        order = define_tool(
            name="place_order",
            description="Place an order.",
            input_schema=BFCL_PLACE_ORDER,
            normalize=True,
            output={"schema": {"type": "string"}},
            execute=lambda args, ctx: "placed",
        )
    sdk = render_tools_sdk_py([SdkTool(order.name, order.description, order.parameters, order.output.schema)])
    assert "    price: float" in sdk
    assert "    amount: int" in sdk
    assert "async def place_order(self, args: PlaceOrderArgs) -> str:" in sdk
    assert "args: Any" not in sdk
