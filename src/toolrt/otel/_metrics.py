"""Three instruments per runtime: calls, errors by code, and a duration histogram, per tool.

The GenAI semantic conventions define no metric for tool calls yet (their duration metric is for
model operations), so the names are toolrt's and the attributes are the conventions' own
(``gen_ai.tool.name``, ``gen_ai.operation.name``, ``error.type``): a dashboard can group them with
the same keys it uses for spans.
"""

from __future__ import annotations

from opentelemetry import metrics

__all__ = ["CALLS", "DURATION", "ERRORS", "ToolMetrics"]

CALLS = "toolrt.tool.calls"
"""Counter: every finished call, by ``gen_ai.tool.name``."""
ERRORS = "toolrt.tool.errors"
"""Counter: every failed call, by ``gen_ai.tool.name`` and ``error.type`` (the toolrt code)."""
DURATION = "toolrt.tool.duration"
"""Histogram, seconds: from the call's creation to its final result, by tool and ``error.type``."""


class ToolMetrics:
    """The instruments of one instrumented runtime."""

    def __init__(self, meter: metrics.Meter) -> None:
        self.calls = meter.create_counter(CALLS, unit="{call}", description="Tool calls finished")
        self.errors = meter.create_counter(ERRORS, unit="{call}", description="Tool calls that failed")
        self.duration = meter.create_histogram(
            DURATION, unit="s", description="Tool call duration, creation to final result"
        )

    def record(self, tool: str, error_type: str | None, seconds: float) -> None:
        """Record one finished call."""
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
        self.calls.add(1, attributes)
        if error_type is not None:
            attributes["error.type"] = error_type
            self.errors.add(1, attributes)
        self.duration.record(seconds, attributes)
