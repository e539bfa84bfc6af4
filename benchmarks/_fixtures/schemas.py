"""JSON-Schema builders for the benchmark tool catalogues, and :func:`define`, which makes a raw tool.

The builders stay inside toolrt's schema subset (no minimum/format/pattern/anyOf), so the Code Mode SDK
can declare every parameter exactly instead of degrading it to ``Any``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from toolrt import ToolDefinition, ToolOutput
from toolrt.lowlevel import render_value_as_text
from toolrt.schema import json_schema_violations

JsonObject = dict[str, Any]


def _node(kind: str, description: str | None, **extra: Any) -> JsonObject:
    node: JsonObject = {"type": kind}
    if description:
        node["description"] = description
    node.update({key: value for key, value in extra.items() if value is not None})
    return node


def S(
    description: str | None = None, *, enum: Sequence[str] | None = None, default: Any = None
) -> JsonObject:
    """A ``string`` node (optionally an ``enum``)."""
    return _node("string", description, enum=list(enum) if enum else None, default=default)


def I(description: str | None = None, *, default: Any = None) -> JsonObject:  # noqa: E743
    """An ``integer`` node."""
    return _node("integer", description, default=default)


def N(description: str | None = None) -> JsonObject:
    """A ``number`` node."""
    return _node("number", description)


def B(description: str | None = None, *, default: Any = None) -> JsonObject:
    """A ``boolean`` node."""
    return _node("boolean", description, default=default)


def A(items: JsonObject, description: str | None = None) -> JsonObject:
    """An ``array`` node of ``items``."""
    return _node("array", description, items=items)


def O(  # noqa: E743
    properties: Mapping[str, JsonObject],
    required: Sequence[str] = (),
    description: str | None = None,
    *,
    closed: bool = True,
) -> JsonObject:
    """An ``object`` node with ``properties``, the ``required`` names, and openness."""
    node = _node("object", description, properties=dict(properties))
    if required:
        node["required"] = list(required)
    if closed:
        node["additionalProperties"] = False
    return node


def NULLABLE(schema: JsonObject, description: str | None = None) -> JsonObject:
    """A ``oneOf`` of ``schema`` and ``null``."""
    node: JsonObject = {"oneOf": [schema, {"type": "null"}]}
    if description:
        node["description"] = description
    return node


ToolBody = Callable[[Any, Any], Awaitable[Any]]


async def _not_in_benchmark(args: Any, ctx: Any) -> Any:
    raise RuntimeError("this tool exists for its schema only; no benchmark task calls it")


def define(
    name: str,
    description: str,
    parameters: JsonObject,
    output: JsonObject,
    execute: ToolBody = _not_in_benchmark,
    *,
    render: Callable[[Any, Any], Any] = render_value_as_text,
    read_only: bool = True,
) -> ToolDefinition:
    """A raw definition; fails loudly when a schema leaves toolrt's subset (the SDK would say ``Any``)."""
    for where, schema in (("parameters", parameters), ("output", output)):
        violations = json_schema_violations(schema)
        if violations:
            raise AssertionError(f"{name} {where}: {violations}")
    return ToolDefinition(
        name=name,
        description=description,
        parameters=parameters,
        output=ToolOutput(schema=output, render=render),
        execute=execute,
        is_concurrency_safe=(lambda args: True) if read_only else None,
        run_inline=True,
    )
