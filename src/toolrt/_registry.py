"""Layers and scopes: which tools exist, and which ones each agent can see.

There is one *global layer* and, lazily, one *scoped layer* per scope key (an agent, or a standing
preset scope that agents are parented to). A scope sees:

1. every global tool and every tool registered on its ancestors (a nearer layer's definition
   replaces a farther one's, keeping the farther one's position in the listing);
2. minus the names masked by any restriction on its chain (restrictions intersect);
3. plus its own tools, which shadow inherited ones of the same name and are never masked;
4. plus ``run_code`` when its effective presentation mode is ``code`` or ``both``.

``run_code`` is the *transport* of the code presentation: its name is reserved here in every mode
and scope, but its definition is built by whatever plugs the code presentation in (Code Mode does)
and handed over with :meth:`ToolRegistry.install_transport`. The registry never looks inside it.

Calling a tool the scope cannot see is indistinguishable from calling one that does not exist.
Scopes are visibility composition, not an authority boundary: code holding the runtime can reach
everything.

Views are cached per scope and invalidated by a generation counter that every mutation bumps,
so the hot path (resolving a name for a call) is two dictionary lookups.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeAlias, TypeVar

from toolrt._errors import JsonSchemaError
from toolrt._events import Disposer, EventBus, ListenerOwner
from toolrt._json import FrozenDict, NotLosslessJsonError, snapshot_json, thaw
from toolrt._tool_definition import UNBOUNDED, ToolDefinition, ToolOutput, ToolSchema
from toolrt.schema import assert_supported_json_schema
from toolrt.schema._normalize import raw_parameter_violations

if TYPE_CHECKING:
    from toolrt._execution import ToolExecution

__all__ = [
    "RUN_CODE_NAME",
    "PresentationMode",
    "ScopedLayers",
    "ToolGuard",
    "ToolRegistry",
    "ToolsChange",
    "ToolsView",
    "Transport",
    "is_valid_timeout_ms",
    "vouch_checked_schemas",
]

RUN_CODE_NAME = "run_code"
PresentationMode: TypeAlias = Literal["native", "code", "both"]
ToolGuard: TypeAlias = "Callable[[ToolExecution], str | None]"
_MODES: tuple[PresentationMode, ...] = ("native", "code", "both")

_RESERVED_TRANSPORT = (
    'tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered '
    "or shadowed"
)


@dataclass(frozen=True, slots=True)
class ToolsChange:
    """What a ``tools/change`` observer is told: the kind of change, the name, and the scope."""

    kind: Literal[
        "register", "unregister", "restrict", "unrestrict", "reserve", "unreserve", "present", "unpresent"
    ]
    name: str | None
    scope: Hashable | None


@dataclass(frozen=True, slots=True)
class Transport:
    """The definition behind the reserved ``run_code`` name, as the code presentation built it.

    ``schema_error`` says why the definition cannot be shown to a model (its code runtime's language
    has no ``run_code`` flavour, say). Projecting the schemas of a scope that sees the transport then
    raises ``ValueError(schema_error)``: the mistake is loud where the schema is read (every
    assembly), not where the runtime was configured.
    """

    definition: ToolDefinition
    schema_error: str | None = None


class _Restriction:
    __slots__ = ("allow", "deny")

    def __init__(self, allow: frozenset[str] | None, deny: frozenset[str] | None) -> None:
        self.allow = allow
        self.deny = deny


class _GuardCell:
    __slots__ = ("alive", "guard")

    def __init__(self, guard: ToolGuard) -> None:
        self.guard = guard
        self.alive = True


class _Layer:
    __slots__ = ("guards", "mode", "reserved", "restrictions", "tools")

    def __init__(self) -> None:
        self.tools: dict[str, ToolDefinition] = {}
        self.reserved: dict[str, object] = {}
        self.restrictions: list[_Restriction] = []
        # Guards iterate live: a guard added while guards run is seen in the same pass. Removing
        # one starts a new list, so a pass already running finishes over the list it started with.
        self.guards: list[_GuardCell] = []
        self.mode: PresentationMode | None = None

    def empty(self) -> bool:
        return not (self.tools or self.reserved or self.restrictions or self.guards or self.mode)

    def admits(self, name: str) -> bool:
        for restriction in self.restrictions:
            if restriction.allow is not None and name not in restriction.allow:
                return False
            if restriction.deny is not None and name in restriction.deny:
                return False
        return True


class _Reclaimable(Protocol):
    def empty(self) -> bool: ...


_L = TypeVar("_L", bound=_Reclaimable)


class ScopedLayers(Generic[_L]):
    """One global layer and, lazily, one layer per scope key, dropped again once it is empty.

    The storage :class:`ToolRegistry` and :class:`toolrt._prompt.system_prompt.SystemPrompt` both keep their
    registrations in, so creating, reading and reclaiming scoped layers is spelled once.
    """

    def __init__(self, new_layer: Callable[[], _L]) -> None:
        self._new_layer = new_layer
        self._global = new_layer()
        self._scoped: dict[Hashable, _L] = {}

    @property
    def global_layer(self) -> _L:
        """The layer of registrations made for every scope."""
        return self._global

    def layer(self, key: Hashable | None) -> _L | None:
        """``key``'s layer (the global one for ``None``), or ``None`` when the scope has none."""
        return self._global if key is None else self._scoped.get(key)

    def layer_for_write(self, key: Hashable | None) -> _L:
        """``key``'s layer, created when missing (pair a failed write with :meth:`reclaim`)."""
        if key is None:
            return self._global
        layer = self._scoped.get(key)
        if layer is None:
            layer = self._scoped[key] = self._new_layer()
        return layer

    def reclaim(self, key: Hashable | None) -> None:
        """Drop ``key``'s layer if nothing is registered in it any more."""
        if key is not None:
            layer = self._scoped.get(key)
            if layer is not None and layer.empty():
                del self._scoped[key]

    def remove_named(self, table: str, key: Hashable | None, name: str, entry: object) -> bool:
        """Remove ``name`` from ``table`` of ``key``'s layer if it still holds ``entry``; whether it did.

        Checking identity makes a disposer idempotent and keeps it from removing a later
        registration of the same name.
        """
        current = self.layer(key)
        if current is None or getattr(current, table).get(name) is not entry:
            return False
        del getattr(current, table)[name]
        self.reclaim(key)
        return True

    def layers_along(self, chain: Sequence[Hashable]) -> list[_L]:
        """The existing scoped layers of ``chain`` (nearest first), farthest first."""
        layers = (self._scoped.get(key) for key in reversed(chain))
        return [layer for layer in layers if layer is not None]


