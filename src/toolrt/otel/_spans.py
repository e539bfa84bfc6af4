"""The OpenTelemetry side of the tracing seam: one ``execute_tool`` span per call, loop spans.

Names and attributes follow the OpenTelemetry GenAI semantic conventions where they define one
(``execute_tool {gen_ai.tool.name}``, ``invoke_agent {gen_ai.agent.name}``, ``chat
{gen_ai.request.model}``, ``gen_ai.tool.*``, ``error.type``); what only toolrt has (the stages of
the pipeline, a program's isolation) is under ``toolrt.*``.

A Code Mode sub-call is made on the host while its program runs in a child process; its parent span
is found from the call's ``parent`` token (the ``run_code`` execution's), not from the ambient
context, so it nests under ``run_code`` whichever task of the bridge dispatches it.

A tracer never breaks a call: whatever fails in here (an exporter, a span processor, an attribute
OpenTelemetry refuses) is logged on the ``toolrt`` logger and the call goes on, untraced if need be.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from toolrt._content import content_text
from toolrt._json import js_json_dumps
from toolrt._registry import RUN_CODE_NAME

if TYPE_CHECKING:
    from toolrt._execution import ExecutionToken, ToolExecution
    from toolrt._results import ToolExecutionResult
    from toolrt.otel._metrics import ToolMetrics

__all__ = ["DENIED", "TOOL_ERROR", "OtelObserver"]

TOOL_ERROR = "TOOL_ERROR"
"""``error.type`` of a failure without a toolrt code (a body that raised a plain exception)."""
DENIED = "DENIED"
"""``error.type`` of a call a policy refused (pre-execute deny, a guard, a rejected approval)."""

_SPILL = re.compile(r"spill://[A-Za-z0-9_.-]+")
logger = logging.getLogger("toolrt")


def _failed(what: str, name: str) -> None:
    logger.warning('tracing failed to %s for tool "%s"; the call goes on', what, name, exc_info=True)


def capped(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with a marker saying how much was left out."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}…[{len(text) - max_chars} more characters]"


class OtelObserver:
    """The :class:`toolrt._tracing.CallObserver` that records calls as OpenTelemetry spans."""

    def __init__(
        self,
        tracer: trace.Tracer,
        metrics: ToolMetrics | None,
        *,
        capture_payloads: bool,
        max_payload_chars: int,
    ) -> None:
        self.tracer = tracer
        self.metrics = metrics
        self.capture_payloads = capture_payloads
        self.max_payload_chars = max_payload_chars
        # Live calls' spans by token: a sub-call finds its parent here (weak: a created call that is
        # never finished must not be kept alive by the tracer).
        self.live: weakref.WeakKeyDictionary[ExecutionToken, trace.Span] = weakref.WeakKeyDictionary()

    def start_call(self, execution: ToolExecution) -> _CallSpan | None:
        """Start ``execute_tool {name}``: a child of the enclosing call's span for a nested call."""
        try:
            return self._start(execution)
        except Exception:
            _failed("start a span", execution.name)
            return None

    def _start(self, execution: ToolExecution) -> _CallSpan:
        name = execution.name
        parent = execution.parent
        parent_span = None if parent is None else self.live.get(parent)
        parent_context = None if parent_span is None else trace.set_span_in_context(parent_span)
        definition = execution.definition
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": execution.call_id,
            "gen_ai.tool.type": "function",
        }
        if definition is not None:
            attributes["gen_ai.tool.description"] = capped(definition.description, self.max_payload_chars)
        if execution.root_call_id != execution.call_id:
            attributes["toolrt.root_call_id"] = execution.root_call_id
        if execution.agent is not None:
            attributes["toolrt.agent"] = str(execution.agent)
        if self.capture_payloads and execution.arguments is not None:
            attributes["gen_ai.tool.call.arguments"] = capped(
                js_json_dumps(execution.arguments), self.max_payload_chars
            )
        span = self.tracer.start_span(
            f"execute_tool {name}", context=parent_context, kind=SpanKind.INTERNAL, attributes=attributes
        )
        self.live[execution.token] = span
        return _CallSpan(self, span, name)

    def start_span(self, operation: str, name: str, attributes: Mapping[str, Any]) -> _LoopSpan:
        """Start an agent-loop span (``invoke_agent`` INTERNAL, ``chat`` CLIENT), current or not."""
        kind = SpanKind.CLIENT if operation == "chat" else SpanKind.INTERNAL
        try:
            span = self.tracer.start_span(
                f"{operation} {name}",
                kind=kind,
                attributes={"gen_ai.operation.name": operation, **attributes},
            )
        except Exception:
            logger.warning("tracing failed to start the %s span; the turn goes on", operation, exc_info=True)
            span = trace.INVALID_SPAN  # records nothing
        return _LoopSpan(span)


