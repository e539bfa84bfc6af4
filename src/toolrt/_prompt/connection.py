"""A :class:`~toolrt.ToolRuntime` as a system prompt's tool source: its scope chains
(:func:`runtime_chain`) and its tools per scope, with the registered presentation's part for
``code``/``both`` scopes (:func:`connect_runtime`).

What this module contributes is derived from the runtime's tool state alone, so it is computed once
per :attr:`~toolrt.ToolRuntime.generation` and scope (:class:`_StateCache`): a model step on an
unchanged runtime reuses the projected schemas and the rendered SDK, and any change that could alter
them (a registration, a restriction, a presentation, a reservation, the code runtime) moves the
generation, so a stale one is never served. The prompt's own lazy sections, variables and listeners
still run at every assembly.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from toolrt._events import Disposer
from toolrt._prompt.assembly import PromptContext, SectionText, ToolContribution
from toolrt._prompt.presentation import (
    PresentationPrompt,
    PresentationSection,
    PresentedTools,
    presentation_prompt,
)
from toolrt._prompt.system_prompt import SystemPrompt
from toolrt._prompt.tool_groups import connect_tool_groups
from toolrt._registry import PresentationMode, ToolsChange
from toolrt._tool_runtime import ToolRuntime

__all__ = ["connect_runtime", "runtime_chain"]

_T = TypeVar("_T")

_MAX_CACHED_SCOPES = 256
"""Entries one cache keeps for the current generation (past it, it starts over): a bound for a
runtime with very many short-lived agents whose scopes never change the tool state."""


class _StateCache(Generic[_T]):
    """Values derived from ``runtime``'s tool state, per scope key, valid for one generation.

    Keyed on state, not on events: the generation moves on every mutation that could change what a
    scope sees, so no change can be missed, whichever way it was made. A computation that raises
    caches nothing (a misconfigured presentation fails every assembly, as before).
    """

    __slots__ = ("_generation", "_runtime", "_values")

    def __init__(self, runtime: ToolRuntime) -> None:
        self._runtime = runtime
        self._generation = -1
        self._values: dict[Hashable | None, _T] = {}

    def get(self, scope: Hashable | None, compute: Callable[[], _T]) -> _T:
        generation = self._runtime.generation
        if generation != self._generation or len(self._values) >= _MAX_CACHED_SCOPES:
            self._values.clear()
            self._generation = generation
        elif scope in self._values:
            return self._values[scope]
        value = compute()
        # Read again: a computation that changed the tool state must not pin its old result.
        if self._runtime.generation == generation:
            self._values[scope] = value
        return value


def runtime_chain(runtime: ToolRuntime) -> Callable[[Hashable | None], Sequence[Hashable]]:
    """The ``chain`` argument that makes a :class:`SystemPrompt` follow ``runtime``'s scope parents
    (``runtime.scope(agent, parent=preset)``), so a section registered for ``preset`` reaches
    ``agent``'s assemblies exactly as ``preset``'s tools and restrictions do."""
    return runtime.scope_chain


def connect_runtime(
    prompt: SystemPrompt,
    runtime: ToolRuntime,
    *,
    presented_tools: PresentedTools | None = None,
) -> Disposer:
    """Make ``runtime``'s tools the prompt's tools (upstream: the registry registers itself as a tool
    provider at construction). Undone by the returned disposer or by ``runtime.close()``.

    For a scope presented natively the contribution is ``runtime.schemas(scope)`` with the scope's
    *known* names — its visible tools plus the ones restricted away and the reserved ones — so
    ``tool_order`` may name a tool some agents cannot see, or a deferred tool not loaded yet.

    Scopes presented as ``code`` or ``both`` get the registered presentation's contribution and its
    sections (:mod:`toolrt._prompt.presentation`; Code Mode's: ``[run_code]`` / every tool plus
    ``run_code``, and the ``tools:code-only`` / ``tools:sdk`` sections). A custom
    ``presented_tools(scope, mode)`` replaces both.

    Native scopes also get the ``tools:groups`` section once the runtime holds a grouped tool
    (:mod:`toolrt._prompt.tool_groups`): each group's description once, not in every tool's.

    The runtime's contribution and the presentation's section texts are cached per
    :attr:`~toolrt.ToolRuntime.generation` and scope (the same :class:`ToolContribution` object is
    returned while nothing changed, which lets the assembly reuse its projection too); a
    registered presentation must therefore derive them from the runtime alone, as Code Mode does.
    A custom ``presented_tools`` is the caller's and is asked at every assembly.
    """
    presentation = presentation_prompt() if presented_tools is None else None
    contribute = presented_tools if presented_tools is not None else _presented_by(presentation, runtime)
    contributions: _StateCache[ToolContribution] = _StateCache(runtime)

    def project(scope: Hashable | None, mode: PresentationMode) -> ToolContribution:
        if mode == "native":
            return ToolContribution(
                schemas=tuple(runtime.schemas(scope)), known_names=runtime.known_tool_names(scope)
            )
        # Whatever the presentation raises (Code Mode: no code runtime, or no SDK renderer for its
        # language) propagates out of assemble(): every assembly fails loudly.
        return contribute(scope, mode)

    def provider(scope: Hashable | None) -> ToolContribution:
        mode = runtime.mode_for(scope)
        if mode != "native" and presented_tools is not None:
            return presented_tools(scope, mode)
        return contributions.get(scope, lambda: project(scope, mode))

    provider_disposer = prompt.tools(provider, owner=runtime)
    groups_disposer = connect_tool_groups(prompt, runtime)
    if presentation is None:
        # A custom contribution owns the non-native prompt entirely.

        def dispose_native() -> None:
            groups_disposer()
            provider_disposer()

        return Disposer(dispose_native, runtime)
    sections_disposer = _connect_sections(prompt, runtime, presentation.sections(runtime))

    def dispose() -> None:
        sections_disposer()
        groups_disposer()
        provider_disposer()

    return Disposer(dispose, runtime)


def _presented_by(presentation: PresentationPrompt | None, runtime: ToolRuntime) -> PresentedTools:
    def contribute(scope: Hashable | None, mode: PresentationMode) -> ToolContribution:
        if presentation is None:
            raise RuntimeError(
                f'toolrt: mode "{mode}" has no presentation plugged into the system prompt '
                "(toolrt._prompt.use_presentation_prompt)"
            )
        return presentation.tools(runtime, scope, mode)

    return contribute


def _connect_sections(
    prompt: SystemPrompt, runtime: ToolRuntime, sections: Sequence[PresentationSection]
) -> Disposer:
    """Register ``sections`` globally (for a non-native default) and for every scope presenting
    ``code``/``both``, now and as scopes come and go; undone by the disposer."""
    disposers: list[Disposer] = []
    scoped: dict[Hashable, list[Disposer]] = {}
    # One cached text per section, shared by the global and the scoped registrations: the text
    # depends on the assembly's scope (its tools, its mode), which is the cache key.
    texts = [_cached_text(section.text, runtime) for section in sections]

    def add_sections(scope: Hashable | None) -> list[Disposer]:
        return [
            prompt.section(section.name, section.order, text, scope=scope)
            for section, text in zip(sections, texts, strict=True)
        ]

    if runtime.mode != "native":
        disposers.extend(add_sections(None))

    def on_change(change: ToolsChange) -> None:
        if change.kind == "present" and change.name in ("code", "both") and change.scope is not None:
            scoped[change.scope] = add_sections(change.scope)
        elif change.kind == "unpresent" and change.scope in scoped:
            for dispose in scoped.pop(change.scope):
                dispose()

    disposers.append(runtime.on("tools/change", on_change))
    # Scopes that already present a code mode when the prompt is connected.
    for key, mode in runtime.declared_presentations().items():
        if mode in ("code", "both"):
            scoped[key] = add_sections(key)

    def dispose_all() -> None:
        for group in scoped.values():
            for dispose in group:
                dispose()
        scoped.clear()
        for dispose in reversed(disposers):
            dispose()

    return Disposer(dispose_all, runtime)


def _cached_text(text: SectionText, runtime: ToolRuntime) -> SectionText:
    """``text`` resolved once per runtime generation and assembly scope (the SDK is rendered once,
    not at every model step)."""
    if isinstance(text, str):
        return text
    resolve = text
    cache: _StateCache[str] = _StateCache(runtime)

    def cached(context: PromptContext) -> str:
        return cache.get(context.scope, lambda: resolve(context))

    return cached
