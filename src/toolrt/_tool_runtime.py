"""``ToolRuntime``: the registry and the pipeline behind one object, and ``Scope`` for agents.

>>> import asyncio
>>> from toolrt import ToolRuntime, tool
>>> runtime = ToolRuntime()
>>> @tool
... async def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> dispose = runtime.register(add)
>>> asyncio.run(runtime.call("add", {"a": 1, "b": 2})).value
3

Registrations made on the runtime are global. ``runtime.scope(agent)`` returns a :class:`Scope`
with the same methods whose registrations apply to that agent (and to agents parented to it) and
are undone together when the scope closes.

The core knows no Code Mode. The ``code``/``both`` presentation plugs in through
:func:`use_code_presentation`: a :class:`CodePresentation` builds the ``run_code`` transport for
each runtime's configured code runtime (``toolrt/__init__.py`` registers Code Mode's). The runtime
holds that code runtime without looking inside it.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import re
from collections.abc import Callable, Coroutine, Hashable, Iterable, Mapping
from typing import Any, Protocol

from toolrt._abort import AbortSignal
from toolrt._approval_request import ApprovalService
from toolrt._decisions import ExecutionMode
from toolrt._events import Disposer, EventBus, EventName, EventSink, ListenerOwner
from toolrt._execution import ExecutionToken, ToolExecutionInput
from toolrt._pipeline import Pipeline
from toolrt._registry import PresentationMode, ToolGuard, ToolRegistry, Transport, is_valid_timeout_ms
from toolrt._results import ToolExecutionResult
from toolrt._tool_decorator import tool
from toolrt._tool_definition import (
    DEFAULT_OUTPUT_BUDGET,
    DEFAULT_TOOL_TIMEOUT_MS,
    UNBOUNDED,
    OutputBudget,
    ToolDefinition,
    ToolGroup,
    ToolSchema,
    Unbounded,
    is_valid_output_budget,
)

__all__ = [
    "CodePresentation",
    "Scope",
    "ToolRuntime",
    "scope_key",
    "use_code_presentation",
    "use_default_policies",
]

_MODES = ("native", "code", "both")
_call_ids = itertools.count(1)


def _missing_code_runtime(what: str) -> str:
    return (
        f"{what} requires a code runtime: pass one as ToolRuntime(code_runtime=...) "
        '(e.g. toolrt.sandbox.PythonSandboxRuntime()), or use mode="native"'
    )


class CodePresentation(Protocol):
    """What the core asks of the ``code``/``both`` presentation (Code Mode implements it).

    The runtime calls :meth:`transport` when it is built and again whenever its ``code_runtime``
    changes, and installs the result as the definition behind the reserved ``run_code`` name.
    """

    def transport(self, runtime: ToolRuntime) -> Transport:
        """The ``run_code`` definition for ``runtime`` as configured now."""
        ...


# The presentation every new runtime uses; None until one plugs in (the core alone has no run_code).
_code_presentation: CodePresentation | None = None


def use_code_presentation(presentation: CodePresentation | None) -> None:
    """Make ``presentation`` build the ``run_code`` transport of every runtime constructed from now on.

    ``toolrt/__init__.py`` registers Code Mode's, so importing toolrt is enough; ``None`` unplugs it
    (new runtimes then show no ``run_code``, though its name stays reserved).
    """
    global _code_presentation
    _code_presentation = presentation


# What every new runtime installs on itself (the output budget); None until toolrt plugs it in.
_default_policies: Callable[[ToolRuntime], None] | None = None


def use_default_policies(installer: Callable[[ToolRuntime], None] | None) -> None:
    """Make ``installer(runtime)`` run at the end of every ``ToolRuntime`` constructed from now on.

    ``toolrt/__init__.py`` plugs in the policies' defaults (the output budget), which the core cannot
    import itself; ``None`` unplugs them.
    """
    global _default_policies
    _default_policies = installer


class ToolRuntime(ListenerOwner):
    """The tool layer of one agent deployment.

    ``mode`` is the default presentation (``native`` function schemas, ``code`` for Code Mode, or
    ``both``) for scopes that declare none. ``max_parallel_sub_calls`` caps how many concurrency-safe
    Code Mode bindings overlap. ``approval`` answers ``Ask`` decisions (see :mod:`toolrt._approval_request`).
    ``output_budget`` bounds every model-facing result, ``run_code``'s included (characters; default
    :data:`~toolrt.DEFAULT_OUTPUT_BUDGET`): past it the model reads a preview and a ``read_spill``
    locator, and the whole content is kept (see :func:`toolrt.policies.install_output_budget`). A
    tool's own ``max_output_chars`` wins; ``output_budget=UNBOUNDED`` turns the default off.
    ``tool_timeout_ms`` is the deadline of every call whose tool sets no ``timeout_ms`` (default
    :data:`~toolrt.DEFAULT_TOOL_TIMEOUT_MS`, 120 s; ``run_code`` and inline tools excepted), enforced
    by the default deadline every runtime installs (:func:`toolrt.policies.install_default_deadline`);
    ``UNBOUNDED`` means no deadline.
    """

    def __init__(
        self,
        *,
        mode: PresentationMode = "native",
        max_parallel_sub_calls: int = 10,
        approval: ApprovalService | None = None,
        code_runtime: object | None = None,
        output_budget: OutputBudget = DEFAULT_OUTPUT_BUDGET,
        tool_timeout_ms: float | Unbounded = DEFAULT_TOOL_TIMEOUT_MS,
    ) -> None:
        super().__init__()
        if mode not in _MODES:
            raise ValueError(f'tools mode must be one of "native", "code", "both"; got {mode!r}')
        if (
            not isinstance(max_parallel_sub_calls, int)
            or isinstance(max_parallel_sub_calls, bool)
            or max_parallel_sub_calls < 1
        ):
            raise ValueError("max_parallel_sub_calls must be a positive integer")
        if not is_valid_output_budget(output_budget):
            raise ValueError(f"output_budget must be a positive int or UNBOUNDED, got {output_budget!r}")
        if tool_timeout_ms is not UNBOUNDED and (
            tool_timeout_ms is None or not is_valid_timeout_ms(tool_timeout_ms)
        ):
            raise ValueError(
                f"tool_timeout_ms must be a positive finite number or UNBOUNDED, got {tool_timeout_ms!r}"
            )
        if mode != "native" and code_runtime is None:
            # Fail at construction: the lazy alternative told the model, at its first run_code.
            raise ValueError(_missing_code_runtime(f'ToolRuntime(mode="{mode}")'))
        self._events = EventBus()
        self._registry = ToolRegistry(self._events, mode)
        self._pipeline = Pipeline(self._registry, self._events)
        self._pipeline.approval = approval
        self._max_parallel_sub_calls = max_parallel_sub_calls
        self._scopes: dict[Hashable, Scope] = {}
        self._sessions: dict[Hashable, EventSink] = {}
        self._code_runtime: object | None = None
        self._code_presentation = _code_presentation
        self._install_transport()
        if code_runtime is not None:
            self.code_runtime = code_runtime
        self._output_budget = output_budget
        self._tool_timeout_ms = tool_timeout_ms
        if _default_policies is not None:
            _default_policies(self)

    # --- configuration -------------------------------------------------------------------------

    @property
    def mode(self) -> PresentationMode:
        """The default presentation mode."""
        return self._registry.default_mode

    @property
    def output_budget(self) -> OutputBudget:
        """The model-facing budget of a tool result whose definition sets no ``max_output_chars``."""
        return self._output_budget

    @property
    def tool_timeout_ms(self) -> float | Unbounded:
        """The deadline of a call whose tool sets no ``timeout_ms`` (``UNBOUNDED``: none)."""
        return self._tool_timeout_ms

    @property
    def max_parallel_sub_calls(self) -> int:
        """How many concurrency-safe Code Mode bindings may overlap."""
        return self._max_parallel_sub_calls

    @property
    def approval(self) -> ApprovalService | None:
        """The approval service that answers ``Ask`` decisions, if any."""
        return self._pipeline.approval

    @approval.setter
    def approval(self, service: ApprovalService | None) -> None:
        self._pipeline.approval = service

    @property
    def code_runtime(self) -> object | None:
        """The runtime Code Mode programs run in (a Code Mode ``CodeRuntime``).

        Opaque to the core: the code presentation reads it (its ``language`` selects the SDK and
        the ``run_code`` flavour). Setting it rebuilds the ``run_code`` transport.
        """
        return self._code_runtime

    @code_runtime.setter
    def code_runtime(self, runtime: object | None) -> None:
        if runtime is None:
            modes = [self.mode, *self.declared_presentations().values()]
            needing = next((mode for mode in modes if mode != "native"), None)
            if needing is not None:
                raise ValueError(
                    f'cannot unset code_runtime: mode "{needing}" is in use and requires a code runtime'
                )
        self._code_runtime = runtime
        self._install_transport()

    def _install_transport(self) -> None:
        if self._code_presentation is not None:
            self._registry.install_transport(self._code_presentation.transport(self))

    def bind_session(self, agent: Hashable, sink: EventSink) -> Disposer:
        """Route durable events about ``agent``'s calls (Code Mode sub-calls) to ``sink(type, data)``.

        :class:`toolrt.loop.Agent` binds its session log; agent-less calls log nothing.
        """
        key = scope_key(agent)
        self._sessions[key] = sink

        def unbind() -> None:
            if self._sessions.get(key) is sink:
                del self._sessions[key]

        return Disposer(unbind, self)

    def session_for(self, agent: Hashable | None) -> EventSink | None:
        """The session sink bound for ``agent``, if any."""
        return None if agent is None else self._sessions.get(agent)

    @property
    def stages(self) -> Pipeline:
        """The pipeline's stages, callable one by one (for schedulers)."""
        return self._pipeline

    # --- registration (global layer) -----------------------------------------------------------

    def register(self, definition: ToolDefinition) -> Disposer:
        """Register a tool for every agent. Raises on a duplicate name or a bad declaration."""
        return self._registry.register(definition, None, self)

    def register_methods(
        self,
        obj: object,
        *,
        prefix: str | None = None,
        group: str | ToolGroup | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
    ) -> Disposer:
        """Register every public method of ``obj`` as a tool, all or none; one disposer undoes them.

        Each method goes through ``@tool`` (its hints, its docstring) bound to ``obj``, named
        ``prefix + method name``. No prefix by default: the names stay the ones the class's users
        and catalogues already know, and the group tells the model which system a tool belongs to
        (two classes sharing a method name need a prefix, and the clash is refused, not merged).
        The group defaults to the class name, with the first paragraph of the class docstring as its
        description, shown to the model once per group. Static and class methods count; properties,
        nested classes and ``_private`` methods do not. ``include`` / ``exclude`` pick methods by
        name (a name that is not a public method raises). A method ``@tool`` refuses, or a name
        already taken, refuses the whole call, naming each method and why.

        >>> class Counter:
        ...     '''A counter that remembers its value.'''
        ...     def __init__(self) -> None:
        ...         self.value = 0
        ...     def increment(self, by: int = 1) -> int:
        ...         '''Add ``by`` to the counter and return the new value.'''
        ...         self.value += by
        ...         return self.value
        >>> runtime = ToolRuntime()
        >>> dispose = runtime.register_methods(Counter(), prefix="counter_")
        >>> runtime.get("counter_increment").group
        ToolGroup(name='Counter', description='A counter that remembers its value.')
        """
        definitions = _method_tools(obj, prefix=prefix, group=group, include=include, exclude=exclude)
        return self._registry.register_all(definitions, None, self)

    def has_tool_groups(self) -> bool:
        """Whether any registered tool, in any scope, belongs to a :class:`ToolGroup` (the prompt
        adds its groups section only then)."""
        return self._registry.grouped > 0

    def reserve(self, name: str) -> Disposer:
        """Make ``name`` known and restrictable without a visible definition (deferred tools)."""
        return self._registry.reserve(name, None, self)

    def guard(self, guard: ToolGuard) -> Disposer:
        """Add a monotonic guard: ``guard(execution)`` returning a reason denies the call."""
        return self._registry.guard(guard, None, self)

    def restrict(self, *, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None) -> Disposer:
        """Always raises: a restriction belongs to a scope (``runtime.scope(agent).restrict``)."""
        return self._registry.restrict(allow, deny, None, self)

    def present_as(self, mode: PresentationMode) -> Disposer:
        """Always raises: the runtime-wide presentation is the ``mode`` constructor argument."""
        return self._registry.present_as(mode, None, self)

    def on(self, event: EventName, listener: Callable[..., Any], *, prepend: bool = False) -> Disposer:
        """Listen to ``event`` for every call (see :mod:`toolrt._events` for the signatures)."""
        return self._events.add(event, listener, scope_key=None, prepend=prepend, owner=self)

    # --- scopes --------------------------------------------------------------------------------

    def scope(self, key: Hashable, *, parent: Hashable | None = None) -> Scope:
        """Open the scope for ``key`` (an agent), optionally inheriting from ``parent``'s scope."""
        key = scope_key(key)
        if key is None:
            raise ValueError("a scope key cannot be None (None means agent-less)")
        if key in self._scopes:
            raise ValueError(f"scope {key!r} is already open; close it before opening it again")
        parent_key = scope_key(parent)
        if parent_key is not None:
            self._registry.bind_parent(key, parent_key)
        scope = Scope(self, key, parent_key)
        self._scopes[key] = scope
        return scope

    def _close_scope(self, scope: Scope) -> None:
        if self._scopes.get(scope.key) is scope:
            del self._scopes[scope.key]
            self._registry.unbind_parent(scope.key)

    # --- reads ---------------------------------------------------------------------------------

    def get(self, name: str, scope: Hashable | None = None) -> ToolDefinition | None:
        """The definition ``scope`` sees for ``name`` (shadowing and restrictions applied)."""
        return self._registry.get(name, scope_key(scope))

    def schemas(self, scope: Hashable | None = None) -> list[ToolSchema]:
        """Model-facing schemas of every tool ``scope`` can see (deep copies)."""
        return self._registry.schemas(scope_key(scope))

    def is_admitted(self, name: str, scope: Hashable | None = None) -> bool:
        """Whether ``name`` passes every restriction on ``scope``'s chain (ignores registration)."""
        return self._registry.is_admitted(name, scope_key(scope))

    def visible_tools(self, scope: Hashable | None = None) -> Mapping[str, ToolDefinition]:
        """Read-only name → definition of every tool ``scope`` can see, in listing order.

        ``run_code`` included when ``scope`` presents ``code`` or ``both``. The definitions are the
        registered ones (not copies); for model-facing schemas use :meth:`schemas`.
        """
        return self._registry.visible(scope_key(scope))

    def known_tool_names(self, scope: Hashable | None = None) -> tuple[str, ...]:
        """Every tool name that exists for ``scope``, in listing order: its visible tools (without
        ``run_code``), the ones restricted away from it and the reserved ones (deferred tools)."""
        return self._registry.known(scope_key(scope))

    @property
    def generation(self) -> int:
        """A counter that moves whenever what some scope sees may have changed: a tool registered or
        removed, a name reserved, a restriction, a presentation, a scope parent, the code runtime.

        What is derived from the tool set alone (the system prompt's tools and SDK) is cached
        against it, so an unchanged runtime is never re-projected and a changed one never served
        stale.
        """
        return self._registry.generation

    def touch(self) -> None:
        """Move :attr:`generation` without changing a tool: for a plug-in whose own setting changes
        what scopes are shown (Code Mode's tool search turning on), so that what is cached against
        the tool state (the prompt's tools and SDK) is derived again at the next assembly."""
        self._registry.touch()

    def scope_chain(self, scope: Hashable | None) -> tuple[Hashable, ...]:
        """``scope``'s key and its parents' keys, nearest first (``()`` for ``None``)."""
        return self._registry.chain(scope_key(scope))[0]

    def declared_presentations(self) -> dict[Hashable, PresentationMode]:
        """The scopes that declared a presentation themselves (``present_as``), with their mode."""
        return self._registry.declared_modes()

    def mode_for(self, scope: Hashable | None = None) -> PresentationMode:
        """The effective presentation mode of ``scope``."""
        return self._registry.mode_for(scope_key(scope))

    def execution_mode(self, call: ToolExecutionInput) -> ExecutionMode:
        """``"parallel"`` only when the tool's classifier returns exactly ``True`` for these arguments."""
        definition = self._registry.resolve_execution(call.name, call.agent, call.parent is not None)
        if definition is None or definition.is_concurrency_safe is None:
            return "exclusive"
        try:
            return "parallel" if definition.is_concurrency_safe(call.arguments) is True else "exclusive"
        except Exception:
            return "exclusive"

    # --- execution -----------------------------------------------------------------------------

    def execute(self, call: ToolExecutionInput) -> Coroutine[Any, Any, ToolExecutionResult]:
        """Run one call through the whole pipeline. Every model mistake comes back as a result.

        ``await runtime.execute(call)``. (A plain method returning the pipeline's coroutine, so the
        hot path pays for one coroutine, not two.)
        """
        return self._pipeline.execute(call)

    async def call(
        self,
        name: str,
        arguments: Any = None,
        *,
        agent: Hashable | None = None,
        signal: AbortSignal | None = None,
        call_id: str | None = None,
        parent: ExecutionToken | None = None,
    ) -> ToolExecutionResult:
        """Convenience for scripts and tests: ``execute`` with generated id and a never-firing signal."""
        return await self._pipeline.execute(
            ToolExecutionInput(
                call_id=call_id if call_id is not None else f"call-{next(_call_ids)}",
                name=name,
                arguments={} if arguments is None else arguments,
                signal=signal if signal is not None else AbortSignal(),
                agent=scope_key(agent),
                parent=parent,
            )
        )

    def on_close(self, callback: Callable[[], None]) -> Disposer:
        """Call ``callback()`` when the runtime closes (newest first); the disposer unhooks it.

        Why: a tool that owns processes or connections (bash's background jobs) must not outlive
        the runtime it serves. A failing callback does not stop the others; ``close`` raises it after.
        """
        hook = Disposer(callback, self)  # adopted: close() calls it with the other registrations
        return Disposer(lambda: self._release(hook))

    def close(self) -> None:
        """Close every scope, undo every global registration and run the :meth:`on_close` hooks."""
        for scope in list(self._scopes.values()):
            scope.close()
        self._dispose_owned()


