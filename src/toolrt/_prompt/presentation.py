"""The seam a non-native presentation plugs into the system prompt through.

A scope presented natively contributes its tools' schemas. A scope presented as ``code`` or
``both`` contributes whatever the registered :class:`PresentationPrompt` says — its tools and its
sections — and the prompt knows nothing else about it. ``toolrt/__init__.py`` registers Code Mode's
(Code Mode's package); :func:`~toolrt._prompt.connection.connect_runtime` consults it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

from toolrt._prompt.assembly import SectionText, ToolContribution
from toolrt._registry import PresentationMode

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime

__all__ = [
    "PresentationPrompt",
    "PresentationSection",
    "PresentedTools",
    "presentation_prompt",
    "use_presentation_prompt",
]

PresentedTools: TypeAlias = Callable[[Hashable | None, PresentationMode], ToolContribution]
"""``tools(scope, mode)``: the tool contribution of a scope presented as ``code`` or ``both``."""


@dataclass(frozen=True, slots=True)
class PresentationSection:
    """A section a presentation adds to the prompt: registered globally when the runtime's default
    mode is not native, and for every scope that presents ``code``/``both`` itself."""

    name: str
    order: float
    text: SectionText


class PresentationPrompt(Protocol):
    """What a non-native presentation contributes to a runtime's system prompt.

    :meth:`tools` is asked once per state of the runtime (its :attr:`~toolrt.ToolRuntime.generation`)
    for a ``code``/``both`` scope, and its answer reused until that state moves (whatever it raises
    fails that assembly and is not cached); :meth:`sections` once per connected prompt. A
    presentation whose own setting changes what it returns calls ``runtime.touch()``.
    """

    def tools(self, runtime: ToolRuntime, scope: Hashable | None, mode: PresentationMode) -> ToolContribution:
        """The tools ``scope`` (presented as ``mode``) shows the model, with their known names."""
        ...

    def sections(self, runtime: ToolRuntime) -> Sequence[PresentationSection]:
        """The sections this presentation adds for ``runtime`` (their texts resolve per scope)."""
        ...


# The presentation prompt connect_runtime uses; None until one plugs in.
_presentation_prompt: PresentationPrompt | None = None


def use_presentation_prompt(presentation: PresentationPrompt | None) -> None:
    """Make ``presentation`` the prompt contribution of ``code``/``both`` scopes in every prompt
    connected from now on (``None`` unplugs it: such scopes then fail every assembly)."""
    global _presentation_prompt
    _presentation_prompt = presentation


def presentation_prompt() -> PresentationPrompt | None:
    """The registered presentation prompt, if any."""
    return _presentation_prompt