class _CallSpan:
    """One call's span (a :class:`toolrt._tracing.CallTrace`)."""

    __slots__ = ("denied", "name", "observer", "span", "started")

    def __init__(self, observer: OtelObserver, span: trace.Span, name: str) -> None:
        self.observer = observer
        self.span = span
        self.name = name
        self.started = time.perf_counter()
        self.denied = False

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        try:
            self._event(name, attributes)
        except Exception:
            _failed(f"record {name}", self.name)

    def _event(self, name: str, attributes: Mapping[str, Any]) -> None:
        if name == "toolrt.guard.denied" or (
            name == "toolrt.pre_execute" and attributes.get("toolrt.decision") == "deny"
        ):
            self.denied = True
        if name == "toolrt.approval.decided" and attributes.get("toolrt.approval.outcome") != "allowed-once":
            self.denied = True
        self.span.add_event(name, dict(attributes))

    def set(self, attributes: Mapping[str, Any]) -> None:
        try:
            self.span.set_attributes(dict(attributes))
        except Exception:
            _failed("set attributes", self.name)

    def enter(self) -> object:
        try:
            return otel_context.attach(trace.set_span_in_context(self.span))
        except Exception:
            _failed("make its span current", self.name)
            return None

    def exit(self, token: object) -> None:
        if token is not None:
            otel_context.detach(token)  # type: ignore[arg-type]

    def end(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        try:
            self._end(execution, result)
        except Exception:
            _failed("end its span", self.name)
            with contextlib.suppress(Exception):
                self.span.end()  # ended at least, if only the attributes failed

    def _end(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        observer = self.observer
        span = self.span
        observer.live.pop(execution.token, None)
        error_type: str | None = None
        if result.is_error:
            error = result.error
            info = error.info
            if info is not None:
                error_type = info.code
            else:
                error_type = DENIED if self.denied else TOOL_ERROR
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, capped(str(error.message), observer.max_payload_chars)))
        text: str | None = None
        if observer.capture_payloads:
            text = content_text(result.content)
            span.set_attribute("gen_ai.tool.call.result", capped(text, observer.max_payload_chars))
        if any(
            isinstance(block, Mapping) and isinstance(block.get("text"), str) and "spill://" in block["text"]
            for block in result.content
        ):
            if text is None:
                text = content_text(result.content)
            found = _SPILL.search(text)
            span.add_event("toolrt.spill", {"toolrt.spill.locator": found.group(0) if found else ""})
        if execution.name == RUN_CODE_NAME and isinstance(result.meta, Mapping):
            span.set_attributes(_run_attributes(result.meta))
        span.end()
        metrics = observer.metrics
        if metrics is not None:
            metrics.record(execution.name, error_type, time.perf_counter() - self.started)


def _run_attributes(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A ``run_code`` result's meta (the isolation this run achieved, its backend) as flat span
    attributes; they replace the runtime's promise the bridge recorded when the run started."""
    attributes: dict[str, Any] = {}
    if isinstance(meta.get("backend"), str):
        attributes["toolrt.code.backend"] = meta["backend"]
    if isinstance(meta.get("warm"), bool):
        attributes["toolrt.code.warm"] = meta["warm"]
    isolation = meta.get("isolation")
    if isinstance(isolation, Mapping):
        for key in ("kind", "enforcement"):
            if isinstance(isolation.get(key), str):
                attributes[f"toolrt.code.isolation.{key}"] = isolation[key]
        layers = isolation.get("layers")
        if isinstance(layers, list | tuple):
            attributes["toolrt.code.isolation.layers"] = [str(layer) for layer in layers]
        if isinstance(isolation.get("landlockAbi"), int):
            attributes["toolrt.code.isolation.landlock_abi"] = isolation["landlockAbi"]
    return attributes


class _LoopSpan:
    """A turn's or a model step's span (a :class:`toolrt._tracing.LoopSpan`)."""

    __slots__ = ("span",)

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def set(self, attributes: Mapping[str, Any]) -> None:
        self.span.set_attributes(dict(attributes))

    def enter(self) -> object:
        return otel_context.attach(trace.set_span_in_context(self.span))

    def exit(self, token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    def end(self, error: BaseException | None = None) -> None:
        if error is not None:
            self.span.set_attribute("error.type", type(error).__qualname__)
            self.span.set_status(Status(StatusCode.ERROR, str(error)))
        self.span.end()
