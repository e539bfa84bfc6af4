"""What an assembly is for and what it produces: :class:`PromptContext`, :class:`Section`,
:class:`ToolContribution`, :class:`Assembly` (and its rendering), and the shapes of the callables a
:class:`~toolrt._prompt.system_prompt.SystemPrompt` takes.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeAlias

from toolrt._errors import PromptError
from toolrt._tool_definition import ToolSchema

if TYPE_CHECKING:
    from toolrt._abort import AbortSignal


TOOL_ORDER_REST = "<unlisted-tools>"
"""The one ``tool_order`` entry that stands for every tool the list does not name."""


VARIABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""What a ``{{name}}`` variable name must match."""


_GROUP = re.compile(r"\{\{([^{}]*)\}\}")


@dataclass(frozen=True, slots=True)
class PromptContext:
    """What one assembly is for; passed to lazy section texts, variables and assemble listeners.

    ``scope`` is the key passed to :meth:`SystemPrompt.assemble` (``None``: the global view),
    ``chain`` its scope chain nearest-first (``()`` for the global view), ``signal`` the caller's
    cancellation signal for this assembly, if any (do not keep it for later turns).
    """

    scope: Hashable | None = None
    chain: tuple[Hashable, ...] = ()
    signal: AbortSignal | None = None


@dataclass(frozen=True, slots=True)
class Section:
    """One assembled section: its name and its resolved (not yet interpolated) text."""

    name: str
    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not isinstance(self.text, str):
            raise TypeError("Section(name, text) takes two strings")


@dataclass(frozen=True, slots=True)
class ToolContribution:
    """What a tool provider contributes to one assembly.

    ``schemas`` are the tools this scope can see. ``known_names`` is the universe ``tool_order`` is
    checked against — every tool that exists for the scope, including ones restricted away or only
    reserved; ``None`` means "the names in ``schemas``".
    """

    schemas: Sequence[ToolSchema]
    known_names: Sequence[str] | None = None


@dataclass(frozen=True, init=False)
class Assembly:
    """One assembled prompt: ordered sections, ordered tool schemas, resolved variables.

    Immutable; a listener changes it by returning a new one, e.g.
    ``assembly.replace(tools=[t for t in assembly.tools if t["name"] != "run_code"])``. Any
    iterable is accepted and stored as a tuple. The tool dicts are fresh copies made for this
    assembly only, so changing them affects nothing else.
    """

    sections: tuple[Section, ...]
    tools: tuple[ToolSchema, ...]
    variables: Mapping[str, str | None]

    def __init__(
        self,
        sections: Iterable[Section] = (),
        tools: Iterable[ToolSchema] = (),
        variables: Mapping[str, str | None] | None = None,
    ) -> None:
        sections = tuple(sections)
        for section in sections:
            if not isinstance(section, Section):
                raise TypeError(f"Assembly.sections takes Section objects, got {type(section).__name__}")
        object.__setattr__(self, "sections", sections)
        object.__setattr__(self, "tools", tuple(tools))
        if not isinstance(variables, MappingProxyType):
            variables = MappingProxyType(dict(variables or {}))
        object.__setattr__(self, "variables", variables)

    def replace(
        self,
        *,
        sections: Iterable[Section] | None = None,
        tools: Iterable[ToolSchema] | None = None,
        variables: Mapping[str, str | None] | None = None,
    ) -> Assembly:
        """A copy with the given parts replaced (the others shared)."""
        return Assembly(
            self.sections if sections is None else sections,
            self.tools if tools is None else tools,
            self.variables if variables is None else variables,
        )

    def section(self, name: str) -> Section | None:
        """The section called ``name``, if present."""
        return next((section for section in self.sections if section.name == name), None)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools' names, in order."""
        return tuple(tool["name"] for tool in self.tools)

    def render(self) -> str:
        """The system prompt text: each section's ``{{variable}}`` references interpolated, empty
        sections dropped, the rest joined by a blank line (``""`` when nothing is left).

        References are strict: a malformed ``{{...}}`` group, an unregistered name, or a variable
        with no value for this assembly raises :class:`PromptError`. A ``{{`` with no ``}}`` anywhere
        after it is literal text; substituted values are never scanned again.
        """
        texts = (_interpolate(section, self.variables) for section in self.sections)
        return "\n\n".join(text for text in texts if text)


SectionText: TypeAlias = "str | Callable[[PromptContext], str]"
"""A section's text: a string, or ``text(context)`` resolved at every assembly."""


VariableValue: TypeAlias = "str | Callable[[PromptContext], str | None] | None"
"""A variable's value: a string, ``None`` (registered, no value), or ``value(context)``."""


ToolProvider: TypeAlias = Callable[[Hashable | None], ToolContribution]
"""``provider(scope)``: the tools one provider contributes to ``scope``'s assembly.

Returning the *same* :class:`ToolContribution` object as before means "unchanged": its schemas are
not read, checked or sorted again (contract CS3). A provider whose tools changed returns a new one.
"""


AssembleNext: TypeAlias = "Callable[..., Awaitable[Assembly]]"
"""``next(replacement=None)``: run the rest of the waterfall on ``replacement`` (default: the
assembly this listener received) and return what it produces."""


AssembleListener: TypeAlias = (
    "Callable[[Assembly, PromptContext, AssembleNext], Assembly | Awaitable[Assembly]]"
)
"""``listener(assembly, context, next)``: one step of the assemble waterfall."""


def _interpolate(section: Section, variables: Mapping[str, str | None]) -> str:
    text = section.text
    parts: list[str] = []
    last = 0
    open_ = text.find("{{")
    while open_ >= 0:
        group = _GROUP.match(text, open_)
        if group is None:
            # A later "}}" makes this a mangled reference; without one it is literal prose.
            if text.find("}}", open_ + 2) >= 0:
                raise PromptError(
                    f'malformed prompt variable reference at "{text[open_ : open_ + 16]}…" in section '
                    f'"{section.name}" (references are complete simple {{{{name}}}} groups)'
                )
            parts.append(text[last : open_ + 2])
            last = open_ + 2
        else:
            name = group.group(1)
            if VARIABLE_NAME.fullmatch(name) is None:
                raise PromptError(
                    f'malformed prompt variable reference "{{{{{name}}}}}" in section "{section.name}" '
                    "(variable names match [a-z][a-z0-9_]*)"
                )
            if name not in variables:
                registered = ", ".join(variables) or "(none)"
                raise PromptError(
                    f'unknown prompt variable "{{{{{name}}}}}" in section "{section.name}"; '
                    f"registered variables: {registered}"
                )
            value = variables[name]
            if value is None:
                raise PromptError(
                    f'prompt variable "{{{{{name}}}}}" has no value for this assembly '
                    f'(section "{section.name}")'
                )
            parts.append(text[last:open_])
            parts.append(value)
            last = group.end()
        open_ = text.find("{{", last)
    parts.append(text[last:])
    return "".join(parts)
