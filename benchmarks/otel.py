"""What tracing costs a call: the seam when off, and OpenTelemetry when on.

Run by hand (never from the test suite), from the repository root, unpinned and on one core::

    .venv/bin/python benchmarks/otel.py --runs 5
    taskset -c 1 .venv/bin/python benchmarks/otel.py --runs 5

What is timed: ONE call of ``add(a: int, b: int) -> int`` through ``ToolRuntime.execute()`` (no
listeners, the default deadline), as in ``benchmarks/pipeline.py``, in four builds:

- ``baseline``: this working tree with the tracing seam's lines taken out of ``_pipeline.py`` and
  ``_execution.py`` (a copy made in a temporary directory; the case fails loudly if a line it must
  remove is not found, so it cannot silently measure the seam itself);
- ``off``: this tree, ``toolrt.otel`` imported and OpenTelemetry loaded (a runtime instrumented and
  uninstrumented again), the measured runtime never instrumented — the target is off − baseline ≤
  0.3 µs (``docs/observability.md``);
- ``on/api-noop``: instrumented with OpenTelemetry's API-only providers (a tracer that records
  nothing): the cost of toolrt's side of the seam;
- ``on/sdk-noop-exporter``: instrumented with the SDK's ``TracerProvider`` and a
  ``SimpleSpanProcessor`` whose exporter drops every span, and an SDK ``MeterProvider``: what a
  traced call costs before any export I/O.

Every case runs in its own child process, ``--runs`` times interleaved (contract BM1); the epilogue
prints off − baseline from the medians. Differences of a few tens of ns between runs are noise.
"""

import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from _harness import REPO_ROOT, Case, CaseSummary, Timed, bench_main, format_duration

ARGS = {"a": 1, "b": 2}
TARGET_OFF_NS = 300.0

# The seam's lines, as they stand in the working tree: removed to build the baseline.
_SEAM = {
    "_pipeline.py": (
        "        observer = self.observer\n"
        "        if observer is not None:\n"
        "            execution.trace = observer.start_call(execution)\n",
        "        trace = execution.trace\n"
        "        entered = None if trace is None else trace.enter()  # nested calls see the span\n",
        "        finally:\n            if trace is not None:\n                trace.exit(entered)\n",
        "        if execution.trace is not None:\n            execution.trace.end(execution, result)\n",
    ),
    "_execution.py": ("        self.trace = None\n",),
}


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _stripped_tree() -> Path:
    """A copy of ``src/toolrt`` without the tracing seam's per-call lines; returns its parent."""
    root = Path(tempfile.mkdtemp(prefix="toolrt-baseline-"))
    shutil.copytree(
        REPO_ROOT / "src" / "toolrt", root / "toolrt", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name, snippets in _SEAM.items():
        path = root / "toolrt" / name
        text = path.read_text()
        for snippet in snippets:
            if text.count(snippet) != 1:
                raise AssertionError(f"baseline: the seam line is not (once) in {name}: {snippet!r}")
            text = text.replace(snippet, "")
        path.write_text(text)
    return root


async def _runtime_case(instrumented: str | None) -> Timed:
    from toolrt import AbortSignal, ToolExecutionInput, ToolRuntime, tool

    runtime = ToolRuntime()
    runtime.register(tool(add))
    if instrumented is not None:
        from toolrt.otel import instrument

        if instrumented == "sdk":
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

            class Drop(SpanExporter):
                def export(self, spans: object) -> SpanExportResult:
                    return SpanExportResult.SUCCESS

            tracer_provider = TracerProvider()
            tracer_provider.add_span_processor(SimpleSpanProcessor(Drop()))
            meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
            instrument(runtime, tracer_provider=tracer_provider, meter_provider=meter_provider)
        else:
            from opentelemetry.metrics import NoOpMeterProvider
            from opentelemetry.trace import NoOpTracerProvider

            instrument(runtime, tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
        if runtime.stages.observer is None:
            raise AssertionError("instrument() installed no observer")
    signal = AbortSignal()
    result = await runtime.execute(
        ToolExecutionInput(call_id="check", name="add", arguments=dict(ARGS), signal=signal)
    )
    if getattr(result, "value", None) != 3:
        raise AssertionError(f"toolrt returned {result!r}")
    execute = runtime.execute
    call = ToolExecutionInput(call_id="c1", name="add", arguments=dict(ARGS), signal=signal)
    return lambda: execute(call)


async def setup_baseline() -> Timed:
    if "toolrt" in sys.modules:
        raise AssertionError("toolrt was imported before the baseline could choose its copy")
    root = _stripped_tree()
    sys.path.insert(0, str(root))
    import toolrt

    if not Path(toolrt.__file__).is_relative_to(root):
        raise AssertionError(f"baseline imported {toolrt.__file__}, not the stripped copy")
    return await _runtime_case(None)


async def setup_off() -> Timed:
    from toolrt import ToolRuntime
    from toolrt.otel import instrument

    # The extra installed and loaded, its process-wide carrier installed and removed again.
    instrument(ToolRuntime()).uninstrument()
    if "opentelemetry.trace" not in sys.modules:
        raise AssertionError("OpenTelemetry was not loaded")
    return await _runtime_case(None)


async def setup_on_api() -> Timed:
    return await _runtime_case("api")


async def setup_on_sdk() -> Timed:
    return await _runtime_case("sdk")


BASELINE = "baseline"
CASES = [
    Case(BASELINE, "execute(add), the seam stripped", setup_baseline, "off"),
    Case("off", "execute(add), otel installed, not instrumented", setup_off, "off"),
    Case("on/api-noop", "instrumented, API no-op providers", setup_on_api, "on"),
    Case("on/sdk-noop-exporter", "instrumented, SDK + dropping exporter", setup_on_sdk, "on"),
]


def epilogue(summaries: Mapping[str, CaseSummary]) -> str:
    base, off = summaries.get(BASELINE), summaries.get("off")
    if base is None or off is None or not base.ok or not off.ok:
        return ""
    delta = off.median_ns - base.median_ns
    verdict = "within" if delta <= TARGET_OFF_NS else "OVER"
    lines = [
        f"off − baseline: {format_duration(delta)} per call ({verdict} the "
        f"{format_duration(TARGET_OFF_NS)} target); spreads {base.spread:.1%} / {off.spread:.1%}"
    ]
    for name in ("on/api-noop", "on/sdk-noop-exporter"):
        on = summaries.get(name)
        if on is not None and on.ok:
            lines.append(f"{name} − off: {format_duration(on.median_ns - off.median_ns)} per call")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(
        bench_main(
            CASES, title="toolrt tracing overhead (benchmarks/otel.py)", baseline=BASELINE, epilogue=epilogue
        )
    )
