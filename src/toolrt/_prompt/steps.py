"""The steps of one system-prompt assembly: merging scoped layers, resolving lazy texts and
variables, collecting the tools and putting them in order, running the assemble waterfall.

Used by :meth:`toolrt._prompt.system_prompt.SystemPrompt.assemble`; the rules are in the
:mod:`toolrt._prompt` package docstring.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Hashable, Sequence
from typing import Any

from toolrt._errors import PromptError
from toolrt._prompt.assembly import (
    TOOL_ORDER_REST,
    AssembleListener,
    Assembly,
    PromptContext,
    ToolContribution,
    VariableValue,
)
from toolrt._prompt.layers import PromptLayer, ProviderEntry, SectionEntry
from toolrt._tool_definition import ToolSchema

__all__ = [
    "collect_tools",
    "duplicate_message",
    "merged",
    "order_tools",
    "resolve_text",
    "resolve_variable",
    "run_waterfall",
    "validate_tool_order",
]


def _code_units(name: str) -> bytes:
    """Sort key giving JavaScript's string order (UTF-16 code units), not Python's (code points)."""
    return name.encode("utf-16-be", "surrogatepass")


def duplicate_message(kind: str, name: str, key: Hashable | None, what: str) -> str:
    """The error text for a section or variable name registered twice in one layer."""
    if key is None:
        return (
            f'prompt {kind} "{name}" is already registered (for a per-agent {what}, register it with '
            "scope=<agent> instead)"
        )
    return f'prompt {kind} "{name}" is already registered in this scope'


def validate_tool_order(tool_order: Sequence[str]) -> tuple[str, ...]:
    """``tool_order`` as a tuple, after checking its shape (names are checked at each assembly)."""
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


def merged(layers: list[PromptLayer], table: str) -> dict[str, Any]:
    """Named entries across ``layers`` (farthest first): a nearer entry replaces a farther one's value
    but keeps its position, so a shadow also inherits the shadowed entry's tie-break rank."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(getattr(layer, table))
    return merged


def resolve_text(entry: SectionEntry, context: PromptContext) -> str:
    """The section's text for this assembly (its callable called, the result checked)."""
    text = entry.text(context) if callable(entry.text) else entry.text
    if not isinstance(text, str):
        raise TypeError(
            f'prompt section "{entry.name}" text provider returned {type(text).__name__}, expected str'
        )
    return text


def resolve_variable(name: str, value: VariableValue, context: PromptContext) -> str | None:
    """The variable's value for this assembly (its callable called, the result checked)."""
    resolved = value(context) if callable(value) else value
    if resolved is not None and not isinstance(resolved, str):
        raise TypeError(
            f'prompt variable "{name}" provider returned {type(resolved).__name__}, expected str or None'
        )
    return resolved


def collect_tools(providers: list[ProviderEntry], key: Hashable | None) -> tuple[list[ToolSchema], set[str]]:
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


def order_tools(
    tools: list[ToolSchema], tool_order: tuple[str, ...] | None, known: set[str]
) -> list[ToolSchema]:
    """``tools`` in ``tool_order`` (unlisted ones, sorted, at its rest entry), or all sorted by name."""
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


async def run_waterfall(
    listeners: tuple[AssembleListener, ...], index: int, assembly: Assembly, context: PromptContext
) -> Assembly:
    """Run ``listeners[index:]`` on ``assembly``; each gets a ``next`` that runs the rest."""
    if index == len(listeners):
        return assembly
    listener = listeners[index]

    async def next_(replacement: Assembly | None = None) -> Assembly:
        if replacement is not None and not isinstance(replacement, Assembly):
            raise TypeError(f"next() takes an Assembly, got {type(replacement).__name__}")
        return await run_waterfall(
            listeners, index + 1, assembly if replacement is None else replacement, context
        )

    outcome = listener(assembly, context, next_)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome
