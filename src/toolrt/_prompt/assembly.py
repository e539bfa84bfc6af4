"""The steps of one system-prompt assembly: merging scoped layers, resolving lazy texts and
variables, collecting the tools and putting them in order, running the assemble waterfall.

Used by :meth:`toolrt._prompt.system_prompt.SystemPrompt.assemble`; the rules are in :mod:`toolrt._prompt.system_prompt`'s docstring.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Hashable, Sequence
from typing import Any

from toolrt._errors import PromptError
from toolrt._prompt.sections import (
    TOOL_ORDER_REST,
    AssembleListener,
    Assembly,
    PromptContext,
    ToolContribution,
    VariableValue,
    _code_units,
    _Layer,
    _ProviderEntry,
    _SectionEntry,
)
from toolrt._tool_definition import ToolSchema


def _duplicate(kind: str, name: str, key: Hashable | None, what: str) -> str:
    if key is None:
        return (
            f'prompt {kind} "{name}" is already registered (for a per-agent {what}, register it with '
            "scope=<agent> instead)"
        )
    return f'prompt {kind} "{name}" is already registered in this scope'


def _validate_tool_order(tool_order: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tool_order, str) or not isinstance(tool_order, Sequence):
        raise TypeError("tool_order must be a list of tool names")
    names = tuple(tool_order)
    seen: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"tool_order names must be strings, got {name!r}")
        if name in seen:
            if name == TOOL_ORDER_REST:
                raise PromptError(
                    f'toolOrder lists "{TOOL_ORDER_REST}" more than once: it must contain exactly one '
                    f'"{TOOL_ORDER_REST}" rest entry'
                )
            raise PromptError(f'toolOrder lists "{name}" more than once')
        seen.add(name)
    if TOOL_ORDER_REST not in seen:
        raise PromptError(
            f'toolOrder must contain the "{TOOL_ORDER_REST}" rest entry (where unlisted tools are inserted)'
        )
    return names


def _merged(layers: list[_Layer], table: str) -> dict[str, Any]:
    """Named entries across ``layers`` (farthest first): a nearer entry replaces a farther one's value
    but keeps its position, so a shadow also inherits the shadowed entry's tie-break rank."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(getattr(layer, table))
    return merged


def _resolve_text(entry: _SectionEntry, context: PromptContext) -> str:
    text = entry.text(context) if callable(entry.text) else entry.text
    if not isinstance(text, str):
        raise TypeError(
            f'prompt section "{entry.name}" text provider returned {type(text).__name__}, expected str'
        )
    return text


def _resolve_variable(name: str, value: VariableValue, context: PromptContext) -> str | None:
    resolved = value(context) if callable(value) else value
    if resolved is not None and not isinstance(resolved, str):
        raise TypeError(
            f'prompt variable "{name}" provider returned {type(resolved).__name__}, expected str or None'
        )
    return resolved


def _collect_tools(
    providers: list[_ProviderEntry], key: Hashable | None
) -> tuple[list[ToolSchema], set[str]]:
    """Every provider's schemas (fresh copies, projected to name/description/parameters) and the
    union of their known names."""
    tools: list[ToolSchema] = []
    known: set[str] = set()
    seen: set[str] = set()
    for entry in providers:
        contribution = entry.provider(key)
        if not isinstance(contribution, ToolContribution):
            raise TypeError(
                f"a tool provider must return a ToolContribution, got {type(contribution).__name__}"
            )
        names: list[str] = []
        for schema in contribution.schemas:
            name = schema["name"]
            if not isinstance(name, str):
                raise TypeError(f"a tool provider returned a schema whose name is not a string: {name!r}")
            if name == TOOL_ORDER_REST:
                raise PromptError(
                    f'tool provider returned reserved tool name "{TOOL_ORDER_REST}" '
                    "(reserved for toolOrder's rest entry)"
                )
            if name in seen:
                raise PromptError(
                    f'tool "{name}" is contributed more than once to this assembly: model-facing tool '
                    "names must be unique (two tool providers, or one provider twice, returned it)"
                )
            seen.add(name)
            names.append(name)
            tools.append(
                {
                    "name": name,
                    "description": schema["description"],
                    "parameters": copy.deepcopy(schema["parameters"]),
                }
            )
        known.update(names if contribution.known_names is None else contribution.known_names)
    return tools, known


def _order_tools(
    tools: list[ToolSchema], tool_order: tuple[str, ...] | None, known: set[str]
) -> list[ToolSchema]:
    if tool_order is None:
        return sorted(tools, key=lambda tool: _code_units(tool["name"]))
    unknown = [name for name in tool_order if name != TOOL_ORDER_REST and name not in known]
    if unknown:
        noun = "tool" if len(unknown) == 1 else "tools"
        quoted = ", ".join(f'"{name}"' for name in unknown)
        listing = ", ".join(sorted(known, key=_code_units)) or "(none)"
        raise PromptError(f"toolOrder lists unregistered {noun} {quoted}; known tools: {listing}")
    by_name = {tool["name"]: tool for tool in tools}
    listed = set(tool_order)
    ordered: list[ToolSchema] = []
    for name in tool_order:
        if name == TOOL_ORDER_REST:
            rest = [tool for tool in tools if tool["name"] not in listed]
            ordered.extend(sorted(rest, key=lambda tool: _code_units(tool["name"])))
        elif name in by_name:  # known but hidden from this scope: a normal absence
            ordered.append(by_name[name])
    return ordered


async def _waterfall(
    listeners: tuple[AssembleListener, ...], index: int, assembly: Assembly, context: PromptContext
) -> Assembly:
    if index == len(listeners):
        return assembly
    listener = listeners[index]

    async def next_(replacement: Assembly | None = None) -> Assembly:
        if replacement is not None and not isinstance(replacement, Assembly):
            raise TypeError(f"next() takes an Assembly, got {type(replacement).__name__}")
        return await _waterfall(
            listeners, index + 1, assembly if replacement is None else replacement, context
        )

    outcome = listener(assembly, context, next_)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome
