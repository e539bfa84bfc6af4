"""What the OpenTelemetry tests share: real SDK providers read back in memory, and span helpers.

Imported by name (``from telemetry_support import ...``): a module of its own rather than the
conftest, whose module name every test folder shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Telemetry:
    """A tracer provider and a meter provider whose output the test reads back."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """Finished spans in end order, only those called ``name`` when given."""
        return [span for span in self.exporter.get_finished_spans() if name is None or span.name == name]

    def span(self, name: str) -> ReadableSpan:
        """The one finished span called ``name``."""
        found = self.spans(name)
        assert len(found) == 1, [span.name for span in self.spans()]
        return found[0]

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """``(attributes, point)`` of every data point of ``metric`` collected now."""
        data = self.reader.get_metrics_data()
        found: list[tuple[dict[str, Any], Any]] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend((dict(point.attributes), point) for point in item.data.data_points)
        return found


def events(span: ReadableSpan) -> list[tuple[str, dict[str, Any]]]:
    """A span's events as ``(name, attributes)``."""
    return [(event.name, dict(event.attributes or {})) for event in span.events]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def make_telemetry() -> Telemetry:
    """Fresh providers (never the global ones): one test's spans cannot reach another's assertions."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    return Telemetry(tracer_provider, meter_provider, exporter, reader)


class BrokenTracer(trace.Tracer):
    """A tracer whose every span fails to start (an exporter or processor bug, say)."""

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        raise RuntimeError("the tracing backend is broken")

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the tracing backend is broken")


class BrokenProvider(trace.TracerProvider):
    """Hands out :class:`BrokenTracer`."""

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return BrokenTracer()
