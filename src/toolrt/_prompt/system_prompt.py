"""``SystemPrompt``: the registry every system prompt is assembled from (the rules are in the
:mod:`toolrt._prompt` package docstring)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from toolrt._errors import PromptError
from toolrt._events import Disposer, ListenerOwner
from toolrt._prompt.assembly import (
    VARIABLE_NAME,
    AssembleListener,
    Assembly,
    PromptContext,
    Section,
    SectionText,
    ToolProvider,
    VariableValue,
)
from toolrt._prompt.layers import ListenerEntry, PromptLayer, ProviderEntry, SectionEntry, VariableEntry
from toolrt._prompt.steps import (
    collect_tools,
    duplicate_message,
    merged,
    order_tools,
    resolve_text,
    resolve_variable,
    run_waterfall,
    validate_tool_order,
)
from toolrt._registry import ScopedLayers
from toolrt._tool_runtime import scope_key

if TYPE_CHECKING:
    from toolrt._abort import AbortSignal

__all__ = ["SystemPrompt"]


class SystemPrompt:
    """The registry every system prompt is assembled from.

    ``tool_order``: the model-facing tool order (upstream config ``toolOrder``) — tool names with
    exactly one :data:`TOOL_ORDER_REST` entry; ``None`` sorts every tool by name. Its shape is
    checked here; its names are checked at each assembly (tools register later).

    ``chain``: ``chain(key)`` returns the scope chain of ``key``, nearest first and starting with
    ``key`` itself (``()`` for ``None``). Default: no parentage, just the key. Pass
    :func:`~toolrt._prompt.connection.runtime_chain` ``(runtime)`` to share a
    :class:`~toolrt.ToolRuntime`'s scopes.

    Every registration returns a :class:`~toolrt.Disposer`; pass ``owner=`` (a runtime or a
    :class:`~toolrt.Scope`) to have it undone when that owner closes.
    """

    def __init__(
        self,
        tool_order: Sequence[str] | None = None,
        *,
        chain: Callable[[Hashable | None], Sequence[Hashable]] | None = None,
    ) -> None:
        self._layers = ScopedLayers(PromptLayer)
        self._tool_order = None if tool_order is None else validate_tool_order(tool_order)
        self._chain = chain if chain is not None else _own_chain
        self._listeners: tuple[ListenerEntry, ...] = ()

    @property
    def tool_order(self) -> tuple[str, ...] | None:
        """The configured tool order (a snapshot of the constructor argument), if any."""
        return self._tool_order

    # --- registration --------------------------------------------------------------------------

    def section(
        self,
        name: str,
        order: float,
        text: SectionText,
        *,
        scope: Hashable | None = None,
        complete: bool = False,
        owner: ListenerOwner | None = None,
    ) -> Disposer:
        """Contribute a section. ``text`` is a string or ``text(context) -> str``, called at every
        assembly that includes the section (a shadowed section's text is never called).

        With ``scope``, the section applies to that scope's assemblies (and its descendants'),
        shadowing a same-named global section there. ``complete=True`` makes it the whole prompt:
        after the assemble waterfall it is restored as the only section (at most one complete section
        may be in effect for an assembly). A name registered twice in one layer raises.
        """
        if not isinstance(name, str) or not name:
            raise TypeError("a prompt section name must be a non-empty string")
        if isinstance(order, bool) or not isinstance(order, int | float) or not math.isfinite(order):
            raise TypeError(f'prompt section "{name}" order must be a finite number')
        if not (isinstance(text, str) or callable(text)):
            raise TypeError(f'prompt section "{name}" text must be a string or a callable(context) -> str')
        if not isinstance(complete, bool):
            raise TypeError(f'prompt section "{name}" complete must be a bool')
        entry = SectionEntry(name, order, text, complete)
        return self._add_named("sections", name, entry, scope, owner, kind="section", what="override")

    def variable(
        self,
        name: str,
        value: VariableValue,
        *,
        scope: Hashable | None = None,
        owner: ListenerOwner | None = None,
    ) -> Disposer:
        """Contribute ``{{name}}`` for section texts: a string, ``None`` (registered, no value —
        rendering a reference to it raises), or ``value(context) -> str | None`` called at each
        assembly. Names match ``[a-z][a-z0-9_]*``; a scoped variable shadows a global one."""
        if not isinstance(name, str) or VARIABLE_NAME.fullmatch(name) is None:
            raise ValueError(f'invalid prompt variable name "{name}" (must match [a-z][a-z0-9_]*)')
        if not (value is None or isinstance(value, str) or callable(value)):
            raise TypeError(f'prompt variable "{name}" must be a string, None, or a callable(context)')
        entry = VariableEntry(value)
        return self._add_named("variables", name, entry, scope, owner, kind="variable", what="value")

    def _add_named(
        self,
        table: Literal["sections", "variables"],
        name: str,
        entry: SectionEntry | VariableEntry,
        scope: Hashable | None,
        owner: ListenerOwner | None,
        *,
        kind: str,
        what: str,
    ) -> Disposer:
        """Put ``entry`` under ``name`` in ``table`` of ``scope``'s layer (a name taken in that layer
        raises); the disposer removes it again."""
        key = scope_key(scope)
        entries: dict[str, Any] = getattr(self._layers.layer_for_write(key), table)
        if name in entries:
            self._layers.reclaim(key)
            raise ValueError(duplicate_message(kind, name, key, what))
        entries[name] = entry

        def remove() -> None:
            self._layers.remove_named(table, key, name, entry)

        return Disposer(remove, owner)

    def tools(
        self,
        provider: ToolProvider,
        *,
        scope: Hashable | None = None,
        owner: ListenerOwner | None = None,
    ) -> Disposer:
        """Contribute tools: ``provider(scope)`` is called at every assembly with the assembly's scope
        key (``None`` for the global view) and returns a :class:`ToolContribution`. With ``scope``,
        the provider is consulted only for that scope's assemblies (and its descendants')."""
        if not callable(provider):
            raise TypeError("tools() takes a callable provider(scope) -> ToolContribution")
        key = scope_key(scope)
        layer = self._layers.layer_for_write(key)
        entry = ProviderEntry(provider)
        layer.providers.append(entry)

        def remove() -> None:
            current = self._layers.layer(key)
            if current is not None and entry in current.providers:
                current.providers.remove(entry)
                self._layers.reclaim(key)

        return Disposer(remove, owner)

    def on_assemble(
        self,
        listener: AssembleListener,
        *,
        prepend: bool = False,
        scope: Hashable | None = None,
        owner: ListenerOwner | None = None,
    ) -> Disposer:
        """Join the assemble waterfall: ``listener(assembly, context, next)`` returns the assembly to
        use (sync or async). ``await next()`` runs the listeners after this one on the same assembly,
        ``await next(replacement)`` on a replacement; not calling it skips them. Listeners run in
        registration order (``prepend=True`` puts this one first); a ``scope`` listener runs only for
        that scope's assemblies (and its descendants'). The list is snapshotted per assembly."""
        if not callable(listener):
            raise TypeError("on_assemble() takes a callable listener(assembly, context, next)")
        entry = ListenerEntry(listener, scope_key(scope))
        self._listeners = (entry, *self._listeners) if prepend else (*self._listeners, entry)

        def remove() -> None:
            self._listeners = tuple(item for item in self._listeners if item is not entry)

        return Disposer(remove, owner)

    # --- assembly ------------------------------------------------------------------------------

    async def assemble(self, scope: Hashable | None = None, *, signal: AbortSignal | None = None) -> Assembly:
        """Build the prompt for ``scope`` (``None``: global registrations and listeners only), run it
        through the assemble waterfall and return the waterfall's result.

        Raises :class:`PromptError` for a ``tool_order`` naming an unknown tool, a tool name
        contributed twice (or named :data:`TOOL_ORDER_REST`), or two ``complete`` sections in effect;
        whatever a provider, lazy text, variable or listener raises propagates as is.
        """
        key = scope_key(scope)
        chain = self._chain_of(key)
        context = PromptContext(scope=key, chain=chain, signal=signal)
        # Farthest first, so the nearest layer has the last word on a name.
        layers = [self._layers.global_layer, *self._layers.layers_along(chain)]

        variables: dict[str, str | None] = {}
        for name, variable in merged(layers, "variables").items():
            variables[name] = resolve_variable(name, variable.value, context)

        tools, known = collect_tools([entry for layer in layers for entry in layer.providers], key)

        entries = sorted(merged(layers, "sections").values(), key=lambda entry: entry.order)
        completes = [entry.name for entry in entries if entry.complete]
        if len(completes) > 1:
            names = ", ".join(json.dumps(name, ensure_ascii=False) for name in completes)
            raise PromptError(f"multiple complete prompt sections are active: {names}")
        sections = tuple(Section(entry.name, resolve_text(entry, context)) for entry in entries)

        assembly = Assembly(
            sections=sections,
            tools=tuple(order_tools(tools, self._tool_order, known)),
            variables=MappingProxyType(variables),
        )
        listeners = tuple(
            entry.listener for entry in self._listeners if entry.scope is None or entry.scope in chain
        )
        result = await run_waterfall(listeners, 0, assembly, context)
        if not isinstance(result, Assembly):
            raise TypeError(
                f"a system-prompt assemble listener returned {type(result).__name__}, expected an Assembly "
                "(did it forget to return next()'s result?)"
            )
        if completes:
            complete = next(section for section in sections if section.name == completes[0])
            return Assembly(sections=(complete,), tools=result.tools, variables=result.variables)
        return result

    # --- layers --------------------------------------------------------------------------------

    def _chain_of(self, key: Hashable | None) -> tuple[Hashable, ...]:
        if key is None:
            return ()
        chain = tuple(self._chain(key))
        if not chain or chain[0] != key:
            raise ValueError(f"the prompt's chain({key!r}) must start with the key itself, got {chain!r}")
        return chain


def _own_chain(key: Hashable | None) -> Sequence[Hashable]:
    return () if key is None else (key,)
