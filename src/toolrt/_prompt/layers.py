"""How a system prompt stores its registrations: one :class:`PromptLayer` per scope (and one global),
holding sections and variables by name and tool providers in order, plus the assemble listeners.

Kept in a :class:`toolrt._registry.ScopedLayers`, the same storage the tool registry uses, so
scoped layers are created and reclaimed alike in both.
"""

from __future__ import annotations

from collections.abc import Hashable

from toolrt._prompt.assembly import AssembleListener, SectionText, ToolProvider, VariableValue

__all__ = ["ListenerEntry", "PromptLayer", "ProviderEntry", "SectionEntry", "VariableEntry"]


class SectionEntry:
    """One registered section: its name, sort order, text (or text callable) and ``complete`` flag."""

    __slots__ = ("complete", "name", "order", "text")

    def __init__(self, name: str, order: float, text: SectionText, complete: bool) -> None:
        self.name = name
        self.order = order
        self.text = text
        self.complete = complete


class VariableEntry:
    """One registered variable's value (a fresh object per registration, so removal is by identity)."""

    __slots__ = ("value",)

    def __init__(self, value: VariableValue) -> None:
        self.value = value


class ProviderEntry:
    """One registered tool provider (a fresh object per registration, so removal is by identity)."""

    __slots__ = ("provider",)

    def __init__(self, provider: ToolProvider) -> None:
        self.provider = provider


class ListenerEntry:
    """One assemble listener and the scope it applies to (``None``: every assembly)."""

    __slots__ = ("listener", "scope")

    def __init__(self, listener: AssembleListener, scope: Hashable | None) -> None:
        self.listener = listener
        self.scope = scope


class PromptLayer:
    """The sections, variables and tool providers registered for one scope (or globally)."""

    __slots__ = ("providers", "sections", "variables")

    def __init__(self) -> None:
        self.sections: dict[str, SectionEntry] = {}
        self.variables: dict[str, VariableEntry] = {}
        self.providers: list[ProviderEntry] = []

    def empty(self) -> bool:
        """Whether nothing is registered here (the layer can be reclaimed)."""
        return not (self.sections or self.variables or self.providers)
