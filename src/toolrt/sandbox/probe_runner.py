"""The throwaway child processes that the sandbox probes run, and the per-process cache of their
verdicts (shared by :mod:`.probe`, :mod:`.probe_drop` and :mod:`.seatbelt`).

A probe child gets an empty environment, no stdin, no inherited fds and its own session, like a
sandbox child; a verdict is cached per process id, so a forked host probes again rather than trust
what its parent saw.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["clear_cache", "run_as"]

_T = TypeVar("_T")
_TIMEOUT = 10.0
_cache: dict[object, tuple[int, object]] = {}


def _cached(key: object, compute: Callable[[], _T]) -> _T:
    hit = _cache.get(key)
    if hit is not None and hit[0] == os.getpid():
        return hit[1]  # type: ignore[return-value]
    value = compute()
    _cache[key] = (os.getpid(), value)
    return value


def clear_cache() -> None:
    """Forget every cached verdict (tests; a host that changed its environment)."""
    _cache.clear()


def run_as(identity: tuple[int, int] | None) -> dict[str, Any]:
    """``subprocess`` keyword arguments that start a child as ``identity`` (uid, gid) with no
    supplementary groups (a root host only); none for ``None``."""
    if identity is None:
        return {}
    return {"user": identity[0], "group": identity[1], "extra_groups": []}


def _run(
    argv: Sequence[str], timeout: float = _TIMEOUT, as_user: tuple[int, int] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a probe child: empty environment, no stdin, no inherited fds, its own session; with
    ``as_user`` (root only), as that uid and gid with no supplementary groups."""
    return subprocess.run(
        list(argv),
        env={},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        close_fds=True,
        start_new_session=True,
        cwd="/",
        check=False,
        **run_as(as_user),
    )


def _tail(data: bytes, limit: int = 200) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text[-limit:] if text else ""
