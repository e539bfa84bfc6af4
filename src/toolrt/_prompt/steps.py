"""The steps of one system-prompt assembly: merging scoped layers, resolving lazy texts and
variables, collecting the tools and putting them in order, running the assemble waterfall.

Used by :meth:`toolrt._prompt.system_prompt.SystemPrompt.assemble`; the rules are in the
:mod:`toolrt._prompt` package docstring.

**Reusing a projection.** A provider that returns the *same* :class:`ToolContribution` object as
before says "nothing changed" (the runtime's provider does, per generation and scope). Its schemas
are then not read, checked, copied or sorted again: the projection made the first time is kept (a
few recent ones, :data:`_MAX_PROJECTIONS`) as one ``marshal`` image, and every assembly still gets
fresh, mutable copies from it in one C call instead of a deep copy per schema. A contribution whose
values ``marshal`` cannot hold exactly (a ``str`` or ``dict`` subclass, a non-JSON value) keeps
the deep copy.
"""

from __future__ import annotations

import copy
import functools
import inspect
import marshal
from collections.abc import Hashable, Sequence
from typing import Any, Final

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


@functools.lru_cache(maxsize=8192)
def _code_units(name: str) -> bytes:
    """Sort key giving JavaScript's string order (UTF-16 code units), not Python's (code points).

    Memoised: every assembly sorts the same names again.
    """
    return name.encode("utf-16-be", "surrogatepass")


_MAX_PROJECTIONS: Final = 64
"""Projections kept for reuse (one per provider and scope in use): past it, the least recently used
goes."""


class _Projection:
    """One contribution's checked, copied and name-sorted tools, kept while it is returned again."""

    __slots__ = ("contribution", "copies", "image", "known", "names")

    def __init__(self, contribution: ToolContribution, tools: list[ToolSchema]) -> None:
        # The strong reference pins the id the cache is keyed on.
        self.contribution = contribution
        self.names = tuple(tool["name"] for tool in tools)
        known = contribution.known_names
        self.known = frozenset(self.names if known is None else known)
        tools.sort(key=lambda tool: _code_units(tool["name"]))
        self.image: bytes | None
        self.copies: list[ToolSchema] | None = None
        try:
            self.image = marshal.dumps(tools)
        except ValueError:  # a value marshal refuses: keep the deep copy's exact types
            self.image = None
            self.copies = tools

    def fresh(self) -> list[ToolSchema]:
        """New copies of the tools, name-sorted, owned by one assembly."""
        if self.image is not None:
            tools: list[ToolSchema] = marshal.loads(self.image)
            return tools
        return copy.deepcopy(self.copies) if self.copies is not None else []


_projections: dict[int, _Projection] = {}


def _projection(contribution: ToolContribution) -> _Projection | None:
    """The reusable projection of ``contribution`` (``None`` when a schema is refused: the caller
    then walks it schema by schema, so the error is the one the walk meets first)."""
    cached = _projections.pop(id(contribution), None)
    if cached is not None and cached.contribution is contribution:
        # Least recently used goes first: a provider that returns a new object every time
        # cannot push out the runtime's projections that are reused at every step.
        _projections[id(contribution)] = cached
        return cached
    tools: list[ToolSchema] = []
    seen: set[str] = set()
    for schema in contribution.schemas:
        name = schema["name"]
        if not isinstance(name, str) or name == TOOL_ORDER_REST or name in seen:
            return None
        seen.add(name)
        tools.append(_projected(name, schema))
    projection = _Projection(contribution, tools)
    if len(_projections) >= _MAX_PROJECTIONS:
        del _projections[next(iter(_projections))]
    _projections[id(contribution)] = projection
    return projection


def _projected(name: str, schema: ToolSchema) -> ToolSchema:
    return {
        "name": name,
        "description": schema["description"],
        "parameters": copy.deepcopy(schema["parameters"]),
    }


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
        projection = _projection(contribution)
        if projection is not None:
            for name in projection.names:
                if name in seen:
                    raise PromptError(_twice(name))
                seen.add(name)
            tools.extend(projection.fresh())
            known.update(projection.known)
            continue
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
                raise PromptError(_twice(name))
            seen.add(name)
            names.append(name)
            tools.append(_projected(name, schema))
        known.update(names if contribution.known_names is None else contribution.known_names)
    return tools, known


def _twice(name: str) -> str:
    return (
        f'tool "{name}" is contributed more than once to this assembly: model-facing tool '
        "names must be unique (two tool providers, or one provider twice, returned it)"
    )


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
