"""OpenTelemetry for toolrt: an ``execute_tool`` span per call, metrics, trace context over MCP.

Install the extra (``pip install 'toolrt[otel]'``) and turn it on with one call::

    from toolrt.otel import instrument

    handle = instrument(runtime)        # the global tracer and meter providers, or pass your own
    ...
    handle.uninstrument()

Spans follow the OpenTelemetry GenAI semantic conventions: ``execute_tool {tool}`` per call (the
pipeline's stages as events, ``error.type`` the toolrt code on failure), a Code Mode program's
sub-calls as children of its ``run_code`` span, and an :class:`toolrt.Agent`'s ``invoke_agent``
turn and ``chat`` model-step spans around them. ``docs/observability.md`` lists every attribute.
Importing ``toolrt`` never imports OpenTelemetry; this package does, when imported.
"""

from toolrt.otel._instrument import DEFAULT_MAX_PAYLOAD_CHARS, Instrumentation, instrument
from toolrt.otel._metrics import CALLS, DURATION, ERRORS
from toolrt.otel._tree import format_trace

__all__ = [
    "CALLS",
    "DEFAULT_MAX_PAYLOAD_CHARS",
    "DURATION",
    "ERRORS",
    "Instrumentation",
    "format_trace",
    "instrument",
]
