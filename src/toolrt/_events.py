"""Listeners: waterfalls that can change a call's course, and observers that only watch.

Three pipeline events are *waterfalls*: listeners run outermost-first and each receives a ``next``
callable that runs the rest of the chain (and finally the built-in behaviour). A listener can act
before and after ``next()``, transform what it returns, or not call it at all (short-circuit)::

    async def audit(execution, next):
        decision = await next()
        log.info("%s -> %s", execution.name, decision)
        return decision

    runtime.on("tools/pre-execute", audit)

``tools/result`` and ``tools/change`` are *observers*: called in order, return values ignored, and
a failing observer is logged, never propagated, so one broken logger cannot break a call.

A listener registered through a scope (``runtime.scope(agent).on(...)``) sees only calls made by
that agent or by agents whose scope chain passes through it; agent-less calls reach only listeners
registered on the runtime itself. Listener lists are snapshotted when an event is dispatched, so a
listener added mid-call takes effect on the next call.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, Literal, TypeAlias, TypeVar

__all__ = ["Disposer", "EventBus", "EventName", "EventSink", "Listener", "ListenerOwner", "message_of"]

EventName: TypeAlias = Literal[
    "tools/pre-execute",
    "tools/execute",
    "tools/post-execute",
    "tools/result",
    "tools/change",
    "tools/code-dispatch-log",
]
_EVENT_NAMES = frozenset(EventName.__args__)  # type: ignore[attr-defined]

EventSink: TypeAlias = Callable[[str, Mapping[str, Any]], Any]
"""Appends one durable event: ``sink(type, data)``. ``SessionLog.append`` fits.

