"""Cooperative cancellation: :class:`AbortSignal` and :class:`AbortController`.

Why not plain task cancellation? ``Task.cancel()`` interrupts whatever ``await`` the body is parked on
and cannot reach a synchronous body on a worker thread at all, so a tool has no chance to stop its
subprocess or roll back a half-written file. A signal is something the body *checks* (``aborted``),
*awaits* (``await signal.wait()``) or *subscribes to* (``add_callback``), and it crosses threads. Every
call carries one; ``tools/execute`` wrappers (timeouts) may hand the body a replacement, and the
runtime fuses the caller's signal back in so a caller abort always reaches the body.

>>> controller = AbortController()
>>> controller.signal.aborted
False
>>> controller.abort("user pressed stop")
>>> controller.signal.aborted, controller.signal.reason
(True, 'user pressed stop')
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

__all__ = ["AbortController", "AbortSignal", "fuse_signals"]

AbortCallback = Callable[[object], None]


class AbortSignal:
    """Read side of a cancellation: ``aborted``, ``reason``, callbacks and an awaitable ``wait()``.

    Create one with :class:`AbortController`; ``AbortSignal.never()`` is a signal that cannot abort
    (handy in tests and scripts), ``AbortSignal.aborted_with(reason)`` one that already has.
    """

    __slots__ = ("__weakref__", "_aborted", "_callbacks", "_lock", "_reason", "_waiters")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._callbacks: list[AbortCallback] | None = None
        self._waiters: list[asyncio.Future[None]] | None = None
        self._lock = threading.Lock()

    @property
    def aborted(self) -> bool:
        """Whether the signal has fired."""
        return self._aborted

    @property
    def reason(self) -> object:
        """What the aborter passed (``None`` until aborted)."""
        return self._reason

    def add_callback(self, callback: AbortCallback) -> Callable[[], None]:
        """Call ``callback(reason)`` once when the signal fires; returns a remover.

        An already-aborted signal calls it immediately. Callbacks run on the thread that aborts;
        exceptions they raise are swallowed so one bad subscriber cannot stop the others.
        """
        with self._lock:
            if not self._aborted:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        _call_quietly(callback, self._reason)
        return _noop

    def _remove(self, callback: AbortCallback) -> None:
        with self._lock:
            if self._callbacks is not None:
                with contextlib.suppress(ValueError):
                    self._callbacks.remove(callback)

    async def wait(self) -> object:
        """Wait until the signal fires and return its reason."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._aborted:
                return self._reason
            if self._waiters is None:
                self._waiters = []
            self._waiters.append(future)
        try:
            await future
        finally:
            with self._lock:
                if self._waiters is not None and future in self._waiters:
                    self._waiters.remove(future)
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise :class:`toolrt.AbortError` (``ABORTED``) if the signal has fired."""
        if self._aborted:
            from toolrt._errors import TOOL_ABORTED, AbortError

            raise AbortError(f"aborted: {self._reason}", TOOL_ABORTED)

    def _fire(self, reason: object) -> None:
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, None
            waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            loop = waiter.get_loop()
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, waiter)
        for callback in callbacks or ():
            _call_quietly(callback, reason)

    @staticmethod
    def never() -> AbortSignal:
        """A signal nobody can abort."""
        return AbortSignal()

    @staticmethod
    def aborted_with(reason: object = "aborted") -> AbortSignal:
        """A signal that has already fired with ``reason``."""
        signal = AbortSignal()
        signal._fire(reason)
        return signal

    @staticmethod
    def timeout(seconds: float, reason: object = None) -> AbortSignal:
        """A signal that fires after ``seconds`` on the running event loop.

        The default reason is a :class:`TimeoutError`.
        """
        controller = AbortController()
        loop = asyncio.get_running_loop()
        loop.call_later(
            seconds,
            controller.abort,
            TimeoutError(f"timed out after {seconds}s") if reason is None else reason,
        )
        return controller.signal

    def __repr__(self) -> str:
        state = f"aborted reason={self._reason!r}" if self._aborted else "pending"
        return f"<AbortSignal {state}>"


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _call_quietly(callback: AbortCallback, reason: object) -> None:
    with contextlib.suppress(Exception):
        callback(reason)


def _noop() -> None:
    return None


class AbortController:
    """Write side of a cancellation: owns an :class:`AbortSignal` and fires it with ``abort()``."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = "aborted") -> None:
        """Fire the signal (idempotent: the first reason wins)."""
        self.signal._fire(reason)


def fuse_signals(first: AbortSignal, second: AbortSignal) -> tuple[AbortSignal, Callable[[], None]]:
    """A signal that fires when either input fires, with that input's reason, plus a detacher.

    Identical inputs fuse to themselves. Call the detacher once the fused signal is no longer needed
    so long-lived caller signals do not accumulate callbacks.
    """
    if first is second:
        return first, _noop
    if first.aborted:
        return AbortSignal.aborted_with(first.reason), _noop
    if second.aborted:
        return AbortSignal.aborted_with(second.reason), _noop
    fused = AbortSignal()
    remove_first = first.add_callback(fused._fire)
    remove_second = second.add_callback(fused._fire)

    def detach() -> None:
        remove_first()
        remove_second()

    return fused, detach
