"""A trace as indented text: what a tracing backend's waterfall shows, for a terminal or a doc."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["format_trace"]

_SHOWN = (
    "gen_ai.tool.call.id",
    "gen_ai.agent.name",
    "gen_ai.request.model",
    "error.type",
    "toolrt.code.isolation.enforcement",
    "toolrt.turn.end_reason",
)


def format_trace(spans: Iterable[ReadableSpan], *, timings: bool = False) -> str:
    """Finished spans (an in-memory exporter's, say) as a tree: one line per span, its events below.

    Children follow their parent in start order; a span whose parent is not among ``spans`` (a
    remote parent, say) is a root. ``timings`` adds each span's duration (off by default, so the
    text of one program's trace is the same on every run).

    >>> print(format_trace([]))
    <BLANKLINE>
    """
    spans = sorted(spans, key=lambda span: span.start_time or 0)
    ids = {span.context.span_id for span in spans if span.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    lines: list[str] = []

    def walk(span: ReadableSpan, depth: int) -> None:
        indent = "  " * depth
        shown = [
            f"{key}={span.attributes[key]!s}" for key in _SHOWN if span.attributes and key in span.attributes
        ]
        status = " ERROR" if span.status.status_code.name == "ERROR" else ""
        took = ""
        if timings and span.end_time is not None and span.start_time is not None:
            took = f" {(span.end_time - span.start_time) / 1e6:.2f}ms"
        lines.append(f"{indent}{span.name}{status}{took}" + (f"  [{', '.join(shown)}]" if shown else ""))
        for event in span.events:
            lines.append(f"{indent}  · {event.name}{_event_attributes(event.attributes)}")
        assert span.context is not None
        for child in children.get(span.context.span_id, ()):
            walk(child, depth + 1)

    for root in children.get(None, ()):
        walk(root, 0)
    return "\n".join(lines)


def _event_attributes(attributes: Any) -> str:
    if not attributes:
        return ""
    shown = []
    for key, value in attributes.items():
        if key.endswith("wait_ms"):
            continue  # a wait varies run to run; the event says it happened
        shown.append(f"{key.removeprefix('toolrt.')}={value}")
    return f" ({', '.join(shown)})" if shown else ""
