"""A call's trace context set by hand, for a process without a tracer: one context variable.

A W3C ``traceparent`` string set around a call (``TRACEPARENT.set(...)``) follows it through
``asyncio`` (tasks copy the context they are created in), so the Code Mode bridge's sub-calls carry
the run's trace too. The MCP client forwards it in the request's ``_meta`` when no tracer is
installed; with :func:`toolrt.otel.instrument`, the current span's context goes instead.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["TRACEPARENT"]

TRACEPARENT: ContextVar[str | None] = ContextVar("toolrt_traceparent", default=None)
"""The W3C ``traceparent`` of the calls made in this context (``None``: not traced).

>>> token = TRACEPARENT.set("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
>>> TRACEPARENT.reset(token)
"""
