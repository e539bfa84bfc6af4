"""Registering a large catalogue stays as strict as registering one tool (contract CS4).

Registration no longer walks a ``@tool`` or ``define_tool`` tool's schemas a second time (they were
checked, and frozen, when the tool was defined), and the output validator compiles at a tool's first
call. What a user must still see: every raw schema is checked at registration, nothing the builders
checked can be swapped or changed before it is registered, and a tool's output is validated from its
very first call. Behaviour only: the speed is measured by ``benchmarks/scale.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest

from toolrt import JsonSchemaError, ToolDefinition, ToolOutput, ToolRuntime, define_tool, tool
from toolrt._json import snapshot_json
from toolrt._tool_definition import ToolGroup


def catalogue(count: int) -> list[ToolDefinition]:
    """Half ``@tool`` functions with typed hints and docstrings, half ``define_tool`` tools."""
    tools: list[ToolDefinition] = []
    for index in range(count):
        if index % 2:
            tools.append(
                define_tool(
                    name=f"update_{index}",
                    description=f"Update item {index}.",
                    parameters={
                        "id": {"type": "string", "required": True, "description": "Item id"},
                        "labels": {"type": "array", "items": {"type": "string"}},
                    },
                    output={"schema": {"type": "string"}},
                    execute=lambda args, ctx, index=index: f"{index}:{args['id']}",
                )
            )
        else:

            def search(query: str, limit: int = 10, mode: Literal["fast", "slow"] = "fast") -> list[str]:
                """Search items.

                Args:
                    query: What to look for.
                    limit: How many results at most.
                    mode: Search speed.
                """
                return [query] * min(limit, 2)

            tools.append(tool(name=f"search_{index}")(search))
    return tools


async def test_a_thousand_tools_register_and_each_validates_its_arguments_and_its_output() -> None:
    runtime = ToolRuntime()
    tools = catalogue(1000)
    for definition in tools:
        runtime.register(definition)
    assert len(runtime.visible_tools()) == 1000
    assert (await runtime.call("search_0", {"query": "q", "limit": 3})).value == ["q", "q"]
    assert (await runtime.call("update_999", {"id": "x"})).value == "999:x"
    bad = await runtime.call("search_998", {"query": 1})
    assert bad.is_error and bad.error.info is not None and bad.error.info.code == "INVALID_ARGS"  # type: ignore[union-attr]
    assert runtime.schemas()[0]["parameters"] == tools[0].parameters


async def test_the_output_schema_is_enforced_from_the_first_call_of_a_tool() -> None:
    """The output validator is compiled lazily, but the first call is already checked."""
    runtime = ToolRuntime()

    @tool
    def liar() -> int:
        """Claim to return an integer."""
        return "not an int"  # type: ignore[return-value]

    runtime.register(liar)
    first = await runtime.call("liar", {})
    assert first.is_error
    assert first.error.info is not None and first.error.info.code == "INVALID_TOOL_OUTPUT"  # type: ignore[union-attr]


def raw(parameters: Any, output: Any = None, **fields: Any) -> ToolDefinition:
    return ToolDefinition(
        name="raw",
        description="A raw definition.",
        parameters=parameters,
        output=ToolOutput(schema={"type": "string"} if output is None else output),
        execute=lambda args, ctx: "ok",
        **fields,
    )


def test_a_raw_definition_is_still_checked_at_registration() -> None:
    runtime = ToolRuntime()
    with pytest.raises(JsonSchemaError, match=r"raw\.parameters\.type"):
        runtime.register(raw({"type": "dict", "properties": {}}))
    with pytest.raises(JsonSchemaError, match="unsupported"):
        runtime.register(raw({"type": "object", "properties": {}}, output={"type": "string", "format": 7}))
    assert runtime.get("raw") is None


def test_a_definition_rebuilt_around_other_schemas_is_checked_again() -> None:
    """What was checked is pinned by identity: reusing a checked tool's validator with a new,
    unsupported schema does not smuggle the new one past registration."""
    checked = define_tool(
        name="raw",
        description="d",
        parameters={"id": {"type": "string", "required": True}},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: "ok",
    )
    runtime = ToolRuntime()
    # Frozen, like a checked schema, so only the identity pin can tell them apart.
    swapped = dataclasses.replace(checked, parameters=snapshot_json({"type": "dict", "properties": {}}))
    with pytest.raises(JsonSchemaError, match=r"raw\.parameters\.type"):
        runtime.register(swapped)
    borrowed = raw(snapshot_json({"type": "float"}), validate_arguments=checked.validate_arguments)
    with pytest.raises(JsonSchemaError, match=r"raw\.parameters\.type"):
        runtime.register(borrowed)
    bad_output = dataclasses.replace(checked, output=ToolOutput(schema=snapshot_json({"type": "dict"})))
    with pytest.raises(JsonSchemaError):
        runtime.register(bad_output)
    assert runtime.get("raw") is None
    runtime.register(checked)
    assert runtime.get("raw") is checked


def test_define_tool_schemas_are_frozen_so_the_checked_schema_is_the_registered_one() -> None:
    definition = define_tool(
        name="frozen",
        description="d",
        parameters={"id": {"type": "string", "required": True}},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: "ok",
    )
    with pytest.raises(TypeError):
        definition.parameters["type"] = "dict"  # type: ignore[index]
    with pytest.raises(TypeError):
        definition.output.schema["type"] = "dict"  # type: ignore[index]
    runtime = ToolRuntime()
    runtime.register(definition)
    assert runtime.schemas()[0]["parameters"]["type"] == "object"


def test_a_grouped_tool_and_a_renamed_copy_register_like_the_original() -> None:
    @tool(group=ToolGroup("Files", "A file system."))
    def cd(folder: str) -> str:
        """Change the current directory."""
        return folder

    runtime = ToolRuntime()
    runtime.register(cd)
    runtime.register(dataclasses.replace(cd, name="chdir"))
    assert set(runtime.visible_tools()) == {"cd", "chdir"}
    assert runtime.has_tool_groups()


def test_registering_the_same_catalogue_in_a_second_runtime_gives_the_same_schemas() -> None:
    tools = catalogue(50)
    first, second = ToolRuntime(), ToolRuntime()
    for definition in tools:
        first.register(definition)
    for definition in tools:
        second.register(definition)
    assert first.schemas() == second.schemas()
