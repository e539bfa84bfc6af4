"""Policy decisions returned by ``tools/pre-execute`` and ``tools/post-execute`` listeners.

Pre-execute decides whether a call may run: :class:`Allow`, :class:`Deny` (the reason is what the
model reads) or :class:`Ask` (route to the approval service; without one it degrades to a denial).
There is deliberately no way to rewrite arguments: the log and the UI would then show arguments
other than those that ran.

Post-execute sees the result and may :class:`Accept` it (optionally replacing its ``content`` *or*
its ``value``, and attaching contexts) or :class:`Block` it (a failure carrying corrective feedback).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from toolrt._content import ContentBlock, ContextMessage

__all__ = [
    "UNSET",
    "Accept",
    "Allow",
    "Ask",
    "Block",
    "Deny",
    "ExecutionMode",
    "PostToolDecision",
    "PreToolDecision",
]


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset()
"""Marks an :class:`Accept` field that the decision leaves unchanged."""


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call proceed to the guards and the body."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call; the model reads ``Error: <reason>``."""

    reason: str


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask a human through the approval service (a denial when none is configured)."""

    reason: str | None = None


PreToolDecision: TypeAlias = Allow | Deny | Ask


@dataclass(frozen=True, slots=True)
class Accept:
    """Keep the result; optionally replace ``content`` (presentation only) *or* ``value``.

    Replacing the value revalidates it against the tool's output schema and re-renders content and
    meta. Replacing content keeps the value: it is not a confidentiality boundary, since programmatic
    callers still receive the value — block or replace the value to withhold it.
    """

    content: Sequence[ContentBlock] | Any = UNSET
    value: Any = UNSET
    additional_contexts: Sequence[ContextMessage] = field(default=())


@dataclass(frozen=True, slots=True)
class Block:
    """Turn the result into a failure whose content is ``feedback``; drops value, meta and contexts."""

    feedback: Sequence[ContentBlock]
    additional_contexts: Sequence[ContextMessage] = field(default=())


PostToolDecision: TypeAlias = Accept | Block

ExecutionMode: TypeAlias = Literal["parallel", "exclusive"]
"""How a call may be scheduled: beside other parallel calls, or alone as an ordering barrier."""
