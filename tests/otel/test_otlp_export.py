"""Spans and metrics leave the process over OTLP/HTTP and arrive whole (contract OT2, OT8).

The receiver is a plain ``http.server`` started by the test, standing in for a collector: it keeps
every request body, and the test decodes them with ``opentelemetry-proto``'s own message classes —
what a real backend would read, not what the SDK holds in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from toolrt import ToolRuntime, tool
from toolrt.otel import CALLS, instrument


class Receiver(ThreadingHTTPServer):
    """Keeps ``(path, body)`` of every POST and answers 200 with an empty protobuf response."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, bytes]] = []


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        assert self.headers["Content-Type"] == "application/x-protobuf"
        self.server.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass  # the test reads what arrived, not the access log


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_spans_and_metrics_arrive_over_otlp_http(receiver: Receiver) -> None:
    """OT2, OT8: the execute_tool spans (attributes, status, error.type) and the call counter, as
    decoded from the protobuf a collector received."""
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    resource = Resource.create({"service.name": "toolrt-test"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"), export_interval_millis=3_600_000
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    runtime = ToolRuntime()
    runtime.register(add)
    instrument(runtime, tracer_provider=tracer_provider, meter_provider=meter_provider)
    await runtime.call("add", {"a": 1, "b": 2}, call_id="ok-1")
    await runtime.call("add", {"a": "one", "b": 2}, call_id="bad-1")
    assert tracer_provider.force_flush(10_000)
    assert meter_provider.force_flush(10_000)
    tracer_provider.shutdown()
    meter_provider.shutdown()

    spans: list[Span] = []
    service_names: set[str] = set()
    for path, body in receiver.received:
        if path != "/v1/traces":
            continue
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for attribute in resource_spans.resource.attributes:
                if attribute.key == "service.name":
                    service_names.add(attribute.value.string_value)
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "toolrt"
                spans.extend(scope_spans.spans)
    assert service_names == {"toolrt-test"}
    by_id = {
        next(a.value.string_value for a in span.attributes if a.key == "gen_ai.tool.call.id"): span
        for span in spans
    }
    assert set(by_id) == {"ok-1", "bad-1"}
    ok, bad = by_id["ok-1"], by_id["bad-1"]
    assert ok.name == bad.name == "execute_tool add"
    assert ok.kind == Span.SpanKind.SPAN_KIND_INTERNAL
    ok_attributes = {a.key: a.value.string_value for a in ok.attributes}
    assert ok_attributes["gen_ai.tool.name"] == "add"
    assert ok_attributes["gen_ai.operation.name"] == "execute_tool"
    assert ok_attributes["gen_ai.tool.type"] == "function"
    assert "error.type" not in ok_attributes
    bad_attributes = {a.key: a.value.string_value for a in bad.attributes}
    assert bad_attributes["error.type"] == "INVALID_ARGS"
    assert bad.status.code == bad.status.STATUS_CODE_ERROR
    assert bad.status.message == 'invalid arguments: "a" must be an integer'

    counted: dict[str, int] = {}
    for path, body in receiver.received:
        if path != "/v1/metrics":
            continue
        for resource_metrics in ExportMetricsServiceRequest.FromString(body).resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    if metric.name == CALLS:
                        for point in metric.sum.data_points:
                            tool_name = next(
                                a.value.string_value for a in point.attributes if a.key == "gen_ai.tool.name"
                            )
                            counted[tool_name] = max(counted.get(tool_name, 0), point.as_int)
    assert counted == {"add": 2}