class ToolsView:
    """What one scope sees, computed once per registry generation.

    ``visible``: name → definition of every tool the scope can call (``run_code`` included under
    ``code``/``both``), in listing order. ``known``: every tool name that exists for the scope —
    visible, restricted away, or only reserved — in listing order. ``restrictable``: the names a
    restriction on this scope may mention. Treat all three as read-only.
    """

    __slots__ = ("known", "restrictable", "visible")

    def __init__(
        self, visible: dict[str, ToolDefinition], known: list[str], restrictable: frozenset[str]
    ) -> None:
        self.visible = visible
        self.known = known
        self.restrictable = restrictable


class ToolRegistry(ScopedLayers[_Layer]):
    """The layered tool table. :class:`toolrt.ToolRuntime` is the public face; see its methods."""

    def __init__(self, events: EventBus, default_mode: PresentationMode) -> None:
        super().__init__(_Layer)
        self._events = events
        self.default_mode: PresentationMode = default_mode
        self._parents: dict[Hashable, Hashable] = {}
        self._generation = 0
        self._views: dict[Hashable | None, tuple[int, ToolsView]] = {}
        self._chains: dict[Hashable, tuple[int, tuple[Hashable, ...], frozenset[Hashable]]] = {}
        # Installed by the code presentation: the run_code definition shown to code/both scopes.
        self._transport: Transport | None = None
        self._muted = False
        # How many guards exist in any layer: lets the pipeline skip guard evaluation entirely.
        self.guard_count = 0
        # How many scopes declare `code`: with none (and a non-code default) nothing can collapse.
        self._code_scopes = 0
        # How many registered tools (any layer) belong to a group: the prompt adds its groups
        # section only once there is something to say.
        self.grouped = 0

    # --- scope chains --------------------------------------------------------------------------

    def bind_parent(self, key: Hashable, parent: Hashable) -> None:
        """Make ``parent`` the scope ``key`` inherits from (one parent; cycles are refused)."""
        if key == parent:
            raise ValueError(f"scope {key!r} cannot be its own parent")
        existing = self._parents.get(key)
        if existing is not None and existing != parent:
            raise ValueError(f"scope {key!r} already has parent {existing!r}")
        cursor: Hashable | None = parent
        while cursor is not None:
            if cursor == key:
                raise ValueError(f"binding scope {key!r} to parent {parent!r} would create a cycle")
            cursor = self._parents.get(cursor)
        self._parents[key] = parent
        self._bump()

    def unbind_parent(self, key: Hashable) -> None:
        """Forget ``key``'s parent (its scope closed)."""
        if self._parents.pop(key, None) is not None:
            self._bump()

    def chain(self, key: Hashable | None) -> tuple[tuple[Hashable, ...], frozenset[Hashable]]:
        """The scope chain nearest-first, and the same keys as a set (for listener filtering)."""
        if key is None:
            return (), frozenset()
        cached = self._chains.get(key)
        if cached is not None and cached[0] == self._generation:
            return cached[1], cached[2]
        keys: list[Hashable] = []
        cursor: Hashable | None = key
        while cursor is not None:
            keys.append(cursor)
            cursor = self._parents.get(cursor)
        result = (tuple(keys), frozenset(keys))
        self._chains[key] = (self._generation, *result)
        return result

    def chain_layers(self, key: Hashable | None) -> list[_Layer]:
        """Existing scoped layers on the chain, farthest ancestor first, own last."""
        keys, _ = self.chain(key)
        return self.layers_along(keys)

    # --- visibility ----------------------------------------------------------------------------

    def _bump(self) -> None:
        self._generation += 1

    @property
    def transport(self) -> ToolDefinition | None:
        """The installed ``run_code`` definition, if the code presentation installed one."""
        return None if self._transport is None else self._transport.definition

    def install_transport(self, transport: Transport) -> None:
        """Install (or replace) the ``run_code`` definition every ``code``/``both`` scope sees.

        Every cached view is invalidated, so the next read shows the new definition.
        """
        self._transport = transport
        self._bump()

    def view(self, key: Hashable | None) -> ToolsView:
        """What ``key``'s scope sees (cached until the next mutation)."""
        cached = self._views.get(key)
        if cached is not None and cached[0] == self._generation:
            return cached[1]
        view = self._compute_view(key)
        self._views[key] = (self._generation, view)
        return view

    def _compute_view(self, key: Hashable | None) -> ToolsView:
        layers = self.chain_layers(key)
        own = self._scoped.get(key) if key is not None else None
        inherited = dict(self._global.tools)
        for layer in layers:
            if layer is not own:
                inherited.update(layer.tools)
        visible = {
            name: definition
            for name, definition in inherited.items()
            if all(layer.admits(name) for layer in layers)
        }
        known = list(inherited)
        restrictable = set(inherited)
        if own is not None:
            for name, definition in own.tools.items():
                visible[name] = definition
                if name not in restrictable:
                    known.append(name)
        for layer in (self._global, *layers):
            for name in layer.reserved:
                if name not in restrictable:
                    restrictable.add(name)
                    if name not in visible:
                        known.append(name)
        if self._transport is not None and self.mode_for(key) != "native":
            visible[RUN_CODE_NAME] = self._transport.definition
        return ToolsView(visible, known, frozenset(restrictable))

    def get(self, name: str, key: Hashable | None = None) -> ToolDefinition | None:
        """The definition ``key``'s scope sees for ``name``, if any."""
        return self.view(key).visible.get(name)

    def visible(self, key: Hashable | None = None) -> Mapping[str, ToolDefinition]:
        """Read-only name → definition of every tool ``key``'s scope can see, in listing order."""
        return MappingProxyType(self.view(key).visible)

    def known(self, key: Hashable | None = None) -> tuple[str, ...]:
        """Every tool name that exists for ``key``'s scope (visible, restricted away or reserved)."""
        return tuple(self.view(key).known)

    def declared_modes(self) -> dict[Hashable, PresentationMode]:
        """The scopes that declare a presentation themselves (``present_as``), with their mode."""
        return {key: layer.mode for key, layer in self._scoped.items() if layer.mode is not None}

    def schemas(self, key: Hashable | None = None) -> list[ToolSchema]:
        """Model-facing schemas (deep copies) of every tool ``key``'s scope can see."""
        transport = self._transport
        projected: list[ToolSchema] = []
        for name, definition in self.view(key).visible.items():
            if transport is not None and definition is transport.definition and transport.schema_error:
                raise ValueError(transport.schema_error)
            try:
                parameters = thaw(snapshot_json(definition.parameters))
            except NotLosslessJsonError:
                raise TypeError(
                    f'tool "{name}" parameters must be lossless JSON before schema projection'
                ) from None
            projected.append({"name": name, "description": definition.description, "parameters": parameters})
        return projected

    def mode_for(self, key: Hashable | None) -> PresentationMode:
        """The nearest presentation declared on the scope chain, else the runtime default."""
        if key is not None:
            keys, _ = self.chain(key)
            for scope_key in keys:
                layer = self._scoped.get(scope_key)
                if layer is not None and layer.mode is not None:
                    return layer.mode
        return self.default_mode

    def collapses(self, name: str, key: Hashable | None, nested: bool) -> bool:
        """Under ``code``, a model-direct call to anything but ``run_code`` cannot execute."""
        if nested or name == RUN_CODE_NAME or (not self._code_scopes and self.default_mode != "code"):
            return False
        return self.mode_for(key) == "code"

    def resolve_execution(self, name: str, key: Hashable | None, nested: bool) -> ToolDefinition | None:
        """The definition a call may actually run: ``get()`` minus collapsed names."""
        definition = self.view(key).visible.get(name)
        if definition is None or self.collapses(name, key, nested):
            return None
        return definition

    def is_admitted(self, name: str, key: Hashable | None = None) -> bool:
        """Whether ``name`` passes every restriction on ``key``'s chain."""
        return all(layer.admits(name) for layer in self.chain_layers(key))

    # --- mutation ------------------------------------------------------------------------------

    def _notify(self, change: ToolsChange) -> None:
        """Tell ``tools/change`` observers. Unlike other observers, a failure here propagates:
        a registration whose announcement failed is rolled back by the caller."""
        if self._muted:
            return
        for listener in self._events.get("tools/change"):
            listener.callback(change)

    def register(
        self, definition: ToolDefinition, key: Hashable | None, owner: ListenerOwner | None
    ) -> Disposer:
        """Add ``definition`` to ``key``'s layer (see :meth:`toolrt.ToolRuntime.register`)."""
        _check_definition(definition)
        name = definition.name
        layer = self.layer_for_write(key)
        if name in layer.tools:
            self.reclaim(key)
            raise ValueError(_taken_message(name, key))
        # The output validator compiles at the tool's first call (the pipeline does it): most of a
        # large catalogue is never called in a session, and the schema was checked above.
        layer.tools[name] = definition
        self.grouped += definition.group is not None
        self._bump()

        def unregister() -> None:
            if self.remove_named("tools", key, name, definition):
                self.grouped -= definition.group is not None
                self._bump()
                self._notify(ToolsChange("unregister", name, key))

        disposer = Disposer(unregister, owner)
        self._announce_or_roll_back(disposer, ToolsChange("register", name, key))
        return disposer

    def register_all(
        self, definitions: Iterable[ToolDefinition], key: Hashable | None, owner: ListenerOwner
    ) -> Disposer:
        """Add every definition to ``key``'s layer, or none of them (``register_methods``).

        Everything :meth:`register` could refuse is checked for the whole batch first (a name twice
        in the batch included), so a refusal leaves the layer as it was; a ``tools/change`` observer
        failing half-way rolls back the ones already added. One disposer removes them all.
        """
        batch = list(definitions)
        layer = self.layer(key)
        names: set[str] = set()
        for definition in batch:
            _check_definition(definition)
            name = definition.name
            if name in names:
                raise ValueError(f'tool "{name}" is given twice in one registration')
            if layer is not None and name in layer.tools:
                raise ValueError(_taken_message(name, key))
            names.add(name)
        added: list[Disposer] = []
        try:
            for definition in batch:
                added.append(self.register(definition, key, None))
        except BaseException:
            for dispose in reversed(added):
                dispose()
            raise

        def unregister_all() -> None:
            for dispose in reversed(added):
                dispose()

        return Disposer(unregister_all, owner)

    def _announce_or_roll_back(self, disposer: Disposer, change: ToolsChange) -> None:
        try:
            self._notify(change)
        except BaseException:
            # Roll back silently: observers already failed once for this change.
            self._muted = True
            try:
                disposer()
            finally:
                self._muted = False
            raise

    def reserve(self, name: str, key: Hashable | None, owner: ListenerOwner) -> Disposer:
        """Reserve ``name`` in ``key``'s layer (see :meth:`toolrt.ToolRuntime.reserve`)."""
        if name == RUN_CODE_NAME:
            raise ValueError(_RESERVED_TRANSPORT)
        layer = self.layer_for_write(key)
        if name in layer.reserved:
            self.reclaim(key)
            raise ValueError(f'tool name "{name}" is already reserved in this scope')
        token = object()
        layer.reserved[name] = token
        self._bump()

        def unreserve() -> None:
            if self.remove_named("reserved", key, name, token):
                self._bump()
                self._notify(ToolsChange("unreserve", name, key))

        disposer = Disposer(unreserve, owner)
        self._announce_or_roll_back(disposer, ToolsChange("reserve", name, key))
        return disposer

    def restrict(
        self,
        allow: Iterable[str] | None,
        deny: Iterable[str] | None,
        key: Hashable | None,
        owner: ListenerOwner,
    ) -> Disposer:
        """Mask inherited tools for ``key`` (see :meth:`toolrt.Scope.restrict`)."""
        if key is None:
            raise ValueError(
                "tools.restrict() requires a scoped context (runtime.scope(agent)): a context-global "
                "restriction would mask every agent — deny the tool for the intended agent instead"
            )
        if allow is None and deny is None:
            raise ValueError(
                "tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty filter is almost "
                "always a materialized-empty-config bug)"
            )
        allow_set = _name_set(allow, "allow")
        deny_set = _name_set(deny, "deny")
        named = [*(allow_set or ()), *(deny_set or ())]
        if RUN_CODE_NAME in named:
            raise ValueError(
                'tools.restrict() cannot name reserved Code Mode presentation transport "run_code"; '
                "restrict end-capability tools instead"
            )
        restrictable = self.view(key).restrictable
        unknown = sorted({name for name in named if name not in restrictable})
        if unknown:
            known = ", ".join(sorted(restrictable)) or "(none)"
            quoted = ", ".join(f'"{name}"' for name in unknown)
            noun = "tool" if len(unknown) == 1 else "tools"
            raise ValueError(
                f"tools.restrict() names unknown global {noun} {quoted}; known global tools: {known}"
            )
        restriction = _Restriction(allow_set, deny_set)
        layer = self.layer_for_write(key)
        layer.restrictions.append(restriction)
        self._bump()

        def lift() -> None:
            current = self._scoped.get(key)
            if current is not None and restriction in current.restrictions:
                current.restrictions.remove(restriction)
                self.reclaim(key)
                self._bump()
                self._notify(ToolsChange("unrestrict", None, key))

        disposer = Disposer(lift, owner)
        self._announce_or_roll_back(disposer, ToolsChange("restrict", None, key))
        return disposer

    def guard(self, guard: ToolGuard, key: Hashable | None, owner: ListenerOwner) -> Disposer:
        """Add a guard to ``key``'s layer (see :meth:`toolrt.ToolRuntime.guard`)."""
        if not callable(guard):
            raise TypeError("guard() takes a callable (execution) -> str | None")
        layer = self.layer_for_write(key)
        cell = _GuardCell(guard)
        layer.guards.append(cell)
        self.guard_count += 1

        def remove() -> None:
            cell.alive = False
            self.guard_count -= 1
            current = self.layer(key)
            if current is not None and cell in current.guards:
                current.guards = [item for item in current.guards if item is not cell]
                self.reclaim(key)

        return Disposer(remove, owner)

    def guard_reason(self, execution: ToolExecution) -> str | None:
        """The first denial reason of the global guards, then the agent chain's (farthest first)."""
        layers = [self._global]
        if execution.agent is not None:
            layers.extend(self.chain_layers(execution.agent))
        for layer in layers:
            cells = layer.guards
            index = 0
            while index < len(cells):
                cell = cells[index]
                index += 1
                if not cell.alive:
                    continue
                reason = cell.guard(execution)
                if reason is None:
                    continue
                if not isinstance(reason, str):
                    raise TypeError(
                        f"a tool guard must return a denial reason (str) or None, got {type(reason).__name__}"
                    )
                return reason
        return None

    def present_as(self, mode: PresentationMode, key: Hashable | None, owner: ListenerOwner) -> Disposer:
        """Declare ``key``'s presentation (see :meth:`toolrt.Scope.present_as`)."""
        if mode not in _MODES:
            raise ValueError(f'tools.present_as() mode must be one of "native", "code", "both"; got {mode!r}')
        if key is None:
            raise ValueError(
                "tools.present_as() requires a scoped context (runtime.scope(agent)): a context-global "
                "presentation is the `mode` config field on the tools row"
            )
        layer = self.layer_for_write(key)
        if layer.mode is not None:
            raise ValueError(
                f'tools.present_as("{mode}") conflicts with "{layer.mode}" already declared for this scope; '
                "one composition selects one presentation"
            )
        layer.mode = mode
        self._code_scopes += mode == "code"
        self._bump()

        def restore() -> None:
            current = self._scoped.get(key)
            if current is not None and current.mode == mode:
                current.mode = None
                self._code_scopes -= mode == "code"
                self.reclaim(key)
                self._bump()
                self._notify(ToolsChange("unpresent", None, key))

        disposer = Disposer(restore, owner)
        self._announce_or_roll_back(disposer, ToolsChange("present", mode, key))
        return disposer

    def touch(self) -> None:
        """Move :attr:`generation` without a mutation here (see :meth:`toolrt.ToolRuntime.touch`)."""
        self._bump()

    @property
    def generation(self) -> int:
        """A counter that moves whenever what some scope sees may have changed (registrations,
        restrictions, presentations, scope parents, the Code Mode transport). The pipeline resolves a
        call's tool once and re-resolves it only when this moved during the call."""
        return self._generation


