"""System-prompt assembly: ordered sections, the model-facing tool list, and template variables.

Everything the model is told before a step comes from one :class:`SystemPrompt`::

    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)                       # the runtime's tools, per scope
    prompt.section("persona", 0, "You are a careful engineer working in {{cwd}}.")
    prompt.section("tool:bash", 100, bash_guidance)        # tool guidance lives in 100-199
    prompt.variable("cwd", lambda context: os.getcwd())

    assembly = await prompt.assemble(agent)                # or assemble() for the global view
    request = ModelRequest(system=assembly.render(), messages=..., tools=assembly.tools)

**Sections** are sorted by ``order`` (ties keep registration order) and their text is resolved at
every assembly when it is a callable. A section whose text resolves to ``""`` stays in
:attr:`Assembly.sections` but :meth:`Assembly.render` drops it. Convention: ``-100`` identity,
``0`` persona, ``100``-``199`` tool guidance (Code Mode uses ``99`` and ``150``).

**Scopes.** A section, variable, tool provider or assemble listener can be registered for a scope
key (an agent, or a preset scope agents are parented to). It applies to assemblies for that key and
for every key whose *chain* reaches it; a scoped section or variable shadows the same-named global
(or farther ancestor's) one. The chain comes from the ``chain`` constructor argument — use
:func:`runtime_chain` so the prompt and a :class:`~toolrt.ToolRuntime` agree on parentage.

**Tools** are the union of every provider's schemas (a name contributed twice fails the assembly),
sorted by name in UTF-16 code-unit order — the order a JavaScript host produces — or placed by
``tool_order``: a list of names holding exactly one :data:`TOOL_ORDER_REST` entry, where every
unlisted tool lands, sorted. A listed name must be *known* to some provider (known names include
tools that exist but are hidden from this scope, so one ``tool_order`` serves every agent); a
known but invisible name is skipped, an unknown one fails every assembly.

**The assemble waterfall** (``system-prompt/assemble`` upstream): listeners registered with
:meth:`SystemPrompt.on_assemble` see the built :class:`Assembly` and return the one that is used.
Their result is authoritative — nothing re-sorts, re-adds or restores what a listener removed or
replaced — with one deliberate exception: a ``complete=True`` section (a deployment that owns the
whole prompt) is restored afterwards as the only section.

**Prefix-cache stability.** Unchanged registrations produce a byte-identical :meth:`Assembly.render`
and an identical ``tools`` list (same order, same key order) on every assembly, so a provider's
prompt cache keeps hitting.

Errors about the prompt's own configuration raise :class:`PromptError` (a ``ValueError``); an
exception raised by a tool provider, a lazy text, a variable or a listener propagates unchanged
out of :meth:`SystemPrompt.assemble`, so every assembly fails loudly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from toolrt._errors import PromptError
from toolrt._events import Disposer, ListenerOwner
from toolrt._prompt.assembly import (
    _collect_tools,
    _duplicate,
    _merged,
    _order_tools,
    _resolve_text,
    _resolve_variable,
    _validate_tool_order,
    _waterfall,
)
from toolrt._prompt.sections import (
    _VARIABLE_NAME,
    TOOL_ORDER_REST,
    AssembleListener,
    AssembleNext,
    Assembly,
    CodeModeContribution,
    PromptContext,
    Section,
    SectionText,
    ToolContribution,
    ToolProvider,
    VariableValue,
    _Layer,
    _ListenerEntry,
    _own_chain,
    _ProviderEntry,
    _SectionEntry,
    _VariableEntry,
)
from toolrt._registry import ScopedLayers
from toolrt._tool_runtime import _key_of

if TYPE_CHECKING:
    from toolrt._abort import AbortSignal
    from toolrt._tool_runtime import ToolRuntime

__all__ = [
    "TOOL_ORDER_REST",
    "AssembleListener",
    "AssembleNext",
    "Assembly",
    "CodeModeContribution",
    "PromptContext",
    "PromptError",
    "Section",
    "SectionText",
    "SystemPrompt",
    "ToolContribution",
    "ToolProvider",
    "VariableValue",
    "connect_runtime",
    "runtime_chain",
]


class SystemPrompt(ScopedLayers[_Layer]):
    """The registry every system prompt is assembled from.

    ``tool_order``: the model-facing tool order (upstream config ``toolOrder``) — tool names with
    exactly one :data:`TOOL_ORDER_REST` entry; ``None`` sorts every tool by name. Its shape is
    checked here; its names are checked at each assembly (tools register later).

    ``chain``: ``chain(key)`` returns the scope chain of ``key``, nearest first and starting with
    ``key`` itself (``()`` for ``None``). Default: no parentage, just the key. Pass
    :func:`runtime_chain` ``(runtime)`` to share a :class:`~toolrt.ToolRuntime`'s scopes.

    Every registration returns a :class:`~toolrt.Disposer`; pass ``owner=`` (a runtime or a
    :class:`~toolrt.Scope`) to have it undone when that owner closes.
    """

    def __init__(
        self,
        tool_order: Sequence[str] | None = None,
        *,
        chain: Callable[[Hashable | None], Sequence[Hashable]] | None = None,
    ) -> None:
        super().__init__(_Layer)
        self._tool_order = None if tool_order is None else _validate_tool_order(tool_order)
        self._chain = chain if chain is not None else _own_chain
        self._listeners: tuple[_ListenerEntry, ...] = ()

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
        entry = _SectionEntry(name, order, text, complete)
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
        if not isinstance(name, str) or _VARIABLE_NAME.fullmatch(name) is None:
            raise ValueError(f'invalid prompt variable name "{name}" (must match [a-z][a-z0-9_]*)')
        if not (value is None or isinstance(value, str) or callable(value)):
            raise TypeError(f'prompt variable "{name}" must be a string, None, or a callable(context)')
        entry = _VariableEntry(value)
        return self._add_named("variables", name, entry, scope, owner, kind="variable", what="value")

    def _add_named(
        self,
        table: Literal["sections", "variables"],
        name: str,
        entry: _SectionEntry | _VariableEntry,
        scope: Hashable | None,
        owner: ListenerOwner | None,
        *,
        kind: str,
        what: str,
    ) -> Disposer:
        """Put ``entry`` under ``name`` in ``table`` of ``scope``'s layer (a name taken in that layer
        raises); the disposer removes it again."""
        key = _key_of(scope)
        entries: dict[str, Any] = getattr(self._layer_for_write(key), table)
        if name in entries:
            self._reclaim(key)
            raise ValueError(_duplicate(kind, name, key, what))
        entries[name] = entry

        def remove() -> None:
            self._remove_named(table, key, name, entry)

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
        key = _key_of(scope)
        layer = self._layer_for_write(key)
        entry = _ProviderEntry(provider)
        layer.providers.append(entry)

        def remove() -> None:
            current = self._layer(key)
            if current is not None and entry in current.providers:
                current.providers.remove(entry)
                self._reclaim(key)

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
        entry = _ListenerEntry(listener, _key_of(scope))
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
        key = _key_of(scope)
        chain = self._chain_of(key)
        context = PromptContext(scope=key, chain=chain, signal=signal)
        # Farthest first, so the nearest layer has the last word on a name.
        layers = [self._global, *self._layers_along(chain)]

        variables: dict[str, str | None] = {}
        for name, variable in _merged(layers, "variables").items():
            variables[name] = _resolve_variable(name, variable.value, context)

        tools, known = _collect_tools([entry for layer in layers for entry in layer.providers], key)

        entries = sorted(_merged(layers, "sections").values(), key=lambda entry: entry.order)
        completes = [entry.name for entry in entries if entry.complete]
        if len(completes) > 1:
            names = ", ".join(json.dumps(name, ensure_ascii=False) for name in completes)
            raise PromptError(f"multiple complete prompt sections are active: {names}")
        sections = tuple(Section(entry.name, _resolve_text(entry, context)) for entry in entries)

        assembly = Assembly(
            sections=sections,
            tools=tuple(_order_tools(tools, self._tool_order, known)),
            variables=MappingProxyType(variables),
        )
        listeners = tuple(
            entry.listener for entry in self._listeners if entry.scope is None or entry.scope in chain
        )
        result = await _waterfall(listeners, 0, assembly, context)
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


def runtime_chain(runtime: ToolRuntime) -> Callable[[Hashable | None], Sequence[Hashable]]:
    """The ``chain`` argument that makes a :class:`SystemPrompt` follow ``runtime``'s scope parents
    (``runtime.scope(agent, parent=preset)``), so a section registered for ``preset`` reaches
    ``agent``'s assemblies exactly as ``preset``'s tools and restrictions do."""
    registry = runtime._registry
    return lambda key: registry.chain(key)[0]


def connect_runtime(
    prompt: SystemPrompt,
    runtime: ToolRuntime,
    *,
    code_mode: CodeModeContribution | None = None,
) -> Disposer:
    """Make ``runtime``'s tools the prompt's tools (upstream: the registry registers itself as a tool
    provider at construction). Undone by the returned disposer or by ``runtime.close()``.

    For a scope presented natively the contribution is ``runtime.schemas(scope)`` with the scope's
    *known* names — its visible tools plus the ones restricted away and the reserved ones — so
    ``tool_order`` may name a tool some agents cannot see, or a deferred tool not loaded yet.

    Scopes presented as ``code`` or ``both`` get Code Mode's contribution (``[run_code]`` / every
    tool plus ``run_code``, with matching known names) and its ``tools:code-only`` / ``tools:sdk``
    sections (:mod:`toolrt.codemode._prompt_sections`); a custom ``code_mode`` contribution replaces both.
    """

    from toolrt.codemode._prompt_sections import code_mode_contribution, connect_code_mode

    contribute_code = code_mode if code_mode is not None else code_mode_contribution(runtime)

    def provider(scope: Hashable | None) -> ToolContribution:
        mode = runtime.mode_for(scope)
        if mode == "native":
            return ToolContribution(
                schemas=runtime.schemas(scope),
                known_names=tuple(runtime._registry.view(scope).known),
            )
        # Code Mode: [run_code] under "code", every tool plus run_code under "both". It raises when
        # no code runtime (or no SDK renderer for its language) is configured, and that error
        # propagates out of assemble(): every assembly fails loudly.
        contribution: ToolContribution = contribute_code(scope, mode)
        return contribution

    provider_disposer = prompt.tools(provider, owner=runtime)
    if code_mode is not None:
        return provider_disposer  # a custom contribution owns Code Mode's prompt entirely
    sections_disposer = connect_code_mode(prompt, runtime)

    def dispose() -> None:
        sections_disposer()
        provider_disposer()

    return Disposer(dispose, runtime)