class Scope(ListenerOwner):
    """One agent's (or preset's) layer: the runtime's methods, applied to this scope only.

    A scope compares and hashes equal to its key, so ``agent=scope`` and ``agent=scope.key`` are the
    same thing everywhere. Closing it (or leaving its ``with`` block) undoes its registrations.
    """

    def __init__(self, runtime: ToolRuntime, key: Hashable, parent: Hashable | None) -> None:
        super().__init__()
        self.runtime = runtime
        self.key = key
        self.parent = parent
        self._closed = False

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Scope):
            return bool(self.key == other.key)
        return bool(self.key == other)

    def __repr__(self) -> str:
        return f"<Scope {self.key!r} parent={self.parent!r}>"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"scope {self.key!r} is closed")

    def register(self, definition: ToolDefinition) -> Disposer:
        """Register a tool for this scope only, shadowing an inherited tool of the same name."""
        self._check_open()
        return self.runtime._registry.register(definition, self.key, self)

    def register_methods(
        self,
        obj: object,
        *,
        prefix: str | None = None,
        group: str | ToolGroup | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
    ) -> Disposer:
        """:meth:`ToolRuntime.register_methods` for this scope only (all or none)."""
        self._check_open()
        definitions = _method_tools(obj, prefix=prefix, group=group, include=include, exclude=exclude)
        return self.runtime._registry.register_all(definitions, self.key, self)

    def reserve(self, name: str) -> Disposer:
        """Reserve ``name`` in this scope (known and restrictable, never visible)."""
        self._check_open()
        return self.runtime._registry.reserve(name, self.key, self)

    def guard(self, guard: ToolGuard) -> Disposer:
        """A guard that applies to this scope's calls (and its descendants')."""
        self._check_open()
        return self.runtime._registry.guard(guard, self.key, self)

    def restrict(self, *, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None) -> Disposer:
        """Mask inherited tools: keep only ``allow``, hide ``deny``. Masks intersect; own tools stay."""
        self._check_open()
        return self.runtime._registry.restrict(allow, deny, self.key, self)

    def present_as(self, mode: PresentationMode) -> Disposer:
        """Choose this scope's presentation (``native``, ``code`` or ``both``), once.

        ``code`` and ``both`` raise ``ValueError`` here when the runtime has no code runtime."""
        self._check_open()
        if mode in ("code", "both") and self.runtime.code_runtime is None:
            raise ValueError(_missing_code_runtime(f'scope.present_as("{mode}")'))
        return self.runtime._registry.present_as(mode, self.key, self)

    def on(self, event: EventName, listener: Callable[..., Any], *, prepend: bool = False) -> Disposer:
        """Listen to ``event`` for this scope's calls and its descendants' only."""
        self._check_open()
        return self.runtime._events.add(event, listener, scope_key=self.key, prepend=prepend, owner=self)

    def get(self, name: str) -> ToolDefinition | None:
        """``runtime.get(name, self)``."""
        return self.runtime.get(name, self.key)

    def schemas(self) -> list[ToolSchema]:
        """``runtime.schemas(self)``."""
        return self.runtime.schemas(self.key)

    def is_admitted(self, name: str) -> bool:
        """``runtime.is_admitted(name, self)``."""
        return self.runtime.is_admitted(name, self.key)

    def close(self) -> None:
        """Undo every registration made through this scope (newest first) and release the key."""
        if self._closed:
            return
        self._closed = True
        try:
            self._dispose_owned()
        finally:
            self.runtime._close_scope(self)

    def __enter__(self) -> Scope:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _method_tools(
    obj: object,
    *,
    prefix: str | None = None,
    group: str | ToolGroup | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
) -> list[ToolDefinition]:
    """The tools :meth:`ToolRuntime.register_methods` registers for ``obj`` (see there), built
    through ``@tool``; raises before anything is registered."""
    if isinstance(obj, type):
        raise TypeError(
            f"register_methods() takes an instance, got the class {obj.__qualname__} "
            f"(its methods need an object: pass {obj.__qualname__}(...))"
        )
    cls = type(obj)
    where = f"register_methods({cls.__qualname__})"
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError(f"{where}: prefix must be a string, got {type(prefix).__name__}")
    if group is not None and not isinstance(group, str | ToolGroup):
        raise TypeError(f"{where}: group must be a str or a ToolGroup, got {type(group).__name__}")
    members: dict[str, object] = {}
    for klass in reversed(cls.__mro__[:-1]):  # base classes first; `object` contributes nothing
        members.update(vars(klass))
    # A property or a nested class is state or a type, not an action a model could invoke.
    public = [
        name
        for name, member in members.items()
        if not name.startswith("_")
        and (inspect.isfunction(member) or isinstance(member, staticmethod | classmethod))
    ]
    chosen = public
    for label, names in (("include", include), ("exclude", exclude)):
        if names is None:
            continue
        if isinstance(names, str):
            raise TypeError(f"{where}: {label} must be a list of method names, not a string")
        picked = set(names)
        unknown = sorted(str(name) for name in picked - set(public))
        if unknown:
            raise ValueError(
                f"{where}: {label} names {', '.join(unknown)}, not public methods of {cls.__qualname__} "
                f"(public methods: {', '.join(public) or '(none)'})"
            )
        chosen = [name for name in chosen if (name in picked) == (label == "include")]
    if not chosen:
        raise ValueError(f"{where}: no public methods to register")
    if not isinstance(group, ToolGroup):
        group = ToolGroup(cls.__name__ if group is None else group, _class_summary(cls))
    definitions: list[ToolDefinition] = []
    refusals: list[str] = []
    for name in chosen:
        try:
            definitions.append(tool(name=(prefix or "") + name, group=group)(getattr(obj, name)))
        except TypeError as error:
            refusals.append(f"{name}: {error}")
    if refusals:
        noun = "method cannot be a tool" if len(refusals) == 1 else "methods cannot be tools"
        listing = "".join(f"\n  {refusal}" for refusal in refusals)
        raise TypeError(f"{where}: {len(refusals)} {noun}, so none was registered:{listing}")
    return definitions


def _class_summary(cls: type) -> str:
    """The first paragraph of a class's own docstring (not an inherited one, nor the signature
    ``@dataclass`` writes into an undocumented class)."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return ""
    if dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        return ""
    from toolrt.schema._docstrings import parse_docstring  # with register_methods, not at import

    summary = parse_docstring(doc).summary
    return " ".join(re.split(r"\n\s*\n", summary, maxsplit=1)[0].split())


def scope_key(scope: Hashable | None) -> Hashable | None:
    """The key behind ``scope``: a :class:`Scope`'s key, anything else as is (``agent=scope`` and
    ``agent=scope.key`` mean the same everywhere)."""
    return scope.key if isinstance(scope, Scope) else scope
