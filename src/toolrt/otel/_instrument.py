"""``instrument(runtime)``: one call turns tracing and metrics on, its handle turns them off."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolrt._tracing import install_carrier

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from toolrt._tool_runtime import ToolRuntime

__all__ = ["DEFAULT_MAX_PAYLOAD_CHARS", "Instrumentation", "instrument"]

DEFAULT_MAX_PAYLOAD_CHARS = 4096
"""How many characters of a captured payload (arguments, result) or description a span keeps."""

_SCOPE = "toolrt"


def _version() -> str:
    try:
        return importlib.metadata.version("toolrt")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree, not installed
        return "0"


class Instrumentation:
    """The handle :func:`instrument` returns: :meth:`uninstrument` (or leave the ``with`` block) to
    stop tracing that runtime; the calls already traced keep their spans."""

    def __init__(
        self, runtime: ToolRuntime, observer: Any, previous: Any, remove: Callable[[], None]
    ) -> None:
        self._runtime = runtime
        self._observer = observer
        self._previous = previous
        self._remove = remove
        self._active = True

    @property
    def active(self) -> bool:
        """Whether the runtime is still instrumented by this handle."""
        return self._active

    def uninstrument(self) -> None:
        """Take the tracer off the runtime (calling it twice is harmless)."""
        if not self._active:
            return
        self._active = False
        stages = self._runtime.stages
        if stages.observer is self._observer:
            stages.observer = self._previous
        self._remove()

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.uninstrument()


def instrument(
    runtime: ToolRuntime,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_payloads: bool = False,
    max_payload_chars: int = DEFAULT_MAX_PAYLOAD_CHARS,
) -> Instrumentation:
    """Trace every call of ``runtime`` as an OpenTelemetry ``execute_tool`` span, with metrics.

    ``tracer_provider`` and ``meter_provider`` default to the global ones (what an application set
    with ``opentelemetry.trace.set_tracer_provider``). ``capture_payloads`` records the arguments and
    the model-facing result (off by default: they may hold what a user would not want in a tracing
    backend), each cut to ``max_payload_chars``. An :class:`toolrt.Agent` on the runtime adds its
    turn and model-step spans; MCP requests carry the trace context both ways.

    >>> from toolrt import ToolRuntime
    >>> from toolrt.otel import instrument
    >>> with instrument(ToolRuntime()) as handle:
    ...     handle.active
    True
    """
    from opentelemetry import metrics, trace

    from toolrt._tool_runtime import ToolRuntime
    from toolrt.otel._metrics import ToolMetrics
    from toolrt.otel._propagation import TraceparentCarrier
    from toolrt.otel._spans import OtelObserver

    if not isinstance(runtime, ToolRuntime):
        raise TypeError(f"instrument() takes a ToolRuntime, got {type(runtime).__name__}")
    if not isinstance(max_payload_chars, int) or isinstance(max_payload_chars, bool) or max_payload_chars < 1:
        raise ValueError(f"max_payload_chars must be a positive integer, got {max_payload_chars!r}")
    if not isinstance(capture_payloads, bool):
        raise TypeError(f"capture_payloads must be True or False, got {capture_payloads!r}")
    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(_SCOPE, _version())
    meter = (meter_provider or metrics.get_meter_provider()).get_meter(_SCOPE, _version())
    observer = OtelObserver(
        tracer, ToolMetrics(meter), capture_payloads=capture_payloads, max_payload_chars=max_payload_chars
    )
    stages = runtime.stages
    previous = stages.observer
    stages.observer = observer
    remove = install_carrier(TraceparentCarrier())
    return Instrumentation(runtime, observer, previous, remove)
