"""The tracing seam: what the pipeline and the loop tell a tracer, without knowing which one.

The core stays standard-library only and knows nothing of OpenTelemetry. It offers three small
protocols here, and :mod:`toolrt.otel` fills them:

- :class:`CallObserver`, set as ``runtime.stages.observer``: starts one :class:`CallTrace` per call
  (in ``create``) and loop spans (:meth:`CallObserver.start_span`, for the agent's turns and model
  steps).
- :class:`CallTrace`: the call's span. The pipeline reports its stages as events (the pre-execute
  decision, guard denials, the approval asked and decided, the deadline), makes it current around
  the dispatch (so a Code Mode program's sub-calls and an MCP request see it) and ends it in
  ``finish`` with the result.
- :class:`ContextCarrier`, process-wide like a trace context is: the W3C ``traceparent`` of the
  current span for an outgoing MCP request, and an incoming one attached as the parent of what a
  served call does.

Why a seam and not events: ``tools/pre-execute`` and ``tools/execute`` listeners would send every
call down the slow path of the stages and be visible to other listeners; here, when nothing is
installed, a call pays one attribute check in ``create`` and a ``None`` check per stage.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from toolrt._execution import ToolExecution
    from toolrt._results import ToolExecutionResult

__all__ = [
    "CallObserver",
    "CallTrace",
    "ContextCarrier",
    "LoopSpan",
    "annotate",
    "current_traceparent",
    "install_carrier",
    "remote_parent",
]


class CallTrace(Protocol):
    """One call's span, as the pipeline sees it (made by :meth:`CallObserver.start_call`)."""

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        """Record a stage of the call (``toolrt.pre_execute``, ``toolrt.approval.asked``...)."""
        ...

    def set(self, attributes: Mapping[str, Any]) -> None:
        """Add attributes a plug-in knows of the call (a Code Mode run's isolation and limits)."""
        ...

    def enter(self) -> object:
        """Make the span current in this context; returns the token :meth:`exit` takes."""
        ...

    def exit(self, token: object) -> None:
        """Undo one :meth:`enter`, in the same context."""
        ...

    def end(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """The call has its final result (called once, from ``finish``)."""
        ...


class LoopSpan(Protocol):
    """A span of the agent loop: a turn (``invoke_agent``) or a model step (``chat``)."""

    def set(self, attributes: Mapping[str, Any]) -> None:
        """Add attributes learnt on the way (the turn's end reason, the model's usage)."""
        ...

    def enter(self) -> object:
        """Make the span current; returns the token :meth:`exit` takes."""
        ...

    def exit(self, token: object) -> None:
        """Undo one :meth:`enter`."""
        ...

    def end(self, error: BaseException | None = None) -> None:
        """End the span, failed with ``error`` when one escaped it."""
        ...


class CallObserver(Protocol):
    """What a tracer installs on a runtime (``runtime.stages.observer``)."""

    def start_call(self, execution: ToolExecution) -> CallTrace | None:
        """Start the span of a call just created (``None``: this call is not traced)."""
        ...

    def start_span(self, operation: str, name: str, attributes: Mapping[str, Any]) -> LoopSpan:
        """Start a loop span: ``operation`` is ``invoke_agent`` or ``chat``, ``name`` its subject."""
        ...


class ContextCarrier(Protocol):
    """Moves a trace context across a process boundary as a W3C ``traceparent``."""

    def current_traceparent(self) -> str | None:
        """The ``traceparent`` of the current span, or ``None`` when there is none."""
        ...

    def attach_traceparent(self, traceparent: str) -> object:
        """Make ``traceparent`` the parent of the spans started in this context; returns a token."""
        ...

    def detach(self, token: object) -> None:
        """Undo one :meth:`attach_traceparent`."""
        ...


def annotate(context: object, attributes: Mapping[str, Any]) -> None:
    """Add ``attributes`` to the span of the call ``context`` is (a body's ``ctx``), if it is traced.

    For plug-ins the core does not know (Code Mode's bridge); a no-op for an untraced call.
    """
    trace: CallTrace | None = getattr(context, "trace", None)
    if trace is not None:
        trace.set(attributes)


_carrier: list[ContextCarrier] = []


def install_carrier(carrier: ContextCarrier) -> Any:
    """Install ``carrier`` process-wide (the latest wins); returns the function that removes it."""
    _carrier.append(carrier)

    def remove() -> None:
        if carrier in _carrier:
            _carrier.remove(carrier)

    return remove


def current_traceparent() -> str | None:
    """The current span's ``traceparent`` from the installed carrier (``None`` without one)."""
    return _carrier[-1].current_traceparent() if _carrier else None


@contextlib.contextmanager
def remote_parent(traceparent: str | None) -> Iterator[None]:
    """Within the block, spans started in this context have the remote ``traceparent`` as parent.

    A no-op without a carrier or a ``traceparent`` (a served call that arrives untraced).
    """
    if not _carrier or not traceparent:
        yield
        return
    carrier = _carrier[-1]
    token = carrier.attach_traceparent(traceparent)
    try:
        yield
    finally:
        carrier.detach(token)