def is_valid_timeout_ms(timeout_ms: object) -> bool:
    """Whether ``timeout_ms`` is ``None`` (the runtime's default), ``UNBOUNDED`` (no deadline) or a
    positive finite number (never a ``bool``).

    ``register`` enforces it; ``define_tool`` and ``@tool`` check it up front, so an author sees the
    mistake where the tool is defined.
    """
    return (
        timeout_ms is None
        or timeout_ms is UNBOUNDED
        or (
            isinstance(timeout_ms, int | float)
            and not isinstance(timeout_ms, bool)
            and math.isfinite(timeout_ms)
            and timeout_ms > 0
        )
    )


def _check_definition(definition: object) -> None:
    """What ``register`` refuses about a definition itself, whatever the layer holds."""
    if not isinstance(definition, ToolDefinition):
        raise TypeError(f"register() takes a ToolDefinition, got {type(definition).__name__}")
    name = definition.name
    output = definition.output
    if (
        not isinstance(output, ToolOutput)
        or not callable(output.render)
        or (output.presentation_meta is not None and not callable(output.presentation_meta))
    ):
        raise TypeError(f'tool "{name}" must declare output {{ schema, render, presentation_meta? }}')
    checked_parameters, checked_output = getattr(definition.validate_arguments, _VOUCHED, (None, None))
    if not _is_checked(output.schema, checked_output):
        assert_supported_json_schema(output.schema)
    # What the model reads must be what the runtime understands: a raw schema outside the subset
    # ("type": "dict") is refused here, never sent verbatim (issue 13, decision 0011).
    if not _is_checked(definition.parameters, checked_parameters):
        parameter_violations = raw_parameter_violations(name, definition.parameters)
        if parameter_violations:
            raise JsonSchemaError(parameter_violations)
    if not is_valid_timeout_ms(definition.timeout_ms):
        raise TypeError(f'tool "{name}" timeout_ms must be a positive finite number')
    if name == RUN_CODE_NAME:
        raise ValueError(_RESERVED_TRANSPORT)


