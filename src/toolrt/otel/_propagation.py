"""The W3C trace context across MCP: the :class:`toolrt._tracing.ContextCarrier` of OpenTelemetry.

Outgoing, the current span's ``traceparent`` goes into an MCP request's ``_meta``; incoming, a
served request's ``_meta.traceparent`` becomes the parent of the spans of its call. The W3C
propagator is used directly, not the global one: ``_meta`` carries ``traceparent`` only, whatever
else an application configured for its HTTP headers.
"""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["TraceparentCarrier"]

_W3C = TraceContextTextMapPropagator()


class TraceparentCarrier:
    """Injects and extracts ``traceparent`` with OpenTelemetry's current context."""

    def current_traceparent(self) -> str | None:
        """The current span's ``traceparent`` (``None`` outside any recording span)."""
        if not trace.get_current_span().get_span_context().is_valid:
            return None
        carrier: dict[str, str] = {}
        _W3C.inject(carrier)
        return carrier.get("traceparent")

    def attach_traceparent(self, traceparent: str) -> object:
        """Attach the remote context ``traceparent`` names, unless a span is current already.

        Why the exception: an MCP SDK that traces its own server (``mcp`` 2.3 does, with the global
        provider) has already made the incoming context the parent of its ``tools/call`` span, the
        current one here; attaching the raw remote context again would make toolrt's span a sibling
        of the SDK's instead of its child. An invalid ``traceparent`` attaches an empty context.
        """
        if trace.get_current_span().get_span_context().is_valid:
            return None
        return otel_context.attach(_W3C.extract({"traceparent": traceparent}))

    def detach(self, token: object) -> None:
        """Undo :meth:`attach_traceparent`."""
        if token is not None:
            otel_context.detach(token)  # type: ignore[arg-type]
