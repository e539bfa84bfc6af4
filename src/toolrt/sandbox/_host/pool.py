"""A warm pool of booted, already-confined, idle sandbox children.

Each child runs exactly one program and exits, so the pool never hands a child out twice: a checkout
removes it for good; the refill starts at once when the pool ran dry, else at the owner's next
``fill`` (the runtime calls it when the run ends). Children that die or misbehave while idle are
dropped (and reaped) the next time the pool is looked at. ``aclose`` kills every idle child and
every child still booting.

Refills that fail (for example because confinement broke after the first probe) back off and stop
after :data:`MAX_CONSECUTIVE_FAILURES`, so a broken environment costs a few spawns, not a loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

__all__ = ["MAX_CONSECUTIVE_FAILURES", "PooledChild", "WarmPool"]

MAX_CONSECUTIVE_FAILURES = 3
_BACKOFF_SECONDS = 0.5


class PooledChild(Protocol):
    """What the pool needs of a child: whether it can still be handed out, and how to close it."""

    @property
    def usable(self) -> bool:
        """Booted, confined, idle and still alive."""
        ...

    async def close(self) -> None:
        """Kill the child's process group, reap it, and release its resources."""
        ...


ChildT = TypeVar("ChildT", bound=PooledChild)


class WarmPool(Generic[ChildT]):
    """Keep ``size`` children booted; ``checkout`` takes one (or ``None``: use the cold path)."""

    def __init__(self, size: int, spawn: Callable[[], Awaitable[ChildT]]) -> None:
        if size < 0:
            raise ValueError("pool size must be >= 0")
        self.size = size
        self._spawn = spawn
        self._idle: deque[ChildT] = deque()
        self._refills: set[asyncio.Task[None]] = set()
        self._closing: set[asyncio.Task[None]] = set()
        self._failures = 0
        self._closed = False
        self.last_error: BaseException | None = None
        self.spawned = 0

    @property
    def idle(self) -> int:
        """Children ready to hand out right now."""
        return sum(1 for child in self._idle if child.usable)

    def checkout(self) -> ChildT | None:
        """An idle, usable child (removed from the pool for good), or ``None``.

        Refills start now only when the pool is left without an idle child; otherwise they wait for
        the owner's next :meth:`fill` (the runtime's, when the run ends), so that a refill's spawn and
        boot (~1 ms of the event loop, tens of ms of CPU) do not compete with the run it serves.
        """
        child: ChildT | None = None
        while self._idle:
            candidate = self._idle.popleft()
            if candidate.usable:
                child = candidate
                break
            self._discard(candidate)
        if child is None or not any(other.usable for other in self._idle):
            self.fill()
        return child

    def fill(self) -> None:
        """Start background spawns until idle + booting children reach ``size``."""
        if self._closed or self._failures >= MAX_CONSECUTIVE_FAILURES:
            return
        for stale in [child for child in self._idle if not child.usable]:
            self._idle.remove(stale)
            self._discard(stale)
        while len(self._idle) + len(self._refills) < self.size:
            task = asyncio.ensure_future(self._refill())
            self._refills.add(task)
            task.add_done_callback(self._refills.discard)

    async def _refill(self) -> None:
        if self._failures:
            await asyncio.sleep(_BACKOFF_SECONDS * self._failures)
        try:
            child = await self._spawn()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self._failures += 1
            self.last_error = error
            return
        self.spawned += 1
        self._failures = 0
        if self._closed:
            await child.close()
            return
        self._idle.append(child)

    def _discard(self, child: ChildT) -> None:
        task = asyncio.ensure_future(child.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def abandon(self) -> list[ChildT]:
        """Stop refilling and hand back the idle children without awaiting anything (for a pool
        whose event loop has finished: its refill tasks died with it)."""
        self._closed = True
        for task in self._refills:
            task.cancel()
        idle = list(self._idle)
        self._idle.clear()
        return idle

    async def aclose(self) -> None:
        """Stop refilling; kill and reap every idle and booting child."""
        self._closed = True
        refills = list(self._refills)
        for task in refills:
            task.cancel()
        for task in refills:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        idle = list(self._idle)
        self._idle.clear()
        await asyncio.gather(*(child.close() for child in idle), *self._closing, return_exceptions=True)
