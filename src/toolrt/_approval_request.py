"""The approval seam: what ``Ask`` decisions are routed to.

Any object with an ``async request(ApprovalRequest) -> ApprovalOutcome`` method can answer asks; pass
it as ``ToolRuntime(approval=...)``. Without one, an ``Ask`` degrades to a denial. The request carries
the frozen argument snapshot that will run, so an answerer shows (and approves) exactly those
arguments — pre-execute policy cannot rewrite them afterwards.

While the service waits, the clock of the program the call is made for (a Code Mode run's
``RunClock``, carried as ``ToolExecutionInput.wait_clock``) is paused by the pipeline, and the call's
tool deadline has not started: a person's time is never charged to the program or to the tool.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from toolrt._abort import AbortSignal

if TYPE_CHECKING:
    from toolrt._execution import ToolExecution

__all__ = ["ApprovalOutcome", "ApprovalRequest", "ApprovalService"]

ApprovalOutcome: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable", "expired"]
"""What an approval service answers. ``expired`` (toolrt's addition) means nobody answered before the
service's wait deadline: the call is denied, saying so."""


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
