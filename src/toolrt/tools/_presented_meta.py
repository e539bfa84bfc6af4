"""The presentation meta of a successful file-tool result, the one thing each file tool's card reads.

Why one helper: every file tool draws its result card from the ``meta`` its ``presentation_meta``
stored, and draws no card at all for an error or for a result without that meta (a replayed log
from an older version, a result built by hand); the four tools must agree on that rule.
"""

from __future__ import annotations

from typing import Any

from toolrt._tool_definition import PresentedResult

__all__ = ["success_meta"]


def success_meta(result: PresentedResult) -> dict[str, Any] | None:
    """``result``'s meta mapping, or ``None`` when it is an error or carries no meta to draw."""
    meta = result.get("meta")
    if result.get("is_error") or not isinstance(meta, dict):
        return None
    return meta
