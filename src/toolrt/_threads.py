"""A lean worker-thread pool for synchronous tool bodies.

``asyncio.to_thread`` goes through ``concurrent.futures``: a ``Future``, a work item, a wrapper
future and two rounds of callbacks per call — about half of a hop's cost on a small machine. Sync
tool bodies are frequent and usually short, so toolrt hands them to its own pool: a ``SimpleQueue``,
threads started on demand (up to ``min(32, cpus + 4)``, like the default executor), and one
``call_soon_threadsafe`` back to the loop. The caller's ``contextvars`` travel with the call.

Workers are daemon threads: a body still running when the interpreter exits does not hold the
process open (the runtime already reports bodies it had to leave running).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["run_in_worker"]

_Outcome = tuple[Any, BaseException | None]


class _Pool:
    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self.queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.workers = 0
        self.idle = 0

    def submit(
        self,
        loop: asyncio.AbstractEventLoop,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        done: list[bool],
    ) -> asyncio.Future[_Outcome]:
        future: asyncio.Future[_Outcome] = loop.create_future()
        self.queue.put((contextvars.copy_context(), function, args, loop, future, done))
        with self.lock:
            if self.idle == 0 and self.workers < self.max_workers:
                self.workers += 1
                threading.Thread(target=self._work, name="toolrt-worker", daemon=True).start()
        return future

    def _work(self) -> None:
        get = self.queue.get
        while True:
            with self.lock:
                self.idle += 1
            item = get()
            with self.lock:
                self.idle -= 1
            if item is None:
                return
            context, function, args, loop, future, done = item
            try:
                outcome: _Outcome = (context.run(function, *args), None)
            except BaseException as error:  # returned, not raised: the loop side decides
                outcome = (None, error)
            done[0] = True
            # RuntimeError: the loop closed while the body ran; nobody is waiting any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, outcome)


def _settle(future: asyncio.Future[_Outcome], outcome: _Outcome) -> None:
    if not future.done():
        future.set_result(outcome)


_pool: _Pool | None = None


def _get_pool() -> _Pool:
    global _pool
    if _pool is None:
        _pool = _Pool(min(32, (os.cpu_count() or 1) + 4))
    return _pool


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run_in_worker(function: Callable[..., Any], *args: Any, done: list[bool]) -> asyncio.Future[_Outcome]:
    """Run ``function(*args)`` on a worker thread; the future resolves to ``(value, error)``.

    ``done[0]`` becomes ``True`` on the worker when the function has returned or raised, so a caller
    that stopped waiting can still tell whether the body is running.
    """
    return _get_pool().submit(asyncio.get_running_loop(), function, args, done)