The runtime routes Code Mode sub-call events to one (``ToolRuntime.bind_session``) and
:class:`toolrt.policies.Approvals` its audit trail (``audit=``, ``bind_session``).
"""

T = TypeVar("T")
logger = logging.getLogger("toolrt")


class Disposer:
    """Undoes one registration. Call it, or use it as a context manager; calling twice is harmless.

    >>> dispose = runtime.register(my_tool)      # doctest: +SKIP
    >>> dispose()                                # doctest: +SKIP
    >>> with runtime.register(my_tool):          # doctest: +SKIP
    ...     ...                                  # registered only inside the block
    """

    __slots__ = ("_action", "_disposed", "_owner")

    def __init__(self, action: Callable[[], None], owner: ListenerOwner | None = None) -> None:
        self._action = action
        self._disposed = False
        self._owner = owner
        if owner is not None:
            owner._adopt(self)

    def __call__(self) -> None:
        if self._disposed:
            return
        self._disposed = True
        if self._owner is not None:
            self._owner._release(self)
        self._action()

    @property
    def disposed(self) -> bool:
        """Whether the registration has been undone."""
        return self._disposed

    def __enter__(self) -> Disposer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self()


class ListenerOwner:
    """Something whose registrations are undone together when it closes (a runtime or a scope)."""

    def __init__(self) -> None:
        self._owned: dict[int, Disposer] = {}

    def _adopt(self, disposer: Disposer) -> None:
        self._owned[id(disposer)] = disposer

    def _release(self, disposer: Disposer) -> None:
        self._owned.pop(id(disposer), None)

    def _dispose_owned(self) -> None:
        """Undo every remaining registration, newest first; keep going if one fails."""
        failures: list[BaseException] = []
        while self._owned:
            _, disposer = self._owned.popitem()
            try:
                disposer()
            except Exception as error:
                failures.append(error)
        if failures:
            raise failures[0]


class Listener:
    """One registered callback, and the scope it was registered through (``None``: the runtime).

    Also the element of any waterfall :meth:`EventBus.waterfall` runs (the approval answerers are
    one), so a waterfall outside the bus is spelled with the same pieces.
    """

    __slots__ = ("callback", "scope_key")

    def __init__(self, callback: Callable[..., Any], scope_key: Hashable | None) -> None:
        self.callback = callback
        self.scope_key = scope_key


_NO_LISTENERS: tuple[Listener, ...] = ()


class EventBus:
    """Per-event listener lists, snapshotted as tuples so dispatch never sees a list change."""

    def __init__(self) -> None:
        # Public so the pipeline's hot path can test for listeners with one dict lookup (a method
        # call costs 2-3x as much, four times per call); only ``add`` and its disposer write it.
        self.listeners: dict[str, tuple[Listener, ...]] = {}
        self._background: set[asyncio.Task[Any]] = set()

    def add(
        self,
        name: str,
        callback: Callable[..., Any],
        *,
        scope_key: Hashable | None,
        prepend: bool,
        owner: ListenerOwner | None,
    ) -> Disposer:
        """Register ``callback`` for ``name`` (first with ``prepend``); the disposer removes it."""
        if name not in _EVENT_NAMES:
            known = ", ".join(sorted(_EVENT_NAMES))
            raise ValueError(f"unknown event {name!r}; known events: {known}")
        if not callable(callback):
            raise TypeError(f"listener for {name!r} must be callable")
        listener = Listener(callback, scope_key)
        current = self.listeners.get(name, _NO_LISTENERS)
        self.listeners[name] = (listener, *current) if prepend else (*current, listener)

        def remove() -> None:
            self.listeners[name] = tuple(item for item in self.listeners[name] if item is not listener)

        return Disposer(remove, owner)

    def get(self, name: str) -> tuple[Listener, ...]:
        """The listeners of ``name`` right now (a snapshot: later registrations do not change it)."""
        return self.listeners.get(name, _NO_LISTENERS)

    @staticmethod
    def admitted(listeners: tuple[Listener, ...], chain: frozenset[Hashable]) -> tuple[Listener, ...]:
        """Untagged listeners plus those registered on a scope in ``chain``."""
        return tuple(item for item in listeners if item.scope_key is None or item.scope_key in chain)

    @staticmethod
    async def waterfall(
        listeners: tuple[Listener, ...], args: tuple[Any, ...], inner: Callable[[], Awaitable[T]]
    ) -> T:
        """Run ``listeners`` outermost-first around ``inner``; each gets ``(*args, next)``."""
        return await _chain(listeners, 0, args, inner)()

    def emit(
        self, listeners: tuple[Listener, ...], args: tuple[Any, ...], describe_failure: Callable[[str], str]
    ) -> None:
        """Call observers in order, containing and logging their failures (sync and async)."""
        for listener in listeners:
            try:
                outcome = listener.callback(*args)
            except Exception as error:
                logger.warning(describe_failure(message_of(error)))
                continue
            if inspect.isawaitable(outcome):
                self._watch(outcome, describe_failure)

    def _watch(self, awaitable: Awaitable[Any], describe_failure: Callable[[str], str]) -> None:
        async def run() -> None:
            try:
                await awaitable
            except Exception as error:
                logger.warning(describe_failure(message_of(error)))

        task = asyncio.ensure_future(run())
        # Keep a reference so the task is not garbage-collected before it reports.
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _chain(
    listeners: tuple[Listener, ...], index: int, args: tuple[Any, ...], inner: Callable[[], Awaitable[T]]
) -> Callable[[], Awaitable[T]]:
    if index == len(listeners):
        return inner
    callback = listeners[index].callback
    rest = _chain(listeners, index + 1, args, inner)

    async def step() -> T:
        outcome = callback(*args, rest)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome  # type: ignore[no-any-return]

    return step


def message_of(error: object) -> str:
    """A readable message for any raised value; never raises itself.

    ``str(error)``, or the class name when that is empty, or ``<unprintable thrown value>`` when
    even that fails (an ``__str__`` that raises must not turn a failed call into a crash).
    """
    try:
        text = str(error)
        if not isinstance(text, str):
            raise TypeError("__str__ returned a non-string")
        if text:
            return text
        return type(error).__name__
    except Exception:
        return "<unprintable thrown value>"
