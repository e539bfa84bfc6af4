"""The approval seam: what ``Ask`` decisions are routed to.

Any object with an ``async request(ApprovalRequest) -> ApprovalOutcome`` method can answer asks; pass
it as ``ToolRuntime(approval=...)``. Without one, an ``Ask`` degrades to a denial. The request carries
the frozen argument snapshot that will run, so an answerer shows (and approves) exactly those
arguments — pre-execute policy cannot rewrite them afterwards.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from toolrt._abort import AbortSignal

if TYPE_CHECKING:
    from toolrt._execution import ToolExecution

__all__ = ["ApprovalOutcome", "ApprovalRequest", "ApprovalService"]

ApprovalOutcome: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """One question to a human: may ``tool_name`` run for ``agent`` with these ``arguments``?

    ``signal`` is the caller's signal: an answerer should stop waiting (and answer ``cancelled``)
    when it fires.
    """

    agent: Hashable
    tool_name: str
    call_id: str
    reason: str | None
    signal: AbortSignal
    arguments: Any
    execution: ToolExecution


class ApprovalService(Protocol):
    """Answers approval requests (see the module docstring)."""

    async def request(self, request: ApprovalRequest) -> ApprovalOutcome: ...