_VOUCHED = "__toolrt_checked_schemas__"


def vouch_checked_schemas(
    validate_arguments: Callable[..., object], parameters: object, output_schema: object | None
) -> None:
    """Record on a definition's ``validate_arguments`` that ``parameters`` (and ``output_schema``,
    unless ``None``) were checked against the subset when the tool was defined.

    ``register`` then skips walking them again; that walk was most of what registering a
    ``@tool`` or ``define_tool`` tool cost (decision 0012). Only frozen schemas are vouched for
    (nothing can change them after the check) and only the very objects checked: a raw definition,
    or one rebuilt around other schemas, is checked at registration as before.
    """
    setattr(validate_arguments, _VOUCHED, (parameters, output_schema))


def _is_checked(schema: object, checked: object) -> bool:
    return schema is checked and isinstance(schema, FrozenDict)


def _taken_message(name: str, key: Hashable | None) -> str:
    if key is None:
        return (
            f'tool "{name}" is already registered (for a per-agent variant, register through '
            "that agent's scope, `runtime.scope(agent)`, instead)"
        )
    return f'tool "{name}" is already registered in this scope'


def _name_set(names: Iterable[str] | None, label: str) -> frozenset[str] | None:
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError(f"tools.restrict() {label} must be a list of tool names, not a string")
    collected = tuple(names)
    for name in collected:
        if not isinstance(name, str):
            raise TypeError(f"tools.restrict() {label} names must be strings, got {name!r}")
    return frozenset(collected)
